"""The results as pictures, drawn from the shipped records when the site is built.

- lesson 07's comparison: the test top-1 accuracy of each model of the attention-vs-shift runs, with
  the 95 % interval each record stores (`test_top1_ci95`), one marker per seed;
- lesson 05's time-to-accuracy curve: the `cpu` preset's validation accuracy against the training
  time (the sum of `epoch_seconds`), with a 95 % interval for a proportion over the validation images.

The records are `shiftvit_lib/assets/records/` (shipped with the library); nothing is typed in here.
Each chart is an SVG (text as paths, no fonts to load), a few tens of kB.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from project_files import files  # noqa: E402 - files.py without Keras: every write is atomic

REPO = Path(__file__).resolve().parents[1]
RECORDS = REPO / "shiftvit_lib" / "assets" / "records"
COMPARISON_RECORDS = ("attention_vs_shift_cpu.json", "attention_vs_shift_cpu_seed43.json")
CURVE_RECORD = "cpu_full"

COMPARISON_TITLE = "Lesson 07: test top-1 accuracy on CIFAR-10 with 95 % intervals, attention against shift"
CURVE_TITLE = "Lesson 05: validation accuracy of the cpu preset against training time, with 95 % intervals"


def wilson(p: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson 95 % interval of a proportion p observed over n trials."""
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def comparison_rows(records: Path = RECORDS) -> list[dict]:
    """One row per (record, model): name, seed, top-1 and its interval, machine."""
    rows = []
    for name in COMPARISON_RECORDS:
        record = json.loads((records / name).read_text(encoding="utf-8"))
        for row in record["rows"]:
            low, high = row["test_top1_ci95"]
            rows.append({"model": row["name"], "seed": record["seed"], "top1": row["test_top1"],
                         "low": low, "high": high, "record": name})
    return rows


