"""The lessons' checks (shiftvit_lib/notebook/checks.py) fail on every catalogued mistake.

Each piece the learner writes in lessons 02-05, and each checked exercise of lessons
00-07, has a catalogue of plausible mistakes below, most planted as edits in its cell
filled with its "Solution" fold; the lesson's checking call must reject each with a
one-line hint. The filled cell passes its check, and so do correct variants (a DropPath
that draws its random numbers differently). While a blank is empty, the lesson's
checking cell falls back to the library's piece: that must pass. The folds are read by
tests/notebook/mutation.py, and the mutation test at the end varies every fold's code
and runs each wrong variant through its check.
"""

import contextlib
import functools
import io
import re
from types import SimpleNamespace

import keras
import mutation
import numpy as np
import pytest
from fakes import LESSONS, NOTEBOOKS, cells
from keras import ops

import shiftvit_lib as sv
from shiftvit_lib.layers import DropPath
from shiftvit_lib.notebook import checks

LESSON_IMPORTS = """
import math
import keras
import numpy as np
from keras import layers, ops
import shiftvit_lib as sv
from shiftvit_lib.notebook import checks
from shiftvit_lib.schedules import WarmUpCosine
"""
MUTATED_LESSONS = [path.stem for path in sorted(NOTEBOOKS.glob("0[0-7]_*.ipynb"))]
FOLDS = {fold.check: fold for lesson in MUTATED_LESSONS for fold in mutation.folds(lesson)}
# What check_val_counts reads of a DataSplits, with every class a different count.
Y_VAL = np.repeat(np.arange(10), np.arange(1, 11))[::-1].copy()
_UnbalancedSplits = SimpleNamespace(y_val=Y_VAL, class_counts=lambda: {
    "train": np.arange(20, 30), "val": np.bincount(Y_VAL), "test": np.full(10, 5)})


@functools.cache
def _before(lesson, check):
    """The namespace a fold's cell runs in: the lesson's earlier folds filled with their solutions."""
    namespace = {"data": _UnbalancedSplits}
    exec(LESSON_IMPORTS, namespace)
    for fold in mutation.folds(lesson):
        if fold.check == check:
            return namespace
        exec(mutation.fill(fold.cell, fold.code), namespace)


def _defined(fold, code):
    namespace = dict(_before(fold.lesson, fold.check))
    exec(mutation.fill(fold.cell, code), namespace)
    return namespace[fold.name]


def _edited(check, edits):
    """The piece a fold's filled cell defines with ``edits`` ({old: new}, made at once) planted."""
    fold = FOLDS[check]
    cell = mutation.fill(fold.cell, fold.code)
    assert all(old in cell for old in edits), f"{check}: {[old for old in edits if old not in cell]} not in its cell"
    olds = "|".join(map(re.escape, sorted(edits, key=len, reverse=True)))
    namespace = dict(_before(fold.lesson, check))
    exec(re.sub(olds, lambda found: edits[found[0]], cell) if edits else cell, namespace)
    return namespace[fold.name]


# The exercises' and blanks' solutions, as the lessons' "Solution" folds write them (the folds are the source)
ex = SimpleNamespace(**{fold.name: _defined(fold, fold.code) for fold in FOLDS.values()})

# The blanks' mistakes: check -> {mistake: edits of the filled cell, or a wrong version itself}
# One mistake per hint its check gives: two mistakes rejected with the same words test the same assertion
# (the mutation test at the end varies every fold's code for the rest).
LEFT, RIGHT, UP = "0 * g:1 * g", "1 * g:2 * g", "2 * g:3 * g"
MLP_EXPAND, MLP_PROJECT = 'self.expand = layers.Dense(int(self.ratio * channels), activation="gelu")', \
    "self.project = layers.Dense(channels)"
