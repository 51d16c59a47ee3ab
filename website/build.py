"""Build the lessons' website: `python website/build.py` writes build/site/ (`bash run.sh site`).

Every notebooks/*.ipynb is a page, in file-name order, rendered from its stored outputs by Sphinx
with myst-nb and sphinx-book-theme (nothing is executed). The home page is generated: the lesson
table (titles from the notebooks, "what you learn" from the README's lesson table) and the results
section of the README, from its `<!-- results-table -->` marker to the next heading.

The sources are staged into a folder of their own first (build/site-src), where
- a Colab badge image that a lesson loads from colab.research.google.com is replaced by a local copy
  (website/colab-badge.svg), so the page loads nothing from outside; its link stays as written;
- relative links to files of the repository that are not lessons point at them on GitHub (main);
- any other remote image in a lesson's text or outputs is an error: the site must work offline.

Sphinx runs with -W: a warning fails the build.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

try:  # imported as website.build (the tests), or run as website/build.py
    from website import charts
except ImportError:  # pragma: no cover
    import charts

REPO = Path(__file__).resolve().parents[1]
WEBSITE = Path(__file__).resolve().parent
GITHUB = "https://github.com/shiftvit-tutorial/shiftvit-step-by-step"
BRANCH = "main"
RESULTS_MARKER = "<!-- results-table -->"
BADGE_ASSET = "_assets/colab-badge.svg"
GIF_FOLDER = "_gifs"  # the animations, as files of the site (website/build.py copies them in)


class SiteError(Exception):
    """A problem in the sources that would make a broken or online-only site."""


sys.path.insert(0, str(REPO / "scripts"))
from project_files import files  # noqa: E402 - files.py without Keras: every write is atomic

MANIFEST = ".shiftvit-build.json"  # the files of the folder's last build: what the next may replace


def listing(folder: Path) -> dict[str, list[int]]:
    """Each entry under ``folder`` but its manifest: its path -> [size, mtime in ns] ([] for a folder).

    A copy (``cp -r``), an edit or a file added since the build changes it, so a folder
    whose listing is not its manifest's holds something this tool did not write.
    """
    found = {}
    for parent, folders, names in os.walk(folder):  # links are listed, never followed
        for name in folders + names:
            info = (path := Path(parent, name)).lstat()
            found[path.relative_to(folder).as_posix()] = [] if name in folders else [info.st_size, info.st_mtime_ns]
    found.pop(MANIFEST, None)
    return found


def check_output_folder(folder: Path, repo: Path = REPO) -> Path:
    """``folder`` resolved, if a build may replace it; else its one-line SiteError. Writes nothing.

    Refused: the file system's root, a home directory, a mount point, the checkout (``REPO``
    and ``repo``) or a folder that holds it, a file, and a folder that is not empty and not as
    the last build left it (its manifest, :func:`listing`).
    """
    folder = Path(folder).expanduser().resolve()
    home = Path.home().resolve()
    guarded = [Path(checkout).resolve() for checkout in (REPO, repo)]
    forbidden = {
        "the root of the file system": folder == Path(folder.anchor),
        "your home directory": folder == home,
        "a home directory": folder.parent == home.parent != Path(home.anchor),  # /home/<anyone>
        "a mount point": os.path.ismount(folder),
        "the checkout or a folder that holds it": any(folder == g or folder in g.parents for g in guarded),
    }
    why = next((why for why, hit in forbidden.items() if hit), None)
    kind, shown = files.special_file_kind(folder, follow_links=True), files.escape_name(folder)
    if why:
        problem = f"will not write into {shown}: it is {why}, and writing means replacing it"
    elif kind not in ("missing", "a folder"):
        problem = f"will not replace {shown}: it is {kind or 'a file'}, not a folder it made"
    elif kind == "a folder" and (now := listing(folder)) != (made := _manifest(folder) or {}) and now:
        other = next((p for p in now if now[p] != made.get(p)), None) or next(iter(made))
        problem = f"will not replace {shown}: {files.escape_name(other)} is not as its last build left it"
    else:
        return folder
    raise SiteError(f"website/build.py {problem}; choose a new folder (such as build/site)")


def _manifest(folder: Path) -> dict | None:
    try:
        return files.read_json(files.check_own(folder / MANIFEST, reading=True), "build manifest")
    except (OSError, ValueError):
        return None


@contextlib.contextmanager
def output_folder(folder: Path, repo: Path = REPO) -> Iterator[Path]:
    """A new folder to build ``folder`` in, swapped for it when the block ends normally, else removed.

    A failed build leaves the last one whole; the new folder gets its manifest before the swap.
    """
    folder = check_output_folder(folder, repo)
    new, old = (folder.with_name(f".{folder.name}.{what}-{os.getpid()}") for what in ("new", "old"))
    shutil.rmtree(new, ignore_errors=True)  # a leftover of a process with our id
    new.mkdir(parents=True)
    try:
        yield new
        files.write_json(new / MANIFEST, listing(new))
        check_output_folder(folder, repo)  # again: it may have changed during the build
        if folder.exists():
            os.replace(folder, old)
        os.replace(new, folder)
    finally:
        for leftover in (new, old):
            shutil.rmtree(leftover, ignore_errors=True)


def read_notebook(path: Path) -> dict:
    """A lesson notebook, or a SiteError naming the file: cut short, or not a notebook."""
    try:
        notebook = files.read_json(path, "notebook")
    except (ValueError, OSError) as error:
        raise SiteError(" ".join(str(error).split())) from None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list) or not all(isinstance(cell, dict) for cell in cells):
        raise SiteError(f"{path} is not a notebook (no list of cells)")
    return notebook


@dataclass
class Lesson:
    path: Path  # notebooks/<stem>.ipynb in the repository
    title: str
    summary: str = ""
    gifs: list[bytes] = field(default_factory=list)

    @property
    def stem(self) -> str:
        return self.path.stem

    @property
    def docname(self) -> str:
        return f"notebooks/{self.stem}"

    @property
    def colab_url(self) -> str:
        return colab_url(self.stem)

    @property
    def appendix(self) -> bool:
        return "appendix" in self.stem.lower()


def colab_url(stem: str) -> str:
    return f"https://colab.research.google.com/github/shiftvit-tutorial/shiftvit-step-by-step/blob/{BRANCH}/notebooks/{stem}.ipynb"


def notebook_paths(repo: Path = REPO) -> list[Path]:
    """The lessons: every notebook in notebooks/, in file-name order (00_..., 01_..., 08_appendix_...)."""
    return sorted((repo / "notebooks").glob("*.ipynb"))


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _title(notebook: dict, fallback: str) -> str:
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") == "markdown":
            match = re.search(r"^#\s+(.+?)\s*#*\s*$", _source(cell), re.M)
            if match:
                return match.group(1)
    return fallback


_GIF_DATA = re.compile(r"data:image/gif;base64,([A-Za-z0-9+/=\s]+)")


def stored_gifs(notebook: dict) -> list[bytes]:
    """The GIFs in a notebook's stored outputs: image/gif outputs and data: URLs in HTML outputs."""
    import base64

    gifs = []
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/gif" in data:
                gifs.append(base64.b64decode(_source({"source": data["image/gif"]})))
            if "text/html" in data:
                for match in _GIF_DATA.finditer(_source({"source": data["text/html"]})):
                    gifs.append(base64.b64decode(re.sub(r"\s", "", match.group(1))))
    return gifs


