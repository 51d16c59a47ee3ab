"""Checks for the pieces the learner writes in the lessons.

Each ``check_*`` function runs a learner's piece and the library's (or a reference) on
inputs chosen to expose the likely mistakes, and raises ``AssertionError`` with a
one-line hint naming what is wrong ("the residual must carry the shifted map"). Most
hints come from one table per check, the result a known mistake gives -> its hint,
read by one helper (``_diagnose``). ``try_yours`` is what a blank's checking cell calls
(lessons 02-05): it checks the learner's version or, while that is still a blank
(``NotImplementedError``), says so and checks and returns the library's version, so the lesson
runs on (a core piece, or lesson 05's ``library_train_step``: the core trains with ``fit``).
``exercise`` is what an exercise's checking cell calls (lessons 00-07).

``tests/notebook/test_checks.py`` injects a catalogue of plausible mistakes into every
piece and asserts that each check fails on every one of them and passes each lesson's solution.
This is a lesson helper: it imports the core; the core never imports it.
"""

from __future__ import annotations

import functools
import re
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import keras
import numpy as np
from keras import ops

from shiftvit_lib.config import is_whole_number, preset
from shiftvit_lib.layers import MLP, PatchMerging, ShiftViTBlock, ShiftViTStage, drop_path_rates
from shiftvit_lib.model import build_shiftvit
from shiftvit_lib.notebook.plots import architecture_shapes, reliability_table
from shiftvit_lib.schedules import WarmUpCosine
from shiftvit_lib.shift import SHIFT_DIRECTIONS, shift_channels
from shiftvit_lib.vit import count_vit_macs


def try_yours(check: Callable[[Any], None], yours: Any, library: Any) -> Any:
    """Check ``yours``; while it is a blank, check the library's version ``library`` and return it.

    A wrong version raises the check's ``AssertionError``: "Run all" stops at it.
    """
    name = getattr(yours, "__name__", type(yours).__name__)
    if name.startswith("check_"):
        raise TypeError(f"try_yours takes the check first: try_yours({name}, yours, library)")
    if isinstance(yours, keras.layers.Layer):  # a check builds its own layers from the class
        raise TypeError(f"pass the class itself ({name}), not a layer made from it ({name}(...))")
    try:
        check(yours)
    except NotImplementedError:
        print(f"{name}: not written yet, so the lesson goes on with the library's version")
        check(library)
        return library
    except Exception as error:  # the learner's code raised: its hint, not a traceback through the check
        raise error if isinstance(error, AssertionError) else AssertionError(_hint_of(name, error)) from None
    print(f"{name}: yours passes every check")
    return yours


def exercise(check: Callable[..., None], answer: Any, *context: Any) -> None:
    """Check an exercise's answer and say in one line whether it is right or still blank.

    A wrong answer raises the check's ``AssertionError`` with a hint: "Run all" stops there.
    (It returns nothing, so a notebook shows only that line.)
    """
    name = getattr(answer, "__name__", "your answer")
    try:
        check(answer, *context)
    except NotImplementedError as note:  # still blank (``_blank``): say so, and the lesson goes on
        print(f"{name}: not answered yet. {note}")
        return
    except Exception as error:  # the learner's code raised: its hint, not a traceback through the check
        raise error if isinstance(error, AssertionError) else AssertionError(_hint_of(name, error)) from None
    print(f"{name}: right")


# What most often makes the learner's code raise: {words of the type or message: the likely cause}
CAUSES = {
    "NameError|UnboundLocal|not defined": "a name used before it is set: a line is missing or out of order",
    "has no attribute": "an attribute never set (a line missing in build or __init__) or the wrong object",
    "NoneType": "something gave None: a `return` is missing",
    "ZeroDivision|by zero": "a division by zero",
    "slice indices must be integers": "a slice bound that is not an integer: use // for integer division",
    "broadcast|Dimension|shape|ConcatOp|ncompatible|rank": "the shapes do not fit: check the slices, the "
    "padded axis and the shape of what you return",
    "units|filters|positive integer": "a layer got a size that is not a positive whole number",
    "TypeError": "an argument of the wrong type or in the wrong place",
}


def _hint_of(name: str, error: BaseException) -> str:
    """One line for an exception: which piece, what it raised (type, first line), where, the likely cause."""
    lines = [re.sub(r"\x1b\[[0-9;]*m|\{\{[^}]*\}\}\s*", "", line).strip() for line in str(error).splitlines()]
    first = next((x for x in lines if x and "Exception encountered" not in x), "")
    said = f"{type(error).__name__}: {first}"[:150]
    cause = next((why for words, why in CAUSES.items() if re.search(words, said)), "check the line it names")
    # the learner's frames are neither ours nor a package's
    foreign = re.compile(f"^{re.escape(str(Path(__file__).resolve().parents[1]))}|-packages|/lib/python")
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not foreign.search(f.filename)]
    if not frames:
        return f"the check could not use what {name} gave ({said}): {cause}"
    last = frames[-1]
    where = f" at `{last.line.strip()[:60]}`" if last.line else f" (line {last.lineno} of its cell)"
    return f"{name} raised {said}{where}; likely cause: {cause}"


