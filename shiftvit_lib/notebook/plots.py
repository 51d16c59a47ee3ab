"""Small matplotlib figures for the notebooks.

Every function returns a ``matplotlib.figure.Figure`` and shows nothing:
make it the last expression of a notebook cell (or call ``display(fig)``) to
see it, ``fig.savefig(path)`` to keep it. The figures are detached from
pyplot's figure manager, so Jupyter does not draw them a second time and
creating many of them does not leak memory. Sizes and dpi are small so that
the images saved inside notebooks stay well under 1 MB.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import keras
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from shiftvit_lib.data import DataSplits

DPI = 100
CORRECT_COLOR = "tab:green"
WRONG_COLOR = "tab:red"


def _new_figure(width: float, height: float, nrows: int = 1, ncols: int = 1) -> tuple[Figure, Any]:
    """A figure with subplots, closed in pyplot so only the returned object shows it."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), dpi=DPI, squeeze=False)
    plt.close(fig)
    return fig, axes


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
    red when wrong, with the true class underneath for the wrong ones.
    """
    count = min(len(images), max_images)
    if count == 0:
        raise ValueError("no images to plot")
    if len(labels) < count or (predictions is not None and len(predictions) < count):
        raise ValueError("labels (and predictions, if given) need one entry per image")
    ncols = max(1, min(ncols, count))
    nrows = math.ceil(count / ncols)
    # Wrong predictions get a second title line, so their rows need more height.
    row_height = 1.45 if predictions is None else 1.75
    fig, axes = _new_figure(1.2 * ncols, row_height * nrows, nrows, ncols)
    for index, ax in enumerate(axes.flat):
        ax.axis("off")
        if index >= count:
            continue
        image = _displayable(images[index])
        # Fixed limits: a plain grey image must not be stretched to black/white.
        limits = {"vmin": 0, "vmax": 255 if image.dtype == np.uint8 else 1.0} if image.ndim == 2 else {}
        ax.imshow(image, cmap="gray", interpolation="nearest", **limits)
        true_name = class_names[int(labels[index])]
        if predictions is None:
            ax.set_title(true_name, fontsize=8)
            continue
        predicted = int(predictions[index])
        title = class_names[predicted]
        if confidences is not None:
            title += f" {confidences[index]:.0%}"
        correct = predicted == int(labels[index])
        if not correct:
            title += f"\n(true: {true_name})"
        ax.set_title(title, fontsize=7, color=CORRECT_COLOR if correct else WRONG_COLOR)
    fig.tight_layout(pad=0.3)
    return fig


def _displayable(image: Any) -> np.ndarray:
    """uint8 [0, 255] or float [0, 1] pixels as imshow expects; (H, W, 1) as (H, W)."""
    image = np.asarray(image)
    if image.ndim == 3 and image.shape[-1] == 1:
        image = image[..., 0]  # cmap="gray" then applies; RGB images ignore cmap
    if image.dtype != np.uint8 and image.max() > 1.0:
        image = np.clip(image, 0, 255).astype(np.uint8)  # floats in [0, 255]
    return image


def plot_class_counts(splits: DataSplits) -> Figure:
    """Grouped bars: images per class in train, val and test."""
    counts = splits.class_counts()
    positions = np.arange(len(splits.class_names))
    bar_width = 0.8 / len(counts)
    fig, axes = _new_figure(7, 3)
    ax = axes[0, 0]
    for offset, (split, values) in enumerate(counts.items()):
        centre_offset = offset - (len(counts) - 1) / 2
        ax.bar(positions + centre_offset * bar_width, values, bar_width, label=f"{split} ({values.sum():,})")
    ax.set_xticks(positions, splits.class_names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("images")
    ax.set_title("Images per class", fontsize=10)
    # Headroom above the tallest bar keeps the legend off the bars.
    ax.set_ylim(0, 1.3 * max(values.max() for values in counts.values()))
    ax.legend(fontsize=8, ncols=len(counts), loc="upper center")
    fig.tight_layout()
    return fig


def plot_history(history: Any) -> Figure:
    """Loss and accuracy per epoch, training vs validation.

    Accepts a ``keras.callbacks.History`` (what ``fit`` returns), its
    ``.history`` dict, or a dict read from a CSVLogger file with
    :func:`shiftvit_lib.tools.runs.read_history_csv`.
    """
    metrics: Mapping[str, Sequence[float]] = getattr(history, "history", history)
    if not isinstance(metrics, Mapping) or "loss" not in metrics:
        raise ValueError(
            "history must be a keras History or a dict with at least a 'loss' list; "
            f"got keys {list(metrics) if isinstance(metrics, Mapping) else type(history)}"
        )
    accuracy_keys = [k for k in metrics if ("acc" in k or k.startswith("top")) and not k.startswith("val_")]
    # Keras counts epochs from 0 (History.epoch, the CSVLogger "epoch" column); people from 1.
    epochs = metrics.get("epoch", getattr(history, "epoch", None))
    if epochs is None or len(epochs) != len(metrics["loss"]):
        epochs = range(len(metrics["loss"]))
    x = np.asarray(epochs, dtype=int) + 1
    panels = [["loss"]] + ([accuracy_keys] if accuracy_keys else [])
    fig, axes = _new_figure(4.5 * len(panels), 3.2, 1, len(panels))
    for ax, keys in zip(axes.flat, panels, strict=True):
        for key in keys:
            for name, style in ((key, "-"), (f"val_{key}", "--")):
                if name in metrics:
                    ax.plot(x, np.asarray(metrics[name], dtype=float), style, label=name)
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title("accuracy" if keys is accuracy_keys else "loss", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def training_minutes(history: Mapping[str, Sequence[float]]) -> np.ndarray:
    """Minutes of training at the end of each epoch: the running sum of ``epoch_seconds``.

    Validation is included, as in ``train_seconds`` of ``run.json``.
    """
    if "epoch_seconds" not in history or "val_accuracy" not in history:
        raise ValueError(
            "history needs 'epoch_seconds' and 'val_accuracy' columns (a history.csv "
            f"written by shiftvit_lib.recipe); got {sorted(history)}"
        )
    return np.cumsum(np.asarray(history["epoch_seconds"], dtype=float)) / 60


def minutes_to_accuracy(history: Mapping[str, Sequence[float]], target: float) -> float | None:
    """Minutes of training until validation top-1 first reaches ``target``; None if it never does."""
    minutes = training_minutes(history)
    reached = np.flatnonzero(np.asarray(history["val_accuracy"], dtype=float) >= target)
    return float(minutes[reached[0]]) if reached.size else None


def plot_time_to_accuracy(
    runs: Mapping[str, Mapping[str, Sequence[float]]], *, target: float | None = None
) -> Figure:
    """Validation top-1 against minutes of training, one curve per run (time-to-accuracy).

    ``runs`` maps a label to a history read from ``history.csv`` (it needs ``epoch_seconds``
    and ``val_accuracy``); :func:`training_minutes` gives the time axis. ``target`` draws a
    horizontal line (e.g. 0.8) and marks where each run first reaches it.
    """
    fig, axes = _new_figure(5.5, 3.2)
    ax = axes[0, 0]
    for index, (label, history) in enumerate(runs.items()):
        minutes = training_minutes(history)
        accuracy = 100 * np.asarray(history["val_accuracy"], dtype=float)
        (line,) = ax.plot(minutes, accuracy, "o-", markersize=3, label=label)
        reached = None if target is None else minutes_to_accuracy(history, target)
        if reached is not None:
            first = int(np.searchsorted(minutes, reached))
            ax.annotate(
                f"{100 * target:.0f} % after {reached:.1f} min",
                (minutes[first], accuracy[first]),
                xytext=(10, -25 - 14 * index),
                textcoords="offset points",
                fontsize=8,
                color=line.get_color(),
                arrowprops=dict(arrowstyle="->", linewidth=0.8),
            )
    if target is not None:
        ax.axhline(100 * target, color="gray", linestyle=":", linewidth=1)
    ax.set_xlabel("minutes of training (validation included)")
    ax.set_ylabel("validation top-1 (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def plot_learning_rate(schedule: Callable[[Any], Any], total_steps: int) -> Figure:
    """The learning rate a schedule gives at each optimizer step.

    ``schedule`` is a ``keras.optimizers.schedules.LearningRateSchedule`` or
    any callable mapping a step to a learning rate.
    """
    if total_steps < 1:
        raise ValueError(f"total_steps must be positive; got {total_steps}")
    # ~500 points draw a smooth curve without calling the schedule for every step.
    steps = np.unique(np.linspace(0, total_steps - 1, min(total_steps, 500)).astype(np.int64))
    rates = [float(keras.ops.convert_to_numpy(schedule(int(step)))) for step in steps]
    fig, axes = _new_figure(5, 3)
    ax = axes[0, 0]
    ax.plot(steps, rates)
    ax.set_xlabel("step")
    ax.set_ylabel("learning rate")
    ax.set_title(f"Learning-rate schedule (peak {max(rates):.3g})", fontsize=10)
    ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3))
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


# --- Lessons 04, 06 and 07: architecture, block, confusion and calibration figures ---------------


def architecture_shapes(config: Any) -> list[tuple[str, tuple[int, int, int]]]:
    """``(part, (height, width, channels))`` after every part of a ShiftViT, from its config alone.

    The parts are the input, the preprocessing crop, the convolutional stem if the config
    has one, the patch projection and every stage (a stage's shape is its *output*, after
    its patch merging), from the config's ``stage_resolutions`` and ``stage_dims``.
    """
    side, channels = config.input_shape[0], config.input_shape[-1]
    sides, dims = config.stage_resolutions, config.stage_dims
    # A stage's output is the next stage's input (after its patch merging); the last keeps its size.
    outputs = list(zip(sides[1:] + sides[-1:], dims[1:] + dims[-1:]))
    half = -(-config.image_size // 2)
    stem = [("stem_conv", (half, half, config.stem_channels))] if config.stem_channels else []
    return [
        ("images", (side, side, channels)),
        ("preprocessing", (config.image_size, config.image_size, channels)),
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
    fig, axes = _new_figure(10, 3.1)
    ax = axes[0, 0]
    largest = max(shape[0] for _, shape in parts)
    sides = [shape[0] for _, shape in parts]
    x = 0.0
    for index, (name, (height, _, channels)) in enumerate(parts):
        box_h = 0.2 + 1.8 * math.sqrt(height / largest)
        box_w = 0.35 + 0.22 * math.log2(max(channels, 1))
        if name.startswith("stage_"):
            stage = int(name.split("_")[1]) - 1
            merge = stage < len(config.depths) - 1
            side_in = sides[index - 1]  # the blocks work at the previous part's size
            label = (
                f"stage {stage + 1}\n{config.depths[stage]} block{'s' if config.depths[stage] > 1 else ''}"
                f"\nat {side_in}×{side_in}"
            )
            label += "\n+ merging" if merge else ""
            color = "tab:orange"
        else:
            label = name.replace("patch_projection", "patch\nprojection").replace(
                "preprocessing", "resize,\ncrop"
            )
            color = "tab:blue" if name in ("patch_projection", "classifier") else "lightgray"
        ax.add_patch(
            plt.Rectangle(
                (x, -box_h / 2), box_w, box_h, facecolor=color, alpha=0.55, edgecolor="black", linewidth=0.8
            )
        )
        ax.text(x + box_w / 2, 1.2, label, ha="center", va="bottom", fontsize=7.5)
        shape_text = (
            f"{height}×{height}\n×{channels}" if name not in ("pool", "classifier") else f"{channels}"
        )
        ax.text(x + box_w / 2, -1.2, shape_text, ha="center", va="top", fontsize=8, family="monospace")
        if index < len(parts) - 1:
            ax.annotate(
                "",
                xy=(x + box_w + 0.25, 0),
                xytext=(x + box_w + 0.02, 0),
                arrowprops=dict(arrowstyle="->", linewidth=0.8),
            )
        x += box_w + 0.3
    ax.set_xlim(-0.1, x)
    ax.set_ylim(-2.2, 2.3)
    ax.axis("off")
    ax.set_title(
        f"ShiftViT '{config.name}': the tensor shape after every part (batch axis left out)", fontsize=10
    )
    fig.tight_layout()
    return fig


def plot_block_comparison() -> Figure:
    """A transformer block with attention beside a ShiftViT block: only the token mixer differs."""
    fig, axes = _new_figure(8, 4.4, ncols=2)
    columns = [
        (
            "Attention block (ViT)",
            [
                ("LayerNorm", "lightgray"),
                (
                    "multi-head self-attention\nQ, K, V = 3 dense layers\nsoftmax(Q Kᵀ / √d) · V\nevery token ↔ every token",
                    "tab:red",
                ),
                ("+ residual", None),
                ("LayerNorm", "lightgray"),
                ("MLP  d → r·d → d", "tab:blue"),
                ("+ residual", None),
            ],
            "mixes tokens with learned, input-dependent\nweights; cost grows with tokens²",
        ),
        (
            "Shift block (ShiftViT)",
            [
                (
                    "shift\n4 channel groups move 1 pixel\n(left, right, up, down)\nno parameters, no MACs",
                    "tab:green",
                ),
                ("LayerNorm", "lightgray"),
                ("MLP  d → r·d → d", "tab:blue"),
                ("drop path, + residual", None),
            ],
            "mixes tokens with a fixed pattern:\n4 neighbours per block; cost grows with tokens",
        ),
    ]
    bottoms = []
    for ax, (title, boxes, note) in zip(axes[0], columns):
        y = 0.0
        for text, color in boxes:
            lines = text.count("\n") + 1
            height = 0.28 + 0.22 * lines
            if color is None:
                ax.text(0.5, y - height / 2 + 0.1, text, ha="center", va="center", fontsize=8, style="italic")
                height = 0.45
            else:
                ax.add_patch(
                    plt.Rectangle(
                        (0.08, y - height),
                        0.84,
                        height,
                        facecolor=color,
                        alpha=0.35,
                        edgecolor="black",
                        linewidth=0.8,
                    )
                )
                ax.text(0.5, y - height / 2, text, ha="center", va="center", fontsize=8)
            ax.annotate(
                "",
                xy=(0.5, y - height - 0.12),
                xytext=(0.5, y - height),
                arrowprops=dict(arrowstyle="->", linewidth=0.8),
            )
            y -= height + 0.15
        ax.text(0.5, y - 0.05, note, ha="center", va="top", fontsize=8)
        bottoms.append(y - 0.75)
        ax.set_xlim(0, 1)
        ax.axis("off")
        ax.set_title(title, fontsize=10)
    for ax in axes[0]:  # one scale for both columns, so equal boxes look equal
        ax.set_ylim(min(bottoms), 0.1)
    fig.tight_layout()
    return fig


def plot_confusion_counts(cm: np.ndarray, class_names: Sequence[str]) -> Figure:
    """A confusion matrix whose numbers can be read: counts in large type, zeros left blank.

    Rows are true classes, columns predictions. The colour is the share of the row
    (so classes of different sizes compare), the number the count of images; the
    right margin gives each class's recall.
    """
    cm = np.asarray(cm)
    if cm.ndim != 2 or cm.shape != (len(class_names), len(class_names)):
        raise ValueError(f"cm must be {len(class_names)}x{len(class_names)}; got {cm.shape}")
    shares = cm / np.maximum(cm.sum(axis=1, keepdims=True), 1)
    fig, axes = _new_figure(6.4, 5.6)
    ax = axes[0, 0]
    ax.imshow(shares, cmap="Blues", vmin=0, vmax=1)
    for (row, col), count in np.ndenumerate(cm):
        if count:
            ax.text(
                col,
                row,
                f"{int(count)}",
                ha="center",
                va="center",
                fontsize=9,
                fontweight="bold" if row == col else "normal",
                color="white" if shares[row, col] > 0.55 else "black",
            )
    ticks = np.arange(len(class_names))
    ax.set_xticks(ticks, class_names, rotation=45, ha="right", fontsize=8)
    recall = np.diag(shares)
    ax.set_yticks(ticks, [f"{name}  ({r:.0%})" for name, r in zip(class_names, recall)], fontsize=8)
    ax.set_xlabel("predicted class")
    ax.set_ylabel("true class  (recall)")
    ax.set_title("Confusion matrix: images per cell (blank = 0)", fontsize=10)
    fig.tight_layout()
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
    index = np.clip(np.digitize(confidence, edges[1:-1], right=False), 0, bins - 1)
    count = np.bincount(index, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_confidence = np.bincount(index, confidence, bins) / count
        accuracy = np.bincount(index, correct, bins) / count
    filled = count > 0
    ece = float(np.sum(count[filled] * np.abs(accuracy[filled] - mean_confidence[filled])) / confidence.size)
    return {
        "edges": edges,
        "count": count,
        "mean_confidence": mean_confidence,
        "accuracy": accuracy,
        "ece": ece,
    }


def plot_reliability(confidence: Sequence[float], correct: Sequence[bool], bins: int = 10) -> Figure:
    """Reliability diagram: accuracy per confidence bin against the diagonal of perfect calibration.

    Bars below the diagonal mean overconfidence, above it underconfidence. The
    lower panel shows how many images fall in each bin; the title gives the ECE.
    """
    table = reliability_table(confidence, correct, bins)
    edges, width = table["edges"], 1.0 / bins
    centres = edges[:-1] + width / 2
    fig = plt.figure(figsize=(4.6, 4.6), dpi=DPI)
    plt.close(fig)
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    filled = table["count"] > 0
    top.bar(
        centres[filled],
        table["accuracy"][filled],
        width=width * 0.9,
        color="tab:blue",
        alpha=0.75,
        edgecolor="black",
        linewidth=0.5,
        label="accuracy in the bin",
    )
    top.plot(
        table["mean_confidence"][filled],
        table["mean_confidence"][filled],
        "o",
        color="tab:orange",
        markersize=4,
        label="mean confidence in the bin",
    )
    top.plot([0, 1], [0, 1], "--", color="gray", linewidth=1, label="perfect calibration")
    top.set(ylim=(0, 1), ylabel="accuracy")
    top.set_title(f"Reliability diagram (ECE {table['ece']:.3f})", fontsize=10)
    top.legend(fontsize=7, loc="upper left")
    bottom.bar(centres, table["count"], width=width * 0.9, color="gray")
    bottom.set(xlim=(0, 1), xlabel="confidence of the top class", ylabel="images")
    bottom.yaxis.set_major_locator(MaxNLocator(3, integer=True))
    fig.tight_layout()
    return fig
