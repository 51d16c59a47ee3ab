"""Training and inference throughput of a ShiftViT preset, and the shift op alone.

    python benchmarks/benchmark.py                       # CPU-sized defaults, a few minutes
    python benchmarks/benchmark.py --batch-size 256 --steps 50 --warmup-steps 10   # on a GPU

Variants of the training step (each measured in the same run, on random uint8 images
of the dataset's size, so only compute and the input pipeline are timed):

* ``plain``   float32, no XLA, slice+pad shift (what a straightforward Keras run does);
* ``xla``     the same, compiled with XLA (``jit_compile=True``);
* ``mixed``   bfloat16 compute (``mixed_bfloat16``), float32 weights and logits;
* ``roll``    the roll-and-mask shift instead of slice+pad;
* ``xla_mixed`` XLA and bfloat16 together: the CLI's defaults on a GPU;
* ``all``     every speed-up above that beat ``plain`` in this run (so the fast path is
              chosen by measurement on each machine).

Each result is appended to ``benchmarks/results/<backend>_<device>.json`` and the
tables in ``benchmarks/README.md`` are rebuilt from all stored results, each row with
its machine, backend and date.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import keras  # noqa: E402
import numpy as np  # noqa: E402

import shiftvit_lib as sv  # noqa: E402  (first: it loads the backend quietly)
from shiftvit_lib.data import make_dataset  # noqa: E402
from shiftvit_lib.shift import keras_io_shift, shift_channels, shift_channels_roll  # noqa: E402
from shiftvit_lib.tools.devices import describe_machine, precision_policy  # noqa: E402
from shiftvit_lib.train import compile_for_training  # noqa: E402

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


def _random_batches(config: sv.ShiftViTConfig, count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (count, *config.input_shape), dtype=np.uint8)
    return images, rng.integers(0, config.num_classes, count)


class _ClockAfterWarmup(keras.callbacks.Callback):
    """Notes the time when the last warm-up batch ends, inside one ``fit``/``predict`` call.

    Timing from there to the end of the call leaves out compilation and the fixed
    start-up cost of ``fit``/``predict`` (iterators, callbacks), which would
    otherwise dominate a run of a few steps on a CPU.
    """

    def __init__(self, warmup: int) -> None:
        super().__init__()
        self.warmup = warmup
        self.started: float | None = None

    def _tick(self, batch: int) -> None:
        if batch == self.warmup - 1:
            self.started = time.perf_counter()

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self._tick(batch)

    def on_predict_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self._tick(batch)


def _rate(clock: _ClockAfterWarmup, finished: float, batch: int, steps: int) -> dict[str, float]:
    seconds = finished - clock.started
    return {"images_per_second": batch * steps / seconds, "step_ms": 1000 * seconds / steps}


def measure_training(config: sv.ShiftViTConfig, variant: dict[str, Any], batch: int, steps: int, warmup: int) -> dict[str, float]:
    """Training images per second over ``steps`` steps that follow ``warmup`` steps in the same ``fit``."""
    keras.backend.clear_session()
    keras.utils.set_random_seed(0)
    cfg = config.replace(batch_size=batch, shift_implementation=variant["shift_implementation"])
    with precision_policy(variant["precision"]):
        model = sv.build_shiftvit(cfg, seed=0)
        compile_for_training(model, cfg, steps_per_epoch=warmup + steps, epochs=1, jit_compile=variant["jit"])
    images, labels = _random_batches(cfg, batch * (warmup + steps))
    # A recipe with MixUp/CutMix mixes every batch on the host, as in training.
    mixing = (dict(num_classes=cfg.num_classes, mixup_alpha=cfg.mixup_alpha, cutmix_alpha=cfg.cutmix_alpha)
              if cfg.mixes_labels else {})
    clock = _ClockAfterWarmup(warmup)
    dataset = make_dataset(images, labels, batch, shuffle=False, **mixing)
    model.fit(dataset, epochs=1, verbose=0, shuffle=False, callbacks=[clock])
    return _rate(clock, time.perf_counter(), batch, steps)


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
            keras.ops.convert_to_numpy(run(x))  # compile
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


def write_readme_tables(results_dir: Path, readme: Path) -> None:
    """Rebuild the results section of benchmarks/README.md from every stored JSON file."""
    start, end = "<!-- results:start -->", "<!-- results:end -->"
    blocks = []
    # pipeline_*.json hold benchmarks/pipeline.py's input-pipeline rates, another table.
    for path in sorted(p for p in results_dir.glob("*.json") if not p.name.startswith("pipeline")):
        for run in json.loads(path.read_text()):
            m = run["machine"]
            head = (f"**{run['date']}**, backend `{m['backend']}` (Keras {m['keras']}), devices "
                    f"{', '.join(m['devices'])}, {m['cpu_count']} CPU cores; preset `{run['preset']}`, "
                    f"batch {run['batch_size']}, {run['steps']} timed steps (random images).")
            lines = [head, "", "| variant | train images/s | train step ms | inference images/s | vs. plain (train) |",
                     "|---|---:|---:|---:|---:|"]
            plain = run["train"]["plain"]["images_per_second"]
            for name, train in run["train"].items():
                infer = run["inference"].get(name, {})
                desc = run["variants"][name]
                lines.append(
                    f"| {name} ({desc}) | {train['images_per_second']:,.0f} | {train['step_ms']:,.1f} | "
                    f"{infer.get('images_per_second', float('nan')):,.0f} | {train['images_per_second'] / plain:.2f}x |"
                )
            lines += ["", "| shift op, stage shape | function | µs per call |", "|---|---|---:|"]
            for row in run["shift_ops"]:
                lines.append(f"| stage {row['stage']} {tuple(row['shape'])} | {row['function']} | {row['microseconds']:,.1f} |")
            blocks.append("\n".join(lines))
    text = readme.read_text() if readme.exists() else f"# Benchmarks\n\n{start}\n{end}\n"
    before, _, rest = text.partition(start)
    _, _, after = rest.partition(end)
    readme.write_text(before + start + "\n" + "\n\n".join(blocks) + "\n" + end + after)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="seed")
    parser.add_argument("--batch-size", type=int, default=None, help="default: 256 on a GPU, 32 on a CPU")
    parser.add_argument("--steps", type=int, default=None, help="timed steps (default: 50 GPU, 10 CPU)")
    parser.add_argument("--warmup-steps", type=int, default=3, help="untimed steps first (compilation)")
    parser.add_argument("--variants", nargs="*", default=None, help=f"subset of {list(VARIANTS)} (+ all)")
    parser.add_argument("--no-save", action="store_true", help="print only; do not store results")
    args = parser.parse_args(argv)

    machine = describe_machine()
    on_gpu = device_label(machine) != "cpu"
    batch = args.batch_size or (256 if on_gpu else 32)
    steps = args.steps or (50 if on_gpu else 10)
    config = sv.preset(args.preset)
    chosen = args.variants or [*VARIANTS, "all"]
    print(f"{config.name}: batch {batch}, {steps} timed steps, backend {machine['backend']}, devices {machine['devices']}")

    variants = {name: VARIANTS[name] for name in chosen if name in VARIANTS}
    train: dict[str, dict[str, float]] = {}
    inference: dict[str, dict[str, float]] = {}
    for name, variant in variants.items():
        train[name] = measure_training(config, variant, batch, steps, args.warmup_steps)
        inference[name] = measure_inference(config, variant, batch, steps, args.warmup_steps)
        print(f"  {name:9} train {train[name]['images_per_second']:9,.0f} img/s ({train[name]['step_ms']:8.1f} ms/step)"
              f"   inference {inference[name]['images_per_second']:9,.0f} img/s", flush=True)
    if "all" in chosen:
        variants["all"] = combine_measured_speedups(train)
        train["all"] = measure_training(config, variants["all"], batch, steps, args.warmup_steps)
        inference["all"] = measure_inference(config, variants["all"], batch, steps, args.warmup_steps)
        print(f"  all    train {train['all']['images_per_second']:9,.0f} img/s ({train['all']['step_ms']:8.1f} ms/step)"
              f"   inference {inference['all']['images_per_second']:9,.0f} img/s  ({variants['all']})")
    shift_ops = measure_shift_ops(config, batch, repeats=200 if on_gpu else 20)
    for row in shift_ops:
        print(f"  shift stage {row['stage']} {row['function']:24} {row['microseconds']:10.1f} µs")

    def describe(v: dict[str, Any]) -> str:
        return f"XLA {'on' if v['jit'] else 'off'}, {v['precision'] or 'float32'}, {v['shift_implementation']} shift"

    record = {"date": time.strftime("%Y-%m-%d"), "machine": machine, "preset": config.name, "batch_size": batch,
              "steps": steps, "variants": {k: describe(v) for k, v in variants.items()},
              "train": train, "inference": inference, "shift_ops": shift_ops}
    if not args.no_save:
        RESULTS.mkdir(exist_ok=True)
        path = RESULTS / f"{machine['backend']}_{device_label(machine)}.json"
        runs = json.loads(path.read_text()) if path.exists() else []
        path.write_text(json.dumps(runs + [record], indent=1))
        write_readme_tables(RESULTS, HERE / "README.md")
        print(f"saved {path.relative_to(HERE.parent)} and updated benchmarks/README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