MASK_SHAPE = "shape = (ops.shape(x)[0],) + (1,) * (len(x.shape) - 1)"
APPLY = "optimizer.apply_gradients(zip(gradients, model.trainable_variables))"
SCHEDULE_HEAD = "def warmup_cosine(step, lr_start, lr_max, warmup_steps, total_steps):"
MISTAKES = {
    "check_shift": {
        "only the first image of the batch moved": {"return out": "return np.concatenate([out[:1], x[1:]])"},
        "every group moved s + 1 pixels": {"x = np.asarray(x)": "x, s = np.asarray(x), s + 1"},
        "left and right swapped": {LEFT: RIGHT, RIGHT: LEFT},
        "left and up swapped (rows for columns)": {LEFT: UP, UP: LEFT},
        "up moves down": {"out[:, :-s, :, 2 * g:3 * g] = x[:, s:, :": "out[:, s:, :, 2 * g:3 * g] = x[:, :-s, :"},
        "C // num_div channels in all, as keras-io's split": {"x.shape[-1] // num_div": "x.shape[-1] // num_div // 4"},
        "border filled with a copy (roll without mask)": {
            "out[:, :, :-s, 0 * g:1 * g] = x[:, :, s:, 0 * g:1 * g]":
            "out[..., 0 * g:1 * g] = np.roll(x[..., 0 * g:1 * g], -s, axis=2)"},
        "raises in the learner's own line": {"x = np.asarray(x)": 'x = np.asarray(x) + int("planted")'},
    },
    "check_mlp": {
        "no biases": {'activation="gelu")': 'activation="gelu", use_bias=False)',
                      "Dense(channels)": "Dense(channels, use_bias=False)"},
        "an extra Dense layer": {MLP_PROJECT: f"self.extra = {MLP_EXPAND[14:]}\n        {MLP_PROJECT}",
                                 "self.project(self.expand(x))": "self.project(self.extra(self.expand(x)))"},
        "hidden width always 2C": {"int(self.ratio * channels)": "2 * channels"},
        "no GELU": {', activation="gelu"': ""},
        "GELU after the second Dense": {', activation="gelu"': "", "Dense(channels)": 'Dense(channels, activation="gelu")'},
        "GELU swapped for ReLU": {'activation="gelu"': 'activation="relu"'},
        "adds the residual inside the MLP": {"return self.project(self.expand(x))": "return self.project(self.expand(x)) + x"},
    },
    "check_drop_path": {
        "a mask of shape (batch,)": {MASK_SHAPE: "shape = (ops.shape(x)[0],)"},
        "kept samples not rescaled": {"return x / keep *": "return x *"},
        "one random number per element": {MASK_SHAPE: "shape = ops.shape(x)"},
        "drops at inference too": {"if not training or": "if"},
        "drops with the keep probability": {"ops.floor(keep + u)": "ops.floor(self.rate + u)"},
        "a fixed integer seed (same mask every call)": {"seed=self.seed_generator": "seed=7"},
    },
    "check_block": {
        "fresh_norm_in_call": {"self.mlp(self.norm(x))": "self.mlp(layers.LayerNormalization(epsilon=1e-5)(x))"},
        "shift_inside_branch": {"x = sv.shift_channels(x, self.num_div)": "pass",
                                "self.mlp(self.norm(x))": "self.mlp(self.norm(sv.shift_channels(x, self.num_div)))"},
        "no_shift": {"x = sv.shift_channels(x, self.num_div)": "pass"},
        "no_residual": {"return x + ": "return "},
        "no_norm": {"self.mlp(self.norm(x))": "self.mlp(x)"},
        "fixed_num_div": {"self.num_div)": "12)"},
        "drop_path_missing": {"self.drop_path(branch, training=training)": "branch"},
        "drop_path_always_training": {"training=training)": "training=True)"},
        "drop_path_over_everything": {"x + self.drop_path(branch, training=training)":
                                      "self.drop_path(x + branch, training=training)"},
        "drop_path_before_mlp": {"self.mlp(self.norm(x))": "self.mlp(self.drop_path(self.norm(x), training=training))",
                                 "self.drop_path(branch, training=training)": "branch"},
    },
    "check_patch_merging": {
        "padding='valid' (odd maps lose a row)": {'padding="same"': 'padding="valid"'},
        "no norm": {"self.reduction(self.norm(x))": "self.reduction(x)"},
        "norm after the convolution": {"self.reduction(self.norm(x))": "self.norm(self.reduction(x))"},
        "convolution with a bias": {"use_bias=False": "use_bias=True"},
        "channels not doubled": {"2 * input_shape[-1]": "input_shape[-1]"},
        "stride 1 (the map does not shrink)": {"strides=2": "strides=1"},
        "3x3 kernel": {"input_shape[-1], 2,": "input_shape[-1], 3,"},
        "BatchNormalization instead of LayerNormalization": {"LayerNormalization(epsilon=1e-5)": "BatchNormalization()"},
        "GroupNormalization(1) instead of LayerNormalization": {
            "LayerNormalization(epsilon=1e-5)": "GroupNormalization(groups=1)"},
        "GELU after the convolution": {"use_bias=False": 'use_bias=False, activation="gelu"'},
        "odd maps padded at the top and left": {'padding="same"': 'padding="valid"', "self.reduction(self.norm(x))":
                                                "self.reduction(ops.pad(self.norm(x), [(0, 0), (x.shape[1] % 2, 0), "
                                                "(x.shape[1] % 2, 0), (0, 0)]))"},
        "LayerNormalization with Keras' default epsilon": {"epsilon=1e-5": ""},
    },
    "check_builder": {
        "every stage's rates given to each stage": {"stage_rates, merge=": "[r for s in rates for r in s], merge="},
        "ignores num_div": {"num_div=config.num_div": "num_div=12"},
        "ignores the shift kind": {"shift=config.shift,": 'shift="official",'},
        "ignores shift_pixel": {"shift_pixel=config.shift_pixel": "shift_pixel=1"},
        "ignores mlp_ratio": {"mlp_ratio=config.mlp_ratio": "mlp_ratio=2.0"},
        "ignores mlp_dropout": {"mlp_dropout=config.mlp_dropout": "mlp_dropout=0.0"},
        "no drop path": {"stage_rates, merge=": "[0.0] * len(stage_rates), merge="},
        "merges after the last stage too": {"merge=index < len(rates) - 1": "merge=True"},
        "augmentation always on": {"augment=config.augment": "augment=True"},
        "augmentation always off": {"augment=config.augment": "augment=False"},
    },
    "check_schedule": {
        "one step ahead": {SCHEDULE_HEAD: SCHEDULE_HEAD + "\n    step += 1"},
        "warm-up ends late": {SCHEDULE_HEAD: SCHEDULE_HEAD + "\n    warmup_steps += 3"},
        "warm-up from zero": {SCHEDULE_HEAD: SCHEDULE_HEAD + "\n    lr_start = 0.0"},
        "full cosine wave": {"math.cos(math.pi": "math.cos(2 * math.pi"},
        "rises again after the end": {"if step >= total_steps:": "if False:"},
    },
    "check_train_step": {
        "a new Adam made inside the step": {"optimizer.apply_gradients": "keras.optimizers.Adam(0.01).apply_gradients"},
        "training=False": {"training=True": "training=False"},
        "forgets the update": {APPLY: "pass"},
        "only the first weights": {"model.trainable_variables": "model.trainable_variables[:1]"},
        "gradient ascent": {"zip(gradients,": "zip([-g for g in gradients],"},
        "updates twice": {APPLY: f"{APPLY}\n    {APPLY}"},
        "returns the loss after the update": {"return float(loss)": "return float(loss_fn(labels, model(images, training=True)))"},
        "ignores the optimizer: v.assign_sub(lr * g)": {APPLY: "[v.assign_sub(float(optimizer.learning_rate) * g) "
                                                               "for v, g in zip(model.trainable_variables, gradients)]"},
    },
}
MISTAKES |= {  # the exercises': check -> {mistake: edits of the filled cell, or a wrong answer itself}
    "check_moved_channels": {"one group": {"4 * (C // num_div)": "C // num_div"},
                             "round instead of //": {"C // num_div": "round(C / num_div)"},
                             "no integer division": {"C // num_div": "C / num_div"},
                             "a third of the channels": {"4 * (C // num_div)": "C // 3"},
                             "raises": {"4 * (C // num_div)": 'int("planted")'}},
    "check_val_counts": {"the training counts": lambda labels: _UnbalancedSplits.class_counts()["train"],
                         "sorted counts": {"np.bincount(labels, minlength=10)": "np.sort(np.bincount(labels, minlength=10))"},
                         "no minlength": {", minlength=10": ""},
                         "in reverse order": {"minlength=10)": "minlength=10)[::-1]"}},
    "check_centre_crop": {"top-left corner": {"start = (images.shape[1] - crop) // 2": "start = 0"},
                          "start:-start (odd margins, crop == size)": {"start:start + crop": "start:-start"},
                          "one pixel off centre": {"// 2": "// 2 + 1"}},
    "check_pad_shift": {"up padded on the wrong axis": {"[no, (0, s), no, no]": "[no, no, (0, s), no]"},
                        "up and down swapped": {"left, right, up, down": "left, right, down, up"},
                        "down padded on the wrong side": {"[no, (s, 0), no, no]": "[no, (0, s), no, no]"}},
    "check_inside_block": {"the library's block": lambda block, x: block(x),
                           "no shift": lambda block, x: x + block.mlp(block.norm(x)),
                           "no skip": lambda block, x: block.mlp(block.norm(sv.shift_channels(x, num_div=12)))},
    "check_block_parameters": {"kernels only": 4 * 384**2, "a string": "591,744", "a float": 591744.0 + 0.5,
                               "no norm": 4 * 384**2 + 3 * 384, "one Dense": 2 * 384**2 + 3 * 384,
                               "ratio 4": 8 * 384**2 + 7 * 384},
    "check_shapes": {"side rounded down": {"-(-config.image_size // config.patch_size)":
                                           "config.image_size // config.patch_size", "-(-side // 2)": "side // 2"},
                     "no entry for the projection": {"return shapes": "return shapes[1:]"},
                     "channels never doubled": {"2 * channels": "channels"}},
    "check_floor_schedule": {
        "ends at 0 (the blank's warmup_cosine)": lambda step, lr_min, **a: ex.warmup_cosine(step, **a),
        "a straight line to lr_min": {"lr_min + 0.5 * (lr_max - lr_min) * (1 + math.cos(math.pi * progress))":
                                      "lr_max - (lr_max - lr_min) * progress"},
        "cosine to 0, clipped at lr_min": {"lr_min + 0.5 * (lr_max - lr_min) * (1 + math.cos(math.pi * progress))":
                                           "max(lr_min, 0.5 * lr_max * (1 + math.cos(math.pi * progress)))"},
        "warm-up from lr_min": {"return lr_start + (lr_max - lr_start)": "return lr_min + (lr_max - lr_min)"}},
    "check_ece": {"confidences of exactly 1.0 dropped": {"np.minimum((confidence * bins).astype(int), bins - 1)":
                                                         "(confidence * bins).astype(int)"},
                  "bins not weighted by their size": {"members.mean() * abs": "abs"}},
    "check_attention_macs": {"one product": {"2 * heads": "heads"}, "no heads": {"2 * heads": "2"},
                             "n k k": {"n * n * key_dim": "n * key_dim * key_dim"}},
}
CASES = [(check, mistake) for check, mistakes in MISTAKES.items() for mistake in mistakes]
# (check, mistake) -> words its hint must hold
WORDS = {
    ("check_shift", "only the first image of the batch moved"): "only the first image",
    # the learner's code raised: its one-line hint names the piece, what it raised, where and the likely cause
    ("check_shift", "raises in the learner's own line"): "my_shift raised ValueError: invalid literal for int()",
    ("check_moved_channels", "raises"): "'planted' (line 2 of its cell); likely cause: check the line it names",
    ("check_shift", "every group moved s + 1 pixels"): "moved 2 pixel(s), not s = 1",
    ("check_shift", "up moves down"): "must move up, they moved down",
    ("check_shift", "left and right swapped"): "must move left",
    ("check_pad_shift", "down padded on the wrong side"): "slice what stays, pad s zeros on the side it left",
    ("check_mlp", "hidden width always 2C"): "ratio * C = 3 * 6 = 18 units",
    ("check_mlp", "GELU swapped for ReLU"): "with sv.MLP's weights the output differs",
    ("check_mlp", "no biases"): "two Dense layers with biases",
    ("check_mlp", "an extra Dense layer"): "two Dense layers with biases",
    ("check_drop_path", "a fixed integer seed (same mask every call)"): "draw new numbers at every call",
    ("check_drop_path", "drops with the keep probability"): "a quarter must drop",
    ("check_drop_path", "a mask of shape (batch,)"): "MyDropPath raised",
    ("check_block", "drop_path_always_training"): "at inference drop path must drop nothing",
    ("check_block", "fresh_norm_in_call"): "s + drop_path(mlp(norm(s)))",
    ("check_patch_merging", "convolution with a bias"): "no bias",
    ("check_builder", "merges after the last stage too"): "every stage but the last",
    ("check_schedule", "full cosine wave"): "half a cosine",
    ("check_train_step", "training=False"): "training=True",
    ("check_train_step", "ignores the optimizer: v.assign_sub(lr * g)"): "plain SGD step",
    ("check_train_step", "a new Adam made inside the step"): "optimizer you were given counted 0",
    ("check_floor_schedule", "a straight line to lr_min"): "straight line",
    ("check_ece", "confidences of exactly 1.0 dropped"): "1.0",
    ("check_block_parameters", "a string"): "whole number",
}
# Correct versions written otherwise: they must pass
CORRECT = {"check_drop_path": {"SeedGenerator(seed)": "SeedGenerator(99)", "return x / keep * ops.floor(keep + u)":
                               "return ops.where(u >= self.rate, x / keep, 0.0)"},
           "check_mlp": {MLP_EXPAND: MLP_PROJECT, MLP_PROJECT: MLP_EXPAND}}  # its second Dense made first
