"""The lessons' website (website/build.py) and its check in a real browser (website/check_site.py).

* The staging step, without Sphinx: Colab badges become a local image, links to repository files go
  to GitHub, a remote image is refused, the home page takes its lessons from notebooks/*.ipynb (an
  appendix included) and its results from the README.
* The site builds with -W (slow): every lesson has a page, in notebook order in the sidebar, with
  previous / next links; the home page shows the README's results; math is MathML.
* In headless Chromium (slow): the built site passes every check of website/check_site.py, and a copy
  of it with one fault injected per page fails exactly where the fault is, for each kind of fault.

The browser tests need Debian's chromium (`bash run.sh setup` installs it). Without it they skip,
except under `bash run.sh test`, which sets SHIFTVIT_REQUIRE_BROWSER=1 so that CI cannot skip them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import posixpath
import re
import shutil
import sys
from pathlib import Path

import pytest
from fakes import LESSONS, NOTEBOOKS, REPO, cells, load_script, one_line, write_tree

from website import build as site_build
from website import check_site as checker
from website.check_site import colab_url

STEMS = [p.stem for p in LESSONS]
PAGES = [f"notebooks/{stem}.html" for stem in STEMS]  # the lesson pages
BADGE = "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"


# --- staging, no Sphinx --------------------------------------------------------------------------


def _notebook(*markdown: str, outputs: list | None = None) -> dict:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": text} for text in markdown]
    cells.append({"cell_type": "code", "metadata": {}, "source": "1", "execution_count": 1, "outputs": outputs or []})
    return {"cells": cells, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
            "nbformat": 4, "nbformat_minor": 5}


README = """# x
## Lessons
| # | notebook | what you learn | library module |
|---|---|---|---|
| 00 | [overview](notebooks/00_intro.ipynb) | the idea | `lesson` |
<!-- results-table -->
**Results.** See [the benchmarks](benchmarks/README.md).
| what | result |
|---|---|
| `cpu` preset | test top-1 **79.82 %** |
## The library
"""  # (no blank lines: the staging reads the sections by their headings and the marker)


@pytest.fixture
def tiny_repo(tmp_path):
    intro = _notebook(f"# 00 · Intro\n\n{BADGE}({colab_url('00_intro')})", "See [the appendix](08_appendix_x.ipynb) "
                      "and [the shift](../shiftvit_lib/shift.py).")
    korean = _notebook("# 00 · 소개")
    appendix = _notebook(  # the badge as HTML
        f'# 08 · Appendix\n\n<a href="{colab_url("08_appendix_x")}"><img src="https://colab.research.google.com/assets/colab-badge.svg" alt="Open In Colab"/></a>'
    )
    files = {"benchmarks/README.md": "b", "README.md": README, "notebooks/00_intro.ipynb": json.dumps(intro),
             "notebooks/08_appendix_x.ipynb": json.dumps(appendix),
             "notebooks/ko/00_intro.ipynb": json.dumps(korean)}
    return write_tree(tmp_path / "repo", {name: text.encode() for name, text in files.items()})


def test_staging_points_badges_and_files_where_they_work_and_the_home_page_lists_every_notebook(tiny_repo, tmp_path):
    stage = tmp_path / "stage"
    found = site_build.stage_sources(stage, tiny_repo)
    assert [lesson.stem for lesson in found] == ["00_intro", "08_appendix_x"]  # found by glob, in order
    assert [lesson.title for lesson in found] == ["00 · Intro", "08 · Appendix"]
    assert (stage / site_build.BADGE_ASSET).is_file()
    for lesson in found:
        text = (stage / "notebooks" / f"{lesson.stem}.ipynb").read_text()
        assert "colab-badge.svg" in text and "https://colab.research.google.com/assets" not in text
        assert f"(../_assets/colab-badge.svg)]({colab_url(lesson.stem)})" in text  # the link is kept
    intro = (stage / "notebooks" / "00_intro.ipynb").read_text()
    assert "[the appendix](08_appendix_x.ipynb)" in intro  # a lesson: Sphinx links the page
    assert f"[the shift]({site_build.GITHUB}/blob/main/shiftvit_lib/shift.py)" in intro
    home = (stage / "index.md").read_text()  # the lessons from notebooks/*.ipynb, the results from the README
    assert "[00 · Intro](notebooks/00_intro.ipynb) | the idea |" in home
    assert "[08 · Appendix](notebooks/08_appendix_x.ipynb) |  |" in home  # not in the README's table
    assert f"[Colab]({colab_url('08_appendix_x')})" in home
    assert "test top-1 **79.82 %**" in home and "## The library" not in home
    assert f"[the benchmarks]({site_build.GITHUB}/blob/main/benchmarks/README.md)" in home
    assert ":caption: Lessons\n\nnotebooks/00_intro\n" in home
    assert ":caption: Appendix\n\nnotebooks/08_appendix_x\n" in home
    # the Korean lessons at their repository paths, with their own home page
    assert cells(stage / "notebooks" / "ko" / "00_intro.ipynb")[0]["source"] == "# 00 · 소개"
    korean_home = (stage / "notebooks" / "ko" / "index.md").read_text(encoding="utf-8")
    assert "| 00 | [00 · 소개](00_intro.ipynb) |" in korean_home and "](../../index.md)" in korean_home


HTML_SCRIPT = {"output_type": "display_data", "metadata": {},
               "data": {"text/html": '<script src="https://cdn.example.org/x.js"></script>'}}


@pytest.mark.parametrize("notebook, readme, refused", [
    (_notebook("# 01\n\n![plot](https://example.org/plot.png)"), README,
     r"01_x.ipynb loads from the internet.*example.org/plot.png"),  # a remote image
    (_notebook("# 01", outputs=[HTML_SCRIPT]), README, r"cdn.example.org/x.js"),  # a remote script
    (_notebook("# 01"), README.replace(site_build.RESULTS_MARKER, ""), "results-table"),  # the marker is required
    # an image that leaves the checkout: by climbing out, by an absolute path, through a link
    *[(_notebook(f"# 01\n\n![plot]({target})"), README, f"{re.escape(target)}.*outside the checkout")
      for target in ("../../outside.png", "/OUTSIDE/outside.png", "link.png")],
], ids=lambda value: value if isinstance(value, str) and len(value) < 60 else None)
def test_a_remote_file_an_image_outside_the_checkout_or_a_readme_without_results_is_one_line(
        tiny_repo, tmp_path, notebook, readme, refused):
    (tmp_path / "outside.png").write_bytes(b"not the project's")
    (tiny_repo / "notebooks" / "link.png").symlink_to(tmp_path / "outside.png")
    text = json.dumps(notebook).replace("/OUTSIDE", str(tmp_path))
    write_tree(tiny_repo, {"notebooks/01_x.ipynb": text.encode(), "README.md": readme.encode()})
    with pytest.raises(site_build.SiteError) as error:
        site_build.stage_sources(tmp_path / "stage", tiny_repo)
    assert re.search(refused.replace("/OUTSIDE", str(tmp_path)), one_line(error.value)), error.value
    assert [p.name for p in (tmp_path / "stage").rglob("*.png")] == []


def test_the_site_and_the_korean_build_name_a_cut_short_notebook_or_a_cell_without_id(tmp_path):
    build_korean = load_script("scripts/build_korean.py")
    cut = tmp_path / "00_cut.ipynb"
    cut.write_text('{"cells": [{"cell_type": "markdown", "id": "a", "source": "# T')
    no_id = tmp_path / "01_no_id.ipynb"
    no_id.write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": "# T", "metadata": {}}]}))
    with pytest.raises(site_build.SiteError, match="cut short") as refused:
        site_build.read_notebook(cut)
    assert str(cut) in one_line(refused.value)
    assert site_build.read_notebook(no_id)["cells"]  # the site needs no ids (nbformat adds them)
    for path, fragment in ((cut, "cut short"), (no_id, "cell 0 has no id")):
        with pytest.raises(ValueError, match=fragment) as refused:
            build_korean.load_notebook(path)
        assert str(path) in one_line(refused.value)


# --------------------------------------------------------------------------- what a build may replace
def _build_folder(folder: Path, page: str = "old") -> Path:
    with site_build.output_folder(folder) as new:
        (new / "sub").mkdir()
        (new / "sub" / "page.html").write_text(page)
    return folder


# The folder as found (missing, empty, as the last build left it), and a file of the user's in it: one
# of theirs, a CNAME added to a copy, a page edited, the old marker. With such a file it is refused.
@pytest.mark.parametrize(("state", "extra"), [
    ("missing", None), ("empty", None), ("last build", None), ("empty", "thesis.tex"),
    ("last build", "CNAME"), ("last build", "sub/page.html"), ("empty", ".made-by-shiftvit"),
])
def test_a_build_replaces_only_a_folder_as_its_last_build_left_it(tmp_path, state, extra):
    folder = tmp_path / "site"
    if state == "empty":
        folder.mkdir()
    if state == "last build":
        shutil.copytree(_build_folder(tmp_path / "built"), folder)  # cp -r keeps the manifest
    if extra:
        (folder / extra).write_text("mine, edited")
        with pytest.raises(site_build.SiteError, match="will not replace") as error:
            _build_folder(folder, "new")
        assert str(folder) in one_line(error.value) and (folder / extra).read_text() == "mine, edited"
    else:
        assert (_build_folder(folder, "new") / "sub" / "page.html").read_text() == "new"
        assert sorted(p.name for p in folder.iterdir()) == [site_build.MANIFEST, "sub"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no new/old folder left


def test_a_broken_notebook_leaves_the_last_site_whole(tiny_repo, tmp_path):
    builds = tmp_path / "builds"
    site = _build_folder(builds / "site")
    (tiny_repo / "notebooks" / "01_broken.ipynb").write_text('{"cells": [')
    with pytest.raises(site_build.SiteError, match="01_broken.ipynb"):
        site_build.build(site, builds / "stage", tiny_repo)
    assert (site / "sub" / "page.html").read_text() == "old" and sorted(p.name for p in builds.iterdir()) == ["site"]


@pytest.mark.parametrize("where, flag", [
    ("checkout", "--out"), ("ancestor", "--out"), ("ancestor", "--stage"), ("home", "--out"), ("root", "--out"),
    ("mount point", "--stage"), ("a folder of yours", "--out"), ("a folder of yours", "--stage"),
])
def test_the_build_refuses_the_checkout_its_ancestors_home_root_a_mount_point_and_a_folder_of_yours(
        tmp_path, monkeypatch, capsys, where, flag):
    home, mine, other = tmp_path / "home" / "me", tmp_path / "mydocs", tmp_path / "other"
    write_tree(tmp_path, {"home/me/.profile": b"", "mydocs/thesis.tex": b"work"})
    monkeypatch.setenv("HOME", str(home))
    folder = {"checkout": REPO, "ancestor": REPO.parent, "home": home, "root": Path("/"),
              "mount point": Path("/proc"), "a folder of yours": mine}[where]
    assert site_build.main([flag, str(folder), "--stage" if flag == "--out" else "--out", str(other)]) == 1
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"error: website/build.py will not {'replace' if folder == mine else 'write into'} "
                            f"{folder}") and "\n" not in error, error
    assert (mine / "thesis.tex").read_text() == "work" and home.is_dir() and REPO.is_dir()
    assert not other.exists() and not Path(f"{folder}-doctrees").exists()  # nothing made


def test_expected_gifs_come_from_the_stored_outputs():
    lessons = checker.expected_lessons(NOTEBOOKS)
    assert [lesson.stem for lesson in lessons] == STEMS
    for lesson, found in zip(lessons, site_build.lessons(REPO)):
        assert sum(lesson.gifs.values()) == len(found.gifs)
        assert all(gif.startswith(b"GIF8") for gif in found.gifs)
    assert any(lesson.gifs for lesson in lessons)  # the Manim animations are in the lessons


# --- what a reader sees, without a browser (issue 44) ---------------------------------------------

EXT = REPO / "website" / "_ext"


def _ext(name: str):
    if str(EXT) not in sys.path:
        sys.path.insert(0, str(EXT))
    pytest.importorskip("sphinx", reason="the site's packages: pip install -e '.[site]'")
    return importlib.import_module(name)


def _theme_class_selectors() -> set[str]:
    """Every class the theme's style sheets (Bootstrap's grid included) style."""
    specs = [importlib.util.find_spec(package) for package in ("pydata_sphinx_theme", "sphinx_book_theme")]
    if None in specs:
        pytest.skip("the site's packages are not installed: pip install -e '.[site]'")
    sheets = [css.read_text(encoding="utf-8", errors="replace") for spec in specs
              for css in Path(spec.origin).parent.rglob("*.css")]
    return {name for sheet in sheets for name in re.findall(r"\.(-?[A-Za-z_][\w-]*)", sheet)}


def _our_classes() -> set[str]:
    """The classes the site's own code writes into a page (extensions, templates, scripts)."""
    sources = [*EXT.glob("*.py"), *(REPO / "website" / "_templates").glob("*.html"),
               *(REPO / "website" / "_static").glob("*.js")]
    values = [value for source in sources
              for value in re.findall(r'class(?:Name)?\s*=\s*\\?"([^"{}\\]+)\\?"', source.read_text(encoding="utf-8"))]
    # less the theme's own and Sphinx's, used as they mean them
    return {name for value in values for name in value.split()} - {"reference", "internal", "caption", "nav",
            "caption-text", "bd-sidenav", "toctree-l1", "current", "active", "highlight", "bd-search-container",
            "math", "eqno", "output"}


