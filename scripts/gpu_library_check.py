"""The library's device, training, resume and prediction paths on a lent GPU (JAX), in one call.

Written after the library's device query, the run folder, the lock and the record writer were
rewritten: it checks the device and precision choice, lesson 05's step-timing table, a run that a
planted disconnect stops half-way and that resumes, the finished run read back (``reuse``), and
``predict_folder`` on three test images and one text file. One JSON line per check; the run's
``run.json`` and ``history.csv`` are copied to ``$OUT``. Any failed check stops it (non-zero exit).

On the device machine (results/gpu_h100_2026-11-26_library_check/README.md gives the whole command)::

    KERAS_BACKEND=jax python3 scripts/gpu_library_check.py

On a CPU, as a rehearsal: ``CHECK_DATA=sample CHECK_PRESET=quick CHECK_EPOCHS=2 CHECK_EXPECT_GPU=0``.
"""

import json
import os
import time
from pathlib import Path

import keras
from PIL import Image

import shiftvit_lib as sv
from shiftvit_lib.notebook import timing
from shiftvit_lib.tools import devices, files
from shiftvit_lib.tools.runs import train

OUT = Path(os.environ.get("OUT", "/tmp/out"))
SOURCE = os.environ.get("CHECK_DATA", ".device/cifar10-jpeg.tar.gz")  # the archive, carried
PRESET = os.environ.get("CHECK_PRESET", "seed")
EPOCHS = int(os.environ.get("CHECK_EPOCHS", "6"))
EXPECT_GPU = os.environ.get("CHECK_EXPECT_GPU", "1") == "1"


def say(**row):
    print(json.dumps(row, default=str), flush=True)


machine = devices.describe_machine()
policy = devices.recommended_mixed_precision()
say(
    check="devices",
    machine=machine,
    accelerator=devices.accelerator_platform(),
    capability=devices.gpu_compute_capability(),
    recommended=policy,
)
if EXPECT_GPU:
    assert devices.accelerator_platform() == "gpu" and policy == "mixed_bfloat16", (machine, policy)

started = time.perf_counter()
data = sv.load_cifar10(SOURCE)
say(
    check="data",
    source=data.source,
    sizes=data.split_sizes(),
    seconds=round(time.perf_counter() - started, 1),
)

config = sv.preset(PRESET)
timings = timing.time_training_steps(config, mixed=policy, steps=10)
say(check="lesson05 timings", table=timing.format_timings(timings))


class StopAfter(keras.callbacks.Callback):
    """A disconnect after epoch ``n``."""

    def __init__(self, n):
        super().__init__()
        self.n = n

    def on_epoch_end(self, epoch, logs=None):
        if epoch + 1 == self.n:
            raise KeyboardInterrupt(f"disconnect after epoch {self.n}")


run_dir = OUT / "run"
options = dict(epochs=EPOCHS, mixed_precision="auto", jit_compile="auto", verbose=2)
try:
    train(config, data, run_dir, extra_callbacks=[StopAfter(EPOCHS // 2)], **options)
    raise SystemExit("the planted disconnect did not stop training")
except KeyboardInterrupt as stop:
    say(check="interrupted", why=str(stop), left=sorted(p.name for p in run_dir.iterdir()))
run = train(config, data, run_dir, **options)
record = run.record
say(
    check="resumed run",
    resumed_from=record["resumed_from_epoch"],
    epochs_run=record["epochs_run"],
    test=record["test"],
    images_per_second=record["train_images_per_second"],
    precision=record["mixed_precision"],
    train_seconds=record["train_seconds"],
)
assert record["resumed_from_epoch"] == EPOCHS // 2 and record["epochs_run"] == EPOCHS, record
assert len(run.history["epoch"]) == EPOCHS and not (run_dir / "backup").exists()

again = train(config, data, run_dir, reuse=True, **options)
assert again.reused and again.record == record
say(check="reuse", reused=again.reused)

images = OUT / "images"
images.mkdir()
for i in range(3):
    with files.atomic_output(images / f"test{i}.png") as partial:
        Image.fromarray(data.x_test[i]).save(partial)
files.atomic_write_text(images / "notes.txt", "not an image")
result = sv.predict_folder(sv.load_model(run_dir / "best.keras"), images, top_k=2)
say(check="predict_folder", table=str(result))
assert len(result.predictions) == 3 and len(result.failures) == 1
for name in ("run.json", "history.csv"):
    files.atomic_write_text(OUT / f"gpu_check_{name}", (run_dir / name).read_bytes())
(run_dir / "best.keras").unlink()
say(check="all passed")
