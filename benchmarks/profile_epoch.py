"""One training epoch of a preset under JAX's profiler: where the time of an epoch goes.

    KERAS_BACKEND=jax python benchmarks/profile_epoch.py --preset strong --data cifar10-jpeg.tar.gz --out DIR

The run is the command line's: the batches of ``recipe.training_datasets`` and the model of
``tools.runs.build_for_training`` (mixed precision as the command line picks it, XLA "auto").
A first ``fit`` of ``--warmup-steps`` steps compiles the step, untraced; then one whole epoch runs
under ``jax.profiler.trace``, written to ``DIR/trace`` (TensorBoard's profile plugin or Perfetto
read it), and ``DIR/summary.json`` records the epoch's wall seconds, images per second and the
host's CPU seconds (all threads) in that epoch: a host busy for most of the wall time is what keeps
a GPU waiting. scripts/gpu_runs.sh runs it after each training stage.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import keras  # noqa: E402

import shiftvit_lib as sv  # noqa: E402
from shiftvit_lib import recipe  # noqa: E402
from shiftvit_lib.tools import devices, runs  # noqa: E402
from shiftvit_lib.tools.devices import describe_machine  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="seed")
    parser.add_argument("--data", default="sample", help="as the command line's --data")
    parser.add_argument("--limit", type=int, help="at most this many images per class")
    parser.add_argument("--warmup-steps", type=int, default=5, help="steps of the compiling fit, untraced")
    parser.add_argument("--out", required=True, help="folder for trace/ and summary.json")
    args = parser.parse_args(argv)
    config, out = sv.preset(args.preset), Path(args.out)
    data = sv.load_cifar10(args.data, limit=args.limit)
    keras.utils.set_random_seed(42)
    train_ds, _, steps = recipe.training_datasets(config, data, seed=42)
    precision = devices.recommended_mixed_precision()
    model = runs.build_for_training(config, steps, config.epochs, seed=42, mixed_precision=precision)
    model.fit(train_ds, epochs=1, steps_per_epoch=min(args.warmup_steps, steps), verbose=0)
    out.mkdir(parents=True, exist_ok=True)
    cpu, wall = time.process_time(), time.perf_counter()
    with jax.profiler.trace(str(out / "trace")):
        model.fit(train_ds, epochs=1, verbose=0)
        keras.ops.convert_to_numpy(model.optimizer.iterations)  # the last step computed, not only queued
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    images = steps * config.batch_size
    summary = {"preset": args.preset, "data": data.source, "machine": describe_machine(),
               "mixed_precision": precision, "steps": steps, "images": images,
               "epoch_seconds": round(wall, 3), "images_per_second": round(images / wall, 1),
               "host_cpu_seconds": round(cpu, 3), "host_cpu_ms_per_step": round(1000 * cpu / steps, 3),
               "steps_per_execution": config.steps_per_execution, "mix_on_device": config.mix_on_device,
               "trace": sorted(str(p.relative_to(out)) for p in (out / "trace").rglob("*") if p.is_file())}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(f"profile {args.preset}: one epoch of {steps} steps in {wall:.2f} s ({images / wall:,.0f} images/s), "
          f"host CPU {cpu:.2f} s; trace in {out / 'trace'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
