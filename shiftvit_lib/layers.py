"""The building blocks of ShiftViT as Keras layers (taught in lesson 03).

Every layer uses ``keras.ops`` only and is registered for serialization, so a model
saved as ``.keras`` loads again in safe mode on any backend. No layer writes a
``get_config``: Keras records the constructor's arguments (plain numbers, strings,
lists) and rebuilds a layer from them.

Block anatomy (as in the official SPACH code)::

    x = shift(x)                                   # no parameters
    x = x + DropPath(MLP(LayerNorm(x)))            # the only learned part

A stage stacks such blocks at one resolution; :class:`PatchMerging` then halves
the resolution and doubles the channels for the next stage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras
import numpy as np
from keras import layers, ops

from shiftvit_lib.shift import get_shift_function

register = keras.saving.register_keras_serializable(package="shiftvit_lib")


def make_norm(kind: str, epsilon: float, name: str | None = None) -> layers.Layer:
    """LayerNorm over channels (``"layer"``) or GroupNorm with one group (``"group"``).

    SPACH normalises NCHW maps with ``GroupNorm(1)``, i.e. over channels *and*
    positions; ``"layer"`` normalises each position over its channels, as keras-io.
    Both have one scale and one offset per channel.
    """
    if kind == "layer":
        return layers.LayerNormalization(epsilon=epsilon, name=name)
    if kind == "group":
        return layers.GroupNormalization(groups=1, epsilon=epsilon, name=name)
    raise ValueError(f"Unknown norm {kind!r}; use 'layer' or 'group'.")


@register
class BranchingRandAugment(layers.RandAugment):
    """Keras' ``RandAugment`` computing only the operations it drew (issue 39).

    Keras' layer computes all its operations (11) for each of ``num_ops`` draws and keeps
    the drawn one with ``where``: on a GPU, 22 transforms a step for 2. ``ops.switch`` runs
    the drawn branch only; same draws, same images (tests/core/test_recipe.py).
    """

    def transform_images(self, images: Any, transformation: Any, training: bool = True) -> Any:
        images = self.backend.cast(images, self.compute_dtype)
        if not training:
            return images
        branches = [
            lambda x, layer=getattr(self, name), value=value: self.backend.cast(  # noqa: B008 - binds each branch
                layer.transform_images(x, value), self.compute_dtype
            )
            for name, value in transformation["transforms"].items()
        ]
        for index in range(self.num_ops):
            images = self.backend.core.switch(transformation["layer_idxes"][index], branches, images)
        return images


@register
class ImagePreprocessing(layers.Layer):
    """Resize, crop, flip and rescale images inside the model.

    Training (with ``augment``): resize to ``resize_to``, take a random
    ``crop_size`` crop per image, flip half of the images horizontally; then,
    if asked, Keras' ``RandAugment`` (``rand_augment_ops`` operations per batch)
    and ``RandomErasing`` (a box blanked in each image with probability
    ``random_erasing``).
    Inference: resize and take the *centre* crop, so ``predict`` is deterministic.
    We crop explicitly instead of relying on ``keras.layers.RandomCrop`` at inference,
    whose behaviour changed between Keras releases (keras-team/keras#21868).

    Input: uint8 or float pixels in [0, 255]. Output: float pixels in [0, 1].
    """

    def __init__(
        self,
        resize_to: int = 52,
        crop_size: int = 48,
        flip: bool = True,
        augment: bool = True,
        seed: int | None = None,
        rand_augment_ops: int = 0,
        rand_augment_factor: float = 0.5,
        random_erasing: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if crop_size > resize_to:
            raise ValueError(f"crop_size ({crop_size}) cannot exceed resize_to ({resize_to}).")
        self.resize_to, self.crop_size, self.flip, self.augment = resize_to, crop_size, flip, augment
        self.seed_generator = keras.random.SeedGenerator(seed)
        # Both work on [0, 255] float32 pixels (also under a mixed-precision policy),
        # before the rescale at the end of call().
        pixels = dict(value_range=(0, 255), seed=seed, dtype="float32")
        self.rand_augment = None
        if rand_augment_ops:
            self.rand_augment = BranchingRandAugment(
                num_ops=int(rand_augment_ops), factor=rand_augment_factor, name="rand_augment", **pixels
            )
        if self.rand_augment is not None and keras.backend.backend() == "jax":
            # Keras marks RandomRotation and RandomShear (inside RandAugment) as not
            # XLA-safe because of TensorFlow's image-transform kernel, which makes
            # jit_compile="auto" turn XLA off for the whole model. On JAX the same
            # transforms are plain jax.numpy and compile; tests/core/test_layers.py trains
            # such a model under jit to keep this claim checked.
            for sublayer in self.rand_augment._flatten_layers(include_self=True):
                sublayer.supports_jit = True
        # Keras samples each image's erasing probability in [0, factor) for a single
        # float; a (p, p) pair makes it exactly p.
        self.eraser = None
        if random_erasing:
            self.eraser = layers.RandomErasing(
                factor=(random_erasing, random_erasing), name="random_erasing", **pixels
            )

    def build(self, input_shape: Sequence[Any]) -> None:
        cropped = (input_shape[0], self.crop_size, self.crop_size, input_shape[-1])
        for augmentation in (self.rand_augment, self.eraser):
            if augmentation is not None:
                augmentation.build(cropped)

    def call(self, images: Any, training: bool | None = None) -> Any:
        x = ops.cast(images, "float32")
        if tuple(x.shape[1:3]) != (self.resize_to, self.resize_to):
            x = ops.image.resize(x, (self.resize_to, self.resize_to), interpolation="bilinear")
        if training and self.augment:
            x = self._random_crop(x)
            if self.flip:
                x = self._random_flip(x)
            if self.rand_augment is not None:
                x = ops.clip(self.rand_augment(x, training=True), 0.0, 255.0)
            if self.eraser is not None:
                x = self.eraser(x, training=True)
        else:
            x = self._centre_crop(x)
        return ops.cast(x / 255.0, self.compute_dtype)

    def _centre_crop(self, x: Any) -> Any:
        start = (self.resize_to - self.crop_size) // 2
        return x[:, start : start + self.crop_size, start : start + self.crop_size, :]

    def _random_crop(self, x: Any) -> Any:
        # One offset per image, gathered along rows then columns: works on every
        # backend and compiles under XLA (no Python loop over the batch).
        if self.crop_size == self.resize_to:
            return x
        batch = ops.shape(x)[0]
        offsets = keras.random.randint(
            (batch, 2), 0, self.resize_to - self.crop_size + 1, seed=self.seed_generator
        )
        positions = offsets[:, :, None] + ops.arange(self.crop_size, dtype=offsets.dtype)  # (batch, 2, crop)
        rows, cols = positions[:, 0], positions[:, 1]
        channels = x.shape[-1]
        rows = ops.broadcast_to(rows[:, :, None, None], (batch, self.crop_size, self.resize_to, channels))
        x = ops.take_along_axis(x, rows, axis=1)
        cols = ops.broadcast_to(cols[:, None, :, None], (batch, self.crop_size, self.crop_size, channels))
        return ops.take_along_axis(x, cols, axis=2)

    def _random_flip(self, x: Any) -> Any:
        batch = ops.shape(x)[0]
        coin = keras.random.uniform((batch, 1, 1, 1), seed=self.seed_generator)
        return ops.where(coin < 0.5, ops.flip(x, axis=2), x)

    @classmethod
    def for_pipeline(cls, pipeline: Any, seed: int | None = None) -> ImagePreprocessing:
        """The layer of a config's input pipeline (:class:`shiftvit_lib.config.InputPipeline`)."""
        same = ("resize_to", "flip", "augment", "rand_augment_ops", "rand_augment_factor", "random_erasing")
        options = {field: getattr(pipeline, field) for field in same}
        return cls(crop_size=pipeline.image_size, seed=seed, name="preprocessing", **options)


@register
class MLP(layers.Layer):
    """Two dense layers with GELU between them, applied to every position.

    Channels go ``C -> mlp_ratio * C -> C``. This is the block's only learned part.
    """

    def __init__(self, mlp_ratio: float = 2.0, dropout: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.mlp_ratio = mlp_ratio
        self.drop = layers.Dropout(dropout)

    def build(self, input_shape: Sequence[Any]) -> None:
        channels = int(input_shape[-1])
        self.expand = layers.Dense(int(channels * self.mlp_ratio), activation="gelu", name="expand")
        self.project = layers.Dense(channels, name="project")
        self.expand.build(input_shape)
        self.project.build((*input_shape[:-1], int(channels * self.mlp_ratio)))

    def call(self, x: Any, training: bool | None = None) -> Any:
        x = self.drop(self.expand(x), training=training)
        return self.drop(self.project(x), training=training)


@register
class DropPath(layers.Layer):
    """Stochastic depth: while training, drop a sample's whole residual branch.

    Each sample keeps its branch with probability ``1 - rate``; kept branches are
    scaled by ``1 / (1 - rate)`` so the expected output is unchanged. At inference
    it is the identity.
    """

    def __init__(self, rate: float = 0.0, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"DropPath rate must lie in [0, 1), got {rate}.")
        self.rate = float(rate)
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, x: Any, training: bool | None = None) -> Any:
        if not training or self.rate == 0.0:
            return x
        keep = 1.0 - self.rate
        shape = (ops.shape(x)[0],) + (1,) * (len(x.shape) - 1)
        mask = ops.floor(keep + keras.random.uniform(shape, seed=self.seed_generator, dtype=x.dtype))
        return x / keep * mask


@register
class ShiftViTBlock(layers.Layer):
    """shift -> norm -> MLP -> drop path -> residual (the official block order).

    Args:
        num_div, shift_pixel: see :func:`shiftvit_lib.shift.shift_channels`.
        shift: ``"official"`` (correct), ``"keras_io"`` (the example's, moves
            nothing) or ``"none"`` (identity), for ablations.
        shift_implementation: ``"slice"`` or ``"roll"`` (same result, speed differs).
        mlp_ratio, mlp_dropout: the MLP's width factor and dropout.
        drop_path_rate: this block's stochastic-depth rate.
        norm, epsilon: normalisation kind and epsilon.
    """

    def __init__(
        self,
        num_div: int = 12,
        shift_pixel: int = 1,
        shift: str = "official",
        mlp_ratio: float = 2.0,
        mlp_dropout: float = 0.0,
        drop_path_rate: float = 0.0,
        shift_implementation: str = "slice",
        norm: str = "layer",
        epsilon: float = 1e-5,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        # Kept for lesson 04's check of a hand-written builder (notebook.checks).
        self.num_div, self.shift_pixel, self.shift = num_div, shift_pixel, shift
        self.mlp_ratio, self.mlp_dropout, self.drop_path_rate = mlp_ratio, mlp_dropout, drop_path_rate
        self.shift_function = get_shift_function(shift, shift_implementation)
        self.norm = make_norm(norm, epsilon, name="norm")
        self.mlp = MLP(mlp_ratio, mlp_dropout, name="mlp")
        self.drop_path = DropPath(drop_path_rate, name="drop_path")

    def build(self, input_shape: Sequence[Any]) -> None:
        self.norm.build(input_shape)
        self.mlp.build(input_shape)

    def call(self, x: Any, training: bool | None = None) -> Any:
        x = self.shift_function(x, self.num_div, self.shift_pixel)
        return x + self.drop_path(self.mlp(self.norm(x), training=training), training=training)


@register
class PatchMerging(layers.Layer):
    """Norm, then a 2x2 stride-2 convolution without bias: half the size, twice the channels."""

    def __init__(self, norm: str = "layer", epsilon: float = 1e-5, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.norm = make_norm(norm, epsilon, name="norm")

    def build(self, input_shape: Sequence[Any]) -> None:
        channels = int(input_shape[-1])
        # "same" padding keeps odd sizes working (e.g. 3x3 -> 2x2).
        self.reduction = layers.Conv2D(
            2 * channels, 2, strides=2, padding="same", use_bias=False, name="reduction"
        )
        self.norm.build(input_shape)
        self.reduction.build(input_shape)

    def call(self, x: Any) -> Any:
        return self.reduction(self.norm(x))


@register
class ShiftViTStage(layers.Layer):
    """Blocks at one resolution, optionally followed by patch merging.

    Args:
        drop_path_rates: one rate per block (its length is the stage's depth).
        merge: add a :class:`PatchMerging` at the end (all stages but the last).
        **block_options: passed to every :class:`ShiftViTBlock` (``num_div``, ``shift``...);
            ``norm`` and ``epsilon`` also to the patch merging.
    """

    def __init__(
        self,
        drop_path_rates: Sequence[float] = (0.0,),
        merge: bool = True,
        *,
        name: str | None = None,
        dtype: Any = None,
        trainable: bool = True,
        **block_options: Any,
    ) -> None:
        super().__init__(name=name, dtype=dtype, trainable=trainable)
        norm = dict(norm=block_options.get("norm", "layer"), epsilon=block_options.get("epsilon", 1e-5))
        self.blocks = [
            ShiftViTBlock(drop_path_rate=float(rate), name=f"block_{index + 1}", **block_options)
            for index, rate in enumerate(drop_path_rates)
        ]
        self.patch_merging = PatchMerging(**norm, name="patch_merging") if merge else None

    def build(self, input_shape: Sequence[Any]) -> None:
        for block in self.blocks:
            block.build(input_shape)
        if self.patch_merging is not None:
            self.patch_merging.build(input_shape)

    def call(self, x: Any, training: bool | None = None) -> Any:
        for block in self.blocks:
            x = block(x, training=training)
        if self.patch_merging is not None:
            x = self.patch_merging(x)
        return x


def drop_path_rates(depths: Sequence[int], max_rate: float, schedule: str = "network") -> list[list[float]]:
    """Stochastic-depth rate of every block, grouped by stage.

    ``"network"`` (official SPACH): one linear ramp from 0 to ``max_rate`` over all
    blocks, so deep blocks are dropped most. ``"per_stage"`` (keras-io): the ramp
    restarts in every stage.

    >>> drop_path_rates([2, 2], 0.3)
    [[0.0, 0.1], [0.2, 0.3]]
    >>> drop_path_rates([2, 2], 0.3, "per_stage")
    [[0.0, 0.3], [0.0, 0.3]]
    """
    if schedule == "network":
        ramp = np.linspace(0.0, max_rate, sum(depths)).tolist()
        bounds = np.cumsum([0, *depths])
        return [[round(r, 10) for r in ramp[a:b]] for a, b in zip(bounds[:-1], bounds[1:])]
    if schedule == "per_stage":
        return [[round(r, 10) for r in np.linspace(0.0, max_rate, depth).tolist()] for depth in depths]
    raise ValueError(f"Unknown drop-path schedule {schedule!r}; use 'network' or 'per_stage'.")
