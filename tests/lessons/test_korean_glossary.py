"""The Korean edition speaks with one vocabulary (issue 38): i18n/ko/glossary.md rules variants out.

Its table "Ruled-out variants" holds a regular expression per variant (층 for layer, 기울기 for gradient,
a bold word followed by a space and a particle, ...). ``build_korean.py --check`` and these tests look for
them in what a reader reads: markdown outside code, code comments, and README.ko.md.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import build_korean  # noqa: E402
from korean_catalog import cell_source, load_catalog  # noqa: E402

NOTEBOOKS = REPO / "notebooks"
STEMS = [path.stem for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))]


def _english(stem: str) -> dict:
    return json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text(encoding="utf-8"))


def _korean(stem: str) -> dict:
    return json.loads((NOTEBOOKS / "ko" / f"{stem}.ipynb").read_text(encoding="utf-8"))


def test_the_glossary_names_the_terms_of_issue_38_and_rules_out_their_variants():
    glossary = (REPO / "i18n" / "ko" / "glossary.md").read_text(encoding="utf-8")
    for english in ("| layer |", "| shape (of a tensor) |", "| stride |", "| import |", "| crop / centre crop |",
                    "| multiply-accumulate (MAC, MACs) |", "| noise |", "| gradient |", "| regularisation | 규제 |",
                    "| normalisation | 정규화 |", "| quick mode |", "| practice copy |",
                    # issue 44
                    "| compile (a Keras model, a step with XLA) | 컴파일 |", "| payoff (what a lesson ends with) | 성과 |",
                    "| laptop | 랩톱 |", "| blank (an exercise's gap to fill) | 빈칸 |"):
        assert english in glossary, english
    ruled_out = {concept for _, _, concept in build_korean.glossary_rules()}
    assert {"layer", "shape", "stride", "import", "crop", "multiply-accumulate", "noise", "gradient",
            "quick mode", "exercise prompt", "compile", "payoff", "laptop", "blank"} <= ruled_out


@pytest.mark.parametrize("stem", STEMS)
def test_no_korean_lesson_uses_a_ruled_out_variant(stem):
    found = []
    for cell in _korean(stem)["cells"]:
        text = build_korean.prose(cell_source(cell), cell["cell_type"])
        found += [f"cell {cell['id']}: {v}" for v in build_korean.glossary_violations(text)]
    assert not found, f"{stem}: variants the glossary rules out:\n" + "\n".join(found)


def test_readme_ko_uses_no_ruled_out_variant():
    assert build_korean.readme_problems() == []


@pytest.mark.parametrize("planted, variant", [
    ("모든 어텐션 층을 시프트로 바꿉니다.", "층"),
    ("그 기울기가 Adam을 거칩니다.", "기울기"),
    ("퀵 모드로 실행합니다.", "퀵 모드"),
    ("배열의 shape은 (N, H, W, C)입니다.", "shape"),
    ("**여러분 차례입니다.** 함수를 작성하세요.", "여러분 차례"),
    ("**채널(channel)** 로 나눕니다.", "** 로"),
    ("*패치 병합(patch merging)* 이 줄입니다.", "* 이"),
    ("시프트는 연산을 전혀 하지 않습니다.", "연산을 전혀"),
    ("곱셈-누적 연산 수", "곱셈-누적"),
    ("측정의 노이즈", "노이즈"),
    # issue 44
    ("레시피로 모델을 compile하고 학습합니다.", "compile"),
    ("compile된 모델은 옵티마이저를 저장합니다.", "compile"),
    ("마지막에 얻는 보상은 학습된 모델입니다.", "보상"),
    ("노트북 CPU용 값을 갖습니다.", "노트북 CPU"),
    ("노트북 컴퓨터 사진도 레이블을 받습니다.", "노트북 컴퓨터"),
    ("빈칸이 비어 있으면 라이브러리끼리 비교합니다.", "빈칸이 비어"),
])
def test_a_planted_variant_fails_the_check_naming_the_cell(planted, variant):
    stem = "03_shift_block"
    nb, catalog = _english(stem), json.loads(json.dumps(load_catalog(stem)))
    markdown = next(c for c in nb["cells"] if c["cell_type"] == "markdown" and c["id"] in catalog["cells"])
    assert not build_korean.problems(stem, nb, catalog)
    catalog["cells"][markdown["id"]]["ko"] += "\n\n" + planted
    found = build_korean.problems(stem, nb, catalog)
    assert len(found) == 1 and f"cell {markdown['id']} (markdown): '{variant}'" in found[0], found


def test_a_planted_variant_in_a_code_comment_fails_too():
    stem = "05_training"
    nb, catalog = _english(stem), json.loads(json.dumps(load_catalog(stem)))
    code = next(c for c in nb["cells"] if c["cell_type"] == "code" and c["id"] in catalog["cells"])
    catalog["cells"][code["id"]]["ko"] = catalog["cells"][code["id"]]["ko"].replace("#", "# 기울기:", 1)
    assert any(f"cell {code['id']} (code): '기울기'" in p for p in build_korean.problems(stem, nb, catalog))


@pytest.mark.parametrize("allowed", [
    "Swin의 계층 구조", "다층 퍼셉트론(MLP)", "층화 분할(stratified split)", "형태(shape)", "`x.shape`",
    "십자 모양까지 닿습니다", "```python\nimport keras  # 층\n```", "**채널**(channel)로", "**81.7 %**, Swin-T",
    "**직접 해 보세요.** `call`을 작성하세요", "파라미터도 산술 연산도 없습니다", "스트라이드(stride) 2",
    # issue 44: code and names keep "compile"; a Jupyter notebook is a 노트북
    "`model.compile`로 컴파일합니다", "`compile_for_training`으로 컴파일된 모델", "`jit_compile=True`",
    "이 노트북의 장치에서", "빈칸을 채우지 않았으면", "랩톱 CPU에 맞춘 값",
])
def test_the_allowed_forms_pass(allowed):
    assert build_korean.glossary_violations(build_korean.prose(allowed, "markdown")) == []


def test_a_broken_pattern_in_the_glossary_is_one_line_naming_the_row(tmp_path):
    glossary = tmp_path / "glossary.md"
    glossary.write_text("## Ruled-out variants\n\n| ruled out | use | concept |\n|---|---|---|\n"
                        "| `층(` | 레이어 | layer |\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"glossary.md:5: the ruled-out pattern `층\(` is not a regular"):
        build_korean.glossary_rules(glossary)


@pytest.mark.parametrize("stem", STEMS)
def test_every_bold_in_the_korean_lessons_renders(stem):
    """No literal ** after CommonMark rendering (markdown-it, as myst-nb and Jupyter use): a bold closed
    after punctuation and followed by a Korean letter (`**채널(channel)**로`) stays as asterisks."""
    import re

    markdown_it = pytest.importorskip("markdown_it")
    render = markdown_it.MarkdownIt("commonmark").enable("table").render
    broken = []
    for cell in _korean(stem)["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        html = re.sub(r"<code>.*?</code>|<pre>.*?</pre>", "", render(cell_source(cell)), flags=re.DOTALL)
        broken += [f"cell {cell['id']}: …{html[max(0, m.start() - 30):m.end() + 10]}…"
                   for m in re.finditer(r"\*\*", html)]
    assert not broken, f"{stem}: bold that does not render:\n" + "\n".join(broken)


def test_the_bold_check_sees_a_bold_that_does_not_render():
    markdown_it = pytest.importorskip("markdown_it")
    assert "**" in markdown_it.MarkdownIt("commonmark").render("**채널(channel)**로")
    assert "**" not in markdown_it.MarkdownIt("commonmark").render("**채널**(channel)로")
