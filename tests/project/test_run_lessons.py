"""scripts/run_lessons.py's measurement file, results/timings.json, is the one source of every time
the project states: each lesson's time card, the commands' times in README.md, README.ko.md,
CONTRIBUTING.md and run.sh's help. A stated time more than 20 % off the file fails here, and the
README's first screen holds the two commands with their times."""

from __future__ import annotations

import copy
import datetime
import json
import re
import subprocess
from pathlib import Path

import pytest
from fakes import REPO, load_script, write_tree

run_lessons = load_script("scripts/run_lessons.py")

TOLERANCE = 0.20
CARD_MINUTES = re.compile(r"^([\d.]+) ?(?:min|분)")


RECORD = json.loads(run_lessons.TIMINGS.read_text(encoding="utf-8"))  # results/timings.json


def card_minutes(path: Path, row: str) -> float | None:
    """The minutes a lesson's time card states in its quick-mode row, None without one."""
    import nbformat

    source = next(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
    found = re.search(r"^\|\s*" + re.escape(row) + r"\s*\|\s*([^|\n]*)\|", source, re.M)
    minutes = CARD_MINUTES.match(found.group(1).strip()) if found else None
    return float(minutes.group(1)) if minutes else None


def disagreements(record: dict, repo: Path = REPO) -> list[str]:
    """Every stated time more than TOLERANCE off ``record``, as one line each."""
    problems = []

    def compare(where: str, stated_min: float, measured_s: float) -> None:
        # A stated figure is rounded to its last digit, so that rounding is allowed on top.
        allowed = TOLERANCE * measured_s / 60 + (0.05 if stated_min % 1 else 0.5)
        if abs(stated_min - measured_s / 60) > allowed:
            problems.append(f"{where} states {stated_min:g} min, results/timings.json {measured_s / 60:.1f} min")

    for stem, timed in record["lessons"].items():
        for path, row in ((repo / "notebooks" / f"{stem}.ipynb", run_lessons.QUICK_ROW),
                          (repo / "notebooks" / "ko" / f"{stem}.ipynb", run_lessons.KOREAN_QUICK_ROW)):
            minutes = card_minutes(path, row) if path.exists() else None
            if minutes is None:
                problems.append(f"{path.relative_to(repo)}: no quick-mode time card row")
            else:
                compare(f"{path.relative_to(repo)}'s time card", minutes, timed["seconds"])
    for name, pattern, command in run_lessons.STATED:
        found = re.findall(pattern, (repo / name).read_text(encoding="utf-8"))
        seconds = run_lessons.command_seconds(record, command)
        if not found:
            problems.append(f"{name} does not state the time of {command!r} where STATED looks")
        elif seconds is None:
            problems.append(f"results/timings.json has no measurement of {command!r}, which {name} states")
        for match in found:
            compare(f"{name} ({command})", float(match[1]), seconds or 0.0)
    return problems


@pytest.mark.parametrize(("group", "name", "factor", "names"), [
    ("lessons", "04_shiftvit_model", 9, ["notebooks/04_shiftvit_model.ipynb's time card", "README.md (main)",
                                         "README.md (lessons)", "run.sh (main)"]),
    ("steps", "test", 1.5, ["README.md (test)"]),
    ("steps", "test-fast", 3, ["run.sh (test-fast)", "CONTRIBUTING.md (test-fast)"]),
    ("steps", "site", None, ["no measurement of 'main'"]),  # None: the measurement removed
])
def test_a_changed_measurement_names_each_statement_it_contradicts(group, name, factor, names):
    record = copy.deepcopy(RECORD)
    if factor is None:
        del record[group][name]
    else:
        record[group][name]["seconds"] *= factor
    found = disagreements(record)
    assert [name for name in names if not any(name in line for line in found)] == [], found


def test_every_stated_time_agrees_with_the_measurement_file_which_says_where_and_under_what_load():
    record = RECORD
    assert disagreements(record) == []
    assert set(record["lessons"]) == {p.stem for p in run_lessons.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")}
    assert record["machine"] and re.fullmatch(r"\d{4}-\d\d-\d\d", record["date"])
    measured = [*record["lessons"].values(), *record["steps"].values()]
    assert all(timed["seconds"] > 0 and "load_before" in timed and "load_after" in timed for timed in measured)
    # the runner writes the run into the notebook (the site's lesson footer shows it)
    run = run_lessons.outputs_record(datetime.date(2026, 11, 26), {"KERAS_BACKEND": "jax", "KERAS_HOME": "/nowhere"})
    assert run["date"] == "2026-11-26" and run["backend"] == "jax" and run["keras"] and run["python"]


def test_write_cards_puts_the_measured_times_where_they_are_stated(tmp_path, monkeypatch):
    record = copy.deepcopy(RECORD)
    names = [*{name for name, _, _ in run_lessons.STATED},
             *(f"notebooks/{folder}{stem}.ipynb" for stem in record["lessons"] for folder in ("", "ko/"))]
    for timed in [*record["lessons"].values(), *record["steps"].values()]:
        timed["seconds"] *= 3
    write_tree(tmp_path, {"results/timings.json": json.dumps(record).encode(),
                          **{name: (REPO / name).read_bytes() for name in names}})
    monkeypatch.setattr(run_lessons, "NOTEBOOKS", tmp_path / "notebooks")
    monkeypatch.setattr(run_lessons, "TIMINGS", tmp_path / "results" / "timings.json")
    korean_rebuilds = []  # build_korean.py works on the repository itself: not run here
    monkeypatch.setattr(run_lessons.subprocess, "run",
                        lambda command, **_: korean_rebuilds.append(command) or subprocess.CompletedProcess(command, 0))
    assert disagreements(record, tmp_path)  # three times slower than stated
    assert run_lessons.write_cards() == 0
    assert [line for line in disagreements(record, tmp_path) if "/ko/" not in line] == []
    assert korean_rebuilds and korean_rebuilds[0][-1].endswith("build_korean.py")


def test_the_readme_first_screen_holds_the_two_commands_their_output_and_times_and_ci_runs_its_test():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    screen = "\n".join(readme.splitlines()[:60])
    assert set(re.findall(r"^bash run\.sh (main|test) +# about \d+ min: ", screen, re.M)) == {"main", "test"}
    produced = ("build/lessons/", "build/animations/", "build/site/", "Python 3.11", "Debian")
    assert [text for text in produced if text not in screen] == []
    assert "## Lessons" in screen and "<!-- results-table -->" in screen
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^bash run\.sh test\b", readme, re.M) and re.search(r"^bash run\.sh test$", ci, re.M)


def test_runner_mode_and_time_card():
    import nbformat

    assert [run_lessons.run_mode(env) for env in ({}, {"SHIFTVIT_QUICK": "1"}, {"SHIFTVIT_QUICK": "0"})] == \
        ["quick", "quick", "full"]
    first = (f"# Lesson 09 · Test\n\n| {run_lessons.QUICK_ROW} | old |\n\n"  # outside the card: must stay
             f"{run_lessons.CARD_START}\n| Run | Time |\n|---|---|\n| {run_lessons.QUICK_ROW} | 9.9 min |\n"
             f"| Full mode | about 1 h (estimate) |\n{run_lessons.CARD_END}\n")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(first)])
    text = run_lessons.card_text(150.0, "2 CPU cores", datetime.date(2026, 1, 2))
    assert text == "2.5 min, measured by the lesson runner (2 CPU cores, 2026-01-02)"
    assert run_lessons.update_time_card(notebook, run_lessons.QUICK_ROW, text)
    assert notebook.cells[0].source == first.replace("| 9.9 min |", f"| {text} |")  # only the card's row
    assert not run_lessons.update_time_card(notebook, "Nope", text)
    bare = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# no card")])
    assert not run_lessons.update_time_card(bare, run_lessons.QUICK_ROW, text)
    assert bare.cells[0].source == "# no card"
