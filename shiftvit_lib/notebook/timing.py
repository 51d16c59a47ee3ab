"""How long training takes on the learner's device: lesson 05's device table and run estimate.

:func:`time_training_steps` times a few training steps of a preset's model in float32
and mixed precision, with XLA off and on (:class:`StepTiming` rows, :func:`format_timings`);
:class:`RunEstimate` turns the measured step time into an estimated epoch and run time
before the lesson trains. ``benchmarks/backend_step.py`` and the GPU library check use
them too.
"""

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import keras
import numpy as np
from keras.callbacks import LambdaCallback


class StepTiming(NamedTuple):
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
    rows = []
    for policy, jit in itertools.product((None, mixed) if mixed else (None,), xla):
        keras.backend.clear_session()
        keras.utils.set_random_seed(0)
        model = build_for_training(config, warmup + steps, 1, seed=0, jit_compile=jit, mixed_precision=policy)
        ends.clear()
        began = time.perf_counter()
        model.fit(batches, verbose=0, callbacks=[clock])
        step_seconds = float(np.median(np.diff(ends[warmup - 1 :])))
        startup = ends[warmup - 1] - began
        # "auto" is resolved by Keras when the step is built: report what it chose.
        compiled = bool(model.jit_compile)
        rows.append(StepTiming(policy or "float32", compiled, config.batch_size, step_seconds, startup))
    return rows


def format_timings(rows: Sequence[StepTiming]) -> str:
    """The device table as text: images/s and the speed-up over float32 without XLA."""
    base = rows[0].images_per_second
    lines = [f"{'precision':16} {'XLA':>4} {'batch':>6} {'ms/step':>9} {'images/s':>9} {'speed-up':>9}"]
    lines += [
        f"{row.precision:16} {'on' if row.xla else 'off':>4} {row.batch_size:>6} "
        f"{1000 * row.step_seconds:>9.1f} {row.images_per_second:>9,.0f} {row.images_per_second / base:>8.2f}x"
        for row in rows
    ]
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
