"""Lesson set-up (shiftvit_lib/notebook/lesson.py): the lesson's switch and the mode it sets up. (The
lessons' own first cells: tests/lessons/test_first_cells.py; the lesson runner:
tests/project/test_run_lessons.py.)"""

import importlib

import pytest

from shiftvit_lib.notebook.lesson import choose_mode, setup_lesson

DATA = "/data/cifar10-jpeg.tar.gz"
WINS = "in the environment, which wins over"


# The lesson's switch and SHIFTVIT_QUICK (None: unset) -> the mode, the preset, the reason given.
@pytest.mark.parametrize(("switch", "quick", "mode", "preset", "reason"), [
    (dict(full_mode=False), None, "quick", "quick", "FULL_MODE = False, the default"),
    (dict(full_mode=True), None, "full", "seed", "FULL_MODE = True"),
    (dict(full_mode=True), " ", "full", "seed", "FULL_MODE = True"),  # blank counts as unset
    (dict(recipe="quick"), None, "quick", "quick", "RECIPE = 'quick', the default"),
    (dict(recipe="cpu"), None, "full", "cpu", "RECIPE = 'cpu'"),
    (dict(recipe="seed"), None, "full", "seed", "RECIPE = 'seed'"),
    (dict(full_mode=True), "1", "quick", "quick", f"SHIFTVIT_QUICK=1 {WINS} FULL_MODE"),
    (dict(recipe="seed"), "1", "quick", "quick", f"SHIFTVIT_QUICK=1 {WINS} RECIPE"),  # the sample, whatever the switch
    (dict(full_mode=False), "0", "full", "seed", f"SHIFTVIT_QUICK=0 {WINS} FULL_MODE"),
    (dict(recipe="quick"), "0", "full", "seed", f"SHIFTVIT_QUICK=0 {WINS} RECIPE"),  # the runner's full mode
    (dict(recipe="cpu"), "0", "full", "cpu", f"SHIFTVIT_QUICK=0 {WINS} RECIPE"),
])
def test_the_lessons_switch_sets_the_mode_unless_the_environment_says(monkeypatch, switch, quick, mode, preset, reason):
    # Lesson 05's RECIPE picks quick mode, or full mode with its own preset; no lesson rewrites the result.
    # A GPU is seen where SHIFTVIT_QUICK is unset: it never switches to full mode, and quick mode names the switch.
    monkeypatch.setenv("SHIFTVIT_DATA", DATA)
    monkeypatch.delenv("SHIFTVIT_QUICK", raising=False)
    if quick is not None:
        monkeypatch.setenv("SHIFTVIT_QUICK", quick)
    platform = "gpu" if quick is None else None
    monkeypatch.setattr(importlib.import_module("shiftvit_lib.tools.devices"), "accelerator_platform", lambda: platform)
    settings = setup_lesson(**switch)
    described = settings.describe()
    assert (settings.mode, settings.preset_name, settings.reason) == (mode, preset, reason)
    assert settings.data_source == ("sample" if mode == "quick" else DATA) and settings.accelerator is (quick is None)
    assert f"{mode.upper()} mode" in described and f"(mode chosen by {reason})" in described
    wanted = 'RECIPE = "cpu" or "seed"' if "recipe" in switch else "FULL_MODE = True"
    gpu_line = f"A GPU/TPU was found; quick mode uses it too. Full mode needs {wanted}."
    assert (gpu_line in described) == (settings.accelerator and settings.quick), described


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda: choose_mode(False, {"SHIFTVIT_QUICK": "maybe"}), ValueError, "SHIFTVIT_QUICK"),
    (lambda: choose_mode("False", {}), TypeError, "full_mode must be True or False"),  # a string would be truthy
    (lambda: setup_lesson(recipe="gpu"), ValueError, "recipe must be one of"),
    (lambda: setup_lesson(recipe="cpu", full_mode=True), ValueError, "recipe must be one of"),
])
def test_a_switch_that_cannot_be_read_is_refused(call, error, words):
    with pytest.raises(error, match=words):
        call()