CONTEXT = {"check_val_counts": (_UnbalancedSplits,)}


def _judge(check, candidate):
    """``candidate`` through the lesson's checking call: try_yours for a blank, exercise for an exercise."""
    if FOLDS[check].blank:
        return checks.try_yours(getattr(checks, check), candidate, None)
    return checks.exercise(getattr(checks, check), candidate, *CONTEXT.get(check, ()))


def _hint(check, candidate):
    """The one-line hint with which the lesson's checking call rejects ``candidate``."""
    with pytest.raises(AssertionError) as caught, contextlib.redirect_stdout(io.StringIO()):
        _judge(check, candidate)
    assert str(caught.value) and "\n" not in str(caught.value), repr(caught.value)
    return str(caught.value)


def test_every_fold_has_a_catalogue_of_mistakes_and_a_probe():
    assert set(FOLDS) == set(MISTAKES) == set(PROBES) and len(FOLDS) >= 18 and len(CASES) >= 50
    assert all(len(mistakes) >= (3 if FOLDS[check].blank else 2) for check, mistakes in MISTAKES.items())


@pytest.mark.parametrize(("check", "edits"), [(check, {}) for check in FOLDS] + list(CORRECT.items()))
def test_each_solution_and_a_correct_variant_pass(check, edits, capsys):
    """The cell filled with its "Solution" fold's code (or a correct variant of it) passes its check."""
    _judge(check, _edited(check, edits))
    assert capsys.readouterr().out.endswith("yours passes every check\n" if FOLDS[check].blank else ": right\n")


