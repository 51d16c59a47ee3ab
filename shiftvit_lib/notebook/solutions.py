"""The solutions of the lessons' blanks, as the lessons show them (lessons 02-05).

Lessons 02-05 leave the body of each key piece blank for the learner. The
checking cell after a blank tries the learner's version; while it is still blank,
it falls back to the solution here, so a notebook with every blank left empty
still runs top to bottom. Each lesson shows the same code in a collapsed
"Solution" below the blank (``tests/test_checks.py`` keeps the two in step).

This is a lesson helper: it imports the core library; the core never imports it.
"""

from __future__ import annotations

import math

import keras
import numpy as np
from keras import layers, ops

import shiftvit_lib as sv


# Lesson 02 ---------------------------------------------------------------
def my_shift(x, num_div=12, s=1):
    """Move channel groups 0-3 by s pixels left, right, up, down; zeros in."""
    x = np.asarray(x)
    g = x.shape[-1] // num_div
    out = np.zeros_like(x)
    out[:, :, :-s, 0 * g:1 * g] = x[:, :, s:, 0 * g:1 * g]  # left: j <- j + s
    out[:, :, s:, 1 * g:2 * g] = x[:, :, :-s, 1 * g:2 * g]  # right
    out[:, :-s, :, 2 * g:3 * g] = x[:, s:, :, 2 * g:3 * g]  # up: row i <- i + s
    out[:, s:, :, 3 * g:4 * g] = x[:, :-s, :, 3 * g:4 * g]  # down
    out[..., 4 * g:] = x[..., 4 * g:]  # the rest stays
    return out


# Lesson 03 ---------------------------------------------------------------
class MyMLP(layers.Layer):
    def __init__(self, ratio=2.0, **kwargs):
        super().__init__(**kwargs)
        self.ratio = ratio

    def build(self, input_shape):
        channels = input_shape[-1]
        self.expand = layers.Dense(int(self.ratio * channels), activation="gelu")
        self.project = layers.Dense(channels)

    def call(self, x):
        return self.project(self.expand(x))


class MyDropPath(layers.Layer):
    def __init__(self, rate=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = rate
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, x, training=False):
        if not training or self.rate == 0.0:
            return x
        keep = 1.0 - self.rate
        shape = (ops.shape(x)[0],) + (1,) * (len(x.shape) - 1)  # one per sample
        u = keras.random.uniform(shape, seed=self.seed_generator, dtype=x.dtype)
        return x / keep * ops.floor(keep + u)  # floor(keep + u): 1 w.p. keep


class MyBlock(layers.Layer):
    def __init__(self, num_div=12, drop_path_rate=0.0, **kwargs):
        super().__init__(**kwargs)
        self.num_div = num_div
        self.norm = layers.LayerNormalization(epsilon=1e-5)
        self.mlp = MyMLP(2.0)
        self.drop_path = MyDropPath(drop_path_rate)

    def call(self, x, training=False):
        x = sv.shift_channels(x, self.num_div)  # outside the residual branch
        branch = self.mlp(self.norm(x))
        return x + self.drop_path(branch, training=training)


class MyPatchMerging(layers.Layer):
    def build(self, input_shape):
        self.norm = layers.LayerNormalization(epsilon=1e-5)
        self.reduction = layers.Conv2D(2 * input_shape[-1], 2, strides=2,
                                       padding="same", use_bias=False)

    def call(self, x):
        return self.reduction(self.norm(x))


# Lesson 04 ---------------------------------------------------------------
def my_build_shiftvit(config):
    inputs = keras.Input(shape=config.input_shape, name="images")
    x = sv.ImagePreprocessing(
        resize_to=config.resize_to, crop_size=config.image_size,
        flip=config.flip, augment=config.augment, name="preprocessing")(inputs)
    x = layers.Conv2D(config.projected_dim, config.patch_size,
                      strides=config.patch_size, padding="same",
                      name="patch_projection")(x)  # one patch -> one position
    rates = sv.drop_path_rates(config.depths, config.drop_path_rate,
                               config.drop_path_schedule)
    for index, stage_rates in enumerate(rates):
        x = sv.ShiftViTStage(
            stage_rates, merge=index < len(rates) - 1,
            name=f"stage_{index + 1}", num_div=config.num_div,
            shift_pixel=config.shift_pixel, shift=config.shift,
            mlp_ratio=config.mlp_ratio, mlp_dropout=config.mlp_dropout)(x)
    x = layers.GlobalAveragePooling2D(name="pool")(x)
    outputs = layers.Dense(config.num_classes, name="classifier")(x)
    return keras.Model(inputs, outputs, name=f"my_shiftvit_{config.name}")


