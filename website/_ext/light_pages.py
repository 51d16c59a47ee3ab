"""Light pages (issue 37): what every page downloads besides its own figures stays under 1 MB.

- The theme's icons: pydata-sphinx-theme ships Font Awesome twice, as a 1.56 MB script that swaps
  each `<i class="fa-...">` for an SVG, and as web fonts its CSS draws the same icons from. The script
  is replaced by an empty one and the three web fonts are cut down to the icons the site's pages
  name (a few kB; Font Awesome Free's icons are CC BY 4.0, its fonts SIL OFL 1.1).
- The search index is loaded by search.html only (website/_templates/layout.html).
- Search summaries: the text of every section, written once into _static/search-summaries-data.js,
  which search-summaries.js answers the search's page requests from.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

SECTION_TEXT_LIMIT = 360  # characters of a section's prose kept for its search summary
_FA_CLASS = re.compile(r"\bfa-([a-z0-9-]+)")
_FA_RULE = re.compile(r"((?:\.fa-[a-z0-9-]+,?)+)\{--fa:\"\\([0-9a-f]+)\"")


# --- icons ------------------------------------------------------------------------------------------


def icon_codepoints(css: str, names: set[str]) -> set[int]:
    """The code points of the named icons, from the theme CSS's `.fa-<name>{--fa:"\\f09b"}` rules."""
    found = set()
    for selectors, code in _FA_RULE.findall(css):
        if any(selector in names for selector in re.findall(r"\.fa-([a-z0-9-]+)", selectors)):
            found.add(int(code, 16))
    return found


def subset_icon_fonts(outdir: Path) -> None:
    static = outdir / "_static"
    css_file = static / "styles" / "pydata-sphinx-theme.css"
    fonts = sorted((static / "vendor" / "fontawesome" / "webfonts").glob("*.woff2"))
    script = static / "scripts" / "fontawesome.js"
    if not css_file.is_file() or not fonts:
        return
    names = set()
    for page in outdir.rglob("*.html"):
        names |= set(_FA_CLASS.findall(page.read_text(encoding="utf-8", errors="replace")))
    for js in (static / "scripts").glob("*.js"):  # icons the theme's scripts create
        if js.name != "fontawesome.js":
            names |= set(_FA_CLASS.findall(js.read_text(encoding="utf-8", errors="replace")))
    codepoints = icon_codepoints(css_file.read_text(encoding="utf-8"), names)
    try:
        import brotli  # noqa: F401  (fontTools writes woff2 with it)
        from fontTools import subset
    except ImportError as error:
        raise ExtensionError(f"cutting the icon fonts needs fontTools and brotli ({error}): "
                             "pip install -e '.[site]'") from error

    for font_file in fonts:
        options = subset.Options()
        options.flavor = "woff2"
        options.layout_features = ["*"]
        font = subset.load_font(str(font_file), options)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=codepoints)
        subsetter.subset(font)
        subset.save_font(font, str(font_file), options)
    if script.is_file():
        script.write_text("/* Font Awesome's icon script is not needed: the theme's CSS draws the icons "
                          "from its (subset) web fonts (website/_ext/light_pages.py). */\n", encoding="utf-8")  # atomic: Sphinx's output, a new folder website/build.py swaps in whole
    for source_map in (static / "scripts").glob("fontawesome.js*.map"):
        source_map.unlink()


# --- search summaries -------------------------------------------------------------------------------


def _prose(section: nodes.section) -> str:
    """The section's own paragraphs and list items (not its subsections, tables, code or outputs), as
    sentences on one line (issue 44): each paragraph its own sentence, never glued to the next
    ("google" + "First" made "googleFirst"); a table's cells are not sentences, so tables are left out."""
    parts = []
    for child in section.children:
        if isinstance(child, (nodes.paragraph, nodes.bullet_list, nodes.enumerated_list, nodes.admonition,
                              nodes.block_quote)):
            blocks = [child] if isinstance(child, nodes.paragraph) else list(child.findall(nodes.paragraph))
            for block in blocks:
                text = " ".join(block.astext().split())
                if text:
                    parts.append(text if text[-1] in ".!?:;)…" else text + ".")
    return " ".join(parts)[:SECTION_TEXT_LIMIT]


def collect_summaries(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    sections = []
    for section in doctree.findall(nodes.section):
        text = _prose(section)
        if text and section["ids"]:
            sections.append([section["ids"][0], text])
    if not hasattr(app.env, "shiftvit_summaries"):
        app.env.shiftvit_summaries = {}
    app.env.shiftvit_summaries[docname] = sections


def write_summaries(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.name != "html":
        return
    summaries = getattr(app.env, "shiftvit_summaries", {})
    data = json.dumps(dict(sorted(summaries.items())), ensure_ascii=False, separators=(",", ":"))
    (Path(app.outdir) / "_static" / "search-summaries-data.js").write_text(  # atomic: Sphinx's output, a new folder website/build.py swaps in whole
        f"window.SHIFTVIT_SUMMARIES = {data};\n", encoding="utf-8"
    )
    subset_icon_fonts(Path(app.outdir))


def setup(app: Sphinx) -> dict:
    app.connect("doctree-resolved", collect_summaries)
    app.connect("build-finished", write_summaries)
    # The summaries are gathered while pages are written: written in one process.
    return {"parallel_read_safe": True, "parallel_write_safe": False}
