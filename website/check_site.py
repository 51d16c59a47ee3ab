"""Check the built website in a real browser: `python website/check_site.py [build/site]`.

Serves the site on 127.0.0.1 and drives Debian's headless Chromium over the Chrome DevTools
Protocol (a websocket, with websocket-client). For every HTML page of the site it reports:

- status: the page is not served with status 200;
- console / page-error: a console error (Chromium's own ones included, such as a resource that
  failed to load) or an uncaught exception;
- external-request: a request to any host but the local server (a CDN, a font service): the site
  must work offline;
- image: an <img> that did not load (natural width 0);
- link / anchor: an internal link to a file that does not exist, or to an anchor (#id) that the
  target page does not have;
- phone: the page is wider than a 390 px phone screen (it scrolls sideways);
- box-scrolls: at 1280 px a code or output box (a `pre`, a highlighted block, a cell's output)
  scrolls sideways: its scrollWidth exceeds its clientWidth, so a reader loses the line's end;
- table-clipped: at 1280 px a table does not show every column (its wrapper scrolls, a cell clips
  its text, or the table runs past the article);
- alt-text: an image without meaningful alt text (none, its file name, a hash, or only a number:
  "Figure 2 in 'Results'");
- code-wraps: at 1280 px a line of a code box (a lesson's cell, a shell block) takes two lines on
  screen (the lessons' lines are at most 88 characters, and the box holds them);
- broken-word: at 1280 or 390 px a word (letters and digits), or a number with its decimals and its
  "%", is split across two lines, anywhere in the article (tables, text, outputs);
- formula-cut: a display formula wider than its box, in a box that does not scroll to show the rest
  (or that runs past the article), at 1280 or 390 px;
- copy-overlap / copy-missing: a code box's copy button over its text, or a code box a reader may
  run (a cell, a shell block in the text) without one, at 1280 or 390 px;
- weight: a page downloads more than WEIGHT_BUDGET (1 MB) on a first visit, its own figures (its
  images and animations) left out; a search with its summaries counts as a page;
- file-console: a console error or uncaught exception when the page is opened from file://, as a
  reader who double-clicks index.html does (a search from file:// included);
and, at 1280 and 390 px, on every page of both languages (navigation as well as article):
- printed-row: a row of a printed table in an output (span.printed-row, website/_ext/reading.py) drawn
  as a block: not inline, on more than one line, taller than the output's line height, or not
  starting where the output's lines start;
- broken-word: (as above) in the navigation and the contents too;
- particle-split: on a Korean page, a particle on the next line from the number, bracket or inline
  code it follows ("48" / "개"), or a line broken between a word and its opening bracket;
- english-interface: on a Korean page, a string of the interface in English (THEME_STRINGS: the
  theme's and the search's strings, and ours), as text or as a label (title, aria-label, placeholder);
- caption: a figure's caption equal to its alt text, or beginning "Plot in", or, on a Korean page,
  an alt text or caption without Korean;
- figure-tap: a figure whose image is not a link to the image itself (a tap must open it full size);
  once per check a tap (at 390 px) must open the image;
- missing-glyph: a character of the page drawn as the missing-glyph box (no font has it); the check
  refuses to run without a Korean font (KoreanFontMissing: apt-get install fonts-nanum);
and, for the pages of the lessons (notebooks/<name>.ipynb -> notebooks/<name>.html):
- missing-page: a notebook without its page;
- gif: a GIF of the notebook's stored outputs is not on the page, or did not load;
- colab / binder: no launch link, or one that does not open notebooks/<the same name>.ipynb on
  branch main of the repository (on other pages, a Colab link must open some lesson on main);
- language-switch: no link to the same lesson in the other language (notebooks/<name>.html <->
  notebooks/ko/<name>.html, the Korean edition);
- page-language: a lesson's <html lang> is not its language ("ko" for notebooks/ko/, else "en");
- navigation-language: a lesson's sidebar, previous / next or title link leads into the other
  language (the Korean site stands on its own);
and on the search page:
- search: a search for "ShiftViT" does not list every lesson whose notebook mentions it, or a search
  for "시프트" every Korean lesson that uses the word, or "ShiftViT" from a Korean page (lang=ko) every
  Korean lesson that mentions it;
- search-language: a search lists a page of the other language; a Korean page's search
  field does not open the Korean search page, or that page is not Korean;
- search-summary: a result's summary holds the theme's colour-mode menu instead of the page's text.

The expectations come from the notebooks (their names, their stored GIFs, their text), not from the
site, so a lesson added or rewritten is checked without changing this file.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from project_files import files  # noqa: E402 - files.py without Keras: every write is atomic

REPO_SLUG = "shiftvit-tutorial/shiftvit-step-by-step"
BRANCH = "main"
SEARCH_TERM = "ShiftViT"
KOREAN_TERM = "시프트"  # the Korean search check (issue 29): a word with particles attached in the text
PHONE = {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True}
DESKTOP = {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False}
KO_SEARCH_PAGE = "notebooks/ko/search.html"
# The interface's English strings that must not show on a Korean page: the theme's
# (sphinx-book-theme, pydata-sphinx-theme), Sphinx's search's, and the site's own.
THEME_STRINGS = (
    "Search", "Search...", "Contents", "On this page", "previous", "next", "previous page", "next page",
    "Back to top", "Skip to main content", "Color mode", "Light", "Dark", "System Settings",
    "Toggle primary sidebar", "Toggle secondary sidebar", "Download this page", "Download source file",
    "Print to PDF", "Launch interactive content", "Launch on Binder", "Launch on Colab", "Binder logo",
    "Colab logo", "This notebook on GitHub", "Main", "Page", "Site navigation", "Section Navigation",
    "Copy", "Copied", "Copy this code", "Search Results", "Searching", "Preparing search...",
    "Hide Search Matches", "ShiftViT, step by step", "Ask or report", "Outputs stored",
    "Open the figure full size",
)
# ... and these as the start of a longer text
THEME_PREFIXES = ("By ", "© Copyright", "Search finished", "Your search did not match", "Figure ",
                  "Please activate JavaScript")


class KoreanFontMissing(RuntimeError):
    """No font on this machine draws Korean: the Korean pages would show empty boxes."""


def korean_fonts() -> list[str]:
    """The fonts fontconfig offers for Korean (fc-list :lang=ko); [] without fontconfig."""
    if not shutil.which("fc-list"):
        return []
    found = subprocess.run(["fc-list", ":lang=ko", "family"], capture_output=True, text=True, check=False)
    return sorted({line.strip() for line in found.stdout.splitlines() if line.strip()})


def require_korean_font() -> list[str]:
    fonts = korean_fonts()
    if not fonts:
        raise KoreanFontMissing("no Korean font on this machine: the Korean pages would show empty boxes "
                                "(Debian: apt-get install fonts-nanum, or fonts-noto-cjk; bash run.sh setup does)")
    return fonts


# What a page may download besides its own figures (its images and animations), issue 37.
WEIGHT_BUDGET = 1_000_000
FIGURE_PATH = re.compile(r"^/(?:_images|_gifs)/|\.(?:png|jpe?g|gif|webp|svg|mp4|webm)$", re.I)


@dataclass(frozen=True)
class Problem:
    page: str  # the page's path in the site, e.g. "notebooks/02_shift_operation.html"
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.page}: {self.kind}: {self.detail}"


@dataclass
class Report:
    problems: list[Problem] = field(default_factory=list)
    pages: list[str] = field(default_factory=list)  # the pages checked
    gifs_checked: int = 0
    colab_links_checked: int = 0
    links_checked: int = 0
    search_hits: list[str] = field(default_factory=list)
    boxes_checked: int = 0  # code and output boxes measured at 1280 px
    tables_checked: int = 0
    images_checked: int = 0  # alt texts read
    code_boxes_checked: int = 0  # code boxes whose lines were measured at 1280 px (issue 37)
    rows_checked: int = 0  # printed rows measured at 1280 px
    taps_checked: int = 0  # figures tapped at 390 px
    weights: dict[str, int] = field(default_factory=dict)  # page -> bytes downloaded without its figures
    shots: list[str] = field(default_factory=list)  # screenshots written (--shots)

    def kinds(self, page: str) -> set[str]:
        return {p.kind for p in self.problems if p.page == page}


# --- what the notebooks say the site must show ---------------------------------------------------


@dataclass
class Expected:
    stem: str
    gifs: dict[str, int]  # sha256 of each GIF in the stored outputs -> how many times
    mentions_term: bool

    @property
    def page(self) -> str:
        return f"notebooks/{self.stem}.html"

    @property
    def colab(self) -> str:
        return colab_url(self.stem)


def colab_url(stem: str) -> str:
    return f"https://colab.research.google.com/github/{REPO_SLUG}/blob/{BRANCH}/notebooks/{stem}.ipynb"


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else (value or "")


def expected_lessons(notebooks: Path, term: str = SEARCH_TERM) -> list[Expected]:
    found = []
    for path in sorted(notebooks.glob("*.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        gifs: dict[str, int] = {}
        words = []
        for cell in notebook.get("cells", []):
            words.append(_text(cell.get("source")))
            for output in cell.get("outputs", []):
                data = output.get("data", {})
                blobs = []
                if "image/gif" in data:
                    blobs.append(base64.b64decode(_text(data["image/gif"])))
                for match in re.finditer(r"data:image/gif;base64,([A-Za-z0-9+/=\s]+)", _text(data.get("text/html"))):
                    blobs.append(base64.b64decode(re.sub(r"\s", "", match.group(1))))
                for blob in blobs:
                    digest = hashlib.sha256(blob).hexdigest()
                    gifs[digest] = gifs.get(digest, 0) + 1
        mentions = re.search(rf"\b{re.escape(term)}\b", "\n".join(words), re.I) is not None
        found.append(Expected(path.stem, gifs, mentions))
    return found


def korean_lessons(notebooks: Path, term: str = SEARCH_TERM) -> list[Expected]:
    """The Korean edition's lessons, notebooks/ko/<name>.ipynb -> notebooks/ko/<name>.html (none without it)."""
    if not (notebooks / "ko").is_dir():
        return []
    found = expected_lessons(notebooks / "ko", term)
    if term != SEARCH_TERM:  # a Korean word: it is also found with a particle attached ("시프트를")
        for lesson, path in zip(found, sorted((notebooks / "ko").glob("*.ipynb"))):
            lesson.mentions_term = term in path.read_text(encoding="utf-8")
    return [Expected(f"ko/{lesson.stem}", lesson.gifs, lesson.mentions_term) for lesson in found]


