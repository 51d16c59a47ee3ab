"""The learner's runtime: where runs go, which trained model to use, how fast a step is.

Lessons 05-07 ask three questions that depend on the machine a learner has:

* :func:`runs_root` -- where full-mode runs go: on Colab with Google Drive mounted,
  under ``/content/drive/MyDrive/shiftvit/runs`` (a disconnect keeps them); on Colab
  without Drive, ``/content/runs`` (a disconnect loses them, and the note says so);
  elsewhere ``runs/`` next to the notebook.
* :func:`choose_trained_model` -- lesson 06 uses the learner's own ``best.keras``
  from a lesson 05 run when there is one, else the shipped ``sv.pretrained("cpu")``.
* :func:`time_training_steps` and :func:`estimate_run` -- lesson 05 times a few
  training steps in float32 and mixed precision, with XLA off and on, and turns
  the measured step time into an estimated epoch and run time before it trains.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import keras

COLAB_MODULE = "google.colab"
# Where Colab mounts Google Drive; tests point it at a temporary folder.
DRIVE_MOUNT_ENV = "SHIFTVIT_DRIVE_MOUNT"
DRIVE_MOUNT = "/content/drive"
COLAB_LOCAL_RUNS = Path("/content/runs")
DRIVE_SUBFOLDER = Path("MyDrive") / "shiftvit" / "runs"
LOCAL_RUNS = Path("runs")
LESSON05_PREFIX = "05_training"


def on_colab(modules: Mapping[str, Any] | None = None) -> bool:
    """True inside a Google Colab runtime (its ``google.colab`` module is loaded)."""
    return COLAB_MODULE in (sys.modules if modules is None else modules)


@dataclass(frozen=True)
class RunsRoot:
    """The folder that takes a lesson's run folders, and one line on what that means."""

    path: Path
    note: str
    survives_disconnect: bool


def runs_root(full_mode: bool = True, *, modules: Mapping[str, Any] | None = None,
              environ: Mapping[str, str] | None = None) -> RunsRoot:
    """Where this lesson's run folders go (see the module doc).

    Quick mode always uses ``runs/``: its runs take a minute and are scratch.
    ``modules`` (default ``sys.modules``) and ``environ`` (default ``os.environ``;
    ``SHIFTVIT_DRIVE_MOUNT`` moves the Drive mount point) are parameters for tests.
    """
    environ = os.environ if environ is None else environ
    if not full_mode or not on_colab(modules):
        return RunsRoot(LOCAL_RUNS, f"runs go to {LOCAL_RUNS}/ next to this notebook", True)
    my_drive = Path(environ.get(DRIVE_MOUNT_ENV, DRIVE_MOUNT)) / "MyDrive"
    if my_drive.is_dir():
        path = my_drive.parent / DRIVE_SUBFOLDER
        return RunsRoot(path, f"runs go to Google Drive, {path}/: a disconnect keeps them", True)
    return RunsRoot(COLAB_LOCAL_RUNS, f"Google Drive is not mounted, so runs go to {COLAB_LOCAL_RUNS}/, which a "
                    "disconnect loses; mount it (from google.colab import drive; drive.mount('/content/drive')) "
                    "and run this cell again", False)


# --------------------------------------------------------------------------- lesson 05's run
def train_or_reuse(config: Any, data: Any, out_dir: str | os.PathLike[str], *, epochs: int | None = None,
                   seed: int = 42, mixed_precision: str | None = None, restart: bool = False,
                   **train_kwargs: Any) -> Any:
    """``sv.train``, except that a finished run with the same settings is read back, not refused.

    So re-running a lesson's training cell never deletes a finished run and never trains
    it twice. An interrupted run (a disconnect) resumes from its last finished epoch, and a
    finished run with *other* settings makes ``sv.train`` raise its ``RunFolderError``,
    which says what differs. ``mixed_precision="auto"`` is resolved for this device first.
    ``restart=True`` (quick mode: a scratch run of a minute) always trains afresh, replacing
    only the run's own files; a model saved by another Keras version is then never read.
    """
    from shiftvit_lib.tools.devices import recommended_mixed_precision
    from shiftvit_lib.tools.inference import load_model
    from shiftvit_lib.tools.runs import (
        BEST_MODEL,
        HISTORY_CSV,
        TrainingRun,
        finished_run,
        keras_file_problem,
        read_history_csv,
        run_spec,
        set_aside_damaged,
        train,
    )

    if mixed_precision == "auto":
        mixed_precision = recommended_mixed_precision()
    out = Path(out_dir)
    spec = run_spec(config, data, epochs=epochs, seed=seed, mixed_precision=mixed_precision,
                    build_model=train_kwargs.get("build_model"))
    record = None if restart else finished_run(out, config, spec)
    problem = keras_file_problem(out / BEST_MODEL) if record is not None else None
    if problem:  # reported by path and set aside; the run is trained again from its start
        set_aside_damaged(out / BEST_MODEL, problem, "the run is trained again")
        record, restart = None, True
    if record is None:
        return train(config, data, out, epochs=epochs, seed=seed, mixed_precision=mixed_precision,
                     overwrite=restart, **train_kwargs)
    print(f"{out.as_posix()} holds this finished run: read back, not trained again "
          "(train into another folder to train afresh)")
    return TrainingRun(model=load_model(out / BEST_MODEL), history=read_history_csv(out / HISTORY_CSV),
                       out_dir=out, record=record)


