"""Alt text from each figure's meaning, not its file name (issue 25).

myst-nb shows a plot stored in a notebook as an image whose alt text is its hashed file name
(`../_images/93a2….png`), which a screen reader reads out. For every image without a real alt text
this extension writes one, from (first that exists):

1. a figure's caption;
2. website/figure_descriptions.json: what the plot shows (its alt text) and what to see in it (its
   caption, issue 44), written by hand, by notebook and cell id, in English and Korean (its "ko"
   entry, for notebooks/ko/; issue 37: "Figure N in <section>" tells a reader nothing);
3. the plot's titles in the cell that drew it (`set_title("…")`, `title("…")`, `suptitle("…")`,
   `title="…"`; f-strings left out);
4. the section the plot sits in: "Figure 2 in 'What the shift gives the next layer'", which
   website/check_site.py reports as alt text that only numbers the figure.

The caption goes on the image node (`shiftvit_caption`), where website/_ext/reading.py reads it;
a plot without a hand-written caption gets none (never its alt text again, never "Plot in ...").
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx

_TITLE = re.compile(r"""(?:set_title|suptitle|\btitle)\s*(?:\(|=)\s*f?(["'])(.+?)\1""")
_FILE_LIKE = re.compile(r"(?:\.(?:png|jpe?g|gif|svg|webp)$)|[0-9a-f]{16,}", re.I)


def needs_alt(alt: str | None, uri: str = "") -> bool:
    alt = (alt or "").strip()
    return not alt or alt == uri or bool(_FILE_LIKE.search(alt))


DESCRIPTIONS = Path(__file__).resolve().parents[1] / "figure_descriptions.json"


@cache
def _descriptions() -> dict:
    return json.loads(DESCRIPTIONS.read_text(encoding="utf-8")) if DESCRIPTIONS.is_file() else {}


@cache
def _cell_ids(source: str) -> list[str]:
    try:
        notebook = json.loads(Path(source).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [cell.get("id", "") for cell in notebook.get("cells", [])]


def _cell(node: nodes.Node) -> nodes.Node | None:
    parent = node.parent
    while parent is not None and "cell" not in parent.get("classes", []):
        parent = parent.parent
    return parent


def entry(description, korean: bool) -> tuple[str, str]:
    """(alt text, caption) of one entry of website/figure_descriptions.json in the page's language:
    a plain string is an alt text without a caption; {"alt", "caption", "ko": {"alt", "caption"}}."""
    if isinstance(description, str):
        return description, ""
    if korean and isinstance(description.get("ko"), dict):
        description = description["ko"]
    return description.get("alt", ""), description.get("caption", "")


def described(app: Sphinx, docname: str, image: nodes.image, seen: dict):
    """The hand-written description of the image (website/figure_descriptions.json), if any."""
    cell = _cell(image)
    if cell is None or cell.get("cell_index") is None:
        return None
    ids = _cell_ids(str(app.env.doc2path(docname)))
    index = cell["cell_index"]
    if index >= len(ids):
        return None
    seen[index] = seen.get(index, 0) + 1
    key = ids[index] if seen[index] == 1 else f"{ids[index]}/{seen[index]}"
    stem = docname.rsplit("/", 1)[-1]
    return _descriptions().get(stem, {}).get(key)


def _cell_code(node: nodes.Node) -> str:
    parent = node.parent
    while parent is not None and "cell" not in parent.get("classes", []):
        parent = parent.parent
    if parent is None:
        return ""
    return "\n".join(block.astext() for block in parent.findall(nodes.literal_block))


def _section_title(node: nodes.Node) -> str:
    parent = node.parent
    while parent is not None and not isinstance(parent, nodes.section):
        parent = parent.parent
    if parent is None or not isinstance(parent[0], nodes.title):
        return ""
    return re.sub(r"^\d+\.\s*", "", parent[0].astext()).strip()


def add_alt_text(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    counts: dict[str, int] = {}
    seen: dict[int, int] = {}
    for image in doctree.findall(nodes.image):
        if not needs_alt(image.get("alt"), image.get("uri", "")):
            continue
        description = described(app, docname, image, seen)
        if description:
            image["alt"], caption = entry(description, docname.startswith("notebooks/ko/"))
            if caption and caption != image["alt"]:
                image["shiftvit_caption"] = caption
            continue
        titles = [m.group(2).strip() for m in _TITLE.finditer(_cell_code(image))]
        titles = list(dict.fromkeys(t for t in titles if t and "{" not in t and "\\" not in t))
        caption = next(iter(image.parent.findall(nodes.caption)), None) if isinstance(image.parent, nodes.figure) else None
        section = _section_title(image) or "this lesson"
        counts[section] = counts.get(section, 0) + 1
        if caption is not None:
            alt = caption.astext()
        elif titles:
            alt = "; ".join(titles)  # its own titles: no caption (issue 44: not "Plot in '<section>'")
        else:
            alt = f"Figure {counts[section]} in '{section}'"
        image["alt"] = alt


def setup(app: Sphinx) -> dict:
    app.connect("doctree-resolved", add_alt_text)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
