"""The Korean edition (issues 29, 38): translations in sync with the English source, code unchanged,
one vocabulary, the same numbers, and `run.sh main` / `site` refusing a stale edition.

The English notebooks are the source; i18n/ko/catalog/<lesson>.json holds each translated cell with the
hash of the English cell it was made from; scripts/build_korean.py builds notebooks/ko/ from both. Its
check (`build_all`) names every missing or stale translation, translated code that differs, a number the
English and the Korean do not share, and each variant i18n/ko/glossary.md rules out (its table
"Ruled-out variants", a regular expression per variant) in the lessons and in README.ko.md.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fakes import LESSONS, NOTEBOOKS, REPO, one_line

sys.path.insert(0, str(REPO / "scripts"))
import build_korean  # noqa: E402
from korean_catalog import cell_source, english_hash, load_catalog  # noqa: E402

STEMS = [path.stem for path in LESSONS]
GLOSSARY = REPO / "i18n" / "ko" / "glossary.md"


def _notebook(stem: str, folder: str = "") -> dict:
    return json.loads((NOTEBOOKS / folder / f"{stem}.ipynb").read_text(encoding="utf-8"))


def test_nine_lessons_in_both_languages_built_fresh_with_one_vocabulary_and_the_same_numbers():
    # (nine English lessons: tests/lessons/test_practice.py)
    assert sorted(p.name for p in (NOTEBOOKS / "ko").glob("*.ipynb")) == [f"{s}.ipynb" for s in STEMS]
    report = build_korean.build_all(write=False)
    assert not report, "run python scripts/build_korean.py (or translate):\n" + "\n".join(report)


def _glossary() -> dict[str, str]:
    rows = {}
    for line in GLOSSARY.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0] not in ("English", "") and not set(cells[0]) <= {"-"}:
            rows[cells[0]] = cells[1]
    return rows


# The key terms: the Korean from the glossary, the English a lesson puts beside it on first use.
KEY_TERMS = {"shift (operation)": "shift", "attention": "attention", "channel": "channel",
             "patch merging": "patch merging", "stage": "stage", "stochastic depth": "stochastic depth",
             "receptive field": "receptive field", "warm-up": "warm-up", "label smoothing": "label smoothing",
             "data augmentation": "augmentation", "quick mode": "quick mode"}


def _first_uses_without_english(stem: str) -> list[str]:
    """Key terms whose first markdown cell (after the title) lacks the English beside the Korean."""
    catalog, glossary = load_catalog(stem)["cells"], _glossary()
    cells = [catalog[c["id"]]["ko"] for c in _notebook(stem)["cells"] if c["cell_type"] == "markdown"]
    cells[0] = cells[0].split("\n", 1)[1]  # the title is a heading, not the first use
    missing = []
    for key, gloss in KEY_TERMS.items():
        korean = re.sub(r"\s*\(.*\)$", "", glossary[key]).split(" / ")[0].strip()
        first = next((cell for cell in cells if korean in cell), None)
        beside = re.escape(korean) + r"[^()\n]{0,12}\([^)]*" + re.escape(gloss)  # 시프트(shift)
        before = re.escape(gloss) + r"\s*\(" + re.escape(korean)  # Quick mode(빠른 모드, ...)
        if first is not None and not re.search(f"{beside}|{before}", first, flags=re.IGNORECASE):
            missing.append(f"{korean} ({gloss})")
    return missing


def _unrendered_bold(cells: list[dict]) -> list[str]:
    """No literal ** after CommonMark rendering (markdown-it, as myst-nb and Jupyter use): a bold closed
    after punctuation and followed by a Korean letter (`**채널(channel)**로`) stays as asterisks."""
    render = pytest.importorskip("markdown_it").MarkdownIt("commonmark").enable("table").render
    broken = []
    for cell in cells:
        if cell["cell_type"] == "markdown":
            html = re.sub(r"<code>.*?</code>|<pre>.*?</pre>", "", render(cell_source(cell)), flags=re.DOTALL)
            broken += [f"cell {cell['id']}: …{html[max(0, m.start() - 30):m.end() + 10]}…"
                       for m in re.finditer(r"\*\*", html)]
    return broken


def _english_docstrings(cells: list[dict]) -> list[str]:
    """Functions and classes of the code cells whose docstring has no Korean letter."""
    english = []
    for cell in cells:
        source = cell_source(cell)
        if cell["cell_type"] == "code" and build_korean.has_docstring(source):
            english += [f"cell {cell['id']}: {node.name}" for node in ast.walk(ast.parse(
                build_korean._code_without_magics(source))) if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                and ast.get_docstring(node) and not re.search("[가-힣]", ast.get_docstring(node))]
    return english


@pytest.mark.parametrize("stem", STEMS)
def test_each_korean_lesson_is_its_english_twin_in_korean(stem):
    # (the same cells, code, outputs and metadata: build_all's freshness check and the build_one test below)
    korean = _notebook(stem, "ko")
    first = cell_source(korean["cells"][0])
    assert f"/blob/main/notebooks/ko/{stem}.ipynb" in first  # the Colab badge opens the Korean notebook
    # (its time card: tests/project/test_run_lessons.py reads the minutes it states)
    assert _first_uses_without_english(stem) == []
    assert _unrendered_bold(korean["cells"]) == []
    # the exercise specifications (centre_crop, my_shift, warmup_cosine, inside_block, ...) too
    assert _english_docstrings(korean["cells"]) == []


def test_the_checks_of_a_korean_lesson_see_what_they_look_for():
    cells = [{"id": "c", "cell_type": "markdown", "source": "**채널(channel)**로"}]
    assert _unrendered_bold(cells) and not _unrendered_bold([{**cells[0], "source": "**채널**(channel)로"}])
    code = [{"id": "d", "cell_type": "code", "source": 'def f():\n    """Add one."""\n'}]
    assert _english_docstrings(code) == ["cell d: f"]
    assert _english_docstrings([{**code[0], "source": 'def f():\n    """1을 더합니다."""\n'}]) == []


GLOSSARY_CASES = [  # (cell type, Korean prose, the ruled-out variant the check names, or None: allowed)
    ("markdown", "모든 어텐션 층을 시프트로 바꿉니다.", "층"),
    ("markdown", "그 기울기가 Adam을 거칩니다.", "기울기"),
    ("markdown", "퀵 모드로 실행합니다.", "퀵 모드"),
    ("markdown", "배열의 shape은 (N, H, W, C)입니다.", "shape"),
    ("markdown", "**여러분 차례입니다.** 함수를 작성하세요.", "여러분 차례"),
    ("markdown", "**채널(channel)** 로 나눕니다.", "** 로"),
    ("markdown", "*패치 병합(patch merging)* 이 줄입니다.", "* 이"),
    ("markdown", "시프트는 연산을 전혀 하지 않습니다.", "연산을 전혀"),
    ("markdown", "곱셈-누적 연산 수", "곱셈-누적"),
    ("markdown", "측정의 노이즈", "노이즈"),
    ("markdown", "레시피로 모델을 compile하고 학습합니다.", "compile"),
    ("markdown", "마지막에 얻는 보상은 학습된 모델입니다.", "보상"),
    ("markdown", "노트북 CPU용 값을 갖습니다.", "노트북 CPU"),
    ("markdown", "노트북 컴퓨터 사진도 레이블을 받습니다.", "노트북 컴퓨터"),
    ("markdown", "빈칸이 비어 있으면 라이브러리끼리 비교합니다.", "빈칸이 비어"),
    ("code", "# 기울기:", "기울기"),  # in a code comment
    *[("markdown", allowed, None) for allowed in (
        "Swin의 계층 구조", "다층 퍼셉트론(MLP)", "층화 분할(stratified split)", "형태(shape)", "`x.shape`",
        "십자 모양까지 닿습니다", "```python\nimport keras  # 층\n```", "**채널**(channel)로", "**81.7 %**, Swin-T",
        "**직접 해 보세요.** `call`을 작성하세요", "파라미터도 산술 연산도 없습니다", "스트라이드(stride) 2",
        # issue 44: code and names keep "compile"; a Jupyter notebook is a 노트북
        "`model.compile`로 컴파일합니다", "`compile_for_training`으로 컴파일된 모델", "`jit_compile=True`",
        "이 노트북의 장치에서", "빈칸을 채우지 않았으면", "랩톱 CPU에 맞춘 값")],
]


@pytest.mark.parametrize("cell_type, text, variant", GLOSSARY_CASES)
def test_the_glossary_names_each_ruled_out_variant_and_passes_the_allowed_forms(cell_type, text, variant):
    found = build_korean.glossary_violations(build_korean.prose(text, cell_type))
    assert [line.split(": use ")[0] for line in found] == ([repr(variant)] if variant else []), found


def _korean(change):
    return lambda cell, entries: entries[cell["id"]].update(ko=change(entries[cell["id"]]["ko"]))


CODE_DIFFERS = "the translated code differs from the English code (not only comments and docstrings)"


# (lesson, the first cell of this type whose English and Korean hold this text, the change, the problems)
@pytest.mark.parametrize("stem, cell_type, holding, change, expected", [
    ("01_data", "markdown", "", lambda cell, entries: entries.pop(cell["id"]), ["no translation"]),
    ("01_data", "code", "", _korean(lambda ko: ko + "\nextra = 1  # 코드 한 줄 추가"), [CODE_DIFFERS]),
    # a changed line in a cell whose docstring is translated
    ("05_training", "code", "def warmup_cosine(", _korean(lambda ko: ko.replace("def warmup_cosine(", "def warmup(")),
     [CODE_DIFFERS]),
    # a number the English does not hold (as an old translation re-imported against new English shows)
    ("05_training", "markdown", "83.17 %", _korean(lambda ko: ko.replace("83.17 %", "83.71 %")), [
        "numbers differ: 83.17 is in the English, not in the Korean",
        "numbers differ: 83.71 is in the Korean, not in the English"]),
    ("03_shift_block", "markdown", "", _korean(lambda ko: ko + "\n\n퀵 모드로 실행합니다."), ["'퀵 모드'"]),
])
def test_a_planted_mistake_in_a_translation_is_named_with_its_cell(stem, cell_type, holding, change, expected):
    nb, catalog = _notebook(stem), json.loads(json.dumps(load_catalog(stem)))  # a copy to plant a mistake in
    cell = next(c for c in nb["cells"] if c["cell_type"] == cell_type and c["id"] in catalog["cells"]
                and holding in cell_source(c) and holding in catalog["cells"][c["id"]]["ko"])
    change(cell, catalog["cells"])  # (each lesson passes unchanged: the first test above)
    found = build_korean.problems(stem, nb, catalog)
    where = f"notebooks/{stem}.ipynb: cell {cell['id']} ({cell_type}): "
    assert found and all(line.startswith(where) for line in found), found  # that cell only
    assert all(any(line.startswith(where + slip) for line in found) for slip in expected), found


def _copy_of_the_sources(root: Path) -> Path:
    """What `build_korean.py --check` and `run.sh main` / `site` read before their set-up."""
    for folder in ("scripts", "i18n"):
        shutil.copytree(REPO / folder, root / folder)
    shutil.copytree(NOTEBOOKS, root / "notebooks", ignore=shutil.ignore_patterns("conftest.py"))
    (root / "shiftvit_lib" / "tools").mkdir(parents=True)  # the scripts' file safety (issue 35)
    shutil.copy(REPO / "shiftvit_lib" / "tools" / "files.py", root / "shiftvit_lib" / "tools")
    for name in ("run.sh", "README.ko.md"):  # --check reads README.ko.md for the glossary's variants
        shutil.copy(REPO / name, root)
    return root


def test_one_changed_english_cell_is_named_by_the_check_listed_to_translate_and_stops_run_sh(tmp_path):
    """End to end, on a copy of the repository's sources: edit one English cell, run the commands."""
    root = _copy_of_the_sources(tmp_path)
    stem = "02_shift_operation"
    path = root / "notebooks" / f"{stem}.ipynb"
    nb, catalog = json.loads(path.read_text(encoding="utf-8")), load_catalog(stem)
    # a markdown cell that is translated in the catalogue and fresh (its hash), so the edit is what makes it stale
    cell = next(c for c in nb["cells"] if c["cell_type"] == "markdown" and c["id"] in catalog["cells"]
                and catalog["cells"][c["id"]]["en_sha256"] == english_hash(cell_source(c)))

    def run(*command: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "PYTHON": sys.executable, "SHIFTVIT_VENV": str(tmp_path / "venv-never-made")}
        return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=120)

    cell["source"] = cell_source(cell) + "\nOne more English sentence."
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    stale = f"notebooks/{stem}.ipynb: cell {cell['id']} (markdown): stale"
    after = run(sys.executable, "scripts/build_korean.py", "--check")
    assert after.returncode == 1 and stale in after.stdout
    # the translator's list shows the cell with its new English text and the old Korean
    todo = run(sys.executable, "scripts/build_korean.py", "todo", stem)
    assert f"===== {stem} {cell['id']} (markdown, stale)" in todo.stdout
    assert "One more English sentence." in todo.stdout
    for job in ("site", "main"):  # refused before anything is set up or published
        done = run("bash", "run.sh", job)
        assert done.returncode == 1 and stale in done.stdout, done.stdout + done.stderr
        assert "error: notebooks/ko/ is not in step with the English lessons" in done.stderr
        assert not (tmp_path / "venv-never-made").exists() and not (root / "build").exists()


