"""Build the Korean edition's notebooks from the English ones and the translation catalogue.

    python scripts/build_korean.py                 build notebooks/ko/*.ipynb (the default)
    python scripts/build_korean.py --check         exit 1 naming every stale or missing translation
                                                   (file, cell id, reason) and every built notebook
                                                   that differs from what would be built
    python scripts/build_korean.py todo [STEM...]  the cells that need a translation, with their English
                                                   text (and the old Korean, when a translation is stale)
    python scripts/build_korean.py todo --json STEM   the same for one lesson as a JSON template
                                                   {cell_id: english source}, ready to fill in and import
    python scripts/build_korean.py refresh [STEM...]  carry the Korean comments of stale code cells over
                                                   to the new English code where the English comments
                                                   are unchanged (git history holds the old English)
    python scripts/build_korean.py import STEM FILE   record the translations in FILE, a JSON object
                                                   {cell_id: korean source}, hashed against the current
                                                   English cells; a value may also be an object
                                                   {english text: korean text} of replacements applied
                                                   to the English source (handy for code comments)

The English notebooks stay the source: a Korean notebook is the English one (code, outputs, cell ids,
metadata) with each translated cell's source replaced by its catalogue entry. Code cells without comments
need no entry and are copied as they are. See i18n/ko/README.md.
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import re
import sys
import tokenize
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from korean_catalog import (  # noqa: E402
    MEASURED,
    ROOT,
    cell_source,
    english_hash,
    files,
    load_catalog,
    measured_text,
    save_catalog,
)

ENGLISH_DIR = ROOT / "notebooks"
KOREAN_DIR = ENGLISH_DIR / "ko"
README_KO = ROOT / "README.ko.md"
BADGE_EN = "/blob/main/notebooks/"
BADGE_KO = "/blob/main/notebooks/ko/"
# a lesson on GitHub (its Colab badge): the Korean twin; the practice copies have none
LESSON_ON_GITHUB = re.compile(re.escape(BADGE_EN) + r"(?=[0-9]{2}_)")
SECTION_LINK = re.compile(r"(\]\([0-9]{2}_[A-Za-z0-9_]+\.ipynb)#[^)\s]+\)")


def english_notebooks() -> list[Path]:
    return sorted(ENGLISH_DIR.glob("[0-9][0-9]_*.ipynb"))


def load_notebook(path: Path) -> dict:
    """A notebook, or a one-line ``ValueError`` naming the file: cut short, or a cell without an id."""
    nb = files.read_json(path, "notebook")
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise ValueError(f"{path} is not a notebook (no list of cells); restore it from version control")
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict) or not isinstance(cell.get("id"), str) or "cell_type" not in cell:
            raise ValueError(f"{path}: cell {index} has no id (or no cell_type); the Korean edition matches "
                             "cells by id: open and save the notebook in Jupyter (nbformat 4.5) to add ids")
    return nb


def dump_notebook(nb: dict) -> str:
    return json.dumps(nb, ensure_ascii=False, indent=1) + "\n"


def _code_without_magics(source: str) -> str:
    # IPython lines (%pip, !ls) are not Python: keep them as a string token so tokenize can read the rest.
    lines = []
    for line in source.splitlines(keepends=True):
        stripped = line.lstrip()
        if stripped.startswith(("%", "!")):
            indent = line[: len(line) - len(stripped)]
            lines.append(indent + repr(stripped.rstrip("\n")) + ("\n" if line.endswith("\n") else ""))
        else:
            lines.append(line)
    return "".join(lines)


def code_tokens(source: str) -> list[tuple[int, str]]:
    """A code cell's tokens without comments and layout: equal for two cells that differ only in comments."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER}
    tokens = tokenize.generate_tokens(io.StringIO(_code_without_magics(source) + "\n").readline)
    return [(tok.type, tok.string) for tok in tokens if tok.type not in skip]


def without_comments(source: str) -> str:
    """A code cell's text with its comments removed and trailing spaces stripped, line by line."""
    text = _code_without_magics(source)
    lines = text.splitlines()
    tokens = tokenize.generate_tokens(io.StringIO(text + "\n").readline)
    for tok in sorted((t for t in tokens if t.type == tokenize.COMMENT), key=lambda t: t.start, reverse=True):
        row, col = tok.start
        lines[row - 1] = lines[row - 1][:col]
    return "\n".join(line.rstrip() for line in lines).rstrip("\n")


