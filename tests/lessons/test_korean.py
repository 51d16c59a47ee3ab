"""The Korean edition (issue 29): translations in sync with the English source, code unchanged.

The English notebooks are the source; i18n/ko/catalog/<lesson>.json holds each translated cell with the
hash of the English cell it was made from; scripts/build_korean.py builds notebooks/ko/ from both.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import build_korean  # noqa: E402
from korean_catalog import cell_source, english_hash, load_catalog  # noqa: E402

NOTEBOOKS = REPO / "notebooks"
STEMS = [path.stem for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))]
GLOSSARY = REPO / "i18n" / "ko" / "glossary.md"


def _english(stem: str) -> dict:
    return json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text(encoding="utf-8"))


def _korean(stem: str) -> dict:
    return json.loads((NOTEBOOKS / "ko" / f"{stem}.ipynb").read_text(encoding="utf-8"))


def test_nine_lessons_in_both_languages():
    assert len(STEMS) == 9
    assert sorted(p.name for p in (NOTEBOOKS / "ko").glob("*.ipynb")) == [f"{s}.ipynb" for s in STEMS]


@pytest.mark.parametrize("stem", STEMS)
def test_every_cell_has_a_fresh_translation(stem):
    """Every markdown cell, and every code cell with comments, is translated from the current English."""
    found = build_korean.problems(stem, _english(stem), load_catalog(stem))
    assert not found, "stale or missing Korean translations:\n" + "\n".join(found)


def test_changing_one_english_markdown_cell_fails_the_check_naming_it(tmp_path):
    """End to end, on a copy of the repository's sources: edit one English cell, run --check."""
    for folder in ("scripts", "i18n"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    (tmp_path / "shiftvit_lib" / "tools").mkdir(parents=True)  # the scripts' file safety (issue 35)
    shutil.copy(REPO / "shiftvit_lib" / "tools" / "files.py", tmp_path / "shiftvit_lib" / "tools")
    shutil.copytree(NOTEBOOKS, tmp_path / "notebooks", ignore=shutil.ignore_patterns("conftest.py"))
    shutil.copy(REPO / "README.ko.md", tmp_path)  # --check reads it for the glossary's variants
    stem = "02_shift_operation"
    path = tmp_path / "notebooks" / f"{stem}.ipynb"
    nb = json.loads(path.read_text(encoding="utf-8"))
    catalog = load_catalog(stem)
    # a markdown cell that is translated in the catalogue and fresh, so the edit is what makes it stale
    cell = next(c for c in nb["cells"] if c["cell_type"] == "markdown" and c["id"] in catalog["cells"]
                and catalog["cells"][c["id"]]["en_sha256"] == english_hash(cell_source(c)))
    before = subprocess.run([sys.executable, "scripts/build_korean.py", "--check"], cwd=tmp_path,
                            capture_output=True, text=True)
    assert cell["id"] not in before.stdout
    cell["source"] = cell_source(cell) + "\nOne more English sentence."
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    after = subprocess.run([sys.executable, "scripts/build_korean.py", "--check"], cwd=tmp_path,
                           capture_output=True, text=True)
    assert after.returncode == 1
    assert f"notebooks/{stem}.ipynb: cell {cell['id']} (markdown): stale" in after.stdout
    # and the translator's list shows the cell with its new English text and the old Korean
    todo = subprocess.run([sys.executable, "scripts/build_korean.py", "todo", stem], cwd=tmp_path,
                          capture_output=True, text=True, check=True)
    assert f"===== {stem} {cell['id']} (markdown, stale)" in todo.stdout
    assert "One more English sentence." in todo.stdout


def test_a_missing_translation_and_changed_code_are_named():
    stem = "01_data"
    nb, catalog = _english(stem), load_catalog(stem)
    markdown = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
    code = next(c for c in nb["cells"] if c["cell_type"] == "code" and c["id"] in catalog["cells"])
    catalog = json.loads(json.dumps(catalog))
    del catalog["cells"][markdown["id"]]
    catalog["cells"][code["id"]]["ko"] += "\nextra = 1  # 코드 한 줄 추가"
    found = "\n".join(build_korean.problems(stem, nb, catalog))
    assert f"cell {markdown['id']} (markdown): no translation" in found
    assert f"cell {code['id']} (code): the translated code differs" in found


@pytest.mark.parametrize("stem", STEMS)
def test_korean_code_cells_equal_the_english_ones_apart_from_comments(stem):
    english, korean = _english(stem), _korean(stem)
    assert [c["id"] for c in korean["cells"]] == [c["id"] for c in english["cells"]]
    for en, ko in zip(english["cells"], korean["cells"]):
        assert ko["cell_type"] == en["cell_type"]
        if en["cell_type"] != "code":
            continue
        assert build_korean.code_only(cell_source(ko)) == build_korean.code_only(
            cell_source(en)), f"{stem} cell {en['id']}: the code differs"
        assert ko.get("outputs") == en.get("outputs"), f"{stem} cell {en['id']}: outputs differ"
        assert ko.get("metadata") == en.get("metadata")
    assert korean["metadata"]["language"] == "ko"


def test_comment_stripping_sees_code_changes():
    assert build_korean.without_comments("x = 1  # one") == build_korean.without_comments("x = 1  # 하나")
    assert build_korean.without_comments("x = 1  # one") != build_korean.without_comments("x = 2  # one")
    assert build_korean.without_comments("s = '# not a comment'") != build_korean.without_comments("s = ''")
    magic = '%pip install -q "x"  # note\nimport os  # os'
    assert build_korean.without_comments(magic).endswith("import os")


def test_built_notebooks_are_up_to_date():
    stale = [line for line in build_korean.build_all(write=False) if line.startswith("notebooks/ko/")]
    assert not stale, "\n".join(stale) + "\nrun: python scripts/build_korean.py"


@pytest.mark.parametrize("stem", STEMS)
def test_korean_notebook_links_and_time_card(stem):
    first = cell_source(_korean(stem)["cells"][0])
    if load_catalog(stem)["cells"].get(_english(stem)["cells"][0]["id"]) is None:
        pytest.skip(f"{stem}: the first cell is not translated yet")
    assert f"/blob/main/notebooks/ko/{stem}.ipynb" in first  # the Colab badge opens the Korean notebook
    assert "{measured}" not in first and "분, 레슨 실행기가 측정" in first


def _glossary() -> dict[str, str]:
    rows = {}
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0] not in ("English", "") and not set(cells[0]) <= {"-"}:
            rows[cells[0]] = cells[1]
    return rows


