"""The licence, the citation record and the Keras floor."""

import ast
import re
from pathlib import Path

import pytest
from fakes import REPO

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
yaml = pytest.importorskip("yaml")



def test_license_citation_and_keras_floor():
    text = (REPO / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"]["text"] == "Apache-2.0"
    # the citation names the project and the paper
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0" and citation["title"] == "ShiftViT, step by step"
    paper = citation["references"][0]
    assert paper["title"].startswith("When Shift Operation Meets Vision Transformer")
    assert paper["authors"][0]["family-names"] == "Wang" and paper["year"] == 2022
    assert "AAAI" in paper["conference"]["name"]
    assert any(i["value"] == "arXiv:2201.10801" for i in paper["identifiers"])
    # the Keras floor is past the known safe-mode bypasses (CVE-2026-1462)
    floor = next(re.fullmatch(r"keras>=([\d.]+)", d) for d in project["dependencies"] if d.startswith("keras"))
    assert tuple(int(part) for part in floor.group(1).split(".")) >= (3, 13, 2)


ISSUE_NUMBER = re.compile(r"\b(?:issues?|Issue) \d+")


def _help_texts() -> dict[str, str]:
    """What a user reads: each script's docstring that its --help shows, and the READMEs' text."""
    texts = {name: (REPO / name).read_text(encoding="utf-8") for name in ("README.md", "README.ko.md")}
    sources = {str(path.relative_to(REPO)): path.read_text(encoding="utf-8") for path in REPO.glob("*/*.py")}
    # a script whose --help is its module docstring
    return texts | {name: ast.get_docstring(ast.parse(source)) or "" for name, source in sources.items()
                    if "__doc__" in source and "argparse" in source}


def test_no_issue_numbers_in_what_a_user_reads():
    found = {name: ISSUE_NUMBER.findall(text) for name, text in _help_texts().items()}
    assert {name: hits for name, hits in found.items() if hits} == {}
    assert ISSUE_NUMBER.search("Write the copy (issue 36).")  # the pattern finds one


def test_skips_name_only_what_a_user_can_have():
    """A skip's reason never sends a user to a folder outside the repository (the lent machines' runs)."""
    tests = [path for path in REPO.glob("tests/**/*.py") if path != Path(__file__)]
    reasons = [line for path in tests for line in path.read_text().splitlines()
               if ("skip" in line or "reason=" in line) and ("../" in line or "shared/" in line)]
    assert reasons == []


@pytest.mark.parametrize("tool", ["ruff", "sphinx", "myst-nb", "sphinx-book-theme", "pydata-sphinx-theme",
                                  "fonttools"])
def test_linters_and_site_tools_have_an_upper_bound(tool):
    """A new release of a linter or of the site's tools cannot break CI without a change here."""
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    spec = next(s for group in extras.values() for s in group if re.match(rf"{re.escape(tool)}\b[=<>!~ ]", s))
    assert "==" in spec or "<" in spec, spec