def _blank(value: Any, what: str) -> None:
    if value is None or (isinstance(value, list | tuple) and not value):
        raise NotImplementedError(what)


def _numpy(x: Any) -> np.ndarray:
    if x is None:
        raise AssertionError("your function returned None: did you forget its `return` line?")
    return np.asarray(ops.convert_to_numpy(x))


def _same(a: Any, b: Any, rtol: float = 1e-4) -> bool:
    """Equal results: integers exactly, floats to ``rtol`` of ``b``'s scale, lists item by item."""
    if isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y, rtol) for x, y in zip(a, b))
    a, b = _numpy(a), _numpy(b)
    if a.shape != b.shape or not b.size:
        return a.shape == b.shape
    if a.dtype.kind in "iub" and b.dtype.kind in "iub":
        return bool(np.array_equal(a, b))
    return bool(np.allclose(a, b, rtol=rtol, atol=rtol * np.abs(b).max()))


def _diagnose(got: Any, expected: Any, mistakes: dict[str, Any], otherwise: str, rtol: float = 1e-4) -> None:
    """Pass if ``got`` is ``expected``; else raise the hint of the first mistake whose result
    ``got`` is (a result may be a function, called only when needed), or ``otherwise``."""
    if not _same(got, expected, rtol):
        results = ((hint, wrong() if callable(wrong) else wrong) for hint, wrong in mistakes.items())
        hints = (hint for hint, wrong in results if _same(got, wrong, rtol))
        raise AssertionError(next(hints, otherwise))