def _check_language_switch(page: str, lesson: Expected, audit: dict, origin: str, korean: list[Expected],
                           report: Report) -> None:
    """Every lesson page links to the same lesson in the other language (when both exist), and says
    which language it is in (<html lang="ko"> on the Korean pages, issue 38)."""
    language = "ko" if lesson.stem.startswith("ko/") else "en"
    if audit.get("lang") != language:
        report.problems.append(Problem(page, "page-language", f'<html lang="{audit.get("lang")}">, not "{language}"'))
    # The sidebar, previous / next and the site's title stay in the page's language (issue 38).
    for href in dict.fromkeys(audit.get("navigation", [])):
        if href.startswith(origin) and href[len(origin):].startswith("notebooks/ko/") != (language == "ko"):
            report.problems.append(Problem(page, "navigation-language", f"{href[len(origin):]}: a link of the "
                                           "sidebar or previous / next into the other language"))
    stems = {k.stem for k in korean}
    if lesson.stem.startswith("ko/"):
        other = f"notebooks/{lesson.stem[3:]}.html"
    elif f"ko/{lesson.stem}" in stems:
        other = f"notebooks/ko/{lesson.stem}.html"
    else:
        return
    if origin + other not in audit["links"]:
        report.problems.append(Problem(page, "language-switch", f"no link to {other}, the same lesson in the other language"))


# --- a static server and a browser ---------------------------------------------------------------


