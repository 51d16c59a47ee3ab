"""What the lessons show: small matplotlib figures, a feature map as numbers, the animations.

Every ``plot_*`` function returns a ``matplotlib.figure.Figure`` and shows nothing:
make it the last expression of a notebook cell (or call ``display(fig)``) to
see it, ``fig.savefig(path)`` to keep it. The figures are detached from
pyplot's figure manager, so Jupyter does not draw them a second time and
creating many of them does not leak memory. Sizes and dpi are small so that
the images saved inside notebooks stay well under 1 MB.

A shift is also shown by numbers (``numbered_feature_map``, ``format_channels``: each
value names where it started) and by the Manim animations shipped with the package
(``show_animation``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from typing import Any

import keras
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from shiftvit_lib.data import DataSplits

ARROW = dict(arrowstyle="->", linewidth=0.8)
BOX = dict(edgecolor="black", linewidth=0.8)


def _figure(width: float, height: float, nrows: int = 1, ncols: int = 1, **kw: Any) -> tuple[Figure, Any]:
    """A figure laid out tight and its axes (one Axes, or an array), closed in pyplot so that
    only the returned object shows it."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), dpi=100, layout="tight", **kw)
    plt.close(fig)
    return fig, axes


def _title(ax: Any, title: str, grid: bool = True, **labels: Any) -> None:
    """The figures' one style: a size-10 title, axis labels and limits (``xlabel=...``), a light grid."""
    ax.set(**labels)
    ax.set_title(title, fontsize=10)
    if grid:
        ax.grid(alpha=0.3)


def plot_image_grid(
    images: np.ndarray,
    labels: Sequence[int],
    class_names: Sequence[str],
    predictions: Sequence[int] | None = None,
    confidences: Sequence[float] | None = None,
    ncols: int = 8,
    max_images: int = 32,
) -> Figure:
    """Show images with their labels; with predictions, colour right/wrong.

    Without ``predictions`` each title is the true class. With them, the title
    is the predicted class (and confidence if given), green when correct and
    red when wrong, with the true class underneath for the wrong ones. Images are
    (H, W, 3) RGB, uint8 [0, 255] as the data splits hold them (or float [0, 1]).
    """
    count = min(len(images), max_images)
    ncols = max(1, min(ncols, count))
    nrows = math.ceil(count / ncols)
    # Wrong predictions get a second title line, so their rows need more height.
    row_height = 1.45 if predictions is None else 1.75
    fig, axes = _figure(1.2 * ncols, row_height * nrows, nrows, ncols, squeeze=False)
    fig.get_layout_engine().set(pad=0.3)
    for index, ax in enumerate(axes.flat):
        ax.axis("off")
        if index >= count:
            continue
        ax.imshow(images[index], interpolation="nearest")
        true_name = class_names[int(labels[index])]
        if predictions is None:
            ax.set_title(true_name, fontsize=8)
            continue
        correct = int(predictions[index]) == int(labels[index])
        confidence = "" if confidences is None else f" {confidences[index]:.0%}"
        truth = "" if correct else f"\n(true: {true_name})"
        title = class_names[int(predictions[index])] + confidence + truth
        ax.set_title(title, fontsize=7, color="tab:green" if correct else "tab:red")
    return fig


def plot_class_counts(splits: DataSplits) -> Figure:
    """Grouped bars: images per class in train, val and test."""
    counts = splits.class_counts()
    positions = np.arange(len(splits.class_names))
    width = 0.8 / len(counts)
    fig, ax = _figure(7, 3)
    for offset, (split, values) in enumerate(counts.items()):
        centred = positions + (offset - (len(counts) - 1) / 2) * width
        ax.bar(centred, values, width, label=f"{split} ({values.sum():,})")
    ax.set_xticks(positions, splits.class_names, rotation=30, ha="right", fontsize=8)
    top = 1.3 * max(values.max() for values in counts.values())  # headroom keeps the legend off the bars
    _title(ax, "Images per class", grid=False, ylabel="images", ylim=(0, top))
    ax.legend(fontsize=8, ncols=len(counts), loc="upper center")
    return fig