def test_no_class_of_ours_is_one_the_theme_styles():
    # issue 44: span.row, Bootstrap's flex grid class, double-spaced every printed table
    ours, theirs = _our_classes(), _theme_class_selectors()
    assert "printed-row" in ours and "row" in theirs  # the check sees both sides
    assert not ours & theirs, f"classes of ours the theme styles: {sorted(ours & theirs)}"


def test_printed_tables_formulas_and_figures_read_well():
    reading = _ext("reading")
    # a printed table becomes inline rows, and a header with empty cells a caption
    marked, widest = reading.mark_table_rows("name   value\nalpha  1\nbeta   22")
    assert marked.count('<span class="printed-row">') == 3 and widest == 12
    card = ('<table class="table"><thead><tr class="row-odd"><th class="head"><p>Running this lesson</p></th>'
            '<th class="head"><p></p></th></tr></thead><tbody><tr><td>Quick</td><td>1 min</td></tr></tbody></table>')
    titled = reading.caption_header_tables(card)
    assert '<caption class="table-title">Running this lesson</caption>' in titled and "<thead>" not in titled
    full = card.replace("<p></p>", "<p>time</p>")
    assert reading.caption_header_tables(full) == full  # a real header row stays
    # an inline formula keeps its particle
    body = '<span class="math notranslate"><math><mi>T</mi></math></span>\u2060개이고'
    assert reading.keep_math_with_particle(body) == f'<span class="nowrap">{body}</span>'
    # a figure links to its image, and its caption is not its alt text
    name = "a" * 64 + ".png"
    body = f'<img alt="A chart" src="../_images/{name}" />'
    figure = reading.number_figures(body, {name: "The loss falls."}, korean=True)
    assert f'<a class="figure-open" href="../_images/{name}"' in figure
    assert "그림 1.</span> The loss falls.</figcaption>" in figure
    assert "</span> </figcaption>" in reading.number_figures(body, {name: "A chart"})  # never the alt again


