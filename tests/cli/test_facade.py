"""The facade (``import shiftvit_lib as sv``): every name the lessons and the README use is there,
and each one is the object of the module ``_EXPORTS`` names for it."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import shiftvit_lib as sv

REPO = Path(__file__).resolve().parents[2]


def _names_used_by_the_lessons() -> set[str]:
    texts = [path.read_text() for path in (REPO / "notebooks").rglob("*.ipynb")]
    texts += [(REPO / name).read_text() for name in ("README.md", "README.ko.md")]
    return {name for text in texts for name in re.findall(r"\bsv\.([A-Za-z_][A-Za-z0-9_]*)", text)} - {"__file__"}


def test_every_name_a_lesson_or_the_readme_uses_is_in_the_facade():
    used = _names_used_by_the_lessons()
    assert {"preset", "train", "pretrained", "MLP", "data"} <= used  # the scan finds what it must
    missing = sorted(name for name in used if not hasattr(sv, name))
    assert missing == []


def test_each_name_comes_from_the_module_its_table_names():
    assert sorted(sv.__all__) == sorted(sv._MODULE_OF) and set(sv.__all__) <= set(dir(sv))
    for name in sv.__all__:
        assert getattr(sv, name) is getattr(importlib.import_module(sv._MODULE_OF[name]), name), name
