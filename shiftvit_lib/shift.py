"""The shift operation: ShiftViT's parameter-free replacement for attention.

Lesson 02 teaches this module. A feature map ``x`` of shape ``(batch, H, W, C)`` is
cut into channel groups of ``g = C // num_div`` channels:

===========  =============================  ============================
channels     what happens                   official SPACH line (NCHW)
===========  =============================  ============================
[0, g)       content moves one step left    ``out[..., :-1] = x[..., 1:]``
[g, 2g)      content moves right            ``out[..., 1:] = x[..., :-1]``
[2g, 3g)     content moves up               ``out[..., :-1, :] = x[..., 1:, :]``
[3g, 4g)     content moves down             ``out[..., 1:, :] = x[..., :-1, :]``
[4g, C)      unchanged                      ``out[:, 4g:] = x[:, 4g:]``
===========  =============================  ============================

Pixels pushed over the border are dropped and the emptied row/column is filled
with zeros. Everything is written with ``keras.ops`` so it runs on TensorFlow,
JAX and PyTorch.

The module also keeps :func:`keras_io_shift`, a faithful copy of what the keras-io
example computes. It crops and pads with the *same* offsets, so nothing moves: it
only zeroes one border row or column of four 12-channel groups. Lesson 02 shows the
difference; lesson 07 measures what it costs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from keras import ops

from shiftvit_lib.config import SHIFT_IMPLEMENTATIONS, SHIFT_KINDS, check_whole_number

# Order of the moving groups, shared by the reference, the animation and the docs.
SHIFT_DIRECTIONS = ("left", "right", "up", "down")


def check_shift_arguments(x: Any, num_div: int, shift_pixel: int) -> int:
    """Validate the shift's arguments for the NHWC tensor ``x``; return the group size g."""
    if len(x.shape) != 4:
        raise ValueError(
            f"shift expects a 4-D NHWC tensor (batch, height, width, channels); got shape "
            f"{tuple(x.shape)}. Add a batch axis with x[None] for a single image."
        )
    _, height, width, channels = x.shape
    check_whole_number(num_div, "num_div")
    check_whole_number(shift_pixel, "shift_pixel", 0)
    if num_div < 4:
        raise ValueError(f"num_div must be >= 4 because four channel groups move; got {num_div}.")
    if channels is None:
        raise ValueError("the channel axis must have a known size to split it into groups.")
    if channels < num_div:
        raise ValueError(
            f"the input has {channels} channels but num_div is {num_div}: each group would be "
            f"empty. Use num_div <= {channels} or more channels."
        )
    if shift_pixel < 1:
        raise ValueError(f"shift_pixel must be >= 1, got {shift_pixel}.")
    for name, size in (("height", height), ("width", width)):
        if size is not None and shift_pixel >= size:
            raise ValueError(
                f"shift_pixel ({shift_pixel}) must be smaller than the feature map's {name} "
                f"({size}), otherwise a moving group would be all zeros."
            )
    return channels // num_div


def shift_channels(x: Any, num_div: int = 12, shift_pixel: int = 1) -> Any:
    """Shift four channel groups of an NHWC tensor left, right, up and down.

    Args:
        x: tensor of shape ``(batch, height, width, channels)``.
        num_div: the channels are cut into ``num_div`` parts of ``g = C // num_div``;
            the first four parts move, so ``4 / num_div`` of the channels move.
            ``C`` need not be a multiple of ``num_div``: the leftover channels stay put.
        shift_pixel: how many pixels each group moves.

    Returns:
        A tensor of the same shape and dtype; vacated pixels are zero.

    Raises:
        ValueError: for a non-4-D input, ``num_div < 4``, ``C < num_div``, or a
            ``shift_pixel`` that is < 1 or not smaller than the height and width.
    """
    g = check_shift_arguments(x, num_div, shift_pixel)
    s = shift_pixel
    no_pad = (0, 0)
    # Slice what survives the move, then pad zeros on the side it moved away from.
    left = ops.pad(x[:, :, s:, 0:g], [no_pad, no_pad, (0, s), no_pad])
    right = ops.pad(x[:, :, :-s, g : 2 * g], [no_pad, no_pad, (s, 0), no_pad])
    up = ops.pad(x[:, s:, :, 2 * g : 3 * g], [no_pad, (0, s), no_pad, no_pad])
    down = ops.pad(x[:, :-s, :, 3 * g : 4 * g], [no_pad, (s, 0), no_pad, no_pad])
    return ops.concatenate([left, right, up, down, x[..., 4 * g :]], axis=-1)


