"""Lesson set-up (shiftvit_lib/notebook/lesson.py): the lesson's switch and the mode it sets up, in the
lessons' first cells; the lesson runner's mode and time card. (The word budget and each lesson's measured
time card: tests/lessons/test_length.py and tests/project/test_run_lessons.py.)"""

import datetime
import importlib
import json
import runpy
from pathlib import Path
from types import SimpleNamespace

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


# --- The lessons' first cells, and the lesson runner ---
NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
ALL_NOTEBOOKS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
SWITCHES = {'FULL_MODE = False  # @param {type:"boolean"}': {False: "quick", True: "seed"},
            'RECIPE = "quick"  # @param ["quick", "cpu", "seed"]': {"quick": "quick", "cpu": "cpu", "seed": "seed"}}
BADGE = ("[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
         "(https://colab.research.google.com/github/shiftvit-tutorial/shiftvit-step-by-step/blob/main/notebooks/{})")
WEBSITE_CODE_COLUMNS = 88  # the website's code box shows this many characters without scrolling


def _cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: p.stem)
def test_the_learners_switch_decides_the_mode_the_setup_cell_reports(path, monkeypatch, capsys):
    """The lesson opens on its title and Colab badge; the first code cell is the switch, off; the setup
    cell, run with each value of it, sets up that mode and says which switch chose it; the stored outputs
    name the lesson's own switch."""
    from IPython.core.inputtransformer2 import TransformerManager  # a %pip line made a call, as IPython does

    cells = _cells(path)
    assert "".join(cells[0]["source"]).startswith(f"# Lesson {path.name[:2]} · ")
    assert BADGE.format(path.name) in "".join(cells[0]["source"])
    code = [cell for cell in cells if cell["cell_type"] == "code"]
    switch_cell, setup_cell = (TransformerManager().transform_cell("".join(cell["source"])) for cell in code[:2])
    (line, values), = [(line, values) for line, values in SWITCHES.items() if line in switch_cell.splitlines()]
    name = line.split(" =")[0]
    monkeypatch.delenv("SHIFTVIT_QUICK", raising=False)
    namespace = {"get_ipython": lambda: None}
    exec(switch_cell, namespace)
    for value, preset_name in values.items():
        namespace[name] = value
        exec(setup_cell, namespace)
        settings, printed = namespace["settings"], capsys.readouterr().out
        assert settings.preset_name == preset_name and settings.quick == (preset_name == "quick"), value
        assert f"(mode chosen by {name} = {value!r}" in printed, printed
    stored = "".join("".join(out.get("text", "")) for out in code[1].get("outputs", []))
    assert f"wins over {name})" in stored, stored  # run by the lesson runner (SHIFTVIT_QUICK=1)


def too_wide_code_lines(cells):
    """``(cell id, line)`` of every code line wider than the website's code box."""
    return [(cell.get("id"), line) for cell in cells if cell["cell_type"] == "code"
            for line in "".join(cell["source"]).splitlines() if len(line) > WEBSITE_CODE_COLUMNS]


@pytest.mark.parametrize("path", [None, *sorted(NOTEBOOKS.glob("**/*.ipynb"))],
                         ids=lambda p: "planted" if p is None else str(p.relative_to(NOTEBOOKS)))
def test_code_lines_fit_the_websites_code_box(path):
    if path is None:  # the check finds a line one character too wide, in code cells only
        cells = [{"cell_type": "code", "id": "a", "source": ["x" * 88 + "\n", "y" * 89 + "\n"]},
                 {"cell_type": "markdown", "id": "b", "source": ["words " * 30]}]
        assert too_wide_code_lines(cells) == [("a", "y" * 89)]
    else:
        assert too_wide_code_lines(_cells(path)) == []


def test_runner_mode_and_time_card():
    import nbformat

    runner = SimpleNamespace(**runpy.run_path(str(NOTEBOOKS.parent / "scripts" / "run_lessons.py")))
    assert [runner.run_mode(env) for env in ({}, {"SHIFTVIT_QUICK": "1"}, {"SHIFTVIT_QUICK": "0"})] == \
        ["quick", "quick", "full"]
    first = (f"# Lesson 09 · Test\n\n| {runner.QUICK_ROW} | old |\n\n"  # outside the card: must stay
             f"{runner.CARD_START}\n| Run | Time |\n|---|---|\n| {runner.QUICK_ROW} | 9.9 min |\n"
             f"| Full mode | about 1 h (estimate) |\n{runner.CARD_END}\n")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(first)])
    text = runner.card_text(150.0, "2 CPU cores", datetime.date(2026, 1, 2))
    assert text == "2.5 min, measured by the lesson runner (2 CPU cores, 2026-01-02)"
    assert runner.update_time_card(notebook, runner.QUICK_ROW, text)
    assert notebook.cells[0].source == first.replace("| 9.9 min |", f"| {text} |")  # only the card's row
    assert not runner.update_time_card(notebook, "Nope", text)
    bare = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# no card")])
    assert not runner.update_time_card(bare, runner.QUICK_ROW, text) and bare.cells[0].source == "# no card"
