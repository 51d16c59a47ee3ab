"""What a reader sees on a laptop and a phone (issue 37): the rendered page's HTML, adjusted.

- Printed tables in outputs stay in columns: in an output box, the lines that are rows of a table
  (two or more columns apart by runs of spaces) become `<span class="printed-row">`, an inline span
  that never wraps (issue 44: not "row", Bootstrap's flex grid class, which double-spaced them), and
  the box gets `--cols`, the width of its widest row, which readable.css fits the font to.
- Inline code may break after a dot, slash, underscore or comma (`<wbr>`), never inside a word.
- A number keeps its unit: "82.77 %", "10 s", "1.9 MB" are glued with a no-break space; a date
  ("2026-11-25") and a time ("20:03:30") each stay on one line.
- The lessons' plots become numbered figures (issue 44): `<figure>` whose image is a link to itself
  (a tap opens it full size) and whose caption says what to see (website/_ext/figure_alt.py puts it
  on the image node), "Figure N." / "그림 N." by the page's language; never the alt text again.
- A table whose header row names only its first column (a lesson's time card) gets that name as its
  caption instead of a header row with empty cells.
- Korean text: a particle stays with the word, number or bracket before it, and an opening bracket
  with the word before it (a word joiner, U+2060, where a line could otherwise break).
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
_OUTPUT_IMAGE = re.compile(r'()(<img alt="([^"]*)" src="([^"]*_images/([0-9a-f]{64}\.(?:png|jpe?g|svg)))" */>)')
_EMPTY_HEADER = re.compile(r'(<table[^>]*>)\s*(?:<colgroup>.*?</colgroup>\s*)?<thead>\s*<tr[^>]*>\s*<th[^>]*>(?:<p>)?(.+?)(?:</p>)?</th>'
                           r'(?:\s*<th[^>]*>(?:<p>)?\s*(?:</p>)?</th>)+\s*</tr>\s*</thead>', re.S)
HANGUL = "\uac00-\ud7a3"
# where a line may break in Korean but must not: before a particle after a number or a closing
# bracket ("48개", "(ViT)의"), and before an opening bracket right after a word ("어텐션(attention)")
_KOREAN_GLUE = re.compile(rf"(?<=[0-9)\]}}%'\"’”])(?=[{HANGUL}])|(?<=[{HANGUL}A-Za-z0-9])(?=[(\[])")
_STARTS_KOREAN = re.compile(rf"^[{HANGUL}]")
WORD_JOINER = "\u2060"


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
        lines[index] = f'{prefix}<span class="printed-row">{lines[index][len(prefix):]}</span>'
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


def _glue(text: str, korean: bool = False) -> str:
    text = _UNIT.sub("\\1\u00a0\\2", text)
    if korean:
        text = _KOREAN_GLUE.sub(WORD_JOINER, text)
    return _DATE.sub(lambda m: f'<span class="nowrap">{m.group(0)}</span>', text)


_MATH_THEN_PARTICLE = re.compile(rf'(<span class="math notranslate">(?:(?!</span>).)*</span>)({WORD_JOINER}?[{HANGUL}]+)', re.S)


def keep_math_with_particle(body: str) -> str:
    """An inline formula and the particle after it on one line ("$T_w$개"): Chromium breaks after
    MathML even before a word joiner."""
    return _MATH_THEN_PARTICLE.sub(r'<span class="nowrap">\1\2</span>', body)


def glue_units(body: str, korean: bool = False) -> str:
    """A no-break space between a number and its unit, and a date or time kept on one line, in text
    outside code, math and scripts; in Korean text also a particle to what it follows (after inline
    code, a link or a bold word too: "`compile`을")."""
    parts = _TAG.split(body)
    depth = 0
    closed_inline = False  # the text follows the end of an inline element (</code>, </a>, </strong>)
    for index, part in enumerate(parts):
        if index % 2:  # a tag
            name = re.match(r"</?([a-zA-Z0-9]+)", part)
            if name and name.group(1).lower() in _VERBATIM and not part.endswith("/>"):
                depth += -1 if part.startswith("</") else 1
                depth = max(depth, 0)
            closed_inline = bool(name) and part.startswith("</") and name.group(1).lower() in (
                "code", "a", "strong", "em", "span", "b", "i")
        elif depth == 0 and part:
            glued = _glue(part, korean)
            if korean and closed_inline and _STARTS_KOREAN.match(part):
                glued = WORD_JOINER + glued
            parts[index] = glued
            closed_inline = False
    return "".join(parts)


def number_figures(body: str, captions: dict[str, str] | None = None, korean: bool = False) -> str:
    """Each plot a numbered figure, its image a link to the file (a tap opens it full size), its
    caption the one website/_ext/figure_alt.py chose (by image file), never the alt text again."""
    count = 0
    captions = captions or {}
    word = "그림" if korean else "Figure"
    opens = "그림을 원래 크기로 열기" if korean else "Open the figure full size"

    def one(match: re.Match) -> str:
        nonlocal count
        count += 1
        caption = captions.get(match.group(5), "")
        if caption == html.unescape(match.group(3)):
            caption = ""
        return (f'{match.group(1)}<figure class="lesson-figure">'
                f'<a class="figure-open" href="{match.group(4)}" title="{opens}">{match.group(2)}</a>'
                f'<figcaption><span class="figure-number">{word} {count}.</span> {html.escape(caption)}</figcaption></figure>')

    return _OUTPUT_IMAGE.sub(one, body)


def caption_header_tables(body: str) -> str:
    """A header row with only its first cell filled (the time card) becomes the table's caption."""
    return _EMPTY_HEADER.sub(lambda m: f'{m.group(1)}<caption class="table-title">{m.group(2)}</caption>', body)


def figure_captions(doctree) -> dict[str, str]:
    """image file name -> caption, from the image nodes (website/_ext/figure_alt.py sets them)."""
    if doctree is None:
        return {}
    from docutils import nodes

    return {str(node.get("uri", "")).rsplit("/", 1)[-1]: node["shiftvit_caption"]
            for node in doctree.findall(nodes.image) if node.get("shiftvit_caption")}


def adjust_body(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if "body" not in context:
        return
    korean = pagename.startswith("notebooks/ko/")
    body = fit_code(fit_output_tables(context["body"]))
    body = code_break_points(body)
    body = number_figures(caption_header_tables(body), figure_captions(doctree), korean)
    body = glue_units(body, korean)
    context["body"] = keep_math_with_particle(body) if korean else body


def _buttons(buttons):
    for button in buttons:
        if isinstance(button, dict):
            yield button
            yield from _buttons(button.get("buttons", []))


def notebook_button(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """The GitHub button of a lesson opens its notebook on GitHub (main)."""
    if not pagename.startswith("notebooks/") or pagename.endswith(("/index", "/search")):
        return
    options = app.config.html_theme_options
    url = f"{options['repository_url']}/blob/{options.get('repository_branch', 'main')}/{pagename}.ipynb"
    for button in _buttons(context.get("header_buttons", [])):
        if button.get("label") == "source-repository-button":
            button["url"] = url
            button["tooltip"] = ("이 노트북 (GitHub)" if pagename.startswith("notebooks/ko/")
                                 else "This notebook on GitHub")


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", adjust_body, priority=600)  # after the language switch (500)
    app.connect("html-page-context", notebook_button, priority=600)  # after the theme's buttons (501)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
