"""The licence, the citation record and the Keras floor."""

import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
yaml = pytest.importorskip("yaml")

REPO = Path(__file__).resolve().parents[2]


def test_license_is_the_apache_2_text_named_in_pyproject():
    text = (REPO / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text
    assert tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["license"]["text"] == "Apache-2.0"


def test_citation_names_the_project_and_the_paper():
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0" and citation["title"] == "ShiftViT, step by step"
    paper = citation["references"][0]
    assert paper["title"].startswith("When Shift Operation Meets Vision Transformer")
    assert paper["authors"][0]["family-names"] == "Wang" and paper["year"] == 2022
    assert "AAAI" in paper["conference"]["name"]
    assert any(i["value"] == "arXiv:2201.10801" for i in paper["identifiers"])


def test_keras_floor_is_past_the_known_safe_mode_bypasses():
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    floor = next(re.fullmatch(r"keras>=([\d.]+)", d) for d in dependencies if d.startswith("keras"))
    assert tuple(int(part) for part in floor.group(1).split(".")) >= (3, 13, 2)  # CVE-2026-1462
