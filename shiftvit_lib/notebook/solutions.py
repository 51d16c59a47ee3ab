"""The solutions of the lessons' blanks, as the lessons show them (lessons 02-05).

Lessons 02-05 leave the body of each key piece blank for the learner. The
checking cell after a blank tries the learner's version; while it is still blank,
it falls back to the solution here, so a notebook with every blank left empty
still runs top to bottom. Each lesson shows the same code in a collapsed
"Solution" below the blank (``tests/lessons/test_checks.py`` keeps the two in step).
The exercises' solutions (lessons 00-07) are not run by the lessons, only by the tests:
they live beside them, in ``tests/lessons/exercise_solutions.py``.

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
