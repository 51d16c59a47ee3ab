"""Command line: ``python -m shiftvit_lib {train,compare,evaluate,predict,presets}``.

Examples::

    python -m shiftvit_lib train --preset quick --data sample --epochs 2 --out runs/quick
    python -m shiftvit_lib evaluate --model runs/quick/best.keras --data sample
    python -m shiftvit_lib predict --model runs/quick/best.keras path/to/images/
    python -m shiftvit_lib compare --quick --data sample --out runs/compare_quick.json

Errors that a user can fix (a missing folder, a wrong model file, an unknown
preset, a finished ``--out`` folder, no network for ``--data keras``, ...) are
printed as one line on stderr, and the exit status is 2. Arguments are checked
before anything is written to disk.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130  # the shell's code for a process stopped by Ctrl-C (128 + SIGINT)


class UserError(Exception):
    """A mistake the user can fix; ``main`` prints it as one line and exits with status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr (argparse prints the usage too)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USER_ERROR, f"error: {message} (see: {self.prog} --help)\n")


MAX_COUNT = 2**31 - 1  # epochs, images per class: far beyond any run, within every library's ints
MAX_BATCH_SIZE = 1 << 20  # a million images at once is beyond any accelerator's memory


def _positive_int(text: str, most: int = MAX_COUNT) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text[:40]!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    if value > most:
        shown = f"{value:,}" if value < 10**15 else f"about 10**{len(str(value)) - 1}"
        raise argparse.ArgumentTypeError(f"must be at most {most:,}, got {shown}")
    return value


def _batch_size(text: str) -> int:
    return _positive_int(text, MAX_BATCH_SIZE)


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if not 0 <= value <= 2**32 - 1:  # NumPy's and Keras' seeds are 32-bit
        raise argparse.ArgumentTypeError(f"must be from 0 to {2**32 - 1} (2**32 - 1), got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m shiftvit_lib", description="Train, evaluate and use ShiftViT models.")
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser("train", help="train a preset and save best.keras, history.csv, run.json")
    train.add_argument("--preset", default="quick", help="preset name (see the 'presets' command)")
    train.add_argument(
        "--data", default="auto", help="'auto', 'keras', 'sample', or a class-folder dir/archive"
    )
    train.add_argument(
        "--epochs", type=_positive_int, default=None, help="override the preset's number of epochs"
    )
    train.add_argument(
        "--batch-size", type=_batch_size, default=None, help="override the preset's batch size"
    )
    train.add_argument(
        "--out",
        default="runs/latest",
        help="output folder; re-run with it (and the same settings) to resume an interrupted run",
    )
    train.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the run already in --out (its best.keras, history.csv, run.json, backup)",
    )
    train.add_argument("--limit", type=_positive_int, default=None, help="at most this many images per class")
    train.add_argument(
        "--mixed-precision",
        default="auto",
        help="'auto' (bfloat16 or float16 on a GPU/TPU, float32 on a CPU), 'none', mixed_bfloat16 or mixed_float16",
    )
    train.add_argument("--no-jit", action="store_true", help="disable XLA compilation")
    train.add_argument("--seed", type=_seed, default=42)
    train.add_argument(
        "--verbose",
        type=int,
        choices=(0, 1, 2),
        default=1,
        help="Keras' log: 1 a progress bar, 2 one line per epoch (best in log files)",
    )

    compare = commands.add_parser(
        "compare", help="lesson 07's experiment: ViT, ViT+SPT+LSA and three ShiftViT shifts on equal terms"
    )
    compare.add_argument(
        "--data", default="auto", help="'auto', 'keras', 'sample', or a class-folder dir/archive"
    )
    compare.add_argument(
        "--scale",
        choices=("quick", "cpu", "full"),
        default="full",
        help="quick: tiny models, a smoke test; cpu: models the size of the cpu preset, "
        "its recipe, 10 epochs (2-core CPU, about an hour, resumable); full: full size (GPU)",
    )
    compare.add_argument("--quick", action="store_true", help="the same as --scale quick")
    compare.add_argument(
        "--epochs", type=_positive_int, default=None, help="default: 5 quick, 10 cpu, 100 full"
    )
    compare.add_argument(
        "--runs", default="runs/compare", help="one training folder per model; re-run to resume"
    )
    compare.add_argument(
        "--out", required=True, help="the JSON record to write, e.g. results/attention_vs_shift.json"
    )
    compare.add_argument("--seed", type=_seed, default=42)
    compare.add_argument(
        "--models",
        nargs="+",
        default=None,
        metavar="NAME",
        help="train only these of the five (default: all), e.g. the three ShiftViTs "
        "for a second seed: shiftvit_official shiftvit_keras_io shiftvit_no_shift",
    )

    trust_help = (
        "load a TensorFlow SavedModel directory, which runs the graph it contains; only for "
        "models you exported yourself or trust (.keras files load in safe mode without it)"
    )
    evaluate = commands.add_parser("evaluate", help="top-1/top-5 accuracy of a saved model on the test split")
    evaluate.add_argument(
        "--model", required=True, help="a .keras file (or a SavedModel directory, see below)"
    )
    evaluate.add_argument("--data", default="auto")
    evaluate.add_argument("--batch-size", type=_batch_size, default=256)
    evaluate.add_argument("--trust-saved-model", action="store_true", help=trust_help)
    evaluate.add_argument(
        "--tta",
        action="store_true",
        help="also score each image with its mirror image (test-time augmentation), "
        "reported beside the plain figure",
    )

    predict = commands.add_parser("predict", help="classify every image in a folder")
    predict.add_argument(
        "--model", required=True, help="a .keras file (or a SavedModel directory, see below)"
    )
    predict.add_argument("folder", help="folder of images (jpg, png, ... any size)")
    predict.add_argument("--top-k", type=_positive_int, default=3)
    predict.add_argument("--json", action="store_true", help="print JSON instead of a table")
    predict.add_argument("--trust-saved-model", action="store_true", help=trust_help)
    predict.add_argument(
        "--tta",
        action="store_true",
        help="score each image together with its mirror image (test-time augmentation)",
    )

    commands.add_parser("presets", help="list the presets")
    return parser