def readme_summaries(readme: str) -> dict[str, str]:
    """notebook file name -> the README lesson table's "what you learn" cell (empty when absent)."""
    section = re.search(r"^## Lessons\s*$(.*?)(?=^## |\Z)", readme, re.M | re.S)
    if not section:
        return {}
    rows = [line for line in section.group(1).splitlines() if line.startswith("|")]
    if len(rows) < 3:
        return {}
    header = [cell.strip().lower() for cell in rows[0].strip("|").split("|")]
    column = next((i for i, name in enumerate(header) if "learn" in name), None)
    summaries = {}
    for row in rows[2:]:
        cells = [cell.strip() for cell in row.strip().strip("|").split("|")]
        link = re.search(r"\(notebooks/([^)]+\.ipynb)\)", row)
        if link and column is not None and column < len(cells):
            summaries[link.group(1)] = cells[column]
    return summaries


def readme_results(readme: str) -> str:
    """The README's results section: from the results-table marker to the next heading."""
    start = readme.find(RESULTS_MARKER)
    if start < 0:
        raise SiteError(f"README.md has no {RESULTS_MARKER} marker: the home page shows the results from there")
    text = readme[start + len(RESULTS_MARKER) :]
    end = re.search(r"^#{1,2} ", text, re.M)
    return (text[: end.start()] if end else text).strip()