# The builder's mistakes each build a model (about 1 s each, 13 s together): they run in the full suite
# (`run.sh test`), not in the inner loop, which keeps the builder's solution check and one mistake.
@pytest.mark.parametrize(("check", "mistake"), [
    pytest.param(c, m, marks=[pytest.mark.slow] if c == "check_builder" and (c, m) not in WORDS else [])
    for c, m in CASES], ids=[f"{c}-{m}" for c, m in CASES])
def test_every_mistake_is_caught(check, mistake):
    wrong = MISTAKES[check][mistake]
    assert WORDS.get((check, mistake), "") in _hint(check, _edited(check, wrong) if isinstance(wrong, dict) else wrong)


def test_each_merging_mistake_gets_its_own_hint():
    hints = {name: _hint("check_patch_merging", _edited("check_patch_merging", edits))
             for name, edits in MISTAKES["check_patch_merging"].items()}
    assert len(set(hints.values())) == len(hints), hints


@pytest.mark.parametrize("check", [check for check, fold in FOLDS.items() if not fold.blank])
def test_a_blank_exercise_says_so_and_goes_on(check, capsys):
    _judge(check, (lambda *args, **kwargs: None) if callable(getattr(ex, FOLDS[check].name)) else None)
    assert "not answered yet" in capsys.readouterr().out