@pytest.mark.parametrize("html, glued", [
    ("채널 48개를 건드립니다", "48\u2060개"),
    ("어텐션(attention)을", "어텐션\u2060(attention)\u2060을"),
    ("<code>compile</code>을 부릅니다", "</code>\u2060을"),
    ("<a href='x'>레슨 08</a>의 부록", "</a>\u2060의"),
])
def test_korean_particles_are_glued_to_what_they_follow(html, glued):
    reading = _ext("reading")
    assert glued in reading.glue_units(html, korean=True)
    assert "\u2060" not in reading.glue_units(html, korean=False)


def test_every_page_has_a_korean_counterpart_and_korean_words_are_searchable_without_their_particles():
    korean_edition = _ext("korean_edition")
    # issue 44: the search page has a Korean twin, notebooks/ko/search.html
    for english in [f"notebooks/{stem}" for stem in STEMS] + ["index", "search"]:
        korean = "notebooks/ko/" + english.removeprefix("notebooks/")
        assert korean_edition.counterpart(english) == (korean, "ko", "한국어")
        assert korean_edition.counterpart(korean) == (english, "en", "English")
    assert korean_edition.counterpart("results") is None
    words = korean_edition.SearchEnglishAndKorean({}).split("시프트를 채널의 ShiftViT")
    assert {"시프트", "채널", "시프트를", "ShiftViT"} <= set(words)