@contextlib.contextmanager
def serve(root: Path) -> Iterator[str]:
    """Serve root on 127.0.0.1 (a free port) in a thread; yields the base URL."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def find_chromium() -> str | None:
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


class CDPError(RuntimeError):
    pass


class Browser:
    """Headless Chromium with one tab, driven over the DevTools protocol."""

    def __init__(self, executable: str, timeout: float = 60.0):
        import websocket  # websocket-client (the site extra); imported here so that the rest needs no browser

        self._websocket = websocket
        self._profile = tempfile.mkdtemp(prefix="shiftvit-chromium-")
        flags = [
            "--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-quic", "--disable-dev-shm-usage", "--disable-extensions", "--mute-audio",
            "--remote-debugging-port=0", f"--user-data-dir={self._profile}",
            # Chromium refuses to start as root with its sandbox, and containers often lack the user
            # namespaces it needs otherwise; the browser only opens this site, on 127.0.0.1.
            "--no-sandbox",
        ]
        self._log = open(Path(self._profile) / "chromium.log", "wb")  # noqa: SIM115  # atomic: a stream, in a temporary profile
        self.process = subprocess.Popen([executable, *flags, "about:blank"], stdout=self._log, stderr=self._log)
        port_file = Path(self._profile) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            if self.process.poll() is not None or time.monotonic() > deadline:
                log = (Path(self._profile) / "chromium.log").read_text(errors="replace")[-2000:]
                self.close()
                raise RuntimeError(f"Chromium did not start ({executable}):\n{log}")
            time.sleep(0.1)
        port, path = port_file.read_text().splitlines()[:2]
        self.ws = websocket.create_connection(f"ws://127.0.0.1:{port}{path}", timeout=timeout, suppress_origin=True)
        self._next_id = 0
        self.on_event: Callable[[dict], None] = lambda event: None
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

    def _dispatch(self, message: dict) -> None:
        if "method" in message and message.get("sessionId") == getattr(self, "session", None):
            self.on_event(message)

    def call(self, method: str, params: dict | None = None, timeout: float = 60.0) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if getattr(self, "session", None) and not method.startswith(("Target.", "Browser.")):
            message["sessionId"] = self.session
        self.ws.send(json.dumps(message))
        deadline = time.monotonic() + timeout
        while True:
            reply = self._receive(deadline)
            if reply is None:
                raise CDPError(f"{method}: no answer in {timeout:.0f} s")
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise CDPError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self._dispatch(reply)

    def _receive(self, deadline: float) -> dict | None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        self.ws.settimeout(remaining)
        try:
            return json.loads(self.ws.recv())
        except self._websocket.WebSocketTimeoutException:
            return None

    def pump(self, until: Callable[[], bool], timeout: float) -> bool:
        """Handle events until `until()` holds (True) or the time is up (False)."""
        deadline = time.monotonic() + timeout
        while not until():
            if time.monotonic() >= deadline:
                return False
            message = self._receive(min(deadline, time.monotonic() + 0.05))  # `until` may depend on time
            if message is not None:
                self._dispatch(message)
        return True

    def evaluate(self, expression: str, timeout: float = 60.0):
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
            timeout=timeout,
        )
        if "exceptionDetails" in result:
            raise CDPError(f"evaluate: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.call("Browser.close", timeout=5)
        with contextlib.suppress(Exception):
            self.ws.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()
        shutil.rmtree(self._profile, ignore_errors=True)


# --- one page ------------------------------------------------------------------------------------

AUDIT = r"""
(async () => {
  const images = [...document.images];
  for (const img of images) if (img.loading === 'lazy') img.loading = 'eager';
  await Promise.all(images.map(img => img.complete ? null : new Promise(done => {
    img.addEventListener('load', done); img.addEventListener('error', done); setTimeout(done, 15000);
  })));
  return {
    images: images.map(img => ({src: img.currentSrc || img.src, width: img.naturalWidth})),
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    launch: [...document.querySelectorAll('a[href]')].filter(a => a.querySelector('img')).map(a => a.href),
    ids: [...document.querySelectorAll('[id]')].map(e => e.id)
           .concat([...document.querySelectorAll('a[name]')].map(a => a.name)),
    lang: document.documentElement.lang,
    searchForms: [...document.querySelectorAll('form.bd-search, form[action$="search.html"]')].map(f => f.action),
    navigation: [...document.querySelectorAll('nav.bd-docs-nav a[href], a.left-prev, a.right-next, a.navbar-brand')]
      .map(a => a.href).filter(href => !href.includes('#')),
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
  };
})()
"""


READABLE = r"""
(() => {
  // a file name, a hash, or only a number ("Figure 2 in 'Results'"): none says what the figure shows
  const badAlt = /(?:\.(?:png|jpe?g|gif|svg|webp)$)|[0-9a-f]{16,}|^(?:figure|fig\.?|image|img|plot|picture|chart)\s*\d+\.?(?:\s+(?:in|of|from)\s+.*)?$/i;
  const snippet = el => (el.innerText || '').trim().split('\n')[0].slice(0, 60);
  const boxes = [...new Set(document.querySelectorAll(
    'pre, div.highlight, div.cell_output, div.output'))].filter(el => el.clientWidth > 0);
  const scrolling = boxes.filter(el => el.scrollWidth > el.clientWidth + 1)
    .map(el => `${el.tagName.toLowerCase()}.${[...el.classList].join('.')} ${el.scrollWidth} > ${el.clientWidth} px: ${snippet(el)}`);
  const main = document.querySelector('[role="main"]') || document.body;
  const right = main.getBoundingClientRect().right;
  const tables = [...document.querySelectorAll('[role="main"] table, article table')].filter(t => t.offsetWidth > 0);
  const clipped = [];
  for (const table of new Set(tables)) {
    const wrapper = table.parentElement;
    const cells = [...table.querySelectorAll('td, th')].filter(c => c.scrollWidth > c.clientWidth + 1);
    const why = wrapper.scrollWidth > wrapper.clientWidth + 1 ? `its box shows ${wrapper.clientWidth} of ${wrapper.scrollWidth} px`
      : table.getBoundingClientRect().right > right + 1 ? `it runs ${Math.round(table.getBoundingClientRect().right - right)} px past the article`
      : cells.length ? `${cells.length} cells clip their text` : null;
    if (why) clipped.push(`${why}: ${snippet(table)}`);
  }
  const images = [...document.images];
  const alts = images.filter(img => { const alt = (img.getAttribute('alt') || '').trim();
      return !alt || badAlt.test(alt) || alt === img.getAttribute('src'); })
    .map(img => `${(img.getAttribute('src') || '').slice(0, 80)} (alt ${JSON.stringify(img.getAttribute('alt'))})`);
  return {boxes: boxes.length, scrolling, tables: tables.length, clipped, images: images.length, alts};
})()
"""


READER = r"""
(() => {
  // Issue 37: what a reader sees, at the current width.
  const article = document.querySelector('article.bd-article') || document.querySelector('[role="main"]') || document.body;
  const snippet = text => text.replace(/\s+/g, ' ').trim().slice(0, 60);
  const lines = rects => new Set([...rects].filter(r => r.width > 0.5 && r.height > 0.5).map(r => Math.round(r.top + r.height / 2))).size;
  const visible = el => el.offsetParent !== null || el.getClientRects().length > 0;
  const inputs = [...document.querySelectorAll('div.highlight')]
    .filter(box => !box.closest('div.cell_output, div.output') && box.querySelector('pre') && visible(box));
  // Code lines that wrap: a box's text makes more lines on screen than it has.
  const codeWraps = [];
  for (const box of inputs) {
    const pre = box.querySelector('pre');
    const text = pre.textContent.replace(/\n$/, '');
    const range = document.createRange();
    let start = 0, node = null, offset = 0;
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    const wrapped = [];
    // one range per logical line: from its first character to its last
    const positions = [];
    while ((node = walker.nextNode())) for (let i = 0; i < node.data.length; i++) positions.push([node, i]);
    let lineStart = 0;
    for (let i = 0; i <= positions.length; i++) {
      const ch = i < positions.length ? positions[i][0].data[positions[i][1]] : '\n';
      if (ch !== '\n') continue;
      if (i > lineStart) {
        range.setStart(positions[lineStart][0], positions[lineStart][1]);
        range.setEnd(positions[i - 1][0], positions[i - 1][1] + 1);
        if (lines(range.getClientRects()) > 1) wrapped.push(range.toString());
      }
      lineStart = i + 1;
    }
    if (wrapped.length) codeWraps.push(`${wrapped.length} of ${text.split('\n').length} lines wrap: ${snippet(wrapped[0])}`);
  }
  // The rows of a printed table in an output (span.printed-row, website/_ext/reading.py) stay in columns.
  for (const row of document.querySelectorAll('div.cell_output span.printed-row')) {
    if (lines(row.getClientRects()) > 1) codeWraps.push(`a printed table's row wraps: ${snippet(row.textContent)}`);
  }
  // Words broken inside: a word (letters and digits, a number with its decimals and unit) on two lines.
  const broken = [];
  const word = /\d{4}-\d\d-\d\d|\d\d:\d\d(?::\d\d)?|\p{N}[\p{N}.,]*\p{N}(?:[\s\u00a0]?%)?|\p{N}(?:[\s\u00a0]?%)?|[\p{L}\p{M}\p{N}]{2,}/gu;
  const skip = 'math, script, style, noscript, button, .shiftvit-copy, svg';
  // the whole page (the navigation and the contents too), what is shown of it
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  let node;
  while ((node = walker.nextNode())) {
    if (!node.data.trim() || !node.parentElement || node.parentElement.closest(skip)) continue;
    range.selectNodeContents(node);
    if (lines(range.getClientRects()) < 2) continue;  // on one line: nothing broken
    for (const match of node.data.matchAll(word)) {
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      if (lines(range.getClientRects()) > 1) broken.push(`"${match[0]}" in: ${snippet(node.data)}`);
    }
  }
  // Formulas cut: a display formula wider than its box, in a box that does not scroll to show it.
  const cut = [];
  for (const box of document.querySelectorAll('div.math')) {
    const math = box.querySelector('math');
    if (!math || !visible(box)) continue;
    const b = box.getBoundingClientRect();
    let left = Infinity, right = -Infinity;
    for (const el of [math, ...math.querySelectorAll('*')]) {
      const r = el.getBoundingClientRect();
      if (r.width > 0) { left = Math.min(left, r.left); right = Math.max(right, r.right); }
    }
    const width = right - left;
    const scrolls = ['auto', 'scroll'].includes(getComputedStyle(box).overflowX) && box.scrollWidth >= width - 1;
    const parentRight = article.getBoundingClientRect().right;
    if (left < b.left - 1 || (right > b.right + 1 && !scrolls) || b.right > parentRight + 1 || b.right > window.innerWidth + 1)
      cut.push(`${Math.round(width)} px of formula in a ${Math.round(box.clientWidth)} px box: ${snippet(math.textContent)}`);
  }
  // Copy buttons: on every code box a reader may run, and never over its text.
  const overlap = [], missing = [];
  for (const box of inputs) {
    const button = box.querySelector('button.shiftvit-copy');
    if (!button) { missing.push(snippet(box.textContent)); continue; }
    const b = button.getBoundingClientRect();
    const range = document.createRange();
    range.selectNodeContents(box.querySelector('pre'));
    const hit = [...range.getClientRects()].some(r => r.width > 0.5 && r.left < b.right && r.right > b.left && r.top < b.bottom && r.bottom > b.top);
    if (hit) overlap.push(snippet(box.textContent));
  }
  return {codeBoxes: inputs.length, codeWraps, broken, cut, overlap, missing};
})()
"""


SITE_RULES = r"""
(async (themeStrings, themePrefixes) => {
  // Issue 44, at the current width, on the whole page (navigation, contents and article).
  const korean = document.documentElement.lang === 'ko';
  const snippet = text => text.replace(/\s+/g, ' ').trim().slice(0, 60);
  const lines = rects => new Set([...rects].filter(r => r.width > 0.5 && r.height > 0.5).map(r => Math.round(r.top + r.height / 2))).size;
  const shown = el => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
  // Printed rows: inline, one line, one line's height, starting where the output's lines start.
  const rows = [];
  for (const row of document.querySelectorAll('span.printed-row')) {
    if (!shown(row)) continue;
    const pre = row.closest('pre');
    const style = getComputedStyle(pre);
    const lineHeight = parseFloat(style.lineHeight) || 1.2 * parseFloat(style.fontSize);
    // one box per piece (a search highlight inside a row is a piece of its own): the row's lines
    // are the groups of boxes that share a line, its height from its top to its bottom
    const rects = [...row.getClientRects()].filter(r => r.width > 0.5).sort((a, b) => a.top - b.top);
    const rowLines = rects.reduce((groups, r) => {
      const last = groups[groups.length - 1];
      if (last && r.top < last.bottom - 1) { last.bottom = Math.max(last.bottom, r.bottom); last.left = Math.min(last.left, r.left); }
      else groups.push({top: r.top, bottom: r.bottom, left: r.left});
      return groups;
    }, []);
    const start = pre.getBoundingClientRect().left + parseFloat(style.borderLeftWidth) + parseFloat(style.paddingLeft) - pre.scrollLeft;
    const atLineStart = !row.previousSibling || /\n$/.test(row.previousSibling.textContent || '') || row.previousSibling.textContent === '';
    const why = getComputedStyle(row).display !== 'inline' ? `display ${getComputedStyle(row).display}`
      : rowLines.length !== 1 ? `on ${rowLines.length} lines`
      : rowLines[0].bottom - rowLines[0].top > lineHeight + 0.5 ? `${(rowLines[0].bottom - rowLines[0].top).toFixed(1)} px tall in ${lineHeight.toFixed(1)} px lines`
      : atLineStart && Math.abs(rowLines[0].left - start) > 1.5 ? `starts ${(rowLines[0].left - start).toFixed(1)} px from the output's lines`
      : null;
    if (why) rows.push(`${why}: ${snippet(row.textContent)}`);
  }
  // Korean particles and brackets stay with the word before them: the second of two characters
  // that must stay together starts below the first (a box per character: inline code's padding
  // and font size move its box's centre, so line boxes are compared by their extent, not centres).
  const particles = [];
  if (korean) {
    const glue = /[0-9)\]'"’”%]\u2060?[\uac00-\ud7a3]|[\uac00-\ud7a3A-Za-z0-9]\u2060?[(\[]/g;
    const charBox = (node, offset) => {
      const r = document.createRange();
      r.setStart(node, offset);
      r.setEnd(node, offset + 1);
      return [...r.getClientRects()].find(b => b.width > 0.1) || null;
    };
    const apart = (a, b) => a && b && b.top >= a.bottom - 1;
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    let node;
    while ((node = walker.nextNode())) {
      const parent = node.parentElement;
      if (!parent || parent.closest('pre, code, script, style, math, svg, button') || !node.data.trim() || !shown(parent)) continue;
      for (const match of node.data.matchAll(glue)) {
        const last = match.index + match[0].length - 1;
        if (apart(charBox(node, match.index), charBox(node, last))) particles.push(`"${match[0]}" in: ${snippet(node.data)}`);
      }
      // after inline code, a link or bold text: "`compile`을"
      const before = node.previousSibling;
      const first = node.data[0] === '\u2060' ? 1 : 0;
      if (before && before.nodeType === 1 && /^[\uac00-\ud7a3]/.test(node.data.slice(first)) && before.textContent.trim()) {
        const inner = document.createTreeWalker(before, NodeFilter.SHOW_TEXT);
        let tail = null, t;
        while ((t = inner.nextNode())) if (t.data.trim()) tail = t;
        if (tail && apart(charBox(tail, tail.data.trimEnd().length - 1), charBox(node, first)))
          particles.push(`"${before.textContent.trim().slice(-8)}" + "${node.data.slice(first, first + 4)}"`);
      }
    }
  }
  // English interface strings on a Korean page: text outside the lessons' own content, and labels.
  const english = [];
  if (korean) {
    const strings = new Set(themeStrings);
    const isEnglish = text => strings.has(text) || themePrefixes.some(p => text.startsWith(p));
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    let node;
    while ((node = walker.nextNode())) {
      const parent = node.parentElement;
      if (!parent || parent.closest('script, style, pre, code, .cell_output, .cell_input, .language-switch') || !shown(parent)) continue;
      const text = node.data.replace(/\s+/g, ' ').trim();
      const whole = parent.innerText ? parent.innerText.replace(/\s+/g, ' ').trim() : text;
      if (text && (isEnglish(text) || (parent.childNodes.length > 1 && isEnglish(whole) && strings.has(whole))))
        english.push(`text "${text}" in <${parent.tagName.toLowerCase()}${parent.className ? '.' + [...parent.classList].join('.') : ''}>`);
    }
    for (const el of document.querySelectorAll('[title], [aria-label], [placeholder], [data-bs-title]')) {
      if (el.closest('.cell_output, .language-switch')) continue;
      for (const name of ['title', 'aria-label', 'placeholder', 'data-bs-title']) {
        const value = (el.getAttribute(name) || '').trim();
        if (value && isEnglish(value)) english.push(`${name}="${value}" on <${el.tagName.toLowerCase()}>`);
      }
    }
  }
  // Captions: not the alt text again, not "Plot in"; Korean on a Korean page. A figure opens on a tap.
  const captions = [], taps = [];
  for (const figure of document.querySelectorAll('figure')) {
    const img = figure.querySelector('img');
    const caption = figure.querySelector('figcaption');
    if (!img) continue;
    const alt = (img.getAttribute('alt') || '').trim();
    const text = caption ? caption.innerText.replace(/\s+/g, ' ').replace(/^(?:Figure|그림)\s*\d+\.\s*/, '').trim() : '';
    if (text && text === alt) captions.push(`the caption repeats the alt text: ${snippet(alt)}`);
    if (/^Plot in\b/i.test(text) || /^Plot in\b/i.test(alt)) captions.push(`"Plot in ...": ${snippet(text || alt)}`);
    if (korean && figure.classList.contains('lesson-figure') && !/[\uac00-\ud7a3]/.test(alt))
      captions.push(`an alt text without Korean: ${snippet(alt)}`);
    if (korean && figure.classList.contains('lesson-figure') && text && !/[\uac00-\ud7a3]/.test(text))
      captions.push(`a caption without Korean: ${snippet(text)}`);
    if (figure.classList.contains('lesson-figure')) {
      const link = img.closest('a[href]');
      if (!link || new URL(link.href, location.href).href !== new URL(img.getAttribute('src'), location.href).href)
        taps.push(`a tap does not open ${snippet(img.getAttribute('src') || '')} full size`);
    }
  }
  // Missing glyphs: a character drawn as the box of a character no font has (U+0378, unassigned).
  const missing = [];
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 40;
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  ctx.font = `24px ${getComputedStyle(document.body).fontFamily}`;
  ctx.textBaseline = 'top';
  const draw = ch => { ctx.clearRect(0, 0, 40, 40); ctx.fillText(ch, 4, 4); return ctx.getImageData(0, 0, 40, 40).data.join(','); };
  const box = draw('\u0378');
  const chars = new Set([...(document.body.innerText || '')].filter(ch => ch.codePointAt(0) > 0x2e7f || (ch.codePointAt(0) >= 0xe000 && ch.codePointAt(0) <= 0xf8ff)));
  for (const ch of chars) if (!/\s|\u2060/.test(ch) && draw(ch) === box) missing.push(`U+${ch.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')} "${ch}"`);
  return {rows, particles, english: [...new Set(english)], captions, taps, missing, rowsChecked: document.querySelectorAll('span.printed-row').length};
})
"""


def _check_site_rules(page: str, browser: Browser, width: int, report: Report) -> None:
    """Issue 44 at this width: printed rows, particles, English interface strings on Korean pages,
    captions, figures that open on a tap, missing glyphs."""
    found = browser.evaluate(f"{SITE_RULES}({json.dumps(list(THEME_STRINGS))}, {json.dumps(list(THEME_PREFIXES))})")
    if width == DESKTOP["width"]:
        report.rows_checked += found["rowsChecked"]
    for kind, key in (("printed-row", "rows"), ("particle-split", "particles"), ("english-interface", "english"),
                      ("caption", "captions"), ("figure-tap", "taps"), ("missing-glyph", "missing")):
        for detail in found[key][:5]:
            report.problems.append(Problem(page, kind, f"at {width} px: {detail}"))
        if len(found[key]) > 5:
            report.problems.append(Problem(page, kind, f"at {width} px: and {len(found[key]) - 5} more"))


TAP = r"""
(() => {
  const img = document.querySelector('figure.lesson-figure img');
  if (!img) return null;
  img.scrollIntoView({block: 'center'});
  const r = img.getBoundingClientRect();
  return {x: r.left + r.width / 2, y: r.top + r.height / 2, src: img.currentSrc || img.src};
})()
"""


def _check_figure_tap(browser: Browser, origin: str, page: str, report: Report) -> None:
    """A tap on a figure (a touch at its centre, 390 px) opens its image full size."""
    visit = PageVisit(browser, origin)
    visit.load(origin + page)
    target = browser.evaluate(TAP)
    if target is None:
        return
    browser.pump(lambda: False, 0.3)
    visit._loaded = False
    point = {"x": target["x"], "y": target["y"]}
    browser.call("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [point]})
    browser.call("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    browser.pump(lambda: visit._loaded, 10)
    browser.pump(lambda: False, 0.5)
    now = browser.evaluate("location.href")
    report.taps_checked += 1
    if now != target["src"]:
        report.problems.append(Problem(page, "figure-tap", f"a tap on the first figure leads to {now}, not its image {target['src']}"))


def _check_reader(page: str, browser: Browser, width: int, report: Report) -> None:
    """Issue 37 at this width: wrapping code (1280 px), broken words, cut formulas, copy buttons."""
    found = browser.evaluate(READER)
    _check_site_rules(page, browser, width, report)
    if width == DESKTOP["width"]:
        report.code_boxes_checked += found["codeBoxes"]
        for detail in found["codeWraps"]:
            report.problems.append(Problem(page, "code-wraps", f"at {width} px: {detail}"))
    for kind, key in (("broken-word", "broken"), ("formula-cut", "cut"), ("copy-overlap", "overlap"),
                      ("copy-missing", "missing")):
        for detail in found[key][:5]:
            report.problems.append(Problem(page, kind, f"at {width} px: {detail}"))
        if len(found[key]) > 5:
            report.problems.append(Problem(page, kind, f"at {width} px: and {len(found[key]) - 5} more"))


def _check_readable(page: str, browser: Browser, report: Report) -> None:
    """At the desktop width: boxes that scroll, tables that hide columns, images without alt text."""
    found = browser.evaluate(READABLE)
    report.boxes_checked += found["boxes"]
    report.tables_checked += found["tables"]
    report.images_checked += found["images"]
    for detail in found["scrolling"]:
        report.problems.append(Problem(page, "box-scrolls", detail))
    for detail in found["clipped"]:
        report.problems.append(Problem(page, "table-clipped", detail))
    for detail in found["alts"]:
        report.problems.append(Problem(page, "alt-text", detail))


def shot_pages(pages: list[str]) -> list[str]:
    """The pages screenshotted for a person: the home page, lessons 02, 05 and 07, the results page and
    lesson 02 in Korean."""
    return [p for p in pages if p in ("index.html", "results.html") or re.match(r"notebooks/(?:0[257]|ko/02)_", p)]


def _shoot(browser: Browser, page: str, shots: Path, width: int, report: Report) -> None:
    """What a reader sees on opening the page; on the home page also its first chart."""
    shots.mkdir(parents=True, exist_ok=True)
    stem = page.removesuffix(".html").replace("/", "_")
    views = [("", "window.scrollTo(0, 0)")]
    if page == "index.html":
        views.append(("-charts", "document.querySelector('figure')?.scrollIntoView()"))
    for suffix, scroll in views:
        browser.evaluate(f"{scroll}; new Promise(done => setTimeout(done, 300))")
        data = browser.call("Page.captureScreenshot", {"format": "png"})["data"]
        name = f"{stem}{suffix}-{width}.png"
        files.atomic_write_text(shots / name, base64.b64decode(data))
        report.shots.append(name)
    browser.evaluate("window.scrollTo(0, 0)")


class PageVisit:
    """Loads one URL and records what the browser reports meanwhile."""

    def __init__(self, browser: Browser, origin: str):
        self.browser = browser
        self.origin = origin
        self.status: int | None = None
        self.errors: list[tuple[str, str]] = []  # (kind, text)
        self.external: list[str] = []
        self._loaded = False
        self._documents: dict[str, int] = {}
        self._pending: dict[str, float] = {}
        self._last_activity = time.monotonic()
        self._urls: dict[str, str] = {}
        self.bytes = 0  # downloaded, figures left out (issue 37)
        self.figure_bytes = 0

    def __call__(self, event: dict) -> None:
        method, params = event["method"], event.get("params", {})
        if method == "Page.loadEventFired":
            self._loaded = True
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            self.errors.append(("console", text))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            self.errors.append(("page-error", details.get("exception", {}).get("description") or details.get("text", "")))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            self.errors.append(("console", f"{entry.get('text', '')} {entry.get('url', '')}".strip()))
        elif method == "Network.requestWillBeSent":
            url = params.get("request", {}).get("url", "")
            scheme = urlsplit(url).scheme
            if scheme in ("http", "https", "ws", "wss") and not url.startswith(self.origin):
                self.external.append(url)
            if scheme in ("http", "https", "file"):
                self._urls[params["requestId"]] = url
            if scheme in ("http", "https"):
                self._pending[params["requestId"]] = time.monotonic()
            self._last_activity = time.monotonic()
        elif method == "Network.responseReceived":
            if params.get("type") == "Document":  # the page's own status (its loader's request)
                self._documents[params.get("requestId")] = params["response"]["status"]
        elif method in ("Network.loadingFinished", "Network.loadingFailed"):
            url = self._urls.pop(params.get("requestId"), None)
            if url is not None and method == "Network.loadingFinished":
                size = int(params.get("encodedDataLength") or 0)
                if FIGURE_PATH.search(urlsplit(url).path):
                    self.figure_bytes += size
                else:
                    self.bytes += size
            self._pending.pop(params.get("requestId"), None)
            self._last_activity = time.monotonic()

    def _quiet(self, seconds: float) -> bool:
        return not self._pending and time.monotonic() - self._last_activity > seconds

    def load(self, url: str, timeout: float = 60.0) -> None:
        self.browser.on_event = self
        result = self.browser.call("Page.navigate", {"url": url})
        if result.get("errorText"):
            self.errors.append(("status", f"navigation failed: {result['errorText']}"))
            return
        if not self.browser.pump(lambda: self._loaded, timeout):
            self.errors.append(("status", f"no load event in {timeout:.0f} s"))
        self.browser.pump(lambda: self._quiet(0.3), 10)  # late requests (scripts, fonts)
        self.status = self._documents.get(result.get("loaderId"))


# --- the whole site ------------------------------------------------------------------------------


def site_pages(site: Path) -> list[str]:
    return sorted(
        p.relative_to(site).as_posix()
        for p in site.rglob("*.html")
        if not any(part.startswith("_") for part in p.relative_to(site).parts)
    )


def _file_for(site: Path, path: str) -> Path:
    target = site / unquote(path).lstrip("/")
    return target / "index.html" if target.is_dir() else target


def _html_ids(file: Path) -> set[str]:
    text = file.read_text(encoding="utf-8", errors="replace")
    return set(re.findall(r"""\s(?:id|name)=["']([^"']+)["']""", text))


def _gif_digest(src: str, site: Path, origin: str) -> str | None:
    if src.startswith("data:image/gif;base64,"):
        return hashlib.sha256(base64.b64decode(src.split(",", 1)[1])).hexdigest()
    if src.startswith(origin) and urlsplit(src).path.lower().endswith(".gif"):
        file = _file_for(site, urlsplit(src).path)
        return hashlib.sha256(file.read_bytes()).hexdigest() if file.is_file() else None
    return None


def _check_launch_links(page: str, audit: dict, lesson: Expected | None, stems: set[str], report: Report) -> None:
    """Launch links (buttons and badges: a link around an image) open this lesson; others some lesson."""

    def problem(kind: str, detail: str) -> None:
        report.problems.append(Problem(page, kind, detail))

    def colab(urls: list[str]) -> list[str]:
        return [u for u in urls if urlsplit(u).hostname == "colab.research.google.com" and "/github/" in u]

    launch = set(audit["launch"])
    pattern = re.compile(rf"https://colab\.research\.google\.com/github/{re.escape(REPO_SLUG)}/blob/{BRANCH}/notebooks/((?:ko/)?[^/?#]+)\.ipynb")
    for url in colab(audit["links"]):
        report.colab_links_checked += 1
        match = pattern.fullmatch(url)
        if lesson is not None and url in launch and url != lesson.colab:
            problem("colab", f"the launch link {url} does not open notebooks/{lesson.stem}.ipynb on {BRANCH}")
        elif not (match and match.group(1) in stems):
            problem("colab", f"{url} does not open a lesson notebook on {BRANCH}")
    if lesson is None:
        return
    binder = [u for u in launch if urlsplit(u).hostname == "mybinder.org"]
    if not colab(list(launch)):
        problem("colab", "no Colab launch button")
    if not binder:
        problem("binder", "no Binder launch button")
    for url in binder:
        parts = urlsplit(url)
        paths = parse_qs(parts.query).get("urlpath", [""])
        if parts.path != f"/v2/gh/{REPO_SLUG}/{BRANCH}" or not paths[0].endswith(f"/notebooks/{lesson.stem}.ipynb"):
            problem("binder", f"{url} does not open notebooks/{lesson.stem}.ipynb on {BRANCH}")


def check_site(
    site: Path,
    notebooks: Path,
    chromium: str | None = None,
    term: str = SEARCH_TERM,
    phone: bool = True,
    shots: Path | None = None,
    file_urls: bool = True,
) -> Report:
    site = Path(site).resolve()
    lessons = expected_lessons(Path(notebooks), term)
    korean = korean_lessons(Path(notebooks))  # the Korean edition, notebooks/ko/ (issue 29)
    lessons += korean
    by_page = {lesson.page: lesson for lesson in lessons}
    stems = {lesson.stem for lesson in lessons}
    report = Report(pages=site_pages(site))
    for lesson in lessons:
        if not (site / lesson.page).is_file():
            report.problems.append(Problem(lesson.page, "missing-page", f"no page for notebooks/{lesson.stem}.ipynb"))
    executable = chromium or find_chromium()
    if executable is None:
        raise RuntimeError("no Chromium found (Debian: apt-get install chromium; or set CHROMIUM)")
    if korean:
        require_korean_font()  # without one the Korean pages are empty boxes

    ids: dict[str, set[str]] = {}
    links: dict[str, list[str]] = {}
    with serve(site) as origin:
        browser = Browser(executable)
        try:
            for call in ("Page.enable", "Runtime.enable", "Log.enable", "Network.enable"):
                browser.call(call)
            browser.call("Network.setCacheDisabled", {"cacheDisabled": True})
            browser.call("Emulation.setDeviceMetricsOverride", DESKTOP)
            for page in report.pages:
                visit = PageVisit(browser, origin)
                _first_visit(browser, origin)
                visit.load(origin + page)
                audit = browser.evaluate(AUDIT)
                _record_visit(page, visit, audit, report)
                _check_readable(page, browser, report)
                _check_reader(page, browser, DESKTOP["width"], report)
                browser.pump(functools.partial(visit._quiet, 0.2), 5)  # fonts the page asked for meanwhile
                _check_weight(page, visit, report)
                if shots is not None and page in shot_pages(report.pages):
                    _shoot(browser, page, Path(shots), DESKTOP["width"], report)
                ids[page] = set(audit["ids"])
                links[page] = audit["links"]
                lesson = by_page.get(page)
                _check_launch_links(page, audit, lesson, stems, report)
                if lesson is not None:
                    _check_gifs(page, lesson, audit["images"], site, origin, report)
                    _check_language_switch(page, lesson, audit, origin, korean, report)
                _check_search_form(page, audit, origin, report)
            english = [lesson for lesson in lessons if not lesson.stem.startswith("ko/")]
            _check_search(browser, origin, english, term, report)
            if korean:  # a Korean word finds Korean pages; from a Korean page (lang=ko), Korean pages only
                _check_search(browser, origin, korean_lessons(Path(notebooks), KOREAN_TERM), KOREAN_TERM, report)
                _check_search(browser, origin, korean_lessons(Path(notebooks), term), term, report, lang="ko")
                # the Korean search page, as a Korean page's search field opens it
                _check_search(browser, origin, korean_lessons(Path(notebooks), term), term, report, page=KO_SEARCH_PAGE)
            if phone:
                browser.call("Emulation.setDeviceMetricsOverride", PHONE)
                for page in report.pages:
                    visit = PageVisit(browser, origin)
                    visit.load(origin + page)
                    size = browser.evaluate("({s: document.documentElement.scrollWidth, w: window.innerWidth})")
                    if size["s"] > PHONE["width"] or size["w"] > PHONE["width"]:
                        report.problems.append(Problem(page, "phone", f"{size['s']} px wide on a {PHONE['width']} px screen"))
                    _check_reader(page, browser, PHONE["width"], report)
                    if shots is not None and page in shot_pages(report.pages):
                        _shoot(browser, page, Path(shots), PHONE["width"], report)
                tapped = [p for p in report.pages if p.startswith("notebooks/ko/")
                          and "lesson-figure" in (site / p).read_text(encoding="utf-8", errors="replace")]
                if tapped:  # a tap, once: the rule "figure-tap" checks every figure's link
                    _check_figure_tap(browser, origin, tapped[0], report)
            if file_urls:
                browser.call("Emulation.setDeviceMetricsOverride", DESKTOP)
                _check_file_urls(browser, site, report.pages, term, report)
        finally:
            browser.close()
        _check_links(site, origin, links, ids, report)
    return report


def _check_file_urls(browser: Browser, site: Path, pages: list[str], term: str, report: Report) -> None:
    """Every page opened from file:// (and a search there): no console error, no uncaught exception."""
    for page in [*pages, f"search.html?q={term}"]:
        path, _, query = page.partition("?")
        visit = PageVisit(browser, "file://")
        visit.load((site / path).as_uri() + (f"?{query}" if query else ""))
        if query:  # let the search run and show its results (and their summaries)
            deadline = time.monotonic() + 30
            while browser.evaluate(SEARCH_WAIT) is None and time.monotonic() < deadline:
                browser.pump(lambda: False, 0.2)
            browser.pump(lambda: False, 1.0)
        for _kind, text in visit.errors:
            report.problems.append(Problem(page, "file-console", text[:300]))


