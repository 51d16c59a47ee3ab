"""Sphinx extension for the Korean edition (issue 29).

- The Korean pages (notebooks/ko/...) are orphans of the English table of contents, and stand on
  their own (issue 38): their sidebar lists the Korean lessons under the Korean home page, previous /
  next lead through the Korean series, and <html lang="ko">.
- A language switch on every page: to its counterpart in the other language (notebooks/<name> <->
  notebooks/ko/<name>, index <-> notebooks/ko/index), or else to the Korean home page.
- A Korean site, not a translated article (issue 44): on a Korean page every string of the
  interface is Korean. The templates' strings come from Sphinx's own Korean catalogue
  (sphinx/locale/ko) where it has them, and from KOREAN_INTERFACE (the theme's strings, which
  pydata-sphinx-theme has no Korean catalogue for, and a few better words) first; the page's
  `gettext` is swapped for the Korean one, so `_()` and `{% trans %}` in the templates speak Korean.
  The title, the contents' heading, the search field, the header's buttons and the footer follow.
- A Korean search page, notebooks/ko/search.html: the search field of a Korean page opens it, it
  lists Korean pages only (site-fixes.js) and says so in Korean (_static/translations-ko.js: the
  search's own messages, Sphinx's Korean catalogue and the ones it leaves empty).
- Korean search: Sphinx has no Korean tokenizer here, and Korean attaches particles to words
  ("시프트를", "채널의"). The index splits text as for English and adds, for each word with Hangul, its
  prefixes of two or more characters, so a search for "시프트" finds "시프트를".
"""

from __future__ import annotations

import gettext
import html
import json
import re
from pathlib import Path

import sphinx
from sphinx.search import languages
from sphinx.search.en import SearchEnglish

KO_PREFIX = "notebooks/ko/"
KO_SEARCH = f"{KO_PREFIX}search"
HANGUL = re.compile(r"[\uac00-\ud7a3]")
KOREAN_TITLE = "ShiftViT, 한 단계씩"

# The interface's English strings (the theme's templates and buttons, the search's messages, ours) ->
# Korean. website/check_site.py reports any of the English ones on a Korean page.
KOREAN_INTERFACE = {
    "Search": "검색",
    "Search...": "검색...",
    "Contents": "목차",
    "On this page": "이 페이지에서",
    "previous": "이전",
    "next": "다음",
    "previous page": "이전 페이지",
    "next page": "다음 페이지",
    "Back to top": "맨 위로",
    "Skip to main content": "본문으로 건너뛰기",
    "Color mode": "색 모드",
    "Light": "밝게",
    "Dark": "어둡게",
    "System Settings": "시스템 설정",
    "Version warning": "버전 경고",
    "Announcement": "알림",
    "Site navigation": "사이트 탐색",
    "Section Navigation": "섹션 탐색",
    "Breadcrumb": "이동 경로",
    "Home": "홈",
    "Main": "주 메뉴",
    "Page": "페이지",
    "Collapse Sidebar": "사이드바 접기",
    "Expand Sidebar": "사이드바 펼치기",
    "Toggle primary sidebar": "왼쪽 사이드바 열고 닫기",
    "Toggle secondary sidebar": "오른쪽 사이드바 열고 닫기",
    "Download this page": "이 페이지 내려받기",
    "Download source file": "원본 파일 내려받기",
    "Print to PDF": "PDF로 인쇄",
    "Launch interactive content": "대화형으로 실행",
    "Launch on Binder": "Binder에서 실행",
    "Launch on Colab": "Colab에서 실행",
    "Binder logo": "Binder 로고",
    "Colab logo": "Colab 로고",
    "This notebook on GitHub": "이 노트북 (GitHub)",
    "Source repositories": "소스 저장소",
    "By": "만든 이:",
    "© Copyright %(copyright)s.": "© %(copyright)s.",
    "Please activate JavaScript to enable the search functionality.": "검색하려면 JavaScript를 켜 주세요.",
    "Searching": "검색 중",
    "Search Results": "검색 결과",
    "Preparing search...": "검색 준비 중...",
    "Search finished, found ${resultCount} pages matching the search query.":
        "검색을 마쳤습니다. 검색어와 맞는 페이지 ${resultCount}개를 찾았습니다.",
    "Your search did not match any documents. Please make sure that all words are spelled correctly "
    "and that you've selected enough categories.": "검색어와 맞는 페이지가 없습니다. 철자를 확인하거나 다른 낱말로 찾아보세요.",
    "Hide Search Matches": "검색 강조 지우기",
}
KOREAN_AUTHOR = "ShiftViT 튜토리얼 팀"
KOREAN_COPYRIGHT = "ShiftViT 튜토리얼 팀, Apache-2.0"