def test_glossary_has_one_korean_term_per_concept():
    rows = _glossary()
    assert len(rows) >= 50
    for english in ("shift (operation)", "channel group", "patch merging", "stage", "stochastic depth",
                    "warm-up", "label smoothing", "receptive field"):
        assert english in rows, english


# The key terms: the Korean from the glossary, the English a lesson puts beside it on first use.
KEY_TERMS = {
    "shift (operation)": "shift",
    "attention": "attention",
    "channel": "channel",
    "patch merging": "patch merging",
    "stage": "stage",
    "stochastic depth": "stochastic depth",
    "receptive field": "receptive field",
    "warm-up": "warm-up",
    "label smoothing": "label smoothing",
    "data augmentation": "augmentation",
    "quick mode": "quick mode",
}


@pytest.mark.parametrize("stem", STEMS)
def test_key_terms_carry_the_english_on_first_use(stem):
    """The first markdown cell that uses a key term (after the title) puts the English beside it."""
    catalog = load_catalog(stem)["cells"]
    english = _english(stem)
    if not any(c["id"] in catalog for c in english["cells"] if c["cell_type"] == "markdown"):
        pytest.skip(f"{stem}: not translated yet")
    glossary = _glossary()
    cells = [catalog[c["id"]]["ko"] for c in english["cells"] if c["cell_type"] == "markdown" and c["id"] in catalog]
    cells[0] = cells[0].split("\n", 1)[1]  # the title is a heading, not the first use
    text = "\n".join(cells)
    missing = []
    for key, gloss in KEY_TERMS.items():
        korean = re.sub(r"\s*\(.*\)$", "", glossary[key]).split(" / ")[0].strip()
        first = next((cell for cell in cells if korean in cell), None)
        if first is None:
            continue  # the lesson does not use the term
        beside = re.escape(korean) + r"[^()\n]{0,12}\([^)]*" + re.escape(gloss)  # 시프트(shift)
        before = re.escape(gloss) + r"\s*\(" + re.escape(korean)  # Quick mode(빠른 모드, ...)
        if not re.search(f"{beside}|{before}", first, flags=re.IGNORECASE):
            missing.append(f"{korean} ({gloss})")
    assert not missing, f"{stem}: first use without the English beside it: {missing}"
    assert text