def _check_weight(page: str, visit: PageVisit, report: Report) -> None:
    """What the page downloaded on a first visit (no cache), its own figures left out, within budget."""
    if page in report.weights:  # the same search, run again for the Korean term
        return
    report.weights[page] = visit.bytes
    if visit.bytes > WEIGHT_BUDGET:
        report.problems.append(Problem(page, "weight", f"{visit.bytes / 1e6:.2f} MB without its figures "
                                       f"({visit.figure_bytes / 1e6:.2f} MB of figures), over {WEIGHT_BUDGET / 1e6:.1f} MB"))


def _first_visit(browser: Browser, origin: str) -> None:
    """Forget what earlier pages stored (local storage, cookies): each page is checked as a first visit."""
    browser.call("Storage.clearDataForOrigin", {"origin": origin.rstrip("/"), "storageTypes": "all"})


def _record_visit(page: str, visit: PageVisit, audit: dict, report: Report) -> None:
    if visit.status != 200:
        report.problems.append(Problem(page, "status", f"status {visit.status}"))
    for kind, text in visit.errors:
        report.problems.append(Problem(page, kind, text[:300]))
    for url in sorted(set(visit.external)):
        report.problems.append(Problem(page, "external-request", url[:300]))
    for image in audit["images"]:
        if not image["width"]:
            report.problems.append(Problem(page, "image", f"not loaded: {image['src'][:200]}"))


