"""Manim scene: the parameter-free shift operation at the heart of ShiftViT.

ShiftViT (arXiv 2201.10801) replaces attention with a *shift* of channel
groups.  For a feature map with ``C`` channels and ``num_div`` groups,
``g = C // num_div`` and

* channels ``[0, g)``   move LEFT  by ``shift_pixel`` (toward column 0),
* channels ``[g, 2g)``  move RIGHT,
* channels ``[2g, 3g)`` move UP    (toward row 0),
* channels ``[3g, 4g)`` move DOWN,
* channels ``[4g, C)``  stay where they are.

Cells pushed past the border are dropped and the cells that are vacated are
filled with zeros.  The groups are then concatenated back in the same order,
so the output has exactly the input's shape.

The scene below draws a 5x5 feature map with 6 channels and ``num_div = 6``
(so ``g = 1``: four moving channels, two unchanged ones).  Every number shown
after the shift is read from :func:`shift_feat`, a tiny NumPy version of the
formula, and every cell's motion is derived by finding where its value ended
up in that output.  The picture is therefore the formula's output: if the
formula moved a group the wrong way, the animation would too.

Render with ``python animations/render.py --scene ShiftOperation`` (see
``animations/README.md``).  Labels use ``Text`` only, so no LaTeX is needed.
"""

from __future__ import annotations

import numpy as np
from manim import (
    BLACK,
    DOWN,
    GOLD,
    GREY_B,
    GREY_D,
    LEFT,
    PURPLE_B,
    RIGHT,
    UP,
    WHITE,
    YELLOW,
    Arrow,
    Brace,
    FadeIn,
    FadeOut,
    ManimColor,
    Scene,
    Square,
    Text,
    VGroup,
    Write,
    interpolate_color,
)

# A font that ships with Debian's fonts-dejavu-core, so renders look the same
# on any fresh machine (Pango silently falls back to another font otherwise).
FONT = "DejaVu Sans"

# Size of the toy feature map drawn on screen.
HEIGHT, WIDTH, CHANNELS = 5, 5, 6
NUM_DIV = 6  # g = CHANNELS // NUM_DIV = 1 channel per moving group
SHIFT_PIXEL = 1

CELL = 0.38  # side of one pixel cell, in Manim units
TIGHT_GAP = 0.14  # gap between channels while they form one tensor
GROUP_GAP = 0.5  # gap between channel groups once they are split out

# One colour per channel group, in the order of the formula.
GROUP_COLORS = [
    ManimColor("#58C4DD"),  # left  (blue)
    ManimColor("#83C167"),  # right (green)
    GOLD,  # up
    ManimColor("#FC6255"),  # down  (red)
    PURPLE_B,  # unchanged
]
GROUP_NAMES = ["shift left", "shift right", "shift up", "shift down", "unchanged"]
# Screen direction of each group's motion (rows grow downwards on screen).
GROUP_ARROWS = [LEFT, RIGHT, UP, DOWN, None]

ZERO_FILL = ManimColor("#2a2a2a")


def shift_feat(x: np.ndarray, num_div: int, shift_pixel: int = 1) -> np.ndarray:
    """Shift channel groups of a channels-last feature map ``x`` of shape (H, W, C).

    Mirrors SPACH's ``shift_feat`` (written there for NCHW tensors):
    group 0 moves left, 1 right, 2 up, 3 down, the rest is copied unchanged;
    vacated cells are zero.
    """
    g = x.shape[-1] // num_div
    p = shift_pixel
    out = np.zeros_like(x)
    out[:, :-p, 0 * g : 1 * g] = x[:, p:, 0 * g : 1 * g]  # left: content slides to column 0
    out[:, p:, 1 * g : 2 * g] = x[:, :-p, 1 * g : 2 * g]  # right
    out[:-p, :, 2 * g : 3 * g] = x[p:, :, 2 * g : 3 * g]  # up: content slides to row 0
    out[p:, :, 3 * g : 4 * g] = x[:-p, :, 3 * g : 4 * g]  # down
    out[:, :, 4 * g :] = x[:, :, 4 * g :]  # no shift
    return out


