"""The exercises' solutions (lessons 00-07), as the lessons' "Solution" folds show them.

Only the tests run them: ``test_checks.py`` checks that each passes its exercise's check,
and that every line an exercise's fold shows is a line of this file. (The blanks' folds are
run instead: ``test_checks.py`` puts each into its blank cell and runs the blank's check.)
"""

import math

import numpy as np
from keras import ops

import shiftvit_lib as sv


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