def _plots(stem: str) -> list[str]:
    """The keys of the plots a lesson stores: cell id, or '<id>/<n>' for a cell's n-th image."""
    keys = []
    for cell in cells(NOTEBOOKS / f"{stem}.ipynb"):
        images = [o for o in cell.get("outputs", []) if any(k.startswith("image/") and k != "image/gif" for k in o.get("data", {}))]
        keys += [cell["id"] if n == 0 else f"{cell['id']}/{n + 1}" for n in range(len(images))]
    return keys


def test_every_plot_has_an_alt_text_and_a_caption_in_both_languages_and_the_page_shows_its_own():
    descriptions = json.loads((REPO / "website" / "figure_descriptions.json").read_text(encoding="utf-8"))
    for stem in STEMS:
        for key in _plots(stem):
            entry = descriptions.get(stem, {}).get(key)
            assert isinstance(entry, dict), f"{stem} {key}: no alt text and caption in website/figure_descriptions.json"
            for language in (entry, entry.get("ko", {})):
                alt, caption = language.get("alt", ""), language.get("caption", "")
                assert alt and caption and caption != alt and not caption.startswith("Plot in"), (stem, key, language)
            assert all(re.search("[\uac00-\ud7a3]", entry["ko"][part]) for part in ("alt", "caption")), (stem, key)
    figure_alt = _ext("figure_alt")  # the figure extension takes the page's language
    entry = {"alt": "A chart", "caption": "It falls.", "ko": {"alt": "차트", "caption": "떨어집니다."}}
    assert figure_alt.entry(entry, korean=False) == ("A chart", "It falls.")
    assert figure_alt.entry(entry, korean=True) == ("차트", "떨어집니다.")
    assert figure_alt.entry("Only an alt text", korean=True) == ("Only an alt text", "")


def test_each_lesson_says_where_to_ask_and_which_run_made_its_outputs():
    footer = _ext("lesson_footer")
    repository = "https://github.com/o/r"
    notebook = {"metadata": {"shiftvit": {"outputs": {"date": "2026-11-26", "keras": "3.15.1",
                                                       "backend": "tensorflow", "python": "3.11.7"}}}}
    english = footer.footer(notebook, repository, "02_shift_operation")
    assert "Outputs stored: 2026-11-26, with Keras 3.15.1, tensorflow backend, Python 3.11.7" in english
    assert f'href="{repository}/discussions"' in english and f'href="{repository}/issues/new?title=Lesson%2002' in english
    assert "저장된 출력: 2026-11-26" in footer.footer(notebook, repository, "02", "ko")
    assert "no record of the run" in footer.footer({}, repository, "02")
    for path in [*LESSONS, *sorted((NOTEBOOKS / "ko").glob("[0-9][0-9]_*.ipynb"))]:
        record = footer.outputs_record(json.loads(path.read_text(encoding="utf-8")))
        assert {"date", "keras", "backend", "python"} <= set(record), f"{path.name}: no metadata.shiftvit.outputs"


