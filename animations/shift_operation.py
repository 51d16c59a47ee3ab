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

import sys
from pathlib import Path

import numpy as np
from manim import (
    BLACK,
    DOWN,
    GOLD,
    GREY_B,
    LEFT,
    PURPLE_B,
    RIGHT,
    UP,
    WHITE,
    YELLOW,
    Arrow,
    Brace,
    ManimColor,
    Scene,
    Square,
    Text,
    VGroup,
    interpolate_color,
    smooth,
)

try:
    from animations.common import FONT, Glide
except ImportError:  # loaded by file path, e.g. `manim -ql animations/shift_operation.py`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from animations.common import FONT, Glide

# The toy feature map of the committed animation; ShiftOperation(size=..., channels=...,
# num_div=..., shift_pixel=...) draws another (lesson 02's "render it yourself" section).
HEIGHT, WIDTH, CHANNELS = 5, 5, 6
NUM_DIV = 6  # g = CHANNELS // NUM_DIV = 1 channel per moving group
SHIFT_PIXEL = 1
MAX_SIZE, MAX_CHANNELS = 9, 12  # what still fits on screen with readable numbers

CELL = 0.38  # side of one pixel cell, in Manim units, for the default map (smaller maps keep it)
TIGHT_GAP = 0.14  # gap between channels while they form one tensor
GROUP_GAP = 0.4  # gap between channel groups once they are split out
ROW_WIDTH = 13.4  # the default split-out row: 6 channels x 5 cells x CELL + 5 gaps of GROUP_GAP

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


def example_feature_map(size: int = HEIGHT, channels: int = CHANNELS) -> np.ndarray:
    """Input shown on screen: every channel holds 1..size² (1..25) in reading order.

    Unique values inside a channel let the scene locate each cell after the
    shift, and let a viewer check the motion by reading the numbers.
    """
    plane = np.arange(1, size * size + 1).reshape(size, size)
    return np.repeat(plane[:, :, None], channels, axis=2)


def check_parameters(size: int, channels: int, num_div: int, shift_pixel: int) -> None:
    """Raise a one-line ValueError when the scene cannot show these parameters."""
    problems = []
    if not 2 <= size <= MAX_SIZE:
        problems.append(f"size must be 2..{MAX_SIZE} (got {size})")
    if not 1 <= channels <= MAX_CHANNELS:
        problems.append(f"channels must be 1..{MAX_CHANNELS} (got {channels})")
    if not 1 <= num_div <= channels:
        problems.append(f"num_div must be 1..channels, so that g = channels // num_div >= 1 (got {num_div})")
    if not 1 <= shift_pixel < size:
        problems.append(f"shift_pixel must be 1..size - 1 (got {shift_pixel})")
    if problems:
        raise ValueError("ShiftOperation: " + "; ".join(problems))