ENGLISH_CODE = 'def add_one(x):\n    """Add one to x."""\n    return x + 1  # one more\n'


@pytest.mark.parametrize("strip, a, b, same", [
    ("without_comments", "x = 1  # one", "x = 1  # 하나", True),
    ("without_comments", "x = 1  # one", "x = 2  # one", False),
    ("without_comments", "s = '# not a comment'", "s = ''", False),
    ("without_comments", '%pip install -q "x"  # note\nimport os  # os', '%pip install -q "x"  # note\nimport os', True),
    # a translated docstring is not code; changed code, a dropped docstring or an added line are
    ("code_only", ENGLISH_CODE, 'def add_one(x):\n    """x에 1을 더합니다."""\n    return x + 1  # 하나 더\n', True),
    ("code_only", ENGLISH_CODE, 'def add_one(x):\n    """x에 1을 더합니다."""\n    return x + 2  # 하나 더\n', False),
    ("code_only", ENGLISH_CODE, 'def add_one(x):\n    return x + 1\n', False),
    ("code_only", ENGLISH_CODE, 'def add_one(x):\n    """x에 1을 더합니다."""\n    s = "one"\n    return x + 1\n', False),
    ("code_only", 'x = "one"\n', 'x = "하나"\n', False),  # a string that is not a docstring is code
])
def test_only_comments_and_docstrings_may_differ(strip, a, b, same):
    strip = getattr(build_korean, strip)
    assert (strip(a) == strip(b)) is same


