"""scripts/gpu_table.py: one table of the GPU runs, and every GPU figure the project quotes is in it."""

import csv
import re

import pytest
from fakes import REPO, cells, load_script

gpu_table = load_script("scripts/gpu_table.py")
ROWS = list(csv.DictReader(gpu_table.TABLE.open()))  # the table as the repository keeps it

# what a quoted figure is, by the words around it -> the table's column it must come from
FIGURES = {
    "test_top1": r"test top-1:? (\d+\.\d+) ?%|(\d+\.\d+) ?% test top-1",
    "best_val_top1": r"best validation(?: top-1)?:? (\d+\.\d+) ?%",
    "train_seconds": r"(\d+(?:\.\d)?) s of training",
}
QUOTING = [REPO / "README.md", REPO / "results" / "README.md", REPO / "notebooks" / "05_training.ipynb"]


def _texts(path):
    """A file's paragraphs (a notebook: its markdown cells' paragraphs and its printed outputs)."""
    if path.suffix != ".ipynb":
        return path.read_text().split("\n\n")
    texts = []
    for cell in cells(path):
        texts += "".join(cell["source"]).split("\n\n") if cell["cell_type"] == "markdown" else []
        texts += ["".join(out.get("text", "")) for out in cell.get("outputs", [])]
    return texts


def stray_figures(text, table):
    """The GPU figures ``text`` quotes that no row of ``table`` holds (a paragraph about a GPU run)."""
    if not re.search(r"H200|H100|GPU", text):
        return []
    stray = []
    for column, pattern in FIGURES.items():
        known = {row[column] for row in table} | {f"{float(row[column]):.0f}" for row in table if row[column]}
        for match in re.finditer(pattern, text):
            figure = next(group for group in match.groups() if group)
            if figure not in known and not re.search(r"CPU|cpu_full|2-core", text[max(0, match.start() - 120):
                                                                                     match.start()]):
                stray.append(f"{column} {figure}")
    return stray


def test_the_table_is_built_from_the_records_and_a_figure_it_lacks_is_found():
    assert gpu_table.TABLE.read_text() == gpu_table.table_text(), "run python scripts/gpu_table.py"
    assert {row["source"].rsplit("/", 1)[0] for row in ROWS} == {
        "results/gpu_h200", "results/gpu_h200_2026-11-26", "results/gpu_h100_2026-11-26_library_check"}
    strong = next(row for row in ROWS if row["recipe"] == "strong")
    assert strong["test_top1"] == "" and strong["status"].startswith("partial") and strong["epochs"] == "76/100"
    # a quoted figure the table lacks is found
    assert stray_figures("On one H200: test top-1 80.76 %, 129.1 s of training.", ROWS) == ["test_top1 80.76"]
    assert stray_figures("On one H200: test top-1 80.67 %, 192.1 s of training.", ROWS) == ["train_seconds 192.1"]
    assert stray_figures("On one H200: test top-1 80.67 %, 129.1 s of training.", ROWS) == []


@pytest.mark.parametrize("path", QUOTING, ids=lambda p: p.name)
def test_every_gpu_figure_quoted_is_in_the_table(path):
    stray = [figure for text in _texts(path) for figure in stray_figures(text, ROWS)]
    assert not stray, f"{path.name} quotes GPU figures the table lacks: {stray}"
