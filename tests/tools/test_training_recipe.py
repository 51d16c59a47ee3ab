"""One TrainingRecipe for both models: declared once, compared in full, honoured by the ViT too,
and older records of it still recognised."""

import json
from pathlib import Path

import numpy as np
import pytest

from shiftvit_lib.config import PIPELINE_FIELDS, RECIPE_FIELDS, ShiftViTConfig, TrainingRecipe, preset
from shiftvit_lib.data import DataSplits
from shiftvit_lib.recipe import training_datasets
from shiftvit_lib.tools import experiments as ex
from shiftvit_lib.tools.run_folder import finished_run, run_spec, spec_differences
from shiftvit_lib.vit import ViTConfig, build_vit

REPO = Path(__file__).resolve().parents[2]
CPU_RUNS = REPO / "results" / "attention_vs_shift_cpu_runs"

# The recipe fields that the equal-terms check of an earlier version did not compare
# (the issue that introduced TrainingRecipe names them).
ONCE_UNCHECKED = {"rand_augment_ops": 2, "random_erasing": 0.25, "mixup_alpha": 0.8, "cutmix_alpha": 1.0,
                  "init": "spach"}


def _tiny_splits(n=32) -> DataSplits:
    rng = np.random.default_rng(0)

    def part():
        return rng.integers(0, 256, (n, 32, 32, 3)).astype("uint8"), np.arange(n) % 10

    (xt, yt), (xv, yv), (xs, ys) = part(), part(), part()
    return DataSplits(xt, yt, xv, yv, xs, ys, tuple(f"c{i}" for i in range(10)), source="random test images")


def config_differences(saved: dict, config) -> list[str]:
    """How a recorded config differs from ``config``, read in its current form (as resume and reuse read it)."""
    return spec_differences({"config": saved}, {"config": config.to_dict()}, config)


def _equal_pair():
    return ex.equalise({"vit": preset("vit_quick"), "shift": preset("quick")}, resize_to=36, image_size=32)


def test_both_configs_are_training_recipes_and_share_every_recipe_field():
    assert issubclass(ShiftViTConfig, TrainingRecipe) and issubclass(ViTConfig, TrainingRecipe)
    for field, value in ONCE_UNCHECKED.items():
        assert field in ex.SHARED_FIELDS
        assert getattr(preset("vit_quick", **{field: value}), field) == value
    assert set(PIPELINE_FIELDS).isdisjoint(RECIPE_FIELDS) and "name" not in ex.SHARED_FIELDS


@pytest.mark.parametrize("field", sorted(ONCE_UNCHECKED))
def test_equal_terms_check_sees_each_field_it_once_missed(field):
    configs = _equal_pair()
    assert ex.shared_terms(configs)[field] == getattr(TrainingRecipe(), field)
    changed = {**configs, "shift": configs["shift"].replace(**{field: ONCE_UNCHECKED[field]})}
    with pytest.raises(ValueError, match=f"differ in: {field} "):
        ex.shared_terms(changed)


def test_the_vit_is_built_and_trained_with_the_whole_recipe():
    plain = build_vit(preset("vit_quick"))
    strong = build_vit(preset("vit_quick", rand_augment_ops=2, random_erasing=0.25, init="spach"), seed=1)
    assert plain.get_layer("preprocessing").rand_augment is None
    preprocessing = strong.get_layer("preprocessing")
    assert preprocessing.rand_augment is not None and preprocessing.eraser is not None
    # SPACH's initialisation: kernels from N(0, 0.02^2), biases zero (Glorot would give ~0.2 here).
    kernel, bias = (np.asarray(v) for v in strong.get_layer("block_0").attention.query_dense.weights)
    assert abs(kernel.std() - 0.02) < 0.004 and not bias.any()
    assert abs(np.asarray(plain.get_layer("block_0").attention.query_dense.kernel).std() - 0.02) > 0.05
    # MixUp/CutMix: the ViT's training targets are mixed one-hot rows, as ShiftViT's.
    train_ds, _, _ = training_datasets(preset("vit_quick", batch_size=8, mixup_alpha=0.8), _tiny_splits(), 0)
    _, targets = train_ds[0]
    assert targets.shape == (8, 10) and np.allclose(targets.sum(axis=1), 1.0)


def test_to_dict_keeps_the_shape_that_run_records_hold():
    # run_spec.json of a finished comparison run, written before TrainingRecipe existed:
    # the same keys in the same order, so reuse and resume compare like with like.
    saved = json.loads((CPU_RUNS / "shiftvit_official" / "run_spec.json").read_text())["config"]
    config = ex.comparison_configs("cpu")["shiftvit_official"]
    current = config.to_dict()
    # Fields added since (stem_channels, issue 26) come after them, at their old behaviour.
    assert [key for key in current if key in saved] == list(saved)
    assert set(current) - set(saved) == {"stem_channels"} and current["stem_channels"] == 0
    assert config_differences(saved, config) == []


def test_an_older_vit_record_is_read_in_its_current_form():
    saved = json.loads((CPU_RUNS / "vit" / "run.json").read_text())["config"]
    assert "mixup_alpha" not in saved  # recorded before the ViT shared the whole recipe
    vit = ex.comparison_configs("cpu")["vit"]
    assert config_differences(saved, vit) == []
    assert config_differences(saved, vit.replace(mixup_alpha=0.8)) == ["config.mixup_alpha (0.0 -> 0.8)"]
    # Not a ViTConfig: compared as it is, every field named.
    assert "config.bogus_field (1 -> None)" in config_differences({"bogus_field": 1}, vit)


def test_every_recorded_comparison_run_matches_its_current_config():
    # The configs reuse compares, for every model of the CPU-scale comparison recorded so far.
    configs = ex.comparison_configs("cpu")
    folders = sorted(folder for folder in CPU_RUNS.iterdir() if (folder / "run.json").is_file())
    assert {"vit", "shiftvit_official"} <= {folder.name for folder in folders}
    for folder in folders:
        spec = folder / "run_spec.json"
        saved = json.loads((spec if spec.is_file() else folder / "run.json").read_text())["config"]
        assert config_differences(saved, configs[folder.name]) == [], folder.name


def test_a_finished_run_without_its_spec_is_never_reused():
    # The shipped ViT folders of the CPU comparison predate run_spec.json: only run.json says what
    # they were, which is not enough to vouch for the data, so a comparison trains them again.
    vit = ex.comparison_configs("cpu")["vit"]
    assert not (CPU_RUNS / "vit" / "run_spec.json").exists() and (CPU_RUNS / "vit" / "run.json").exists()
    assert finished_run(CPU_RUNS / "vit", vit, run_spec(vit, _tiny_splits(), epochs=10)) is None


def test_unknown_fields_and_bad_values_are_one_line_errors():
    with pytest.raises(TypeError, match=r"Unknown config field\(s\): \['colour'\]"):
        preset("vit_quick", colour="red")
    with pytest.raises(ValueError, match="Invalid ViTConfig 'vit_quick': mixup_alpha must be >= 0"):
        preset("vit_quick", mixup_alpha=-1.0)
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        preset("quick", batch_size=0)
    assert preset("quick", batch_size=np.int64(8)).batch_size == 8