def test_every_interface_string_the_check_looks_for_has_its_korean_and_the_check_needs_a_korean_font(monkeypatch):
    korean_edition = _ext("korean_edition")
    ours = {"Copy", "Copied", "Copy this code", "Ask or report", "Outputs stored", "Open the figure full size",
            "ShiftViT, step by step"}  # written in Korean by site-fixes.js, lesson_footer.py, reading.py, the title
    missing = [s for s in checker.THEME_STRINGS if s not in ours and not korean_edition.KOREAN.gettext(s) != s]
    assert not missing, f"no Korean for: {missing}"
    page = '<button title="Toggle primary sidebar"></button><nav aria-label="Main"><img alt="Colab logo">'
    assert korean_edition.korean_attributes(page) == ('<button title="왼쪽 사이드바 열고 닫기"></button>'
                                                     '<nav aria-label="주 메뉴"><img alt="Colab 로고">')
    monkeypatch.setattr(checker, "korean_fonts", lambda: [])
    with pytest.raises(checker.KoreanFontMissing, match="fonts-nanum"):
        checker.require_korean_font()


# --- the built site ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def built_site(tmp_path_factory):
    for module in ("sphinx", "myst_nb", "sphinx_book_theme", "latex2mathml"):
        pytest.importorskip(module, reason="the site's packages: pip install -e '.[site]'")
    root = tmp_path_factory.mktemp("site")
    site_build.build(root / "site", root / "site-src")
    return root / "site"


def _text(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html).replace("\u00a0", " ")  # a number and its unit are glued (issue 37)


@pytest.mark.slow
def test_every_lesson_has_a_page_in_order_and_the_home_and_results_pages_show_the_records(built_site):
    home = (built_site / "index.html").read_text()
    sidebar = re.search(r'<nav class="[^"]*bd-docs-nav.*?</nav>', home, re.S).group(0)
    assert [h for h in re.findall(r'href="([^"#]+\.html)"', sidebar) if h.startswith("notebooks/")] == PAGES
    order = ["index.html", *PAGES, None]
    for index, page in enumerate(PAGES, start=1):  # previous / next links
        html = (built_site / page).read_text()
        for side, expected in (("left-prev", order[index - 1]), ("right-next", order[index + 1])):
            link = re.search(rf'class="{side}"\s+href="([^"]+)"', html)
            assert (link and posixpath.normpath(posixpath.join("notebooks", link.group(1)))) == expected, page
    figures = re.findall(r"\d+(?:\.\d+)? %", site_build.readme_results((REPO / "README.md").read_text()))
    assert figures and all(figure in _text(home) for figure in figures)  # every figure of the README's table
    # (a Colab link for every lesson: the staging test, and the browser check's colab_links_checked)
    for name in ("attention_vs_shift.svg", "time_to_accuracy.svg"):  # the home page's charts
        image = re.search(rf'<img[^>]*src="(_images/{re.escape(name)})"[^>]*>', home)
        assert image and 'alt="Lesson 0' in image.group(0), name
        file = built_site / image.group(1)
        assert 0 < file.stat().st_size < 1_000_000 and file.read_text().lstrip().startswith("<?xml")
    assert 'href="results.html"' in home
    results = _text((built_site / "results.html").read_text())  # every recorded run
    for run in sorted((REPO / "results").glob("*/run.json")):
        assert run.parent.name in results
        assert f"{100 * json.loads(run.read_text())['test']['accuracy']:.2f} %" in results
    for record in sorted((REPO / "results").glob("*.json")):
        for row in json.loads(record.read_text()).get("rows", []):
            assert f"{100 * row['test_top1']:.2f} %" in results


@pytest.mark.slow
def test_every_page_shows_math_as_mathml_loads_nothing_from_outside_is_light_and_offers_its_notebook(built_site):
    formulas = 0  # Issue 25: the shift, the block, the schedule, AdamW, the parameter and receptive-field counts
    for page in PAGES:
        html, stem = (built_site / page).read_text(), Path(page).stem
        lesson = cells(NOTEBOOKS / f"{stem}.ipynb")
        markdown = "".join("".join(c["source"]) for c in lesson if c["cell_type"] == "markdown")
        if re.search(r"\$[^$\s][^$]*\$", markdown):
            assert "<math" in html, page
        # each formula cell (id math-...) is a displayed MathML block
        maths = [cell for cell in lesson if cell.get("id", "").startswith("math-")]
        assert len(re.findall(r'<div class="math notranslate[^"]*"[^>]*>\s*<math', html)) >= len(maths), page
        formulas += len(maths)
        # (nothing loaded from outside: the browser check's external requests)
        assert not re.search(r"<script[^>]*mathjax", html, re.I), page  # math needs no script
        # the search index is loaded by the search page only (issue 37)
        assert "searchindex.js" not in html, page
        # issue 37: the GIFs are files, not base64 text in the pages; the GitHub button opens the page's
        # notebook, the download is the repository's notebook
        assert "data:image/gif" not in html and f"{site_build.GITHUB}/blob/main/notebooks/{stem}.ipynb" in html, page
        assert f'href="../_sources/notebooks/{stem}.ipynb"' in html
    assert formulas >= 6, formulas
    # (site-fixes.js's copy buttons and search-summaries.js's summaries: the browser check's faults)
    # Issue 37: Font Awesome's 1.56 MB script is gone, its fonts cut to the icons in use; the Korean
    # notebooks are downloads too (their badge path works); a language switch on the results and search pages.
    assert (built_site / "_static" / "scripts" / "fontawesome.js").stat().st_size < 1000
    for font in (built_site / "_static" / "vendor" / "fontawesome" / "webfonts").glob("*.woff2"):
        assert font.stat().st_size < 20_000, font
    assert 0 < (built_site / "_static" / "fonts" / "shiftvit-math.woff2").stat().st_size < 150_000
    assert list((built_site / "_gifs").glob("*.gif"))
    for notebook in [*LESSONS, *sorted((NOTEBOOKS / "ko").glob("[0-9][0-9]_*.ipynb"))]:
        download = built_site / "_sources" / notebook.relative_to(REPO)
        assert download.read_bytes() == notebook.read_bytes(), notebook.name
    for page in ("results.html", "search.html"):
        assert 'class="language-switch-link"' in (built_site / page).read_text(), page


