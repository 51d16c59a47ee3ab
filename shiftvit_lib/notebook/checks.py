"""Checks for the pieces the learner writes in the lessons.

Each ``check_*`` function runs a learner's piece and the library's (or a reference) on
inputs chosen to expose the likely mistakes, and raises ``AssertionError`` with a
one-line hint naming what is wrong ("the residual must carry the shifted map"). Most
hints come from one table per check: the output a known mistake gives -> its hint
(``_diagnose``). ``try_yours`` is what a blank's checking cell calls (lessons 02-05):
it checks the learner's version or, while that is still a blank
(``NotImplementedError``), says so and checks and returns the solution, so the lesson
runs on. ``exercise`` is what an exercise's checking cell calls (lessons 00-07).

``tests/lessons/test_checks.py`` injects a catalogue of plausible mistakes into every
piece and asserts that each check fails on every one of them and passes the solution.
This is a lesson helper: it imports the core; the core never imports it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import numpy as np
from keras import ops

from shiftvit_lib.layers import MLP, PatchMerging, ShiftViTBlock, ShiftViTStage, drop_path_rates
from shiftvit_lib.model import build_shiftvit
from shiftvit_lib.schedules import WarmUpCosine
from shiftvit_lib.shift import shift_channels


def try_yours(check: Callable[[Any], None], yours: Any, solution: Any) -> Any:
    """Check ``yours``; while it is a blank, check ``solution`` and return it.

    A wrong version raises the check's ``AssertionError``: "Run all" stops at it.
    """
    name = getattr(yours, "__name__", type(yours).__name__)
    if name.startswith("check_"):
        raise TypeError(f"try_yours takes the check first: try_yours({name}, yours, solution)")
    try:
        check(yours)
    except NotImplementedError:
        print(f"{name}: not written yet — using the solution")
        check(solution)
        return solution
    print(f"{name}: yours passes every check")
    return yours


class NotAnswered(Exception):
    """An exercise still blank: ``exercise`` says so in one line and the lesson goes on."""


def exercise(check: Callable[..., None], answer: Any, *context: Any) -> None:
    """Check an exercise's answer and say in one line whether it is right or still blank.

    A wrong answer raises the check's ``AssertionError`` with a hint: "Run all" stops there.
    (It returns nothing, so a notebook shows only that line.)
    """
    name = getattr(answer, "__name__", "your answer")
    try:
        check(answer, *context)
    except NotAnswered as note:
        print(f"{name}: not answered yet. {note}")
        return
    print(f"{name}: right")


def _blank(value: Any, what: str) -> None:
    if value is None or (isinstance(value, list | tuple) and not value):
        raise NotAnswered(what)


def _numpy(x: Any) -> np.ndarray:
    if x is None:
        raise AssertionError("your function returned None: did you forget its `return` line?")
    return np.asarray(ops.convert_to_numpy(x))


def _close(a: Any, b: Any, tol: float = 1e-4) -> bool:
    a, b = _numpy(a), _numpy(b)
    return a.shape == b.shape and np.allclose(a, b, rtol=tol, atol=tol)


def _diagnose(
    got: Any, expected: Any, mistakes: dict[str, Any], otherwise: str, same: Callable = _close
) -> None:
    """Pass if ``got`` is ``expected``; else raise the hint of the first mistake whose result
    ``got`` is (a mistake's result may be a function, called only when needed), or ``otherwise``."""
    if same(got, expected):
        return
    for hint, value in mistakes.items():
        if same(got, value() if callable(value) else value):
            raise AssertionError(hint)
    raise AssertionError(otherwise)


def _expect_class(given: Any) -> None:
    """A check that builds layers takes the class (``DropPath``), not one layer (``DropPath(0.1)``)."""
    if isinstance(given, keras.layers.Layer):
        name = type(given).__name__
        raise TypeError(
            f"pass the class itself ({name}), not a layer made from it ({name}(...)): the check makes its own"
        )


def _randomise(layer: keras.layers.Layer, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for weight in layer.trainable_weights:
        weight.assign(rng.normal(0.0, 0.3, size=tuple(weight.shape)).astype("float32"))


def _layers(layer: keras.layers.Layer, kind: type) -> list[Any]:
    return [sub for sub in layer._flatten_layers() if isinstance(sub, kind)]


# The shift (lesson 02) ----------------------------------------------------
SHIFT_CASES = [((1, 5, 5, 6), 6, 1), ((2, 7, 9, 24), 12, 1), ((2, 6, 10, 50), 8, 2), ((1, 6, 6, 13), 4, 3)]
DIRECTIONS = ["left", "right", "up", "down"]


def check_shift(shift: Callable[..., Any]) -> None:
    """``shift(x, num_div, s)`` must equal ``sv.shift_channels`` exactly, on (shape, num_div, s) cases."""
    rng = np.random.default_rng(0)
    for shape, num_div, s in SHIFT_CASES:
        x = rng.uniform(1.0, 2.0, size=shape).astype("float32")  # no zeros
        got, expected, g = (
            _numpy(shift(x, num_div, s)),
            _numpy(shift_channels(x, num_div, s)),
            shape[-1] // num_div,
        )
        where = f"(shape {shape}, num_div={num_div}, s={s})"
        assert got.shape == x.shape, f"the shift must keep the shape {shape}, got {got.shape} {where}"
        moved = int((got != x).any(axis=(0, 1, 2)).sum())
        assert moved == 4 * g, (
            f"the shift must move 4 * (C // num_div) = {4 * g} channels and keep the rest as they are, "
            f"it moved {moved} {where}"
        )
        for k, direction in enumerate(DIRECTIONS):
            part = slice(k * g, (k + 1) * g)
            each_way = np.split(_numpy(shift_channels(np.concatenate([x[..., part]] * 4, -1), 4, s)), 4, -1)
            mistakes = {
                f"channels [{k * g}, {(k + 1) * g}) must move {direction}, they moved {other} {where}": way
                for other, way in zip(DIRECTIONS, each_way)
                if other != direction
            }
            mistakes[f"only the first image moved: slice every image of the batch (x[:, ...]) {where}"] = (
                np.concatenate([expected[:1, ..., part], x[1:, ..., part]])
            )
            for o in {1, 2, 3} - {s}:
                hint = f"the {direction} group moved {o} pixel(s), not s = {s}: every slice offset must be s"
                mistakes[hint] = _numpy(shift_channels(x, num_div, o))[..., part]
            wrong_zeros = not np.array_equal(got[..., part] != 0, expected[..., part] != 0)
            _diagnose(
                got[..., part],
                expected[..., part],
                mistakes,
                f"moving {direction}, what falls over the border is lost and zeros fill the emptied side, "
                f"{s} pixel(s) wide {where}"
                if wrong_zeros
                else f"the {direction} group holds the wrong numbers: check its slices {where}",
                same=np.array_equal,
            )


# The MLP, DropPath, the block and patch merging (lesson 03) --------------------
def check_mlp(mlp_class: Callable[..., Any]) -> None:
    """``mlp_class(ratio)``: Dense(ratio * C, GELU) then Dense(C), equal to ``sv.MLP``
    with the same weights (outside training, where its dropout does nothing)."""
    rng = np.random.default_rng(8)
    for channels, ratio in [(8, 2.0), (6, 3.0)]:
        x = rng.normal(size=(2, 4, 4, channels)).astype("float32")
        mine, library, hidden = mlp_class(ratio), MLP(mlp_ratio=ratio, dropout=0.2), int(ratio * channels)
        got = _numpy(mine(x))
        library(x)
        assert got.shape == x.shape, f"the MLP must give back C = {channels} channels, got {got.shape[-1]}"
        kernels = [tuple(w.shape) for w in mine.weights if w.path.endswith("kernel")]
        assert kernels[:1] == [(channels, hidden)] and len(kernels) == 2, (
            f"the MLP needs two Dense layers, the first with ratio * C = {ratio:g} * {channels} = {hidden} "
            f"units: got kernels {kernels}"
        )
        _randomise(library, 9)
        weights = [_numpy(w) for w in library.trainable_weights]
        for weight, value in zip(mine.trainable_weights, weights):
            weight.assign(value)
        w1, b1, w2, b2 = weights
        before, gelu = x @ w1 + b1, keras.activations.gelu
        _diagnose(
            mine(x, training=False),
            library(x, training=False),
            {
                "the first Dense needs activation='gelu'": before @ w2 + b2,
                "GELU goes between the two Dense layers, not after the second": gelu(before @ w2 + b2),
                "the MLP returns the second Dense's output without adding x (the block adds the residual)": (
                    _numpy(gelu(before)) @ w2 + b2 + x
                ),
            },
            "with sv.MLP's weights the output differs: Dense(ratio * C, gelu), then Dense(C)",
        )


def check_drop_path(drop_path_class: Callable[..., Any]) -> None:
    """``drop_path_class(rate)`` must drop whole samples, with any random numbers.

    The check is statistical, so a correct layer passes whatever its seed: 400
    samples at rate 0.25 must be all-or-nothing, about a quarter dropped, the kept
    ones scaled by 1 / 0.75, other samples dropped at the next call, and nothing
    may change at inference.
    """
    _expect_class(drop_path_class)
    x = np.random.default_rng(1).uniform(1.0, 2.0, size=(400, 3, 3, 4)).astype("float32")
    layer = drop_path_class(0.25)
    assert _close(layer(x, training=False), x, 1e-6), "at inference (training=False) DropPath must return x"
    assert _close(drop_path_class(0.0)(x, training=True), x, 1e-6), "with rate 0 DropPath must return x"
    per_sample = (_numpy(layer(x, training=True)) / x).reshape(len(x), -1)
    assert np.allclose(per_sample, per_sample[:, :1], atol=1e-5), (
        "DropPath must keep or drop a whole sample (one random number per sample)"
    )
    dropped = np.isclose(per_sample[:, 0], 0.0, atol=1e-6)
    assert np.allclose(per_sample[~dropped, 0], 1 / 0.75, rtol=1e-4), (
        f"kept samples must be scaled by 1 / (1 - rate) = {1 / 0.75:.3f}, got {per_sample[~dropped][:1, 0]}"
    )
    assert 0.15 <= dropped.mean() <= 0.35, (
        f"at rate 0.25 about a quarter of the samples must be dropped, got {dropped.mean():.0%}"
    )
    masks = [np.isclose(_numpy(layer(x, training=True))[:, 0, 0, 0], 0.0, atol=1e-6) for _ in range(3)]
    assert any(not np.array_equal(dropped, mask) for mask in masks), (
        "four training calls dropped the same samples: draw new numbers at every call "
        "(keep a keras.random.SeedGenerator in __init__ and pass it as seed)"
    )


def check_block(block_class: Callable[..., Any]) -> None:
    """``block_class(num_div=..., drop_path_rate=...)`` with ``.norm`` and ``.mlp``.

    Its output must be ``s + DropPath(mlp(norm(s)))`` with ``s = shift(x)``, at
    inference and in training, with drop path at rate 0.5 on 64 samples.
    """
    _expect_class(block_class)
    x = np.random.default_rng(2).normal(size=(64, 5, 5, 24)).astype("float32")
    block = block_class(num_div=6, drop_path_rate=0.5)
    block(x[:1], training=False)  # build
    _randomise(block, 3)  # random biases too: an MLP of zeros is not zero
    s, s12 = _numpy(shift_channels(x, 6)), _numpy(shift_channels(x, 12))
    branch = _numpy(block.mlp(block.norm(s)))
    got = _numpy(block(x, training=False))
    assert not np.isclose(got - s, 0.0, atol=1e-5).reshape(len(x), -1).all(axis=1).any(), (
        "at inference (training=False) drop path must drop nothing: pass training=training"
    )
    _diagnose(
        got,
        s + branch,
        {
            "the residual must carry the shifted map, not the unshifted x": x + branch,
            "the block must shift its input first (sv.shift_channels)": lambda: (
                x + _numpy(block.mlp(block.norm(x)))
            ),
            "the block must add the branch to the shifted map (the residual connection)": branch,
            "the MLP must see the normalised shifted map: norm first, then MLP": lambda: (
                s + _numpy(block.mlp(s))
            ),
            "shift with the block's own self.num_div, not a fixed 12": lambda: (
                s12 + _numpy(block.mlp(block.norm(s12)))
            ),
        },
        "the block must return s + drop_path(mlp(norm(s))) with s = shift(x)",
    )
    extra = (_numpy(block(x, training=True)) - s).reshape(len(x), -1)
    flat = branch.reshape(len(x), -1)
    assert not _close(extra, flat), (
        "in training the block must pass training to its drop path: nothing was dropped"
    )
    assert not np.isclose(extra, -s.reshape(len(x), -1), atol=1e-4).all(axis=1).any(), (
        "DropPath must wrap the MLP's branch only: the skip connection is never dropped"
    )
    dropped = np.isclose(extra, 0.0, atol=1e-4).all(axis=1)
    assert np.all(dropped | np.isclose(extra, 2.0 * flat, rtol=1e-3, atol=1e-3).all(axis=1)), (
        "in training each sample must get s + 0 or s + branch / (1 - rate): drop path goes after the MLP, on the branch"
    )
    assert 12 <= dropped.sum() <= 52, f"at rate 0.5 about half of 64 branches must drop, got {dropped.sum()}"


def check_patch_merging(merging_class: Callable[[], Any]) -> None:
    """``merging_class()``: LayerNorm, then a 2x2 stride-2 convolution without bias,
    ``C -> 2C`` channels, on odd maps too (7x7 -> 4x4)."""
    _expect_class(merging_class)
    rng = np.random.default_rng(4)
    for side in (8, 7):  # an even map first: what differs only on 7x7 is the padding
        x, half = rng.normal(size=(2, side, side, 8)).astype("float32"), -(-side // 2)
        mine = merging_class()
        got = _numpy(mine(x))
        assert got.shape[-1] == 16, f"patch merging must double the channels: 8 -> 16, got {got.shape[-1]}"
        assert not (side % 2 and got.shape[1] == side // 2), (
            f"patch merging must pad odd maps: {side}x{side} must become {half}x{half}, got "
            f"{got.shape[1]}x{got.shape[2]} (padding='same')"
        )
        assert got.shape[1:3] == (half, half), (
            f"patch merging must halve the map (2x2 kernel, stride 2): {side}x{side} -> {half}x{half}, got "
            f"{got.shape[1]}x{got.shape[2]}"
        )
        roles = {w.path.split("/")[-1]: w for w in mine.weights}
        shape_of = {role: tuple(weight.shape) for role, weight in roles.items()}
        epsilons = {norm.epsilon for norm in _layers(mine, keras.layers.LayerNormalization)}
        for hint, wrong in {
            "the merging convolution must have no bias (use_bias=False)": "bias" in roles,
            "normalise each position over its channels (LayerNormalization), not over the batch "
            "(BatchNormalization)": "moving_mean" in roles,
            "use LayerNormalization (each position over its channels), as the library: GroupNormalization "
            "normalises over the whole map": _layers(mine, keras.layers.GroupNormalization),
            "patch merging must normalise (a LayerNormalization)": not {"gamma", "beta"} <= set(roles),
            "the norm goes before the convolution: it normalises the C input channels": shape_of.get("gamma")
            != (8,),
            "the merging convolution must have a 2x2 kernel from C to 2C channels": shape_of.get("kernel")
            != (2, 2, 8, 16),
            f"LayerNormalization(epsilon=1e-5), as the library, not {sorted(epsilons)}": epsilons - {1e-5},
        }.items():
            assert not wrong, hint
        library = PatchMerging()
        library(x)
        _randomise(library, 5)
        for weight in library.weights:
            roles[weight.path.split("/")[-1]].assign(_numpy(weight))
        expected = _numpy(library(x))
        _diagnose(
            mine(x),
            expected,
            {
                f"no activation after the merging convolution (found {name})": keras.activations.get(name)(
                    expected
                )
                for name in ("gelu", "relu")
            },
            f"even maps match, the {side}x{side} map differs: pad odd maps at the bottom and right, as "
            "padding='same' does"
            if side % 2
            else "with the library's weights the output differs: norm, then the 2x2 stride-2 convolution",
        )


# The builder (lesson 04) --------------------------------------------------
def builder_configs() -> list[Any]:
    """Configs that move every field the builder reads away from its default."""
    from shiftvit_lib.config import preset

    quick = preset("quick")  # depths (1, 2, 1), 24 channels
    changes = [
        dict(num_div=6, mlp_ratio=3.0, mlp_dropout=0.3, drop_path_rate=0.4, drop_path_schedule="network")
        | dict(augment=False),
        dict(
            shift="keras_io",
            depths=(2, 1, 2),
            projected_dim=48,
            drop_path_rate=0.3,
            drop_path_schedule="per_stage",
        ),
        dict(shift="none", shift_pixel=2, depths=(1, 1)),
    ]
    return [quick.replace(**change) for change in changes]


def check_builder(build: Callable[[Any], keras.Model]) -> None:
    """``build(config)`` must read every field: stages, merging, num_div, shift,
    shift_pixel, MLP ratio and dropout, drop path and augmentation."""
    probe = np.random.default_rng(6).integers(0, 256, size=(4, 32, 32, 3), dtype="uint8")
    for config in builder_configs():
        model, library = build(config), build_shiftvit(config)
        blocks = [block for stage in _layers(model, ShiftViTStage) for block in stage.blocks]
        if blocks:  # built from the library's stages: name the field it ignores
            assert len(blocks) == sum(config.depths), (
                f"the model has {len(blocks)} blocks, config.depths {config.depths} asks for {sum(config.depths)}"
            )
            for field in ("num_div", "shift", "shift_pixel", "mlp_ratio", "mlp_dropout"):
                got = {getattr(block, field) for block in blocks}
                assert got == {getattr(config, field)}, (
                    f"every block must get config.{field} = {getattr(config, field)!r}, got {sorted(got)}"
                )
            rates = np.concatenate(
                drop_path_rates(config.depths, config.drop_path_rate, config.drop_path_schedule)
            )
            assert np.allclose([block.drop_path_rate for block in blocks], rates), (
                f"the blocks' drop-path rates must be sv.drop_path_rates(depths, drop_path_rate, "
                f"drop_path_schedule) = {np.round(rates, 3).tolist()}"
            )
        mergings, merges = len(_layers(model, PatchMerging)), len(config.depths) - 1
        assert mergings == merges, (
            f"every stage but the last must end in a patch merging: {merges} expected, got {mergings}"
        )
        assert model.count_params() == library.count_params(), (
            f"the model has {model.count_params():,} parameters, sv.build_shiftvit {library.count_params():,}"
        )
        model.set_weights(library.get_weights())
        assert _close(model(probe, training=False), library(probe, training=False)), (
            "with the library's weights the logits differ: pass num_div, shift, shift_pixel and "
            "mlp_ratio from the config to every stage"
        )
    # Each random part must follow its config field: off means training = inference.
    quiet = builder_configs()[0].replace(augment=False, mlp_dropout=0.0, drop_path_rate=0.0)
    for field, value, what in [
        ("augment", True, "augment=True must crop and flip at random in training"),
        ("mlp_dropout", 0.5, "mlp_dropout must switch on the MLPs' dropout"),
        ("drop_path_rate", 0.5, "drop_path_rate must switch on drop path"),
    ]:
        model = build(quiet.replace(**{field: value}))
        assert not _close(model(probe, training=True), model(probe, training=True)), (
            f"{what}: two training passes gave the same logits"
        )
    model = build(quiet)
    assert _close(model(probe, training=True), model(probe, training=False)), (
        "with augment=False, mlp_dropout=0 and drop_path_rate=0 training must equal inference: "
        "a random layer ignores its config field"
    )


# The schedule and one training step (lesson 05) ----------------------------
SCHEDULE_ARGS = dict(lr_start=1e-4, lr_max=1e-2, warmup_steps=10, total_steps=50)


def check_schedule(schedule: Callable[..., float]) -> None:
    """``schedule(step, lr_start, lr_max, warmup_steps, total_steps)`` must equal
    ``sv.WarmUpCosine`` at every step from 0 to past the end."""
    a, w, t = SCHEDULE_ARGS, SCHEDULE_ARGS["warmup_steps"], SCHEDULE_ARGS["total_steps"]
    steps = np.arange(t + 6)
    expected = _numpy(WarmUpCosine(**a)(steps)).astype("float64")
    got = np.array([float(schedule(int(step), **a)) for step in steps])

    def same(x: Any, y: Any) -> bool:
        return bool(np.isclose(x, y, rtol=1e-4, atol=1e-8).all())

    assert not same(got[:-1], expected[1:]), "the schedule is one step ahead: step 0 must give lr_start"
    assert same(got, expected) or not same(got[1:], expected[:-1]), (
        "the schedule is one step behind: step 1 must move"
    )
    assert same(got[0], a["lr_start"]), f"the warm-up must start at lr_start at step 0, got {got[0]:.3g}"
    assert same(got[w], a["lr_max"]), (
        f"the warm-up must end at step warmup_steps with lr_max, got {got[w]:.3g} there"
    )
    assert same(got[:w], expected[:w]), (
        "during the warm-up the rate must rise in a straight line from lr_start towards lr_max"
    )
    assert same(got[w : t + 1], expected[w : t + 1]), (
        "after the warm-up the rate must follow half a cosine from lr_max to 0 at total_steps"
    )
    assert same(got[t:], 0.0), "after total_steps the rate must stay 0"


STEP_LEARNING_RATE = 0.01


class DoubledInTraining(keras.layers.Layer):
    """Doubles its input in training, identity at inference: a deterministic
    stand-in for a layer such as dropout that behaves differently in training."""

    def call(self, x: Any, training: bool | None = None) -> Any:
        return x * 2.0 if training else x


def _step_model() -> keras.Model:
    keras.utils.set_random_seed(0)
    inputs = keras.Input((6,))
    x = keras.layers.Dense(3)(keras.layers.Dense(8, activation="tanh")(inputs))
    return keras.Model(inputs, DoubledInTraining()(x))


def check_train_step(step: Callable[..., float]) -> None:
    """``step(model, optimizer, loss_fn, images, labels)`` must return the loss of
    the model in training mode and take one step of the optimizer it is given (Adam
    here) along the gradient. Needs the TensorFlow backend (the reference step uses
    ``GradientTape``)."""
    import tensorflow as tf

    rng = np.random.default_rng(7)
    images, labels = rng.normal(size=(16, 6)).astype("float32"), rng.integers(0, 3, size=16)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model, reference = _step_model(), _step_model()
    reference.set_weights(model.get_weights())
    before = [w.copy() for w in model.get_weights()]
    losses = [float(loss_fn(labels, model(images, training=training))) for training in (True, False)]
    loss = step(model, keras.optimizers.Adam(STEP_LEARNING_RATE), loss_fn, images, labels)
    with tf.GradientTape() as tape:
        reference_loss = loss_fn(labels, reference(images, training=True))
    gradients = tape.gradient(reference_loss, reference.trainable_variables)
    keras.optimizers.Adam(STEP_LEARNING_RATE).apply_gradients(zip(gradients, reference.trainable_variables))
    _diagnose(
        float(loss),
        losses[0],
        {"the step must run the model with training=True (the loss is the inference loss)": losses[1]},
        f"the step must return the loss of this batch before the update: expected {losses[0]:.4f}, "
        f"got {float(loss):.4f}",
        same=lambda a, b: bool(np.isclose(a, b, rtol=1e-5)),
    )
    moves = [a - b for a, b in zip(model.get_weights(), before)]
    wanted = [w - b for w, b in zip(reference.get_weights(), before)]
    _diagnose(
        moves,
        wanted,
        {
            "no weight changed: the step must apply the gradients (optimizer.apply_gradients)": [
                0 * m for m in moves
            ],
            "the weights moved uphill: the optimizer needs the gradients, not their negatives": [
                -m for m in wanted
            ],
            "the weights moved by -lr * gradient, a plain SGD step: let the optimizer apply the gradients "
            "(optimizer.apply_gradients), Adam steps differently": [
                -STEP_LEARNING_RATE * _numpy(g) for g in gradients
            ],
            "the weights moved twice as far: apply the gradients once per step": [2 * m for m in wanted],
        },
        "some weights did not change: take the gradient for every model.trainable_variables"
        if any(not m.any() for m in moves)
        else "after one step the weights differ from one optimizer step along the loss's gradient "
        "(computed in training mode)",
        same=lambda a, b: all(np.allclose(m, w, rtol=1e-3, atol=1e-6) for m, w in zip(a, b)),
    )


# The exercises (lessons 00-07) ----------------------------------------------
def _equal(a: Any, b: Any) -> bool:
    return bool(np.array_equal(a, b))


def check_moved_channels(moved_channels: Callable[[int, int], int]) -> None:
    """Lesson 00: ``moved_channels(C, num_div)`` equals what ``shift_channels`` moves."""
    _blank(moved_channels(96, 12), "Write moved_channels, then run both cells again.")
    rng = np.random.default_rng(0)
    for c, num_div in [(96, 12), (192, 12), (50, 8), (13, 4)]:
        x = rng.uniform(1.0, 2.0, size=(1, 6, 6, c)).astype("float32")
        moved = int((_numpy(shift_channels(x, num_div=num_div)) != x).any(axis=(0, 1, 2)).sum())
        got = moved_channels(c, num_div)
        _diagnose(
            got,
            moved,
            {
                "C // num_div is one group: four groups move": c // num_div,
                f"with C = {c}, num_div = {num_div} the groups hold C // num_div channels (integer division): "
                "the leftover C % num_div channels stay": 4 * c / num_div,
            },
            f"moved_channels({c}, {num_div}) = {got}, the shift moved {moved}",
            same=_equal,
        )


def check_val_counts(counts: Any, data: Any) -> None:
    """Lesson 01: the number of validation images per class."""
    _blank(counts, "Fill in my_val_counts and run the cell again.")
    wanted = np.asarray(data.class_counts()["val"])
    assert np.shape(counts) == wanted.shape, (
        f"one count per class: {len(wanted)} numbers, got {np.shape(counts)}"
    )
    _diagnose(
        counts,
        wanted,
        {"those are the training counts: count data.y_val": data.class_counts()["train"]},
        "count how often each class occurs in data.y_val (np.bincount)",
        same=_equal,
    )


def check_centre_crop(centre_crop: Callable[[np.ndarray, int], np.ndarray]) -> None:
    """Lesson 01: ``centre_crop(images, crop)`` equals the layer's inference crop."""
    from shiftvit_lib.layers import ImagePreprocessing

    images = np.random.default_rng(10).integers(0, 256, size=(2, 32, 32, 3), dtype="uint8")
    resized = _numpy(ops.image.resize(images.astype("float32"), (52, 52)))
    _blank(centre_crop(resized, 40), "Write centre_crop, then run both cells again.")
    for crop in (40, 46):
        got = np.asarray(centre_crop(resized, crop))
        assert got.shape == (2, crop, crop, 3), (
            f"the crop must be (batch, {crop}, {crop}, 3), got {got.shape}"
        )
        layer = ImagePreprocessing(resize_to=52, crop_size=crop, augment=False)
        _diagnose(
            got,
            _numpy(layer(images, training=False)) * 255.0,
            {
                "that is the top-left corner: the window starts at (size - crop) // 2": resized[
                    :, :crop, :crop
                ]
            },
            f"the {crop}x{crop} window is off centre: start at (size - crop) // 2 on both axes",
            same=lambda a, b: bool(np.allclose(a, b, atol=1e-3)),
        )


def check_pad_shift(pad_shift: Callable[..., Any]) -> None:
    """Lesson 02: the shift built from slices and padding equals ``shift_channels``."""
    x = np.random.default_rng(11).normal(size=(2, 7, 9, 30)).astype("float32")
    answer = pad_shift(x, num_div=6, s=2)
    _blank(answer, "Fill in `up` and `down`, then run both cells again.")
    got, expected, g = _numpy(answer), _numpy(shift_channels(x, num_div=6, shift_pixel=2)), 30 // 6
    assert got.shape == x.shape, f"the shift must keep the shape {x.shape}, got {got.shape}"
    for k, direction in [(2, "up"), (3, "down")]:
        part = slice(k * g, (k + 1) * g)
        each_way = np.split(_numpy(shift_channels(np.concatenate([x[..., part]] * 4, -1), 4, 2)), 4, -1)
        _diagnose(
            got[..., part],
            expected[..., part],
            {
                f"the {direction} channels moved the other way: swap the slice and the padded side": each_way[
                    5 - k
                ]
            },
            f"the {direction} channels differ: keep the rows that survive the move, then pad s zero rows on the "
            "side the content left",
            same=_equal,
        )
    assert np.array_equal(got, expected), "the left, right and unmoved channels must stay as given"


def check_inside_block(inside_block: Callable[..., Any]) -> None:
    """Lesson 03: the block with the shift inside the residual branch."""
    block = ShiftViTBlock(num_div=12)
    x = np.random.default_rng(12).normal(size=(2, 6, 6, 24)).astype("float32")
    answer = inside_block(block, x)
    _blank(answer, "Write inside_block, then run both cells again.")
    shifted = _numpy(shift_channels(x, num_div=12))
    branch = _numpy(block.mlp(block.norm(shifted)))
    _diagnose(
        answer,
        x + branch,
        {
            "that is the library's block: here the skip carries x and only the branch sees the shift": shifted
            + branch,
            "the branch must see the shifted x": lambda: x + _numpy(block.mlp(block.norm(x))),
        },
        "inside_block must return x + mlp(norm(shift(x)))",
    )


def check_block_parameters(answer: Any, channels: int = 384) -> None:
    """Lesson 03: the parameters of one block with ``channels`` channels and MLP ratio 2."""
    _blank(answer, "Replace None with your number, then run the cell.")
    c = channels
    _diagnose(
        answer,
        4 * c * c + 5 * c,
        {
            f"{answer:,} counts the kernels only: add the MLP's biases and the norm's 2C": 4 * c * c,
            f"{answer:,} leaves out the norm: it has 2C parameters (scale, offset)": 4 * c * c + 3 * c,
            f"{answer:,} counts one Dense: the MLP has two (C -> 2C -> C)": 2 * c * c + 3 * c,
        },
        f"{answer:,} is not the count: C·2C + 2C and 2C·C + C for the MLP, 2C for the norm",
        same=_equal,
    )


def check_shapes(my_shapes: Callable[[Any], list]) -> None:
    """Lesson 04: ``my_shapes(config)`` lists (side, channels) after the projection and each stage."""
    from shiftvit_lib.config import preset
    from shiftvit_lib.model import stage_table

    _blank(my_shapes(preset("seed")), "Fill in my_shapes, run its cell, then run this cell again.")
    for name in ["quick", "seed", "cpu", "shiftvit_light_tiny"]:
        config = preset(name)
        built = [
            (row["output_shape"][1], row["output_shape"][3])
            for row in stage_table(build_shiftvit(config))
            if row["layer"] == "patch_projection" or row["layer"].startswith("stage_")
        ]
        got = [tuple(pair) for pair in my_shapes(config)]
        for wrong, hint in [
            (
                len(got) != len(built),
                f"one (side, channels) after the projection and one after each stage: {len(built)}",
            ),
            (got[0] != built[0], f"after the projection the side is image_size / patch_size, {built[0]}"),
            (
                [c for _, c in got] != [c for _, c in built],
                f"every stage but the last doubles the channels: {built}",
            ),
            (got != built, f"a merging halves the side rounding up, -(-side // 2): {built}"),
        ]:
            assert not wrong, f"{name}: {hint}, got {got}"


FLOOR_ARGS = dict(lr_start=1e-5, lr_max=1e-3, warmup_steps=100, total_steps=1100, lr_min=1e-4)


def check_floor_schedule(floor: Callable[..., float]) -> None:
    """Lesson 05: warm-up as before, then half a cosine from lr_max to lr_min, then lr_min."""
    a = FLOOR_ARGS
    _blank(floor(0, **a), "Write warmup_cosine_floor, then run both cells again.")
    w, t, low, high = (a[key] for key in ("warmup_steps", "total_steps", "lr_min", "lr_max"))

    def wanted(step: int) -> float:
        if step < w:
            return a["lr_start"] + (high - a["lr_start"]) * step / w
        return low + 0.5 * (high - low) * (1 + np.cos(np.pi * min(1.0, (step - w) / (t - w))))

    def same(step: int, value: float | None = None) -> bool:
        value = wanted(step) if value is None else value
        return bool(np.isclose(float(floor(step, **a)), value, rtol=1e-6, atol=1e-12))

    assert all(same(step) for step in (0, 50, 99)), "the warm-up stays as it was: lr_start up to lr_max"
    assert same(w), f"at the end of the warm-up (step {w}) the rate must be lr_max"
    assert same(t), f"at the last step ({t}) the rate must be lr_min, got {float(floor(t, **a)):.2e}"
    quarter = w + (t - w) // 4
    assert same(quarter) or not same(quarter, high - (high - low) / 4), (
        "the decay is a straight line: it must follow half a cosine (check a quarter of the way down)"
    )
    for step in (quarter, (w + t) // 2, w + 3 * (t - w) // 4, t + 50):
        assert same(step), (
            f"at step {step} the rate must be {wanted(step):.3e}, got {float(floor(step, **a)):.3e}: "
            "lr_min + (lr_max - lr_min) / 2 * (1 + cos(pi p))"
        )


def ece_probe() -> tuple[np.ndarray, np.ndarray]:
    """Confidences over every bin, a few of exactly 1.0 and 0.1 (bin edges), and their correctness."""
    rng = np.random.default_rng(13)
    confidence = np.concatenate([rng.uniform(0.1, 1.0, 200), [1.0] * 12, [0.1, 0.5, 0.9]])
    correct = rng.uniform(size=confidence.size) < confidence
    correct[200:212] = [True, False, True, True, False, True, True, True, False, True, True, True]
    return confidence, correct


def check_ece(my_ece: Callable[..., float]) -> None:
    """Lesson 06: ``my_ece(confidence, correct, bins)`` equals the library's ECE,
    with confidences of exactly 1.0 among the inputs."""
    from shiftvit_lib.notebook.plots import reliability_table

    confidence, correct = ece_probe()
    _blank(my_ece(confidence, correct, bins=10), "Write my_ece, run its cell, then run this cell again.")
    kept = confidence < 1.0
    for bins in (10, 5):
        got, expected = (
            float(my_ece(confidence, correct, bins=bins)),
            reliability_table(confidence, correct, bins)["ece"],
        )
        without_ones = reliability_table(confidence[kept], correct[kept], bins)["ece"]
        _diagnose(
            got,
            expected,
            {
                "the confidences of exactly 1.0 went missing: they belong in the last bin "
                "(np.minimum(group, bins - 1))": without_ones,
                "the confidences of exactly 1.0 fell out of every bin: they belong in the last bin "
                "(np.minimum(group, bins - 1))": without_ones * kept.mean(),
            },
            f"with bins={bins} the ECE is {expected:.4f}, got {got:.4f}: weight each bin's "
            "|accuracy - mean confidence| by its share of the images",
            same=lambda x, y: bool(np.isclose(x, y, rtol=1e-6)),
        )


def check_attention_macs(attention_matmul_macs: Callable[[int, int, int], int]) -> None:
    """Lesson 07: multiply-accumulates of one block's two attention products."""
    from shiftvit_lib.vit import count_vit_macs, vit_preset

    _blank(attention_matmul_macs(16, 4, 32), "Write attention_matmul_macs, then run both cells again.")
    n, heads, k = 10, 3, 7  # all different, so each mistake gives its own number
    got = attention_matmul_macs(n, heads, k)
    for hint, wrong in {
        "that is one product: Q·Kᵀ and weights·V cost n·n·k each, per head": heads * n * n * k,
        "each head does its own two products: multiply by heads": 2 * n * n * k,
        "each product is (n x k) by (k x n) or (n x n) by (n x k): n·n·k": 2 * heads * n * k * k,
    }.items():
        assert got != wrong, hint
    for name in ["vit_quick", "vit_cifar"]:
        config = vit_preset(name)
        expected = count_vit_macs(config)["attention_matmuls"] // config.depth
        got = attention_matmul_macs(config.num_tokens, config.num_heads, config.head_key_dim)
        assert got == expected, f"{name}: {expected:,} MACs per block, got {got:,}"
