"""Alt text from each figure's meaning, not its file name (issue 25).

myst-nb shows a plot stored in a notebook as an image whose alt text is its hashed file name
(`../_images/93a2….png`), which a screen reader reads out. For every image without a real alt text
this extension writes one, from (first that exists):

1. a figure's caption;
2. the plot's titles in the cell that drew it (`set_title("…")`, `title("…")`, `suptitle("…")`,
   `title="…"`; f-strings left out), after the section's title;
3. the section the plot sits in: "Figure 2 in 'What the shift gives the next layer'".
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.application import Sphinx

_TITLE = re.compile(r"""(?:set_title|suptitle|\btitle)\s*(?:\(|=)\s*f?(["'])(.+?)\1""")
_FILE_LIKE = re.compile(r"(?:\.(?:png|jpe?g|gif|svg|webp)$)|[0-9a-f]{16,}", re.I)


def needs_alt(alt: str | None, uri: str = "") -> bool:
    alt = (alt or "").strip()
    return not alt or alt == uri or bool(_FILE_LIKE.search(alt))


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
    for image in doctree.findall(nodes.image):
        if not needs_alt(image.get("alt"), image.get("uri", "")):
            continue
        titles = [m.group(2).strip() for m in _TITLE.finditer(_cell_code(image))]
        titles = list(dict.fromkeys(t for t in titles if t and "{" not in t and "\\" not in t))
        caption = next(iter(image.parent.findall(nodes.caption)), None) if isinstance(image.parent, nodes.figure) else None
        section = _section_title(image) or "this lesson"
        counts[section] = counts.get(section, 0) + 1
        if caption is not None:
            alt = caption.astext()
        elif titles:
            alt = f"Plot in '{section}': " + "; ".join(titles)
        else:
            alt = f"Figure {counts[section]} in '{section}'"
        image["alt"] = alt


def setup(app: Sphinx) -> dict:
    app.connect("doctree-resolved", add_alt_text)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
