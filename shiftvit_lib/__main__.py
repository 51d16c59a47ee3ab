"""Command line: ``python -m shiftvit_lib {train,compare,evaluate,predict,presets}``.

Examples::

    python -m shiftvit_lib train --preset quick --data sample --epochs 2 --out runs/quick
    python -m shiftvit_lib evaluate --model runs/quick/best.keras --data sample
    python -m shiftvit_lib predict --model runs/quick/best.keras path/to/images/
    python -m shiftvit_lib compare --quick --data sample --out runs/compare_quick.json

Each command is a function ``_<command>`` whose docstring is its help; ``_parser`` declares
every option once, for the commands that take it. Errors the project raises about the user's
input (:class:`~shiftvit_lib.config.InputError`: an unknown preset, a finished ``--out`` folder,
a wrong model file...), a file or folder the system refuses, and no network for ``--data keras``
are printed as one line on stderr, and the exit status is 2; anything else is a bug and shows its
traceback. Arguments are checked before anything is written to disk. The command line speaks in
flags: the library's advice in Python keywords (``overwrite=True``) is shown as the flag that
does it (:func:`in_flags`), a library warning is one line (``warning: ...``), progress is a line
per epoch when stdout is not a terminal, and a closed pipe (``--json | head``) ends quietly.
"""

import _thread
import argparse
import functools
import gc
import re
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Sequence

from shiftvit_lib._startup import backend_problem
from shiftvit_lib.config import PRESETS, InputError, check_whole_number, preset
from shiftvit_lib.tools.files import RunFolderInUseError, UnsafeFileError, escape_name

EXIT_USER_ERROR = 2
EXIT_INTERRUPTED = 130  # the shell's code for a process stopped by Ctrl-C (128 + SIGINT)


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr (argparse prints the usage too)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USER_ERROR, f"error: {message} (see: {self.prog} --help)\n")


def _whole_number(text: str, low: int, high: int) -> int:
    """An argparse type (with ``low`` and ``high`` bound): a whole number from ``low`` to ``high`` (the
    library's check, which names what was given), or a one-line reason."""
    number = int(text) if text.strip().lstrip("+-").isdigit() else text
    try:
        return check_whole_number(number, "value", low, high)
    except InputError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


# Epochs, images per class: within every library's ints; a million images is beyond any accelerator's memory.
COUNT = functools.partial(_whole_number, low=1, high=2**31 - 1)
BATCH_SIZE = functools.partial(_whole_number, low=1, high=1 << 20)
PRECISIONS, SCALES = ("auto", "none", "mixed_bfloat16", "mixed_float16"), ("quick", "cpu", "full")
COMMANDS = ("train", "compare", "evaluate", "predict", "presets")  # each one's function: _<command>
NOTES = {  # a comparison record's note, per --scale
    "quick": "QUICK mode: tiny models, a smoke test, not results.",
    "cpu": "CPU scale: models the size of the cpu preset, the cpu preset's recipe on a shorter "
    "schedule for all five, same data, epochs and seed, no early stopping.",
    "full": "Full mode: full-size models, same recipe and epochs for all, no early stopping.",
}