def curve_points(records: Path = RECORDS) -> tuple[list[dict], int]:
    run = json.loads((records / CURVE_RECORD / "run.json").read_text(encoding="utf-8"))
    n = int(run["split_sizes"]["val"])
    points, elapsed = [], 0.0
    with open(records / CURVE_RECORD / "history.csv", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            elapsed += float(row["epoch_seconds"])
            accuracy = float(row["val_accuracy"])
            low, high = wilson(accuracy, n)
            points.append({"epoch": int(row["epoch"]) + 1, "minutes": elapsed / 60, "val": accuracy, "low": low, "high": high})
    return points, n


def _figure(width: float, height: float):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.fonttype": "path", "font.size": 10, "svg.hashsalt": "shiftvit"})
    return plt, *plt.subplots(figsize=(width, height), layout="constrained")


def _save(plt, figure, axes, path: Path, title: str) -> Path:
    """Title and legend, then the SVG without a date (so an unchanged chart is an unchanged file)."""
    axes.set_title(title)
    axes.legend(loc="lower right")
    path.parent.mkdir(parents=True, exist_ok=True)
    with files.atomic_output(path) as partial:
        figure.savefig(partial, format="svg", metadata={"Date": None})
    plt.close(figure)
    return path


def draw_comparison(path: Path, records: Path = RECORDS) -> Path:
    rows = comparison_rows(records)
    models = list(dict.fromkeys(r["model"] for r in rows))
    seeds = sorted({r["seed"] for r in rows})
    plt, figure, axes = _figure(7.0, 3.6)
    for number, seed in enumerate(seeds):
        mine = [r for r in rows if r["seed"] == seed]
        y = [models.index(r["model"]) + (number - (len(seeds) - 1) / 2) * 0.25 for r in mine]
        x = [100 * r["top1"] for r in mine]
        errors = [[100 * (r["top1"] - r["low"]) for r in mine], [100 * (r["high"] - r["top1"]) for r in mine]]
        axes.errorbar(x, y, xerr=errors, fmt="o" if number == 0 else "s", capsize=4, label=f"seed {seed}")
    axes.set_yticks(range(len(models)), models)
    axes.invert_yaxis()
    axes.set_xlabel("test top-1 accuracy (%), 10,000 test images; bars: 95 % interval")
    axes.grid(axis="x", alpha=0.3)
    return _save(plt, figure, axes, path, "Attention against shift at CPU scale (lesson 07)")


def draw_curve(path: Path, records: Path = RECORDS) -> Path:
    points, n = curve_points(records)
    plt, figure, axes = _figure(7.0, 3.4)
    minutes = [p["minutes"] for p in points]
    axes.fill_between(minutes, [100 * p["low"] for p in points], [100 * p["high"] for p in points],
                      alpha=0.3, label="95 % interval")
    axes.plot(minutes, [100 * p["val"] for p in points], marker="o", markersize=3, label="validation top-1")
    axes.set_xlabel("training time (minutes, 2-core CPU)")
    axes.set_ylabel(f"validation top-1 (%), {n:,} images")
    axes.grid(alpha=0.3)
    return _save(plt, figure, axes, path, "Time to accuracy of the cpu preset (lesson 05)")


def charts_markdown(stage: Path, records: Path = RECORDS) -> str:
    """Draw both charts into stage/_assets/, write the results page (stage/results.md), and return
    the home page's markdown that shows the charts and links the page."""
    draw_comparison(stage / "_assets" / "attention_vs_shift.svg", records)
    draw_curve(stage / "_assets" / "time_to_accuracy.svg", records)
    files.atomic_write_text(stage / "results.md", results_page())
    return "\n\n".join([
        "Every recorded run, with its numbers, its data and its machine, is on [one page](results.md).",
        f"```{{figure}} _assets/attention_vs_shift.svg\n:alt: {COMPARISON_TITLE}\n:width: 100%\n\n"
        f"{COMPARISON_TITLE}; from `shiftvit_lib/assets/records/attention_vs_shift_cpu*.json`.\n```",
        f"```{{figure}} _assets/time_to_accuracy.svg\n:alt: {CURVE_TITLE}\n:width: 100%\n\n"
        f"{CURVE_TITLE}; from `shiftvit_lib/assets/records/cpu_full/`.\n```",
    ])


RESULTS = REPO / "results"


def _machine(machine: dict) -> str:
    devices = ", ".join(machine.get("devices", []))
    return (f"{machine.get('cpu_count', '?')} CPU cores, {devices}; {machine.get('backend', '?')} backend, "
            f"Keras {machine.get('keras', '?')}")


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def results_page(results: Path = RESULTS) -> str:
    """A page with every recorded run under results/: its numbers, its data and its machine."""
    runs = sorted(results.glob("*/run.json"))
    comparisons = sorted(results.glob("*.json"))
    parts = [
        "---\norphan: true\n---\n",
        "# Every recorded run",
        "Every run the project recorded, read from the files in `results/` when the site is built: what was "
        "trained, on which data, how it scored on the test images, and on which machine. The intervals are "
        "95 % intervals for a proportion over the test images, as the records store them (or, where a run "
        "stores none, computed with the Wilson formula).",
        "## Training runs",
        "| run | preset | data | epochs | test top-1 (95 %) | best val. top-1 | train time | machine | finished |\n"
        "|---|---|---|---|---|---|---|---|---|",
    ]
    rows = []
    for path in runs:
        run = json.loads(path.read_text(encoding="utf-8"))
        test = run["test"]
        low, high = wilson(test["accuracy"], int(test["images"]))
        rows.append(
            f"| `{path.parent.name}` | `{_cell(run['config'].get('name', '?'))}` | {_cell(run['data_source'])} | "
            f"{run['epochs_run']} | {100 * test['accuracy']:.2f} % ({100 * low:.1f}–{100 * high:.1f}) | "
            f"{100 * run['best_val_accuracy']:.2f} % | {run['train_seconds'] / 60:.1f} min | "
            f"{_cell(_machine(run['machine']))} | {_cell(run.get('finished_at', ''))} |"
        )
    parts[-1] += "\n" + "\n".join(rows)
    for path in comparisons:
        record = json.loads(path.read_text(encoding="utf-8"))
        if "rows" not in record:
            continue
        parts.append(f"## `{path.name}`")
        parts.append(f"{_cell(record.get('note', ''))} Seed {record['seed']}, {record['epochs']} epochs; data: "
                     f"{_cell(record['data_source'])}; machine: {_cell(_machine(record['machine']))}; "
                     f"finished {_cell(record.get('finished_at', ''))}.")
        table = ["| model | parameters | test top-1 (95 %) | images/s in training | train time |", "|---|---|---|---|---|"]
        for row in record["rows"]:
            low, high = row["test_top1_ci95"]
            table.append(f"| `{row['name']}` | {row['parameters']:,} | {100 * row['test_top1']:.2f} % "
                         f"({100 * low:.1f}–{100 * high:.1f}) | {row['train_images_per_second']:.0f} | "
                         f"{row['train_seconds'] / 60:.1f} min |")
        parts.append("\n".join(table))
    return "\n\n".join(parts) + "\n"
