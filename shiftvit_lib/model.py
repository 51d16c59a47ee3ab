"""Assemble a ShiftViT from a config (taught in lesson 04).

    images (32x32x3, pixels 0..255)
      -> ImagePreprocessing   resize, crop, flip, rescale (random only in training)
      -> (stem)               optional 3x3 Conv2D at stride 2, BatchNorm, GELU
      -> patch projection     Conv2D, kernel = stride = patch_size (patch_size / 2 after a stem)
      -> stage 1 .. stage N   ShiftViT blocks, patch merging between stages
      -> global average pool
      -> classifier           Dense -> logits

The builder returns a functional ``keras.Model`` so ``summary()`` shows every
stage and the model saves and loads as a ``.keras`` file.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import layers

from shiftvit_lib.config import PRESETS, ModelFamily, ShiftViTConfig, register_family
from shiftvit_lib.layers import ImagePreprocessing, ShiftViTStage, drop_path_rates, make_norm

# The config fields every ShiftViTBlock reads (and layer_norm_epsilon, its `epsilon`).
BLOCK_FIELDS = ("num_div", "shift_pixel", "shift", "shift_implementation", "mlp_ratio", "mlp_dropout", "norm")


def build_shiftvit(config: ShiftViTConfig, *, seed: int | None = None) -> keras.Model:
    """Build the ShiftViT described by ``config``; the output is logits (no softmax).

    Args:
        config: a :class:`ShiftViTConfig`, e.g. ``preset("seed")``.
        seed: seed for the random crop, flip and drop-path layers (weights follow
            ``keras.utils.set_random_seed``).
    """
    if not isinstance(config, ShiftViTConfig):
        raise TypeError(
            f"build_shiftvit expects a ShiftViTConfig (e.g. preset('seed')), got {type(config).__name__}"
        )
    inputs = keras.Input(shape=config.input_shape, name="images")
    x = ImagePreprocessing.for_pipeline(config, seed=seed)(inputs)
    patch = config.patch_size
    if config.stem_channels:
        # Overlapping 3x3 windows see across patch borders, which a lone projection cannot.
        x = layers.Conv2D(
            config.stem_channels, 3, strides=2, padding="same", use_bias=False, name="stem_conv"
        )(x)
        x = layers.BatchNormalization(name="stem_norm")(x)
        x = layers.Activation("gelu", name="stem_gelu")(x)
        patch //= 2
    x = layers.Conv2D(config.projected_dim, patch, strides=patch, padding="same", name="patch_projection")(x)
    if config.patch_norm:
        x = make_norm(config.norm, config.layer_norm_epsilon, name="patch_norm")(x)

    rates = drop_path_rates(config.depths, config.drop_path_rate, config.drop_path_schedule)
    last = len(config.depths) - 1
    blocks = {key: getattr(config, key) for key in BLOCK_FIELDS} | {"epsilon": config.layer_norm_epsilon}
    for index, stage_rates in enumerate(rates):
        x = ShiftViTStage(stage_rates, index < last, name=f"stage_{index + 1}", **blocks)(x)

    if config.final_norm:
        x = make_norm(config.norm, config.layer_norm_epsilon, name="final_norm")(x)
    x = layers.GlobalAveragePooling2D(name="pool")(x)
    # Logits stay float32 under mixed precision, so the loss is computed accurately.
    outputs = layers.Dense(config.num_classes, dtype="float32", name="classifier")(x)
    model = keras.Model(inputs, outputs, name=f"shiftvit_{config.name}")
    if config.init == "spach":
        initialise_like_spach(model, seed=seed)
    return model


def initialise_like_spach(model: keras.Model, *, seed: int | None = None) -> keras.Model:
    """Re-draw every Dense/Conv kernel from N(0, 0.02²) and zero the biases.

    This is what SPACH's ``_init_weights`` does after building its models (ViT
    practice since DeiT). It calls timm's ``trunc_normal_(w, std=.02)``, whose cut-offs
    are *absolute* (±2, i.e. 100 standard deviations), so in effect a plain normal.
    Keras' default, Glorot uniform, gives the wide layers of the later stages
    larger initial weights. Norm layers keep scale 1, offset 0. Returns the model,
    changed in place.
    """
    # One generator for all variables: a fixed integer seed would give every
    # kernel of the same size the same numbers.
    generator = keras.random.SeedGenerator(seed)
    # Dense and Conv2D are the only layers here with variables called "kernel" and
    # "bias" (norms have "gamma"/"beta"), so the variable paths select them.
    for variable in model.trainable_variables:
        role = variable.path.rsplit("/", 1)[-1]
        if role == "kernel":
            variable.assign(
                keras.random.normal(variable.shape, stddev=0.02, dtype=variable.dtype, seed=generator)
            )
        elif role == "bias":
            variable.assign(keras.ops.zeros(variable.shape, dtype=variable.dtype))
    return model


def count_macs(config: ShiftViTConfig) -> dict[str, int]:
    """Multiply-accumulates of one forward pass, per part of the network.

    Counted analytically from the config's stage geometry: convolutions and dense layers
    only (norms, GELU, the shift and pooling are comparatively free). Papers' "FLOPs"
    for Swin/ShiftViT are such MAC counts.
    """
    sides, dims, channels = config.stage_resolutions, config.stage_dims, config.input_shape[-1]
    macs, projected_channels, window = {}, channels, config.patch_size
    if config.stem_channels:  # a 3x3 convolution at stride 2; the projection covers the other half
        macs["stem"] = (-(-config.image_size // 2)) ** 2 * 9 * channels * config.stem_channels
        projected_channels, window = config.stem_channels, config.patch_size // 2
    macs["patch_projection"] = sides[0] ** 2 * window**2 * projected_channels * dims[0]
    for index, (depth, side, dim) in enumerate(zip(config.depths, sides, dims)):
        macs[f"stage_{index + 1}"] = depth * side * side * 2 * dim * int(dim * config.mlp_ratio)
        if index + 1 < len(dims):  # patch merging: a 2x2 convolution to the next stage's grid and width
            macs[f"stage_{index + 1}"] += sides[index + 1] ** 2 * 4 * dim * dims[index + 1]
    macs["classifier"] = dims[-1] * config.num_classes
    macs["total"] = sum(macs.values())
    return macs


def stage_table(model: keras.Model) -> list[dict[str, Any]]:
    """One row per top-level layer: name, output shape and parameters (for lessons)."""
    rows = []
    for layer in model.layers:
        output = getattr(layer, "output", None)
        rows.append(
            {
                "layer": layer.name,
                "output_shape": None if output is None else tuple(output.shape),
                "parameters": layer.count_params() if layer.built else 0,
            }
        )
    return rows


# The shipped weights (shiftvit_lib.tools.published); see ModelFamily for why the hash is here.
_CPU_SHA256 = "34222d11f10d965501c2be660187d6f4d23b6a2a40c0ff57fcfbf8790ae62816"
_WEIGHTS = {"cpu": {"weights": "pretrained/shiftvit_cpu.npz", "record": "cpu_full", "sha256": _CPU_SHA256}}
register_family(
    ModelFamily("shiftvit", ShiftViTConfig, PRESETS, build_shiftvit, count_macs, weights=_WEIGHTS)
)
