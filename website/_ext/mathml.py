"""Render math as MathML when the site is built (latex2mathml), instead of MathJax in the browser.

MathML Core is drawn by every current browser (Chromium since 109), so pages need no script and
no font from a CDN. A formula latex2mathml cannot convert fails the build with its source named.
"""

from docutils import nodes
from latex2mathml.converter import convert
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError


def _mathml(latex: str, display: str, node: nodes.Node) -> str:
    try:
        return convert(latex.strip(), display=display)
    except Exception as error:  # latex2mathml raises its own types, and IndexError and such
        where = f"{node.source}:{node.line}" if getattr(node, "source", None) else "a page"
        raise ExtensionError(f"cannot convert the formula {latex!r} in {where} to MathML: {error}") from error


def visit_math(self, node: nodes.Node) -> None:
    self.body.append(f'<span class="math notranslate">{_mathml(node.astext(), "inline", node)}</span>')
    raise nodes.SkipNode


def visit_math_block(self, node: nodes.Node) -> None:
    if node.get("label"):
        self.body.append(f'<span class="eqno">({node["number"]})</span>')
    self.body.append(self.starttag(node, "div", CLASS="math notranslate"))
    self.body.append(_mathml(node.astext(), "block", node))
    self.body.append("</div>\n")
    raise nodes.SkipNode


def setup(app: Sphinx) -> dict:
    app.add_html_math_renderer("mathml", (visit_math, None), (visit_math_block, None))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