@pytest.mark.parametrize("cell_type, english, translated_from, korean, built", [
    # a stale code translation never puts old code in the Korean notebook: the new code, in English until refreshed
    ("code", "x = 2  # two\n", "x = 1  # two\n", "x = 1  # 둘\n", "x = 2  # two\n"),
    # a link to an English section anchor opens the Korean lesson at its top
    ("markdown", "see [a](08_appendix_engineering.ipynb#a2-x)", "see [a](08_appendix_engineering.ipynb#a2-x)",
     "[부록](08_appendix_engineering.ipynb#a2-x) 참고", "[부록](08_appendix_engineering.ipynb) 참고"),
])
def test_a_built_cell_holds_only_what_a_reader_can_use(cell_type, english, translated_from, korean, built):
    cell = {"id": "c1", "cell_type": cell_type, "source": english, "outputs": [{"text": "1"}],
            "metadata": {"x": 1}}
    catalog = {"cells": {"c1": {"en_sha256": english_hash(translated_from), "ko": korean}}}
    ko = build_korean.build_one({"cells": [cell], "metadata": {}}, catalog)
    assert cell_source(ko["cells"][0]) == built
    assert ko["metadata"]["language"] == "ko"
    # its id, type, outputs and metadata are the English cell's
    assert ko["cells"][0] | {"source": english} == cell


