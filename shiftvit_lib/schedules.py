"""Learning-rate schedule of the training recipe (taught in lesson 05).

Warm-up then cosine decay, with the keras-io example's formula:

* for ``step < warmup_steps``: a straight line from ``lr_start`` to ``lr_max``;
* then ``0.5 * lr_max * (1 + cos(pi * (step - warmup) / (total - warmup)))``,
  which falls from ``lr_max`` to 0 at ``total_steps``;
* after ``total_steps``: 0.

A small learning rate at the start keeps the first, noisy updates of AdamW from
wrecking freshly initialised weights; the cosine tail lets the model settle.
"""

from __future__ import annotations

import math
from typing import Any

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="shiftvit_lib")
class WarmUpCosine(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up from ``lr_start`` to ``lr_max``, then cosine decay to 0."""

    def __init__(self, lr_start: float, lr_max: float, warmup_steps: int, total_steps: int) -> None:
        super().__init__()
        if total_steps <= 0:
            raise ValueError(f"total_steps must be positive, got {total_steps}.")
        if not 0 <= warmup_steps < total_steps:
            raise ValueError(f"warmup_steps ({warmup_steps}) must lie in [0, total_steps={total_steps}).")
        if warmup_steps > 0 and lr_max < lr_start:
            raise ValueError(f"lr_max ({lr_max}) must be >= lr_start ({lr_start}) to warm up.")
        self.lr_start, self.lr_max = float(lr_start), float(lr_max)
        self.warmup_steps, self.total_steps = int(warmup_steps), int(total_steps)

    def __call__(self, step: Any) -> Any:
        step = ops.cast(step, "float32")
        decay_progress = (step - self.warmup_steps) / float(self.total_steps - self.warmup_steps)
        cosine = 0.5 * self.lr_max * (1.0 + ops.cos(math.pi * decay_progress))
        if self.warmup_steps > 0:
            slope = (self.lr_max - self.lr_start) / self.warmup_steps
            warmup = self.lr_start + slope * step
            cosine = ops.where(step < self.warmup_steps, warmup, cosine)
        return ops.where(step > self.total_steps, 0.0, cosine)

    @classmethod
    def from_recipe(cls, config: Any, steps_per_epoch: int, epochs: int | None = None) -> WarmUpCosine:
        """The schedule of a :class:`~shiftvit_lib.config.ShiftViTConfig` training run."""
        total = steps_per_epoch * (epochs if epochs is not None else config.epochs)
        return cls(config.lr_start, config.lr_max, int(total * config.warmup_fraction), total)

    def get_config(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in ("lr_start", "lr_max", "warmup_steps", "total_steps")}