def channel_group(channel: int, num_channels: int = CHANNELS, num_div: int = NUM_DIV) -> int:
    """Index (0..4) of the group a channel belongs to; 4 means unchanged."""
    g = num_channels // num_div
    return min(channel // g, 4)


def cell_motion(before: np.ndarray, after: np.ndarray) -> tuple[dict, tuple[int, int]]:
    """Find where each cell of one channel went.

    Returns ``(moves, offset)``: ``moves`` maps the (row, col) of every input
    cell whose value reappears in ``after`` to its (row, col) there (each
    output cell is claimed at most once, and zeros are never matched: they
    are the fill, not moved content); ``offset`` is the channel's common
    (d_row, d_col) displacement when there is one, else (0, 0).  It gives the
    direction in which cells that fell off the border slide out.
    """
    moves, claimed = {}, set()
    for (r, c), value in np.ndenumerate(before):
        if value == 0:
            continue
        for hit in map(tuple, np.argwhere(after == value).tolist()):
            if hit not in claimed:
                moves[(r, c)] = hit
                claimed.add(hit)
                break
    offsets = {(r2 - r, c2 - c) for (r, c), (r2, c2) in moves.items()}
    offset = offsets.pop() if len(offsets) == 1 else (0, 0)
    return moves, offset


def second_half(t: float) -> float:
    """Rate function that waits for half the animation, then eases in."""
    return smooth(max(0.0, 2 * t - 1))


def make_cell(value: int, color: ManimColor, max_value: int = HEIGHT * WIDTH, cell: float = CELL) -> VGroup:
    """A filled square with its value written on it; zeros are dark with a yellow 0."""
    if value == 0:
        fill, opacity, text_color = ZERO_FILL, 1.0, YELLOW
    else:
        # Brighter fill for larger values, so the picture shows a gradient
        # whose motion is visible even when the numbers are too small to read.
        fill = interpolate_color(BLACK, color, 0.35 + 0.6 * value / max_value)
        opacity, text_color = 1.0, WHITE
    square = Square(side_length=cell, stroke_width=0, fill_color=fill, fill_opacity=opacity)
    label = Text(str(value), font=FONT, font_size=14 * cell / CELL, color=text_color)
    label.move_to(square)
    label.set_z_index(3)
    cell = VGroup(square, label)
    cell.value = value  # what the cell shows, so tests can read the final picture
    return cell


class ChannelView(VGroup):
    """One channel: a fixed grid of slots (outlines) and the cells drawn under them.

    ``cells[(r, c)]`` is the cell currently sitting in slot (r, c).  Keeping
    the outlines separate from the moving cells makes it obvious which cells
    left the grid and which slots were vacated.
    """

    def __init__(self, plane: np.ndarray, color: ManimColor, cell: float = CELL):
        super().__init__()
        self.color_ = color
        self.cell = cell
        self.max_value = plane.size
        self.slots = VGroup()
        self.cells = {}
        for r in range(plane.shape[0]):
            for c in range(plane.shape[1]):
                slot = Square(side_length=cell, stroke_color=GREY_B, stroke_width=1.5)
                slot.move_to(self.slot_center(r, c))
                slot.set_z_index(2)  # outlines on top of the (moving) fills
                self.slots.add(slot)
                square = make_cell(int(plane[r, c]), color, self.max_value, cell)
                square.move_to(slot)
                self.cells[(r, c)] = square
        border = Square(side_length=cell * plane.shape[0], stroke_color=color, stroke_width=3)
        border.set_z_index(2)
        self.border = border
        self.add(*self.cells.values(), self.slots, border)

    def slot_center(self, r: int, c: int) -> np.ndarray:
        """Position of slot (r, c) relative to the channel's centre (row 0 on top)."""
        side = round(self.max_value**0.5)
        return np.array([(c - (side - 1) / 2) * self.cell, ((side - 1) / 2 - r) * self.cell, 0.0])


def channel_positions(gap_after: list[float], side: float) -> list[np.ndarray]:
    """Centres of the channel grids (``side`` wide) in a row, given the gap after each channel."""
    total = len(gap_after) * side + sum(gap_after[:-1])
    x = -total / 2 + side / 2
    positions = []
    for ch in range(len(gap_after)):
        positions.append(np.array([x, -0.2, 0.0]))
        x += side + gap_after[ch]
    return positions


class ShiftOperation(Scene):
    """Split the channels into groups, shift four of them, concatenate.

    ``size`` (the map is size x size), ``channels``, ``num_div`` and ``shift_pixel`` default
    to the committed animation's 5, 6, 6 and 1; the cells shrink to fit larger maps.
    """

    def __init__(
        self,
        size: int = HEIGHT,
        channels: int = CHANNELS,
        num_div: int = NUM_DIV,
        shift_pixel: int = SHIFT_PIXEL,
        **kwargs,
    ):
        check_parameters(size, channels, num_div, shift_pixel)
        self.size, self.channels, self.num_div, self.shift_pixel = size, channels, num_div, shift_pixel
        row = channels * size * CELL + (channels - 1) * GROUP_GAP
        self.scale_ = min(1.0, ROW_WIDTH / row)  # 1 for the default map
        self.cell = CELL * self.scale_
        super().__init__(**kwargs)

    def construct(self):
        size, channels, num_div, p = self.size, self.channels, self.num_div, self.shift_pixel
        tight_gap, group_gap = TIGHT_GAP * self.scale_, GROUP_GAP * self.scale_
        x = example_feature_map(size, channels)
        y = shift_feat(x, num_div, p)
        groups = [channel_group(ch, channels, num_div) for ch in range(channels)]

        title = Text("ShiftViT: the shift operation", font=FONT, font_size=34)
        title.to_edge(UP, buff=0.35)

        # Channels side by side form the input tensor (H x W x C, channels last);
        # pulled apart, they form the groups of the formula.
        side = self.cell * size
        tight = channel_positions([tight_gap] * channels, side)
        split_gaps = [
            tight_gap if ch + 1 < channels and groups[ch] == groups[ch + 1] else group_gap
            for ch in range(channels)
        ]
        split = channel_positions(split_gaps, side)

        views = []
        for ch in range(channels):
            view = ChannelView(x[:, :, ch], GROUP_COLORS[groups[ch]], self.cell)
            view.move_to(tight[ch])
            views.append(view)
        tags = [
            Text(f"c{ch}", font=FONT, font_size=18, color=GREY_B).next_to(views[ch], DOWN, buff=0.12)
            for ch in range(channels)
        ]
        tensor = VGroup(*views)
        input_brace = Brace(tensor, UP, buff=0.15, color=GREY_B)
        shape = f"{size} × {size} × {channels}"
        input_label = Text(f"input: {shape}", font=FONT, font_size=24).next_to(input_brace, UP, buff=0.1)

        g = channels // num_div
        caption = self.caption(
            f"{channels} channels of {size} × {size}.  num_div = {num_div}, so g = {channels} // {num_div}"
            f" = {g} channel{'s' if g > 1 else ''} per group"
        )
        # Start on the full input picture (no fade from black), so a looping GIF
        # restarts cleanly from the final picture to the first one.
        self.add(title, *views, *tags, input_brace, input_label, caption)
        self.wait(1.5)

        # 1. Split into groups and name what each group will do.
        caption = self.swap_caption(caption, "1. Split the channels into groups")
        moves = [split[ch] - tight[ch] for ch in range(channels)]
        self.play(
            Glide(input_brace, fade="out", remover=True),
            Glide(input_label, fade="out", remover=True),
            *[Glide(views[ch], moves[ch]) for ch in range(channels)],
            *[Glide(tags[ch], moves[ch]) for ch in range(channels)],
            run_time=1.0,
        )
        labels = self.group_labels(split, groups)
        labels.shift(0.25 * UP)
        self.play(Glide(labels, 0.25 * DOWN, fade="in"), run_time=0.6)
        self.wait(0.6)

        # 2. Shift: every cell goes where the formula put its value.
        moving = len({group for group in groups if group < 4})
        caption = self.swap_caption(
            caption,
            f"2. Move {moving} group{'s' if moving > 1 else ''} by {p} pixel{'s' if p > 1 else ''}:"
            " cells that leave the grid are dropped, gaps get 0",
        )
        self.play_shift(views, x, y, run_time=1.6)
        self.wait(1.2)

        # 3. Concatenate back to one tensor of the same shape.
        caption = self.swap_caption(
            caption, "3. Concatenate the groups: same shape, 0 parameters, 0 multiply-adds"
        )
        moves = [tight[ch] - split[ch] for ch in range(channels)]
        self.play(
            *[Glide(views[ch], moves[ch]) for ch in range(channels)],
            *[Glide(tags[ch], moves[ch]) for ch in range(channels)],
            *[Glide(label, np.mean([moves[ch] for ch in label.channels], axis=0)) for label in labels],
            run_time=1.0,
        )
        output_brace = Brace(VGroup(*views, *tags), DOWN, buff=0.1, color=GREY_B)
        output_label = Text(f"output: {shape}", font=FONT, font_size=24).next_to(
            output_brace, DOWN, buff=0.1
        )
        self.play(Glide(output_brace, fade="in"), Glide(output_label, fade="in"), run_time=0.5)
        self.wait(1.5)
        self.shown = self.shown_values(views)  # the final picture, for tests

    # ---- helpers -------------------------------------------------------

    @staticmethod
    def caption(text: str) -> Text:
        caption = Text(text, font=FONT, font_size=22)
        if caption.width > 13.2:  # keep long captions inside the 14.2-unit-wide frame
            caption.scale_to_fit_width(13.2)
        return caption.to_edge(DOWN, buff=0.3)

    def swap_caption(self, old: Text, text: str) -> Text:
        new = self.caption(text).shift(0.2 * DOWN)
        self.play(
            Glide(old, 0.2 * UP, fade="out", remover=True), Glide(new, 0.2 * UP, fade="in"), run_time=0.5
        )
        return new

    def group_labels(self, positions: list[np.ndarray], groups: list[int]) -> VGroup:
        """A name and a direction arrow above each group (unchanged: name only)."""
        labels = VGroup()
        for group, name in enumerate(GROUP_NAMES):
            members = [ch for ch in range(len(groups)) if groups[ch] == group]
            if not members:
                continue
            center = np.mean([positions[ch] for ch in members], axis=0)
            top = center + UP * (self.cell * self.size / 2)
            text = Text(name, font=FONT, font_size=20, color=GROUP_COLORS[group])
            text.move_to(top + UP * 1.2, aligned_edge=UP)  # align tops: all names have ascenders
            label = VGroup(text)
            direction = GROUP_ARROWS[group]
            if direction is not None:
                mid = top + UP * 0.45
                arrow = Arrow(
                    mid - direction * 0.3,
                    mid + direction * 0.3,
                    buff=0,
                    stroke_width=5,
                    max_tip_length_to_length_ratio=0.4,
                    color=GROUP_COLORS[group],
                )
                label.add(arrow)
            label.channels = members
            labels.add(label)
        return labels

    def play_shift(self, views: list[ChannelView], x: np.ndarray, y: np.ndarray, run_time: float) -> None:
        """Animate each channel of ``x`` turning into the same channel of ``y``.

        Every cell whose value reappears in ``y`` slides to its new slot;
        cells that left the grid slide on in the channel's direction while
        fading away; every slot not reached by a moved cell gets a new cell
        showing ``y``'s value there (a 0 for the shift), fading in once the
        slot has been vacated.  So the final picture is ``y`` whatever the
        formula does.  Dropped cells are taken out of their view afterwards.
        """
        animations, dropped = [], []
        for ch, view in enumerate(views):
            moves, (dr, dc) = cell_motion(x[:, :, ch], y[:, :, ch])
            cell_side = view.cell
            exit_step = np.array([dc * cell_side, -dr * cell_side, 0.0])  # screen y points up, rows go down
            new_cells = {}
            for (r, c), cell in view.cells.items():
                if (r, c) in moves:
                    r2, c2 = moves[(r, c)]
                    if (r2, c2) != (r, c):
                        animations.append(Glide(cell, [(c2 - c) * cell_side, (r - r2) * cell_side, 0.0]))
                    new_cells[(r2, c2)] = cell
                else:  # pushed past the border: slide out while fading away
                    animations.append(Glide(cell, exit_step, fade="out"))
                    dropped.append((view, cell))
            for r, c in np.ndindex(*x.shape[:2]):
                if (r, c) not in new_cells:
                    fill = make_cell(int(y[r, c, ch]), view.color_, view.max_value, cell_side)
                    fill.move_to(view.border.get_center() + view.slot_center(r, c))
                    view.add(fill)
                    animations.append(Glide(fill, fade="in", rate_func=second_half))
                    new_cells[(r, c)] = fill
            view.cells = new_cells
        if animations:
            self.play(*animations, run_time=run_time)
        else:  # nothing moved (e.g. shift_pixel 0): keep the timing
            self.wait(run_time)
        for view, cell in dropped:
            view.remove(cell)

    @staticmethod
    def shown_values(views: list[ChannelView]) -> np.ndarray:
        """The (H, W, C) values the channel grids display right now."""
        side = round(views[0].max_value**0.5)
        shown = np.zeros((side, side, len(views)), dtype=int)
        for ch, view in enumerate(views):
            for (r, c), cell in view.cells.items():
                shown[r, c, ch] = cell.value
        return shown


if __name__ == "__main__":  # quick check of the numbers the scene will show
    out = shift_feat(example_feature_map(), NUM_DIV, SHIFT_PIXEL)
    for ch in range(CHANNELS):
        print(f"channel {ch} ({GROUP_NAMES[channel_group(ch)]}):\n{out[:, :, ch]}")
