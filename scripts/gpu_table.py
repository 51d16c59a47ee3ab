"""The one table of this project's GPU runs, built from their records in results/.

    python scripts/gpu_table.py            write results/gpu_runs.csv
    python scripts/gpu_table.py --check    exit 1 if results/gpu_runs.csv differs from the records

A finished run has a ``run.json`` (its test top-1, training seconds and images/s are read from
it); a run stopped before its end has only its ``history.csv``: its row says how far it got, its
best validation top-1, the seconds of its finished epochs and their median images/s after the
first (compilation), and no test figure. The README, results/README.md and lesson 05 quote these
rows; tests/project/test_gpu_table.py fails when one of them quotes a GPU figure the table lacks.
"""

from __future__ import annotations

import csv
import io
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from project_files import files  # noqa: E402 - files.py without Keras

RESULTS = Path(__file__).resolve().parents[1] / "results"
TABLE = RESULTS / "gpu_runs.csv"
COLUMNS = ["machine", "recipe", "epochs", "test_top1", "best_val_top1", "train_seconds", "images_per_second",
           "status", "source"]
# (folder, file prefix, machine, recipe, epochs the recipe asks for): every GPU record of results/
RUNS = [
    ("gpu_h200_2026-11-26", "", "NVIDIA H200", "seed", 100),
    ("gpu_h200", "seed_", "NVIDIA H200", "seed", 100),
    ("gpu_h200", "strong_", "NVIDIA H200", "strong", 100),
    ("gpu_h200", "cpu_", "NVIDIA H200", "cpu", 30),
    ("gpu_h100_2026-11-26_library_check", "", "NVIDIA H100 80GB HBM3", "seed", 6),
]


def _history(path: Path) -> list[dict[str, float]]:
    with path.open() as file:
        return [{key: float(value) for key, value in row.items()} for row in csv.DictReader(file)]


def row(folder: str, prefix: str, machine: str, recipe: str, epochs: int) -> dict[str, str]:
    record, history = RESULTS / folder / f"{prefix}run.json", RESULTS / folder / f"{prefix}history.csv"
    rows = _history(history)
    best_val = max(r["val_accuracy"] for r in rows)
    if record.exists():
        run = json.loads(record.read_text())
        assert any(machine in device for device in run["machine"]["devices"]), (record, machine)
        done = run["epochs_run"]
        stop = "finished" if done == epochs else "finished (early stopping)"
        test, seconds, rate = run["test"]["accuracy"], run["train_seconds"], run["train_images_per_second"]
        best_val = run["best_val_accuracy"]
    else:
        done, test = len(rows), None
        seconds = sum(r["epoch_seconds"] for r in rows)
        rate = statistics.median(r["images_per_second"] for r in rows[1:])
        where = f"epoch {done + 1}" if done < epochs else "the final evaluation"
        stop = f"partial: stopped during {where}, no test figure"
    return {
        "machine": machine, "recipe": recipe, "epochs": f"{done}/{epochs}",
        "test_top1": "" if test is None else f"{100 * test:.2f}", "best_val_top1": f"{100 * best_val:.2f}",
        "train_seconds": f"{seconds:.1f}", "images_per_second": f"{rate:.0f}", "status": stop,
        "source": f"results/{folder}/{prefix}{'run.json' if record.exists() else 'history.csv'}",
    }


def table_text() -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(row(*run) for run in RUNS)
    return out.getvalue()


def main(argv: list[str]) -> int:
    text = table_text()
    if "--check" in argv:
        if not TABLE.exists() or TABLE.read_text() != text:
            print(f"{TABLE.name} differs from the records: run python scripts/gpu_table.py")
            return 1
        return 0
    files.atomic_write_text(TABLE, text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
