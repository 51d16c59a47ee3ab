"""Tests for shiftvit_lib.notebook.plots: every helper returns a small, correct Figure."""

import io
from pathlib import Path

import keras
import matplotlib
import numpy as np
import pytest
from fakes import tiny_splits

matplotlib.use("Agg")  # no display in tests

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from shiftvit_lib.data import CIFAR10_CLASSES  # noqa: E402
from shiftvit_lib.notebook import plots  # noqa: E402


def small_and_detached(fig: Figure) -> bool:
    """A Figure under 1 MB as a PNG, left out of pyplot (Jupyter would otherwise draw it twice)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return isinstance(fig, Figure) and buffer.tell() < 1_000_000 and fig.number not in plt.get_fignums()


def test_image_grid_titles_each_image_and_colours_right_and_wrong_predictions() -> None:
    images = np.random.default_rng(0).integers(0, 256, (40, 32, 32, 3), dtype=np.uint8)
    fig = plots.plot_image_grid(images[:5], [0, 1, 2, 3, 4], CIFAR10_CLASSES, [0, 1, 9, 3, 4],  # the third is wrong
                                confidences=[0.9, 0.8, 0.7, 0.6, 0.5], ncols=3)
    titles = [ax.title for ax in fig.axes if ax.get_title()]
    assert len(titles) == 5 and len(fig.axes) == 6  # 2 rows x 3 columns, one blank
    assert titles[2].get_text() == "truck 70%\n(true: bird)" and titles[2].get_color() == "tab:red"
    assert titles[0].get_color() == "tab:green" and small_and_detached(fig)
    labelled = [ax.get_title() for ax in plots.plot_image_grid(images, np.arange(40) % 10, CIFAR10_CLASSES).axes]
    assert len([title for title in labelled if title]) == 32 and labelled[:2] == ["airplane", "automobile"]


def test_class_counts_bars_match_the_splits() -> None:
    fig = plots.plot_class_counts(tiny_splits(40, 10, 20))
    assert [patch.get_height() for patch in fig.axes[0].patches] == [4] * 10 + [1] * 10 + [2] * 10
    assert [text.get_text() for text in fig.axes[0].get_legend().get_texts()] == ["train (40)", "val (10)", "test (20)"]
    assert small_and_detached(fig)


def test_history_from_a_keras_history_and_from_csv() -> None:
    history = keras.callbacks.History()
    history.history = {"loss": [2.0, 1.5, 1.2], "val_loss": [2.1, 1.7, 1.6], "accuracy": [0.2, 0.4, 0.5],
                       "val_accuracy": [0.2, 0.35, 0.4], "top5": [0.6, 0.7, 0.8]}
    loss_ax, accuracy_ax = plots.plot_history(history).axes
    assert [line.get_label() for line in loss_ax.lines] == ["loss", "val_loss"]
    assert [line.get_label() for line in accuracy_ax.lines] == ["accuracy", "val_accuracy", "top5"]
    np.testing.assert_allclose(accuracy_ax.lines[1].get_ydata(), [0.2, 0.35, 0.4])
    np.testing.assert_array_equal(loss_ax.lines[0].get_xdata(), [1, 2, 3])  # epochs counted from 1
    # history.csv's rows, read back (run_folder.read_history_csv): an "epoch" column, counted from 0 too
    from_csv = plots.plot_history({"epoch": [4, 5], "loss": [2.0, 1.5], "accuracy": [0.2, 0.4]})
    assert len(from_csv.axes) == 2 and list(from_csv.axes[0].lines[0].get_xdata()) == [5, 6]
    assert len(plots.plot_history({"loss": [1.0, 0.5]}).axes) == 1


def test_learning_rate_curve_follows_the_schedule() -> None:
    schedule = keras.optimizers.schedules.CosineDecay(1e-3, decay_steps=100)
    line = plots.plot_learning_rate(schedule, total_steps=100).axes[0].lines[0]
    assert line.get_ydata()[0] == pytest.approx(1e-3)
    assert line.get_ydata()[-1] == pytest.approx(float(schedule(99)), rel=1e-5)
    xs, ys = plots.plot_learning_rate(lambda step: 0.01 * step, total_steps=5000).axes[0].lines[0].get_data()
    assert len(xs) <= 500 and xs[-1] == 4999
    np.testing.assert_allclose(ys, 0.01 * xs)


def test_time_to_accuracy_plots_cumulative_minutes_and_marks_the_target() -> None:
    runs = {"new": {"epoch_seconds": [60.0, 30.0, 90.0], "val_accuracy": [0.5, 0.81, 0.85]},
            "old": {"epoch_seconds": [60.0, 60.0, 60.0], "val_accuracy": [0.5, 0.7, 0.8]}}
    fig = plots.plot_time_to_accuracy(runs, target=0.8)
    ax = fig.axes[0]
    np.testing.assert_allclose(ax.lines[0].get_data(), [[1.0, 1.5, 3.0], [50.0, 81.0, 85.0]])  # minutes: a running sum
    np.testing.assert_allclose(ax.lines[1].get_data()[0], [1.0, 2.0, 3.0])
    assert [text.get_text() for text in ax.texts] == ["80 % after 1.5 min", "80 % after 3.0 min"]  # reaching counts
    assert ax.texts[0].xy == pytest.approx((1.5, 81.0))  # the arrow points at the first epoch there
    assert len(plots.plot_time_to_accuracy(runs, target=0.9).axes[0].texts) == 0  # neither reaches 90 %
    assert [text.get_text() for text in ax.get_legend().get_texts()] == ["new", "old"] and small_and_detached(fig)


def test_architecture_shapes_match_the_built_model() -> None:
    from shiftvit_lib import build_shiftvit, preset
    from shiftvit_lib.model import stage_table

    for config in (preset("quick"), preset("quick", stem_channels=8, depths=(1, 1))):
        built = {row["layer"]: tuple(row["output_shape"][1:]) for row in stage_table(build_shiftvit(config))}
        for part, shape in plots.architecture_shapes(config):
            assert built[part] == shape, (config, part)
    fig = plots.plot_architecture(preset("seed"))
    texts = [text.get_text() for text in fig.axes[0].texts]
    assert "2×2\n×768" in texts and "12×12\n×96" in texts and small_and_detached(fig)


def test_block_comparison_names_both_mixers_and_confusion_counts_leave_zeros_blank() -> None:
    fig = plots.plot_block_comparison()
    texts = " ".join(text.get_text() for ax in fig.axes for text in ax.texts)
    assert "self-attention" in texts and "shift" in texts and small_and_detached(fig)
    cm = np.diag(np.arange(1, 11))
    cm[0, 1] = 7
    texts = [text.get_text() for text in plots.plot_confusion_counts(cm, CIFAR10_CLASSES).axes[0].texts]
    assert len(texts) == 11 and "7" in texts and "0" not in texts


def test_reliability_table_bins_and_ece() -> None:
    confidence = np.array([0.05, 0.15, 0.95, 1.0, 0.95])
    correct = np.array([False, True, True, True, False])
    table = plots.reliability_table(confidence, correct, bins=10)
    assert table["count"].tolist() == [1, 1, 0, 0, 0, 0, 0, 0, 0, 3]  # 1.0 falls in the last bin
    assert table["accuracy"][9] == pytest.approx(2 / 3)
    assert table["ece"] == pytest.approx((0.05 + 0.85 + 3 * abs(2 / 3 - (0.95 + 1.0 + 0.95) / 3)) / 5)
    fig = plots.plot_reliability(confidence, correct)
    assert "ECE" in fig.axes[0].get_title() and small_and_detached(fig)


MAP = np.zeros((1, 3, 3, 4), "float32")


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda: plots.plot_confusion_counts(np.ones((3, 3)), CIFAR10_CLASSES), ValueError, "10x10"),
    (lambda: plots.reliability_table([0.5], [True, False]), ValueError, None),
    (lambda: plots.format_channels(MAP, ["only one"]), ValueError, "one title per channel"),
    (lambda: plots.format_channels(MAP[0], ["a", "b", "c", "d"]), ValueError, r"\(1, H, W, C\)"),
])
def test_bad_input_is_refused_naming_what_is_wrong(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_show_animation_embeds_the_gif_as_html_that_renders_everywhere():
    import base64
    import re

    html = plots.show_animation("shift_operation")._repr_html_()
    match = re.fullmatch(r'<img src="data:image/gif;base64,([A-Za-z0-9+/=]+)" alt="[^"]+">', html)
    gif = Path(plots.__file__).parents[1] / "assets" / "animations" / "shift_operation.gif"
    assert match and base64.b64decode(match.group(1)) == gif.read_bytes(), html[:120]


def test_channel_grids_show_where_each_value_went():
    from shiftvit_lib.shift import shift_channels

    x = plots.numbered_feature_map(4, height=3, width=3)
    assert x.shape == (1, 3, 3, 4) and x[0, :, :, 2].tolist() == [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert plots.format_channels(shift_channels(x, num_div=4), ["left", "right", "up", "down"]).splitlines() == [
        " left    right      up      down ",
        " 2 3 0    0 1 2    4 5 6    0 0 0",
        " 5 6 0    0 4 5    7 8 9    1 2 3",
        " 8 9 0    0 7 8    0 0 0    4 5 6",
    ]