class KoreanInterface(gettext.NullTranslations):
    """KOREAN_INTERFACE first, then Sphinx's own Korean catalogue; else the English string."""

    def __init__(self):
        super().__init__()
        path = Path(sphinx.__file__).parent / "locale"
        self.add_fallback(gettext.translation("sphinx", str(path), languages=["ko"], fallback=True))

    def gettext(self, message):
        return KOREAN_INTERFACE.get(message) or super().gettext(message)

    def ngettext(self, singular, plural, n):
        return KOREAN_INTERFACE.get(plural if n != 1 else singular) or super().ngettext(singular, plural, n)


KOREAN = KoreanInterface()


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
    if pagename == "search":
        return KO_SEARCH, "ko", "한국어"
    if pagename == KO_SEARCH:
        return "search", "en", "English"
    if pagename == "index":
        return "notebooks/ko/index", "ko", "한국어"
    if pagename.startswith(KO_PREFIX):
        name = pagename[len(KO_PREFIX):]
        return ("index" if name == "index" else f"notebooks/{name}"), "en", "English"
    if pagename.startswith("notebooks/"):
        return f"{KO_PREFIX}{pagename[len('notebooks/'):]}", "ko", "한국어"
    return None


_GLUE = re.compile(r"(?<=[0-9)\]'\"’”%])(?=[\uac00-\ud7a3])|(?<=[\uac00-\ud7a3A-Za-z0-9])(?=[(\[])")
WORD_JOINER = "\u2060"
_VERBATIM = ("literal", "literal_block", "math", "math_block", "raw", "comment")


def glue_particles(app, doctree) -> None:
    """On a Korean page a particle stays with the number, bracket or inline code before it, and an
    opening bracket with its word (issue 44): a word joiner where a line could break. Done on the
    document as it is read, so the headings in the contents and the sidebar keep it too."""
    if not app.env.docname.startswith(KO_PREFIX):
        return
    from docutils import nodes

    for text in list(doctree.findall(nodes.Text)):
        parent = text.parent
        if parent is None or any(type(node).__name__ in _VERBATIM for node in _ancestors(text)):
            continue
        glued = _GLUE.sub(WORD_JOINER, str(text))
        before = parent.index(text) - 1
        if (before >= 0 and isinstance(parent[before], nodes.Inline) and HANGUL.match(glued[:1])
                and parent[before].astext().strip()):
            glued = WORD_JOINER + glued
        if glued != str(text):
            parent.replace(text, nodes.Text(glued))


def _ancestors(node):
    while node is not None:
        yield node
        node = node.parent


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
    if other[0] not in app.env.found_docs and other[0] not in ("search", KO_SEARCH):
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


def _korean_interface(app, pagename, templatename, context, doctree) -> None:
    """Every interface string of a Korean page in Korean (issue 44); its search field opens the
    Korean search page."""
    if not pagename.startswith(KO_PREFIX):
        return
    context["gettext"] = KOREAN.gettext
    context["translate"] = KOREAN.gettext  # sphinx-book-theme's own
    context["ngettext"] = KOREAN.ngettext
    context["docstitle"] = KOREAN_TITLE
    context["theme_toc_title"] = KOREAN_INTERFACE["Contents"]
    context["theme_search_bar_text"] = KOREAN_INTERFACE["Search..."]
    context["author"] = KOREAN_AUTHOR
    context["copyright"] = KOREAN_COPYRIGHT
    if pagename == KO_SEARCH:
        context["title"] = KOREAN_INTERFACE["Search"]
    for button in _all_buttons(context.get("header_buttons", [])):
        for key in ("tooltip", "text"):
            if isinstance(button.get(key), str):
                button[key] = KOREAN_INTERFACE.get(button[key], button[key])
    pathto = context["pathto"]
    context["pathto"] = lambda target, *args, **kwargs: pathto(KO_SEARCH if target == "search" else target, *args, **kwargs)
    script_files = list(context.get("script_files", []))
    translations = _javascript("_static/translations-ko.js")
    if translations is not None:
        context["script_files"] = script_files + [translations]