# --------------------------------------------------------------------------- lesson 06's model
@dataclass(frozen=True)
class ModelChoice:
    """The trained model lesson 06 uses: a learner's ``best.keras``, or the shipped one."""

    path: Path | None  # None: the shipped sv.pretrained("cpu")
    preset: str
    finished: bool  # the run wrote run.json (False: an interrupted run's best epoch so far)

    @property
    def is_learners(self) -> bool:
        return self.path is not None

    def describe(self) -> str:
        if self.path is None:
            return ("model: the shipped sv.pretrained('cpu') (no best.keras of a full lesson 05 run "
                    "was found)")
        state = "finished run" if self.finished else "interrupted run, best epoch so far"
        return f"model: your own, {self.path.as_posix()} (preset {self.preset!r}, {state})"

    def load(self) -> Any:
        from shiftvit_lib.tools.inference import load_model
        from shiftvit_lib.tools.published import pretrained

        return pretrained("cpu") if self.path is None else load_model(self.path)


def _run_preset(folder: Path) -> str | None:
    """The preset name a run folder's ``run_spec.json`` (or ``run.json``) records."""
    for name in ("run_spec.json", "run.json"):
        try:
            return json.loads((folder / name).read_text())["config"]["name"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return None


def choose_trained_model(roots: Sequence[str | os.PathLike[str]], prefix: str = LESSON05_PREFIX,
                         skip_presets: Sequence[str] = ("quick",)) -> ModelChoice:
    """The newest ``best.keras`` of a lesson 05 run under ``roots``, else the shipped model.

    A run counts when its folder name starts with ``prefix`` and its recorded preset
    is not in ``skip_presets``: a quick-mode run is a smoke test, not a model to study.
    """
    candidates = []
    for root in roots:
        for best in Path(root).glob(f"{prefix}*/best.keras"):
            preset = _run_preset(best.parent)
            if preset is not None and preset not in skip_presets:
                candidates.append((best.stat().st_mtime, best, preset))
    if not candidates:
        return ModelChoice(None, "cpu", True)
    _, best, preset = max(candidates)
    return ModelChoice(best, preset, (best.parent / "run.json").exists())


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


def time_training_step(config: Any, *, precision: str | None = None, jit_compile: bool = False,
                       batch_size: int | None = None, steps: int = 3, warmup: int = 2,
                       seed: int = 0) -> StepTiming:
    """Seconds per training step of ``config``'s model, on random images, after ``warmup`` steps.

    The model, optimizer, loss and schedule are the recipe's (``compile_for_training``);
    one ``fit`` call runs ``warmup + steps`` steps. The step time is the median of the
    steps after the warm-up, so compilation is left out; ``startup_seconds`` is the
    warm-up's time (tracing, compilation, the first batches).
    """
    import numpy as np

    from shiftvit_lib.data import make_dataset
    from shiftvit_lib.tools.devices import precision_policy
    from shiftvit_lib.train import compile_for_training, default_builder

    if warmup < 1 or steps < 2:
        raise ValueError(f"time at least 1 warm-up step and 2 timed steps; got warmup={warmup}, steps={steps}")
    batch = int(batch_size or config.batch_size)
    cfg = config.replace(batch_size=batch)
    keras.backend.clear_session()
    keras.utils.set_random_seed(seed)
    with precision_policy(precision):
        model = default_builder(cfg)(cfg, seed=seed)
        compile_for_training(model, cfg, steps_per_epoch=warmup + steps, epochs=1, jit_compile=jit_compile)
    rng = np.random.default_rng(seed)
    count = batch * (warmup + steps)
    images = rng.integers(0, 256, (count, *cfg.input_shape), dtype=np.uint8)
    labels = rng.integers(0, cfg.num_classes, count)
    mixing = (dict(num_classes=cfg.num_classes, mixup_alpha=cfg.mixup_alpha, cutmix_alpha=cfg.cutmix_alpha)
              if cfg.mixes_labels else {})
    clock = _ClockAfterWarmup(warmup)
    dataset = make_dataset(images, labels, batch, shuffle=False, **mixing)
    began = time.perf_counter()
    model.fit(dataset, epochs=1, verbose=0, shuffle=False, callbacks=[clock])
    # "auto" is resolved by Keras when the step is built: report what it chose.
    return StepTiming(precision or "float32", bool(model.jit_compile), batch, clock.step_seconds(),
                      startup_seconds=clock.ends[warmup - 1] - began)


class _ClockAfterWarmup(keras.callbacks.Callback):
    """Notes when each training batch ends, inside one ``fit``."""

    def __init__(self, warmup: int) -> None:
        super().__init__()
        self.warmup = warmup
        self.ends: list[float] = []

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self.ends.append(time.perf_counter())

    def step_seconds(self) -> float:
        """The median time of the steps after the warm-up: one slow step (another process,
        a late recompilation) does not move it."""
        import numpy as np

        return float(np.median(np.diff(self.ends[self.warmup - 1:])))


def mixed_policy_to_time(recommended: str | None) -> str:
    """The mixed policy the device table times: the device's choice, or bfloat16 on a CPU."""
    return recommended or "mixed_bfloat16"


def time_training_steps(config: Any, *, mixed: str, batch_size: int | None = None, steps: int = 3,
                        warmup: int = 2) -> list[StepTiming]:
    """The device table: float32 and ``mixed``, each with XLA off and on."""
    return [time_training_step(config, precision=precision, jit_compile=xla, batch_size=batch_size,
                               steps=steps, warmup=warmup)
            for precision in (None, mixed) for xla in (False, True)]


def format_timings(rows: Sequence[StepTiming]) -> str:
    """The device table as text: images/s and the speed-up over float32 without XLA."""
    base = rows[0].images_per_second
    lines = [f"{'precision':16} {'XLA':>4} {'batch':>6} {'ms/step':>9} {'images/s':>9} {'speed-up':>9}"]
    for row in rows:
        lines.append(f"{row.precision:16} {'on' if row.xla else 'off':>4} {row.batch_size:>6} "
                     f"{1000 * row.step_seconds:>9.1f} {row.images_per_second:>9,.0f} "
                     f"{row.images_per_second / base:>8.2f}x")
    return "\n".join(lines)


@dataclass(frozen=True)
class RunEstimate:
    """A measured step time turned into epoch and run times (training steps only)."""

    step_seconds: float
    steps_per_epoch: int
    epochs: int
    startup_seconds: float = 0.0  # paid once, in the first epoch (compilation)

    @property
    def epoch_seconds(self) -> float:
        return self.step_seconds * self.steps_per_epoch

    @property
    def run_seconds(self) -> float:
        return self.epoch_seconds * self.epochs + self.startup_seconds

    def describe(self, early_stop_epochs: tuple[int, int] | None = None) -> str:
        lines = [f"estimate: {1000 * self.step_seconds:,.0f} ms/step x {self.steps_per_epoch} steps = "
                 f"{format_duration(self.epoch_seconds)} per epoch",
                 f"{self.epochs} epochs + {format_duration(self.startup_seconds)} of start-up (compilation) = "
                 f"{format_duration(self.run_seconds)}; validation adds a little"]
        if early_stop_epochs:
            low, high = (self.epoch_seconds * e + self.startup_seconds for e in early_stop_epochs)
            lines.append(f"if early stopping ends it at epochs {early_stop_epochs[0]}-{early_stop_epochs[1]}: "
                         f"{format_duration(low)} to {format_duration(high)}")
        return "\n".join(lines)


def estimate_run(step_seconds: float, steps_per_epoch: int, epochs: int,
                 startup_seconds: float = 0.0) -> RunEstimate:
    """Epoch and run time from a measured step time (see :class:`RunEstimate`)."""
    if step_seconds <= 0 or steps_per_epoch < 1 or epochs < 1 or startup_seconds < 0:
        raise ValueError(f"need a positive step time, steps and epochs; got {step_seconds}, "
                         f"{steps_per_epoch}, {epochs} (start-up {startup_seconds})")
    return RunEstimate(float(step_seconds), int(steps_per_epoch), int(epochs), float(startup_seconds))


def format_duration(seconds: float) -> str:
    """``0.4 s``, ``42 s``, ``7.5 min`` or ``3.2 h``."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


__all__ = [
    "ModelChoice",
    "RunEstimate",
    "RunsRoot",
    "StepTiming",
    "choose_trained_model",
    "estimate_run",
    "format_duration",
    "format_timings",
    "mixed_policy_to_time",
    "on_colab",
    "runs_root",
    "time_training_step",
    "time_training_steps",
    "train_or_reuse",
]
