"""The Korean edition's translation catalogue: one JSON file per lesson, keyed by cell id.

The English notebooks are the source. Each translated cell records the hash of the English cell it was
made from, so a changed English cell shows up as a stale translation, named by its id.

``i18n/ko/catalog/<lesson stem>.json``::

    {"lesson": "05_training",
     "cells": {"<cell id>": {"en_sha256": "<english_hash of the English cell>",
                             "ko": "<the whole cell's source in Korean>"}}}

A markdown cell's ``ko`` is the translated cell. A code cell's ``ko`` is the same code with its comments
translated (identifiers, strings and numbers unchanged). Code cells without comments need no entry.

The lesson runner rewrites the measured quick-mode time in each lesson's time card after every run;
``english_hash`` leaves that text out, so a re-run does not make every first cell stale. In a Korean
time card, write ``{measured}`` where the measured text goes; the builder fills it in.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from project_files import files  # noqa: E402, F401 - the scripts write through it

ROOT = Path(__file__).resolve().parent.parent
CATALOG_DIR = ROOT / "i18n" / "ko" / "catalog"
# The row the lesson runner writes (scripts/run_lessons.py, update_time_card): "| Quick mode ... | <text> |".
MEASURED_ROW = re.compile(r"^(\|\s*Quick mode[^|\n]*\|)[^\n]*(\|)\s*$", re.MULTILINE)
MEASURED = "{measured}"


def cell_source(cell) -> str:
    """A notebook cell's source as one string (nbformat stores a string or a list of lines)."""
    source = cell["source"]
    return source if isinstance(source, str) else "".join(source)


def english_hash(source: str) -> str:
    """The hash a translation records: the English source with the measured quick-mode time left out."""
    normalised = MEASURED_ROW.sub(lambda m: f"{m.group(1)} {MEASURED} {m.group(2)}", source)
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()


def measured_text(source: str) -> str | None:
    """The measured quick-mode text of an English time card, or None if the cell has none."""
    match = re.search(r"^\|\s*Quick mode[^|\n]*\|([^\n]*)\|\s*$", source, re.MULTILINE)
    return match.group(1).strip() if match else None


def catalog_path(stem: str) -> Path:
    return CATALOG_DIR / f"{stem}.json"


def load_catalog(stem: str) -> dict:
    path = catalog_path(stem)
    if not path.exists():
        return {"lesson": stem, "cells": {}}
    catalog = files.read_json(path, "translation catalogue")
    if not isinstance(catalog, dict) or not isinstance(catalog.get("cells"), dict):
        raise ValueError(f"{path} is not a translation catalogue (no \"cells\" object); restore it "
                         "from version control")
    return catalog


def save_catalog(catalog: dict) -> None:
    path = catalog_path(catalog["lesson"])
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(catalog, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    files.atomic_write_text(path, text)  # a full disk or a crash leaves the old catalogue whole


def set_translation(stem: str, cell_id: str, english_source: str, korean_source: str) -> None:
    """Record (or replace) one cell's translation, hashed against the English source it was made from."""
    catalog = load_catalog(stem)
    catalog["cells"][cell_id] = {"en_sha256": english_hash(english_source), "ko": korean_source}
    save_catalog(catalog)
