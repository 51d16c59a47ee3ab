"""Sphinx extension for the Korean edition (issue 29).

- The Korean pages (notebooks/ko/...) are orphans: the sidebar and previous/next stay the English
  series; the Korean home page lists the Korean lessons.
- A language switch on every page: to its counterpart in the other language (notebooks/<name> <->
  notebooks/ko/<name>, index <-> notebooks/ko/index), or else to the Korean home page.
- Korean search: Sphinx has no Korean tokenizer here, and Korean attaches particles to words
  ("시프트를", "채널의"). The index splits text as for English and adds, for each word with Hangul, its
  prefixes of two or more characters, so a search for "시프트" finds "시프트를".
"""

from __future__ import annotations

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


def setup(app):
    languages["en"] = SearchEnglishAndKorean
    app.connect("doctree-read", _orphans, priority=900)
    app.connect("html-page-context", _switch)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
