"""The lessons' length budgets: the prose a learner reads (fenced code excluded), and code lines that fit
the website's code box."""

import json
import re
from pathlib import Path

import pytest
from fakes import NOTEBOOKS, cells

BUDGET = 11_000  # markdown words in lessons 00-07 together
LESSON_BUDGETS = {"05_training": 1_800}  # a lesson's own cap, where one lesson tends to grow
WEBSITE_CODE_COLUMNS = 88  # the website's code box shows this many characters without scrolling


def markdown_words(path: Path) -> int:
    text = "\n".join("".join(cell["source"]) for cell in cells(path) if cell["cell_type"] == "markdown")
    return len(re.sub(r"```.*?```", "", text, flags=re.S).split())


def over_budget(folder: Path) -> list[str]:
    """What breaks a budget in ``folder``: the total of lessons 00-07, or one lesson's own cap."""
    counts = {path.stem: markdown_words(path) for path in sorted(folder.glob("0[0-7]_*.ipynb"))}
    problems = [f"{stem}: {counts[stem]} words > {cap}" for stem, cap in LESSON_BUDGETS.items()
                if counts.get(stem, 0) > cap]
    if len(counts) != 8 or sum(counts.values()) > BUDGET:
        problems.append(f"lessons 00-07: {sum(counts.values())} words in {len(counts)} lessons > {BUDGET}")
    return problems


def test_lessons_00_to_07_stay_within_their_word_budgets():
    assert over_budget(NOTEBOOKS) == []


@pytest.mark.parametrize("words, broken", [(1_800, False), (1_801, True)])
def test_one_word_over_lesson_05s_cap_fails_and_fenced_code_is_not_counted(tmp_path, words, broken):
    for stem in ("00_a", "01_b", "02_c", "03_d", "04_e", "05_training", "06_f", "07_g"):
        count = words if stem == "05_training" else 10
        cell = {"cell_type": "markdown", "source": [" ".join(["word"] * count) + "\n```python\nx = 1 + 2\n```\n"]}
        (tmp_path / f"{stem}.ipynb").write_text(json.dumps({"cells": [cell]}))
    assert over_budget(tmp_path) == (["05_training: 1801 words > 1800"] if broken else [])


def too_wide_code_lines(lesson_cells):
    """``(cell id, line)`` of every code line wider than the website's code box."""
    return [(cell.get("id"), line) for cell in lesson_cells if cell["cell_type"] == "code"
            for line in "".join(cell["source"]).splitlines() if len(line) > WEBSITE_CODE_COLUMNS]


@pytest.mark.parametrize("path", [None, *sorted(NOTEBOOKS.glob("**/*.ipynb"))],
                         ids=lambda p: "planted" if p is None else str(p.relative_to(NOTEBOOKS)))
def test_code_lines_fit_the_websites_code_box(path):
    if path is None:  # the check finds a line one character too wide, in code cells only
        planted = [{"cell_type": "code", "id": "a", "source": ["x" * 88 + "\n", "y" * 89 + "\n"]},
                   {"cell_type": "markdown", "id": "b", "source": ["words " * 30]}]
        assert too_wide_code_lines(planted) == [("a", "y" * 89)]
    else:
        assert too_wide_code_lines(cells(path)) == []