def lessons(repo: Path = REPO) -> list[Lesson]:
    readme = (repo / "README.md").read_text(encoding="utf-8") if (repo / "README.md").exists() else ""
    summaries = readme_summaries(readme)
    found = []
    for path in notebook_paths(repo):
        notebook = read_notebook(path)
        found.append(
            Lesson(path, _title(notebook, path.stem), summaries.get(path.name, ""), stored_gifs(notebook))
        )
    return found


# --- staging -------------------------------------------------------------------------------------

_LINK = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]+)>?(\s+\"[^\"]*\")?\s*\)")
_MD_BADGE = re.compile(r"\[!\[([^\]]*)\]\(\s*https?://[^)\s]*colab-badge\.svg[^)]*\)\]\(\s*([^)\s]+)\s*\)")
_HTML_BADGE = re.compile(
    r"<a\s[^>]*href=[\"']([^\"']+)[\"'][^>]*>\s*<img\s[^>]*src=[\"']https?://[^\"']*colab-badge\.svg[\"'][^>]*>\s*</a>",
    re.I | re.S,
)
_REMOTE_IMG = re.compile(
    r"!\[[^\]]*\]\(\s*<?(https?://[^)\s>]+)|<img\s[^>]*src=[\"'](https?://[^\"']+)|"
    r"<(?:script|iframe|video|audio|source|embed)\s[^>]*src=[\"'](https?://[^\"']+)|"
    r"<link\s[^>]*href=[\"'](https?://[^\"']+)",
    re.I,
)


def _is_external(target: str) -> bool:
    return bool(re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I)) or target.startswith(("#", "//"))


def rewrite_markdown(text: str, doc_dir: str, staged: set[str], repo: Path, stage: Path) -> str:
    """Local badge images; links to repository files that are not pages go to GitHub.

    doc_dir: the document's folder relative to the repository root ("" or "notebooks");
    staged: the repository paths that are pages of the site (notebooks/<name>.ipynb).
    """
    badge = posixpath.relpath(BADGE_ASSET, doc_dir or ".")
    text = _HTML_BADGE.sub(lambda m: f"[![Open In Colab]({badge})]({m.group(1)})", text)
    text = _MD_BADGE.sub(lambda m: f"[![{m.group(1)}]({badge})]({m.group(2)})", text)

    def link(match: re.Match) -> str:
        bang, label, target, title = match.group(1), match.group(2), match.group(3), match.group(4) or ""
        if _is_external(target) or target == badge:
            return match.group(0)
        path, _, anchor = target.partition("#")
        in_repo = posixpath.normpath(posixpath.join(doc_dir, path))
        if in_repo in staged:
            return match.group(0)  # a lesson: Sphinx links the page
        source = repo / in_repo
        if bang:  # a local image: stage the file at the same place, Sphinx copies it
            if not source.resolve().is_relative_to(repo.resolve()):  # ../.., /etc/x, a link out
                raise SiteError(f"image {files.escape_name(target)} (in {doc_dir or '.'}/) is outside the checkout; "
                                "copy it into the repository and link it relatively")
            if not source.is_file():
                raise SiteError(f"image {target!r} (in {doc_dir or '.'}/) does not exist")
            (stage / in_repo).parent.mkdir(parents=True, exist_ok=True)
            files.atomic_write_text(stage / in_repo, source.read_bytes())
            return match.group(0)
        kind = "tree" if source.is_dir() else "blob"
        url = f"{GITHUB}/{kind}/{BRANCH}/{in_repo}" + (f"#{anchor}" if anchor else "")
        return f"[{label}]({url}{title})"

    return _LINK.sub(link, text)