def _check_gifs(page: str, lesson: Expected, images: list[dict], site: Path, origin: str, report: Report) -> None:
    shown: dict[str, int] = {}
    for image in images:
        digest = _gif_digest(image["src"], site, origin)
        if digest and image["width"]:
            shown[digest] = shown.get(digest, 0) + 1
    for digest, count in lesson.gifs.items():
        report.gifs_checked += count
        if shown.get(digest, 0) < count:
            report.problems.append(
                Problem(page, "gif", f"GIF {digest[:12]} of the stored outputs: {shown.get(digest, 0)} of {count} shown")
            )


def _check_links(site: Path, origin: str, links: dict[str, list[str]], ids: dict[str, set[str]], report: Report) -> None:
    for page, hrefs in links.items():
        for href in dict.fromkeys(hrefs):
            if not href.startswith(origin):
                continue
            report.links_checked += 1
            parts = urlsplit(href)
            file = _file_for(site, parts.path)
            target = file.relative_to(site).as_posix() if file.is_relative_to(site) else None
            if target is None or not file.is_file():
                report.problems.append(Problem(page, "link", f"{href[len(origin):]} does not exist"))
                continue
            anchor = unquote(parts.fragment)
            if anchor and file.suffix == ".html":
                known = ids[target] if target in ids else _html_ids(file)
                if anchor not in known:
                    report.problems.append(Problem(page, "anchor", f"{href[len(origin):]}: no #{anchor} on {target}"))


