"""The Korean edition cannot ship old text (issue 38).

A changed English cell is stale by its hash; these tests cover the rest: a translation re-imported
against the new English (the hash then matches) still fails when its numbers differ from the English
cell's, and `run.sh main` / `run.sh site` refuse a stale Korean edition before they set anything up.
"""

from __future__ import annotations

import json
import os
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


def _notebook(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("stem", STEMS)
def test_the_numbers_of_each_korean_cell_equal_those_of_its_english_twin(stem):
    english, korean = _notebook(NOTEBOOKS / f"{stem}.ipynb"), _notebook(NOTEBOOKS / "ko" / f"{stem}.ipynb")
    slips = []
    for en, ko in zip(english["cells"], korean["cells"]):
        if en["cell_type"] == "markdown":
            slips += [f"cell {en['id']}: {slip}" for slip in build_korean.number_slips(
                build_korean.prose(cell_source(en), "markdown"), build_korean.prose(cell_source(ko), "markdown"))]
    assert not slips, f"{stem}:\n" + "\n".join(slips)


def test_numbers_are_compared_as_values():
    assert build_korean.numbers("11.7 million parameters") == build_korean.numbers("파라미터 1,170만 개")
    assert build_korean.numbers("about 2 million") == build_korean.numbers("약 200만")
    assert build_korean.numbers("40,000 images, 83.17 %") == ["40000", "83.17"]
    assert build_korean.number_slips("two points", "2포인트") == []  # English spells small numbers out
    assert build_korean.number_slips("81.09 %", "81.9 %") == ["81.09 is in the English, not in the Korean",
                                                              "81.9 is in the Korean, not in the English"]


def _reimported(stem: str, cell_id: str, english: str, korean: str, nb: dict, catalog: dict):
    """What `build_korean.py import` records: the Korean, hashed against the current English."""
    for cell in nb["cells"]:
        if cell["id"] == cell_id:
            cell["source"] = english
    catalog["cells"][cell_id] = {"en_sha256": english_hash(english), "ko": korean}
    return build_korean.problems(stem, nb, catalog)


def test_stale_korean_re_imported_against_a_changed_english_number_fails():
    stem = "05_training"
    nb, catalog = _notebook(NOTEBOOKS / f"{stem}.ipynb"), json.loads(json.dumps(load_catalog(stem)))
    cell = next(c for c in nb["cells"] if c["cell_type"] == "markdown" and "83.17 %" in cell_source(c))
    old_korean = catalog["cells"][cell["id"]]["ko"]
    assert "83.17 %" in old_korean
    assert not _reimported(stem, cell["id"], cell_source(cell), old_korean, nb, catalog)  # unchanged: fine
    new_english = cell_source(cell).replace("83.17 %", "83.71 %")
    found = _reimported(stem, cell["id"], new_english, old_korean, nb, catalog)
    assert f"notebooks/{stem}.ipynb: cell {cell['id']} (markdown): numbers differ: 83.71 is in the English, " \
        "not in the Korean" in found
    assert any("83.17 is in the Korean, not in the English" in line for line in found)


def test_a_changed_number_in_the_korean_fails_the_check():
    stem = "07_attention_vs_shift"
    nb, catalog = _notebook(NOTEBOOKS / f"{stem}.ipynb"), json.loads(json.dumps(load_catalog(stem)))
    cell = next(c for c in nb["cells"] if c["cell_type"] == "markdown" and "10,000" in cell_source(c)
                and "10,000" in catalog["cells"][c["id"]]["ko"])
    catalog["cells"][cell["id"]]["ko"] = catalog["cells"][cell["id"]]["ko"].replace("10,000", "1,000", 1)
    found = build_korean.problems(stem, nb, catalog)
    assert f"notebooks/{stem}.ipynb: cell {cell['id']} (markdown): numbers differ: 10000 is in the English, " \
        "not in the Korean" in found


def _copy_for_run_sh(tmp_path: Path) -> Path:
    """What `run.sh main` / `site` read before their set-up: run.sh, the scripts, the catalogue, notebooks."""
    for folder in ("scripts", "i18n"):
        shutil.copytree(REPO / folder, tmp_path / folder)
    shutil.copytree(NOTEBOOKS, tmp_path / "notebooks", ignore=shutil.ignore_patterns("conftest.py"))
    (tmp_path / "shiftvit_lib" / "tools").mkdir(parents=True)
    shutil.copy(REPO / "shiftvit_lib" / "tools" / "files.py", tmp_path / "shiftvit_lib" / "tools")
    for name in ("run.sh", "README.ko.md"):
        shutil.copy(REPO / name, tmp_path)
    return tmp_path


@pytest.mark.parametrize("job", ["site", "main"])
def test_run_sh_refuses_a_stale_korean_cell_before_it_sets_up_or_publishes(tmp_path, job):
    root = _copy_for_run_sh(tmp_path)
    stem = "04_shiftvit_model"
    path = root / "notebooks" / f"{stem}.ipynb"
    nb = _notebook(path)
    cell = next(c for c in nb["cells"] if c["cell_type"] == "markdown" and c["id"] in load_catalog(stem)["cells"])
    cell["source"] = cell_source(cell) + "\nA sentence the Korean does not have yet."
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    venv = tmp_path / "venv-never-made"
    env = {**os.environ, "PYTHON": sys.executable, "SHIFTVIT_VENV": str(venv)}
    done = subprocess.run(["bash", "run.sh", job], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"notebooks/{stem}.ipynb: cell {cell['id']} (markdown): stale" in done.stdout
    assert "error: notebooks/ko/ is not in step with the English lessons" in done.stderr
    assert not venv.exists() and not (root / "build").exists()  # nothing set up, nothing published


# --- docstrings: translated like comments, exercise specifications included


def test_a_translated_docstring_passes_and_changed_code_still_fails():
    english = 'def add_one(x):\n    """Add one to x."""\n    return x + 1  # one more\n'
    translated = 'def add_one(x):\n    """x에 1을 더합니다."""\n    return x + 1  # 하나 더\n'
    assert build_korean.code_only(translated) == build_korean.code_only(english)
    for changed in ('def add_one(x):\n    """x에 1을 더합니다."""\n    return x + 2  # 하나 더\n',  # the code
                    'def add_one(x):\n    return x + 1\n',  # the docstring dropped
                    'def add_one(x):\n    """x에 1을 더합니다."""\n    s = "one"\n    return x + 1\n'):  # a line added
        assert build_korean.code_only(changed) != build_korean.code_only(english), changed
    # a string that is not a docstring is code: translating it changes the program
    assert build_korean.code_only('x = "one"\n') != build_korean.code_only('x = "하나"\n')


def test_a_changed_line_in_a_cell_with_a_translated_docstring_fails_the_check():
    stem = "05_training"
    nb, catalog = _notebook(NOTEBOOKS / f"{stem}.ipynb"), json.loads(json.dumps(load_catalog(stem)))
    cell = next(c for c in nb["cells"] if "def warmup_cosine" in cell_source(c))
    assert "워밍업" in catalog["cells"][cell["id"]]["ko"] and not build_korean.problems(stem, nb, catalog)
    catalog["cells"][cell["id"]]["ko"] = catalog["cells"][cell["id"]]["ko"].replace("def warmup_cosine(", "def warmup(")
    found = build_korean.problems(stem, nb, catalog)
    assert found == [f"notebooks/{stem}.ipynb: cell {cell['id']} (code): the translated code differs from the "
                     "English code (not only comments and docstrings)"]


@pytest.mark.parametrize("stem", STEMS)
def test_every_docstring_in_the_korean_lessons_is_korean(stem):
    """The exercise specifications (centre_crop, my_shift, my_shapes, warmup_cosine, inside_block, ...) too."""
    import ast
    import re

    english = []
    for cell in _notebook(NOTEBOOKS / "ko" / f"{stem}.ipynb")["cells"]:
        source = cell_source(cell)
        if cell["cell_type"] != "code" or not build_korean.has_docstring(source):
            continue
        for node in ast.walk(ast.parse(build_korean._code_without_magics(source))):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and ast.get_docstring(node):
                if not re.search("[가-힣]", ast.get_docstring(node)):
                    english.append(f"cell {cell['id']}: {node.name}")
    assert not english, f"{stem}: docstrings still in English: {english}"


def test_the_exercise_specifications_of_issue_38_are_translated():
    built = "".join(cell_source(c) for stem in STEMS for c in _notebook(NOTEBOOKS / "ko" / f"{stem}.ipynb")["cells"])
    for name, korean in (("centre_crop", "가운데에서"), ("my_shift", "빈자리는 0으로"), ("my_shapes", "패치 투영 뒤"),
                         ("warmup_cosine", "워밍업한 뒤"), ("inside_block", "잔차 가지 안에")):
        assert f"def {name}(" in built and korean in built, name