def _parser() -> argparse.ArgumentParser:
    """The parser: one sub-command per function ``_<command>``, whose docstring is its help."""
    parser = _Parser(prog="python -m shiftvit_lib", description="Train, evaluate and use ShiftViT models.")
    commands = parser.add_subparsers(dest="command", required=True)
    parsers = {name: commands.add_parser(name, help=globals()[f"_{name}"].__doc__) for name in COMMANDS}

    def add(names: str, flag: str, help: str | None = None, **settings) -> None:
        for name in names.split():
            parsers[name].add_argument(flag, help=help, **settings)

    flag = functools.partial(add, action="store_true")
    bar = 1 if sys.stdout.isatty() else 2  # a bar redrawn with control codes only where a terminal shows it
    add("train", "--preset", "preset name (see the 'presets' command)", default="quick")
    add("train compare evaluate", "--data", "auto, keras, sample or a dir/archive of classes", default="auto")
    add("train", "--epochs", "override the preset's number of epochs", type=COUNT)
    add("train", "--batch-size", "override the preset's batch size", type=BATCH_SIZE)
    add("train", "--out", "output folder; run again with it, same settings, to resume", default="runs/latest")
    flag("train", "--overwrite", "replace the run already in --out (only its files)")
    add("train", "--limit", "at most this many images per class", type=COUNT)
    add("train", "--mixed-precision", "auto: 16-bit on GPU/TPU", choices=PRECISIONS, default="auto")
    add("train", "--no-jit", "no XLA", dest="jit_compile", action="store_const", const=False, default="auto")
    # NumPy's and Keras' seeds are 32-bit.
    add("train compare", "--seed", type=functools.partial(_whole_number, low=0, high=2**32 - 1), default=42)
    add("train", "--verbose", "1: a bar, 2: a line per epoch", type=int, choices=range(3), default=bar)
    add("compare", "--scale", "for a smoke test, a 2-core CPU, a GPU", choices=SCALES, default="full")
    add("compare", "--quick", "the same as --scale quick", dest="scale", action="store_const", const="quick")
    add("compare", "--epochs", "default: 5 quick, 10 cpu, 100 full", type=COUNT)
    add("compare", "--runs", "one training folder per model; run again to resume", default="runs/compare")
    add("compare", "--out", "the JSON record to write, e.g. results/attention_vs_shift.json", required=True)
    add("compare", "--models", "train only these of the five (default: all)", nargs="+", metavar="NAME")
    add("evaluate", "--batch-size", type=BATCH_SIZE, default=256)
    add("evaluate predict", "--model", "a .keras (safe mode); input <= 1024x1024, 500M params", required=True)
    flag("evaluate predict", "--tta", "score each image with its mirror image too (test-time augmentation)")
    add("predict", "folder", "folder of PNG or JPEG images (by content), each <= 64 MiB, 40 megapixels")
    # At most all of CIFAR-10's ten classes.
    add("predict", "--top-k", type=functools.partial(_whole_number, low=1, high=10), default=3)
    flag("predict", "--json", "print JSON instead of a table")
    return parser


def _scores(metrics: dict) -> str:
    return f"top-1 {metrics['accuracy']:.2%}  top-5 {metrics['top5']:.2%}"


def _train(args: argparse.Namespace) -> int:
    """train a preset and save best.keras, history.csv, run.json"""
    from shiftvit_lib.tools.data_sources import load_cifar10
    from shiftvit_lib.tools.run_folder import claim
    from shiftvit_lib.tools.runs import train

    config = preset(args.preset, **({"batch_size": args.batch_size} if args.batch_size else {}))
    precision = None if args.mixed_precision == "none" else args.mixed_precision
    options = {name: getattr(args, name) for name in ("epochs", "seed", "verbose", "jit_compile")}
    with claim(args.out, overwrite=args.overwrite) as folder:  # checked once, before the data loads
        data = load_cifar10(args.data, limit=args.limit, seed=args.seed)
        print(data.summary())
        run = train(config, data, folder, mixed_precision=precision, **options)
    epochs, path = run.record["epochs_run"], run.out_dir / "best.keras"
    print(f"test {_scores(run.record['test'])}  ({epochs} epochs; best model: {escape_name(path)})")
    return 0