SEARCH_WAIT = r"""
(() => {
  const box = document.querySelector('#search-results');
  if (!box) return null;
  const text = box.innerText || '';
  // English or Korean (notebooks/ko/search.html); the status line only where there is one
  // (a Korean summary may say "없습니다" long before the search is done)
  const status = box.querySelector('p.search-summary')?.innerText;
  const done = /found|no documents|did not match|찾았습니다|없습니다/i.test(status ?? text) && !/searching|검색 중/i.test(status ?? box.querySelector('p')?.innerText ?? '');
  return done ? [...box.querySelectorAll('a[href]')].map(a => a.href) : null;
})()
"""


def _check_search_form(page: str, audit: dict, origin: str, report: Report) -> None:
    """A Korean page's search field opens the Korean search page; an English one, the
    English search page."""
    if page in ("search.html", KO_SEARCH_PAGE):
        return
    wanted = KO_SEARCH_PAGE if audit.get("lang") == "ko" else "search.html"
    for action in audit.get("searchForms", []):
        if action.startswith(origin) and urlsplit(action).path.lstrip("/") != wanted:
            report.problems.append(Problem(page, "search-language", f"its search field opens "
                                           f"{urlsplit(action).path.lstrip('/')}, not {wanted}"))


def _check_search(browser: Browser, origin: str, lessons: list[Expected], term: str, report: Report,
                  lang: str | None = None, page: str = "search.html") -> None:
    """The search lists every lesson that mentions the term, and only pages of one language (issue
    38): the one asked for (lang=ko from a Korean page's search box), or else the term's script;
    the Korean search page Korean pages only, on a page that is Korean itself."""
    visit = PageVisit(browser, origin)
    visit.load(f"{origin}{page}?q={quote(term)}" + (f"&lang={lang}" if lang else ""))
    hits = None
    deadline = time.monotonic() + 30
    while hits is None and time.monotonic() < deadline:
        hits = browser.evaluate(SEARCH_WAIT)
        if hits is None:
            browser.pump(lambda: False, 0.2)
    for kind, text in visit.errors:
        report.problems.append(Problem(f"{page}?q={term}", kind, text[:300]))
    if hits is None:
        report.problems.append(Problem(page, "search", f"a search for {term!r} did not finish in 30 s"))
        return
    found = {urlsplit(h).path.lstrip("/") for h in hits if h.startswith(origin)}
    report.search_hits = sorted(set(report.search_hits) | found)  # both searches: ShiftViT, then 시프트

    expected = [lesson for lesson in lessons if lesson.mentions_term]
    if not expected:
        report.problems.append(Problem(page, "search", f"no lesson mentions {term!r}: nothing to find"))
    for lesson in expected:
        if lesson.page not in found:
            report.problems.append(Problem(page, "search", f"a search for {term!r} does not list {lesson.page}"))
    korean = lang == "ko" if lang else re.search("[\uac00-\ud7a3]", term) is not None
    if page == KO_SEARCH_PAGE:
        korean = True
        if browser.evaluate("document.documentElement.lang") != "ko":
            report.problems.append(Problem(page, "search-language", "the Korean search page is not marked Korean"))
        _check_site_rules(page, browser, DESKTOP["width"], report)  # its messages in Korean too
    for hit in sorted(found):
        if hit.startswith("notebooks/ko/") != korean:
            report.problems.append(Problem(page, "search-language", f"a search for {term!r}"
                                           f"{f' (lang={lang})' if lang else ''} lists {hit}, a page in the other language"))
    if lang is None and term == SEARCH_TERM:
        _check_search_summaries(browser, origin, report)


