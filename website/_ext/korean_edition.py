"""Sphinx extension for the Korean edition (issue 29).

- The Korean pages (notebooks/ko/...) are orphans of the English table of contents, and stand on
  their own (issue 38): their sidebar lists the Korean lessons under the Korean home page, previous /
  next lead through the Korean series, and <html lang="ko">.
- A language switch on every page: to its counterpart in the other language (notebooks/<name> <->
  notebooks/ko/<name>, index <-> notebooks/ko/index), or else to the Korean home page.
- Korean search: Sphinx has no Korean tokenizer here, and Korean attaches particles to words
  ("시프트를", "채널의"). The index splits text as for English and adds, for each word with Hangul, its
  prefixes of two or more characters, so a search for "시프트" finds "시프트를".
"""

from __future__ import annotations

import html
import re

from sphinx.search import languages
from sphinx.search.en import SearchEnglish

KO_PREFIX = "notebooks/ko/"
HANGUL = re.compile(r"[\uac00-\ud7a3]")


class SearchEnglishAndKorean(SearchEnglish):
    def split(self, input: str) -> list[str]:
        words = super().split(input)
        extra = []
        for word in words:
            if HANGUL.search(word) and len(word) > 2:
                extra += [word[:end] for end in range(2, len(word))]
        return words + extra


def counterpart(pagename: str) -> tuple[str, str, str] | None:
    """(the other page, its language code, the link text) for a page with a counterpart."""
    if pagename == "index":
        return "notebooks/ko/index", "ko", "한국어"
    if pagename.startswith(KO_PREFIX):
        name = pagename[len(KO_PREFIX):]
        return ("index" if name == "index" else f"notebooks/{name}"), "en", "English"
    if pagename.startswith("notebooks/"):
        return f"{KO_PREFIX}{pagename[len('notebooks/'):]}", "ko", "한국어"
    return None


def _orphans(app, doctree) -> None:
    if app.env.docname.startswith(KO_PREFIX):
        app.env.metadata[app.env.docname]["orphan"] = True


def _switch(app, pagename, templatename, context, doctree) -> None:
    """The language switch, on every page (issue 37): to the same page in the other language, or,
    for a page without one (results, search), to the other language's home page."""
    if pagename.startswith(KO_PREFIX):  # <html lang="ko">: screen readers, fonts and line breaking
        context["language"] = "ko"
    other = counterpart(pagename)
    if other is None:
        other = ("notebooks/ko/index", "ko", "한국어")
    if other[0] not in app.env.found_docs:
        return
    target, lang, label = other
    href = app.builder.get_relative_uri(pagename, target)
    here = "한국어" if lang == "en" else "English"
    switch = (
        f'<p class="language-switch">{here} · '
        f'<a class="language-switch-link" href="{href}" hreflang="{lang}" lang="{lang}">{label}</a></p>\n'
    )
    context["language_switch"] = switch
    if "body" in context:
        context["body"] = switch + context["body"]


def korean_lessons(app) -> list[str]:
    return sorted(d for d in app.env.found_docs if d.startswith(KO_PREFIX) and d != f"{KO_PREFIX}index")


def _korean_navigation(app, pagename, templatename, context, doctree) -> None:
    """A Korean page stands on its own (issue 38): its sidebar lists the Korean lessons under the
    Korean home page, and previous / next lead through the Korean series (ko/index, ko/00, ko/01...)."""
    if not pagename.startswith(KO_PREFIX):
        return
    home = f"{KO_PREFIX}index"
    series = [home, *korean_lessons(app)]

    def link(target: str) -> dict:
        return {"link": app.builder.get_relative_uri(pagename, target),
                "title": html.escape(app.env.titles[target].astext())}

    if pagename in series:
        index = series.index(pagename)
        context["prev"] = link(series[index - 1]) if index > 0 else None
        context["next"] = link(series[index + 1]) if index + 1 < len(series) else None
    context["root_doc"] = home
    context["root_title"] = html.escape(app.env.titles[home].astext())
    items = "".join(
        f'<li class="toctree-l1{" current active" if doc == pagename else ""}">'
        f'<a class="reference internal" href="{link(doc)["link"]}">{link(doc)["title"]}</a></li>'
        for doc in series[1:]
    )
    sidebar = (f'<p aria-level="2" class="caption" role="heading"><span class="caption-text">레슨</span></p>'
               f'<ul class="nav bd-sidenav">{items}</ul>')
    context["generate_toctree_html"] = lambda kind="sidebar", *args, **kwargs: (
        sidebar if kind == "sidebar" else ""
    )


def setup(app):
    languages["en"] = SearchEnglishAndKorean
    app.connect("doctree-read", _orphans, priority=900)
    app.connect("html-page-context", _switch)
    app.connect("html-page-context", _korean_navigation, priority=900)  # after the theme sets them up
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