# Lesson 05 ---------------------------------------------------------------
def warmup_cosine(step, lr_start, lr_max, warmup_steps, total_steps):
    """Linear warm-up from lr_start to lr_max, then half a cosine to 0."""
    if step < warmup_steps:
        return lr_start + (lr_max - lr_start) * step / warmup_steps
    if step >= total_steps:
        return 0.0
    progress = (step - warmup_steps) / (total_steps - warmup_steps)  # 0 -> 1
    return 0.5 * lr_max * (1 + math.cos(math.pi * progress))


def train_step(model, optimizer, loss_fn, images, labels):
    import tensorflow as tf

    with tf.GradientTape() as tape:
        logits = model(images, training=True)
        loss = loss_fn(labels, logits)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return float(loss)


# The exercises (lessons 00-07), as their "Solution" folds show them ----------
def moved_channels(C, num_div):
    return 4 * (C // num_div)


def val_counts(data):
    return np.bincount(data.y_val, minlength=10)


def centre_crop(images, crop):
    start = (images.shape[1] - crop) // 2
    return images[:, start:start + crop, start:start + crop, :]


def pad_shift(x, num_div=12, s=1):
    g = x.shape[-1] // num_div
    no = (0, 0)
    left = ops.pad(x[:, :, s:, 0:g], [no, no, (0, s), no])
    right = ops.pad(x[:, :, :-s, g:2 * g], [no, no, (s, 0), no])
    up = ops.pad(x[:, s:, :, 2 * g:3 * g], [no, (0, s), no, no])
    down = ops.pad(x[:, :-s, :, 3 * g:4 * g], [no, (s, 0), no, no])
    return ops.concatenate([left, right, up, down, x[..., 4 * g:]], axis=-1)


def inside_block(block, x):
    return x + block.mlp(block.norm(sv.shift_channels(x, num_div=12)))


BLOCK_PARAMETERS_384 = 4 * 384**2 + 5 * 384  # two Dense layers and a norm


def my_shapes(config):
    side, channels = -(-config.image_size // config.patch_size), config.projected_dim
    shapes = [(side, channels)]
    for index in range(len(config.depths)):
        if index < len(config.depths) - 1:  # merging: half the side (rounded up), twice the channels
            side, channels = -(-side // 2), 2 * channels
        shapes.append((side, channels))
    return shapes


def warmup_cosine_floor(step, lr_start, lr_max, warmup_steps, total_steps, lr_min):
    if step < warmup_steps:
        return lr_start + (lr_max - lr_start) * step / warmup_steps
    progress = min(1.0, (step - warmup_steps) / (total_steps - warmup_steps))
    return lr_min + 0.5 * (lr_max - lr_min) * (1 + math.cos(math.pi * progress))


def my_ece(confidence, correct, bins=10):
    group = np.minimum((confidence * bins).astype(int), bins - 1)
    ece = 0.0
    for g in range(bins):
        members = group == g
        if members.any():
            ece += members.mean() * abs(correct[members].mean() - confidence[members].mean())
    return ece


def attention_matmul_macs(n, heads, key_dim):
    return 2 * heads * n * n * key_dim  # Q K^T and weights x V, n*n*k each per head


__all__ = ["my_shift", "MyMLP", "MyDropPath", "MyBlock", "MyPatchMerging",
           "my_build_shiftvit", "warmup_cosine", "train_step", "moved_channels", "val_counts",
           "centre_crop", "pad_shift", "inside_block", "BLOCK_PARAMETERS_384", "my_shapes",
           "warmup_cosine_floor", "my_ece", "attention_matmul_macs"]