def plot_history(history: Any) -> Figure:
    """Loss and accuracy per epoch, training vs validation.

    Accepts a ``keras.callbacks.History`` (what ``fit`` returns), its
    ``.history`` dict, or a dict read from a CSVLogger file with
    :func:`shiftvit_lib.tools.run_folder.read_history_csv`.
    """
    metrics: Mapping[str, Sequence[float]] = getattr(history, "history", history)
    accuracy = [k for k in metrics if ("acc" in k or k.startswith("top")) and not k.startswith("val_")]
    # Keras counts epochs from 0 (History.epoch, the CSVLogger "epoch" column); people from 1.
    epochs = np.asarray(metrics.get("epoch", range(len(metrics["loss"]))), dtype=int) + 1
    panels = {"loss": ["loss"], "accuracy": accuracy} if accuracy else {"loss": ["loss"]}
    fig, axes = _figure(4.5 * len(panels), 3.2, 1, len(panels), squeeze=False)
    for ax, (title, keys) in zip(axes.flat, panels.items()):
        for key in keys:
            for name, style in ((key, "-"), (f"val_{key}", "--")):
                if name in metrics:
                    ax.plot(epochs, np.asarray(metrics[name], dtype=float), style, label=name)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        _title(ax, title, xlabel="epoch")
        ax.legend(fontsize=8)
    return fig


def plot_time_to_accuracy(runs: Mapping[str, Mapping[str, Sequence[float]]], *, target: float) -> Figure:
    """Validation top-1 against minutes of training, one curve per run (time-to-accuracy).

    ``runs`` maps a label to a history read from ``history.csv``: its ``epoch_seconds``
    (validation included, as ``train_seconds`` of ``run.json``) add up to the time axis,
    its ``val_accuracy`` is the curve. ``target`` draws a horizontal line (e.g. 0.8) and
    marks where each run first reaches it.
    """
    fig, ax = _figure(5.5, 3.2)
    for index, (label, history) in enumerate(runs.items()):
        minutes = np.cumsum(np.asarray(history["epoch_seconds"], dtype=float)) / 60
        accuracy = np.asarray(history["val_accuracy"], dtype=float)
        (line,) = ax.plot(minutes, 100 * accuracy, "o-", markersize=3, label=label)
        reached = np.flatnonzero(accuracy >= target)
        if len(reached):
            first = reached[0]
            mark = f"{100 * target:.0f} % after {minutes[first]:.1f} min"
            below = dict(xytext=(10, -25 - 14 * index), textcoords="offset points", color=line.get_color())
            ax.annotate(mark, line.get_xydata()[first], fontsize=8, arrowprops=ARROW, **below)
    ax.axhline(100 * target, color="gray", linestyle=":", linewidth=1)
    _title(ax, "", xlabel="minutes of training (validation included)", ylabel="validation top-1 (%)")
    ax.legend(fontsize=8, loc="lower right")
    return fig


def plot_learning_rate(schedule: Callable[[Any], Any], total_steps: int) -> Figure:
    """The learning rate a schedule gives at each optimizer step.

    ``schedule`` is a ``keras.optimizers.schedules.LearningRateSchedule`` or
    any callable mapping a step to a learning rate.
    """
    # ~500 points draw a smooth curve without calling the schedule for every step.
    steps = np.unique(np.linspace(0, total_steps - 1, min(total_steps, 500)).astype(np.int64))
    rates = [float(keras.ops.convert_to_numpy(schedule(int(step)))) for step in steps]
    fig, ax = _figure(5, 3)
    ax.plot(steps, rates)
    ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    _title(ax, f"Learning-rate schedule (peak {max(rates):.3g})", xlabel="step", ylabel="learning rate")
    return fig


# --- Lessons 04, 06 and 07: architecture, block, confusion and calibration figures ---------------