def _docstring_spans(source: str) -> list[tuple[int, int, int, int]]:
    """(start line, start column, end line, end column) of each function's and class's docstring."""
    import ast

    try:
        tree = ast.parse(_code_without_magics(source))
    except SyntaxError:
        return []  # not Python (yet): only comments are compared
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                spans.append((first.lineno, first.col_offset, first.end_lineno, first.end_col_offset))
    return spans


def without_docstrings(source: str) -> str:
    """A code cell with each function's and class's docstring replaced by an empty one (\"\"\"\"\"\")."""
    lines = source.splitlines(keepends=True)
    for start_line, start_col, end_line, end_col in sorted(_docstring_spans(source), reverse=True):
        head = lines[start_line - 1].encode("utf-8")[:start_col].decode("utf-8")  # ast counts bytes
        tail = lines[end_line - 1].encode("utf-8")[end_col:].decode("utf-8")
        lines[start_line - 1:end_line] = [head + '""""""' + tail]
    return "".join(lines)


def code_only(source: str) -> str:
    """What the Korean code cell must keep byte for byte: the code without comments and docstrings.

    A translator changes comments and docstrings (exercise specifications included); any other
    change, a name, a number, a string that is not a docstring, makes the cell differ.
    """
    return without_comments(without_docstrings(source))


def has_docstring(source: str) -> bool:
    return bool(_docstring_spans(source))


def has_comment(source: str) -> bool:
    try:
        return any(tok_type == tokenize.COMMENT for tok_type, _ in _all_tokens(source))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return "#" in source


def _all_tokens(source: str):
    tokens = tokenize.generate_tokens(io.StringIO(_code_without_magics(source) + "\n").readline)
    return [(tok.type, tok.string) for tok in tokens]


def needs_translation(cell) -> bool:
    if cell["cell_type"] == "markdown":
        return True
    if cell["cell_type"] == "code":
        return has_comment(cell_source(cell)) or has_docstring(cell_source(cell))
    return False


def korean_measured(text: str) -> str:
    """The runner's measured text ("0.1 min, measured by the lesson runner (2 CPU cores, 2026-11-24)") in Korean."""
    import re

    match = re.fullmatch(r"(.+?) min, measured by the lesson runner \((\d+) CPU cores?, ([0-9-]+)(, load [\d.]+)?\)", text)
    if match:
        minutes, cores, day, load = match.groups()
        load = f", 부하 {load.split()[-1]}" if load else ""
        return f"{minutes}분, 레슨 실행기가 측정 (CPU 코어 {cores}개, {day}{load})"
    match = re.fullmatch(r"(.+?) min(.*)", text)
    if match:
        return f"{match.group(1)}분{match.group(2)}"
    return text


GLOSSARY = ROOT / "i18n" / "ko" / "glossary.md"
RULED_OUT_HEADING = "## Ruled-out variants"
CODE_BLOCK = re.compile(r"```.*?```", re.DOTALL)
CODE_SPAN = re.compile(r"`(?:[^`\n]|\n(?!\s*\n))*`")  # may run over a line break, not a blank line
LINK_TARGET = re.compile(r"\]\([^)\s]*\)")
CODE_MARK = "⟨⟩"  # where inline code was: "**보세요.** `x`를" must not read as "**보세요.** 를"
HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def prose(source: str, cell_type: str) -> str:
    """The words a reader reads: a markdown cell without code blocks, link targets and HTML comments
    (inline code becomes a mark); a code cell's comments only. Glossary and number checks look at this, never at code."""
    if cell_type == "code":
        try:
            return "\n".join(tok.string for tok in comments(source))
        except (tokenize.TokenError, SyntaxError, IndentationError):
            return ""
    text = HTML_COMMENT.sub("", CODE_BLOCK.sub("", source))
    return CODE_SPAN.sub(CODE_MARK, LINK_TARGET.sub("]", text))