def test_an_empty_blank_goes_on_with_the_library(capsys):
    """While a blank raises NotImplementedError, try_yours checks the library's piece and hands it on. (Each
    lesson's empty blanks, followed by their checking cells, run as the lesson ships: the nbval run of `run.sh test`.)"""
    def my_shift(x, num_div=12, s=1):
        raise NotImplementedError("write the shift")

    assert checks.try_yours(checks.check_shift, my_shift, sv.shift_channels) is sv.shift_channels
    assert capsys.readouterr().out == "my_shift: not written yet, so the lesson goes on with the library's version\n"


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda: checks.try_yours(DropPath, checks.check_drop_path, DropPath), TypeError,
     r"takes the check first: try_yours\(check_drop_path"),
    (lambda: checks.try_yours(checks.check_drop_path, DropPath(0.1), DropPath), TypeError,
     r"pass the class itself \(DropPath\), not a layer"),
    (lambda: checks.exercise(checks.check_moved_channels, len), AssertionError, "could not use what len gave"),
    (lambda: checks.check_shift(lambda x, num_div=12, s=1: None), AssertionError,
     "returned None: did you forget its `return` line"),
])
def test_a_check_called_wrongly_says_what_to_change(call, error, words):
    with pytest.raises(error, match=words) as refused:
        call()
    assert "\n" not in str(refused.value)