def _compare(args: argparse.Namespace) -> int:
    """lesson 07's experiment: ViT, ViT+SPT+LSA and three ShiftViT shifts on equal terms"""
    from shiftvit_lib.tools import experiments as ex
    from shiftvit_lib.tools.data_sources import load_cifar10
    from shiftvit_lib.tools.files import check_name_length, check_own, write_json
    from shiftvit_lib.tools.run_folder import check_location

    out, scale = check_own(check_name_length(args.out)), args.scale  # checked before hours of training
    for folder in (out.parent, args.runs):  # each exists or can be made, and is writable
        check_location(folder)
    configs = ex.comparison_configs(scale, args.epochs)
    unknown = [name for name in args.models or () if name not in configs]
    if unknown:
        raise InputError(f"--models: unknown {', '.join(unknown)}; choose from {', '.join(configs)}")
    configs = {name: config for name, config in configs.items() if name in (args.models or configs)}
    data = load_cifar10(args.data, seed=args.seed)
    print(data.summary())
    rows = ex.run_comparison(configs, data, args.runs, seed=args.seed, restart=False, log=print)
    note = NOTES[scale] + (f" Only {', '.join(configs)} (--models)." if args.models else "")
    record = ex.comparison_record(rows, configs, data, seed=args.seed, mode=scale, note=note)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json(out, record)  # atomic: a full disk or a crash never leaves half a record
    print(ex.format_table(rows), f"saved {escape_name(out)}", sep="\n")
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    """top-1/top-5 accuracy of a saved model on the test split"""
    from shiftvit_lib.recipe import evaluate
    from shiftvit_lib.tools.data_sources import load_cifar10
    from shiftvit_lib.tools.inference import check_classifier, load_model

    model = load_model(args.model)
    check_classifier(model)  # a CIFAR-10 classifier (one output of ten scores), before the data loads
    data = load_cifar10(args.data)
    metrics = evaluate(model, data, batch_size=args.batch_size)
    if "fell back" not in data.source:  # a fallback was said already, as a warning
        print(data.source)
    print(f"test {_scores(metrics)}  loss {metrics['loss']:.4f}  ({metrics['images']:,} images)")
    if args.tta:  # beside the plain figure, never instead of it
        flipped = evaluate(model, data, batch_size=args.batch_size, tta=True)
        print(f"with flip TTA: {_scores(flipped)}  loss {flipped['loss']:.4f}")
    return 0


def _predict(args: argparse.Namespace) -> int:
    """classify every image in a folder"""
    import json

    from shiftvit_lib.tools.inference import load_model, predict_folder

    # predict_folder checks the model is a CIFAR-10 classifier before it reads an image.
    result = predict_folder(load_model(args.model), args.folder, top_k=args.top_k, tta=args.tta)
    print(json.dumps(result.to_rows(), indent=2) if args.json else result.format())
    if not result.predictions:
        raise InputError(
            f"no image in {escape_name(args.folder)} could be classified "
            f"({len(result.failures)} unreadable file(s), listed above)"
        )
    return 0


def _presets(_: argparse.Namespace) -> int:
    """list the presets"""
    for name in sorted(PRESETS):
        cfg = preset(name)
        size = f"input {cfg.input_shape[0]} px -> {cfg.image_size} px"
        print(f"{name:22} dim {cfg.projected_dim:3}  depths {list(cfg.depths)}  {size}  shift {cfg.shift}")
    return 0


# The library's advice in Python keywords, and the flag that does the same here.
KEYWORD_FLAGS = (
    (r"\boverwrite=True(?: \(--overwrite\))?", "--overwrite"),
    (r"\bsource=(['\"])(.*?)\1", r"--data \2"),
    (r"load_cifar10\((['\"])(.*?)\1\)", r"--data \2"),
)


def in_flags(text: str) -> str:
    """``text`` with the library's keyword advice (``overwrite=True``...) replaced by flags."""
    for pattern, flag in KEYWORD_FLAGS:
        text = re.sub(pattern, flag, text)
    return text


