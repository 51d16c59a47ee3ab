"""Manim scene: the receptive field of one token, stage after stage, on a 32x32 image.

A shift block lets a token see one token further in each direction, so within a stage
the receptive field grows slowly (``ReceptiveField`` shows that diamond).  Patch merging
then halves the resolution: a token of the next stage covers 2x2 tokens of this one, and
one shift there moves twice as many pixels.  The scene follows the token that contains
one fixed image pixel through the stages of the ``cpu`` preset (32x32 images, 4x4
patches, depths 2, 2, 6) and colours every image pixel by the stage after which it
first reaches that token.

The picture is computed, not drawn: :func:`reach_through_stages` runs the receptive
field backwards through the model's steps with the same NumPy ``shift_feat`` as the
other scenes (one shift plus the MLP's channel mixing per block, 2x2 children per
merge, 4x4 pixels per patch).

Render with ``python animations/render.py --scene ReceptiveFieldStages``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from manim import (
    DOWN,
    GREY_B,
    LEFT,
    RIGHT,
    UP,
    WHITE,
    Line,
    Scene,
    Square,
    Text,
    VGroup,
)

try:
    from animations.common import FONT, Glide
    from animations.shift_operation import shift_feat
except ImportError:  # loaded by file path, e.g. `manim -ql animations/receptive_field_stages.py`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from animations.common import FONT, Glide
    from animations.shift_operation import shift_feat

# The cpu preset's geometry (shiftvit_lib.config: image_size 32, patch_size 4, depths (2, 2, 6)).
IMAGE, PATCH, DEPTHS = 32, 4, (2, 2, 6)
POINT = (13, 13)  # the image pixel whose token we follow (row, col)
SIDE = 6.0  # on-screen side of the image, in Manim units
IMAGE_CENTER = np.array([-3.3, -0.3, 0.0])

# Colour of the pixels that join after the patch embedding (0) and after each stage.
STAGE_COLORS = ["#FFFFFF", "#FDE68A", "#F6AD55", "#E8697A"]
UNREACHED = "#1f1f1f"


def grow(reach: np.ndarray, blocks: int) -> np.ndarray:
    """Tokens that can reach ``reach`` after ``blocks`` shift blocks (a plus-shaped step each)."""
    for _ in range(blocks):
        stacked = np.repeat(reach[:, :, None], 5, axis=2)
        reach = shift_feat(stacked, num_div=5, shift_pixel=1).max(axis=2)
    return reach


def reach_through_stages(
    image: int = IMAGE, patch: int = PATCH, depths: tuple[int, ...] = DEPTHS, point: tuple[int, int] = POINT
) -> np.ndarray:
    """For each image pixel: the stage after which it first reaches the token holding ``point``.

    0 means the token's own patch (the patch embedding), ``s`` the end of stage ``s``
    (its blocks; the merge that follows belongs to the next stage's resolution), -1 never.
    For stage ``s`` the token is the one of that stage containing ``point``; its field is
    traced back: grow by the stage's depth, expand each token to its 2x2 children (undo a
    merge), grow by the previous stage's depth, ..., expand each token to its patch.
    """
    first = np.full((image, image), -1, dtype=int)
    for stage in range(len(depths) + 1):
        stride = patch * 2 ** max(stage - 1, 0)  # pixels per token side in this stage
        tokens = -(-image // stride)
        reach = np.zeros((tokens, tokens), dtype=np.int8)
        reach[point[0] // stride, point[1] // stride] = 1
        for level in range(stage, 0, -1):  # back through stages `stage`, ..., 1
            reach = grow(reach, depths[level - 1])
            if level > 1:
                reach = np.kron(reach, np.ones((2, 2), dtype=np.int8))  # undo a 2x2 merge
        pixels = np.kron(reach, np.ones((patch, patch), dtype=np.int8))[:image, :image]
        first[(pixels > 0) & (first < 0)] = stage
    return first


def pixel_squares(first: np.ndarray, stage: int) -> VGroup:
    """One filled square per image pixel that joins after ``stage`` (squares, not an image:
    Manim 0.22's ImageMobject fails under Pillow 13)."""
    unit = SIDE / IMAGE
    top_left = IMAGE_CENTER + np.array([-SIDE / 2, SIDE / 2, 0.0])
    squares = VGroup()
    for row, col in np.argwhere(first == stage):
        colour = STAGE_COLORS[stage]  # a thin stroke of the same colour hides anti-aliasing seams
        square = Square(side_length=unit, stroke_width=1, stroke_color=colour, fill_color=colour, fill_opacity=1.0)
        squares.add(square.move_to(top_left + np.array([(col + 0.5) * unit, -(row + 0.5) * unit, 0.0])))
    return squares


def token_lines(stride: int, color=GREY_B, width: float = 1.5) -> VGroup:
    """Grid lines between the tokens of a stage whose tokens are ``stride`` pixels wide."""
    unit = SIDE / IMAGE
    top_left = IMAGE_CENTER + np.array([-SIDE / 2, SIDE / 2, 0.0])
    lines = VGroup()
    for k in range(stride, IMAGE, stride):
        lines.add(Line(top_left + RIGHT * k * unit, top_left + RIGHT * k * unit + DOWN * SIDE))
        lines.add(Line(top_left + DOWN * k * unit, top_left + DOWN * k * unit + RIGHT * SIDE))
    return lines.set_stroke(color, width).set_z_index(2)  # over the pixels


def token_outline(stride: int, color=WHITE) -> Square:
    """The square of the followed token in a stage whose tokens are ``stride`` pixels wide."""
    unit = SIDE / IMAGE
    row, col = (POINT[0] // stride) * stride, (POINT[1] // stride) * stride
    top_left = IMAGE_CENTER + np.array([-SIDE / 2, SIDE / 2, 0.0])
    centre = top_left + np.array([(col + stride / 2) * unit, -(row + stride / 2) * unit, 0.0])
    outline = Square(side_length=stride * unit, stroke_color=color, stroke_width=5).move_to(centre)
    return outline.set_z_index(3)


class ReceptiveFieldStages(Scene):
    """The followed token's receptive field after the patch embedding and after each stage."""

    def construct(self):
        first = reach_through_stages()
        title = Text("Patch merging: each stage sees further", font=FONT, font_size=32)
        title.to_edge(UP, buff=0.35)
        frame = Square(side_length=SIDE, stroke_color=GREY_B, stroke_width=2).move_to(IMAGE_CENTER)
        caption = Text(
            f"a {IMAGE}×{IMAGE} image, {PATCH}×{PATCH} patches, depths {', '.join(map(str, DEPTHS))}"
            " (the cpu preset); the white square is the followed token",
            font=FONT, font_size=18, color=GREY_B,
        ).to_edge(DOWN, buff=0.3)
        background = Square(side_length=SIDE, stroke_width=0, fill_color=UNREACHED, fill_opacity=1.0)
        background.move_to(IMAGE_CENTER)
        # Start on the empty image (no fade from black): a looping GIF restarts cleanly.
        self.add(title, background, frame, caption)
        self.wait(0.8)

        y, lines, outline = 2.2, None, None
        for stage in range(len(DEPTHS) + 1):
            stride = PATCH * 2 ** max(stage - 1, 0)
            tokens = IMAGE // stride
            joined = pixel_squares(first, stage)
            new_lines = token_lines(stride)
            new_outline = token_outline(stride)
            count = int(((first >= 0) & (first <= stage)).sum())
            row = self.legend_row(stage, stride, tokens, count).move_to([0.6, y, 0], aligned_edge=LEFT)
            y -= 0.75
            fades = [Glide(old, fade="out", remover=True) for old in (lines, outline) if old is not None]
            self.play(*fades, Glide(new_lines, fade="in"), Glide(new_outline, fade="in"), run_time=0.6)
            self.play(Glide(joined, fade="in"), Glide(row, fade="in"), run_time=0.8)
            lines, outline = new_lines, new_outline
            self.wait(0.8)
        self.wait(1.5)

    @staticmethod
    def legend_row(stage: int, stride: int, tokens: int, count: int) -> VGroup:
        """Colour swatch + what the token sees after this step."""
        swatch = Square(side_length=0.32, stroke_width=0, fill_color=STAGE_COLORS[stage], fill_opacity=1.0)
        where = "its patch" if stage == 0 else f"after stage {stage} ({DEPTHS[stage - 1]} blocks)"
        share = 100 * count / IMAGE**2
        text = VGroup(
            Text(f"{where}: {count} px ({share:.0f} %)", font=FONT, font_size=20),
            Text(f"tokens {tokens}×{tokens}, each {stride}×{stride} px", font=FONT, font_size=16, color=GREY_B),
        ).arrange(DOWN, aligned_edge=LEFT, buff=0.08)
        return VGroup(swatch, text).arrange(RIGHT, buff=0.2, aligned_edge=UP)


if __name__ == "__main__":  # the numbers the scene will show
    first = reach_through_stages()
    for stage in range(len(DEPTHS) + 1):
        print(stage, int(((first >= 0) & (first <= stage)).sum()))