def test_every_blank_and_exercise_is_followed_by_its_check():
    """Lessons 02-05 ship at least six blanks empty (so the nbval run of the lessons is the run of a notebook
    whose every blank is left empty), each followed by its solution and a try_yours cell; every exercise's
    cell is checked by checks.exercise, which stops "Run all" on a wrong answer; no check only prints; nbval's
    markers live in the cells' tags, which the learner never sees."""
    blanks = []
    for path in LESSONS:
        nb = cells(path)
        for index, cell in enumerate(nb):
            text, after = "".join(cell["source"]), ["".join(c["source"]) for c in nb[index + 1 : index + 3]]
            if cell["cell_type"] != "code":
                continue
            assert "NBVAL_" not in text and not re.search(r"Not yet|Not quite|Not answered", text), path.name
            if 'raise NotImplementedError("write' in text.replace('(f"', '("'):
                blanks.append(path.name)
                assert "<summary>Solution of the blank</summary>" in after[0], path.name
                assert "checks.try_yours(checks.check_" in re.sub(r"\s+", "", after[1]), path.name  # however wrapped
            elif re.search(r"#\s*your (code|answer|change)", text, flags=re.I):
                following = next((c for c in nb[index + 1 :] if c["cell_type"] == "code"), {"source": ""})
                assert "checks.exercise(checks.check_" in text + "".join(following["source"]), f"{path.name}: {text[:60]!r}"
    assert len(blanks) >= 6 and {name[:2] for name in blanks} == {"02", "03", "04", "05"}, blanks


# The mutation test of the checks ---------------------------------------------
# Every blank's and every checked exercise's "Solution" fold, read from its lesson, is varied at
# the AST level (tests/notebook/mutation.py); each variant whose outputs differ from the fold's on
# random inputs must be rejected by the lesson's own check with its one-line message.


