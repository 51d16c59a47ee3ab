"""The Korean edition on the website (issue 29): notebooks/ko/*.ipynb become pages notebooks/ko/<name>.html.

The Korean notebooks are built from the English ones (scripts/build_korean.py), so they are staged the
same way (website/build.py's stage_notebook). They sit at the same path as in the repository, so the
theme's Colab and Binder buttons open notebooks/ko/<name>.ipynb. A Korean home page,
notebooks/ko/index.md, lists them; website/_ext/korean_edition.py keeps them out of the English sidebar,
puts a language switch on every page that has a counterpart, and makes Korean words searchable.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from project_files import files  # noqa: E402 - files.py without Keras: every write is atomic

KOREAN_DIR = "notebooks/ko"


def korean_paths(repo: Path) -> list[Path]:
    return sorted((repo / KOREAN_DIR).glob("[0-9][0-9]_*.ipynb"))


def _title(path: Path) -> str:
    for cell in json.loads(path.read_text(encoding="utf-8")).get("cells", []):
        if cell.get("cell_type") == "markdown":
            source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            for line in source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return path.stem


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def home_page(paths: list[Path]) -> str:
    rows = "\n".join(
        f"| {path.stem.split('_')[0]} | [{_escape(_title(path))}]({path.name}) |" for path in paths
    )
    return "\n\n".join(
        [
            "# ShiftViT, 한 단계씩 (한국어판)",
            "어텐션 대신 채널을 시프트하는 비전 트랜스포머 **ShiftViT**를 Keras 3로 한 단계씩 만들고 CIFAR-10으로 "
            "학습하는 공개 튜토리얼 시리즈의 한국어판입니다. 각 레슨은 노트북이며, 마지막 실행 때 저장된 출력과 함께 "
            "보여 줍니다(출력은 영어판과 같습니다). 모든 레슨 페이지 위쪽의 언어 전환 링크로 같은 레슨의 영어판으로 "
            "이동할 수 있습니다. [English](../../index.md)",
            "## 레슨",
            "| # | 레슨 |\n|---|---|\n" + rows,
        ]
    ) + "\n"


def stage_korean(stage: Path, repo: Path, staged: set[str], stage_notebook: Callable) -> list[Path]:
    """Stage the Korean lessons and their home page; nothing when the repository has no Korean edition."""
    paths = korean_paths(repo)
    if not paths:
        return []
    staged = staged | {path.relative_to(repo).as_posix() for path in paths}
    for path in paths:
        stage_notebook(path, staged, repo, stage)
    files.atomic_write_text(stage / KOREAN_DIR / "index.md", home_page(paths))
    return paths