def _check_search_summaries(browser: Browser, origin: str, report: Report, word: str = "shift") -> None:
    """A result's summary is the page's text, not the theme's colour-mode menu ("Light Dark"), and the
    search with its summaries downloads no more than a page may (issue 37: not every result's page)."""
    visit = PageVisit(browser, origin)
    visit.load(f"{origin}search.html?q={word}")
    deadline = time.monotonic() + 30
    while browser.evaluate(SEARCH_WAIT) is None and time.monotonic() < deadline:
        browser.pump(lambda: False, 0.2)
    browser.pump(lambda: False, 1.5)  # the summaries arrive one by one
    browser.pump(lambda: visit._quiet(0.3), 10)
    _check_weight(f"search.html?q={word}", visit, report)
    summaries = browser.evaluate("[...document.querySelectorAll('#search-results p.context')].map(p => p.innerText)") or []
    for summary in summaries:
        if re.search(r"\bLight\s+Dark\b|\bSettings\s+Light\b", summary):
            report.problems.append(Problem("search.html", "search-summary", f"the colour-mode menu in a summary: {summary[:120]}"))
    # An English word, searched for on its own, lists English pages only (issue 38).
    hits = browser.evaluate(SEARCH_WAIT) or []
    for hit in sorted({urlsplit(h).path.lstrip("/") for h in hits if h.startswith(origin)}):
        if hit.startswith("notebooks/ko/"):
            report.problems.append(Problem("search.html", "search-language", f"a search for {word!r} lists {hit}, a Korean page"))


