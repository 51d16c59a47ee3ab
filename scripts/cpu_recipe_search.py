"""Rank changes to the ``cpu`` recipe on the validation split, never on the test set.

    KERAS_BACKEND=jax python scripts/cpu_recipe_search.py --data ../shared/data/cifar10-jpeg.tar.gz \
        --epochs 8 --runs runs/cpu_search --out results/cpu_search

Every candidate is the ``cpu`` recipe as it was before the search (``BASELINE``: the preset
without its convolutional stem) with a few fields changed, trained for the same short
proxy schedule (``--epochs``) on the same 40,000 / 10,000 split (seed 42). ``train`` ends by
evaluating the best checkpoint on the split it calls ``test``; here that split is the
*validation* split again, so the 10,000 test images are never evaluated during the search
(the data's source sentence in each record says so). Each run folder is resumable: run the same
command again after an interruption. ``--out`` receives each run's ``run.json`` and
``history.csv`` and a ``summary.json`` with validation top-1 and time per candidate, the
baseline first, including the changes that did not help.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from shiftvit_lib.config import preset  # noqa: E402
from shiftvit_lib.data import DataSplits  # noqa: E402
from shiftvit_lib.tools.data_sources import load_cifar10  # noqa: E402
from shiftvit_lib.tools.files import atomic_write_text, write_json  # noqa: E402
from shiftvit_lib.tools.runs import train  # noqa: E402

# The recipe the search started from: the cpu preset before issue 26 added its stem.
BASELINE = {"stem_channels": 0}
# The levers of issue 26 that the config already has, each against the baseline alone.
CANDIDATES: dict[str, dict] = {
    "baseline": {},
    "label_smoothing_0.2": {"label_smoothing": 0.2},
    "no_random_erasing": {"random_erasing": 0.0},
    "drop_path_0.1": {"drop_path_rate": 0.1},
    "lr_max_3e-3": {"lr_max": 3e-3},
    "batch_256_lr_3e-3": {"batch_size": 256, "lr_max": 3e-3},
    "spach_init": {"init": "spach"},
    "no_scale_jitter": {"resize_to": 32},
    "mlp_ratio_3": {"mlp_ratio": 3.0},
    # Overlapping 3x3 windows before the patch projection (4.7 % more multiply-adds).
    "conv_stem_32": {"stem_channels": 32},
}


def validation_only(data: DataSplits) -> DataSplits:
    """The same data with the test split replaced by the validation split (the test set withheld)."""
    return DataSplits(
        data.x_train, data.y_train, data.x_val, data.y_val, data.x_val, data.y_val, data.class_names,
        source=f"{data.source}; recipe search: the test split is withheld, 'test' metrics are the "
               "validation split's",
    )


def markdown_table(summary: dict, train_images: int = 40_000) -> str:
    """The summary as a table, best first, with each candidate's gain over the baseline.

    Time is given as epochs x images / median images per second: the sum of epoch times also
    counts any pause of the process (a shared machine; the search was paused while CI ran).
    A summary without a ``baseline`` run (the full runs) shows "-" for the gain.
    """
    base = summary.get("baseline", {}).get("best_val_top1")
    rows = ["| candidate | changes | best val. top-1 | vs. baseline | images/s (median epoch) | "
            "time at that speed |", "|---|---|---|---|---|---|"]
    for name, row in sorted(summary.items(), key=lambda item: -item[1]["best_val_top1"]):
        minutes = row["epochs"] * train_images / row["train_images_per_second"] / 60
        changes = ", ".join(f"{k}={v}" for k, v in row["changes"].items()) or "(the v1 cpu recipe)"
        rows.append(f"| `{name}` | {changes} | {100 * row['best_val_top1']:.2f} % | "
                    f"{'-' if base is None else format(100 * (row['best_val_top1'] - base), '+.2f')} | "
                    f"{row['train_images_per_second']:.0f} | "
                    f"{minutes:.1f} min |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", help="the CIFAR-10 archive or class-folder directory")
    parser.add_argument("--epochs", type=int, default=8, help="the proxy schedule, the same for every candidate")
    parser.add_argument("--runs", default="runs/cpu_search", help="one resumable training folder per candidate")
    parser.add_argument("--out", default="results/cpu_search", help="where the records and summary.json go")
    parser.add_argument("--only", nargs="+", default=None, metavar="NAME", help="a subset of the candidates")
    parser.add_argument("--seed", type=int, default=42, help="the 40,000 / 10,000 split's seed")
    parser.add_argument("--train-seed", type=int, default=None,
                        help="the weights' and shuffling's seed (default: --seed); the split stays --seed's")
    parser.add_argument("--table", action="store_true", help="print --out's summary as a markdown table")
    args = parser.parse_args(argv)
    if args.table:
        print(markdown_table(json.loads((Path(args.out) / "summary.json").read_text())))
        return 0
    if not args.data:
        parser.error("--data is required (the CIFAR-10 archive or class-folder directory)")
    names = args.only or list(CANDIDATES)
    unknown = sorted(set(names) - set(CANDIDATES))
    if unknown:
        parser.error(f"unknown candidates {unknown}; choose from {list(CANDIDATES)}")

    data = validation_only(load_cifar10(args.data, seed=args.seed))
    print(data.summary(), flush=True)
    out = Path(args.out)
    summary_path = out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    train_seed = args.seed if args.train_seed is None else args.train_seed
    for name in names:
        key = name if train_seed == args.seed else f"{name}_seed{train_seed}"
        config = preset("cpu", **{**BASELINE, **CANDIDATES[name]}, epochs=args.epochs)
        started = time.time()
        run = train(config, data, Path(args.runs) / key, epochs=args.epochs, seed=train_seed, verbose=2)
        record = run.record
        (out / key).mkdir(parents=True, exist_ok=True)
        for file in ("run.json", "history.csv"):
            atomic_write_text(out / key / file, (run.out_dir / file).read_bytes())
        summary[key] = {
            "changes": CANDIDATES[name],
            "epochs": args.epochs,
            "train_seed": train_seed,
            "best_val_top1": record["best_val_accuracy"],
            "final_val_top1": record["test"]["accuracy"],  # the best checkpoint, on the validation split
            "train_seconds": record["train_seconds"],
            "train_images_per_second": record["train_images_per_second"],
            "wall_seconds_this_session": round(time.time() - started, 1),
        }
        out.mkdir(parents=True, exist_ok=True)
        write_json(summary_path, summary)  # atomic: a crash never leaves half a summary
        print(f"{key}: best validation top-1 {record['best_val_accuracy']:.2%} "
              f"in {record['train_seconds']:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