def glossary_rules(path: Path = GLOSSARY) -> list[tuple[re.Pattern, str, str]]:
    """The glossary's ruled-out variants: (pattern, the term to use instead, the concept).

    A table under the heading "## Ruled-out variants" with a regular expression in backticks in its
    first column; a damaged pattern is a one-line error naming the glossary row.
    """
    rules, inside = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("## "):
            inside = line.strip() == RULED_OUT_HEADING
            continue
        # a cell may hold an escaped pipe (\\|), as Markdown tables write an alternation
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if not inside or len(cells) < 3 or not cells[0].startswith("`"):
            continue
        try:
            rules.append((re.compile(cells[0].strip("`")), cells[1], cells[2]))
        except re.error as error:
            raise ValueError(f"{path}:{number}: the ruled-out pattern {cells[0]} is not a regular "
                             f"expression ({error}); fix that row") from None
    return rules


def glossary_violations(text: str, rules=None) -> list[str]:
    """Every ruled-out variant in ``text`` (prose), as 'variant: use TERM (concept)'."""
    found = []
    for pattern, term, concept in glossary_rules() if rules is None else rules:
        for match in pattern.finditer(text):
            found.append(f"{match.group(0)!r}: use {term} ({concept})")
    return found


NUMBER = re.compile(r"(?<![\w.])(\d+(?:,\d{3})*(?:\.\d+)?)(\s*(?:million|billion|만|억)(?![a-z]))?")
SCALE = {"million": 10**6, "billion": 10**9, "만": 10**4, "억": 10**8}
SPELLED_OUT = 12  # English writes small numbers as words ("two points", "a third"); Korean may use digits


def numbers(text: str) -> list[str]:
    """The numbers in prose, as canonical values: "11.7 million" and "1,170만" both give 11700000."""
    from decimal import Decimal

    values = []
    for digits, scale in NUMBER.findall(text):
        value = Decimal(digits.replace(",", ""))
        if scale:
            value *= SCALE[scale.strip()]
        values.append(format(value.normalize(), "f"))
    return values


def number_slips(english: str, korean: str) -> list[str]:
    """Numbers of the English prose missing from the Korean, and Korean numbers the English lacks
    (apart from small integers, which English spells out)."""
    from collections import Counter

    en, ko = Counter(numbers(english)), Counter(numbers(korean))
    missing = sorted((en - ko).elements())
    extra = sorted(n for n in (ko - en).elements() if not (n.isdigit() and int(n) <= SPELLED_OUT))
    slips = [f"{n} is in the English, not in the Korean" for n in missing]
    return slips + [f"{n} is in the Korean, not in the English" for n in extra]


def problems(stem: str, nb: dict, catalog: dict) -> list[str]:
    """Every cell of one lesson whose translation is missing or stale, as 'file: cell id: reason'."""
    found = []
    cells = catalog.get("cells", {})
    ids = set()
    rules = glossary_rules()
    for cell in nb["cells"]:
        ids.add(cell.get("id"))
        if not needs_translation(cell):
            continue
        entry = cells.get(cell["id"])
        where = f"notebooks/{stem}.ipynb: cell {cell['id']} ({cell['cell_type']})"
        if entry is None:
            found.append(f"{where}: no translation")
        elif entry["en_sha256"] != english_hash(cell_source(cell)):
            found.append(f"{where}: stale, the English cell changed after it was translated")
        elif cell["cell_type"] == "code" and code_only(entry["ko"]) != code_only(cell_source(cell)):
            found.append(f"{where}: the translated code differs from the English code (not only comments "
                         "and docstrings)")
        else:
            korean = korean_source(entry["ko"], cell_source(cell))
            if cell["cell_type"] == "markdown":
                found += [f"{where}: numbers differ: {slip}"
                          for slip in number_slips(prose(cell_source(cell), "markdown"), prose(korean, "markdown"))]
            found += [f"{where}: {variant}" for variant in glossary_violations(prose(korean, cell["cell_type"]), rules)]
    for cell_id in sorted(set(cells) - ids):
        found.append(f"notebooks/{stem}.ipynb: cell {cell_id}: translated, but no such cell in the English notebook")
    return found


def korean_source(korean: str, english: str) -> str:
    """A catalogue entry as the Korean notebook shows it: the measured time filled in, badges to ko/."""
    if MEASURED in korean:
        measured = measured_text(english)
        korean = korean.replace(MEASURED, korean_measured(measured) if measured else "")
    return LESSON_ON_GITHUB.sub(BADGE_KO, korean)


