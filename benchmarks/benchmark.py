"""Training and inference throughput of a ShiftViT preset, and the shift op alone.

    python benchmarks/benchmark.py                       # CPU-sized defaults, a few minutes
    python benchmarks/benchmark.py --batch-size 256 --steps 156 --warmup-steps 5   # on a GPU
    python benchmarks/benchmark.py --preset cpu --batch-size 128 --check-fit       # and agree with fit?

Variants of the training step (each measured in the same run, on random uint8 images
of the dataset's size, so only compute and the input pipeline are timed):

* ``plain``   float32, no XLA, slice+pad shift (what a straightforward Keras run does);
* ``xla``     the same, compiled with XLA (``jit_compile=True``);
* ``mixed``   bfloat16 compute (``mixed_bfloat16``), float32 weights and logits;
* ``roll``    the roll-and-mask shift instead of slice+pad;
* ``xla_mixed`` XLA and bfloat16 together: the CLI's defaults on a GPU;
* ``all``     every speed-up above that beat ``plain`` in this run (so the fast path is
              chosen by measurement on each machine).

A training figure is measured the way a training run measures its own: the
batches of ``recipe.training_datasets``, the model of ``tools.runs.build_for_training``,
``fit`` with the progress log on as the command line trains, the library's
``ThroughputMeter`` on every epoch, and the median epoch with the first left out
(the rule of ``run.json``). A warm-up ``fit`` of
``--warmup-steps`` steps compiles the step first. ``--check-fit`` also trains the preset
with ``shiftvit_lib.train`` and the command line's defaults on the same random images
and batch, compares its ``run.json`` figure with the benchmark's for the same settings,
and exits with status 1 when they differ by more than 10 %.

Each result is appended to ``benchmarks/results/<backend>_<device>.json`` and the
tables in ``benchmarks/README.md`` are rebuilt from all stored results, each row with
its machine, backend and date.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import keras  # noqa: E402
import numpy as np  # noqa: E402

import shiftvit_lib as sv  # noqa: E402  (first: it loads the backend quietly)
from shiftvit_lib.data import DataSplits  # noqa: E402
from shiftvit_lib.recipe import (
    ThroughputMeter,  # noqa: E402
    training_datasets,  # noqa: E402
)
from shiftvit_lib.shift import keras_io_shift, shift_channels, shift_channels_roll  # noqa: E402
from shiftvit_lib.tools.devices import describe_machine, precision_policy  # noqa: E402
from shiftvit_lib.tools.runs import build_for_training, train  # noqa: E402

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"

VARIANTS: dict[str, dict[str, Any]] = {
    "plain": dict(jit=False, precision=None, shift_implementation="slice"),
    "xla": dict(jit=True, precision=None, shift_implementation="slice"),
    "mixed": dict(jit=False, precision="mixed_bfloat16", shift_implementation="slice"),
    "roll": dict(jit=False, precision=None, shift_implementation="roll"),
    # What `python -m shiftvit_lib train` does on a GPU by default (mixed_bfloat16, XLA).
    "xla_mixed": dict(jit=True, precision="mixed_bfloat16", shift_implementation="slice"),
}


def steady_images_per_second(speeds: list[float]) -> float | None:
    """A run's training rate: the median epoch, the first (compilation) left out when there is another.

    The rule of ``run.json`` (written by ``tools.runs.train``), so the benchmark reports what a run reports.
    """
    return round(float(np.median(speeds[1:] or speeds)), 1) if speeds else None


def _random_batches(config: sv.ShiftViTConfig, count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (count, *config.input_shape), dtype=np.uint8)
    return images, rng.integers(0, config.num_classes, count)


def random_splits(config: sv.ShiftViTConfig, train_images: int, seed: int = 0) -> DataSplits:
    """Random uint8 images as data splits: ``train_images`` to train on, one batch each to validate and test."""
    small = config.batch_size
    parts = [_random_batches(config, n, seed + i) for i, n in enumerate((train_images, small, small))]
    return DataSplits(
        *(array for part in parts for array in part),
        class_names=tuple(f"class {i}" for i in range(config.num_classes)),
        source=f"random uint8 images (seed {seed}): {train_images:,} to train, {small} each to validate and test",
    )


# The command line trains with Keras' progress log on (``--verbose`` 1 by default, 2 in the
# GPU script); the benchmark and its ``fit`` check train with it on too, so that their loop is
# the command line's, and keep its lines out of the benchmark's output. No callback of either
# runs after each step (a per-step hook would make Keras wait for every step, a slower loop).
TRAINING_VERBOSITY = 2


class _CPUTimeMeter(keras.callbacks.Callback):
    """Training images per second of this process's CPU time (all threads), epoch by epoch.

    The same window as ``ThroughputMeter`` (epoch start to validation start). On a CPU
    shared with other work, CPU time moves much less than wall time, so these rates
    show whether a wall-clock difference is the code's or the machine's.
    """

    def __init__(self, images_per_epoch: int) -> None:
        super().__init__()
        self.images_per_epoch = images_per_epoch
        self.rates: list[float] = []
        self._start: float | None = None

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._start = time.process_time()

    def _stop(self) -> None:
        if self._start is not None:
            self.rates.append(self.images_per_epoch / max(time.process_time() - self._start, 1e-9))
            self._start = None

    def on_test_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._stop()

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._stop()


def measure_training(
    config: sv.ShiftViTConfig, variant: dict[str, Any], batch: int, steps: int, warmup: int, epochs: int = 3
) -> dict[str, Any]:
    """Training images per second as a training run measures it, ``epochs`` epochs of ``steps`` steps.

    A first ``fit`` of ``warmup`` steps compiles the step; a second ``fit`` trains ``epochs``
    epochs, each timed by the library's ``ThroughputMeter``; the figure is their median with
    the first left out, the rule of ``run.json``.
    """
    keras.backend.clear_session()
    seed = 0
    cfg = config.replace(batch_size=batch, shift_implementation=variant["shift_implementation"])
    keras.utils.set_random_seed(seed)
    data = random_splits(cfg, batch * steps, seed)
    train_ds, _, steps_per_epoch = training_datasets(cfg, data, seed)
    model = build_for_training(
        cfg, steps_per_epoch, epochs + 1, seed=seed, jit_compile=variant["jit"], mixed_precision=variant["precision"]
    )
    warm_ds, _, _ = training_datasets(cfg, random_splits(cfg, batch * warmup, seed), seed)
    warm_started = time.perf_counter()
    model.fit(warm_ds, epochs=1, verbose=0, shuffle=False)  # compiles the step
    warmup_seconds = time.perf_counter() - warm_started
    cpu_meter = _CPUTimeMeter(batch * steps_per_epoch)
    callbacks = [ThroughputMeter(batch * steps_per_epoch), cpu_meter]
    with contextlib.redirect_stdout(io.StringIO()):
        history = model.fit(train_ds, epochs=epochs, verbose=TRAINING_VERBOSITY, shuffle=False, callbacks=callbacks)
    speeds = [float(v) for v in history.history["images_per_second"]]
    rate = steady_images_per_second(speeds)
    return {"images_per_second": rate, "step_ms": 1000 * batch / rate, "epoch_images_per_second": speeds,
            "epoch_images_per_cpu_second": cpu_meter.rates, "warmup_seconds": round(warmup_seconds, 2)}


class _ClockAfterWarmup(keras.callbacks.Callback):
    """Notes the time when the last warm-up batch ends, inside one ``predict`` call.

    Timing from there to the end of the call leaves out compilation and the fixed
    start-up cost of ``predict`` (iterators, callbacks), which would otherwise
    dominate a run of a few steps on a CPU.
    """

    def __init__(self, warmup: int) -> None:
        super().__init__()
        self.warmup = warmup
        self.started: float | None = None

    def on_predict_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if batch == self.warmup - 1:
            self.started = time.perf_counter()


def _rate(clock: _ClockAfterWarmup, finished: float, batch: int, steps: int) -> dict[str, float]:
    seconds = finished - clock.started
    return {"images_per_second": batch * steps / seconds, "step_ms": 1000 * seconds / steps}


def measure_inference(config: sv.ShiftViTConfig, variant: dict[str, Any], batch: int, steps: int, warmup: int) -> dict[str, float]:
    """Inference images per second over ``steps`` batches that follow ``warmup`` batches in one ``predict``."""
    keras.backend.clear_session()
    cfg = config.replace(shift_implementation=variant["shift_implementation"])
    with precision_policy(variant["precision"]):
        model = sv.build_shiftvit(cfg, seed=0)
    model.compile(jit_compile=variant["jit"])
    images, _ = _random_batches(cfg, batch * (warmup + steps))
    clock = _ClockAfterWarmup(warmup)
    model.predict(images, batch_size=batch, verbose=0, callbacks=[clock])
    return _rate(clock, time.perf_counter(), batch, steps)


# The benchmark agrees with a training run when its training figure is within this share
# of the run's own (issue 39: within 10 % on the CPU, same preset, batch and backend).
FIT_TOLERANCE = 0.10


def check_agreement(benchmark_ips: float, fit_ips: float, tolerance: float = FIT_TOLERANCE) -> dict[str, Any]:
    """The benchmark's training images/s against ``fit``'s own: their ratio and whether it is within ``tolerance``."""
    if not (benchmark_ips > 0 and fit_ips > 0):
        raise ValueError(f"both figures must be positive images/s, got {benchmark_ips!r} and {fit_ips!r}")
    ratio = benchmark_ips / fit_ips
    return {"benchmark_images_per_second": round(benchmark_ips, 1), "fit_images_per_second": round(fit_ips, 1),
            "ratio": round(ratio, 3), "tolerance": tolerance, "agrees": abs(ratio - 1) <= tolerance}


class _SettingsOfTheRun(keras.callbacks.Callback):
    """Notes the XLA setting and precision policy that the training run's compiled model really has."""

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        self.jit = bool(self.model.jit_compile)
        policy = self.model.dtype_policy.name
        self.precision = None if policy == "float32" else policy