# --- the website's Korean pages, without Sphinx (the built site: tests/project/test_site.py, website/check_site.py)


def _site_modules():
    pytest.importorskip("sphinx")
    sys.path.insert(0, str(REPO / "website" / "_ext"))
    import korean_edition

    from website import build as site_build

    return korean_edition, site_build


def test_every_lesson_page_has_a_counterpart_in_the_other_language():
    korean_edition, _ = _site_modules()
    for stem in STEMS:
        assert korean_edition.counterpart(f"notebooks/{stem}") == (f"notebooks/ko/{stem}", "ko", "한국어")
        assert korean_edition.counterpart(f"notebooks/ko/{stem}") == (f"notebooks/{stem}", "en", "English")
    assert korean_edition.counterpart("index")[0] == "notebooks/ko/index"
    assert korean_edition.counterpart("notebooks/ko/index")[0] == "index"
    assert korean_edition.counterpart("search") is None


def test_korean_words_are_searchable_without_their_particles():
    korean_edition, _ = _site_modules()
    words = korean_edition.SearchEnglishAndKorean({}).split("시프트를 채널의 ShiftViT")
    assert {"시프트", "채널", "시프트를", "ShiftViT"} <= set(words)


def test_the_korean_lessons_are_staged_at_their_repository_paths(tmp_path):
    _, site_build = _site_modules()
    site_build.stage_sources(tmp_path / "stage")
    for stem in STEMS:
        staged = json.loads((tmp_path / "stage" / "notebooks" / "ko" / f"{stem}.ipynb").read_text(encoding="utf-8"))
        assert [c["id"] for c in staged["cells"]] == [c["id"] for c in _korean(stem)["cells"]]
    home = (tmp_path / "stage" / "notebooks" / "ko" / "index.md").read_text(encoding="utf-8")
    assert all(f"]({stem}.ipynb)" in home for stem in STEMS) and "](../../index.md)" in home


def test_a_stale_code_translation_never_puts_old_code_in_the_korean_notebook():
    nb = {"cells": [{"id": "c1", "cell_type": "code", "source": "x = 2  # two\n", "outputs": []}],
          "metadata": {}}
    catalog = {"cells": {"c1": {"en_sha256": english_hash("x = 1  # two\n"), "ko": "x = 1  # 둘\n"}}}
    built = build_korean.build_one(nb, catalog)
    assert cell_source(built["cells"][0]) == "x = 2  # two\n"  # the new code, in English until refreshed


def test_refresh_moves_korean_comments_onto_reformatted_code():
    english = "f(a,\n  b)  # first\n# second\ny = 1\n"
    korean_comments = ["# 첫째", "# 둘째"]
    carried = build_korean.with_comments(english, korean_comments)
    assert carried == "f(a,\n  b)  # 첫째\n# 둘째\ny = 1\n"
    assert build_korean.without_comments(carried) == build_korean.without_comments(english)
    assert [t.string for t in build_korean.comments(carried)] == korean_comments


def test_links_to_an_english_section_anchor_open_the_korean_lesson_at_its_top():
    nb = {"cells": [{"id": "m1", "cell_type": "markdown", "source": "see [a](08_appendix_engineering.ipynb#a2-x)"}],
          "metadata": {}}
    catalog = {"cells": {"m1": {"en_sha256": english_hash("see [a](08_appendix_engineering.ipynb#a2-x)"),
                                "ko": "[부록](08_appendix_engineering.ipynb#a2-x) 참고"}}}
    built = build_korean.build_one(nb, catalog)
    assert cell_source(built["cells"][0]) == "[부록](08_appendix_engineering.ipynb) 참고"