def _seeded(make):
    keras.utils.set_random_seed(5)
    return make()


def _layer_outputs(make, inputs, **calls):
    layer = _seeded(make)
    return [ops.convert_to_numpy(layer(x, **calls)) for x in inputs]


def _probe_inputs(shapes, seed=21):
    rng = np.random.default_rng(seed)
    return [rng.uniform(1.0, 2.0, size=shape).astype("float32") for shape in shapes]


def _probe_step(step):
    model, out = checks._step_model(), []
    optimizer, loss_fn = keras.optimizers.Adam(0.01), keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    rng = np.random.default_rng(3)
    for _ in range(3):
        images, labels = rng.normal(size=(8, 6)).astype("float32"), rng.integers(0, 3, size=8)
        out.append(step(model, optimizer, loss_fn, images, labels))
    return out + model.get_weights()


def _probe_shift(shift):
    cases = [((1, 5, 7, 11), 4, 1), ((2, 6, 6, 13), 4, 2), ((1, 7, 5, 24), 6, 3), ((1, 4, 4, 30), 6, 1)]
    return [shift(x, n, s) for x, (_, n, s) in zip(_probe_inputs(shape for shape, _, _ in cases), cases)]


CROP_IMAGES = _probe_inputs([(2, 52, 52, 3), (1, 33, 33, 2)])
# check name -> what a candidate gives on random inputs (a variant giving the same is no mistake)
PROBES = {
    "check_moved_channels": lambda f: [f(c, n) for c in range(1, 120, 7) for n in range(1, 14)],
    "check_val_counts": lambda f: [f(np.random.default_rng(seed).integers(0, 10 - seed, 50)) for seed in (0, 3)]
    + [f(_UnbalancedSplits.y_val)],
    "check_centre_crop": lambda f: [f(x, crop) for x in CROP_IMAGES for crop in (x.shape[1], x.shape[1] - 7,
                                                                               x.shape[1] - 12, 1)],
    "check_shift": _probe_shift,
    "check_pad_shift": _probe_shift,
    "check_mlp": lambda cls: _layer_outputs(lambda: cls(3.0), _probe_inputs([(2, 3, 3, 6)]))
    + _layer_outputs(lambda: cls(2.0), _probe_inputs([(1, 2, 2, 5)])),
    "check_drop_path": lambda cls: _layer_outputs(lambda: cls(0.25, seed=3), _probe_inputs([(64, 2, 2, 3)]) * 2,
                                                  training=True)
    + _layer_outputs(lambda: cls(0.25, seed=3), _probe_inputs([(4, 2, 2, 3)]), training=False),
    "check_block": lambda cls: _layer_outputs(lambda: cls(num_div=6, drop_path_rate=0.5),
                                              _probe_inputs([(16, 4, 4, 26)]) * 2, training=True)
    + _layer_outputs(lambda: cls(num_div=4, drop_path_rate=0.5), _probe_inputs([(2, 4, 4, 13)]), training=False),
    "check_patch_merging": lambda cls: _layer_outputs(cls, _probe_inputs([(1, 8, 8, 6), (1, 8, 8, 6)]))
    + _layer_outputs(cls, _probe_inputs([(1, 7, 7, 4)])),
    "check_builder": lambda build: [
        m.count_params() for m in [_seeded(lambda c=c: build(c)) for c in checks.builder_configs()]
    ] + [_seeded(lambda c=c: build(c))(CROP_IMAGES[0][:, :32, :32] * 100).numpy()
         for c in checks.builder_configs()],
    "check_inside_block": lambda f: [f(_seeded(lambda: sv.ShiftViTBlock(num_div=12)), x)
                                     for x in _probe_inputs([(2, 5, 5, 26)])],
    "check_block_parameters": lambda answer: answer,
    "check_shapes": lambda f: [f(sv.preset(name).replace(image_size=size, resize_to=size + 4)) for name in ("quick", "seed")
                               for size in (36, 44, 52)],
    "check_schedule": lambda f: [f(step, 1e-4, 1e-2, w, t) for w, t in [(10, 50), (7, 31)] for step in range(60)],
    "check_floor_schedule": lambda f: [f(step, 1e-5, 1e-3, w, t, 1e-4) for w, t in [(10, 50), (7, 31)]
                                       for step in range(60)],
    "check_train_step": _probe_step,
    "check_ece": lambda f: [f(c, c > u, bins) for c, u in [np.random.default_rng(9).uniform(0.1, 1.0, (2, 300))]
                            for bins in (10, 7)] + [f(np.array([1.0, 1.0, 0.5, 0.93]), np.array([True, False, False, True]))],
    "check_attention_macs": lambda f: [f(n, h, k) for n in (3, 10, 17) for h in (1, 2, 5) for k in (4, 7)],
}