def main(argv: list[str] | None = None) -> int:
    repo = Path(__file__).resolve().parents[1]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", nargs="?", type=Path, default=repo / "build" / "site")
    parser.add_argument("--notebooks", type=Path, default=repo / "notebooks")
    parser.add_argument("--shots", type=Path, nargs="?", const=repo / "build" / "site-shots", default=None,
                        help="write screenshots at 1280 and 390 px of the home page, lessons 02, 05 and 07, the results "
                             "page and Korean lesson 02 "
                             "(default folder: build/site-shots)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    report = check_site(args.site, args.notebooks, shots=args.shots)
    for problem in report.problems:
        print(problem)
    print(
        f"{len(report.pages)} pages, {report.links_checked} internal links, {report.gifs_checked} GIFs, "
        f"{report.colab_links_checked} Colab links, {report.boxes_checked} code and output boxes, "
        f"{report.tables_checked} tables, {report.images_checked} images checked; {report.rows_checked} printed rows "
        f"measured at 1280 px, {report.taps_checked} figure tapped at 390 px; {len(report.shots)} screenshots; search hits: {len(report.search_hits)}; "
        f"heaviest page without its figures: {max(report.weights.values(), default=0) / 1e6:.2f} MB; "
        f"{len(report.problems)} problems; {time.perf_counter() - start:.1f} s"
    )
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
