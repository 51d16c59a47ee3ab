"""Manim scene: how stacked shift blocks widen the receptive field.

One ShiftViT block shifts four channel groups by one pixel (left, right, up,
down) and keeps the rest in place; the block's MLP then mixes the channels at
every pixel.  So after one block, an output pixel depends on itself and its 4
neighbours: a plus shape.  Every further block grows that set by one more
pixel in each of those directions, so after ``k`` blocks the centre pixel can
be reached from every input pixel with ``|d_row| + |d_col| <= k``: a diamond
(the L1 ball of radius ``k``) of ``2k^2 + 2k + 1`` pixels.

The coloured cells are computed, not drawn by hand: :func:`reach_by_block`
pushes a one-hot map through the same NumPy ``shift_feat`` that drives the
``ShiftOperation`` scene and merges the channels like the MLP would.

Render with ``python animations/render.py --scene ReceptiveField``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from manim import (
    BLACK,
    DOWN,
    GREY_B,
    LEFT,
    RIGHT,
    UP,
    WHITE,
    ManimColor,
    Scene,
    Square,
    Text,
    VGroup,
)

try:
    from animations.common import FONT, Glide
    from animations.shift_operation import shift_feat
except ImportError:  # loaded by file path, e.g. `manim -ql animations/receptive_field.py`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from animations.common import FONT, Glide
    from animations.shift_operation import shift_feat

GRID = 9  # pixels per side; odd so that there is a centre pixel
BLOCKS = 4  # radius 4 just fits in a 9x9 grid
CELL = 0.56
GRID_CENTER = np.array([-3.6, -0.35, 0.0])

# Warm sequential colours: the later a pixel joins, the darker its cell.
REACH_COLORS = [
    WHITE,
    ManimColor("#FDE68A"),
    ManimColor("#F6AD55"),
    ManimColor("#E8697A"),
    ManimColor("#A5577F"),
]


def reach_by_block(size: int = GRID, blocks: int = BLOCKS) -> np.ndarray:
    """Block index at which each pixel of a ``size`` x ``size`` map first reaches the centre.

    Returns an int array: 0 for the centre itself, ``k`` for pixels that join
    after ``k`` blocks, -1 for pixels still out of reach after ``blocks``.

    Each step copies the current set into 5 channels, applies ``shift_feat``
    with ``num_div=5`` (four 1-channel moving groups plus one unchanged
    channel) and takes the union over channels, which is what the MLP's
    channel mixing does.  That propagates influence *outwards* from the
    centre; because the plus-shaped step is symmetric, the set of pixels the
    centre influences equals the set of pixels that influence the centre.
    """
    centre = size // 2
    reach = np.zeros((size, size), dtype=np.int8)
    reach[centre, centre] = 1
    first = np.full((size, size), -1, dtype=int)
    first[centre, centre] = 0
    for k in range(1, blocks + 1):
        stacked = np.repeat(reach[:, :, None], 5, axis=2)
        reach = shift_feat(stacked, num_div=5, shift_pixel=1).max(axis=2)
        first[(reach > 0) & (first < 0)] = k
    return first


def cell_center(r: int, c: int) -> np.ndarray:
    """Screen position of pixel (r, c); row 0 is at the top."""
    half = (GRID - 1) / 2
    return GRID_CENTER + np.array([(c - half) * CELL, (half - r) * CELL, 0.0])


class ReceptiveField(Scene):
    """A 9x9 map where the region that can reach the centre grows block by block."""

    def construct(self):
        first = reach_by_block()
        centre = GRID // 2

        title = Text("Stacked shifts widen the receptive field", font=FONT, font_size=32)
        title.to_edge(UP, buff=0.35)
        grid = VGroup(
            *[
                Square(side_length=CELL, stroke_color=GREY_B, stroke_width=1.5).move_to(cell_center(r, c))
                for r in range(GRID)
                for c in range(GRID)
            ]
        )
        grid.set_z_index(2)  # outlines stay visible over the coloured fills
        out_cell = self.reach_cell(centre, centre, 0)
        out_label = Text(
            'k in a cell: that input pixel reaches "out" after k blocks',
            font=FONT,
            font_size=16,
            color=GREY_B,
        ).next_to(grid, DOWN, buff=0.15)

        panel_left = 0.1
        intro = VGroup(
            Text("Each block: 4 channel groups move 1 pixel,", font=FONT, font_size=20),
            Text("then the MLP mixes channels at every pixel.", font=FONT, font_size=20),
        ).arrange(DOWN, aligned_edge=LEFT, buff=0.12)
        intro.move_to([panel_left, 2.3, 0], aligned_edge=LEFT)

        # Start on the empty grid (no fade from black): a looping GIF restarts cleanly.
        self.add(title, grid, out_cell, out_label, intro)
        self.wait(1.0)

        rows = VGroup()
        y = 1.2
        for k in range(1, BLOCKS + 1):
            new_cells = VGroup(*[self.reach_cell(r, c, k) for r, c in np.argwhere(first == k)])
            count = int(((first >= 0) & (first <= k)).sum())
            row = self.count_row(k, count).move_to([panel_left, y, 0], aligned_edge=LEFT)
            y -= 0.55
            rows.add(row)
            self.play(Glide(new_cells, fade="in"), Glide(row, fade="in"), run_time=0.8)
            self.wait(0.8 if k == 1 else 0.4)  # linger on the plus shape

        summary = VGroup(
            Text("k blocks reach a diamond, |Δrow| + |Δcol| ≤ k:", font=FONT, font_size=20),
            Text("2k² + 2k + 1 pixels.  Patch merging halves the", font=FONT, font_size=20),
            Text("resolution, so later stages see further still.", font=FONT, font_size=20),
        ).arrange(DOWN, aligned_edge=LEFT, buff=0.12)
        summary.move_to([panel_left, y - 0.45, 0], aligned_edge=LEFT + UP)
        self.play(Glide(summary, fade="in"), run_time=0.6)
        self.wait(1.5)

    @staticmethod
    def reach_cell(r: int, c: int, k: int) -> VGroup:
        """Cell (r, c) coloured for block ``k`` and labelled with ``k``."""
        square = Square(side_length=CELL, stroke_width=0, fill_color=REACH_COLORS[k], fill_opacity=1.0)
        square.move_to(cell_center(r, c))
        label = Text("out" if k == 0 else str(k), font=FONT, font_size=14 if k == 0 else 18, color=BLACK)
        label.move_to(square).set_z_index(3)
        return VGroup(square, label)

    @staticmethod
    def count_row(k: int, count: int) -> VGroup:
        """Legend row: colour swatch + "after k blocks: N pixels"."""
        swatch = Square(side_length=0.3, stroke_width=0, fill_color=REACH_COLORS[k], fill_opacity=1.0)
        blocks = "block" if k == 1 else "blocks"
        shape = "  (plus)" if k == 1 else ""
        text = Text(f"after {k} {blocks}: {count} pixels{shape}", font=FONT, font_size=22)
        return VGroup(swatch, text).arrange(RIGHT, buff=0.2)