def _outputs(probe, candidate):
    try:
        return [np.asarray(ops.convert_to_numpy(v), dtype="float64") for v in _flat(probe(candidate))]
    except Exception as error:  # a variant that raises differs from the solution
        return error


def _flat(value):
    return [w for v in value for w in _flat(v)] if isinstance(value, list | tuple) else [value]


def _differs(a, b):
    if isinstance(a, Exception) or isinstance(b, Exception) or len(a) != len(b):
        return True
    return any(x.shape != y.shape or not np.allclose(x, y, rtol=1e-6, atol=1e-9, equal_nan=True) for x, y in zip(a, b))


def _verdict(fold, candidate):
    """None if the lesson's checking call rejects ``candidate`` with a one-line hint, else what it did."""
    try:
        with contextlib.redirect_stdout(io.StringIO()) as said:
            _judge(fold.check, candidate)
    except AssertionError as hint:
        return None if str(hint) and "\n" not in str(hint) else f"a bare or multi-line AssertionError: {hint!r}"
    except Exception as error:  # noqa: BLE001 - what the learner would see instead of a hint
        return f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:160]
    return None if "not answered yet" in said.getvalue() else "passed"


def mutation_score(check):
    """(rejected, wrong variants, {variant: what the check did}) for one check."""
    fold = FOLDS[check]
    probe = PROBES[check]
    expected = _outputs(probe, _defined(fold, fold.code))
    assert not isinstance(expected, Exception), expected
    survivors, wrong = {}, 0
    for name, code in mutation.mutants(fold.code).items():
        try:
            candidate = _defined(fold, code)
        except Exception:  # noqa: BLE001 - a variant that does not even define its piece
            continue
        if not _differs(_outputs(probe, candidate), expected):
            continue  # an equivalent variant
        wrong += 1
        if (verdict := _verdict(fold, candidate)) is not None:
            survivors[name] = verdict
    return wrong - len(survivors), wrong, survivors


@pytest.mark.slow
@pytest.mark.parametrize("check", sorted(PROBES))
def test_every_wrong_variant_of_a_solution_is_rejected(check):
    rejected, wrong, survivors = mutation_score(check)
    assert wrong >= 2, f"{check}: only {wrong} wrong variants"
    assert not survivors, f"{check}: {rejected}/{wrong} rejected; survivors: {survivors}"


def _weakened(check, old, new):
    """``check`` compiled from checks.py with one edit (old -> new) planted in its source."""
    import inspect

    source = inspect.getsource(getattr(checks, check))
    assert source.count(old) == 1, f"{old!r} is not once in {check}"
    namespace = dict(vars(checks))
    exec(source.replace(old, new), namespace)
    return namespace[check]


@pytest.mark.slow
def test_a_weakened_check_fails_the_mutation_test(monkeypatch):
    """The mutation test is itself a test: without its confidences of exactly 1.0, check_ece
    accepts a variant that puts them in a bin of their own (bins - 1 + 1) and loses them."""
    monkeypatch.setattr(checks, "check_ece", _weakened("check_ece", "[1.0] * 12", "[0.99] * 12"))
    rejected, wrong, survivors = mutation_score("check_ece")
    assert any(name.startswith("bins - 1") for name in survivors), survivors
