"""A small ViT and its small-dataset variant (SPT + LSA): lesson 07's baseline.

To test ShiftViT's claim that a parameter-free shift can replace attention, we need
the attention it replaces: a plain Vision Transformer trained with *the same*
:class:`~shiftvit_lib.config.TrainingRecipe`. Following Lee, Lee & Song (2021),
"Vision Transformer for Small-Size Datasets" (and the keras-io example built on it):

* **vanilla ViT**: non-overlapping ``p x p`` patches, each flattened and projected to
  a token; a learned position embedding; ``depth`` pre-norm transformer blocks; a head
  on *all* tokens flattened together (no class token).
* **SPT** (Shifted Patch Tokenization): the image and four copies moved half a patch
  diagonally, stacked (3 -> 15 channels) before cutting patches, so every token also
  sees the pixels across its borders -- a locality prior.
* **LSA** (Locality Self-Attention): a token may not attend to itself, and the softmax
  temperature is learned: both sharpen attention that small data leaves too smooth.

``keras.ops`` only (TensorFlow, JAX and PyTorch backends); every layer is registered
for ``.keras`` saving in safe mode.

    >>> from shiftvit_lib import preset
    >>> from shiftvit_lib.vit import build_vit
    >>> build_vit(preset("vit_quick")).output_shape
    (None, 10)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import keras
from keras import layers, ops

from shiftvit_lib.config import PRESETS, RECIPE_FIELDS, ModelFamily, TrainingRecipe, bounded, register_family
from shiftvit_lib.layers import MLP, ImagePreprocessing, register
from shiftvit_lib.model import initialise_like_spach

# The order of `diagonal_shifts`' copies. "left_up": the *content* moves left and up (zeros
# appear at the right and bottom), as "left" means out[..., j] = x[..., j + 1] in shift.py.
DIAGONAL_DIRECTIONS = ("left_up", "left_down", "right_up", "right_down")

# (dy, dx) per direction, in units of the shift: out[i, j] = x[i + dy*s, j + dx*s].
_DIRECTION_OFFSETS = {"left_up": (1, 1), "left_down": (-1, 1), "right_up": (1, -1), "right_down": (-1, -1)}


def diagonal_shifts(images: Any, shift: int) -> list[Any]:
    """The four diagonal shifts of ``images`` (NHWC) that SPT stacks onto them.

    In the order of :data:`DIAGONAL_DIRECTIONS`; for left-up,
    ``out[:, i, j] = images[:, i + shift, j + shift]``, zero where that lies outside.
    One zero pad, then four ``height x width`` windows read from it: a window further
    down-right moves the content up-left. Static slices only, cheap on every backend.
    """
    images = ops.convert_to_tensor(images)
    if len(images.shape) != 4:
        raise ValueError(
            "diagonal_shifts expects a 4-D NHWC batch (batch, height, width, channels); "
            f"got shape {tuple(images.shape)}. Add a batch axis with x[None]."
        )
    if shift < 0:
        raise ValueError(f"shift must be >= 0, got {shift}.")
    height, width = images.shape[1], images.shape[2]
    padded = ops.pad(images, [[0, 0], [shift, shift], [shift, shift], [0, 0]])
    # In padded coordinates the original pixel (i, j) sits at (i + s, j + s), so
    # x[i + dy*s, j + dx*s] sits at padded row i + s + dy*s: the window starts there.
    starts = [
        (shift + dy * shift, shift + dx * shift)
        for dy, dx in map(_DIRECTION_OFFSETS.get, DIAGONAL_DIRECTIONS)
    ]
    return [padded[:, top : top + height, left : left + width, :] for top, left in starts]


def extract_patches(images: Any, patch_size: int) -> Any:
    """Cut NHWC images into ``p x p`` patches: ``(batch, num_patches, p * p * channels)``.

    Patches in row-major order, values inside one ordered (row, column, channel), as
    ``tf.image.extract_patches``. A reshape splits each image axis into (patch, position
    in the patch), a transpose brings the patch indices together, a reshape flattens.
    """
    images = ops.convert_to_tensor(images)
    _, height, width, channels = images.shape
    if height is None or width is None or channels is None:
        raise ValueError(f"extract_patches needs static spatial/channel sizes, got {images.shape}.")
    if height % patch_size or width % patch_size:
        raise ValueError(f"image size {height}x{width} is not a multiple of patch_size {patch_size}.")
    rows, cols = height // patch_size, width // patch_size
    x = ops.reshape(images, (-1, rows, patch_size, cols, patch_size, channels))
    x = ops.transpose(x, (0, 1, 3, 2, 4, 5))  # (batch, rows, cols, p, p, channels)
    return ops.reshape(x, (-1, rows * cols, patch_size * patch_size * channels))


@register
class PatchTokenizer(layers.Layer):
    """Vanilla ViT tokenizer: ``(b, H, W, C) -> (b, (H/p) * (W/p), projection_dim)``.

    Each flattened ``p x p`` patch becomes a token through one Dense layer (a Conv2D
    with kernel = stride = p computes the same; this shows "an image as a sentence").
    """

    copies = 1  # images stacked on the channel axis before cutting patches

    def __init__(self, patch_size: int, projection_dim: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.patch_size = int(patch_size)
        self.projection = layers.Dense(int(projection_dim), name="projection")

    def build(self, input_shape: tuple[Any, ...]) -> None:
        # extract_patches refuses images that do not tile into patches.
        self.projection.build((None, None, self.patch_size**2 * self.copies * int(input_shape[-1])))

    def call(self, images: Any) -> Any:
        return self.projection(extract_patches(images, self.patch_size))


@register
class ShiftedPatchTokenizer(PatchTokenizer):
    """SPT (Lee et al. 2021, Sec. 3.1): tokenise the image with four shifted copies of itself.

    The image and its :func:`diagonal_shifts` by half a patch are stacked on the
    channel axis (3 -> 15 channels), cut into patches, LayerNorm-ed and projected. A
    token now also sees half a patch beyond each border; the LayerNorm keeps the 5x
    wider patch vector well scaled at initialisation.
    """

    copies = 5  # the image and its four diagonal shifts

    def __init__(
        self,
        patch_size: int,
        projection_dim: int,
        shift: int | None = None,
        layer_norm_epsilon: float = 1e-6,
        **kwargs: Any,
    ) -> None:
        super().__init__(patch_size, projection_dim, **kwargs)
        # Half a patch by default, as in the paper: any token overlaps its neighbours
        # by exactly half their width.
        self.shift = self.patch_size // 2 if shift is None else int(shift)
        self.norm = layers.LayerNormalization(epsilon=layer_norm_epsilon, name="norm")

    def build(self, input_shape: tuple[Any, ...]) -> None:
        super().build(input_shape)
        self.norm.build((None, None, self.projection.kernel.shape[0]))

    def call(self, images: Any) -> Any:
        stacked = ops.concatenate([images, *diagonal_shifts(images, self.shift)], axis=-1)
        return self.projection(self.norm(extract_patches(stacked, self.patch_size)))


@register
class PositionEmbedding(layers.Layer):
    """Add a learned vector to every token position: ``(b, n, d) -> (b, n, d)``.

    Attention treats its tokens as a *set*; this ``n x d`` table is all that tells the
    model where a patch came from.
    """

    def __init__(self, initializer_stddev: float = 0.02, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # 0.02 is the usual ViT/BERT choice: small next to unit-scale tokens.
        self.initializer_stddev = float(initializer_stddev)

    def build(self, input_shape: tuple[Any, ...]) -> None:
        _, num_tokens, dim = input_shape
        if num_tokens is None:
            raise ValueError(f"{self.name}: the number of tokens must be static.")
        initializer = keras.initializers.RandomNormal(stddev=self.initializer_stddev)
        self.embedding = self.add_weight(name="embedding", shape=(num_tokens, dim), initializer=initializer)

    def call(self, tokens: Any) -> Any:
        # (n, d) broadcasts over the batch axis.
        return tokens + ops.cast(self.embedding, tokens.dtype)


@register
class MultiHeadSelfAttention(layers.Layer):
    """Multi-head self-attention, written out; ``locality=True`` gives LSA.

    Per head, for tokens ``x`` of shape ``(b, n, d)``::

        q, k, v = x Wq, x Wk, x Wv                          # (b, n, key_dim) each
        weights = softmax(q k^T / T over the keys)          # (b, n, n), rows sum to 1
        out     = weights v                                 # heads concatenated, then Wo

    Vanilla: ``T = sqrt(key_dim)``, which keeps the logits' variance near 1. LSA: ``T``
    is a trainable scalar starting at ``sqrt(key_dim)`` (training may sharpen the
    softmax), and the diagonal is masked, so ``weights[i, i] == 0``: query and key
    of a token are projections of the same vector, so the self-pair would soak up
    attention that the residual connection makes redundant.

    ``call(x, training=None, return_attention_scores=False)``; with
    ``return_attention_scores=True`` it also returns the ``(b, heads, n, n)`` weights.
    """

    # exp(-1e9) is exactly 0 in float32 and, unlike -inf, cannot give NaN when a whole
    # row is masked (a 1-token sequence). The softmax runs in float32 (see `call`).
    MASK_VALUE = -1e9

    def __init__(
        self, num_heads: int, key_dim: int, locality: bool = False, dropout: float = 0.0, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.num_heads, self.key_dim, self.locality = int(num_heads), int(key_dim), bool(locality)
        # One Dense per role; each produces all heads at once (reshaped in `call`).
        self.query_dense, self.key_dense, self.value_dense = (
            layers.Dense(self.num_heads * self.key_dim, name=role) for role in ("query", "key", "value")
        )
        self.attention_dropout = layers.Dropout(dropout, name="attention_dropout")

    def build(self, input_shape: tuple[Any, ...]) -> None:
        dim = int(input_shape[-1])
        for dense in (self.query_dense, self.key_dense, self.value_dense):
            dense.build((None, None, dim))
        self.output_dense = layers.Dense(dim, name="output")
        self.output_dense.build((None, None, self.num_heads * self.key_dim))
        self.temperature = None
        if self.locality:  # a single scalar shared by all heads, as in the paper
            start = keras.initializers.Constant(math.sqrt(self.key_dim))
            self.temperature = self.add_weight(name="temperature", shape=(), initializer=start)

    def call(self, x: Any, training: bool | None = None, return_attention_scores: bool = False) -> Any:
        batch, n = ops.shape(x)[0], ops.shape(x)[1]

        def split_heads(projected: Any) -> Any:
            # (b, n, heads * key_dim) -> (b, heads, n, key_dim): heads lead, so that the two
            # products below are plain batched matmuls (XLA on a CPU runs an einsum with the
            # batch axes in the middle several times slower).
            return ops.transpose(
                ops.reshape(projected, (batch, n, self.num_heads, self.key_dim)), (0, 2, 1, 3)
            )

        q, k, v = (split_heads(dense(x)) for dense in (self.query_dense, self.key_dense, self.value_dense))
        # Every query against every key, per head: (b, heads, n_query, n_key). Softmax in
        # float32: it exponentiates, and under mixed precision float16 would overflow for
        # logits above ~11 and round small weights to zero.
        logits = ops.cast(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))), "float32")
        temperature = ops.cast(self.temperature, "float32") if self.locality else math.sqrt(self.key_dim)
        logits = logits / temperature
        if self.locality:  # mask the self-pairs, the diagonal (i, i)
            logits = ops.where(ops.cast(ops.eye(n), "bool"), self.MASK_VALUE, logits)
        weights = ops.cast(ops.softmax(logits, axis=-1), self.compute_dtype)
        dropped = self.attention_dropout(weights, training=training)
        # Weighted sum of values, heads concatenated back: (b, n, heads * key_dim).
        out = ops.transpose(ops.matmul(dropped, v), (0, 2, 1, 3))
        out = self.output_dense(ops.reshape(out, (batch, n, self.num_heads * self.key_dim)))
        return (out, weights) if return_attention_scores else out


@register
class TransformerBlock(layers.Layer):
    """Pre-norm transformer encoder block: ``(b, n, d) -> (b, n, d)``::

        x = x + Dropout(Attention(LayerNorm(x)))          # tokens talk to each other
        x = x + MLP(LayerNorm(x))                          # each token thinks alone

    A ShiftViT block keeps the second line (the same :class:`~shiftvit_lib.layers.MLP`)
    and replaces the first by the shift.
    """

    def __init__(
        self,
        num_heads: int,
        key_dim: int,
        mlp_ratio: float = 2.0,
        dropout: float = 0.1,
        locality: bool = False,
        layer_norm_epsilon: float = 1e-6,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.norm1 = layers.LayerNormalization(epsilon=layer_norm_epsilon, name="norm1")
        # Dropout on the attention weights too, as in the keras-io example.
        self.attention = MultiHeadSelfAttention(
            num_heads, key_dim, locality=locality, dropout=dropout, name="attention"
        )
        self.attention_output_dropout = layers.Dropout(dropout, name="attention_output_dropout")
        self.norm2 = layers.LayerNormalization(epsilon=layer_norm_epsilon, name="norm2")
        self.mlp = MLP(mlp_ratio, dropout, name="mlp")

    def build(self, input_shape: tuple[Any, ...]) -> None:
        for sublayer in (self.norm1, self.attention, self.norm2, self.mlp):
            sublayer.build(input_shape)

    def call(self, x: Any, training: bool | None = None) -> Any:
        attended = self.attention(self.norm1(x), training=training)
        x = x + self.attention_output_dropout(attended, training=training)
        return x + self.mlp(self.norm2(x), training=training)


@dataclass(frozen=True)
class ViTConfig(TrainingRecipe):
    """A (SPT/LSA) ViT: its architecture, plus the :class:`TrainingRecipe` it is trained with.

    The recipe is the same type as ShiftViT's, so one trainer serves both and lesson 07
    can check field by field that they are trained alike. The defaults are the
    ``"vit_cifar"`` preset: the keras-io small-dataset ViT's transformer with the
    ShiftViT seed recipe.
    """

    # 48 px / patch 4 = 12 x 12 = 144 tokens: the same token grid as ShiftViT's first
    # stage and the same sequence length as the keras-io example (patch 6 on 72 px).
    patch_size: int = bounded(4, 1)
    projection_dim: int = bounded(64, 1)
    num_heads: int = bounded(4, 1)
    # keras-io uses key_dim = projection_dim; None means projection_dim // num_heads.
    key_dim: int | None = bounded(64, 1)
    depth: int = bounded(8, 1)
    mlp_ratio: float = bounded(2.0, 0, above=True)
    dropout: float = bounded(0.1, 0, 1)
    head_units: tuple[int, ...] = (2048, 1024)
    head_dropout: float = bounded(0.5, 0, 1)
    use_spt: bool = False
    use_lsa: bool = False
    layer_norm_epsilon: float = bounded(1e-6, 0, above=True)

    def combination_problems(self) -> list[str]:
        problems = super().combination_problems()
        if self.image_size % self.patch_size:
            problems.append(
                f"image_size ({self.image_size}) must be a multiple of patch_size ({self.patch_size})"
            )
        if self.key_dim is None and self.projection_dim % self.num_heads:
            problems.append(
                f"key_dim=None needs projection_dim ({self.projection_dim}) divisible by "
                f"num_heads ({self.num_heads})"
            )
        return problems

    @property
    def head_key_dim(self) -> int:
        """The per-head query/key/value size actually used."""
        return self.key_dim if self.key_dim is not None else self.projection_dim // self.num_heads

    @property
    def num_tokens(self) -> int:
        """Tokens per image: ``(image_size / patch_size) ** 2``."""
        return (self.image_size // self.patch_size) ** 2

    @property
    def model_name(self) -> str:
        """``"vit"``, ``"vit_spt"``, ``"vit_lsa"`` or ``"vit_spt_lsa"``."""
        return "vit" + ("_spt" if self.use_spt else "") + ("_lsa" if self.use_lsa else "")


# Presets hold only what differs from the ViTConfig defaults (= "vit_cifar").
VIT_PRESETS: dict[str, dict[str, Any]] = {
    # Vanilla ViT, keras-io transformer sizes, ShiftViT seed input pipeline + recipe.
    "vit_cifar": dict(),
    # The same with the two small-dataset fixes switched on.
    "vit_spt_lsa_cifar": dict(use_spt=True, use_lsa=True),
    # Tiny and fast for CPU tests and CI, with the recipe of ShiftViT's `quick`: 16 px crops,
    # patch 4 -> 16 tokens.
    "vit_quick": dict(
        {key: value for key, value in PRESETS["quick"].items() if key in RECIPE_FIELDS},  # its recipe
        resize_to=18,
        image_size=16,
        patch_size=4,
        projection_dim=16,
        num_heads=2,
        key_dim=None,
        depth=2,
        dropout=0.0,
        head_units=(32,),
        head_dropout=0.0,
    ),
}
VIT_PRESETS["vit_spt_lsa_quick"] = dict(VIT_PRESETS["vit_quick"], use_spt=True, use_lsa=True)
# For lesson 07's comparison on a 2-core CPU, beside ShiftViT's `cpu` preset (32 px crops).
# Sized by measured speed, so the five models fit in about an hour: with JAX on that CPU,
# ShiftViT `cpu` trained at 712 images/s; a ViT of 6 blocks of width 64 on patch-4 tokens
# (64 tokens) at 273, the same ViT at width 128 on patch-8 tokens (16 tokens) at 420.
# Attention keeps every token at full width through every block, where ShiftViT's
# stages shrink the grid, so a ViT of equal cost is coarser. The keras-io head (2048,
# 1024 units on the flattened tokens) would alone hold 4.3M parameters here; one
# layer of 128 units keeps the model near ShiftViT's size. Dropout off: it cost 15 %
# of the speed, and the short schedule underfits rather than overfits.
VIT_PRESETS["vit_cpu"] = dict(
    resize_to=36,
    image_size=32,
    patch_size=8,
    projection_dim=128,
    num_heads=4,
    key_dim=None,
    depth=6,
    dropout=0.0,
    head_units=(128,),
    head_dropout=0.1,
)
VIT_PRESETS["vit_spt_lsa_cpu"] = dict(VIT_PRESETS["vit_cpu"], use_spt=True, use_lsa=True)


def classifier_head(config: ViTConfig) -> keras.Sequential:
    """keras-io's ViT head, Keras layers in sequence: ``(b, n, d) -> (b, num_classes)`` logits.

    LayerNorm, then *all* tokens flattened (no class token, no pooling) into an MLP of
    ``config.head_units``. With 144 tokens of 64 numbers its first ``Dense(2048)`` alone
    holds ~18.9 M weights, most of the model (ShiftViT pools before its classifier).
    """
    hidden = []
    for i, units in enumerate(config.head_units):
        hidden += [
            layers.Dense(units, activation="gelu", name=f"hidden_{i}"),
            layers.Dropout(config.head_dropout, name=f"hidden_dropout_{i}"),
        ]
    return keras.Sequential(
        [
            layers.LayerNormalization(epsilon=config.layer_norm_epsilon, name="norm"),
            layers.Flatten(name="flatten"),
            layers.Dropout(config.head_dropout, name="input_dropout"),
            *hidden,
            # Logits stay float32 under mixed precision, so the loss is computed accurately.
            layers.Dense(config.num_classes, dtype="float32", name="logits"),
        ],
        name="head",
    )


def build_vit(config: ViTConfig, *, seed: int | None = None) -> keras.Model:
    """Build the ViT (vanilla, SPT, LSA or SPT + LSA) that ``config`` describes.

    Raw pixels ``(batch, 32, 32, 3)`` in [0, 255] -> ``(batch, num_classes)`` logits::

        images -> ImagePreprocessing (the recipe's, as ShiftViT's)
               -> PatchTokenizer | ShiftedPatchTokenizer -> PositionEmbedding
               -> TransformerBlock x depth (vanilla attention | LSA) -> classifier_head

    ``seed`` seeds the random crop and flip (weights follow ``keras.utils.set_random_seed``).
    """
    if not isinstance(config, ViTConfig):
        raise TypeError(
            f"build_vit expects a ViTConfig (e.g. preset('vit_cifar')), got {type(config).__name__}"
        )
    inputs = keras.Input(shape=config.input_shape, name="images")
    x = ImagePreprocessing.for_pipeline(config, seed=seed)(inputs)
    epsilon = dict(layer_norm_epsilon=config.layer_norm_epsilon)
    if config.use_spt:
        name = "shifted_patch_tokenizer"
        tokenizer = ShiftedPatchTokenizer(config.patch_size, config.projection_dim, name=name, **epsilon)
    else:
        tokenizer = PatchTokenizer(config.patch_size, config.projection_dim, name="patch_tokenizer")
    x = PositionEmbedding(name="position_embedding")(tokenizer(x))
    block = dict(mlp_ratio=config.mlp_ratio, dropout=config.dropout, locality=config.use_lsa, **epsilon)
    for i in range(config.depth):
        x = TransformerBlock(config.num_heads, config.head_key_dim, name=f"block_{i}", **block)(x)
    head = classifier_head(config)
    logits = head(x)
    model = keras.Model(inputs, logits, name=config.model_name)
    if config.init == "spach":
        initialise_like_spach(model, seed=seed)
    return model


def count_vit_macs(config: ViTConfig) -> dict[str, int]:
    """Multiply-accumulates of one forward pass, per part, counted as :func:`~shiftvit_lib.model.count_macs`.

    With ``n`` tokens of width ``d``, ``h`` heads of size ``k`` and MLP width ``r * d``,
    one block costs::

        q, k, v and output projections    4 * n * d * h * k
        Q K^T and weights x V             2 * h * n * n * k     <- grows as n squared
        MLP                               2 * n * d * r * d

    The ``n * n`` term is what ShiftViT's shift removes: it costs no MACs at all.
    """
    n, d = config.num_tokens, config.projection_dim
    heads, key_dim = config.num_heads, config.head_key_dim
    inner, hidden = heads * key_dim, int(config.mlp_ratio * d)  # as layers.MLP
    patch_dim = config.patch_size**2 * config.input_shape[-1] * (5 if config.use_spt else 1)
    macs = {"patch_projection": n * patch_dim * d}
    macs["attention_projections"] = config.depth * 4 * n * d * inner
    macs["attention_matmuls"] = config.depth * 2 * heads * n * n * key_dim
    macs["mlp"] = config.depth * 2 * n * d * hidden
    widths = [n * d, *config.head_units, config.num_classes]  # the flattened tokens, then each layer
    macs["classifier"] = sum(inputs * outputs for inputs, outputs in zip(widths[:-1], widths[1:]))
    macs["total"] = sum(macs.values())
    return macs


register_family(ModelFamily("vit", ViTConfig, VIT_PRESETS, build_vit, count_vit_macs))
