"""The learner's runtime: where runs go, which trained model to use, how fast a step is.

Lessons 05-07 ask three questions that depend on the machine a learner has:

* :func:`runs_root` -- where full-mode runs go: on Colab with Google Drive mounted,
  under ``/content/drive/MyDrive/shiftvit/runs`` (a disconnect keeps them); on Colab
  without Drive, ``/content/runs`` (a disconnect loses them, and the note says so);
  elsewhere ``runs/`` next to the notebook.
* :func:`learners_best_model` -- lesson 06 uses the learner's own ``best.keras``
  from a lesson 05 run when there is one, else the shipped ``sv.pretrained("cpu")``.
* :func:`time_training_steps` and :class:`RunEstimate` -- lesson 05 times a few
  training steps in float32 and mixed precision, with XLA off and on, and turns
  the measured step time into an estimated epoch and run time before it trains.
"""

from __future__ import annotations

import functools
import itertools
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import keras
import numpy as np
from keras.callbacks import LambdaCallback

# Where Colab mounts Google Drive; tests point it at a temporary folder.
DRIVE_MOUNT_ENV = "SHIFTVIT_DRIVE_MOUNT"
COLAB_LOCAL_RUNS = Path("/content/runs")


@dataclass(frozen=True)
class RunsRoot:
    """The folder that takes a lesson's run folders, and one line on what that means."""

    path: Path
    note: str  # one line; it says whether a disconnect keeps the runs


def runs_root(full_mode: bool = True) -> RunsRoot:
    """Where this lesson's run folders go (see the module doc).

    Quick mode always uses ``runs/``: its runs take a minute and are scratch. Colab is
    where ``google.colab`` is loaded; ``SHIFTVIT_DRIVE_MOUNT`` moves the Drive mount point
    (for tests).
    """
    if not full_mode or "google.colab" not in sys.modules:
        return RunsRoot(Path("runs"), "runs go to runs/ next to this notebook")
    my_drive = Path(os.environ.get(DRIVE_MOUNT_ENV, "/content/drive")) / "MyDrive"
    if my_drive.is_dir():
        path = my_drive / "shiftvit" / "runs"
        return RunsRoot(path, f"runs go to Google Drive, {path}/: a disconnect keeps them")
    note = (
        f"Google Drive is not mounted, so runs go to {COLAB_LOCAL_RUNS}/, which a disconnect loses; mount it "
        "(from google.colab import drive; drive.mount('/content/drive')) and run this cell again"
    )
    return RunsRoot(COLAB_LOCAL_RUNS, note)


# --------------------------------------------------------------------------- lesson 05's run
def train_or_reuse(config: Any, data: Any, out_dir: Any, *, restart: bool = False, **kwargs: Any) -> Any:
    """``sv.train``, except that a finished run with the same settings is read back, not refused.

    So re-running a lesson's training cell never deletes a finished run and never trains
    it twice. An interrupted run (a disconnect) resumes from its last finished epoch, and a
    finished run with *other* settings makes ``sv.train`` raise its ``RunFolderError``,
    which says what differs. ``restart=True`` (quick mode: a scratch run of a minute) always
    trains afresh, replacing only the run's own files; a model saved by another Keras
    version is then never read. ``kwargs`` go to ``sv.train`` (epochs, seed, ...).
    """
    from shiftvit_lib.tools.runs import train

    run = train(config, data, out_dir, overwrite=restart, reuse=not restart, **kwargs)
    if run.reused:
        print(
            f"{run.out_dir.as_posix()} holds this finished run: read back, not trained again "
            "(train into another folder to train afresh)"
        )
    return run


# --------------------------------------------------------------------------- lesson 06's model
def learners_best_model(roots: Sequence[str | os.PathLike[str]]) -> Path | None:
    """The newest ``best.keras`` of a lesson 05 run under ``roots``; None if there is none.

    Lesson 06 studies it, else the shipped ``sv.pretrained("cpu")``. Lesson 05 names a run's
    folder ``05_training_<preset>``; its quick-mode run (``05_training_quick``) does not count:
    it is a smoke test, not a model to study. An interrupted run counts (its ``best.keras``
    is its best epoch so far).
    """
    bests = [best for root in roots for best in Path(root).glob("05_training_*/best.keras")]
    found = [(best.stat().st_mtime, best) for best in bests if best.parent.name != "05_training_quick"]
    return max(found)[1] if found else None


# --------------------------------------------------------------------------- lesson 05's device table
@dataclass(frozen=True)
class StepTiming:
    """One row of the device table: a precision and an XLA setting, timed."""

    precision: str  # "float32" or a mixed policy
    xla: bool
    batch_size: int
    step_seconds: float
    startup_seconds: float = 0.0  # the warm-up steps: tracing, compilation, the first batches

    @property
    def images_per_second(self) -> float:
        return self.batch_size / self.step_seconds