def measure_fit(config: sv.ShiftViTConfig, batch: int, steps: int, epochs: int) -> dict[str, Any]:
    """``shiftvit_lib.train`` with the command line's defaults on ``steps`` batches of random images a epoch.

    Returns ``run.json``'s ``train_images_per_second``, every epoch's figure, and the
    settings (``variant``) that ``jit_compile="auto"`` and ``mixed_precision="auto"``
    came to on this machine, so the benchmark can time the same step.
    """
    keras.backend.clear_session()
    cfg = config.replace(batch_size=batch)
    settings, cpu_meter = _SettingsOfTheRun(), _CPUTimeMeter(batch * steps)
    with tempfile.TemporaryDirectory() as out, contextlib.redirect_stdout(io.StringIO()):
        run = train(cfg, random_splits(cfg, batch * steps), Path(out) / "run", epochs=epochs, jit_compile="auto",
                    mixed_precision="auto", verbose=TRAINING_VERBOSITY, extra_callbacks=[settings, cpu_meter])
    variant = dict(jit=settings.jit, precision=settings.precision, shift_implementation=cfg.shift_implementation)
    return {"images_per_second": run.record["train_images_per_second"],
            "epoch_images_per_second": [float(v) for v in run.history["images_per_second"]],
            "epoch_images_per_cpu_second": cpu_meter.rates, "variant": variant}


