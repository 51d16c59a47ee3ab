"""Presets are data; bad configs fail early with a message naming the field; the family registry is the
one place that chooses by config type."""

import ast
import dataclasses
import json
import math
import re
import types
import typing
from typing import Literal

import numpy as np
import pytest
from fakes import REPO

from shiftvit_lib.config import PRESETS, ShiftViTConfig, list_presets, preset
from shiftvit_lib.vit import VIT_PRESETS, ViTConfig

KERAS_IO_SHIFTVIT = dict(  # the keras-io ShiftViT example's hyperparameters, and the stages they give
    resize_to=52, image_size=48, patch_size=4, projected_dim=96, depths=(2, 4, 8, 2), num_div=12, shift_pixel=1,
    mlp_ratio=2.0, mlp_dropout=0.2, drop_path_rate=0.2, weight_decay=1e-4, lr_start=1e-5, lr_max=1e-3,
    warmup_fraction=0.15, batch_size=256, epochs=100, early_stopping_patience=5, shift="official",
    stage_dims=(96, 192, 384, 768), stage_resolutions=(12, 6, 3, 2))


def test_seed_preset_has_the_keras_io_hyperparameters():
    assert {field: getattr(preset("seed"), field) for field in KERAS_IO_SHIFTVIT} == KERAS_IO_SHIFTVIT


@pytest.mark.parametrize(("family", "presets", "kind"), [("shiftvit", PRESETS, ShiftViTConfig),
                                                         ("vit", VIT_PRESETS, ViTConfig)])
def test_presets_are_data_served_by_the_one_preset_door(family, presets, kind):
    assert set(list_presets(family)) == set(presets) and all(isinstance(v, dict) for v in presets.values())
    for name in presets:
        cfg = preset(name)
        assert type(cfg) is kind and cfg.name == name and hash(cfg) is not None  # frozen and hashable
    # (the presets the lessons name are built by the tests of each family's model)


@pytest.mark.parametrize(("name", "changes", "as_stored"), [
    ("quick", {"epochs": 2, "depths": [1, 1, 1]}, {"depths": (1, 1, 1)}),
    ("vit_quick", {"use_lsa": True, "head_units": [8, 4]}, {"head_units": (8, 4)}),
    # split(x, C // num_div): the keras-io shift takes widths its split can divide (and refuses others: below)
    ("cpu", {"shift": "keras_io", "num_div": 16}, {}),  # 64 // 16 = 4 divides 64, 128, 256
    ("seed", {"shift": "keras_io"}, {}),  # 96 // 12 = 8 divides 96, 192, ...
])
def test_overrides_replace_and_json_round_trip(name, changes, as_stored):
    cfg = preset(name, **changes)
    assert {field: getattr(cfg, field) for field in changes} == {**changes, **as_stored}  # lists become tuples
    assert preset(name) != cfg  # presets are not mutated
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.epochs = 3  # type: ignore[misc]
    assert type(cfg).from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert cfg.replace(epochs=3).epochs == 3 and cfg.epochs != 3


def ruled_out(field: dataclasses.Field, hint: object) -> list:
    """Values a field's declaration refuses: the wrong type, or just beyond its :func:`bounded` range."""
    hint = typing.get_args(hint)[0] if isinstance(hint, types.UnionType) else hint  # `int | None`
    if typing.get_origin(hint) in (tuple, Literal):
        return [2, (-5,)] if typing.get_origin(hint) is tuple else ["sideways"]  # depths=(2) is the int 2
    values = {int: [4.5, True], float: ["2", True]}.get(hint, [])  # bool and str: anything goes
    if values and "range" in field.metadata:
        low, high, closed, above = field.metadata["range"]
        step = 1 if hint is int else 0.5
        values += [low - step, *([low] if above else [])]
        if high < math.inf:
            values.append(high + step if closed else high)
        if hint is float:
            values += [math.nan, math.inf]
    return values


@pytest.mark.parametrize("name", ["quick", "vit_quick"])
def test_every_field_refuses_what_its_declaration_rules_out_in_one_line_naming_it(name):
    hints = typing.get_type_hints(type(preset(name)))
    for field in dataclasses.fields(preset(name)):
        for value in ruled_out(field, hints[field.name]):
            prefix = f"Invalid {type(preset(name)).__name__} '{name}': {field.name} must "
            with pytest.raises(ValueError, match=f"{prefix}.*got {re.escape(repr(value))}") as caught:
                preset(name, **{field.name: value})
            assert "\n" not in str(caught.value)