def _randomise(layer: keras.layers.Layer, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    for weight in layer.trainable_weights:
        weight.assign(rng.normal(0.0, 0.3, size=tuple(weight.shape)).astype("float32"))
    return [_numpy(weight) for weight in layer.trainable_weights]


def _copy_by_role(mine: keras.layers.Layer, library: keras.layers.Layer, hint: str) -> None:
    """Give ``mine`` the library's weights, matched by role (kernel or bias) and shape, not by the
    order the layers were made in; a weight with no counterpart gets ``hint``."""
    role = lambda weight: (weight.path.split("/")[-1], tuple(weight.shape))  # noqa: E731
    theirs = {role(w): w for w in library.trainable_weights}
    got = sorted(role(w) for w in mine.trainable_weights)
    assert got == sorted(theirs), f"{hint}: got {', '.join(f'{n} {s}' for n, s in got) or 'no weights'}"
    for weight in mine.trainable_weights:
        weight.assign(_numpy(theirs[role(weight)]))


def _layers(layer: keras.layers.Layer, kind: type) -> list[Any]:
    return [sub for sub in layer._flatten_layers() if isinstance(sub, kind)]


def _each_way(x: np.ndarray, s: int) -> list[np.ndarray]:
    """``x`` shifted left, right, up and down by ``s`` pixels."""
    return np.split(_numpy(shift_channels(np.concatenate([x] * 4, axis=-1), 4, s)), 4, axis=-1)


# The shift (lesson 02) ----------------------------------------------------
# C / num_div with remainders 0, below and above one half (round() and // differ on 2.75 and 11.75)
SHIFT_CASES = [
    ((1, 5, 5, 6), 6, 1),
    ((2, 7, 9, 24), 12, 1),
    ((2, 6, 10, 50), 8, 2),
    ((1, 6, 6, 13), 4, 3),
    ((1, 5, 7, 11), 4, 1),
    ((1, 6, 5, 47), 4, 2),
]


def check_shift(shift: Callable[..., Any]) -> None:
    """``shift(x, num_div, s)`` must equal ``sv.shift_channels`` exactly, on (shape, num_div, s) cases."""
    rng = np.random.default_rng(0)
    for shape, num_div, s in SHIFT_CASES:
        x, g = rng.uniform(1.0, 2.0, size=shape).astype("float32"), shape[-1] // num_div  # no zeros
        got, expected = _numpy(shift(x, num_div, s)), _numpy(shift_channels(x, num_div, s))
        where = f"(shape {shape}, num_div={num_div}, s={s})"
        assert got.shape == x.shape, f"the shift must keep the shape {shape}, got {got.shape} {where}"
        moved = int((got != x).any(axis=(0, 1, 2)).sum())
        assert moved == 4 * g, f"4 * (C // num_div) = {4 * g} move, the rest stay; {moved} moved {where}"
        for k, direction in enumerate(SHIFT_DIRECTIONS):
            part = slice(k * g, (k + 1) * g)
            ways = zip(SHIFT_DIRECTIONS, _each_way(x[..., part], s))
            hint = f"channels [{k * g}, {(k + 1) * g}) must move {direction}, they moved {{}} {where}"
            mistakes = {hint.format(other): way for other, way in ways if other != direction}
            first_only = np.concatenate([expected[:1, ..., part], x[1:, ..., part]])
            mistakes[f"only the first image moved: slice every image (x[:, ...]) {where}"] = first_only
            for o in {1, 2, 3} - {s}:
                hint = f"the {direction} group moved {o} pixel(s), not s = {s}: each offset is s {where}"
                mistakes[hint] = _numpy(shift_channels(x, num_div, o))[..., part]
            otherwise = f"the {direction} group holds the wrong numbers: check its slices {where}"
            if not np.array_equal(got[..., part] != 0, expected[..., part] != 0):
                otherwise = f"moving {direction}, what crosses the border is lost: zeros fill {s} pixel(s)"
            _diagnose(got[..., part], expected[..., part], mistakes, otherwise)


# The MLP, DropPath, the block and patch merging (lesson 03) --------------------
def check_mlp(mlp_class: Callable[..., Any]) -> None:
    """``mlp_class(ratio)``: Dense(ratio * C, GELU) then Dense(C), equal to ``sv.MLP``
    with the same weights (outside training, where its dropout does nothing)."""
    rng, gelu = np.random.default_rng(8), keras.activations.gelu
    for channels, ratio in [(8, 2.0), (6, 3.0)]:
        x = rng.normal(size=(2, 4, 4, channels)).astype("float32")
        mine, library, hidden = mlp_class(ratio), MLP(mlp_ratio=ratio, dropout=0.2), int(ratio * channels)
        assert _numpy(mine(x)).shape == x.shape, f"the MLP must give back the C = {channels} channels it got"
        library(x)
        w1, b1, w2, b2 = _randomise(library, 9)
        hint = f"two Dense layers with biases, C -> ratio * C = {ratio:g} * {channels} = {hidden} units -> C"
        _copy_by_role(mine, library, hint)
        mistakes = {
            "the first Dense needs activation='gelu'": (x @ w1 + b1) @ w2 + b2,
            "GELU goes between the two Dense layers, not after the second": gelu((x @ w1 + b1) @ w2 + b2),
            "the MLP returns the second Dense's output, not + x (the block adds the residual)": (
                _numpy(gelu(x @ w1 + b1)) @ w2 + b2 + x
            ),
        }
        otherwise = "with sv.MLP's weights the output differs: Dense(ratio * C, gelu), then Dense(C)"
        _diagnose(mine(x, training=False), library(x, training=False), mistakes, otherwise)


def check_drop_path(drop_path_class: Callable[..., Any]) -> None:
    """``drop_path_class(rate)`` must drop whole samples, with any random numbers.

    The check is statistical, so a correct layer passes whatever its seed: 400
    samples at rate 0.25 must be all-or-nothing, about a quarter dropped, the kept
    ones scaled by 1 / 0.75, other samples dropped at the next call, and nothing
    may change at inference.
    """
    x = np.random.default_rng(1).uniform(1.0, 2.0, size=(400, 3, 3, 4)).astype("float32")
    layer = drop_path_class(0.25)
    assert _same(layer(x, training=False), x), "at inference (training=False) DropPath must return x"
    assert _same(drop_path_class(0.0)(x, training=True), x), "with rate 0 DropPath must return x"
    kept = (_numpy(layer(x, training=True)) / x).reshape(len(x), -1)
    assert np.allclose(kept, kept[:, :1], atol=1e-5), "DropPath keeps or drops whole samples (a number each)"
    kept, dropped = kept[:, 0], np.isclose(kept[:, 0], 0.0, atol=1e-6)
    scale = f"kept samples must be scaled by 1 / (1 - rate) = {1 / 0.75:.3f}, got {kept[~dropped][:1]}"
    assert np.allclose(kept[~dropped], 1 / 0.75, rtol=1e-4), scale
    assert 0.15 <= dropped.mean() <= 0.35, f"at rate 0.25 a quarter must drop, {dropped.mean():.0%} did"
    later = [np.isclose(_numpy(layer(x, training=True))[:, 0, 0, 0], 0.0, atol=1e-6) for _ in range(3)]
    assert any((mask != dropped).any() for mask in later), (
        "four training calls dropped the same samples: draw new numbers at every call "
        "(keep a keras.random.SeedGenerator in __init__ and pass it as seed)"
    )


def check_block(block_class: Callable[..., Any]) -> None:
    """``block_class(num_div=..., drop_path_rate=...)`` with ``.norm`` and ``.mlp``.

    Its output must be ``s + DropPath(mlp(norm(s)))`` with ``s = shift(x)``, at
    inference and in training, with drop path at rate 0.5 on 64 samples.
    """
    x = np.random.default_rng(2).normal(size=(64, 5, 5, 24)).astype("float32")
    block = block_class(num_div=6, drop_path_rate=0.5)
    s, s12 = _numpy(shift_channels(x, 6)), _numpy(shift_channels(x, 12))
    block(x[:1], training=False)  # build, then build the sublayers the check calls, used in call or not
    block.mlp(block.norm(s[:1]))
    _randomise(block, 3)  # random biases and norm scales too: a sublayer made in call is never random
    branch, got = _numpy(block.mlp(block.norm(s))), _numpy(block(x, training=False))
    unchanged = np.isclose(got - s, 0.0, atol=1e-5).reshape(len(x), -1).all(axis=1)
    assert not unchanged.any(), "at inference drop path must drop nothing: pass training=training"
    mistakes = {
        "the residual must carry the shifted map, not the unshifted x": x + branch,
        "the block must shift first (sv.shift_channels)": lambda: x + _numpy(block.mlp(block.norm(x))),
        "the block must add the branch to the shifted map (the residual connection)": branch,
        "the MLP must see the normalised shifted map: norm first, then MLP": lambda: s + _numpy(block.mlp(s)),
        "shift by the block's own self.num_div, not 12": lambda: s12 + _numpy(block.mlp(block.norm(s12))),
    }
    _diagnose(got, s + branch, mistakes, "the block must return s + drop_path(mlp(norm(s))), s = shift(x)")
    extra, branch = (_numpy(block(x, training=True)) - s).reshape(len(x), -1), branch.reshape(len(x), -1)
    assert not _same(extra, branch), "in training the block must pass training to its drop path"
    skip_dropped = np.isclose(extra, -s.reshape(len(x), -1), atol=1e-4).all(axis=1)
    assert not skip_dropped.any(), "DropPath must wrap the MLP's branch only: the skip is never dropped"
    dropped = np.isclose(extra, 0.0, atol=1e-4).all(axis=1)
    kept = np.isclose(extra, 2.0 * branch, rtol=1e-3, atol=1e-3).all(axis=1)
    assert np.all(dropped | kept), "in training a sample gets s or s + branch / (1 - rate): drop the branch"
    assert 12 <= dropped.sum() <= 52, f"at rate 0.5 about half of 64 branches must drop, got {dropped.sum()}"


def check_patch_merging(merging_class: Callable[[], Any]) -> None:
    """``merging_class()``: LayerNorm, then a 2x2 stride-2 convolution without bias,
    ``C -> 2C`` channels, on odd maps too (7x7 -> 4x4)."""
    rng = np.random.default_rng(4)
    for side in (8, 7):  # an even map first: what differs only on 7x7 is the padding
        x, half, mine = rng.normal(size=(2, side, side, 8)).astype("float32"), -(-side // 2), merging_class()
        got = _numpy(mine(x)).shape
        odd = f"{side}x{side} -> {half}x{half}, got {got[1]}x{got[2]}"
        assert got[-1] == 16, f"patch merging must double the channels: 8 -> 16, got {got[-1]}"
        assert not side % 2 or got[1] != side // 2, f"pad odd maps (padding='same'): {odd}"
        assert got[1:3] == (half, half), f"patch merging halves the map (2x2 kernel, stride 2): {odd}"
        shapes = {weight.path.split("/")[-1]: tuple(weight.shape) for weight in mine.weights}
        epsilons = {norm.epsilon for norm in _layers(mine, keras.layers.LayerNormalization)} - {1e-5}
        gamma, kernel = shapes.get("gamma"), shapes.get("kernel")
        group_norm = _layers(mine, keras.layers.GroupNormalization)
        for hint, wrong in {
            "the merging convolution must have no bias (use_bias=False)": "bias" in shapes,
            "normalise each position's channels, not the batch (BatchNormalization)": "moving_mean" in shapes,
            "GroupNormalization normalises the whole map: use LayerNormalization, as the library": group_norm,
            "patch merging must normalise (a LayerNormalization)": not {"gamma", "beta"} <= set(shapes),
            "the norm comes before the convolution: it normalises the C input channels": gamma != (8,),
            "the merging convolution has a 2x2 kernel from C to 2C channels": kernel != (2, 2, 8, 16),
            f"LayerNormalization(epsilon=1e-5), as the library, not {epsilons}": epsilons,
        }.items():
            assert not wrong, hint
        library = PatchMerging()
        library(x)
        _randomise(library, 5)
        _copy_by_role(mine, library, "patch merging holds a norm's gamma and beta and a bias-free kernel")
        expected = _numpy(library(x))
        mistakes = {
            f"no activation after the convolution (found {a})": keras.activations.get(a)(expected)
            for a in ("gelu", "relu")
        }
        otherwise = "with the library's weights the output differs: norm, then the 2x2 stride-2 convolution"
        if side % 2:
            otherwise = f"the {side}x{side} map differs: pad odd maps at the bottom and right, padding='same'"
        _diagnose(mine(x), expected, mistakes, otherwise)


# The builder (lesson 04) --------------------------------------------------
def builder_configs() -> list[Any]:
    """Configs that move every field the builder reads away from its default."""
    quick = preset("quick")  # depths (1, 2, 1), 24 channels, drop path schedule "network"
    per_stage = dict(drop_path_rate=0.3, drop_path_schedule="per_stage")
    return [
        quick.replace(num_div=6, mlp_ratio=3.0, mlp_dropout=0.3, drop_path_rate=0.4, augment=False),
        quick.replace(shift="keras_io", depths=(2, 1, 2), projected_dim=48, **per_stage),
        quick.replace(shift="none", shift_pixel=2, depths=(1, 1)),
    ]


_library_model = functools.cache(build_shiftvit)  # the reference models, built once a session


def check_builder(build: Callable[[Any], keras.Model]) -> None:
    """``build(config)`` must read every field: stages, merging, num_div, shift,
    shift_pixel, MLP ratio and dropout, drop path and augmentation."""
    probe = np.random.default_rng(6).integers(0, 256, size=(4, 32, 32, 3), dtype="uint8")
    for config in builder_configs():
        model, library = build(config), _library_model(config)
        blocks = [block for stage in _layers(model, ShiftViTStage) for block in stage.blocks]
        if blocks:  # built from the library's stages: name the field it ignores
            for field in ("num_div", "shift", "shift_pixel", "mlp_ratio", "mlp_dropout"):
                got, wanted = {getattr(block, field) for block in blocks}, getattr(config, field)
                assert got == {wanted}, f"every block needs config.{field} = {wanted!r}, got {sorted(got)}"
            rates = np.concatenate(
                drop_path_rates(config.depths, config.drop_path_rate, config.drop_path_schedule)
            )
            hint = f"the blocks' drop-path rates are sv.drop_path_rates(...) = {np.round(rates, 3).tolist()}"
            assert np.allclose([block.drop_path_rate for block in blocks], rates), hint
        mergings, merges = len(_layers(model, PatchMerging)), len(config.depths) - 1
        assert mergings == merges, f"every stage but the last ends in a merging: {merges}, not {mergings}"
        parameters = f"{model.count_params():,} parameters, sv.build_shiftvit {library.count_params():,}"
        assert model.count_params() == library.count_params(), f"the model has {parameters}"
        model.set_weights(library.get_weights())
        logits = _same(model(probe, training=False), library(probe, training=False))
        assert logits, "with the library's weights the logits differ: pass the config's fields to every stage"
    # Each random part must follow its config field: off means training = inference.
    quiet = builder_configs()[0].replace(augment=False, mlp_dropout=0.0, drop_path_rate=0.0)
    for field, value in [("augment", True), ("mlp_dropout", 0.5), ("drop_path_rate", 0.5)]:
        model = build(quiet.replace(**{field: value}))
        random = not _same(model(probe, training=True), model(probe, training=True))
        assert random, f"{field}={value}: two training passes gave the same logits, a random layer ignores it"
    model = build(quiet)
    assert _same(model(probe, training=True), model(probe, training=False)), (
        "with augment=False, mlp_dropout=0 and drop_path_rate=0 training must equal inference: "
        "a random layer ignores its config field"
    )


# The schedule and one training step (lesson 05) ----------------------------
SCHEDULE_ARGS = dict(lr_start=1e-4, lr_max=1e-2, warmup_steps=10, total_steps=50)


def check_schedule(schedule: Callable[..., float]) -> None:
    """``schedule(step, lr_start, lr_max, warmup_steps, total_steps)`` must equal
    ``sv.WarmUpCosine`` at every step from 0 to past the end."""
    a, w, t = SCHEDULE_ARGS, SCHEDULE_ARGS["warmup_steps"], SCHEDULE_ARGS["total_steps"]
    expected = _numpy(WarmUpCosine(**a)(np.arange(t + 6))).astype("float64")
    got = np.array([float(schedule(step, **a)) for step in range(t + 6)])
    assert not _same(got[:-1], expected[1:]), "the schedule is one step ahead: step 0 must give lr_start"
    assert _same(got, expected) or not _same(got[1:], expected[:-1]), "the schedule is one step behind"
    assert _same(got[0], a["lr_start"]), f"the warm-up must start at lr_start at step 0, got {got[0]:.3g}"
    assert _same(got[w], a["lr_max"]), f"the warm-up must reach lr_max at step warmup_steps, got {got[w]:.3g}"
    assert _same(got[:w], expected[:w]), "the warm-up rises in a straight line from lr_start towards lr_max"
    assert _same(got[w : t + 1], expected[w : t + 1]), "then half a cosine from lr_max to 0 at total_steps"
    assert np.allclose(got[t:], 0.0, atol=1e-8), "after total_steps the rate must stay 0"


def _step_model() -> keras.Model:
    keras.utils.set_random_seed(0)
    inputs = keras.Input((6,))
    x = keras.layers.Dense(3)(keras.layers.Dense(8, activation="tanh")(inputs))
    # Doubled in training, unchanged at inference: a deterministic stand-in for a layer such as dropout.
    doubled_in_training = keras.layers.Lambda(lambda y, training=None: y * 2.0 if training else y)
    return keras.Model(inputs, doubled_in_training(x))


def library_train_step(model: keras.Model, optimizer: Any, loss_fn: Any, images: Any, labels: Any) -> float:
    """Lesson 05's training step, as its collapsed "Solution" shows it: what ``try_yours``
    falls back to while the learner's is blank (the library itself trains with ``model.fit``)."""
    import tensorflow as tf

    with tf.GradientTape() as tape:
        loss = loss_fn(labels, model(images, training=True))
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return float(loss)


def check_train_step(step: Callable[..., float]) -> None:
    """``step(model, optimizer, loss_fn, images, labels)`` must return the loss of
    the model in training mode and take one step of the optimizer it is given (Adam
    here) along the gradient. Needs the TensorFlow backend (the reference steps are
    :func:`library_train_step`'s ``GradientTape``)."""
    rng, lr = np.random.default_rng(7), 0.01
    images, labels = rng.normal(size=(16, 6)).astype("float32"), rng.integers(0, 3, size=16)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model, reference, sgd = _step_model(), _step_model(), _step_model()  # the same weights
    optimizer = keras.optimizers.Adam(lr)
    before = [w.copy() for w in model.get_weights()]
    training_loss, inference_loss = (float(loss_fn(labels, model(images, training=t))) for t in (True, False))
    got = step(model, optimizer, loss_fn, images, labels)
    number = isinstance(got, float | int | np.floating) or np.ndim(_numpy(got)) == 0
    assert number, f"the step must return the loss as one number (float(loss)), not {type(got).__name__}"
    loss = float(got)
    library_train_step(reference, keras.optimizers.Adam(lr), loss_fn, images, labels)
    library_train_step(sgd, keras.optimizers.SGD(lr), loss_fn, images, labels)
    mistakes = {"run the model with training=True (that is the inference loss)": inference_loss}
    otherwise = f"return the loss of this batch before the update: {training_loss:.4f}, got {loss:.4f}"
    _diagnose(loss, training_loss, mistakes, f"the step must {otherwise}")
    moves = [a - b for a, b in zip(model.get_weights(), before)]
    wanted = [w - b for w, b in zip(reference.get_weights(), before)]
    still, uphill, twice = ([factor * m for m in wanted] for factor in (0, -1, 2))
    plain_sgd = [w - b for w, b in zip(sgd.get_weights(), before)]
    mistakes = {
        "no weight changed: the step must apply the gradients (optimizer.apply_gradients)": still,
        "the weights moved uphill: the optimizer needs the gradients, not their negatives": uphill,
        "the weights moved by -lr * gradient, a plain SGD step: let the optimizer (Adam) step": plain_sgd,
        "the weights moved twice as far: apply the gradients once per step": twice,
    }
    otherwise = "the weights differ from one optimizer step along the training loss's gradient"
    if any(not m.any() for m in moves):
        otherwise = "some weights did not change: take the gradient for every model.trainable_variables"
    _diagnose(moves, wanted, mistakes, otherwise, rtol=1e-3)  # Adam's epsilon: two steps are not quite 2x
    for _ in range(2):  # more steps with the same optimizer: its moments and step count carry on
        step(model, optimizer, loss_fn, images, labels)
    taken = int(_numpy(optimizer.iterations))  # an optimizer made inside the step never counts
    assert taken == 3, f"three steps, and the optimizer you were given counted {taken}: use it every time"


# The exercises (lessons 00-07) ----------------------------------------------
def check_moved_channels(moved_channels: Callable[[int, int], int]) -> None:
    """Lesson 00: ``moved_channels(C, num_div)`` equals what ``shift_channels`` moves, on the
    lesson's cases, C / num_div with remainders above one half, and 30 random (C, num_div)."""
    _blank(moved_channels(96, 12), "Write moved_channels, then run both cells again.")
    rng = np.random.default_rng(0)
    drawn = [(int(n * rng.integers(1, 9) + rng.integers(0, n)), int(n)) for n in rng.integers(4, 17, 30)]
    for c, n in [(96, 12), (192, 12), (50, 8), (13, 4), (11, 4), (47, 12), *drawn]:
        x = rng.uniform(1.0, 2.0, size=(1, 2, 2, c)).astype("float32")
        moved, got = int((_numpy(shift_channels(x, n)) != x).any(axis=(0, 1, 2)).sum()), moved_channels(c, n)
        mistakes = {
            "C // num_div is one group: four groups move": c // n,
            f"C = {c}, num_div = {n}: groups of C // num_div channels, the other C % num_div stay": 4 * c / n,
            f"C / num_div = {c / n:.2f}: round() rounds up, the groups are C // num_div": 4 * round(c / n),
        }
        _diagnose(got, moved, mistakes, f"moved_channels({c}, {n}) = {got}, the shift moved {moved}")


def check_val_counts(val_counts: Callable[[np.ndarray], Any], data: Any) -> None:
    """Lesson 01: ``val_counts(labels)``, the number of images per class in ``labels``, on
    ``data.y_val`` and on random labels with unbalanced classes and a class missing."""
    _blank(val_counts(data.y_val), "Write val_counts, then run its cell again.")
    rng, classes = np.random.default_rng(14), len(data.class_counts()["val"])
    cases = [("data.y_val", data.y_val, data.class_counts()["val"])]
    for size in (37, 90):  # unbalanced: class k drawn about k + 1 times as often as class 0; the last missing
        labels = rng.choice(classes - 1, size=size, p=(p := np.arange(1, classes)) / p.sum())
        cases.append((f"{size} random labels", labels, np.bincount(labels, minlength=classes)))
    for what, labels, expected in cases:
        mistakes = {
            "those are data's training counts: count the labels you are given": data.class_counts()["train"],
            "the counts are sorted: keep them in class order 0, 1, ...": np.sort(expected),
            f"a class may be missing: np.bincount(labels, minlength={classes})": np.bincount(labels),
        }
        otherwise = f"count how often each of the {classes} classes occurs in {what} (np.bincount)"
        _diagnose(np.asarray(val_counts(labels)), expected, mistakes, otherwise)


def check_centre_crop(centre_crop: Callable[[np.ndarray, int], np.ndarray]) -> None:
    """Lesson 01: ``centre_crop(images, crop)`` equals the layer's inference crop, for even and
    odd margins and a crop as large as the image."""
    from shiftvit_lib.layers import ImagePreprocessing

    images = np.random.default_rng(10).integers(0, 256, size=(2, 32, 32, 3), dtype="uint8")
    resized = _numpy(ops.image.resize(images.astype("float32"), (52, 52)))
    _blank(centre_crop(resized, 40), "Write centre_crop, then run both cells again.")
    for crop in (40, 45, 52, 33):  # margins 12, 7, 0 and 19
        got = np.asarray(centre_crop(resized, crop))
        hint = f"the crop must be (2, {crop}, {crop}, 3), not {got.shape} (margin {52 - crop}): slice start:start + crop"
        assert got.shape == (2, crop, crop, 3), hint
        layer = ImagePreprocessing(resize_to=52, crop_size=crop, augment=False)
        mistakes = {"that is the top-left corner: start at (size - crop) // 2": resized[:, :crop, :crop]}
        otherwise = f"the {crop}x{crop} window is off centre: start at (size - crop) // 2 on both axes"
        _diagnose(got, _numpy(layer(images, training=False)) * 255.0, mistakes, otherwise)


def check_pad_shift(pad_shift: Callable[..., Any]) -> None:
    """Lesson 02: the shift built from slices and padding is the shift ``check_shift`` checks."""
    x = np.ones((1, 3, 3, 12), "float32")
    _blank(pad_shift(x, num_div=6, s=2), "Fill in `up` and `down`, then run both cells again.")
    try:
        check_shift(pad_shift)
    except AssertionError as wrong:  # the shift's hint, then where a slice-and-pad shift goes wrong
        raise AssertionError(f"{wrong}; slice what stays, pad s zeros on the side it left") from None


def check_inside_block(inside_block: Callable[..., Any]) -> None:
    """Lesson 03: the block with the shift inside the residual branch."""
    block = ShiftViTBlock(num_div=12)
    x = np.random.default_rng(12).normal(size=(2, 6, 6, 24)).astype("float32")
    _blank(answer := inside_block(block, x), "Write inside_block, then run both cells again.")
    shifted = _numpy(shift_channels(x, num_div=12))
    branch = _numpy(block.mlp(block.norm(shifted)))
    library_block = shifted + branch
    mistakes = {
        "that is the library's block: here the skip carries x, only the branch sees the shift": library_block,
        "the branch must see the shifted x": lambda: x + _numpy(block.mlp(block.norm(x))),
    }
    _diagnose(answer, x + branch, mistakes, "inside_block must return x + mlp(norm(shift(x)))")


def check_block_parameters(answer: Any, channels: int = 384) -> None:
    """Lesson 03: the parameters of one block with ``channels`` channels and MLP ratio 2."""
    _blank(answer, "Replace None with your number, then run the cell.")
    whole = f"give the count as a whole number (123456), not the {type(answer).__name__} {answer!r}"
    assert is_whole_number(answer), whole
    c = channels
    mistakes = {
        f"{answer:,} counts the kernels only: add the MLP's biases and the norm's 2C": 4 * c * c,
        f"{answer:,} leaves out the norm: it has 2C parameters (scale, offset)": 4 * c * c + 3 * c,
        f"{answer:,} counts one Dense: the MLP has two (C -> 2C -> C)": 2 * c * c + 3 * c,
    }
    otherwise = f"{answer:,} is not the count: C·2C + 2C and 2C·C + C for the MLP, 2C for the norm"
    _diagnose(answer, 4 * c * c + 5 * c, mistakes, otherwise)


def check_shapes(my_shapes: Callable[[Any], list]) -> None:
    """Lesson 04: ``my_shapes(config)`` lists (side, channels) after the projection and each stage, as
    the model built from ``config`` has them (``plots.architecture_shapes``, tested against built models)."""
    _blank(my_shapes(preset("seed")), "Fill in my_shapes, run its cell, then run this cell again.")
    for name in ["quick", "seed", "cpu", "shiftvit_light_tiny"]:
        parts = dict(architecture_shapes(preset(name)))  # part -> (side, side, channels)
        built = [(s, c) for part, (s, _, c) in parts.items() if part.startswith(("patch_proj", "stage_"))]
        got = [tuple(pair) for pair in my_shapes(preset(name))]
        for wrong, hint in [
            (len(got) != len(built), "one (side, channels) after the projection and one after each stage"),
            (got[0] != built[0], "after the projection the side is image_size / patch_size"),
            ([c for _, c in got] != [c for _, c in built], "every stage but the last doubles the channels"),
            (got != built, "a merging halves the side rounding up, -(-side // 2)"),
        ]:
            assert not wrong, f"{name}: {hint}: {built}, got {got}"


def check_floor_schedule(floor: Callable[..., float]) -> None:
    """Lesson 05: warm-up as before, then half a cosine from lr_max to lr_min, then lr_min."""
    a = dict(lr_start=1e-5, lr_max=1e-3, warmup_steps=100, total_steps=1100, lr_min=1e-4)
    _blank(floor(0, **a), "Write warmup_cosine_floor, then run both cells again.")
    w, t, low, high = (a[key] for key in ("warmup_steps", "total_steps", "lr_min", "lr_max"))

    def wanted(step: int) -> float:
        if step < w:
            return a["lr_start"] + (high - a["lr_start"]) * step / w
        return low + 0.5 * (high - low) * (1 + np.cos(np.pi * min(1.0, (step - w) / (t - w))))

    def same(step: int) -> bool:
        return _same(floor(step, **a), wanted(step))

    assert all(same(step) for step in (0, 50, 99)), "the warm-up stays as it was: lr_start up to lr_max"
    assert same(w), f"at the end of the warm-up (step {w}) the rate must be lr_max"
    assert same(t), f"at the last step ({t}) the rate must be lr_min, got {float(floor(t, **a)):.2e}"
    quarter, formula = w + (t - w) // 4, "lr_min + (lr_max - lr_min) / 2 * (1 + cos(pi p))"
    line = {"the decay is a straight line: it must follow half a cosine": high - (high - low) / 4}
    for step in (quarter, (w + t) // 2, w + 3 * (t - w) // 4, t + 50):
        got = float(floor(step, **a))
        otherwise = f"at step {step} the rate must be {formula} = {wanted(step):.3e}, got {got:.3e}"
        _diagnose(got, wanted(step), line if step == quarter else {}, otherwise)


def check_ece(my_ece: Callable[..., float]) -> None:
    """Lesson 06: ``my_ece(confidence, correct, bins)`` equals the library's ECE,
    with confidences of exactly 1.0 among the inputs."""
    rng, last_bin = np.random.default_rng(13), "they belong in the last bin (np.minimum(group, bins - 1))"
    # Confidences over every bin, a few of exactly 1.0 and 0.1 (bin edges), and their correctness.
    confidence = np.concatenate([rng.uniform(0.1, 1.0, 200), [1.0] * 12, [0.1, 0.5, 0.9]])
    correct = rng.uniform(size=confidence.size) < confidence
    correct[200:212] = [True, False, True, True, False, True, True, True, False, True, True, True]
    _blank(my_ece(confidence, correct, bins=10), "Write my_ece, run its cell, then run this cell again.")
    kept = confidence < 1.0
    for bins in (10, 5):
        got = float(my_ece(confidence, correct, bins=bins))
        expected = reliability_table(confidence, correct, bins)["ece"]
        without_ones = reliability_table(confidence[kept], correct[kept], bins)["ece"]
        mistakes = {
            f"the confidences of exactly 1.0 went missing: {last_bin}": without_ones,
            f"the confidences of exactly 1.0 fell out of every bin: {last_bin}": without_ones * kept.mean(),
        }
        otherwise = f"with bins={bins} the ECE is {expected:.4f}, not {got:.4f}: weight each bin by its share"
        _diagnose(got, expected, mistakes, otherwise)


def check_attention_macs(attention_matmul_macs: Callable[[int, int, int], int]) -> None:
    """Lesson 07: multiply-accumulates of one block's two attention products."""
    _blank(attention_matmul_macs(16, 4, 32), "Write attention_matmul_macs, then run both cells again.")
    n, heads, k = 10, 3, 7  # all different, so each mistake gives its own number
    got = attention_matmul_macs(n, heads, k)
    for hint, wrong in {
        "that is one product: Q·Kᵀ and weights·V cost n·n·k each, per head": heads * n * n * k,
        "each head does its own two products: multiply by heads": 2 * n * n * k,
        "each product is (n x k) by (k x n) or (n x n) by (n x k): n·n·k": 2 * heads * n * k * k,
    }.items():
        assert got != wrong, hint
    for config in [preset("vit_quick"), preset("vit_cifar")]:
        expected = count_vit_macs(config)["attention_matmuls"] // config.depth
        got = attention_matmul_macs(config.num_tokens, config.num_heads, config.head_key_dim)
        assert got == expected, f"{config.name}: {expected:,} MACs per block, got {got:,}"