def _timed(fn: Callable[[], Any]) -> tuple[Any, dict[str, float]]:
    """``fn()`` and the wall and process CPU seconds (all threads) it took."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, {"wall_seconds": round(time.perf_counter() - wall, 1), "cpu_seconds": round(time.process_time() - cpu, 1)}


def _steady(runs: list[dict[str, Any]], key: str) -> float:
    """The median over several runs' epochs, each run's first epoch left out (``run.json``'s rule, pooled)."""
    return float(np.median([rate for run in runs for rate in (run[key][1:] or run[key])]))


def fit_check(config: sv.ShiftViTConfig, batch: int, steps: int, warmup: int, epochs: int,
              rounds: int = 2, basis: str = "wall") -> dict[str, Any]:
    """Training runs and the benchmark on the same step, interleaved, and their agreement.

    ``rounds`` of each, in the order fit, benchmark, benchmark, fit, ... so that a change
    in the machine's load during the check weighs on both alike. Each figure is the median
    of its runs' epochs, every run's first left out, in images per second of wall time
    (what ``fit`` logs) and per second of this process's CPU time. ``basis`` ("wall" or
    "cpu") says which of the two the verdict (``agrees``) reads: CPU time on a CPU shared
    with other work, where wall-clock rates swing by half from one minute to the next;
    wall time on an accelerator, where the CPU time is not the step's.
    """
    if basis not in ("wall", "cpu"):
        raise ValueError(f"basis must be 'wall' or 'cpu', got {basis!r}")
    fits: list[dict[str, Any]] = []
    benches: list[dict[str, Any]] = []
    times = {"fit": {"wall_seconds": 0.0, "cpu_seconds": 0.0}, "benchmark": {"wall_seconds": 0.0, "cpu_seconds": 0.0}}

    def run_fit() -> None:
        result, spent = _timed(lambda: measure_fit(config, batch, steps, epochs))
        fits.append(result)
        for k, v in spent.items():
            times["fit"][k] += v

    def run_benchmark() -> None:
        result, spent = _timed(lambda: measure_training(config, fits[0]["variant"], batch, steps, warmup, epochs))
        benches.append(result)
        for k, v in spent.items():
            times["benchmark"][k] += v

    for round_index in range(rounds):
        order = (run_fit, run_benchmark) if round_index % 2 == 0 else (run_benchmark, run_fit)
        for step in order:
            step()
    wall = check_agreement(_steady(benches, "epoch_images_per_second"), _steady(fits, "epoch_images_per_second"))
    cpu = check_agreement(_steady(benches, "epoch_images_per_cpu_second"),
                          _steady(fits, "epoch_images_per_cpu_second"))
    return {**wall, "agrees": (wall if basis == "wall" else cpu)["agrees"], "basis": basis,
            "settings": describe(fits[0]["variant"]), "steps_per_epoch": steps, "epochs": epochs,
            "rounds": rounds, "fit_run_json_images_per_second": [run["images_per_second"] for run in fits],
            "fit_epoch_images_per_second": [run["epoch_images_per_second"] for run in fits],
            "benchmark_epoch_images_per_second": [run["epoch_images_per_second"] for run in benches],
            "per_cpu_second": {"benchmark": cpu["benchmark_images_per_second"], "fit": cpu["fit_images_per_second"],
                               "ratio": cpu["ratio"], "agrees": cpu["agrees"]},
            "fit_epoch_images_per_cpu_second": [run["epoch_images_per_cpu_second"] for run in fits],
            "benchmark_epoch_images_per_cpu_second": [run["epoch_images_per_cpu_second"] for run in benches],
            "time": {part: {k: round(v, 1) for k, v in spent.items()} for part, spent in times.items()}}


def describe(variant: dict[str, Any]) -> str:
    return (f"XLA {'on' if variant['jit'] else 'off'}, {variant['precision'] or 'float32'}, "
            f"{variant['shift_implementation']} shift")


# A speed-up must beat the plain path by this factor to count: smaller differences are
# within the run-to-run noise of a few timed steps.
SPEEDUP_MARGIN = 1.05


def combine_measured_speedups(train: dict[str, dict[str, float]]) -> dict[str, Any]:
    """The ``all`` variant: every speed-up that beat ``plain`` by 5 % in *this* run, and no other.

    On a GPU that is usually XLA + bfloat16; on a CPU it is often XLA alone, or
    nothing, and the tables say so.
    """
    plain = train.get("plain", {}).get("images_per_second", 0.0)

    def helped(name: str) -> bool:
        return name in train and train[name]["images_per_second"] > SPEEDUP_MARGIN * plain

    return dict(
        jit=helped("xla"),
        precision="mixed_bfloat16" if helped("mixed") else None,
        shift_implementation="roll" if helped("roll") else "slice",
    )


def _compiled(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(fn, jit_compile=True)
    if backend == "jax":
        import jax

        return jax.jit(fn)
    return fn


def measure_shift_ops(config: sv.ShiftViTConfig, batch: int, repeats: int) -> list[dict[str, Any]]:
    """Microseconds per call of each shift function on every stage's feature-map shape."""
    rows = []
    functions = {"shift_channels (slice)": shift_channels, "shift_channels_roll": shift_channels_roll,
                 "keras_io_shift": keras_io_shift}
    for stage, (side, dim) in enumerate(zip(config.stage_resolutions, config.stage_dims), start=1):
        x = keras.ops.convert_to_tensor(np.random.default_rng(stage).normal(size=(batch, side, side, dim)).astype("float32"))
        for name, fn in functions.items():
            run = _compiled(lambda t, fn=fn: fn(t, config.num_div, config.shift_pixel))
            try:
                keras.ops.convert_to_numpy(run(x))  # compile
            except ValueError as error:  # e.g. keras_io_shift on too few channels: not this shape's op
                rows.append({"stage": stage, "shape": [batch, side, side, dim], "function": name,
                             "microseconds": None, "not_run": str(error)})
                continue
            started = time.perf_counter()
            for _ in range(repeats):
                out = run(x)
            keras.ops.convert_to_numpy(out)  # wait for asynchronous devices
            rows.append({"stage": stage, "shape": [batch, side, side, dim], "function": name,
                         "microseconds": 1e6 * (time.perf_counter() - started) / repeats})
    return rows


def device_label(machine: dict[str, Any]) -> str:
    devices = [d for d in machine["devices"] if "cpu" not in d.lower()]
    label = (devices[0] if devices else "cpu").split(":")[-1]
    return "".join(c if c.isalnum() else "-" for c in label).strip("-").lower() or "cpu"


def agreement_table(check: dict[str, Any]) -> list[str]:
    """The ``--check-fit`` result as Markdown lines: benchmark against ``fit``, per wall and per CPU second."""
    cpu = check["per_cpu_second"]
    head = (f"Agreement with `fit` ({check['settings']}; {check['rounds']} training runs and {check['rounds']} "
            f"benchmark runs interleaved, {check['epochs']} epochs of {check['steps_per_epoch']} steps each; "
            f"verdict on the {check['basis']} basis, within {check['tolerance']:.0%} asked):")
    return [head, "", "| training images/s | benchmark | fit | ratio | within 10 % |", "|---|---:|---:|---:|---|",
            f"| per wall second | {check['benchmark_images_per_second']:,.1f} | {check['fit_images_per_second']:,.1f} "
            f"| {check['ratio']:.3f} | {'yes' if abs(check['ratio'] - 1) <= check['tolerance'] else 'no'} |",
            f"| per CPU second | {cpu['benchmark']:,.1f} | {cpu['fit']:,.1f} | {cpu['ratio']:.3f} "
            f"| {'yes' if abs(cpu['ratio'] - 1) <= check['tolerance'] else 'no'} |"]


def write_readme_tables(results_dir: Path, readme: Path) -> None:
    """Rebuild the results section of benchmarks/README.md from every stored JSON file."""
    start, end = "<!-- results:start -->", "<!-- results:end -->"
    blocks = []
    # pipeline_*.json hold benchmarks/pipeline.py's input-pipeline rates, another table.
    for path in sorted(p for p in results_dir.glob("*.json") if not p.name.startswith("pipeline")):
        for run in json.loads(path.read_text()):
            m = run["machine"]
            if "epochs" in run:
                timing = (f"{run['epochs']} epochs of {run['steps']} steps after a {run['warmup_steps']}-step "
                          f"warm-up, the median epoch with the first left out (random images); the whole "
                          f"run {run['wall_seconds']:,.0f} s, {run['cpu_seconds']:,.0f} s of CPU time.")
            else:  # measured before issue 39's change: one fit, timed from the end of warm-up to its return
                timing = (f"{run['steps']} timed steps in one fit after warm-up (random images; the way "
                          "before issue 39, not comparable with fit's own figure).")
            head = (f"**{run['date']}**, backend `{m['backend']}` (Keras {m['keras']}), devices "
                    f"{', '.join(m['devices'])}, {m['cpu_count']} CPU cores; preset `{run['preset']}`, "
                    f"batch {run['batch_size']}, {timing}")
            lines = [head, "", "| variant | train images/s | train step ms | inference images/s | vs. plain (train) |",
                     "|---|---:|---:|---:|---:|"]
            plain = run["train"].get("plain", {}).get("images_per_second")  # absent when not measured
            for name, figures in run["train"].items():
                infer = run["inference"].get(name, {})
                desc = run["variants"][name]
                versus = f"{figures['images_per_second'] / plain:.2f}x" if plain else "-"
                lines.append(
                    f"| {name} ({desc}) | {figures['images_per_second']:,.0f} | {figures['step_ms']:,.1f} | "
                    f"{infer.get('images_per_second', float('nan')):,.0f} | {versus} |"
                )
            if "fit_check" in run:
                lines += ["", *agreement_table(run["fit_check"])]
            lines += ["", "| shift op, stage shape | function | µs per call |", "|---|---|---:|"]
            for row in run["shift_ops"]:
                timing = f"{row['microseconds']:,.1f}" if row["microseconds"] is not None else "not run"
                lines.append(f"| stage {row['stage']} {tuple(row['shape'])} | {row['function']} | {timing} |")
            blocks.append("\n".join(lines))
    text = readme.read_text() if readme.exists() else f"# Benchmarks\n\n{start}\n{end}\n"
    before, _, rest = text.partition(start)
    _, _, after = rest.partition(end)
    readme.write_text(before + start + "\n" + "\n\n".join(blocks) + "\n" + end + after)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="seed")
    parser.add_argument("--batch-size", type=int, default=None, help="default: 256 on a GPU, 32 on a CPU")
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="steps per timed epoch (default: 10 on a CPU; on a GPU a CIFAR-10 epoch, 40,000 // batch)",
    )
    parser.add_argument("--warmup-steps", type=int, default=3, help="steps of the untimed warm-up fit (compilation)")
    parser.add_argument("--epochs", type=int, default=3,
                        help="timed epochs; the figure is their median with the first left out, as in run.json")
    parser.add_argument("--variants", nargs="*", default=None, help=f"subset of {list(VARIANTS)} (+ all)")
    parser.add_argument("--check-fit", action="store_true",
                        help="also train with shiftvit_lib.train (the CLI's defaults) on the same random images "
                             "and batch; exit 1 if the benchmark's figure is more than 10 %% off its own")
    parser.add_argument("--check-rounds", type=int, default=2,
                        help="training runs and benchmark runs each in the check, interleaved (default 2)")
    parser.add_argument("--check-basis", choices=["wall", "cpu"], default=None,
                        help="what the check's verdict reads: images per wall second (default on an accelerator) "
                             "or per CPU second of this process (default on a CPU, shared with other work)")
    parser.add_argument("--no-save", action="store_true", help="print only; do not store results")
    args = parser.parse_args(argv)
    for flag in ("batch_size", "steps", "warmup_steps", "epochs", "check_rounds"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1, got {value}")
    unknown = [name for name in args.variants or [] if name not in VARIANTS and name != "all"]
    if unknown:
        parser.error(f"unknown variant(s) {unknown}: choose from {[*VARIANTS, 'all']}")

    machine = describe_machine()
    on_gpu = device_label(machine) != "cpu"
    batch = args.batch_size or (256 if on_gpu else 32)
    # On a GPU an epoch as long as a training run's on CIFAR-10's 40,000 training images, so
    # the fixed cost of each epoch weighs as it does there.
    steps = args.steps or (max(1, 40_000 // batch) if on_gpu else 10)
    config = sv.preset(args.preset)
    chosen = args.variants if args.variants is not None else [*VARIANTS, "all"]
    print(f"{config.name}: batch {batch}, {args.epochs} epochs of {steps} steps after {args.warmup_steps} warm-up "
          f"steps, backend {machine['backend']}, devices {machine['devices']}", flush=True)
    run_wall, run_cpu = time.perf_counter(), time.process_time()

    variants = {name: VARIANTS[name] for name in chosen if name in VARIANTS}
    train: dict[str, dict[str, Any]] = {}
    inference: dict[str, dict[str, float]] = {}

    def measure(name: str) -> None:
        train[name] = measure_training(config, variants[name], batch, steps, args.warmup_steps, args.epochs)
        inference[name] = measure_inference(config, variants[name], batch, steps, args.warmup_steps)
        print(f"  {name:9} train {train[name]['images_per_second']:9,.0f} img/s ({train[name]['step_ms']:8.1f} ms/step)"
              f"   inference {inference[name]['images_per_second']:9,.0f} img/s  ({describe(variants[name])})",
              flush=True)

    for name in list(variants):
        measure(name)
    if "all" in chosen:
        variants["all"] = combine_measured_speedups(train)
        measure("all")
    shift_ops = measure_shift_ops(config, batch, repeats=200 if on_gpu else 20)
    for row in shift_ops:
        timing = f"{row['microseconds']:10.1f} µs" if row["microseconds"] is not None else f"not run: {row['not_run']}"
        print(f"  shift stage {row['stage']} {row['function']:24} {timing}")
    agreement = None
    if args.check_fit:
        basis = args.check_basis or ("wall" if on_gpu else "cpu")
        agreement = fit_check(config, batch, steps, args.warmup_steps, args.epochs, args.check_rounds, basis)
        verdict = "agree" if agreement["agrees"] else "DISAGREE"
        print(f"  fit check ({agreement['settings']}): per wall second benchmark "
              f"{agreement['benchmark_images_per_second']:,.1f} img/s, fit {agreement['fit_images_per_second']:,.1f} "
              f"img/s, ratio {agreement['ratio']:.3f}; per CPU second benchmark "
              f"{agreement['per_cpu_second']['benchmark']:,.1f}, fit {agreement['per_cpu_second']['fit']:,.1f}, "
              f"ratio {agreement['per_cpu_second']['ratio']:.3f}: {verdict} on the {basis} basis "
              f"(within {FIT_TOLERANCE:.0%} asked)", flush=True)

    record = {"date": time.strftime("%Y-%m-%d"), "machine": machine, "preset": config.name, "batch_size": batch,
              "steps": steps, "epochs": args.epochs, "warmup_steps": args.warmup_steps,
              "variants": {k: describe(v) for k, v in variants.items()},
              "train": train, "inference": inference, "shift_ops": shift_ops,
              "wall_seconds": round(time.perf_counter() - run_wall, 1),
              "cpu_seconds": round(time.process_time() - run_cpu, 1)}
    if agreement is not None:
        record["fit_check"] = agreement
    if not args.no_save:
        RESULTS.mkdir(exist_ok=True)
        path = RESULTS / f"{machine['backend']}_{device_label(machine)}.json"
        runs = json.loads(path.read_text()) if path.exists() else []
        path.write_text(json.dumps(runs + [record], indent=1))
        write_readme_tables(RESULTS, HERE / "README.md")
        print(f"saved {path.relative_to(HERE.parent)} and updated benchmarks/README.md")
    print(f"benchmark done in {record['wall_seconds']:,.1f} s ({record['cpu_seconds']:,.1f} s of CPU time)")
    return 0 if agreement is None or agreement["agrees"] else 1


if __name__ == "__main__":
    sys.exit(main())