# --- in the browser ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium():
    executable = checker.find_chromium()
    if executable is None:
        message = "Chromium is not installed (Debian: apt-get install chromium; bash run.sh setup does)"
        if os.environ.get("SHIFTVIT_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return executable


@pytest.mark.slow
def test_the_site_passes_every_browser_check(built_site, chromium):
    shots = REPO / "build" / "site-shots"  # for a person to look at (issue 25)
    report = checker.check_site(built_site, NOTEBOOKS, chromium, shots=shots)
    assert not report.problems, "\n".join(map(str, report.problems))
    assert set(PAGES) <= set(report.pages) and {"index.html", "search.html"} <= set(report.pages)
    # the Korean pages show the same GIFs
    lessons = checker.expected_lessons(NOTEBOOKS) + checker.korean_lessons(NOTEBOOKS)
    assert report.gifs_checked == sum(sum(x.gifs.values()) for x in lessons) > 0
    assert report.colab_links_checked >= 2 * len(PAGES)  # a lesson's button, and the home page's table
    assert set(PAGES) <= set(report.search_hits)
    assert report.links_checked > 10 * len(report.pages)
    # Issue 25: at 1280 px no code or output box scrolls sideways, no table hides a column.
    assert report.boxes_checked > 100 and report.tables_checked > 0 and report.images_checked > 10
    # Issue 37: code lines measured, every page weighed (the search with its summaries too)
    assert report.code_boxes_checked > 100
    assert set(report.pages) <= set(report.weights) and "search.html?q=shift" in report.weights
    # home, lessons 02, 05 and 07, the results page and Korean lesson 02, at 1280 and 390 px (and
    # the home page's charts)
    assert len(report.shots) == 14 and all((shots / name).stat().st_size > 0 for name in report.shots)


# Each fault goes into a page of a copy of the site; the checker must report it there, with that kind,
# and report nothing on the pages left intact. A fault is (the kind the checker must report, the kinds
# it may report besides on that page, where it goes, how the page is changed): where is a page, a page
# found below (gif: a lesson with GIFs, image: the one page showing an image, printed: a page printing
# a table, figure: one with figures), or None (the lesson pages in turn), "ko:" before either for the
# Korean twin; the change is a function of a page's HTML and lesson, or None for a file every page loads.
def _append(snippet: str):
    return lambda html, stem: html.replace("</body>", f"{snippet}\n</body>", 1)


def _in_article(snippet: str):
    return lambda html, stem: html.replace("</article>", f"{snippet}\n</article>", 1)


def _sub(pattern: str, replacement: str, count: int = 0, flags: int = 0):
    return lambda html, stem: re.sub(pattern, replacement, html, count=count, flags=flags)


SVG = "data:image/svg+xml,%3Csvg xmlns=%27http://www.w3.org/2000/svg%27 width=%2710%27 height=%2710%27/%3E"
LONG_LINE = "x = " + " + ".join(["1"] * 200)


def _caption(text: str):
    return _in_article(f'<figure class="lesson-figure"><a class="figure-open" href="{SVG}"><img src="{SVG}" '
                       f'alt="A chart of the loss"></a><figcaption><span class="figure-number">Figure 9.</span> '
                       f"{text}</figcaption></figure>")


FAULTS = {
    "console error": ("console", {"file-console"}, "index.html",  # from file:// as well
                      _append('<script>console.error("injected fault")</script>')),
    "uncaught exception": ("page-error", {"file-console"}, None, _append('<script>throw new Error("injected fault")</script>')),
    # and Chromium's own 404 error; the figure's link to its image (issue 44) is broken too
    "missing image": ("image", {"console", "file-console", "link"}, "image", None),
    "missing image, on the Korean page": ("image", {"console", "file-console", "link"}, "ko:image", None),  # issue 29
    "missing GIF": ("gif", set(), "gif", _sub(r'<img\s[^>]*src="(?:data:image/gif[^"]*|[^"]*\.gif)"[^>]*>', "")),
    "broken internal link": ("link", set(), None, _append('<a href="no_such_lesson.html">next</a>')),
    "broken anchor": ("anchor", set(), None, _append('<a href="#no-such-section">up</a>')),
    "Colab link to another lesson": ("colab", set(), None, lambda html, stem: html.replace(
        colab_url(stem), colab_url(next(other for other in STEMS if other != stem)))),
    "Colab link on master": ("colab", set(), None, lambda html, stem: html.replace(
        colab_url(stem), colab_url(stem).replace("/blob/main/", "/blob/master/"))),
    "script from a CDN": ("external-request", {"console", "file-console"}, None,  # offline: it fails to load too
                          _append('<script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"></script>')),
    "too wide for a phone": ("phone", set(), None, _append('<div style="width: 1600px; height: 2px"></div>')),
    "search term missing from the index": ("search", set(), "search.html", None),
    # issue 44
    "search term missing from the index, searched from the Korean search page": (
        "search", set(), "notebooks/ko/search.html", None),
    # the Korean edition (issue 29)
    "no language switch": ("language-switch", set(), None, _sub(r'<p class="language-switch">.*?</p>', "", flags=re.S)),
    # issue 25: what a reader sees
    "code box scrolls sideways": ("box-scrolls", set(), None, _in_article(
        f'<div class="cell_output"><pre style="white-space: pre; overflow-x: auto">{LONG_LINE}</pre></div>')),
    "table hides a column": ("table-clipped", set(), None, _in_article(
        '<div style="overflow-x: auto; max-width: 300px"><table><tr><td>what</td>'
        f'<td style="white-space: nowrap">{"result " * 80}</td></tr></table></div>')),
    "image with a file name as alt text": ("alt-text", set(), None, _in_article(
        f'<img src="{SVG}" alt="../_images/0123456789abcdef0123456789abcdef.png">')),
    "console error only over file://": ("file-console", set(), None, _append(
        '<script>if (location.protocol === "file:") console.error("injected fault under file://")</script>')),
    # without search-summaries.js every result's page is fetched: its summary starts with the menu,
    # the search downloads too much, and from file:// the fetches fail
    "search summaries from the whole page": ("search-summary", {"file-console", "weight"}, "search.html", None),
    # issue 37: what a reader sees, at 1280 and 390 px
    "code line wraps at 1280 px": ("code-wraps", set(), None, _in_article(
        '<div class="highlight-python notranslate"><div class="highlight"><pre style="white-space: pre-wrap">'
        f"{LONG_LINE}</pre></div></div>")),
    "word broken inside": ("broken-word", set(), None, _in_article(
        '<p style="width: 4em; overflow-wrap: anywhere">Incomprehensibilities</p>')),
    "formula cut off": ("formula-cut", set(), None, _in_article(
        '<div class="math" style="overflow: hidden"><math display="block"><mrow>'
        + "<mo>+</mo>".join(f"<msub><mi>x</mi><mn>{i}</mn></msub>" for i in range(60)) + "</mrow></math></div>")),
    "page over its weight budget": ("weight", set(), None, _append(f"<!-- {'x' * 1_100_000} -->")),
    # a first line as wide as the box: it fits at 1280 px, up to the button
    "copy button over the code": ("copy-overlap", set(), None, _in_article(
        '<div class="highlight-python notranslate"><div class="highlight"><pre style="padding-top: 0 !important">'
        + ("# a first line as wide as the box, " * 3)[:86] + "\nx = 1</pre></div></div>")),
    "shell block without a copy button": ("copy-missing", set(), None, _append(  # added after site-fixes.js ran
        '<script>addEventListener("load", () => document.querySelector("article").insertAdjacentHTML("beforeend", '
        '\'<div class="highlight-bash notranslate"><div class="highlight"><pre>git clone x</pre></div></div>\'))</script>')),
    "alt text that only numbers the figure": ("alt-text", set(), None, _in_article(
        f'<img src="{SVG}" alt="Figure 3 in \'Results\'">')),
    # issue 38: the Korean site stands on its own
    # marked English, it loses Korean line breaking and its search field opens the English search (issue 44)
    "Korean page marked English": ("page-language", {"broken-word", "search-language"}, "ko:gif",
                                   _sub(r'<html lang="ko"', '<html lang="en"', count=1)),
    "English link in a Korean sidebar": ("navigation-language", set(), "ko:", _sub(
        r'(<ul class="nav bd-sidenav"><li class="toctree-l1[^"]*"><a class="reference internal" href=")[^"]*"',
        r'\1../00_overview.html"', count=1)),
    "search mixes the languages": ("search-language", set(), "search.html", None),
    # issue 44: printed text, a Korean site, figures a phone can read
    "printed rows drawn as blocks": ("printed-row", {"code-wraps", "box-scrolls"}, "printed",
                                     _append("<style>span.printed-row { display: flex; margin: 0 -12px }</style>")),
    "word broken in the Korean navigation": ("broken-word", set(), "ko:", _append(
        "<style>.bd-sidebar-primary, .bd-sidebar-primary * { word-break: break-all !important }</style>")),
    "particle on the next line": ("particle-split", {"broken-word"}, "ko:", _in_article(
        '<p style="width: 0; word-break: normal">값은 48개입니다</p>')),
    "English interface string on a Korean page": ("english-interface", set(), "ko:",
                                                  lambda html, stem: html.replace("목차", "Contents")),
    "caption repeating its alt text": ("caption", set(), None, _caption("A chart of the loss")),
    "caption beginning Plot in": ("caption", set(), None, _caption("Plot in 'Results': loss")),
    "figure that does not open on a tap": ("figure-tap", set(), "figure", _sub(
        r'<a class="figure-open" href="[^"]*"[^>]*>(<img[^>]*>)</a>', r"\1")),
    "Korean search field opening the English search": ("search-language", set(), "ko:", _sub(
        r'action="search\.html"', 'action="../../search.html"')),
    "character no font has": ("missing-glyph", set(), None, _in_article("<p>\ue123\ue124</p>")),
}


def _inject_faults(site: Path) -> dict[str, str]:
    """Put each fault of FAULTS in its page of `site`; returns fault name -> page."""
    pages = {p: (site / p).read_text() for p in PAGES}
    uses = {}  # _images file -> the pages that show it
    # a page -> its English twin: a Korean page shows its English twin's images
    twins = {page: page for page in [*PAGES, "index.html"]} | {f"notebooks/ko/{Path(p).name}": p for p in PAGES}
    for page, twin in twins.items():
        if (site / page).is_file():
            for image in set(re.findall(r'src="(?:\.\./)*(_images/[^"]+)"', (site / page).read_text())):
                uses.setdefault(image, set()).add(twin)
    gif_page = next(x.page for x in checker.expected_lessons(NOTEBOOKS) if x.gifs)
    image, image_page = next((i, next(iter(p))) for i, p in sorted(uses.items()) if len(p) == 1 and gif_page not in p)
    others = [p for p in pages if p not in (gif_page, image_page)]
    # issue 44: a fault of printed rows on a page that prints a table, of figures on one with figures
    found = {"gif": gif_page, "image": image_page, "printed": next(p for p in others if 'class="printed-row"' in pages[p]),
             "figure": [p for p in others if 'class="figure-open"' in pages[p]][-1]}
    in_turn = iter(others * len(FAULTS))
    placed = {}
    for name, (_, _, where, change) in FAULTS.items():
        target = (where or "").removeprefix("ko:")
        page = found.get(target) or target or next(in_turn)
        placed[name] = f"notebooks/ko/{Path(page).name}" if (where or "").startswith("ko:") else page
        if change is not None:
            file = site / placed[name]
            html = file.read_text()
            file.write_text(change(html, Path(placed[name]).stem))
            assert file.read_text() != html, f"{name}: the page was not changed"
    # the files every page loads: the image's, the search's and the language switch's
    (site / image).unlink()
    (site / "_static" / "search-summaries.js").write_text("// removed\n")
    script = site / "_static" / "site-fixes.js"
    text, count = re.subn(r"// search-language:begin.*// search-language:end", "", script.read_text(), flags=re.S)
    assert count
    script.write_text(text)
    index = site / "searchindex.js"  # every page loads it: keep it valid, but without the term
    # Everywhere but in the page and file names (notebooks/04_shiftvit_model): the pages stay loadable.
    prefix, data = index.read_text().split("(", 1)
    contents = json.loads(data.rstrip().rstrip(";").rstrip(")"))
    kept = {key: contents[key] for key in ("docnames", "filenames")}
    contents = json.loads(re.sub(checker.SEARCH_TERM, "Nothing", json.dumps(contents), flags=re.I)) | kept
    index.write_text(f"{prefix}({json.dumps(contents)})")
    return placed


@pytest.mark.slow
def test_the_browser_check_reports_each_fault_where_it_is_and_nothing_else(built_site, chromium, tmp_path):
    site = tmp_path / "site"
    shutil.copytree(built_site, site)
    placed = _inject_faults(site)
    report = checker.check_site(site, NOTEBOOKS, chromium)
    reported = {(p.page, p.kind) for p in report.problems}
    missed = [f"{fault} in {page} not reported as {FAULTS[fault][0]}" for fault, page in placed.items()
              if (page, FAULTS[fault][0]) not in reported]
    allowed: dict[str, set[str]] = {}
    for fault, page in placed.items():
        kind, besides, _, _ = FAULTS[fault]
        allowed.setdefault(page, set()).update({kind, *besides})
    unexpected = [p for p in report.problems if p.kind not in allowed.get(p.page.split("?")[0], set())]
    assert not missed and not unexpected, "\n".join([*missed, "unexpected:", *map(str, unexpected)])