def build_one(nb: dict, catalog: dict) -> dict:
    """The Korean notebook: the English one with every fresh translation in place."""
    ko = copy.deepcopy(nb)
    cells = catalog.get("cells", {})
    for cell in ko["cells"]:
        entry = cells.get(cell.get("id"))
        if entry is None:  # not translated (yet): the English cell, but its Colab badge opens the Korean notebook
            if cell["cell_type"] == "markdown" and BADGE_EN in cell_source(cell):
                cell["source"] = LESSON_ON_GITHUB.sub(BADGE_KO, cell_source(cell)).splitlines(keepends=True)
            continue
        english = cell_source(cell)
        if cell["cell_type"] == "code" and entry["en_sha256"] != english_hash(english):
            continue  # stale: the English code (the Korean may hold old code); `refresh` carries comments over
        source = korean_source(entry["ko"], english)
        if cell["cell_type"] == "markdown":
            # A section anchor is the slug of an English heading; the Korean lesson's headings are
            # Korean, so such a link opens the other lesson at its top.
            source = SECTION_LINK.sub(r"\1)", source)
        cell["source"] = source.splitlines(keepends=True)
    ko.setdefault("metadata", {})["language"] = "ko"
    ko["metadata"]["language_info"] = dict(ko["metadata"].get("language_info", {}))
    return ko


def readme_problems() -> list[str]:
    """README.ko.md: the glossary's ruled-out variants, named like a cell's."""
    text = prose(README_KO.read_text(encoding="utf-8"), "markdown")
    return [f"README.ko.md: {variant}" for variant in glossary_violations(text)]


def build_all(write: bool) -> list[str]:
    report = readme_problems()
    for path in english_notebooks():
        stem = path.stem
        nb = load_notebook(path)
        catalog = load_catalog(stem)
        report += problems(stem, nb, catalog)
        text = dump_notebook(build_one(nb, catalog))
        target = KOREAN_DIR / path.name
        if write:
            target.parent.mkdir(parents=True, exist_ok=True)
            files.atomic_write_text(target, text)
        elif not target.exists() or target.read_text(encoding="utf-8") != text:
            report.append(f"notebooks/ko/{path.name}: out of date, run python scripts/build_korean.py")
    return report


def todo(stems: list[str], as_json: bool) -> int:
    paths = [p for p in english_notebooks() if not stems or p.stem in stems]
    template = {}
    count = 0
    for path in paths:
        nb = load_notebook(path)
        catalog = load_catalog(path.stem)
        for cell in nb["cells"]:
            if not needs_translation(cell):
                continue
            entry = catalog["cells"].get(cell["id"])
            english = cell_source(cell)
            if entry is not None and entry["en_sha256"] == english_hash(english):
                continue
            count += 1
            template[cell["id"]] = english
            if as_json:
                continue
            state = "missing" if entry is None else "stale"
            print(f"===== {path.stem} {cell['id']} ({cell['cell_type']}, {state})")
            print(english)
            if entry is not None:
                print(f"----- old Korean of {cell['id']} (made from an earlier English text)")
                print(entry["ko"])
    if as_json:
        print(json.dumps(template, ensure_ascii=False, indent=1))
    else:
        print(f"{count} cell(s) need a translation; fill in a JSON {{cell_id: korean}} and run "
              f"python scripts/build_korean.py import STEM FILE")
    return 0


def import_translations(stem: str, file: Path) -> int:
    nb = load_notebook(ENGLISH_DIR / f"{stem}.ipynb")
    by_id = {cell["id"]: cell for cell in nb["cells"]}
    new = files.read_json(file, "translation file")
    if not isinstance(new, dict):
        raise ValueError(f"{file} must hold a JSON object of cell id -> translation")
    catalog = load_catalog(stem)
    for cell_id, value in new.items():
        if cell_id not in by_id:
            raise SystemExit(f"{stem}: no cell {cell_id} in the English notebook")
        english = cell_source(by_id[cell_id])
        if isinstance(value, dict):  # replacements applied to the English source
            korean = english
            for old, replacement in value.items():
                if old not in korean:
                    raise SystemExit(f"{stem} {cell_id}: {old!r} is not in the English cell")
                korean = korean.replace(old, replacement)
        else:
            korean = value
        if by_id[cell_id]["cell_type"] == "code" and code_only(korean) != code_only(english):
            raise SystemExit(f"{stem} {cell_id}: the translation changes the code, not only comments and docstrings")
        catalog["cells"][cell_id] = {"en_sha256": english_hash(english), "ko": korean}
    save_catalog(catalog)
    print(f"{stem}: {len(new)} cell(s) recorded")
    return 0