def time_training_steps(
    config: Any,
    *,
    mixed: str | None = None,
    xla: Sequence[bool | str] = (False, True),
    steps: int = 3,
    warmup: int = 2,
) -> list[StepTiming]:
    """Lesson 05's device table: seconds per training step of ``config``'s model in float32 and
    in the ``mixed`` policy (if given), each with every ``xla`` setting (``jit_compile``).

    Random images, ``config.batch_size`` per step (``sv.preset(name, batch_size=...)`` to
    change it); the model, optimizer, loss and schedule are the recipe's (as ``sv.train``
    builds them). Each row is one ``fit`` of ``warmup + steps`` steps; its step time is the
    median of the steps after the warm-up, so compilation is left out and one slow step
    (another process, a late recompilation) does not move it; ``startup_seconds`` is the
    warm-up's time (tracing, compilation, the first batches).
    """
    from shiftvit_lib.config import family_of
    from shiftvit_lib.data import make_dataset
    from shiftvit_lib.tools.runs import build_for_training

    if warmup < 1 or steps < 2:
        raise ValueError(f"need >= 1 warm-up step and >= 2 timed steps; got warmup={warmup}, steps={steps}")
    rng = np.random.default_rng(0)
    count = config.batch_size * (warmup + steps)
    images = rng.integers(0, 256, (count, *config.input_shape), dtype=np.uint8)
    labels = rng.integers(0, config.num_classes, count)
    targets = dict(num_classes=config.num_classes) if config.one_hot_targets else {}
    mixing = dict(mixup_alpha=config.mixup_alpha, cutmix_alpha=config.cutmix_alpha, **targets)
    batches = make_dataset(images, labels, config.batch_size, shuffle=False, **mixing)
    ends: list[float] = []  # when each training batch ends
    clock = LambdaCallback(on_train_batch_end=lambda *_, **__: ends.append(time.perf_counter()))
    build = functools.partial(family_of(config).build, seed=0)
    rows = []
    for policy, jit in itertools.product((None, mixed) if mixed else (None,), xla):
        keras.backend.clear_session()
        keras.utils.set_random_seed(0)
        model = build_for_training(config, build, warmup + steps, 1, jit_compile=jit, mixed_precision=policy)
        ends.clear()
        began = time.perf_counter()
        model.fit(batches, verbose=0, callbacks=[clock])
        step_seconds = float(np.median(np.diff(ends[warmup - 1 :])))
        startup = ends[warmup - 1] - began
        # "auto" is resolved by Keras when the step is built: report what it chose.
        compiled = bool(model.jit_compile)
        rows.append(StepTiming(policy or "float32", compiled, config.batch_size, step_seconds, startup))
    return rows


def mixed_policy_to_time(recommended: str | None) -> str:
    """The mixed policy the device table times: the device's choice, or bfloat16 on a CPU."""
    return recommended or "mixed_bfloat16"


def format_timings(rows: Sequence[StepTiming]) -> str:
    """The device table as text: images/s and the speed-up over float32 without XLA."""
    base = rows[0].images_per_second
    lines = [f"{'precision':16} {'XLA':>4} {'batch':>6} {'ms/step':>9} {'images/s':>9} {'speed-up':>9}"]
    for row in rows:
        lines.append(
            f"{row.precision:16} {'on' if row.xla else 'off':>4} {row.batch_size:>6} "
            f"{1000 * row.step_seconds:>9.1f} {row.images_per_second:>9,.0f} "
            f"{row.images_per_second / base:>8.2f}x"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class RunEstimate:
    """A measured step time turned into epoch and run times (training steps only).

    ``RunEstimate(step_seconds, steps_per_epoch, epochs, startup_seconds=0.0)``; lesson 05 makes one.
    """

    step_seconds: float
    steps_per_epoch: int
    epochs: int
    startup_seconds: float = 0.0  # paid once, in the first epoch (compilation)

    def __post_init__(self) -> None:
        if self.step_seconds <= 0 or self.steps_per_epoch < 1 or self.epochs < 1 or self.startup_seconds < 0:
            raise ValueError(f"need a positive step time, steps and epochs; got {self}")

    @property
    def epoch_seconds(self) -> float:
        return self.step_seconds * self.steps_per_epoch

    @property
    def run_seconds(self) -> float:
        return self.epoch_seconds * self.epochs + self.startup_seconds

    def describe(self, early_stop_epochs: tuple[int, int] | None = None) -> str:
        lines = [
            f"estimate: {1000 * self.step_seconds:,.0f} ms/step x {self.steps_per_epoch} steps = "
            f"{format_duration(self.epoch_seconds)} per epoch",
            f"{self.epochs} epochs + {format_duration(self.startup_seconds)} of start-up (compilation) = "
            f"{format_duration(self.run_seconds)}; validation adds a little",
        ]
        if early_stop_epochs:
            first, last = early_stop_epochs
            low, high = (
                format_duration(self.epoch_seconds * n + self.startup_seconds) for n in (first, last)
            )
            lines.append(f"if early stopping ends it at epochs {first}-{last}: {low} to {high}")
        return "\n".join(lines)


def format_duration(seconds: float) -> str:
    """``0.4 s``, ``42 s``, ``7.5 min`` or ``3.2 h``."""
    if seconds < 90:
        return f"{seconds:.{1 if seconds < 10 else 0}f} s"
    return f"{seconds / 60:.1f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"
