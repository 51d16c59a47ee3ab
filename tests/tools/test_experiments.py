"""Comparisons on equal terms: the fairness check, costs, the table, the runner, the record."""

import json
from pathlib import Path

import numpy as np
import pytest
from fakes import one_line, tiny_splits

from shiftvit_lib import build_shiftvit, count_macs, preset
from shiftvit_lib.tools import experiments as ex
from shiftvit_lib.tools.experiments import format_table, model_costs, run_comparison
from shiftvit_lib.vit import build_vit, count_vit_macs


def _quick_pair():
    # A ViT and a ShiftViT with the same (32 px) input pipeline and the same recipe.
    return {
        "vit": preset("vit_quick", resize_to=36, image_size=32, depth=1),
        "shift": preset("quick", depths=(1, 1), projected_dim=24),
    }


def equalised(configs, **fields):
    """``configs`` with ``fields`` set on every one (as lesson 07's configs are)."""
    return {name: config.replace(**fields) for name, config in configs.items()}


# The recipe fields that the equal-terms check of an earlier version did not compare
# (the issue that introduced TrainingRecipe names them).
ONCE_UNCHECKED = {"rand_augment_ops": 2, "random_erasing": 0.25, "mixup_alpha": 0.8, "cutmix_alpha": 1.0,
                  "init": "spach"}
# A change to the equalised ViT (None: no configs) -> the words of the one-line error with which
# run_comparison refuses it before training. A ViT takes each recipe field (replace refuses an unknown
# one); the architecture may differ. The quick ViT preset crops 16 px, the quick ShiftViT 32 px: as shipped
# they are not on equal terms.
UNEQUAL = {
    "as shipped": ({"resize_to": 18, "image_size": 16},
                   r"differ in: resize_to .*image_size \(vit=16, shift=32\)"),
    "two fields": ({"lr_max": 1e-3, "batch_size": 32},
                   r"batch_size \(vit=32, shift=64\); lr_max \(vit=0.001, shift=0.002\)"),
    **{field: ({field: value}, f"differ in: {field} \\(vit={value!r}, ")
       for field, value in ONCE_UNCHECKED.items()},
    "none": (None, "at least one"),
}


@pytest.mark.parametrize("difference", UNEQUAL)
def test_run_comparison_refuses_configs_not_on_equal_terms_naming_every_difference(tmp_path, difference):
    changes, words = UNEQUAL[difference]
    configs = equalised({"vit": preset("vit_quick"), "shift": preset("quick")}, resize_to=36, image_size=32)
    configs = {} if changes is None else {**configs, "vit": configs["vit"].replace(**changes)}
    with pytest.raises(ValueError, match=words) as refused:
        run_comparison(configs, tiny_splits(), tmp_path)
    one_line(refused.value)


def test_model_costs_match_the_builders_and_mac_counters():
    vit, shift = _quick_pair().values()  # one block each: the same code as the presets, a fraction of the time
    assert model_costs(vit) == {"parameters": build_vit(vit).count_params(), "macs": count_vit_macs(vit)["total"]}
    assert model_costs(shift) == {"parameters": build_shiftvit(shift).count_params(), "macs": count_macs(shift)["total"]}
    with pytest.raises(TypeError):
        model_costs({"not": "a config"})