def example_feature_map() -> np.ndarray:
    """Input shown on screen: every channel holds 1..25 in reading order.

    Unique values inside a channel let the scene locate each cell after the
    shift, and let a viewer check the motion by reading the numbers.
    """
    plane = np.arange(1, HEIGHT * WIDTH + 1).reshape(HEIGHT, WIDTH)
    return np.repeat(plane[:, :, None], CHANNELS, axis=2)


def channel_group(channel: int, num_channels: int = CHANNELS, num_div: int = NUM_DIV) -> int:
    """Index (0..4) of the group a channel belongs to; 4 means unchanged."""
    g = num_channels // num_div
    return min(channel // g, 4)


def cell_motion(before: np.ndarray, after: np.ndarray) -> tuple[dict, tuple[int, int]]:
    """Find where each cell of one channel went.

    Returns ``(moves, offset)``: ``moves`` maps the (row, col) of every input
    cell that survived to its (row, col) in ``after``; ``offset`` is the common
    (d_row, d_col) displacement of the channel, used to slide the cells that
    fell off the border in the same direction.
    """
    moves = {}
    for (r, c), value in np.ndenumerate(before):
        hits = np.argwhere(after == value)
        if len(hits):
            moves[(r, c)] = tuple(int(i) for i in hits[0])
    offsets = {(r2 - r, c2 - c) for (r, c), (r2, c2) in moves.items()}
    offset = offsets.pop() if len(offsets) == 1 else (0, 0)
    return moves, offset


def make_cell(value: int, color: ManimColor) -> VGroup:
    """A filled square with its value written on it; zeros are dark with a yellow 0."""
    if value == 0:
        fill, opacity, text_color = ZERO_FILL, 1.0, YELLOW
    else:
        # Brighter fill for larger values, so the picture shows a gradient
        # whose motion is visible even when the numbers are too small to read.
        fill = interpolate_color(BLACK, color, 0.35 + 0.6 * value / (HEIGHT * WIDTH))
        opacity, text_color = 1.0, WHITE
    square = Square(side_length=CELL, stroke_width=0, fill_color=fill, fill_opacity=opacity)
    label = Text(str(value), font=FONT, font_size=13, color=text_color)
    label.move_to(square)
    label.set_z_index(3)
    return VGroup(square, label)


class ChannelView(VGroup):
    """One channel: a fixed grid of slots (outlines) and the cells drawn under them.

    ``cells[(r, c)]`` is the cell currently sitting in slot (r, c).  Keeping
    the outlines separate from the moving cells makes it obvious which cells
    left the grid and which slots were vacated.
    """

    def __init__(self, plane: np.ndarray, color: ManimColor):
        super().__init__()
        self.color_ = color
        self.slots = VGroup()
        self.cells = {}
        for r in range(plane.shape[0]):
            for c in range(plane.shape[1]):
                slot = Square(side_length=CELL, stroke_color=GREY_B, stroke_width=1.5)
                slot.move_to(self.slot_center(r, c))
                slot.set_z_index(2)  # outlines on top of the (moving) fills
                self.slots.add(slot)
                cell = make_cell(int(plane[r, c]), color)
                cell.move_to(slot)
                self.cells[(r, c)] = cell
        border = Square(side_length=CELL * plane.shape[0], stroke_color=color, stroke_width=3)
        border.set_z_index(2)
        self.border = border
        self.add(*self.cells.values(), self.slots, border)

    @staticmethod
    def slot_center(r: int, c: int) -> np.ndarray:
        """Position of slot (r, c) relative to the channel's centre (row 0 on top)."""
        return np.array([(c - (WIDTH - 1) / 2) * CELL, ((HEIGHT - 1) / 2 - r) * CELL, 0.0])


def channel_positions(gap_after: list[float]) -> list[np.ndarray]:
    """Centres of the channel grids in a row, given the gap after each channel."""
    side = CELL * WIDTH
    total = CHANNELS * side + sum(gap_after[:-1])
    x = -total / 2 + side / 2
    positions = []
    for ch in range(CHANNELS):
        positions.append(np.array([x, -0.2, 0.0]))
        x += side + gap_after[ch]
    return positions


class ShiftOperation(Scene):
    """Split the channels into groups, shift four of them one pixel, concatenate."""

    def construct(self):
        x = example_feature_map()
        y = shift_feat(x, NUM_DIV, SHIFT_PIXEL)
        groups = [channel_group(ch) for ch in range(CHANNELS)]

        title = Text("ShiftViT: the shift operation", font=FONT, font_size=34)
        title.to_edge(UP, buff=0.35)

        # Channels side by side: the input tensor (H x W x C, channels last).
        tight = channel_positions([TIGHT_GAP] * CHANNELS)
        # The same channels pulled apart into the groups of the formula.
        split_gaps = [GROUP_GAP if groups[ch] != groups[min(ch + 1, CHANNELS - 1)] else TIGHT_GAP
                      for ch in range(CHANNELS)]
        split = channel_positions(split_gaps)

        views = []
        for ch in range(CHANNELS):
            view = ChannelView(x[:, :, ch], GROUP_COLORS[groups[ch]])
            view.move_to(tight[ch])
            views.append(view)
        channel_tags = VGroup(*[
            Text(f"c{ch}", font=FONT, font_size=18, color=GREY_B).next_to(views[ch], DOWN, buff=0.12)
            for ch in range(CHANNELS)
        ])
        tensor = VGroup(*views)
        input_brace = Brace(tensor, UP, buff=0.15, color=GREY_B)
        input_label = Text("input: 5 × 5 × 6", font=FONT, font_size=24).next_to(input_brace, UP, buff=0.1)

        caption = self.caption("6 channels of 5 × 5.  num_div = 6, so g = 6 // 6 = 1 channel per group")
        self.play(FadeIn(title), FadeIn(tensor), FadeIn(channel_tags),
                  FadeIn(input_brace), FadeIn(input_label), FadeIn(caption), run_time=1.0)
        self.wait(1.0)

        # 1. Split into groups and name what each group will do.
        labels = self.group_labels(split, groups)
        caption = self.swap_caption(caption, "1. Split the channels into groups")
        self.play(
            FadeOut(input_brace), FadeOut(input_label),
            *[view.animate.move_to(split[ch]) for ch, view in enumerate(views)],
            *[tag.animate.move_to(split[ch] + (tag.get_center() - tight[ch])) for ch, tag in enumerate(channel_tags)],
            run_time=1.0,
        )
        self.play(FadeIn(labels, shift=0.2 * DOWN), run_time=0.6)
        self.wait(0.6)

        # 2. Shift: every cell goes where the formula put its value.
        caption = self.swap_caption(caption, "2. Move four groups by 1 pixel: cells that leave the grid are dropped, gaps get 0")
        self.play_shift(views, x, y, run_time=1.6)
        self.wait(1.2)

        # 3. Concatenate back to one tensor of the same shape.
        caption = self.swap_caption(caption, "3. Concatenate the groups: same shape, 0 parameters, 0 multiply-adds")
        output = VGroup(*views)
        self.play(
            *[view.animate.move_to(tight[ch]) for ch, view in enumerate(views)],
            *[tag.animate.move_to(tight[ch] + (tag.get_center() - split[ch])) for ch, tag in enumerate(channel_tags)],
            *[label.animate.shift(self.label_shift(label, split, tight)) for label in labels],
            run_time=1.0,
        )
        output_brace = Brace(output, DOWN, buff=0.5, color=GREY_B)
        output_label = Text("output: 5 × 5 × 6", font=FONT, font_size=24).next_to(output_brace, DOWN, buff=0.1)
        self.play(FadeIn(output_brace), FadeIn(output_label), run_time=0.5)
        self.wait(1.5)

    # ---- helpers -------------------------------------------------------

    @staticmethod
    def caption(text: str) -> Text:
        caption = Text(text, font=FONT, font_size=22)
        if caption.width > 13.2:  # keep long captions inside the 14.2-unit frame
            caption.scale_to_fit_width(13.2)
        return caption.to_edge(DOWN, buff=0.3)

    def swap_caption(self, old: Text, text: str) -> Text:
        new = self.caption(text)
        self.play(FadeOut(old, shift=0.2 * UP), FadeIn(new, shift=0.2 * UP), run_time=0.5)
        return new

    @staticmethod
    def group_labels(positions: list[np.ndarray], groups: list[int]) -> VGroup:
        """A name and a direction arrow above each group (unchanged: name only)."""
        labels = VGroup()
        for group, name in enumerate(GROUP_NAMES):
            members = [ch for ch in range(CHANNELS) if groups[ch] == group]
            if not members:
                continue
            center = np.mean([positions[ch] for ch in members], axis=0)
            top = center + UP * (CELL * HEIGHT / 2)
            text = Text(name, font=FONT, font_size=20, color=GROUP_COLORS[group])
            text.move_to(top + UP * 1.05)
            label = VGroup(text)
            direction = GROUP_ARROWS[group]
            if direction is not None:
                mid = top + UP * 0.45
                arrow = Arrow(mid - direction * 0.3, mid + direction * 0.3, buff=0,
                              stroke_width=5, max_tip_length_to_length_ratio=0.4,
                              color=GROUP_COLORS[group])
                label.add(arrow)
            label.channels = members
            labels.add(label)
        return labels

    @staticmethod
    def label_shift(label: VGroup, src: list[np.ndarray], dst: list[np.ndarray]) -> np.ndarray:
        """How far a group label must move to stay above its channels."""
        return np.mean([dst[ch] - src[ch] for ch in label.channels], axis=0)

    def play_shift(self, views: list[ChannelView], x: np.ndarray, y: np.ndarray, run_time: float) -> None:
        """Animate each channel of ``x`` turning into the same channel of ``y``.

        Cells slide by the channel's offset; cells that leave the grid fade
        out while sliding; zero cells fade in at the vacated slots.  The view
        groups are rebuilt only after the animation, so Manim never has to
        split a group that is still on screen.
        """
        animations, dropped, zeros = [], [], []
        for ch, view in enumerate(views):
            moves, (dr, dc) = cell_motion(x[:, :, ch], y[:, :, ch])
            if (dr, dc) == (0, 0) and len(moves) == HEIGHT * WIDTH:
                continue  # unchanged channel: nothing to animate
            step = np.array([dc * CELL, -dr * CELL, 0.0])  # screen y points up, rows go down
            new_cells = {}
            for (r, c), cell in view.cells.items():
                if (r, c) in moves:
                    animations.append(cell.animate.shift(step))
                    new_cells[moves[(r, c)]] = cell
                else:  # pushed past the border: slide out while fading away
                    animations.append(cell.animate.shift(step).set_opacity(0))
                    dropped.append((view, cell))
            for r, c in zip(*np.nonzero(y[:, :, ch] == 0)):
                zero = make_cell(0, view.color_)
                zero.move_to(view.get_center() + ChannelView.slot_center(r, c))
                animations.append(FadeIn(zero, shift=step))
                new_cells[(int(r), int(c))] = zero
                zeros.append((view, zero))
            view.cells = new_cells
        self.play(*animations, run_time=run_time)
        for view, cell in dropped:
            view.remove(cell)
        for view, zero in zeros:
            self.remove(zero)
            view.add(zero)


if __name__ == "__main__":  # quick check of the numbers the scene will show
    out = shift_feat(example_feature_map(), NUM_DIV, SHIFT_PIXEL)
    for ch in range(CHANNELS):
        print(f"channel {ch} ({GROUP_NAMES[channel_group(ch)]}):\n{out[:, :, ch]}")
