"""The lessons' length budget: the prose a learner reads, fenced code excluded."""

import json
import re
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
BUDGET = 11_000  # markdown words in lessons 00-07 together


def markdown_words(path: Path) -> int:
    cells = json.loads(path.read_text())["cells"]
    text = "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")
    return len(re.sub(r"```.*?```", "", text, flags=re.S).split())


def test_lessons_00_to_07_stay_within_their_word_budget():
    counts = {path.stem: markdown_words(path) for path in sorted(NOTEBOOKS.glob("0[0-7]_*.ipynb"))}
    assert len(counts) == 8 and sum(counts.values()) <= BUDGET, counts


def test_fenced_code_is_not_counted(tmp_path):
    cell = {"cell_type": "markdown", "source": ["two words\n```python\nx = 1 + 2\n```\n"]}
    (tmp_path / "n.ipynb").write_text(json.dumps({"cells": [cell]}))
    assert markdown_words(tmp_path / "n.ipynb") == 2
