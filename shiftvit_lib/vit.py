"""A small vanilla ViT and its small-dataset variant (SPT + LSA): lesson 07's baseline.

ShiftViT's claim is that attention can be replaced by a parameter-free shift. To
test that claim on CIFAR we need the thing being replaced: a plain Vision
Transformer trained with *the same* input pipeline and recipe. This module builds
two of them, following Lee, Lee & Song (2021), "Vision Transformer for Small-Size
Datasets", as popularised by the keras-io example "Train a ViT on small datasets"
(CIFAR-100, 50 epochs: 53.1 % top-1 for the vanilla ViT, 56.1 % with SPT + LSA):

* **vanilla ViT** -- cut the image into non-overlapping ``p x p`` patches, flatten
  each one, project it linearly to ``projection_dim`` numbers (a *token*), add a
  learned position embedding, run ``depth`` pre-norm transformer blocks, and
  classify from *all* tokens flattened together (no class token).
* **SPT (Shifted Patch Tokenization)** -- before cutting patches, concatenate the
  image with four copies of itself moved half a patch diagonally (3 -> 15
  channels). Every token then also sees the pixels just across its borders: the
  receptive field of a token grows -- a locality prior that a small dataset
  struggles to teach on its own.
* **LSA (Locality Self-Attention)** -- two changes to the attention softmax:
  a token may not attend to itself (a diagonal mask), and the softmax temperature
  is *learned* instead of fixed at ``sqrt(key_dim)``. Both sharpen the attention
  distribution, which a ViT trained on little data tends to leave smooth (close to
  uniform over the other tokens) -- the model then fails to focus on what matters.

Notice the family resemblance with ShiftViT: SPT moves *whole images* by half a
patch before tokenising; ShiftViT moves *channel groups* of the feature map by one
pixel inside every block. Both inject locality with shifts, for free.

Everything below is written with ``keras.ops`` only, so the model runs unchanged
on the TensorFlow, JAX and PyTorch backends, and every layer is registered for
``.keras`` saving (``safe_mode=True`` works: no lambdas, no pickled code).

Example::

    >>> from shiftvit_lib.vit import vit_preset, build_vit
    >>> model = build_vit(vit_preset("vit_quick"))
    >>> model.output_shape
    (None, 10)
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import keras
from keras import layers, ops

from shiftvit_lib.layers import ImagePreprocessing

_PACKAGE = "shiftvit_lib"

# The order in which `diagonal_shifts` returns the four moved copies. "left_up"
# means the *content* moves left and up (so zeros appear at the right and bottom
# borders) -- the same convention as `shiftvit_lib.shift`, where "left" means
# ``out[..., j] = x[..., j + 1]``.
DIAGONAL_DIRECTIONS = ("left_up", "left_down", "right_up", "right_down")

# (dy, dx) per direction, in units of the shift: out[i, j] = x[i + dy*s, j + dx*s].
_DIRECTION_OFFSETS = {
    "left_up": (1, 1),
    "left_down": (-1, 1),
    "right_up": (1, -1),
    "right_down": (-1, -1),
}


# =====================================================================================
# Pure functions: easy to test, easy to plot
# =====================================================================================
def diagonal_shifts(images: Any, shift: int) -> list[Any]:
    """Return the four diagonal half-patch shifts that SPT stacks onto the image.

    Args:
        images: ``(batch, height, width, channels)`` tensor or array.
        shift: how many pixels to move (SPT uses ``patch_size // 2``), ``>= 0``.

    Returns:
        A list of four tensors shaped like ``images``, in the order of
        :data:`DIAGONAL_DIRECTIONS`: left-up, left-down, right-up, right-down.
        For left-up, ``out[:, i, j] = images[:, i + shift, j + shift]``; pixels
        that would come from outside the image are zero.

    How: pad ``shift`` zeros on every side once, then read a ``height x width``
    window out of the padded image. Reading the window ``shift`` pixels further
    down-right than the original position moves the content up-left, and so on.
    One pad and four static slices -- no gathers, no rolls, so the same code is
    cheap on every backend.
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
    shifted = []
    for direction in DIAGONAL_DIRECTIONS:
        dy, dx = _DIRECTION_OFFSETS[direction]
        # In padded coordinates the original pixel (i, j) sits at (i + shift, j + shift),
        # so x[i + dy*s, j + dx*s] sits at padded row i + s + dy*s: start there.
        top, left = shift + dy * shift, shift + dx * shift
        shifted.append(padded[:, top : top + height, left : left + width, :])
    return shifted


def extract_patches(images: Any, patch_size: int) -> Any:
    """Cut images into non-overlapping square patches and flatten each one.

    Args:
        images: ``(batch, height, width, channels)``; height and width must be
            multiples of ``patch_size``.
        patch_size: side length ``p`` of a patch in pixels.

    Returns:
        ``(batch, num_patches, p * p * channels)`` with patches in row-major order
        (left to right, then top to bottom) and the values inside a patch ordered
        (row, column, channel) -- the layout of ``tf.image.extract_patches``.

    A reshape splits each image axis into (patch index, position inside the patch);
    a transpose brings the two patch indices together; a last reshape flattens.
    No pixel is copied twice and nothing is learned: this is pure bookkeeping.
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


# =====================================================================================
# Tokenizers
# =====================================================================================
@keras.saving.register_keras_serializable(package=_PACKAGE)
class PatchTokenizer(layers.Layer):
    """Vanilla ViT tokenizer: non-overlapping patches -> flatten -> linear projection.

    ``(batch, H, W, C)`` -> ``(batch, (H/p) * (W/p), projection_dim)``.

    A ``p x p`` patch becomes one token through a single Dense layer. (A Conv2D with
    ``kernel_size = strides = p`` computes exactly the same thing; the explicit
    version makes the "image as a sequence of words" idea visible and is shared
    with :class:`ShiftedPatchTokenizer`.)
    """

    def __init__(self, patch_size: int, projection_dim: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.patch_size = int(patch_size)
        self.projection_dim = int(projection_dim)
        self.projection = layers.Dense(self.projection_dim, name="projection")

    def _patch_dim(self, input_shape: tuple[Any, ...]) -> int:
        return self.patch_size * self.patch_size * int(input_shape[-1])

    def build(self, input_shape: tuple[Any, ...]) -> None:
        _, height, width, _ = input_shape
        if height % self.patch_size or width % self.patch_size:
            raise ValueError(
                f"{self.name}: image size {height}x{width} is not a multiple of patch_size {self.patch_size}."
            )
        self.projection.build((None, None, self._patch_dim(input_shape)))

    def call(self, images: Any) -> Any:
        return self.projection(extract_patches(images, self.patch_size))

    def compute_output_shape(self, input_shape: tuple[Any, ...]) -> tuple[Any, ...]:
        batch, height, width, _ = input_shape
        num = (height // self.patch_size) * (width // self.patch_size)
        return (batch, num, self.projection_dim)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(patch_size=self.patch_size, projection_dim=self.projection_dim)
        return config


@keras.saving.register_keras_serializable(package=_PACKAGE)
class ShiftedPatchTokenizer(layers.Layer):
    """SPT: tokenise the image together with four diagonally shifted copies of itself.

    Steps (Lee et al. 2021, Sec. 3.1):

    1. ``diagonal_shifts(images, shift)`` -- move the image half a patch towards each
       corner (zero fill); concatenate the original and the four copies along
       channels: 3 -> 15 channels.
    2. Cut into ``p x p`` patches and flatten: ``p * p * 15`` numbers per token.
    3. LayerNorm over those numbers, then a Dense projection to ``projection_dim``.

    Why: a vanilla token only sees its own ``p x p`` pixels; after SPT it also sees
    half a patch beyond every border, so neighbouring tokens overlap and the
    tokenizer is more "convolutional" -- a locality prior small datasets need.
    The LayerNorm keeps the now 5x wider patch vector well scaled at initialisation.
    """

    def __init__(
        self,
        patch_size: int,
        projection_dim: int,
        shift: int | None = None,
        layer_norm_epsilon: float = 1e-6,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.patch_size = int(patch_size)
        self.projection_dim = int(projection_dim)
        # Half a patch by default, as in the paper: any token overlaps its neighbours
        # by exactly half their width.
        self.shift = self.patch_size // 2 if shift is None else int(shift)
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        self.norm = layers.LayerNormalization(epsilon=self.layer_norm_epsilon, name="norm")
        self.projection = layers.Dense(self.projection_dim, name="projection")

    def build(self, input_shape: tuple[Any, ...]) -> None:
        _, height, width, channels = input_shape
        if height % self.patch_size or width % self.patch_size:
            raise ValueError(
                f"{self.name}: image size {height}x{width} is not a multiple of patch_size {self.patch_size}."
            )
        # Original + 4 shifted copies, all stacked on the channel axis.
        patch_dim = self.patch_size * self.patch_size * 5 * int(channels)
        self.norm.build((None, None, patch_dim))
        self.projection.build((None, None, patch_dim))

    def call(self, images: Any) -> Any:
        stacked = ops.concatenate([images, *diagonal_shifts(images, self.shift)], axis=-1)
        patches = extract_patches(stacked, self.patch_size)
        return self.projection(self.norm(patches))

    def compute_output_shape(self, input_shape: tuple[Any, ...]) -> tuple[Any, ...]:
        batch, height, width, _ = input_shape
        num = (height // self.patch_size) * (width // self.patch_size)
        return (batch, num, self.projection_dim)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            patch_size=self.patch_size,
            projection_dim=self.projection_dim,
            shift=self.shift,
            layer_norm_epsilon=self.layer_norm_epsilon,
        )
        return config


@keras.saving.register_keras_serializable(package=_PACKAGE)
class PositionEmbedding(layers.Layer):
    """Add a learned vector to every token position: ``(b, n, d) -> (b, n, d)``.

    Attention treats its input as an unordered *set*: permute the tokens and the
    outputs are permuted the same way. The only thing telling the model where a
    patch came from is this table of ``n x d`` learned numbers, one row per
    position, added to the tokens once before the first block.
    """

    def __init__(self, initializer_stddev: float = 0.02, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # 0.02 is the usual ViT/BERT choice: small next to unit-scale tokens.
        self.initializer_stddev = float(initializer_stddev)

    def build(self, input_shape: tuple[Any, ...]) -> None:
        _, num_tokens, dim = input_shape
        if num_tokens is None:
            raise ValueError(f"{self.name}: the number of tokens must be static.")
        self.embedding = self.add_weight(
            name="embedding",
            shape=(int(num_tokens), int(dim)),
            initializer=keras.initializers.RandomNormal(stddev=self.initializer_stddev),
        )

    def call(self, tokens: Any) -> Any:
        # (n, d) broadcasts over the batch axis.
        return tokens + ops.cast(self.embedding, tokens.dtype)

    def compute_output_shape(self, input_shape: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(input_shape)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(initializer_stddev=self.initializer_stddev)
        return config


# =====================================================================================
# Attention: vanilla and LSA
# =====================================================================================
@keras.saving.register_keras_serializable(package=_PACKAGE)
class MultiHeadSelfAttention(layers.Layer):
    """Multi-head self-attention, written out; ``locality=True`` gives LSA.

    For tokens ``x`` of shape ``(b, n, d)`` and each head ``h``::

        q, k, v = x Wq_h, x Wk_h, x Wv_h                    # (b, n, key_dim) each
        logits  = q k^T / T                                 # (b, n, n)
        weights = softmax(logits over the key axis)         # each row sums to 1
        out_h   = weights v                                 # (b, n, key_dim)

    then the heads are concatenated and projected back to ``d`` by ``Wo``.

    * vanilla (``locality=False``): ``T = sqrt(key_dim)``, a constant. It keeps the
      logits' variance ~1 at initialisation so the softmax is not saturated.
    * LSA (``locality=True``): ``T`` is a trainable scalar initialised to
      ``sqrt(key_dim)`` -- the network may learn a *lower* temperature, i.e. a
      sharper attention distribution -- and the diagonal logits ``(i, i)`` are set
      to a huge negative number before the softmax, so ``weights[i, i] == 0``:
      a token's query and key are two projections of the *same* vector, so the
      self-pair tends to get a large logit and soaks up attention that should go
      to the other tokens (the residual connection already carries the token's
      own content). Masked, every token must gather information from the others.

    Args:
        num_heads: number of heads.
        key_dim: size of each head's query/key/value vectors. (The keras-io example
            uses ``key_dim = projection_dim`` -- 4 heads of 64 on 64-dim tokens --
            rather than the more common ``projection_dim // num_heads``.)
        locality: ``True`` for LSA (diagonal mask + learned temperature).
        dropout: dropout rate on the attention weights (training only).

    ``call(x, training=None, return_attention_scores=False)``; with
    ``return_attention_scores=True`` it returns ``(output, weights)``, weights of
    shape ``(b, num_heads, n, n)`` -- handy for plots and for the tests.
    """

    # exp(-1e9) is exactly 0 in float32 and, unlike -inf, it cannot produce NaN
    # when every entry of a row is masked (a 1-token sequence): the softmax is then
    # uniform instead. The softmax always runs in float32 (see `call`), so this
    # constant never overflows, even under mixed precision.
    MASK_VALUE = -1e9

    def __init__(
        self,
        num_heads: int,
        key_dim: int,
        locality: bool = False,
        dropout: float = 0.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.num_heads = int(num_heads)
        self.key_dim = int(key_dim)
        self.locality = bool(locality)
        self.dropout = float(dropout)
        inner = self.num_heads * self.key_dim
        # One Dense per role; each produces all heads at once (reshaped in `call`).
        self.query_dense = layers.Dense(inner, name="query")
        self.key_dense = layers.Dense(inner, name="key")
        self.value_dense = layers.Dense(inner, name="value")
        self.output_dense: layers.Dense | None = None  # its width is the input's; see build
        self.attention_dropout = layers.Dropout(self.dropout, name="attention_dropout")

    def build(self, input_shape: tuple[Any, ...]) -> None:
        dim = int(input_shape[-1])
        inner = self.num_heads * self.key_dim
        for dense in (self.query_dense, self.key_dense, self.value_dense):
            dense.build((None, None, dim))
        self.output_dense = layers.Dense(dim, name="output")
        self.output_dense.build((None, None, inner))
        if self.locality:
            # A single scalar shared by all heads, as in the paper.
            self.temperature = self.add_weight(
                name="temperature",
                shape=(),
                initializer=keras.initializers.Constant(math.sqrt(self.key_dim)),
                trainable=True,
            )
        else:
            self.temperature = None

    def _split_heads(self, x: Any) -> Any:
        # (b, n, heads * key_dim) -> (b, heads, n, key_dim): heads lead, so that the two
        # products below are plain batched matmuls (XLA on a CPU runs an einsum with the
        # batch axes in the middle several times slower).
        shape = ops.shape(x)
        x = ops.reshape(x, (shape[0], shape[1], self.num_heads, self.key_dim))
        return ops.transpose(x, (0, 2, 1, 3))

    def call(self, x: Any, training: bool | None = None, return_attention_scores: bool = False) -> Any:
        q = self._split_heads(self.query_dense(x))
        k = self._split_heads(self.key_dense(x))
        v = self._split_heads(self.value_dense(x))

        # Every query against every key, per head: (b, heads, n_query, n_key).
        logits = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2)))
        # Softmax in float32: it exponentiates, and under mixed precision float16
        # would overflow for logits above ~11 and round small weights to zero.
        logits = ops.cast(logits, "float32")
        if self.locality:
            logits = logits / ops.cast(self.temperature, "float32")
            n = ops.shape(logits)[-1]
            self_pairs = ops.cast(ops.eye(n), "bool")  # True on the diagonal (i, i)
            logits = ops.where(self_pairs, self.MASK_VALUE, logits)
        else:
            logits = logits / math.sqrt(self.key_dim)
        weights = ops.softmax(logits, axis=-1)
        weights = ops.cast(weights, self.compute_dtype)
        dropped = self.attention_dropout(weights, training=training)

        # Weighted sum of values, heads concatenated back: (b, n, heads * key_dim).
        out = ops.transpose(ops.matmul(dropped, v), (0, 2, 1, 3))
        shape = ops.shape(out)
        out = ops.reshape(out, (shape[0], shape[1], self.num_heads * self.key_dim))
        out = self.output_dense(out)
        if return_attention_scores:
            return out, weights
        return out

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            num_heads=self.num_heads,
            key_dim=self.key_dim,
            locality=self.locality,
            dropout=self.dropout,
        )
        return config


# =====================================================================================
# Transformer block and head
# =====================================================================================
@keras.saving.register_keras_serializable(package=_PACKAGE)
class TransformerBlock(layers.Layer):
    """Pre-norm transformer encoder block: ``(b, n, d) -> (b, n, d)``.

    ::

        x = x + Dropout(Attention(LayerNorm(x)))          # tokens talk to each other
        x = x + MLP(LayerNorm(x))                          # each token thinks alone
        MLP = Dense(mlp_ratio * d, gelu) -> Dropout -> Dense(d) -> Dropout

    This is the unit ShiftViT rewrites: a ShiftViT block keeps the second line and
    replaces the first one by the parameter-free shift. Everything else -- norms,
    residuals, MLP -- is the same, which is what makes lesson 07's comparison fair.

    Pre-norm (LayerNorm *inside* the residual branch) leaves an identity path from
    input to output, so deep stacks train without warm-up tricks.
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
        self.num_heads = int(num_heads)
        self.key_dim = int(key_dim)
        self.mlp_ratio = float(mlp_ratio)
        self.dropout = float(dropout)
        self.locality = bool(locality)
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        self.norm1 = layers.LayerNormalization(epsilon=self.layer_norm_epsilon, name="norm1")
        self.attention = MultiHeadSelfAttention(
            self.num_heads,
            self.key_dim,
            locality=self.locality,
            dropout=self.dropout,  # dropout on attention weights, as in the keras-io example
            name="attention",
        )
        self.attention_output_dropout = layers.Dropout(self.dropout, name="attention_output_dropout")
        self.norm2 = layers.LayerNormalization(epsilon=self.layer_norm_epsilon, name="norm2")
        self.mlp_hidden: layers.Dense | None = None  # sizes depend on d; see build
        self.mlp_out: layers.Dense | None = None
        self.mlp_dropout1 = layers.Dropout(self.dropout, name="mlp_dropout1")
        self.mlp_dropout2 = layers.Dropout(self.dropout, name="mlp_dropout2")

    def build(self, input_shape: tuple[Any, ...]) -> None:
        dim = int(input_shape[-1])
        hidden = int(round(self.mlp_ratio * dim))
        self.norm1.build(input_shape)
        self.attention.build(input_shape)
        self.norm2.build(input_shape)
        self.mlp_hidden = layers.Dense(hidden, activation="gelu", name="mlp_hidden")
        self.mlp_hidden.build((None, None, dim))
        self.mlp_out = layers.Dense(dim, name="mlp_out")
        self.mlp_out.build((None, None, hidden))

    def call(self, x: Any, training: bool | None = None) -> Any:
        attended = self.attention(self.norm1(x), training=training)
        x = x + self.attention_output_dropout(attended, training=training)
        h = self.mlp_dropout1(self.mlp_hidden(self.norm2(x)), training=training)
        return x + self.mlp_dropout2(self.mlp_out(h), training=training)

    def compute_output_shape(self, input_shape: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(input_shape)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            num_heads=self.num_heads,
            key_dim=self.key_dim,
            mlp_ratio=self.mlp_ratio,
            dropout=self.dropout,
            locality=self.locality,
            layer_norm_epsilon=self.layer_norm_epsilon,
        )
        return config


@keras.saving.register_keras_serializable(package=_PACKAGE)
class ClassifierHead(layers.Layer):
    """keras-io's ViT head: LayerNorm -> flatten ALL tokens -> MLP -> logits.

    ``(b, n, d) -> (b, num_classes)``.

    There is no class token and no average pooling: the ``n * d`` numbers of all
    tokens are concatenated and fed to a wide MLP (Dense+gelu+Dropout per entry of
    ``hidden_units``), then a final Dense produces the logits. Keeping the spatial
    layout lets the head itself learn "where" features are -- at the price of
    parameters: with 144 tokens of 64 numbers the first ``Dense(2048)`` alone has
    ~18.9 M weights, most of the model. Lesson 07 points this out when it compares
    parameter counts with ShiftViT, whose head is a global average pool.
    """

    def __init__(
        self,
        num_classes: int,
        hidden_units: tuple[int, ...] | list[int] = (2048, 1024),
        dropout: float = 0.5,
        layer_norm_epsilon: float = 1e-6,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.num_classes = int(num_classes)
        self.hidden_units = tuple(int(u) for u in hidden_units)
        self.dropout = float(dropout)
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        self.norm = layers.LayerNormalization(epsilon=self.layer_norm_epsilon, name="norm")
        self.flatten = layers.Flatten(name="flatten")
        self.input_dropout = layers.Dropout(self.dropout, name="input_dropout")
        self.hidden = [
            layers.Dense(u, activation="gelu", name=f"hidden_{i}") for i, u in enumerate(self.hidden_units)
        ]
        self.hidden_dropout = [
            layers.Dropout(self.dropout, name=f"hidden_dropout_{i}") for i in range(len(self.hidden_units))
        ]
        # Logits stay float32 under mixed precision, so the loss is computed accurately.
        self.logits = layers.Dense(self.num_classes, dtype="float32", name="logits")

    def build(self, input_shape: tuple[Any, ...]) -> None:
        _, n, d = input_shape
        if n is None:
            raise ValueError(f"{self.name}: the number of tokens must be static to flatten.")
        self.norm.build(input_shape)
        width = int(n) * int(d)
        for dense in self.hidden:
            dense.build((None, width))
            width = dense.units
        self.logits.build((None, width))

    def call(self, tokens: Any, training: bool | None = None) -> Any:
        x = self.flatten(self.norm(tokens))
        x = self.input_dropout(x, training=training)
        for dense, drop in zip(self.hidden, self.hidden_dropout, strict=True):
            x = drop(dense(x), training=training)
        return self.logits(x)

    def compute_output_shape(self, input_shape: tuple[Any, ...]) -> tuple[Any, ...]:
        return (input_shape[0], self.num_classes)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(
            num_classes=self.num_classes,
            hidden_units=list(self.hidden_units),
            dropout=self.dropout,
            layer_norm_epsilon=self.layer_norm_epsilon,
        )
        return config


# =====================================================================================
# Configuration and presets
# =====================================================================================
@dataclass(frozen=True)
class ViTConfig:
    """Every hyperparameter of a (SPT/LSA) ViT and of its training recipe.

    The defaults are the ``"vit_cifar"`` preset: the keras-io small-dataset ViT's
    transformer, fed by the ShiftViT seed recipe's input pipeline, and trained with
    the ShiftViT seed recipe's training fields (same names as in
    :class:`shiftvit_lib.config.ShiftViTConfig`, so one trainer serves both).
    """

    name: str = "custom"

    # --- data ---------------------------------------------------------------------
    input_shape: tuple[int, int, int] = (32, 32, 3)
    num_classes: int = 10

    # --- input pipeline inside the model (identical to the ShiftViT seed) ---------
    augment: bool = True
    resize_to: int = 52
    image_size: int = 48
    flip: bool = True
    # Probability of blanking a random box in each training image (as ShiftViTConfig).
    random_erasing: float = 0.0

    # --- architecture -------------------------------------------------------------
    # 48 px / patch 4 = 12 x 12 = 144 tokens: the same token grid as ShiftViT's first
    # stage (patch 4 on 48 px) and the same sequence length as the keras-io example
    # (patch 6 on 72 px). Patch 6 would give only 64 tokens of 6x6 pixels.
    patch_size: int = 4
    projection_dim: int = 64
    num_heads: int = 4
    # keras-io uses key_dim = projection_dim (not projection_dim // num_heads).
    # None means projection_dim // num_heads.
    key_dim: int | None = 64
    depth: int = 8
    mlp_ratio: float = 2.0
    dropout: float = 0.1
    head_units: tuple[int, ...] = (2048, 1024)
    head_dropout: float = 0.5
    use_spt: bool = False
    use_lsa: bool = False
    layer_norm_epsilon: float = 1e-6

    # --- training recipe (mirrors ShiftViTConfig) -----------------------------------
    batch_size: int = 256
    epochs: int = 100
    lr_start: float = 1e-5
    lr_max: float = 1e-3
    warmup_fraction: float = 0.15
    weight_decay: float = 1e-4
    label_smoothing: float = 0.0
    early_stopping_patience: int | None = 5

    def __post_init__(self) -> None:
        # Lists (from JSON or a user) become tuples so the config stays hashable.
        object.__setattr__(self, "input_shape", tuple(int(d) for d in self.input_shape))
        object.__setattr__(self, "head_units", tuple(int(u) for u in self.head_units))
        self.validate()

    def validate(self) -> None:
        """Raise ``ValueError`` listing every field that cannot work."""
        problems = []
        if len(self.input_shape) != 3:
            problems.append(f"input_shape must be (height, width, channels), got {self.input_shape}")
        if self.image_size > self.resize_to:
            problems.append(
                f"image_size ({self.image_size}) cannot be larger than resize_to ({self.resize_to})"
            )
        if self.patch_size < 1 or self.image_size % self.patch_size:
            problems.append(
                f"image_size ({self.image_size}) must be a multiple of patch_size ({self.patch_size})"
            )
        if self.depth < 1 or self.num_heads < 1 or self.projection_dim < 1:
            problems.append("depth, num_heads and projection_dim must be positive")
        if self.key_dim is None and self.projection_dim % self.num_heads:
            problems.append(
                f"key_dim=None needs projection_dim ({self.projection_dim}) divisible by "
                f"num_heads ({self.num_heads})"
            )
        if self.key_dim is not None and self.key_dim < 1:
            problems.append(f"key_dim must be positive or None, got {self.key_dim}")
        if not 0.0 <= self.dropout < 1.0 or not 0.0 <= self.head_dropout < 1.0:
            problems.append("dropout and head_dropout must lie in [0, 1)")
        if not 0.0 <= self.warmup_fraction < 1.0:
            problems.append(f"warmup_fraction must lie in [0, 1), got {self.warmup_fraction}")
        if not 0.0 <= self.random_erasing <= 1.0:
            problems.append(f"random_erasing is a probability in [0, 1], got {self.random_erasing}")
        if problems:
            raise ValueError(f"Invalid ViTConfig {self.name!r}: " + "; ".join(problems))

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

    def replace(self, **changes: Any) -> ViTConfig:
        """A copy with some fields changed (the config itself is immutable)."""
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise TypeError(f"Unknown ViTConfig field(s): {sorted(unknown)}")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict."""
        data = dataclasses.asdict(self)
        data["input_shape"] = list(self.input_shape)
        data["head_units"] = list(self.head_units)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ViTConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error, not silently dropped."""
        unknown = set(data) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise TypeError(f"Unknown ViTConfig field(s): {sorted(unknown)}")
        return cls(**data)


# Presets hold only what differs from the ViTConfig defaults (= "vit_cifar").
VIT_PRESETS: dict[str, dict[str, Any]] = {
    # Vanilla ViT, keras-io transformer sizes, ShiftViT seed input pipeline + recipe.
    "vit_cifar": dict(),
    # The same with the two small-dataset fixes switched on.
    "vit_spt_lsa_cifar": dict(use_spt=True, use_lsa=True),
    # Tiny and fast for CPU tests and CI: 16 px crops, patch 4 -> 16 tokens.
    "vit_quick": dict(
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
        batch_size=64,
        epochs=5,
        warmup_fraction=0.1,
        lr_max=2e-3,
        early_stopping_patience=None,
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


def list_vit_presets() -> list[str]:
    """Names accepted by :func:`vit_preset`, sorted (the keys of :data:`VIT_PRESETS`)."""
    return sorted(VIT_PRESETS)


def vit_preset(name: str, **overrides: Any) -> ViTConfig:
    """Look up a ViT preset by name, optionally overriding fields.

    >>> vit_preset("vit_quick", use_lsa=True).use_lsa
    True

    Raises:
        KeyError: ``name`` is not a preset (the message lists the valid names).
        TypeError: an override is not a ViTConfig field.
    """
    if name not in VIT_PRESETS:
        raise KeyError(f"Unknown ViT preset {name!r}; choose one of {list_vit_presets()}")
    unknown = set(overrides) - {f.name for f in dataclasses.fields(ViTConfig)}
    if unknown:
        raise TypeError(f"Unknown ViTConfig field(s): {sorted(unknown)}")
    return ViTConfig(**{"name": name, **VIT_PRESETS[name], **overrides})


# =====================================================================================
# The model
# =====================================================================================
def build_vit(config: ViTConfig, *, seed: int | None = None) -> keras.Model:
    """Build a functional ViT (vanilla, SPT, LSA or SPT + LSA) from a :class:`ViTConfig`.

    ``(batch, 32, 32, 3)`` images with pixel values in [0, 255] (uint8 or float)
    -> ``(batch, num_classes)`` logits (no softmax: train with
    ``from_logits=True``). The graph is::

        images -> ImagePreprocessing (resize, crop, flip, /255: same as ShiftViT)
               -> PatchTokenizer | ShiftedPatchTokenizer (SPT)
               -> PositionEmbedding
               -> TransformerBlock x depth (attention: vanilla | LSA)
               -> ClassifierHead -> logits

    The preprocessing is part of the model, so ``model.predict`` on raw CIFAR
    pixels just works and a saved ``.keras`` file is self-contained.

    Args:
        config: a :class:`ViTConfig`, e.g. ``vit_preset("vit_spt_lsa_cifar")``.
        seed: seed for the random crop and flip (weights follow
            ``keras.utils.set_random_seed``), as in ``build_shiftvit``.
    """
    if not isinstance(config, ViTConfig):
        raise TypeError(
            f"build_vit expects a ViTConfig (e.g. vit_preset('vit_cifar')), got {type(config).__name__}"
        )
    inputs = keras.Input(shape=config.input_shape, name="images")
    x = ImagePreprocessing(
        resize_to=config.resize_to,
        crop_size=config.image_size,
        flip=config.flip,
        augment=config.augment,
        random_erasing=config.random_erasing,
        seed=seed,
        name="preprocessing",
    )(inputs)
    if config.use_spt:
        tokenizer = ShiftedPatchTokenizer(
            config.patch_size,
            config.projection_dim,
            layer_norm_epsilon=config.layer_norm_epsilon,
            name="shifted_patch_tokenizer",
        )
    else:
        tokenizer = PatchTokenizer(config.patch_size, config.projection_dim, name="patch_tokenizer")
    x = tokenizer(x)
    x = PositionEmbedding(name="position_embedding")(x)
    for i in range(config.depth):
        x = TransformerBlock(
            config.num_heads,
            config.head_key_dim,
            mlp_ratio=config.mlp_ratio,
            dropout=config.dropout,
            locality=config.use_lsa,
            layer_norm_epsilon=config.layer_norm_epsilon,
            name=f"block_{i}",
        )(x)
    logits = ClassifierHead(
        config.num_classes,
        config.head_units,
        dropout=config.head_dropout,
        layer_norm_epsilon=config.layer_norm_epsilon,
        name="head",
    )(x)
    return keras.Model(inputs, logits, name=config.model_name)


def count_vit_macs(config: ViTConfig) -> dict[str, int]:
    """Multiply-accumulates of one forward pass, per part of the network.

    Same convention as :func:`shiftvit_lib.model.count_macs` (dense layers and
    matrix products only; norms, softmax, GELU and the SPT shifts are nearly free),
    so lesson 07 can put both models in one table. With ``n`` tokens of width ``d``,
    ``h`` heads of size ``k`` and MLP width ``r * d``, one block costs::

        q, k, v and output projections    4 * n * d * h * k
        Q K^T and weights x V             2 * h * n * n * k     <- grows as n squared
        MLP                               2 * n * d * r * d

    The ``n * n`` term is what ShiftViT's shift removes: it costs no MACs at all.
    """
    n, d = config.num_tokens, config.projection_dim
    heads, key_dim = config.num_heads, config.head_key_dim
    inner, hidden = heads * key_dim, int(round(config.mlp_ratio * d))
    patch_dim = config.patch_size**2 * config.input_shape[-1] * (5 if config.use_spt else 1)
    macs = {"patch_projection": n * patch_dim * d}
    macs["attention_projections"] = config.depth * 4 * n * d * inner
    macs["attention_matmuls"] = config.depth * 2 * heads * n * n * key_dim
    macs["mlp"] = config.depth * 2 * n * d * hidden
    width, head = n * d, 0
    for units in (*config.head_units, config.num_classes):
        head += width * units
        width = units
    macs["classifier"] = head
    macs["total"] = sum(macs.values())
    return macs


__all__ = [
    "DIAGONAL_DIRECTIONS",
    "ClassifierHead",
    "MultiHeadSelfAttention",
    "PatchTokenizer",
    "PositionEmbedding",
    "ShiftedPatchTokenizer",
    "TransformerBlock",
    "VIT_PRESETS",
    "ViTConfig",
    "build_vit",
    "count_vit_macs",
    "diagonal_shifts",
    "extract_patches",
    "list_vit_presets",
    "vit_preset",
]