def _mixed_precision(text: str) -> str | None:
    choices = {
        "none": None,
        "float32": None,
        "auto": "auto",
        "mixed_bfloat16": "mixed_bfloat16",
        "mixed_float16": "mixed_float16",
    }
    if text.lower() not in choices:
        raise UserError(
            f"--mixed-precision {text!r} is not one of: auto, none, mixed_bfloat16, mixed_float16"
        )
    return choices[text.lower()]


def _check_output_file(path: Path) -> None:
    """A JSON record can be written at ``path`` (checked before a long run, writing nothing)."""
    if path.is_dir():
        raise UserError(f"--out {path} is a folder; give the path of a .json file")
    from shiftvit_lib.tools.files import special_file_kind

    kind = special_file_kind(path)
    if kind not in (None, "missing") and not path.is_symlink():
        raise UserError(f"--out {_escaped(path)} is {kind}; give the path of a .json file")
    existing = path.parent
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise UserError(f"cannot create {path}: {existing} is a file")
    if not os.access(existing, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UserError(f"cannot write {path} (permission denied)")


def _train(args: argparse.Namespace) -> int:
    from shiftvit_lib.config import preset
    from shiftvit_lib.tools.data_sources import load_cifar10
    from shiftvit_lib.tools.runs import check_run_folder, train

    overrides = {"batch_size": args.batch_size} if args.batch_size else {}
    config = preset(args.preset, **overrides)
    mixed_precision = _mixed_precision(args.mixed_precision)
    check_run_folder(args.out, overwrite=args.overwrite)  # before loading data or writing anything
    data = load_cifar10(args.data, limit=args.limit, seed=args.seed)
    print(data.summary(), flush=True)
    run = train(
        config,
        data,
        args.out,
        epochs=args.epochs,
        jit_compile=False if args.no_jit else "auto",
        mixed_precision=mixed_precision,
        seed=args.seed,
        verbose=args.verbose,
        overwrite=args.overwrite,
    )
    test = run.record["test"]
    print(
        f"test top-1 {test['accuracy']:.2%}  top-5 {test['top5']:.2%}  "
        f"({run.record['epochs_run']} epochs; best model: {run.best_model_path})"
    )
    return 0


def _compare(args: argparse.Namespace) -> int:
    from shiftvit_lib.tools import experiments as ex
    from shiftvit_lib.tools.data_sources import load_cifar10
    from shiftvit_lib.tools.runs import check_run_folder

    out = Path(args.out)
    _check_output_file(out)
    runs = Path(args.runs)
    if runs.exists() and not runs.is_dir():
        raise UserError(f"--runs {runs} is a file; give a folder")
    check_run_folder(runs, overwrite=True)  # writable; each model's folder is checked by train()
    scale = "quick" if args.quick else args.scale
    configs = ex.comparison_configs(scale, args.epochs)
    if args.models:
        unknown = [name for name in args.models if name not in configs]
        if unknown:
            raise UserError(f"--models: unknown {', '.join(unknown)}; choose from {', '.join(configs)}")
        configs = {name: config for name, config in configs.items() if name in args.models}
    epochs = ex.shared_terms(configs)["epochs"]
    data = load_cifar10(args.data, seed=args.seed)
    print(data.summary(), flush=True)
    rows = ex.run_comparison(
        configs,
        data,
        args.runs,
        epochs=epochs,
        seed=args.seed,
        restart=False,
        log=lambda line: print(line, flush=True),
    )
    notes = {
        "quick": "QUICK mode: tiny models, a smoke test, not results.",
        "cpu": "CPU scale: models the size of the cpu preset, the cpu preset's recipe on a shorter "
        "schedule for all five, same data, epochs and seed, no early stopping.",
        "full": "Full mode: full-size models, same recipe and epochs for all, no early stopping.",
    }
    mode, note = scale, notes[scale]
    if args.models:
        note += f" Only {', '.join(configs)} (--models)."
    record = ex.comparison_record(rows, configs, data, epochs=epochs, seed=args.seed, mode=mode, note=note)
    from shiftvit_lib.tools.files import write_json

    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, record)  # atomic: a full disk or a crash never leaves half a record
    print(ex.format_table(rows))
    print(f"saved {out}")
    return 0


