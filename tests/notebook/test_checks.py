"""The lessons' checks (shiftvit_lib/notebook/checks.py) fail on every catalogued mistake.

Each piece the learner writes in lessons 02-05 has a catalogue of plausible
mistakes below. A test injects each one and asserts that the piece's check raises
AssertionError. Each blank's collapsed "Solution", put into its blank cell and run,
must pass its check, and fail it once a mistake is planted in the fold's code; a
correct DropPath that draws its random numbers differently passes too. While a blank
is empty, the lesson's checking cell falls back to the library's piece: that must pass.
"""

import ast
import functools
import json
import math
import re
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
from keras import layers, ops

import shiftvit_lib as sv
from shiftvit_lib.notebook import checks, solutions
from shiftvit_lib.shift import keras_io_shift

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lessons"))
import exercise_solutions as ex  # noqa: E402  the exercises' solutions, as the lessons' folds show them

from shiftvit_lib.layers import DropPath
from shiftvit_lib.shift import shift_channels

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


# The shift (lesson 02) ----------------------------------------------------
def _shift_with(moves, g_of=lambda c, n: c // n, rest=True, fill=None):
    """A numpy shift built from (channel group, output slice, input slice) rules."""

    def shift(x, num_div=12, s=1):
        x = np.asarray(x)
        g = g_of(x.shape[-1], num_div)
        out = np.zeros_like(x) if fill is None else fill(x)
        for k, (out_index, in_index) in enumerate(moves(s)):
            part = slice(k * g, (k + 1) * g)
            out[(*out_index, part)] = x[(*in_index, part)]
        if rest:
            out[..., 4 * g:] = x[..., 4 * g:]
        return out

    return shift


A = slice(None)


def _official(s):
    return [((A, A, slice(None, -s)), (A, A, slice(s, None))),
            ((A, A, slice(s, None)), (A, A, slice(None, -s))),
            ((A, slice(None, -s), A), (A, slice(s, None), A)),
            ((A, slice(s, None), A), (A, slice(None, -s), A))]


def _swap(i, j):
    def moves(s):
        rules = _official(s)
        rules[i], rules[j] = rules[j], rules[i]
        return rules
    return moves


def _one_pixel(s):
    return _official(1)


def _off_by_one_slice(s):
    rules = _official(s)
    rules[0] = ((A, A, slice(None, -s - 1)), (A, A, slice(s + 1, None)))
    return rules


def _first_image_only(x, num_div=12, s=1):
    x = np.asarray(x)
    out = x.copy()
    out[:1] = ops.convert_to_numpy(sv.shift_channels(x[:1], num_div, s))
    return out


def _every_group_two_pixels(x, num_div=12, s=1):
    return ops.convert_to_numpy(sv.shift_channels(x, num_div, s + 1))


SHIFT_MISTAKES = {
    "only the first image of the batch moved": _first_image_only,
    "every group moved s + 1 pixels": _every_group_two_pixels,
    "left and right swapped": _shift_with(_swap(0, 1)),
    "up and down swapped": _shift_with(_swap(2, 3)),
    "left and up swapped (rows for columns)": _shift_with(_swap(0, 2)),
    "left moves two pixels (wrong slice)": _shift_with(_off_by_one_slice),
    "always one pixel, ignoring s": _shift_with(_one_pixel),
    "the rest is not copied": _shift_with(_official, rest=False),
    "C // num_div channels in all, as keras-io's split": _shift_with(_official, g_of=lambda c, n: c // n // 4),
    "groups of num_div channels (keras-io's split)": _shift_with(_official, g_of=lambda c, n: n),
    "border filled with a copy (roll without mask)": lambda x, n=12, s=1: _roll(x, n, s),
    "keras-io crop and pad at the same offsets": lambda x, n=12, s=1: ops.convert_to_numpy(
        keras_io_shift(np.concatenate([x] * 4, axis=-1), n, s))[..., :x.shape[-1]],
}


def _roll(x, num_div, s):
    x = np.asarray(x)
    g = x.shape[-1] // num_div
    out = x.copy()
    for k, (shift, axis) in enumerate([(-s, 2), (s, 2), (-s, 1), (s, 1)]):
        out[..., k * g:(k + 1) * g] = np.roll(x[..., k * g:(k + 1) * g], shift, axis=axis)
    return out


# DropPath (lesson 03) -----------------------------------------------------
class _DropPathVariant(sv.DropPath):
    def __init__(self, rate=0.0, seed=None, **kwargs):
        super().__init__(rate, seed, **kwargs)


class NoScaling(_DropPathVariant):
    def call(self, x, training=False):
        return super().call(x, training) * (1.0 - self.rate if training else 1.0)


class PerElement(_DropPathVariant):
    def call(self, x, training=False):
        if not training or self.rate == 0.0:
            return x
        keep = 1.0 - self.rate
        u = keras.random.uniform(ops.shape(x), seed=self.seed_generator)
        return x / keep * ops.floor(keep + u)


class AlsoAtInference(_DropPathVariant):
    def call(self, x, training=False):
        return super().call(x, training=True)


class DropsWithKeepProbability(_DropPathVariant):
    def call(self, x, training=False):
        if not training or self.rate == 0.0:
            return x
        shape = (ops.shape(x)[0],) + (1,) * (len(x.shape) - 1)
        u = keras.random.uniform(shape, seed=self.seed_generator)
        return x / (1.0 - self.rate) * ops.floor(self.rate + u)


class FixedIntegerSeed(_DropPathVariant):
    """Draws with a fixed integer seed: the same samples are dropped at every call."""

    def call(self, x, training=False):
        if not training or self.rate == 0.0:
            return x
        keep = 1.0 - self.rate
        shape = (ops.shape(x)[0],) + (1,) * (len(x.shape) - 1)
        u = keras.random.uniform(shape, seed=7)
        return x / keep * ops.floor(keep + u)


class OtherRandomNumbers(_DropPathVariant):
    """Correct, but draws its numbers its own way: it must pass."""

    def __init__(self, rate=0.0, seed=None, **kwargs):
        super().__init__(rate, seed, **kwargs)
        self.own_generator = keras.random.SeedGenerator(99)

    def call(self, x, training=False):
        if not training or self.rate == 0.0:
            return x
        shape = (ops.shape(x)[0],) + (1,) * (len(x.shape) - 1)
        u = keras.random.uniform(shape, seed=self.own_generator)
        return ops.where(u >= self.rate, x / (1.0 - self.rate), 0.0)


DROP_PATH_MISTAKES = {"kept samples not rescaled": NoScaling, "one random number per element": PerElement,
                      "drops at inference too": AlsoAtInference, "drops with the keep probability":
                      DropsWithKeepProbability, "a fixed integer seed (same mask every call)": FixedIntegerSeed}


# The MLP (lesson 03) ------------------------------------------------------
def _mlp(width=lambda ratio, c: int(ratio * c), activation="gelu", out_activation=None, residual=False):
    class Mlp(layers.Layer):
        def __init__(self, ratio=2.0, **kwargs):
            super().__init__(**kwargs)
            self.ratio = ratio

        def build(self, input_shape):
            channels = input_shape[-1]
            self.expand = layers.Dense(width(self.ratio, channels), activation=activation)
            self.project = layers.Dense(channels, activation=out_activation)

        def call(self, x):
            return self.project(self.expand(x)) + (x if residual else 0.0)

    return Mlp


MLP_MISTAKES = {
    "hidden width C (ratio ignored)": _mlp(width=lambda ratio, c: c),
    "hidden width always 2C": _mlp(width=lambda ratio, c: 2 * c),
    "no GELU": _mlp(activation=None),
    "GELU after the second Dense": _mlp(activation=None, out_activation="gelu"),
    "adds the residual inside the MLP": _mlp(residual=True),
}


# The block (lesson 03) ----------------------------------------------------
def _block(body):
    return type(body.__name__, (sv.ShiftViTBlock,), {"call": body})


def shift_inside_branch(self, x, training=False):
    branch = self.mlp(self.norm(sv.shift_channels(x, self.num_div)))
    return x + self.drop_path(branch, training=training)


def no_shift(self, x, training=False):
    return x + self.drop_path(self.mlp(self.norm(x)), training=training)


def no_residual(self, x, training=False):
    x = sv.shift_channels(x, self.num_div)
    return self.drop_path(self.mlp(self.norm(x)), training=training)


def no_norm(self, x, training=False):
    x = sv.shift_channels(x, self.num_div)
    return x + self.drop_path(self.mlp(x), training=training)


def norm_after_mlp(self, x, training=False):
    x = sv.shift_channels(x, self.num_div)
    return x + self.drop_path(self.norm(self.mlp(x)), training=training)


def fixed_num_div(self, x, training=False):
    x = sv.shift_channels(x, 12)
    return x + self.drop_path(self.mlp(self.norm(x)), training=training)


def drop_path_missing(self, x, training=False):
    x = sv.shift_channels(x, self.num_div)
    return x + self.mlp(self.norm(x))


def drop_path_always_training(self, x, training=False):
    x = sv.shift_channels(x, self.num_div)
    return x + self.drop_path(self.mlp(self.norm(x)), training=True)


def drop_path_over_everything(self, x, training=False):
    x = sv.shift_channels(x, self.num_div)
    return self.drop_path(x + self.mlp(self.norm(x)), training=training)


def drop_path_before_mlp(self, x, training=False):
    x = sv.shift_channels(x, self.num_div)
    return x + self.mlp(self.drop_path(self.norm(x), training=training))


BLOCK_MISTAKES = {f.__name__: _block(f) for f in [
    shift_inside_branch, no_shift, no_residual, no_norm, norm_after_mlp, fixed_num_div, drop_path_missing,
    drop_path_always_training, drop_path_over_everything, drop_path_before_mlp]}


# Patch merging (lesson 03) ------------------------------------------------
def _merging(padding="same", norm=True, norm_after=False, bias=False, channels=2, kernel=2, strides=2,
             norm_layer=lambda: layers.LayerNormalization(epsilon=1e-5), activation=None, pad_top_left=False):
    class Merging(layers.Layer):
        def build(self, input_shape):
            self.norm = norm_layer()
            self.reduction = layers.Conv2D(channels * input_shape[-1], kernel, strides=strides,
                                           padding="valid" if pad_top_left else padding, use_bias=bias,
                                           activation=activation)

        def call(self, x):
            if pad_top_left:  # pads odd maps on the top and left instead of the bottom and right
                odd = x.shape[1] % 2
                x = ops.pad(self.norm(x), [(0, 0), (odd, 0), (odd, 0), (0, 0)])
                return self.reduction(x)
            if not norm:
                return self.reduction(x)
            return self.norm(self.reduction(x)) if norm_after else self.reduction(self.norm(x))

    return Merging


MERGING_MISTAKES = {
    "padding='valid' (odd maps lose a row)": _merging(padding="valid"),
    "no norm": _merging(norm=False),
    "norm after the convolution": _merging(norm_after=True),
    "convolution with a bias": _merging(bias=True),
    "channels not doubled": _merging(channels=1),
    "stride 1 (the map does not shrink)": _merging(strides=1),
    "3x3 kernel": _merging(kernel=3),
    "BatchNormalization instead of LayerNormalization": _merging(norm_layer=layers.BatchNormalization),
    "GroupNormalization(1) instead of LayerNormalization": _merging(
        norm_layer=lambda: layers.GroupNormalization(groups=1)),
    "GELU after the convolution": _merging(activation="gelu"),
    "odd maps padded at the top and left": _merging(pad_top_left=True),
    "LayerNormalization with Keras' default epsilon": _merging(norm_layer=layers.LayerNormalization),
}


# The builder (lesson 04) --------------------------------------------------
def _builder(stage_options=None, rates=None, merge=None, augment=None):
    """The lesson's builder with one thing done wrong."""

    def build(config):
        inputs = keras.Input(shape=config.input_shape)
        x = sv.ImagePreprocessing(resize_to=config.resize_to, crop_size=config.image_size, flip=config.flip,
                                  augment=config.augment if augment is None else augment)(inputs)
        x = layers.Conv2D(config.projected_dim, config.patch_size, strides=config.patch_size,
                          padding="same")(x)
        all_rates = sv.drop_path_rates(config.depths, config.drop_path_rate, config.drop_path_schedule)
        if rates is not None:
            all_rates = rates(config)
        options = dict(num_div=config.num_div, shift_pixel=config.shift_pixel, shift=config.shift,
                       mlp_ratio=config.mlp_ratio, mlp_dropout=config.mlp_dropout)
        options.update(stage_options or {})
        for index, stage_rates in enumerate(all_rates):
            last = index == len(all_rates) - 1
            x = sv.ShiftViTStage(stage_rates, merge=(not last) if merge is None else merge(last), **options)(x)
        x = layers.GlobalAveragePooling2D()(x)
        return keras.Model(inputs, layers.Dense(config.num_classes)(x))

    return build


BUILDER_MISTAKES = {
    "ignores num_div": _builder(stage_options=dict(num_div=12)),
    "ignores the shift kind": _builder(stage_options=dict(shift="official")),
    "ignores shift_pixel": _builder(stage_options=dict(shift_pixel=1)),
    "ignores mlp_ratio": _builder(stage_options=dict(mlp_ratio=2.0)),
    "ignores mlp_dropout": _builder(stage_options=dict(mlp_dropout=0.0)),
    "no drop path": _builder(rates=lambda c: [[0.0] * d for d in c.depths]),
    "drop-path schedule always per stage": _builder(
        rates=lambda c: sv.drop_path_rates(c.depths, c.drop_path_rate, "per_stage")),
    "merges after the last stage too": _builder(merge=lambda last: True),
    "never merges": _builder(merge=lambda last: False),
    "augmentation always on": _builder(augment=True),
    "augmentation always off": _builder(augment=False),
}


# The schedule (lesson 05) -------------------------------------------------
def _warmup_cosine(*args, **kwargs):
    """Lesson 05's warmup_cosine, as its "Solution" fold writes it."""
    return solved("05_training")["warmup_cosine"](*args, **kwargs)


def one_step_ahead(step, lr_start, lr_max, warmup_steps, total_steps):
    return _warmup_cosine(step + 1, lr_start, lr_max, warmup_steps, total_steps)


def warm_up_ends_late(step, lr_start, lr_max, warmup_steps, total_steps):
    return _warmup_cosine(step, lr_start, lr_max, warmup_steps + 3, total_steps)


def warm_up_from_zero(step, lr_start, lr_max, warmup_steps, total_steps):
    return _warmup_cosine(step, 0.0, lr_max, warmup_steps, total_steps)


def cosine_from_step_zero(step, lr_start, lr_max, warmup_steps, total_steps):
    if step < warmup_steps:
        return lr_start + (lr_max - lr_start) * step / warmup_steps
    return 0.5 * lr_max * (1 + math.cos(math.pi * min(step / total_steps, 1.0)))


def full_cosine_wave(step, lr_start, lr_max, warmup_steps, total_steps):
    if step < warmup_steps:
        return lr_start + (lr_max - lr_start) * step / warmup_steps
    progress = min((step - warmup_steps) / (total_steps - warmup_steps), 1.0)
    return 0.5 * lr_max * (1 + math.cos(2 * math.pi * progress))


def linear_decay(step, lr_start, lr_max, warmup_steps, total_steps):
    if step < warmup_steps:
        return lr_start + (lr_max - lr_start) * step / warmup_steps
    return lr_max * max(0.0, 1 - (step - warmup_steps) / (total_steps - warmup_steps))


def rises_again_after_the_end(step, lr_start, lr_max, warmup_steps, total_steps):
    if step < warmup_steps:
        return lr_start + (lr_max - lr_start) * step / warmup_steps
    progress = (step - warmup_steps) / (total_steps - warmup_steps)
    return 0.5 * lr_max * (1 + math.cos(math.pi * progress))


def no_warm_up(step, lr_start, lr_max, warmup_steps, total_steps):
    return _warmup_cosine(step, lr_start, lr_max, 0, total_steps) if step else lr_start


SCHEDULE_MISTAKES = {f.__name__: f for f in [
    one_step_ahead, warm_up_ends_late, warm_up_from_zero, cosine_from_step_zero, full_cosine_wave,
    linear_decay, rises_again_after_the_end, no_warm_up]}


# One training step (lesson 05) --------------------------------------------
def _step(training=True, apply=True, variables=lambda m: m.trainable_variables, sign=1.0, times=1,
          loss_after=False, plain_sgd=False):
    def step(model, optimizer, loss_fn, images, labels):
        import tensorflow as tf

        with tf.GradientTape() as tape:
            logits = model(images) if training is None else model(images, training=training)
            loss = loss_fn(labels, logits)
        chosen = variables(model)
        gradients = tape.gradient(loss, chosen)
        if plain_sgd:  # ignores the optimizer it was given
            for variable, gradient in zip(chosen, gradients):
                variable.assign_sub(float(optimizer.learning_rate) * gradient)
        for _ in range(times if apply and not plain_sgd else 0):
            optimizer.apply_gradients(zip([sign * g for g in gradients], chosen))
        if loss_after:
            loss = loss_fn(labels, model(images, training=True))
        return float(loss)

    return step


STEP_MISTAKES = {
    "training=False": _step(training=False),
    "no training argument": _step(training=None),
    "forgets the update": _step(apply=False),
    "only the first weights": _step(variables=lambda m: m.trainable_variables[:1]),
    "gradient ascent": _step(sign=-1.0),
    "updates twice": _step(times=2),
    "returns the loss after the update": _step(loss_after=True),
    "ignores the optimizer: v.assign_sub(lr * g)": _step(plain_sgd=True),
}


# The exercises (lessons 00-07) ----------------------------------------------
class _Splits:
    """What check_val_counts reads of a DataSplits."""

    y_val = np.repeat(np.arange(10), 4)

    @staticmethod
    def class_counts():
        return {"train": np.full(10, 16), "val": np.full(10, 4), "test": np.full(10, 5)}


def _floor_variant(decay):
    def floor(step, lr_start, lr_max, warmup_steps, total_steps, lr_min):
        if step < warmup_steps:
            return lr_start + (lr_max - lr_start) * step / warmup_steps
        progress = min(1.0, (step - warmup_steps) / (total_steps - warmup_steps))
        return decay(progress, lr_max, lr_min)
    return floor


def _ece_without_ones(confidence, correct, bins=10):
    kept = confidence < 1.0
    return ex.my_ece(confidence[kept], correct[kept], bins)


def _ece_unweighted(confidence, correct, bins=10):
    group = np.minimum((confidence * bins).astype(int), bins - 1)
    gaps = [abs(correct[group == g].mean() - confidence[group == g].mean()) for g in range(bins)
            if (group == g).any()]
    return float(np.mean(gaps))


def _shapes_floor_division(config):
    side, channels = config.image_size // config.patch_size, config.projected_dim
    shapes = [(side, channels)]
    for _index in range(len(config.depths) - 1):
        side, channels = side // 2, 2 * channels
        shapes.append((side, channels))
    return shapes + [shapes[-1]]


# name -> (check, reference answer, extra arguments of the check, {mistake: answer})
EXERCISES = {
    "moved_channels": (checks.check_moved_channels, ex.moved_channels, (), {
        "one group": lambda c, n: c // n,
        "no integer division": lambda c, n: 4 * c / n,
        "a third of the channels": lambda c, n: c // 3,
    }),
    "val_counts": (checks.check_val_counts, ex.val_counts(_Splits), (_Splits,), {
        "the training counts": np.full(10, 16),
        "the test counts": np.full(10, 5),
        "nine classes": np.full(9, 4),
    }),
    "centre_crop": (checks.check_centre_crop, ex.centre_crop, (), {
        "top-left corner": lambda images, crop: images[:, :crop, :crop],
        "one pixel off centre": lambda images, crop: images[:, (images.shape[1] - crop) // 2 + 1:][
            :, :crop, (images.shape[1] - crop) // 2 + 1:][:, :, :crop],
        "crop minus one": lambda images, crop: ex.centre_crop(images, crop - 1),
    }),
    "pad_shift": (checks.check_pad_shift, ex.pad_shift, (), {
        "up and down swapped": lambda x, num_div=12, s=1: ops.concatenate(
            [ex.pad_shift(x, num_div, s)[..., i * (x.shape[-1] // num_div):(i + 1) * (x.shape[-1] // num_div)]
             for i in (0, 1, 3, 2)] + [x[..., 4 * (x.shape[-1] // num_div):]], axis=-1),
        "down padded on the wrong side": lambda x, num_div=12, s=1: ops.concatenate(
            [ex.pad_shift(x, num_div, s)[..., :3 * (x.shape[-1] // num_div)],
             ops.pad(x[:, :-s, :, 3 * (x.shape[-1] // num_div):4 * (x.shape[-1] // num_div)],
                     [(0, 0), (0, s), (0, 0), (0, 0)]),
             x[..., 4 * (x.shape[-1] // num_div):]], axis=-1),
    }),
    "inside_block": (checks.check_inside_block, ex.inside_block, (), {
        "the library's block": lambda block, x: block(x),
        "no shift": lambda block, x: x + block.mlp(block.norm(x)),
        "no skip": lambda block, x: block.mlp(block.norm(sv.shift_channels(x, num_div=12))),
    }),
    "block_parameters": (checks.check_block_parameters, ex.BLOCK_PARAMETERS_384, (), {
        "kernels only": 4 * 384**2,
        "no norm": 4 * 384**2 + 3 * 384,
        "one Dense": 2 * 384**2 + 3 * 384,
        "ratio 4": 8 * 384**2 + 7 * 384,
    }),
    "shapes": (checks.check_shapes, ex.my_shapes, (), {
        "side rounded down": _shapes_floor_division,
        "no entry for the projection": lambda config: ex.my_shapes(config)[1:],
        "channels never doubled": lambda config: [(side, config.projected_dim) for side, _ in
                                                  ex.my_shapes(config)],
    }),
    "floor_schedule": (checks.check_floor_schedule, ex.warmup_cosine_floor, (), {
        "ends at 0 (the blank's warmup_cosine)": lambda step, lr_min, **a: _warmup_cosine(step, **a),
        "a straight line to lr_min": _floor_variant(lambda p, high, low: high - (high - low) * p),
        "cosine to 0, clipped at lr_min": _floor_variant(
            lambda p, high, low: max(low, 0.5 * high * (1 + math.cos(math.pi * p)))),
        "warm-up from lr_min": lambda step, lr_start, lr_min, **a: ex.warmup_cosine_floor(
            step, lr_min, lr_min=lr_min, **a),
    }),
    "ece": (checks.check_ece, ex.my_ece, (), {
        "confidences of exactly 1.0 dropped": _ece_without_ones,
        "bins not weighted by their size": _ece_unweighted,
        "overall accuracy minus mean confidence": lambda conf, corr, bins=10: abs(corr.mean() - conf.mean()),
    }),
    "attention_macs": (checks.check_attention_macs, ex.attention_matmul_macs, (), {
        "one product": lambda n, heads, k: heads * n * n * k,
        "no heads": lambda n, heads, k: 2 * n * n * k,
        "n k k": lambda n, heads, k: 2 * heads * n * k * k,
    }),
}
EXERCISE_CASES = [(name, mistake) for name, (_, _, _, mistakes) in EXERCISES.items() for mistake in mistakes]


@pytest.mark.parametrize("name", list(EXERCISES))
def test_the_exercise_reference_passes(name, capsys):
    check, reference, context, _ = EXERCISES[name]
    checks.exercise(check, reference, *context)
    assert capsys.readouterr().out.endswith(": right\n")


@pytest.mark.parametrize(("name", "mistake"), EXERCISE_CASES, ids=[f"{n}-{m}" for n, m in EXERCISE_CASES])
def test_every_exercise_mistake_stops_run_all(name, mistake):
    check, _, context, mistakes = EXERCISES[name]
    with pytest.raises(AssertionError) as caught:
        checks.exercise(check, mistakes[mistake], *context)
    assert str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("name", list(EXERCISES))
def test_a_blank_exercise_says_so_and_goes_on(name, capsys):
    check, _, context, _ = EXERCISES[name]
    blank = (lambda *args, **kwargs: None) if callable(EXERCISES[name][1]) else None
    checks.exercise(check, blank, *context)
    assert "not answered yet" in capsys.readouterr().out


# The lessons' blanks, filled with their "Solution" folds -----------------------
LESSON_IMPORTS = """
import math
import keras
import numpy as np
from keras import layers, ops
import shiftvit_lib as sv
from shiftvit_lib.notebook import checks, solutions
from shiftvit_lib.schedules import WarmUpCosine
"""
BLANK_LESSONS = ["02_shift_operation", "03_shift_block", "04_shiftvit_model", "05_training"]


def _is_blank(cell):
    text = "".join(cell["source"])
    return cell["cell_type"] == "code" and 'raise NotImplementedError("write' in text.replace('(f"', '("')


def _blanks(lesson):
    """(blank cell, its fold's code, its checking cell) for each blank of a lesson, in order."""
    cells = json.loads((NOTEBOOKS / f"{lesson}.ipynb").read_text())["cells"]
    for index, cell in enumerate(cells):
        if _is_blank(cell):
            fold = re.search(r"```python\n(.*?)```", "".join(cells[index + 1]["source"]), flags=re.S)
            yield "".join(cell["source"]), fold.group(1), "".join(cells[index + 2]["source"])


def _up_to_the_check(checking):
    """A checking cell's code up to its try_yours statement (what follows uses the lesson's set-up)."""
    statements = ast.parse(checking).body
    last = next(i for i, statement in enumerate(statements) if "try_yours" in ast.unparse(statement))
    return ast.Module(statements[: last + 1], type_ignores=[])


def _indent(line):
    return line[: len(line) - len(line.lstrip())]


def _fill(blank, fold):
    """The blank cell with its fold's code in place: a fold that writes a whole ``def`` replaces
    that def; any other fold replaces the "# Your code" comment and the ``raise`` under it."""
    lines, fold = blank.splitlines(), fold.rstrip("\n").splitlines()
    head = re.match(r"def (\w+)\(", fold[0])
    if head:
        start = next(i for i, line in enumerate(lines) if re.match(rf"\s*def {head[1]}\(", line))
        indent, end = _indent(lines[start]), start + 1
        while end < len(lines) and (not lines[end].strip() or lines[end].startswith(indent + " ")):
            end += 1
    else:
        end = next(i for i, line in enumerate(lines) if "raise NotImplementedError(" in line) + 1
        indent, start = _indent(lines[end - 1]), end - 1
        while lines[start - 1].strip().startswith("#"):
            start -= 1
    return "\n".join(lines[:start] + [indent + line if line else line for line in fold] + lines[end:])


@functools.cache
def solved(lesson, plant=None):
    """What a lesson's blank cells define once each is filled with its fold's code and run
    (``plant``: an (old, new) edit of the folds' code, to plant a mistake)."""
    namespace = {}
    exec(LESSON_IMPORTS, namespace)
    folds = [(blank, fold) for blank, fold, _ in _blanks(lesson)]
    if plant:
        assert sum(fold.count(plant[0]) for _, fold in folds) == 1, f"{plant[0]!r} is not in one fold"
    for blank, fold in folds:
        exec(_fill(blank, fold.replace(*plant) if plant else fold), namespace)
    return namespace


# piece -> (its check, its lesson, the name its blank defines, {mistake: version})
PIECES = {
    "shift": (checks.check_shift, "02_shift_operation", "my_shift", SHIFT_MISTAKES),
    "mlp": (checks.check_mlp, "03_shift_block", "MyMLP", MLP_MISTAKES),
    "drop_path": (checks.check_drop_path, "03_shift_block", "MyDropPath", DROP_PATH_MISTAKES),
    "block": (checks.check_block, "03_shift_block", "MyBlock", BLOCK_MISTAKES),
    "patch_merging": (checks.check_patch_merging, "03_shift_block", "MyPatchMerging", MERGING_MISTAKES),
    "builder": (checks.check_builder, "04_shiftvit_model", "my_build_shiftvit", BUILDER_MISTAKES),
    "schedule": (checks.check_schedule, "05_training", "warmup_cosine", SCHEDULE_MISTAKES),
    "train_step": (checks.check_train_step, "05_training", "train_step", STEP_MISTAKES),
}
CASES = [(piece, name) for piece, (*_, mistakes) in PIECES.items() for name in mistakes]
# piece -> a mistake planted in its fold's code (old -> new) and words of the hint it must get
PLANTED = {
    "shift": (("out[:, :-s, :, 2 * g:3 * g] = x[:, s:, :", "out[:, s:, :, 2 * g:3 * g] = x[:, :-s, :"),
              "must move up, they moved down"),
    "mlp": (('activation="gelu"', 'activation="relu"'), "with sv.MLP's weights the output differs"),
    "drop_path": (("ops.floor(keep + u)", "ops.floor(self.rate + u)"), "a quarter must drop"),
    "block": (("self.drop_path(branch, training=training)", "self.drop_path(branch, training=True)"),
              "at inference drop path must drop nothing"),
    "patch_merging": (("use_bias=False", "use_bias=True"), "no bias"),
    "builder": (("merge=index < len(rates) - 1", "merge=True"), "every stage but the last"),
    "schedule": (("math.cos(math.pi * progress)", "math.cos(2 * math.pi * progress)"), "half a cosine"),
    "train_step": (("training=True", "training=False"), "training=True"),
}


def test_the_catalogue_is_large_enough():
    assert len(CASES) >= 30 and len(EXERCISE_CASES) >= 20
    assert all(len(mistakes) >= 3 for *_, mistakes in PIECES.values())
    assert all(len(mistakes) >= 2 for *_, mistakes in EXERCISES.values())
    assert set(PLANTED) == set(PIECES)


def _hint(check, mistake):
    with pytest.raises(AssertionError) as caught:
        check(mistake)
    return str(caught.value)


def test_each_merging_mistake_gets_its_own_hint():
    hints = {name: _hint(checks.check_patch_merging, mistake) for name, mistake in MERGING_MISTAKES.items()}
    assert len(set(hints.values())) == len(hints), hints


@pytest.mark.parametrize(("piece", "mistake", "words"), [
    ("shift", "only the first image of the batch moved", "only the first image"),
    ("shift", "every group moved s + 1 pixels", "moved 2 pixel(s), not s = 1"),
    ("mlp", "hidden width always 2C", "ratio * C = 3 * 6 = 18 units"),
    ("drop_path", "a fixed integer seed (same mask every call)", "draw new numbers at every call"),
    ("train_step", "ignores the optimizer: v.assign_sub(lr * g)", "plain SGD step"),
])
def test_the_new_hints_name_the_mistake(piece, mistake, words):
    check, *_, mistakes = PIECES[piece]
    assert words in _hint(check, mistakes[mistake])


def test_the_four_misses_of_issue_36_are_caught():
    """A DropPath with a fixed seed, a step that ignores Adam, a straight-line floor, an ECE without 1.0."""
    assert "every call" in _hint(checks.check_drop_path, FixedIntegerSeed)
    assert "SGD" in _hint(checks.check_train_step, STEP_MISTAKES["ignores the optimizer: v.assign_sub(lr * g)"])
    assert "straight line" in _hint(checks.check_floor_schedule,
                                    EXERCISES["floor_schedule"][3]["a straight line to lr_min"])
    assert "1.0" in _hint(checks.check_ece, _ece_without_ones)


@pytest.mark.parametrize("piece", list(PIECES))
def test_the_lessons_solution_passes_its_check(piece):
    """The blank cell with its "Solution" fold's code in place, run, passes the blank's check."""
    check, lesson, name, _ = PIECES[piece]
    check(solved(lesson)[name])


@pytest.mark.parametrize("piece", list(PIECES))
def test_a_mistake_planted_in_the_solution_is_caught(piece):
    """The same with one mistake planted in the fold's code: the check must name it."""
    check, lesson, name, _ = PIECES[piece]
    plant, words = PLANTED[piece]
    hint = _hint(check, solved(lesson, plant)[name])
    assert words in hint and "\n" not in hint, hint


@pytest.mark.parametrize("lesson", BLANK_LESSONS)
def test_an_empty_blank_goes_on_with_the_library(lesson, capsys):
    """Each checking cell, run after its empty blank, checks and hands on the library's piece."""
    namespace = {}
    exec(LESSON_IMPORTS, namespace)
    for blank, _, checking in _blanks(lesson):
        exec(blank, namespace)
        written = {name: value for name, value in namespace.items() if not name.startswith("_")}
        exec(compile(_up_to_the_check(checking), lesson, "exec"), namespace)
        out = capsys.readouterr().out
        if "skipped: train_step uses TensorFlow's GradientTape" in out:
            continue
        name = out.split(":")[0]
        assert out == f"{name}: not written yet, so the lesson goes on with the library's version\n", out
        assert namespace[name] is not written[name], f"{lesson}: {name} is still the blank"
        if name != "train_step":  # the one piece the library has no counterpart of
            assert namespace[name] not in vars(solutions).values(), name


def test_a_correct_drop_path_with_other_random_numbers_passes():
    checks.check_drop_path(OtherRandomNumbers)


# The builder's mistakes each build a model (about 1 s each, 13 s together): they run in the full suite
# (`run.sh test`), not in the inner loop, which keeps the builder's solution check.
@pytest.mark.parametrize(
    ("piece", "mistake"),
    [pytest.param(p, m, marks=[pytest.mark.slow] if p == "builder" else []) for p, m in CASES],
    ids=[f"{p}-{m}" for p, m in CASES],
)
def test_every_mistake_is_caught(piece, mistake):
    check, *_, mistakes = PIECES[piece]
    with pytest.raises(AssertionError) as caught:
        check(mistakes[mistake])
    hint = str(caught.value)
    assert hint and "\n" not in hint  # one line that names what is wrong


def test_try_yours_falls_back_to_the_library_while_blank(capsys):
    def my_shift(x, num_div=12, s=1):
        raise NotImplementedError("write my_shift")

    yours = solved("02_shift_operation")["my_shift"]
    assert checks.try_yours(checks.check_shift, my_shift, sv.shift_channels) is sv.shift_channels
    assert capsys.readouterr().out == "my_shift: not written yet, so the lesson goes on with the library's version\n"
    assert checks.try_yours(checks.check_shift, yours, sv.shift_channels) is yours
    assert capsys.readouterr().out == "my_shift: yours passes every check\n"
    with pytest.raises(AssertionError, match="must move left"):
        checks.try_yours(checks.check_shift, SHIFT_MISTAKES["left and right swapped"], sv.shift_channels)


def test_the_training_step_solution_is_the_lessons():
    """solutions.train_step, the one fallback that is no core piece, behaves as lesson 05's fold."""
    checks.check_train_step(solutions.train_step)
    plant, words = PLANTED["train_step"]
    assert words in _hint(checks.check_train_step, solved("05_training", plant)["train_step"])


def _exercise_solution_blocks(notebook):
    cells = json.loads((NOTEBOOKS / notebook).read_text())["cells"]
    for cell in cells:
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and "<summary>Solution</summary>" in text:
            yield from re.findall(r"```python\n(.*?)```", text, flags=re.S)


@pytest.mark.parametrize("notebook", ["01_data.ipynb", "02_shift_operation.ipynb", "03_shift_block.ipynb",
                                      "04_shiftvit_model.ipynb", "05_training.ipynb", "06_inference.ipynb",
                                      "07_attention_vs_shift.ipynb"])
def test_lessons_show_the_exercise_solutions_that_run(notebook):
    """Every line of an exercise's solution a lesson shows is a line of exercise_solutions.py,
    which the exercise tests above run against their mistake catalogues."""
    import inspect

    module_lines = {line.strip() for line in inspect.getsource(ex).splitlines()}
    for block in _exercise_solution_blocks(notebook):
        for line in block.strip().splitlines():
            assert line.strip() in module_lines, f"{notebook}: {line.strip()!r} is not a solution's line"


def test_nbval_markers_are_cell_tags_not_comments():
    """The learner never sees nbval's markers: they live in the cells' tags."""
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code":
                assert "NBVAL_" not in "".join(cell["source"]), (
                    f"{path.name}: run scripts/nbval_tags.py to turn '# NBVAL_*' into cell tags")


def test_lessons_02_to_05_ship_their_blanks_empty():
    """At least six blanks, each followed by its solution and a checking cell.

    The shipped lessons are the blank versions, so the nbval run of the lessons
    (run.sh test) is the run of a notebook whose every blank is left empty.
    """
    blanks = 0
    for name in BLANK_LESSONS:
        cells = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())["cells"]
        for index, cell in enumerate(cells):
            if _is_blank(cell):
                blanks += 1
                solution, check = cells[index + 1], cells[index + 2]
                assert "<summary>Solution of the blank</summary>" in "".join(solution["source"]), name
                check_code = re.sub(r"\s+", "", "".join(check["source"]))  # however it is wrapped
                assert "checks.try_yours(checks.check_" in check_code, name
    assert blanks >= 6, blanks


def test_no_exercise_check_only_prints():
    """Every exercise's checking cell calls checks.exercise, which stops "Run all" on a wrong answer."""
    for path in sorted(NOTEBOOKS.glob("0[0-8]_*.ipynb")):
        cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        for index, cell in enumerate(cells):
            text = "".join(cell["source"])
            assert not re.search(r"Not yet|Not quite|Not answered", text), f"{path.name}: a check that only prints"
            blank = re.search(r"#\s*your (code|answer|change)", text, flags=re.I) and "NotImplementedError" not in text
            if blank:
                here_or_next = text + "".join(cells[index + 1]["source"]) if index + 1 < len(cells) else text
                assert "checks.exercise(checks.check_" in here_or_next, f"{path.name}: {text[:60]!r}"


def test_try_yours_with_the_check_second_says_the_order():
    with pytest.raises(TypeError, match=r"takes the check first: try_yours\(check_drop_path") as refused:
        checks.try_yours(DropPath, checks.check_drop_path, DropPath)
    assert "\n" not in str(refused.value)


def test_a_layer_instead_of_its_class_is_named():
    with pytest.raises(TypeError, match=r"pass the class itself \(DropPath\), not a layer") as refused:
        checks.check_drop_path(DropPath(0.1))
    assert "\n" not in str(refused.value)


def test_a_function_without_return_is_told_about_the_return():
    def my_shift(x, num_div=12, s=1):
        np.zeros(1)  # the work, but no `return`

    with pytest.raises(AssertionError, match="returned None: did you forget its `return` line"):
        checks.check_shift(my_shift)
    checks.check_shift(shift_channels)  # a written one passes