@pytest.mark.parametrize(("base", "change", "message"), [
    ("seed", {"projected_dim": 8}, "projected_dim"),
    ("seed", {"image_size": 60}, "cannot be larger than resize_to"),
    ("seed", {"image_size": 46}, "multiple of patch_size"),
    ("seed", {"shift_pixel": 2}, "last stage's resolution"),
    ("quick", {"stem_channels": 8, "patch_size": 1, "resize_to": 32}, "patch_size must be even"),
    ("quick", {"lr_max": -1e-3}, "lr_max must be positive and finite, such as 1e-3, got -0.001 (a minus sign?)"),
    # Issue 35, case 9: impossible values that were accepted (lr_max 0 or inf, epochs 0...).
    *[("quick", {"lr_max": lr_max, "lr_start": 0.0}, "lr_max must be positive and finite")
      for lr_max in (0.0, math.inf, math.nan)],
    ("quick", {"lr_start": 1e-2}, "lr_start <= lr_max"),
    # split(x, C // num_div): 64 // 12 = 5 groups cannot split 64 channels evenly; 24 // 12 = 2 groups
    # are fewer than the four that move (the model would fail at its first call)
    ("cpu", {"shift": "keras_io"}, "divisible by width // num_div; [64, 128, 256] are not with num_div 12"),
    ("quick", {"shift": "keras_io"}, "at least 4 * num_div and divisible by width // num_div; [24] are not"),
    # (a value out of a field's declared type or range: the test above, for every field of both families)
])
def test_a_bad_config_is_refused_in_one_line_naming_the_field(base, change, message):
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        preset(base, **change)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda: preset("gigantic"), ValueError, "seed"),  # the choices listed, of every family
    (lambda: preset("gigantic"), ValueError, "vit_cifar"),
    (lambda: preset("seed").replace(colour="blue"), TypeError, "colour"),
    (lambda: preset("vit_quick", colour="red"), TypeError, re.escape("Unknown config field(s): ['colour']")),
    (lambda: ShiftViTConfig.from_dict({"colour": "blue"}), TypeError, "colour"),
])
def test_an_unknown_preset_or_field_is_named(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_numpy_numbers_are_taken_as_python_numbers_and_the_config_still_writes_to_json():
    config = preset("quick", num_div=np.int64(8), batch_size=np.int64(8), mixup_alpha=np.float32(0.5))
    assert (config.num_div, type(config.num_div), type(config.mixup_alpha)) == (8, int, float)
    assert json.loads(json.dumps(config.to_dict()))["batch_size"] == 8


def test_strong_preset_keeps_the_seed_architecture_and_turns_the_regularisers_on():
    strong, seed = preset("strong"), preset("seed")
    assert (strong.depths, strong.projected_dim, strong.image_size) == (seed.depths, seed.projected_dim, seed.image_size)
    assert strong.one_hot_targets and not seed.one_hot_targets
    assert strong.rand_augment_ops == 2 and strong.random_erasing > 0 and strong.label_smoothing > 0
    assert strong.init == "spach" and strong.early_stopping_patience is None


def config_dispatches(source: str) -> list[str]:
    """``if``s and conditional expressions that choose by ``isinstance(..., SomethingConfig)``;
    a check that only raises (``if not isinstance(config, X): raise ...``) is not a choice."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.If, ast.IfExp)):
            continue
        test = ast.unparse(node.test)
        only_raises = isinstance(node, ast.If) and not node.orelse and all(
            isinstance(statement, ast.Raise) for statement in node.body)
        if "isinstance(" in test and "Config" in test and not only_raises:
            found.append(f"line {node.lineno}: {test}")
    return found


def test_no_isinstance_dispatch_on_config_types_outside_the_registry():
    root = REPO / "shiftvit_lib"
    found = [f"{path.relative_to(root)} {hit}" for path in sorted(root.rglob("*.py"))
             for hit in config_dispatches(path.read_text())]
    assert found == []
    # The finder finds a planted dispatch (an if, a conditional expression), not a check that only raises.
    for source in ("def builder(config):\n    return build_vit if isinstance(config, ViTConfig) else build_shiftvit\n",
                   "def macs(config):\n    if isinstance(config, ViTConfig):\n        return 1\n    return 2\n"):
        assert config_dispatches(source) != []
    assert config_dispatches("if not isinstance(config, ViTConfig):\n    raise TypeError('no')\n") == []