def comments(source: str) -> list[tokenize.TokenInfo]:
    """A code cell's comment tokens, in order (IPython lines hold none)."""
    tokens = tokenize.generate_tokens(io.StringIO(_code_without_magics(source) + "\n").readline)
    return [tok for tok in tokens if tok.type == tokenize.COMMENT]


def with_comments(source: str, texts: list[str]) -> str:
    """``source`` with its comments replaced, in order, by ``texts``."""
    lines = source.splitlines(keepends=True)
    for tok, text in sorted(zip(comments(source), texts), key=lambda pair: pair[0].start, reverse=True):
        (row, start), (_, end) = tok.start, tok.end
        lines[row - 1] = lines[row - 1][:start] + text + lines[row - 1][end:]
    return "".join(lines)


def english_source_at(stem: str, cell_id: str, digest: str) -> str | None:
    """The English text a translation was made from: the cell's version in git history with that hash."""
    import subprocess

    path = f"notebooks/{stem}.ipynb"
    log = subprocess.run(["git", "log", "--format=%H", "--", path], cwd=ROOT, capture_output=True, text=True)
    for commit in log.stdout.split():
        shown = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, text=True)
        if shown.returncode:
            continue
        for cell in json.loads(shown.stdout)["cells"]:
            if cell.get("id") == cell_id and english_hash(cell_source(cell)) == digest:
                return cell_source(cell)
    return None


def refresh(stems: list[str]) -> int:
    """Carry the Korean comments of stale code cells over to the new English code.

    Only where the English comments are word for word those the translation was made from (the
    code around them changed: reformatting, a new argument); other stale cells are listed for a
    translator (``todo``).
    """
    carried, left = 0, []
    for path in english_notebooks():
        if stems and path.stem not in stems:
            continue
        nb, catalog = load_notebook(path), load_catalog(path.stem)
        for cell in nb["cells"]:
            entry = catalog["cells"].get(cell.get("id"))
            english = cell_source(cell)
            if cell["cell_type"] != "code" or entry is None or entry["en_sha256"] == english_hash(english):
                continue
            before = english_source_at(path.stem, cell["id"], entry["en_sha256"])
            old_english = [tok.string for tok in comments(before)] if before is not None else None
            if old_english != [tok.string for tok in comments(english)]:
                left.append(f"{path.stem} {cell['id']}: its English comments changed; translate it (todo)")
                continue
            korean = with_comments(english, [tok.string for tok in comments(entry["ko"])])
            catalog["cells"][cell["id"]] = {"en_sha256": english_hash(english), "ko": korean}
            carried += 1
        save_catalog(catalog)
    print(f"{carried} code cell(s) carried over to the new English code")
    for line in left:
        print(line)
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except (ValueError, OSError) as error:  # a damaged file: one line naming it
        print(f"error: {' '.join(str(error).split())}", file=sys.stderr)
        return 2


def _main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "todo":
        parser = argparse.ArgumentParser(prog="build_korean.py todo")
        parser.add_argument("stems", nargs="*")
        parser.add_argument("--json", action="store_true")
        args = parser.parse_args(argv[1:])
        return todo(args.stems, args.json)
    if argv and argv[0] == "refresh":
        return refresh(argv[1:])
    if argv and argv[0] == "import":
        parser = argparse.ArgumentParser(prog="build_korean.py import")
        parser.add_argument("stem")
        parser.add_argument("file", type=Path)
        args = parser.parse_args(argv[1:])
        return import_translations(args.stem, args.file)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    report = build_all(write=not args.check)
    for line in report:
        print(line)
    if args.check:
        print(f"{len(report)} problem(s)" if report else "the Korean edition is up to date")
        return 1 if report else 0
    print(f"built {len(english_notebooks())} notebooks in notebooks/ko/; {len(report)} cell(s) still need a translation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