def _warn_in_one_line(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ARG001
    """``warnings.showwarning`` for the command line: ``warning: ...``, no source line."""
    print(f"warning: {in_flags(' '.join(str(message).split()))}", file=sys.stderr)


def _one_line(error: BaseException) -> str:
    """The message of a user error on one line, unprintable characters escaped."""
    text = str(error)
    if isinstance(error, OSError) and error.strerror:
        where = "" if error.filename is None else str(error.filename)
        text = f"{error.strerror}: {where}" if where and where not in error.strerror else error.strerror
    return escape_name(in_flags(" ".join(text.split())) or type(error).__name__)


def main(argv: Sequence[str] | None = None) -> int:
    problem = backend_problem()  # before anything loads Keras, whose own error is a traceback
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USER_ERROR
    for stream in (sys.stdout, sys.stderr):  # each line shows at once, even in a pipe (`| tee log`),
        # and a file name the terminal cannot encode prints escaped instead of failing
        getattr(stream, "reconfigure", lambda **_: None)(errors="backslashreplace", line_buffering=True)
    args, interrupted = None, False
    unraisable_hook, ctrl_c_handler = sys.unraisablehook, signal.getsignal(signal.SIGINT)
    sys.unraisablehook = functools.partial(_ctrl_c_again, unraisable_hook)
    try:
        try:
            args = _parser().parse_args(argv)
        except SystemExit as stop:  # --help (0) or a bad argument (2, one line already printed)
            return int(stop.code or 0)
        return _command(args)
    except BaseException as error:  # Ctrl-C at any moment (importing Keras, in a callback): one line
        if not _interrupted(error):
            raise
        # What the interrupted work left half-built (TensorFlow's tracing contexts) is freed from
        # now on, and its clean-up may fail ("Exception ignored", a traceback): noise after a Ctrl-C.
        interrupted, sys.unraisablehook = True, _ignore_unraisable
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C does not cut this message
        hint = f"; run the same command again to resume {escape_name(getattr(args, 'out', ''))} from its last finished epoch"
        resume = hint if getattr(args, "command", None) == "train" else ""
        print(f"stopped (Ctrl-C){resume}", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if interrupted:
            gc.collect()  # frees it while the hook is quiet; the program stays quiet until it exits
        if not interrupted or argv is not None:
            sys.unraisablehook = unraisable_hook
        # The program itself: its work is done, and a Ctrl-C while Python shuts down (TensorFlow's
        # takes seconds) must not print a traceback. Called from Python: the caller's handler again.
        signal.signal(signal.SIGINT, signal.SIG_IGN if argv is None else ctrl_c_handler)


def _ctrl_c_again(hook: Callable, unraisable) -> None:
    """A Ctrl-C that lands in a weakref callback or a ``__del__`` is dropped by Python ("Exception
    ignored", a traceback) and the run goes on: deliver it again once this hook has returned (raised
    inside the hook, it would be dropped the same way)."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        threading.Timer(0.01, _thread.interrupt_main).start()
    else:
        hook(unraisable)


def _ignore_unraisable(_unraisable) -> None:
    """``sys.unraisablehook`` once a run is stopped: the clean-up of abandoned work says nothing."""


def _interrupted(error: BaseException | None) -> bool:
    """Whether ``error`` is a Ctrl-C, or was raised while one unwound (TensorFlow may wrap it)."""
    while error is not None and not isinstance(error, KeyboardInterrupt):
        error = error.__cause__ or error.__context__
    return error is not None


def _command(args: argparse.Namespace) -> int:
    """Run the command; what the project raises about the user's input, files and data is one line."""
    from shiftvit_lib.tools.data_sources import DataSourceUnavailableError

    try:
        with warnings.catch_warnings():
            warnings.showwarning = _warn_in_one_line
            return globals()[f"_{args.command}"](args)
    # What the project raises about the user's input, files and data (files.py defines its own, to
    # stay importable without the package), and the system's refusals: one line. Anything else
    # is a bug and shows its traceback.
    except (InputError, UnsafeFileError, RunFolderInUseError, OSError, DataSourceUnavailableError) as error:
        if _interrupted(error):
            raise
        print(f"error: {_one_line(error)}", file=sys.stderr)
        return EXIT_USER_ERROR


if __name__ == "__main__":
    if hasattr(signal, "SIGPIPE"):  # `... --json | head`: the reader left; stop quietly, as other tools do
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