def test_format_table_aligns_columns_and_marks_missing_values():
    rows = [
        {"name": "vit", "parameters": 39418, "test_top1": 0.25},
        {"name": "shiftvit_official", "parameters": 329290, "test_top1": None},
    ]
    table = format_table(rows, [("name", "model", "{}"), ("parameters", "params", "{:,}"), ("test_top1", "top-1", "{:.1%}")])
    lines = table.splitlines()
    assert lines[0].split() == ["model", "params", "top-1"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert lines[2].startswith("vit ") and lines[2].endswith("25.0%")
    assert lines[3].endswith("-") and "329,290" in lines[3]
    # Right-aligned numbers end in the same column.
    assert lines[2].index("39,418") + len("39,418") == lines[3].index("329,290") + len("329,290")


def test_top1_interval_and_the_rows_95_percent_interval():
    low, high = ex.top1_interval(0.5, 500)
    assert high - low == pytest.approx(2 * 1.96 * np.sqrt(0.25 / 500))
    assert ex.top1_interval(0.0, 10) == (0.0, 0.0)
    assert ex.top1_interval(0.99, 10)[1] == 1.0
    with pytest.raises(ValueError):
        ex.top1_interval(0.5, 0)
    record = {"parameters": 1, "train_images_per_second": 1.0, "best_val_accuracy": 0.5, "epochs_run": 1,
              "train_seconds": 12.5, "test": {"accuracy": 0.8, "top5": 0.99, "images": 10_000}}
    row = ex._row("m", preset("quick"), record, 1.0)
    # 1.96 * sqrt(0.8 * 0.2 / 10000) = 0.00784
    assert row["test_top1_ci95"] == pytest.approx([0.7922, 0.8078], abs=1e-4)
    assert row["train_seconds"] == 12.5 and row["seconds"] == 1.0


@pytest.mark.slow
def test_run_comparison_trains_each_model_on_equal_terms(tmp_path):
    data = tiny_splits(40, 40, 40)
    configs = equalised(_quick_pair(), epochs=1, batch_size=20)
    lines = []
    rows = run_comparison(configs, data, tmp_path, log=lines.append)
    assert [row["name"] for row in rows] == ["vit", "shift"]
    for row, config in zip(rows, configs.values()):
        assert row["parameters"] == model_costs(config)["parameters"]
        assert row["epochs_run"] == 1 and row["test_images"] == 40
        assert 0.0 <= row["test_top1"] <= row["test_top5"] <= 1.0
        assert (tmp_path / row["name"] / "run.json").exists()
    assert len(lines) == 2 and "trained" in lines[0]

    # restart=False reuses finished runs with the same config and epochs, without training.
    again = run_comparison(configs, data, tmp_path, restart=False, log=lines.append)
    assert "reused a finished run" in lines[-1]
    assert [r["test_top1"] for r in again] == [r["test_top1"] for r in rows]
    # A reused row reports the training time recorded in the run, not this call's wall time.
    for row, first in zip(again, rows):
        assert row["train_seconds"] == first["train_seconds"] == json.loads(
            (tmp_path / row["name"] / "run.json").read_text())["train_seconds"] > 0
    # restart=True trains afresh: one epoch in the history, not two.
    fresh = run_comparison({"shift": configs["shift"]}, data, tmp_path, restart=True, log=lines.append)
    assert [r["epochs_run"] for r in fresh] == [1]

    record = ex.comparison_record(rows, configs, data, seed=42, mode="quick")
    assert json.loads(json.dumps(record))["shared_terms"]["input_shape"] == [32, 32, 3]
    assert record["data_source"] == "random test images" and record["epochs"] == 1


# A scale of lesson 07's comparison -> its epochs and the ShiftViT it trains with its preset's own recipe
# (the values lesson 07 and its records were made with). "cpu": the cpu preset on a shorter schedule, with
# the num_div that the keras-io shift can split, and the ViTs' single patch projection.
# Its image_size, batch_size, lr_max and warmup_fraction, pinned.
SCALES = {True: (5, preset("quick", projected_dim=48), [32, 64, 2e-3, 0.1]),
          False: (100, preset("seed"), [48, 256, 1e-3, 0.15]),
          "cpu": (10, preset("cpu", num_div=16, stem_channels=0), [32, 128, 2e-3, 0.04])}


@pytest.mark.parametrize("scale", SCALES)
def test_comparison_configs_are_the_five_models_on_equal_terms(scale):
    epochs, shiftvit, pinned = SCALES[scale]
    configs = ex.comparison_configs(scale)
    assert list(configs) == ["vit", "vit_spt_lsa", *ex.SHIFT_ABLATION]
    assert configs["shiftvit_official"] == shiftvit.replace(epochs=epochs, early_stopping_patience=None)
    assert [configs[name].shift for name in ex.SHIFT_ABLATION] == ["official", "keras_io", "none"]
    assert configs["vit_spt_lsa"].use_spt and configs["vit_spt_lsa"].use_lsa and not configs["vit"].use_lsa
    terms = ex.shared_terms(configs)  # raises if any pipeline or recipe field differs
    assert terms == {**{name: getattr(shiftvit, name) for name in ex.SHARED_FIELDS}, "epochs": epochs,
                     "early_stopping_patience": None}
    assert [terms[name] for name in ("image_size", "batch_size", "lr_max", "warmup_fraction")] == pinned
    assert ex.shared_terms(ex.comparison_configs(scale, epochs=2))["epochs"] == 2
    with pytest.raises(ValueError, match="scale must be one of"):
        ex.comparison_configs("huge")


CPU_RUNS = Path(__file__).resolve().parents[2] / "results" / "attention_vs_shift_cpu_runs"


def test_every_recorded_comparison_run_has_its_current_config_in_the_same_key_order():
    # The CPU-scale comparison's configs are still what each recorded run trained, keys in the order the
    # records hold (fields added since aside: such a run folder, written by an earlier version, is not
    # resumed or reused). ShiftViT's fields added since (stem_channels, issue 26; mix_on_device and
    # steps_per_execution, issue 45) come after them, at their old behaviour.
    configs = ex.comparison_configs("cpu")
    for record in sorted(CPU_RUNS.glob("*/run.json")):
        saved, current = json.loads(record.read_text())["config"], configs[record.parent.name].to_dict()
        assert {key: json.loads(json.dumps(current.get(key))) for key in saved} == saved, record.parent.name
        assert [key for key in current if key in saved] == list(saved), record.parent.name
        if record.parent.name.startswith("shiftvit"):
            added = {key: current[key] for key in set(current) - set(saved)}
            assert added == {"stem_channels": 0, "mix_on_device": False, "steps_per_execution": 1}, added