def remote_resources(text: str) -> list[str]:
    return [next(group for group in m.groups() if group) for m in _REMOTE_IMG.finditer(text)]


def gifs_as_files(html: str, doc_dir: str, stage: Path) -> str:
    """An animation stored inline (data:image/gif;base64,...) becomes a file of the site, named by its
    content, so a page does not carry it as text and two pages that show it share one download."""
    import base64
    import hashlib

    def one(match: re.Match) -> str:
        gif = base64.b64decode(re.sub(r"\s", "", match.group(1)))
        name = f"{GIF_FOLDER}/{hashlib.sha256(gif).hexdigest()[:20]}.gif"
        (stage / GIF_FOLDER).mkdir(parents=True, exist_ok=True)
        files.atomic_write_text(stage / name, gif)
        return posixpath.relpath(name, doc_dir or ".")

    return _GIF_DATA.sub(one, html)


def stage_notebook(path: Path, staged: set[str], repo: Path, stage: Path) -> None:
    notebook = read_notebook(path)
    doc_dir = posixpath.dirname(path.relative_to(repo).as_posix())
    problems = []
    for index, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") == "markdown":
            cell["source"] = rewrite_markdown(_source(cell), doc_dir, staged, repo, stage)
            problems += [f"cell {index}: {url}" for url in remote_resources(cell["source"])]
        for output in cell.get("outputs", []):
            html = output.get("data", {}).get("text/html")
            if html is not None and _GIF_DATA.search(_source({"source": html})):
                html = output["data"]["text/html"] = gifs_as_files(_source({"source": html}), doc_dir, stage)
            if html is not None:
                problems += [f"cell {index} output: {url}" for url in remote_resources(_source({"source": html}))]
    if problems:
        raise SiteError(
            f"{path.relative_to(repo)} loads from the internet, which the offline site cannot: "
            + "; ".join(problems)
            + " (ship the file in the repository and link it relatively)"
        )
    target = stage / path.relative_to(repo)
    target.parent.mkdir(parents=True, exist_ok=True)
    files.atomic_write_text(target, json.dumps(notebook, ensure_ascii=False, indent=1) + "\n")


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def home_page(found: list[Lesson], readme: str, repo: Path, stage: Path) -> str:
    staged = {lesson.path.relative_to(repo).as_posix() for lesson in found}
    rows = [
        f"| {lesson.stem.split('_')[0]} | [{_cell(lesson.title)}]({lesson.docname}.ipynb) | "
        f"{_cell(lesson.summary)} | [Colab]({lesson.colab_url}) |"
        for lesson in found
    ]
    results = rewrite_markdown(readme_results(readme), "", staged, repo, stage)
    toctrees = []
    for caption, group in (("Lessons", [x for x in found if not x.appendix]), ("Appendix", [x for x in found if x.appendix])):
        if group:
            entries = "\n".join(lesson.docname for lesson in group)
            toctrees.append(f"```{{toctree}}\n:hidden:\n:caption: {caption}\n\n{entries}\n```")
    return "\n\n".join(
        [
            "# ShiftViT, step by step",
            "An open tutorial series on **ShiftViT**, the vision transformer that replaces attention with a "
            "shift of channels, built step by step in Keras 3 and trained on CIFAR-10. Each lesson is a "
            "notebook, shown here with the outputs it stored when it last ran; the buttons at the top of "
            "every lesson open the same notebook in Colab or on Binder. "
            f"The code and the helper library live on [GitHub]({GITHUB}).",
            "## Lessons",
            "| # | lesson | what you learn | run it |\n|---|---|---|---|\n" + "\n".join(rows),
            "## Results",
            results,
            charts.charts_markdown(stage),
            *toctrees,
        ]
    ) + "\n"


