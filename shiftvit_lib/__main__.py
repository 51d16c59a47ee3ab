"""Command line: ``python -m shiftvit_lib {train,evaluate,predict,presets}``.

Examples::

    python -m shiftvit_lib train --preset quick --data sample --epochs 2 --out runs/quick
    python -m shiftvit_lib evaluate --model runs/quick/best.keras --data sample
    python -m shiftvit_lib predict --model runs/quick/best.keras path/to/images/
    python -m shiftvit_lib compare --quick --data sample --out runs/compare_quick.json

Errors that a user can fix (a missing folder, a wrong model file, an unknown
preset) are printed as one clear line and the exit status is 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # keep TensorFlow's start-up chatter out


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m shiftvit_lib", description="Train, evaluate and use ShiftViT models."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser("train", help="train a preset and save best.keras, history.csv, run.json")
    train.add_argument("--preset", default="quick", help="preset name (see the 'presets' command)")
    train.add_argument("--data", default="auto", help="'auto', 'keras', 'sample', or a class-folder dir/archive")
    train.add_argument("--epochs", type=int, default=None, help="override the preset's number of epochs")
    train.add_argument("--batch-size", type=int, default=None, help="override the preset's batch size")
    train.add_argument("--out", default="runs/latest", help="output folder; re-run with it to resume")
    train.add_argument("--limit", type=int, default=None, help="at most this many images per class")
    train.add_argument(
        "--mixed-precision",
        default="auto",
        help="'auto' (bfloat16 or float16 on a GPU/TPU, float32 on a CPU), 'none', mixed_bfloat16 or mixed_float16",
    )
    train.add_argument("--no-jit", action="store_true", help="disable XLA compilation")
    train.add_argument("--seed", type=int, default=42)
    train.add_argument("--verbose", type=int, choices=(0, 1, 2), default=1,
                       help="Keras' log: 1 a progress bar, 2 one line per epoch (best in log files)")

    compare = commands.add_parser(
        "compare", help="lesson 07's experiment: ViT, ViT+SPT+LSA and three ShiftViT shifts on equal terms"
    )
    compare.add_argument("--data", default="auto", help="'auto', 'keras', 'sample', or a class-folder dir/archive")
    compare.add_argument("--scale", choices=("quick", "cpu", "full"), default="full",
                         help="quick: tiny models, a smoke test; cpu: models the size of the cpu preset, "
                              "its recipe, 10 epochs (2-core CPU, about an hour); full: full size (GPU)")
    compare.add_argument("--quick", action="store_true", help="the same as --scale quick")
    compare.add_argument("--epochs", type=int, default=None, help="default: 5 quick, 10 cpu, 100 full")
    compare.add_argument("--runs", default="runs/compare", help="one training folder per model; re-run to resume")
    compare.add_argument("--out", required=True, help="the JSON record to write, e.g. results/attention_vs_shift.json")
    compare.add_argument("--seed", type=int, default=42)

    evaluate = commands.add_parser("evaluate", help="top-1/top-5 accuracy of a saved model on the test split")
    evaluate.add_argument("--model", required=True, help="a .keras file or a SavedModel directory")
    evaluate.add_argument("--data", default="auto")
    evaluate.add_argument("--batch-size", type=int, default=256)

    predict = commands.add_parser("predict", help="classify every image in a folder")
    predict.add_argument("--model", required=True, help="a .keras file or a SavedModel directory")
    predict.add_argument("folder", help="folder of images (jpg, png, ... any size)")
    predict.add_argument("--top-k", type=int, default=3)
    predict.add_argument("--json", action="store_true", help="print JSON instead of a table")

    commands.add_parser("presets", help="list the presets")
    return parser


def _train(args: argparse.Namespace) -> int:
    from shiftvit_lib.config import preset
    from shiftvit_lib.data import load_cifar10
    from shiftvit_lib.train import train

    overrides = {"batch_size": args.batch_size} if args.batch_size else {}
    config = preset(args.preset, **overrides)
    data = load_cifar10(args.data, limit=args.limit, seed=args.seed)
    print(data.summary(), flush=True)
    run = train(
        config,
        data,
        args.out,
        epochs=args.epochs,
        jit_compile=False if args.no_jit else "auto",
        mixed_precision=None if args.mixed_precision.lower() in ("none", "float32") else args.mixed_precision,
        seed=args.seed,
        verbose=args.verbose,
    )
    test = run.record["test"]
    print(
        f"test top-1 {test['accuracy']:.2%}  top-5 {test['top5']:.2%}  "
        f"({run.record['epochs_run']} epochs; best model: {run.best_model_path})"
    )
    return 0


def _compare(args: argparse.Namespace) -> int:
    from pathlib import Path

    from shiftvit_lib import experiments as ex
    from shiftvit_lib.data import load_cifar10

    scale = "quick" if args.quick else args.scale
    configs = ex.comparison_configs(scale, args.epochs)
    epochs = ex.shared_terms(configs)["epochs"]
    data = load_cifar10(args.data, seed=args.seed)
    print(data.summary(), flush=True)
    rows = ex.run_comparison(configs, data, args.runs, epochs=epochs, seed=args.seed, restart=False,
                             log=lambda line: print(line, flush=True))
    notes = {
        "quick": "QUICK mode: tiny models, a smoke test, not results.",
        "cpu": "CPU scale: models the size of the cpu preset, the cpu preset's recipe on a shorter "
               "schedule for all five, same data, epochs and seed, no early stopping.",
        "full": "Full mode: full-size models, same recipe and epochs for all, no early stopping.",
    }
    mode, note = scale, notes[scale]
    record = ex.comparison_record(rows, configs, data, epochs=epochs, seed=args.seed, mode=mode, note=note)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2, default=str))
    print(ex.format_table(rows))
    print(f"saved {out}")
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from shiftvit_lib.data import load_cifar10
    from shiftvit_lib.inference import load_model
    from shiftvit_lib.train import evaluate

    model = load_model(args.model)
    data = load_cifar10(args.data)
    metrics = evaluate(model, data, batch_size=args.batch_size)
    print(data.source)
    print(f"test top-1 {metrics['accuracy']:.2%}  top-5 {metrics['top5']:.2%}  "
          f"loss {metrics['loss']:.4f}  ({metrics['images']:,} images)")
    return 0


def _predict(args: argparse.Namespace) -> int:
    from shiftvit_lib.inference import load_model, predict_folder

    model = load_model(args.model)
    result = predict_folder(model, args.folder, top_k=args.top_k)
    if args.json:
        print(json.dumps(result.to_rows(), indent=2))
    else:
        print(result.format())
    return 0


def _presets(_: argparse.Namespace) -> int:
    from shiftvit_lib.config import PRESETS, preset

    for name in sorted(PRESETS):
        cfg = preset(name)
        print(f"{name:22} dim {cfg.projected_dim:3}  depths {list(cfg.depths)}  "
              f"input {cfg.input_shape[0]} px -> {cfg.image_size} px  shift {cfg.shift}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    handlers = {"train": _train, "compare": _compare, "evaluate": _evaluate, "predict": _predict,
                "presets": _presets}
    try:
        return handlers[args.command](args)
    except (FileNotFoundError, ValueError, KeyError, TypeError) as error:
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
