"""The input pipeline alone (no model): training images per second per CPU core, per preset.

    python benchmarks/pipeline.py                   # seed, cpu, strong; writes benchmarks/results/pipeline_cpu.json
    python benchmarks/pipeline.py --batches 40 --no-save

For each preset the training batches are made exactly as a training run makes them
(:func:`shiftvit_lib.recipe.training_datasets` on this backend: a uint8 gather for ``seed``
and ``cpu``, one-hot targets and MixUp/CutMix on the host for ``strong``; RandAugment,
random erasing, crop and flip run inside the model, on the device, and are not timed
here), from 40,000 random uint8 32x32 images (the size of CIFAR-10's training split).

For a preset that mixes, two ways of serving them are timed, in the same run:

* ``host_mix``: MixUp/CutMix on the host (``mix_on_device=False``); these batches were once made
  ahead in worker threads (the ``ahead`` rows of the older records), since replaced by
* ``device_mix``: ``mix_on_device=True``, the host draws each batch's pairs and boxes and sends
  uint8 pixels; the pixels are mixed inside the compiled train step, on the device, which this
  benchmark does not time.

``host_cpu_ms_per_batch`` (process CPU time, all threads, per batch) is the host's work per step.

The rate per core is images divided by the *process CPU time* (all threads), because
the machine this ran on is shared and wall-clock rates depend on its load; the wall
rate and the CPU time spent on the asking (training-loop) thread are reported beside
it. On a GPU the loop thread's share is what sits on the critical path of a step.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import shiftvit_lib as sv  # noqa: E402  (first: it loads the backend quietly)
from shiftvit_lib.data import DataSplits  # noqa: E402
from shiftvit_lib.recipe import training_datasets  # noqa: E402
from shiftvit_lib.tools.devices import describe_machine  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
PRESETS = ("seed", "cpu", "strong")
TRAIN_IMAGES = 40_000


def random_splits(n_train: int, seed: int = 0) -> DataSplits:
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (n_train + 2, 32, 32, 3), dtype=np.uint8)
    labels = np.arange(n_train + 2) % 10
    return DataSplits(x_train=images[:n_train], y_train=labels[:n_train], x_val=images[n_train:],
                      y_val=labels[n_train:], x_test=images[n_train:], y_test=labels[n_train:],
                      class_names=sv.CIFAR10_CLASSES, source=f"{n_train:,} random uint8 images")


def measure(name: str, data: DataSplits, batches: int, way: str) -> dict[str, Any]:
    """Images per process-CPU second, per wall second and per loop-thread CPU second."""
    config = sv.preset(name, mix_on_device=way == "device_mix")
    train_ds, _, steps = training_datasets(config, data, seed=0)
    count = min(batches, steps)
    train_ds[0]  # a training loop's steady state
    images = 0
    process, wall, loop = time.process_time(), time.perf_counter(), 0.0
    for index in range(1, count):
        started = time.thread_time()
        _, batch_targets = train_ds[index]
        loop += time.thread_time() - started
        images += len(batch_targets)
    process, wall = time.process_time() - process, time.perf_counter() - wall
    return {"batch_size": config.batch_size, "batches": count - 1, "images": images,
            "images_per_cpu_second": images / process, "images_per_wall_second": images / wall,
            "loop_thread_ms_per_batch": 1000 * loop / (count - 1),
            "host_cpu_ms_per_batch": 1000 * process / (count - 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, default=120, help="batches timed per preset and way")
    parser.add_argument("--presets", nargs="*", default=list(PRESETS))
    parser.add_argument("--no-save", action="store_true", help="print only")
    args = parser.parse_args(argv)
    data = random_splits(TRAIN_IMAGES)
    machine = describe_machine()
    rows = []
    print(f"input pipeline alone, {data.source}, backend {machine['backend']}, {machine['cpu_count']} CPU cores; "
          "images/s per core = images / process CPU time")
    for name in args.presets:
        mixes = sv.preset(name).mixup_alpha or sv.preset(name).cutmix_alpha
        for way in ("host_mix", "device_mix")[: 2 if mixes else 1]:
            row = {"preset": name, "way": way, **measure(name, data, args.batches, way)}
            rows.append(row)
            print(f"  {name:7} {row['way']:8} batch {row['batch_size']:4}  {row['images_per_cpu_second']:>11,.0f} "
                  f"img/s per core  {row['images_per_wall_second']:>11,.0f} img/s wall  "
                  f"{row['loop_thread_ms_per_batch']:7.3f} ms/batch on the loop thread "
                  f"{row['host_cpu_ms_per_batch']:7.3f} ms/batch host CPU", flush=True)
    if not args.no_save:
        RESULTS.mkdir(exist_ok=True)
        path = RESULTS / "pipeline_cpu.json"
        record = {"date": time.strftime("%Y-%m-%d"), "machine": machine, "data": data.source,
                  "measure": "images / process CPU seconds (all threads); a CPU measurement on a shared "
                             f"{machine['cpu_count']}-core machine",
                  "rows": rows}
        runs = json.loads(path.read_text()) if path.exists() else []
        path.write_text(json.dumps(runs + [record], indent=1))
        print(f"saved {path.relative_to(RESULTS.parent.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