def _korean_site():
    """website/korean_site.py, whether this file runs as a script or as website.build."""
    if str(WEBSITE) not in sys.path:
        sys.path.insert(0, str(WEBSITE))
    import korean_site

    return korean_site


def stage_sources(stage: Path, repo: Path = REPO) -> list[Lesson]:
    """Stage the sources into ``stage`` (a folder :func:`output_folder` gives)."""
    found = lessons(repo)
    if not found:
        raise SiteError(f"no notebooks in {repo / 'notebooks'}")
    (stage / BADGE_ASSET).parent.mkdir(parents=True, exist_ok=True)
    files.atomic_write_text(stage / BADGE_ASSET, (WEBSITE / "colab-badge.svg").read_bytes())
    staged = {lesson.path.relative_to(repo).as_posix() for lesson in found}
    for lesson in found:
        stage_notebook(lesson.path, staged, repo, stage)
    _korean_site().stage_korean(stage, repo, staged, stage_notebook)  # notebooks/ko/ (website/korean_site.py)
    readme = (repo / "README.md").read_text(encoding="utf-8")
    files.atomic_write_text(stage / "index.md", home_page(found, readme, repo, stage))
    return found


def build(out: Path, stage: Path, repo: Path = REPO, jobs: str = "1", quiet: bool = True) -> list[Lesson]:
    """Stage the sources and run Sphinx (-W); raises CalledProcessError when Sphinx fails.

    Each folder is built beside the old one and swapped in when all are complete.
    """
    doctrees = stage.parent / (stage.name + "-doctrees")
    for folder in (stage, out, doctrees):  # all checked before any is made
        check_output_folder(folder, repo)
    with output_folder(stage, repo) as new_stage, output_folder(out, repo) as new_out, \
            output_folder(doctrees, repo) as new_doctrees:
        found = stage_sources(new_stage, repo)
        command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-j", jobs,
                   "-c", str(WEBSITE), "-d", str(new_doctrees), str(new_stage), str(new_out)]
        if quiet:
            command.append("-q")
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        subprocess.run(command, check=True, env=env)
        # The download button offers _sources/<lesson>.ipynb: the repository's notebook itself, not the
        # staged copy whose badge points at the site's local image (../_assets/colab-badge.svg); the
        # Korean lessons' too (notebooks/ko/).
        for notebook in [lesson.path for lesson in found] + _korean_site().korean_paths(repo):
            download = new_out / "_sources" / notebook.relative_to(repo).with_suffix(".ipynb")
            if download.is_file():
                files.atomic_write_text(download, notebook.read_text(encoding="utf-8"))
        for gif in sorted((new_stage / GIF_FOLDER).glob("*.gif")):  # the animations (gifs_as_files)
            (new_out / GIF_FOLDER).mkdir(exist_ok=True)
            files.atomic_write_text(new_out / GIF_FOLDER / gif.name, gif.read_bytes())
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "build" / "site")
    parser.add_argument("--stage", type=Path, default=REPO / "build" / "site-src")
    parser.add_argument("--jobs", default="1", help="sphinx-build -j (default 1)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        found = build(args.out.resolve(), args.stage.resolve(), jobs=args.jobs)
    except (SiteError, ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError:
        print("error: sphinx-build failed (warnings count as errors); see above", file=sys.stderr)
        return 1
    print(f"built {len(found)} lessons into {args.out} in {time.perf_counter() - start:.1f} s")
    print(f"open {(args.out / 'index.html').resolve().as_uri()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