def architecture_shapes(config: Any) -> list[tuple[str, tuple[int, int, int]]]:
    """``(part, (height, width, channels))`` after every part of a ShiftViT, from its config alone.

    The parts are the input, the preprocessing crop, the convolutional stem if the config
    has one, the patch projection and every stage (a stage's shape is its *output*, after
    its patch merging), from the config's ``stage_resolutions`` and ``stage_dims``.
    """
    sides, dims = config.stage_resolutions, config.stage_dims
    # A stage's output is the next stage's input (after its patch merging); the last keeps its size.
    outputs = list(zip(sides[1:] + sides[-1:], dims[1:] + dims[-1:]))
    half = -(-config.image_size // 2)
    stem = [("stem_conv", (half, half, config.stem_channels))] if config.stem_channels else []
    return [
        ("images", tuple(config.input_shape)),
        ("preprocessing", (config.image_size, config.image_size, config.input_shape[-1])),
        *stem,
        ("patch_projection", (sides[0], sides[0], dims[0])),
        *[(f"stage_{i + 1}", (s, s, d)) for i, (s, d) in enumerate(outputs)],
    ]


def plot_architecture(config: Any) -> Figure:
    """The ShiftViT of ``config`` as a row of boxes, with the tensor shape after every part.

    A box's height follows the feature map's side, its width the number of
    channels (log scale), so the pyramid is visible: the map shrinks, the
    channels grow. Stage boxes name their depth and whether they end in patch merging.
    """
    shapes = architecture_shapes(config)
    parts = [*shapes, ("pool", (1, 1, shapes[-1][1][2])), ("classifier", (1, 1, config.num_classes))]
    largest = max(shape[0] for _, shape in parts)
    names = {"patch_projection": "patch\nprojection", "preprocessing": "resize,\ncrop"}
    fig, ax = _figure(10, 3.1)
    x = 0.0
    for index, (name, (side, _, channels)) in enumerate(parts):
        height = 0.2 + 1.8 * math.sqrt(side / largest)
        width = 0.35 + 0.22 * math.log2(max(channels, 1))
        label = names.get(name, name)
        color = "tab:blue" if name in ("patch_projection", "classifier") else "lightgray"
        if name.startswith("stage_"):
            stage = int(name.removeprefix("stage_"))
            depth = config.depths[stage - 1]
            side_in = parts[index - 1][1][0]  # the blocks work at the previous part's size
            merging = "\n+ merging" if stage < len(config.depths) else ""
            label = f"stage {stage}\n{depth} block{'s' * (depth > 1)}\nat {side_in}×{side_in}{merging}"
            color = "tab:orange"
        ax.add_patch(plt.Rectangle((x, -height / 2), width, height, facecolor=color, alpha=0.55, **BOX))
        ax.text(x + width / 2, 1.2, label, ha="center", va="bottom", fontsize=7.5)
        shape = f"{channels}" if name in ("pool", "classifier") else f"{side}×{side}\n×{channels}"
        ax.text(x + width / 2, -1.2, shape, ha="center", va="top", fontsize=8, family="monospace")
        if index < len(parts) - 1:
            ax.annotate("", (x + width + 0.25, 0), (x + width + 0.02, 0), arrowprops=ARROW)
        x += width + 0.3
    ax.axis("off")
    title = f"ShiftViT '{config.name}': the tensor shape after every part (batch axis left out)"
    _title(ax, title, grid=False, xlim=(-0.1, x), ylim=(-2.2, 2.3))
    return fig


# Lesson 07's two blocks, top to bottom: (text, box colour; None: a step drawn without a box),
# and a note under each.
LAYER_NORM = ("LayerNorm", "lightgray")
MLP = ("MLP  d → r·d → d", "tab:blue")
ATTENTION = (
    "multi-head self-attention\nQ, K, V = 3 dense layers\nsoftmax(Q Kᵀ / √d) · V\nevery token ↔ every token"
)
SHIFT = "shift\n4 channel groups move 1 pixel\n(left, right, up, down)\nno parameters, no MACs"
BLOCKS = {
    "Attention block (ViT)": (
        [LAYER_NORM, (ATTENTION, "tab:red"), ("+ residual", None), LAYER_NORM, MLP, ("+ residual", None)],
        "mixes tokens with learned, input-dependent\nweights; cost grows with tokens²",
    ),
    "Shift block (ShiftViT)": (
        [(SHIFT, "tab:green"), LAYER_NORM, MLP, ("drop path, + residual", None)],
        "mixes tokens with a fixed pattern:\n4 neighbours per block; cost grows with tokens",
    ),
}


def plot_block_comparison() -> Figure:
    """A transformer block with attention beside a ShiftViT block: only the token mixer differs."""
    fig, axes = _figure(8, 4.4, ncols=2)
    bottoms = []
    for ax, (title, (boxes, note)) in zip(axes, BLOCKS.items()):
        y = 0.0
        for text, color in boxes:
            height = 0.45 if color is None else 0.5 + 0.22 * text.count("\n")
            if color is not None:
                ax.add_patch(plt.Rectangle((0.08, y - height), 0.84, height, fc=color, alpha=0.35, **BOX))
            middle, style = (y - 0.15, "italic") if color is None else (y - height / 2, "normal")
            ax.text(0.5, middle, text, ha="center", va="center", fontsize=8, style=style)
            ax.annotate("", (0.5, y - height - 0.12), (0.5, y - height), arrowprops=ARROW)
            y -= height + 0.15
        ax.text(0.5, y - 0.05, note, ha="center", va="top", fontsize=8)
        bottoms.append(y - 0.75)
        ax.axis("off")
        ax.set_title(title, fontsize=10)
    for ax in axes:  # one scale for both columns, so equal boxes look equal
        ax.set(xlim=(0, 1), ylim=(min(bottoms), 0.1))
    return fig


def plot_confusion_counts(cm: np.ndarray, class_names: Sequence[str]) -> Figure:
    """A confusion matrix whose numbers can be read: counts in large type, zeros left blank.

    Rows are true classes, columns predictions. The colour is the share of the row
    (so classes of different sizes compare), the number the count of images; the
    right margin gives each class's recall.
    """
    cm = np.asarray(cm)
    n = len(class_names)
    if cm.shape != (n, n):
        raise ValueError(f"cm must be {n}x{n}; got {cm.shape}")
    shares = cm / np.maximum(cm.sum(axis=1, keepdims=True), 1)
    fig, ax = _figure(6.4, 5.6)
    ax.imshow(shares, cmap="Blues", vmin=0, vmax=1)
    for (row, col), count in np.ndenumerate(cm):
        if count:
            weight = "bold" if row == col else "normal"
            color = "white" if shares[row, col] > 0.55 else "black"
            ax.text(col, row, int(count), ha="center", va="center", fontsize=9, weight=weight, color=color)
    recall = [f"{name}  ({share:.0%})" for name, share in zip(class_names, np.diag(shares))]
    ax.set_xticks(range(n), class_names, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(n), recall, fontsize=8)
    title = "Confusion matrix: images per cell (blank = 0)"
    _title(ax, title, grid=False, xlabel="predicted class", ylabel="true class  (recall)")
    return fig


def reliability_table(confidence: Sequence[float], correct: Sequence[bool], bins: int = 10) -> dict[str, Any]:
    """Calibration in ``bins`` equal-width confidence bins.

    Returns ``edges``, and per bin ``count``, ``mean_confidence`` and ``accuracy``
    (``nan`` for an empty bin), plus ``ece``: the expected calibration error, the
    average gap ``|accuracy - mean confidence|`` weighted by the share of images in
    each bin. A confidence of exactly 1 falls in the last bin.
    """
    confidence = np.asarray(confidence, dtype=np.float64)
    correct = np.asarray(correct, dtype=np.float64)
    if confidence.shape != correct.shape or confidence.ndim != 1 or confidence.size == 0:
        raise ValueError("confidence and correct must be 1-D arrays of the same, non-zero length")
    edges = np.linspace(0.0, 1.0, bins + 1)
    index = np.clip(np.digitize(confidence, edges[1:-1]), 0, bins - 1)
    count = np.bincount(index, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_confidence = np.bincount(index, confidence, bins) / count
        accuracy = np.bincount(index, correct, bins) / count
    ece = float(np.nansum(count * np.abs(accuracy - mean_confidence)) / confidence.size)  # empty bins: nan
    return dict(edges=edges, count=count, mean_confidence=mean_confidence, accuracy=accuracy, ece=ece)


def plot_reliability(confidence: Sequence[float], correct: Sequence[bool], bins: int = 10) -> Figure:
    """Reliability diagram: accuracy per confidence bin against the diagonal of perfect calibration.

    Bars below the diagonal mean overconfidence, above it underconfidence. The
    lower panel shows how many images fall in each bin; the title gives the ECE.
    """
    table = reliability_table(confidence, correct, bins)
    width = 1.0 / bins
    filled = table["count"] > 0
    centres = table["edges"][:-1] + width / 2
    fig, (top, bottom) = _figure(4.6, 4.6, 2, 1, sharex=True, height_ratios=[3, 1])
    bars = dict(alpha=0.75, edgecolor="black", linewidth=0.5, label="accuracy in the bin")
    top.bar(centres[filled], table["accuracy"][filled], 0.9 * width, color="tab:blue", **bars)
    mean = table["mean_confidence"][filled]
    top.plot(mean, mean, "o", color="tab:orange", markersize=4, label="mean confidence in the bin")
    top.plot([0, 1], [0, 1], "--", color="gray", linewidth=1, label="perfect calibration")
    _title(top, f"Reliability diagram (ECE {table['ece']:.3f})", grid=False, ylim=(0, 1), ylabel="accuracy")
    top.legend(fontsize=7, loc="upper left")
    bottom.bar(centres, table["count"], 0.9 * width, color="gray")
    bottom.set(xlim=(0, 1), xlabel="confidence of the top class", ylabel="images")
    bottom.yaxis.set_major_locator(MaxNLocator(3, integer=True))
    return fig


# --------------------------------------------------------------------------- a shift by numbers, animations
def numbered_feature_map(channels: int, height: int = 5, width: int = 5) -> Any:
    """A ``(1, height, width, channels)`` float32 array whose every channel holds 1, 2, ... row by row.

    Each number names the position it started at, so after a shift you can read off
    where every value went.
    """
    picture = np.arange(1, height * width + 1, dtype="float32").reshape(1, height, width, 1)
    return np.repeat(picture, channels, axis=-1)


def format_channels(tensor: Any, titles: Sequence[str]) -> str:
    """The channels of a ``(1, H, W, C)`` tensor as small integer grids, side by side.

    One title per channel is centred above its grid; columns are as wide as the
    widest number needs.
    """
    values = np.asarray(keras.ops.convert_to_numpy(tensor))
    if values.ndim != 4 or values.shape[0] != 1:
        raise ValueError(f"format_channels takes one feature map, shape (1, H, W, C); got {values.shape}")
    if len(titles) != values.shape[-1]:
        raise ValueError(f"{len(titles)} titles for {values.shape[-1]} channels; give one title per channel")
    channels = values[0].astype(int).transpose(2, 0, 1)  # (C, H, W)
    cell = max(len(str(v)) for v in channels.ravel()) + 1  # characters per number
    lines = [[f"{title:^{cell * channels.shape[2]}}" for title in titles]]
    lines += [
        ["".join(f"{v:{cell}d}" for v in channel[row]) for channel in channels]
        for row in range(channels.shape[1])
    ]
    return "\n".join("   ".join(line) for line in lines)


def show_animation(name: str) -> Any:
    """The animation GIF ``name`` shipped with the package (e.g. ``"shift_operation"``), embedded in
    the notebook as an HTML ``<img>``, so it plays everywhere.

    The GIF travels inside the notebook as a base64 ``data:`` URI in a ``text/html``
    output. JupyterLab, Colab, nbconvert's HTML and GitHub's notebook view all show
    that and animate it; a bare ``image/gif`` output is not rendered by nbconvert
    (and so not by HTML exports of the lessons).
    """
    import base64

    from IPython.display import HTML

    gif = resources.files("shiftvit_lib") / "assets" / "animations" / f"{name}.gif"
    data = base64.b64encode(gif.read_bytes()).decode("ascii")  # a name not shipped: FileNotFoundError
    alt = f"Animation: {name.replace('_', ' ')}"
    return HTML(f'<img src="data:image/gif;base64,{data}" alt="{alt}">')
