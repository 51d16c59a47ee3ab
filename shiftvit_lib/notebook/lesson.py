"""What every lesson notebook does first: pick the run mode from the lesson's switch, seed.

Each lesson runs in one of two modes:

* **quick** (the default): the bundled CIFAR-10 sample (2,000 train / 500 test
  images) and the tiny ``quick`` preset, a few epochs. The whole series runs on a
  2-core CPU in minutes; the numbers it prints are a smoke test, *not* results.
* **full**: the whole CIFAR-10 and the ``seed`` recipe. Meant for a GPU.

Full mode happens only when someone asks for it: the learner's switch at the top of a
lesson, passed to ``setup_lesson`` as it is (``FULL_MODE = True``, or lesson 05's
``RECIPE = "cpu"`` or ``"seed"``, which also picks the full-mode preset), or the
environment variable ``SHIFTVIT_QUICK=0`` that the lesson runner and CI use.
``SHIFTVIT_QUICK`` (``1`` quick, ``0`` full), when set, wins over the switch, so a
runner can choose the mode of every lesson at once. A GPU that is found never
changes the mode; ``describe`` only mentions it. ``SHIFTVIT_DATA`` chooses the
data of a full run (default ``auto``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

QUICK_ENV = "SHIFTVIT_QUICK"
DATA_ENV = "SHIFTVIT_DATA"
RECIPES = ("quick", "cpu", "seed")  # lesson 05's RECIPE: quick mode, or full mode with this preset


@dataclass(frozen=True)
class LessonSettings:
    """The mode a lesson runs in and what follows from it."""

    quick: bool
    reason: str
    data_source: str
    preset_name: str
    seed: int
    accelerator: bool | None = None  # a GPU/TPU was seen (None: not checked); never changes the mode
    switch: str = "FULL_MODE"  # the lesson's switch, as the learner sees it

    @property
    def mode(self) -> str:
        return "quick" if self.quick else "full"

    def describe(self) -> str:
        """A few lines saying which mode, data and preset produced the outputs, and why."""
        if self.quick:
            what = (
                "QUICK mode: the bundled CIFAR-10 sample and the tiny 'quick' preset, a short CPU-sized "
                "run. Its numbers are a smoke test, not the recipe's results."
            )
        else:
            what = f"FULL mode: data source {self.data_source!r}, preset {self.preset_name!r}."
        lines = [what, f"(mode chosen by {self.reason})"]
        if self.accelerator and self.quick:
            wanted = 'RECIPE = "cpu" or "seed"' if self.switch == "RECIPE" else "FULL_MODE = True"
            lines.append(f"A GPU/TPU was found; quick mode uses it too. Full mode needs {wanted}.")
        return "\n".join(lines)


def choose_mode(
    full_mode: bool = False, environ: Mapping[str, str] | None = None, switch: str | None = None
) -> tuple[bool, str]:
    """Return ``(quick, reason)``: full if ``SHIFTVIT_QUICK=0``, or if it is unset and ``full_mode`` is True.

    ``switch`` is the lesson's switch as set, for the reason (default ``FULL_MODE = <full_mode>``;
    lesson 05 passes ``RECIPE = 'cpu'``). Hardware plays no part: a lesson on a GPU runs quick
    unless someone asks for full.
    """
    if not isinstance(full_mode, bool):
        raise TypeError(f"full_mode must be True or False, got {full_mode!r}")
    switch = switch or f"FULL_MODE = {full_mode}"
    raw = (os.environ if environ is None else environ).get(QUICK_ENV, "")
    value = raw.strip().lower()
    if value not in ("", "1", "true", "yes", "0", "false", "no"):
        raise ValueError(f"{QUICK_ENV} must be 1 (quick) or 0 (full), got {raw!r}")
    if value:
        reason = f"{QUICK_ENV}={raw} in the environment, which wins over {switch.split(' =')[0]}"
        return value in ("1", "true", "yes"), reason
    return not full_mode, switch if full_mode else f"{switch}, the default"


def setup_lesson(full_mode: bool = False, *, recipe: str | None = None, seed: int = 42) -> LessonSettings:
    """Seed every random generator, quiet TensorFlow's logger and decide the lesson's mode (see module doc).

    ``full_mode=FULL_MODE``, or lesson 05's ``recipe=RECIPE`` (one of :data:`RECIPES`).
    """
    import keras

    from shiftvit_lib.tools.devices import accelerator_platform

    if recipe is not None and (recipe not in RECIPES or full_mode):
        raise ValueError(f"recipe must be one of {RECIPES}, without full_mode; got {recipe!r}")
    keras.utils.set_random_seed(seed)
    # TensorFlow's Python logger (tf.get_logger()) warns, for example, each time a freshly built model
    # traces its predict function ("triggered tf.function retracing"): expected when a lesson trains
    # several models, and only noise to a learner. Errors still show.
    logging.getLogger("tensorflow").setLevel("ERROR")
    if recipe is None:
        quick, reason = choose_mode(full_mode)
        switch, full_preset = "FULL_MODE", "seed"
    else:
        quick, reason = choose_mode(recipe != "quick", switch=f"RECIPE = {recipe!r}")
        switch, full_preset = "RECIPE", "seed" if recipe == "quick" else recipe
    data_and_preset = ("sample", "quick") if quick else (os.environ.get(DATA_ENV, "auto"), full_preset)
    return LessonSettings(quick, reason, *data_and_preset, seed, accelerator_platform() is not None, switch)