def _load_classifier(args: argparse.Namespace):  # noqa: ANN202 - keras is imported lazily
    from shiftvit_lib.data import CIFAR10_CLASSES
    from shiftvit_lib.tools.inference import check_classifier, load_model

    model = load_model(args.model, trust_saved_model=args.trust_saved_model)
    check_classifier(model, len(CIFAR10_CLASSES))
    return model


def _evaluate(args: argparse.Namespace) -> int:
    from shiftvit_lib.recipe import evaluate
    from shiftvit_lib.tools.data_sources import load_cifar10

    model = _load_classifier(args)
    data = load_cifar10(args.data)
    metrics = evaluate(model, data, batch_size=args.batch_size)
    print(data.source)
    print(
        f"test top-1 {metrics['accuracy']:.2%}  top-5 {metrics['top5']:.2%}  "
        f"loss {metrics['loss']:.4f}  ({metrics['images']:,} images)"
    )
    if args.tta:  # beside the plain figure, never instead of it
        flipped = evaluate(model, data, batch_size=args.batch_size, tta=True)
        print(
            f"with flip TTA: top-1 {flipped['accuracy']:.2%}  top-5 {flipped['top5']:.2%}  "
            f"loss {flipped['loss']:.4f}"
        )
    return 0


def _predict(args: argparse.Namespace) -> int:
    from shiftvit_lib.data import CIFAR10_CLASSES
    from shiftvit_lib.tools.inference import predict_folder

    if args.top_k > len(CIFAR10_CLASSES):
        raise UserError(f"--top-k {args.top_k} is more than the {len(CIFAR10_CLASSES)} classes")
    folder = Path(args.folder)
    if not folder.is_dir():
        raise UserError(
            f"{_escaped(folder)} is not a folder"
            + (" (it is a file; put it in a folder)" if folder.exists() else " (it does not exist)")
        )
    model = _load_classifier(args)
    result = predict_folder(model, folder, top_k=args.top_k, tta=args.tta)
    if args.json:
        print(json.dumps(result.to_rows(), indent=2))
    else:
        print(result.format())
    if not result.predictions:
        raise UserError(
            f"no image in {_escaped(folder)} could be classified ({len(result.failures)} unreadable file(s), "
            "listed above)"
        )
    return 0


def _escaped(name: object) -> str:
    from shiftvit_lib.tools.files import escape_name

    return escape_name(name)


def _presets(_: argparse.Namespace) -> int:
    from shiftvit_lib.config import PRESETS, preset

    for name in sorted(PRESETS):
        cfg = preset(name)
        print(
            f"{name:22} dim {cfg.projected_dim:3}  depths {list(cfg.depths)}  "
            f"input {cfg.input_shape[0]} px -> {cfg.image_size} px  shift {cfg.shift}"
        )
    return 0


def _one_line(error: BaseException) -> str:
    """The message of a user error on one line."""
    if isinstance(error, KeyError) and error.args:
        text = str(error.args[0])
    elif isinstance(error, OSError) and error.strerror:
        where = error.filename if error.filename is not None else ""
        reason = error.strerror
        if error.errno in (errno.EACCES, errno.EPERM) and "permission" not in reason.lower():
            reason += " (permission denied)"
        text = f"{reason}: {where}" if where and str(where) not in reason else reason
    else:
        text = str(error) or type(error).__name__
    text = " ".join(text.split())
    # Escape what is left unprintable: a file name's escape codes never reach the terminal.
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii") for char in text
    )


def _tolerate_unencodable_output() -> None:
    """Print paths the terminal cannot encode with escapes instead of failing on them.

    A file name that is not UTF-8 reaches Python as lone surrogates; printing it to a
    strict UTF-8 (or ASCII) terminal would turn a finished training into an error exit.
    """
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    from shiftvit_lib._startup import backend_problem

    problem = backend_problem()  # before anything loads Keras, whose own error is a traceback
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USER_ERROR
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # the program's own process: TensorFlow's C++ log off
    from shiftvit_lib.data import DataSourceUnavailableError
    from shiftvit_lib.tools.inference import BackendError

    _tolerate_unencodable_output()
    try:
        args = _parser().parse_args(argv)
    except SystemExit as stop:  # --help (0) or a bad argument (2, one line already printed)
        return int(stop.code or 0)
    handlers = {
        "train": _train,
        "compare": _compare,
        "evaluate": _evaluate,
        "predict": _predict,
        "presets": _presets,
    }
    try:
        return handlers[args.command](args)
    except (
        UserError,
        OSError,
        ValueError,
        KeyError,
        TypeError,
        DataSourceUnavailableError,
        BackendError,
    ) as error:
        print(f"error: {_one_line(error)}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:  # Ctrl-C: one line, not a traceback through Keras
        resume = (
            f"; run the same command again to resume {args.out} from its last finished epoch"
            if args.command == "train"
            else ""
        )
        print(f"stopped (Ctrl-C){resume}", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
