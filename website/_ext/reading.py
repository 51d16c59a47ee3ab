"""What a reader sees on a laptop and a phone (issue 37): the rendered page's HTML, adjusted.

- Printed tables in outputs stay in columns: in an output box, the lines that are rows of a table
  (two or more columns apart by runs of spaces) become `<span class="row">`, which never wraps, and
  the box gets `--cols`, the width of its widest row, which readable.css fits the font to.
- Inline code may break after a dot, slash, underscore or comma (`<wbr>`), never inside a word.
- A number keeps its unit: "82.77 %", "10 s", "1.9 MB" are glued with a no-break space; a date
  ("2026-11-25") and a time ("20:03:30") each stay on one line.
- The lessons' plots become numbered figures: `<figure>` with "Figure N." and the alt text as caption.
- The header's GitHub button opens the page's notebook (notebooks/<name>.ipynb on main), not the
  repository's front page.
"""

from __future__ import annotations

import html
import math
import re
import unicodedata

from sphinx.application import Sphinx

ROW_MAX_COLUMNS = 112  # a longer line is prose (a log line), which wraps at spaces
CODE_COLUMNS = 88  # the lessons' code lines are at most this wide (readable.css fits the font to it)
_CODE_PRE = re.compile(r'(<div class="[^"]*"><div class="highlight">)(<pre[^>]*)>(.*?)</pre>', re.S)
_OUTPUT_PRE = re.compile(r'(<div class="output [^"]*"><div class="highlight"><pre)>(.*?)(</pre>)', re.S)
_ROW = re.compile(r"\S {2,}\S")
_INLINE_CODE = re.compile(r'(<span class="pre">)([^<]{13,})(</span>)')
_CODE_BREAK = re.compile(r"([._/,=(])(?=[^\s._/,=()])")
_TAG = re.compile(r"(<[^>]+>)")
_VERBATIM = ("pre", "code", "math", "script", "style", "textarea")
_UNIT = re.compile(r"(\d) (%|‰|(?:ms|s|min|h|kB|MB|GB|px|M|G|k)(?![A-Za-z0-9_]))")
# a plot a cell drew: myst-nb names its file by the content's hash
_DATE = re.compile(r"(?<![\w-])(?:\d{4}-\d\d-\d\d|\d\d:\d\d(?::\d\d)?)(?![\w-])")  # a date, a time
_OUTPUT_IMAGE = re.compile(r'()(<img alt="([^"]*)" src="[^"]*_images/[0-9a-f]{64}\.(?:png|jpe?g|svg)" */>)')


def mark_table_rows(pre: str) -> tuple[str, int]:
    """Wrap the table rows of an output's <pre> content; returns it and its widest row (0: none)."""
    lines = pre.split("\n")
    widths = {}
    for index, line in enumerate(lines):
        plain = line.replace("<span></span>", "")
        if "<" in plain:  # coloured output: left as it is
            continue
        text = html.unescape(plain)
        if _ROW.search(text.strip()) and columns(text) <= ROW_MAX_COLUMNS:
            widths[index] = columns(text)
    if len(widths) < 2:  # one aligned line is not a table
        return pre, 0
    for index in widths:
        prefix = "<span></span>" if lines[index].startswith("<span></span>") else ""
        lines[index] = f'{prefix}<span class="row">{lines[index][len(prefix):]}</span>'
    return "\n".join(lines), max(widths.values())


def fit_output_tables(body: str) -> str:
    def one(match: re.Match) -> str:
        content, columns = mark_table_rows(match.group(2))
        style = f' style="--cols: {columns}"' if columns > CODE_COLUMNS else ""
        return f"{match.group(1)}{style}>{content}{match.group(3)}"

    return _OUTPUT_PRE.sub(one, body)


def columns(text: str) -> int:
    """The width of a line in monospace columns: a Hangul or other wide character is drawn about
    1.7 columns wide (a full em, where a Latin letter takes 0.6 em)."""
    wide = sum(unicodedata.east_asian_width(char) in "WF" for char in text)
    return len(text) + math.ceil(0.7 * wide)


def longest_line(pre: str) -> int:
    return max((columns(html.unescape(re.sub(r"<[^>]+>", "", line))) for line in pre.split("\n")), default=0)


def fit_code(body: str) -> str:
    """A code box whose longest line is wider than the lessons' 88 characters (a solution, a shell
    command in the text) gets its own `--cols`, up to ROW_MAX_COLUMNS; wider still, it scrolls."""

    def one(match: re.Match) -> str:
        if 'class="output' in match.group(1):
            return match.group(0)
        columns = longest_line(match.group(3))
        style = f' style="--cols: {columns}"' if CODE_COLUMNS < columns <= ROW_MAX_COLUMNS else ""
        return f"{match.group(1)}{match.group(2)}{style}>{match.group(3)}</pre>"

    return _CODE_PRE.sub(one, body)


def code_break_points(body: str) -> str:
    return _INLINE_CODE.sub(lambda m: m.group(1) + _CODE_BREAK.sub(r"\1<wbr>", m.group(2)) + m.group(3), body)


def _glue(text: str) -> str:
    text = _UNIT.sub("\\1\u00a0\\2", text)
    return _DATE.sub(lambda m: f'<span class="nowrap">{m.group(0)}</span>', text)


def glue_units(body: str) -> str:
    """A no-break space between a number and its unit, and a date or time kept on one line, in text
    outside code, math and scripts."""
    parts = _TAG.split(body)
    depth = 0
    for index, part in enumerate(parts):
        if index % 2:  # a tag
            name = re.match(r"</?([a-zA-Z0-9]+)", part)
            if name and name.group(1).lower() in _VERBATIM and not part.endswith("/>"):
                depth += -1 if part.startswith("</") else 1
                depth = max(depth, 0)
        elif depth == 0 and part:
            parts[index] = _glue(part)
    return "".join(parts)


def number_figures(body: str) -> str:
    count = 0

    def one(match: re.Match) -> str:
        nonlocal count
        count += 1
        caption = match.group(3)
        return (f'{match.group(1)}<figure class="lesson-figure">{match.group(2)}'
                f'<figcaption><span class="figure-number">Figure {count}.</span> {caption}</figcaption></figure>')

    return _OUTPUT_IMAGE.sub(one, body)


def adjust_body(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if "body" not in context:
        return
    body = fit_code(fit_output_tables(context["body"]))
    body = code_break_points(body)
    body = glue_units(body)
    context["body"] = number_figures(body)


def _buttons(buttons):
    for button in buttons:
        if isinstance(button, dict):
            yield button
            yield from _buttons(button.get("buttons", []))


def notebook_button(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """The GitHub button of a lesson opens its notebook on GitHub (main)."""
    if not pagename.startswith("notebooks/") or pagename.endswith("/index"):
        return
    options = app.config.html_theme_options
    url = f"{options['repository_url']}/blob/{options.get('repository_branch', 'main')}/{pagename}.ipynb"
    for button in _buttons(context.get("header_buttons", [])):
        if button.get("label") == "source-repository-button":
            button["url"] = url
            button["tooltip"] = "This notebook on GitHub"


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", adjust_body, priority=600)  # after the language switch (500)
    app.connect("html-page-context", notebook_button, priority=600)  # after the theme's buttons (501)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
