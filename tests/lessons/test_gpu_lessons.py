"""Lessons 05-07 on the learner's runtime (issue 23): what their sources must hold.

Their behaviour is tested in tests/notebook/test_runtime.py (runs root, model choice, re-runs, estimates);
these checks keep the lessons wired to it.
"""

import json
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def _cells(name):
    return json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())["cells"]


def _code(name):
    return ["".join(cell["source"]) for cell in _cells(name) if cell["cell_type"] == "code"]


@pytest.mark.parametrize("name", sorted(path.stem for path in NOTEBOOKS.glob("*.ipynb")))
def test_no_lesson_deletes_a_folder(name):
    # A re-run reads a finished run back, resumes an interrupted one, or uses overwrite=True,
    # which removes only the files a run writes.
    assert not [source for source in _code(name) if "rmtree" in source]


def _printed(cell):
    return "".join("".join(out.get("text", "")) for out in cell.get("outputs", []))


def test_lesson05_shows_timings_and_an_estimate_before_it_trains_and_says_where_runs_go():
    # What the learner sees in the executed lesson (scripts/run_lessons.py), not how the cells
    # spell it: the timing table, then the estimate, then the training log, whose cell first
    # says where the run goes (runtime.runs_root's note).
    printed = [_printed(cell) for cell in _cells("05_training") if cell["cell_type"] == "code"]

    def first(marker):
        return next(i for i, text in enumerate(printed) if marker in text)

    training = first("Epoch 1/")
    assert first("ms/step  images/s  speed-up") < first("estimate: ") < training
    assert printed[training].startswith("runs go to ")
    code = _code("05_training")
    assert not [source for source in code if "sv.train(" in source]  # a re-run must not refuse or delete


@pytest.mark.parametrize("name", ["05_training", "07_attention_vs_shift"])
def test_time_cards_give_estimates_with_a_source_not_hours(name):
    card = "".join(_cells(name)[0]["source"])
    full_row = next(line for line in card.splitlines() if line.startswith("| Full mode"))
    # a GPU figure comes from a source: the keras-io example's logs, or the project's H200 record
    assert "estimate" in full_row and ("keras-io" in full_row or "H200" in full_row) and "hours" not in full_row


def test_lesson06_chooses_the_learners_model_and_lesson07_keeps_its_record_by_its_runs():
    assert any("learners_best_model(" in source and "sv.load_model(best)" in source for source in _code("06_inference"))
    code = _code("07_attention_vs_shift")
    assert any('out_path = run_root / "comparison.json"' in source for source in code)
    assert any("runs_root(" in source and "run_comparison(" in source for source in code)