def shift_channels_roll(x: Any, num_div: int = 12, shift_pixel: int = 1) -> Any:
    """Same result as :func:`shift_channels`, computed with ``roll`` and a border mask.

    Rolling wraps pixels around; multiplying by a 0/1 mask zeroes the wrapped ones.
    It touches the whole tensor instead of slicing, which some compilers fuse
    better. ``benchmarks/`` measures both; the model uses the faster one.
    """
    g = check_shift_arguments(x, num_div, shift_pixel)
    s, height, width = shift_pixel, x.shape[1], x.shape[2]
    rows, cols = ops.arange(height)[:, None], ops.arange(width)[None, :]
    # Per group, in SHIFT_DIRECTIONS' order: the roll (amount, axis) and where the rolled
    # group still has real (not wrapped) content.
    moves = [(-s, 2, cols < width - s), (s, 2, cols >= s), (-s, 1, rows < height - s), (s, 1, rows >= s)]
    parts = []
    for index, (amount, axis, keep) in enumerate(moves):
        mask = ops.cast(ops.broadcast_to(keep, (height, width)), x.dtype)[None, :, :, None]
        parts.append(ops.roll(x[..., index * g : (index + 1) * g], amount, axis=axis) * mask)
    return ops.concatenate([*parts, x[..., 4 * g :]], axis=-1)


def keras_io_shift(x: Any, num_div: int = 12, shift_pixel: int = 1) -> Any:
    """What the keras-io ShiftViT example computes (kept to study its bug).

    The example calls ``split(x, C // num_div)``, which makes ``C // num_div``
    groups of ``num_div`` channels each, so its four "moving" groups always hold 12
    channels (48 in total) whatever the stage width. Each group is then cropped and
    padded back with the *same* offsets, which leaves the content in place and only
    zeroes a border strip:

    - "left": the last ``shift_pixel`` columns become zero;
    - "right": the first columns become zero;
    - "up": the last rows become zero;
    - "down": the first rows become zero.

    Nothing moves, so no information flows between neighbouring positions.
    """
    check_shift_arguments(x, num_div, shift_pixel)
    _, height, width, channels = x.shape
    sections = channels // num_div
    if channels % sections:
        raise ValueError(f"the keras-io split needs C ({channels}) divisible by C // num_div ({sections}).")
    if sections < 4:
        raise ValueError(f"the keras-io split of {channels} channels gives fewer than 4 groups.")
    groups = ops.split(x, sections, axis=-1)
    # The example's offsets per direction: (top, left, rows removed, columns removed). Crop
    # and pad reuse the same top and left offsets, which is the bug.
    s = shift_pixel
    offsets = {"left": (0, 0, 0, s), "right": (0, s, 0, s), "up": (0, 0, s, 0), "down": (s, 0, s, 0)}
    for index, direction in enumerate(SHIFT_DIRECTIONS):
        top, left, cut_rows, cut_cols = offsets[direction]
        cropped = ops.image.crop_images(
            groups[index], top, left, target_height=height - cut_rows, target_width=width - cut_cols
        )
        groups[index] = ops.image.pad_images(cropped, top, left, target_height=height, target_width=width)
    return ops.concatenate(groups, axis=-1)


def no_shift(x: Any, num_div: int = 12, shift_pixel: int = 1) -> Any:
    """The identity, for the "no shift at all" ablation (arguments are ignored)."""
    return x


def get_shift_function(kind: str, implementation: str = "slice") -> Callable[..., Any]:
    """The shift used by a block, one of :data:`~shiftvit_lib.config.SHIFT_KINDS`.

    ``implementation`` picks how the official shift is computed (``"slice"`` or
    ``"roll"``); both give identical results.
    """
    official = dict(zip(SHIFT_IMPLEMENTATIONS, (shift_channels, shift_channels_roll)))
    if implementation not in official:
        raise ValueError(
            f"Unknown shift implementation {implementation!r}; use one of {SHIFT_IMPLEMENTATIONS}"
        )
    functions = dict(zip(SHIFT_KINDS, (official[implementation], keras_io_shift, no_shift)))
    if kind not in functions:
        raise ValueError(f"Unknown shift {kind!r}; choose one of {SHIFT_KINDS}")
    return functions[kind]