def _all_buttons(buttons):
    for button in buttons:
        if isinstance(button, dict):
            yield button
            yield from _all_buttons(button.get("buttons", []))


def _javascript(path: str):
    try:  # Sphinx 7.1 and later
        from sphinx.builders.html._assets import _JavaScript
    except ImportError:  # pragma: no cover
        return None
    return _JavaScript(path, priority=500)


def _korean_search_page(app):
    """notebooks/ko/search.html: the search page of the Korean edition."""
    if any(doc.startswith(KO_PREFIX) for doc in app.env.found_docs):
        yield KO_SEARCH, {}, "search.html"


_ATTRIBUTE = re.compile(r'((?:title|aria-label|alt|placeholder)=")([^"<>]+)(")')


def korean_attributes(page: str) -> str:
    """The English labels the theme's templates write without gettext (aria-label="Main",
    title="Toggle primary sidebar", alt="Colab logo"), in Korean."""
    return _ATTRIBUTE.sub(lambda m: m.group(1) + KOREAN_INTERFACE.get(m.group(2), m.group(2)) + m.group(3), page)


def _korean_finish(app, exception) -> None:
    """The Korean pages' hard-coded labels in Korean, and _static/translations-ko.js: the search's
    messages in Korean (Sphinx's catalogue, then ours)."""
    if exception is not None or app.builder.format != "html":
        return
    for page in (Path(app.outdir) / KO_PREFIX).glob("*.html"):
        page.write_text(korean_attributes(page.read_text(encoding="utf-8")), encoding="utf-8")  # atomic: Sphinx's output, a new folder website/build.py swaps in whole
    messages = {}
    catalog = Path(sphinx.__file__).parent / "locale" / "ko" / "LC_MESSAGES" / "sphinx.js"
    text = catalog.read_text(encoding="utf-8") if catalog.is_file() else ""
    found = re.search(r"Documentation\.addTranslations\((\{.*\})\);?\s*$", text, re.S)
    if found:
        messages = {key: value for key, value in json.loads(found.group(1)).get("messages", {}).items() if value}
    messages.update(KOREAN_INTERFACE)
    # ngettext looks the singular up; Korean has one form, with the count ("1개" too)
    plural = "Search finished, found ${resultCount} pages matching the search query."
    messages["Search finished, found one page matching the search query."] = [messages.pop(plural)]
    catalog = {"messages": messages, "plural_expr": "0", "locale": "ko"}
    script = ("if (document.documentElement.lang === \"ko\" && typeof Documentation !== \"undefined\") "
              f"Documentation.addTranslations({json.dumps(catalog, ensure_ascii=False)});\n")
    target = Path(app.outdir) / "_static" / "translations-ko.js"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(script, encoding="utf-8")  # atomic: Sphinx's output, a new folder website/build.py swaps in whole


def setup(app):
    languages["en"] = SearchEnglishAndKorean
    app.connect("html-collect-pages", _korean_search_page)
    app.connect("html-page-context", _korean_interface, priority=950)  # after the theme's buttons
    app.connect("build-finished", _korean_finish)
    app.connect("doctree-read", _orphans, priority=900)
    app.connect("doctree-read", glue_particles, priority=400)  # before the contents are collected (500)
    app.connect("html-page-context", _switch)
    app.connect("html-page-context", _korean_navigation, priority=900)  # after the theme sets them up
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