def test_refresh_moves_korean_comments_onto_reformatted_code():
    english = "f(a,\n  b)  # first\n# second\ny = 1\n"
    korean_comments = ["# 첫째", "# 둘째"]
    carried = build_korean.with_comments(english, korean_comments)
    assert carried == "f(a,\n  b)  # 첫째\n# 둘째\ny = 1\n"
    assert build_korean.without_comments(carried) == build_korean.without_comments(english)
    assert [t.string for t in build_korean.comments(carried)] == korean_comments


# (a notebook cut short: files.read_json, tests/tools/test_files.py)
@pytest.mark.parametrize("read, name, text, words", [
    ("load_notebook", "01_no_id.ipynb", json.dumps({"cells": [{"cell_type": "markdown", "source": "# T"}]}),
     "01_no_id.ipynb: cell 0 has no id"),
    ("glossary_rules", "glossary.md", "## Ruled-out variants\n\n| ruled out | use | concept |\n|---|---|---|\n"
     "| `층(` | 레이어 | layer |\n", r"glossary.md:5: the ruled-out pattern `층\(` is not a regular"),
])
def test_a_cell_without_id_or_a_broken_glossary_pattern_is_one_line_naming_where(tmp_path, read, name, text, words):
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=words) as refused:
        getattr(build_korean, read)(tmp_path / name)
    assert str(tmp_path / name) in one_line(refused.value)


# --- the same numbers, the same code (issue 38): a re-imported translation cannot ship old text


def test_numbers_are_compared_as_values():
    assert build_korean.numbers("11.7 million parameters") == build_korean.numbers("파라미터 1,170만 개")
    assert build_korean.numbers("about 2 million") == build_korean.numbers("약 200만")
    assert build_korean.numbers("40,000 images, 83.17 %") == ["40000", "83.17"]
    assert build_korean.number_slips("two points", "2포인트") == []  # English spells small numbers out
    assert build_korean.number_slips("81.09 %", "81.9 %") == ["81.09 is in the English, not in the Korean",
                                                              "81.9 is in the Korean, not in the English"]
