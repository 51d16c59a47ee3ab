"""Under each lesson (issue 44): where to ask or report, and when its stored outputs were made.

- "Ask or report": links to the repository's discussions (a question) and issues (a mistake, with
  the lesson's name as the new issue's title), read from the theme's `repository_url` (conf.py).
- "Outputs stored": the date and the Keras, backend and Python versions of the run that made the
  outputs shown, read from the notebook's own metadata (`metadata.shiftvit.outputs`, which
  scripts/run_lessons.py writes when it executes a lesson). A notebook without it says so.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from urllib.parse import quote

from sphinx.application import Sphinx

WORDS = {
    "en": {"ask": "Ask or report", "question": "Ask a question", "mistake": "report a mistake",
           "stored": "Outputs stored", "unknown": "Outputs stored: no record of the run that made them",
           "with": "with", "backend": "backend"},
    "ko": {"ask": "질문과 제보", "question": "질문하기", "mistake": "오류 제보하기",
           "stored": "저장된 출력", "unknown": "저장된 출력: 출력을 만든 실행의 기록이 없습니다",
           "with": "실행 환경:", "backend": "백엔드"},
}


def outputs_record(notebook: dict) -> dict:
    """The run that made the stored outputs: {"date", "keras", "backend", "python"} (may be empty)."""
    record = notebook.get("metadata", {}).get("shiftvit", {}).get("outputs", {})
    return record if isinstance(record, dict) else {}


def record_line(record: dict, language: str = "en") -> str:
    words = WORDS[language]
    if not record.get("date"):
        return words["unknown"]
    parts = []
    if record.get("keras"):
        parts.append(f"Keras {record['keras']}")
    if record.get("backend"):
        parts.append(f"{record['backend']} {words['backend']}")
    if record.get("python"):
        parts.append(f"Python {record['python']}")
    return f"{words['stored']}: {record['date']}, {words['with']} {', '.join(parts)}" if parts else f"{words['stored']}: {record['date']}"


def footer(notebook: dict, repository: str, lesson: str, language: str = "en") -> str:
    words = WORDS[language]
    issue = f"{repository}/issues/new?title={quote(f'Lesson {lesson}: ')}"
    return (
        f'<aside class="lesson-footer" lang="{language}">'
        f'<p class="lesson-record">{html.escape(record_line(outputs_record(notebook), language))}</p>'
        f'<p class="lesson-ask">{words["ask"]}: '
        f'<a class="lesson-ask-question" href="{repository}/discussions">{words["question"]}</a> · '
        f'<a class="lesson-ask-issue" href="{issue}">{words["mistake"]}</a></p></aside>\n'
    )


def add_footer(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if "body" not in context or not pagename.startswith("notebooks/") or pagename.endswith(("/index", "/search")):
        return
    source = Path(app.env.doc2path(pagename))
    if source.suffix != ".ipynb":
        return
    try:
        notebook = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        notebook = {}
    language = "ko" if pagename.startswith("notebooks/ko/") else "en"
    repository = app.config.html_theme_options["repository_url"]
    context["body"] += footer(notebook, repository, pagename.rsplit("/", 1)[-1], language)


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", add_footer, priority=650)  # after reading.py (600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
