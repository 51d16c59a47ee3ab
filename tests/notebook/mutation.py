"""The lessons' solution folds, read from the notebooks, and wrong variants of them.

``folds(lesson)`` finds every blank's and every checked exercise's "Solution" fold: the
cell the learner fills, the fold's code and the check that judges it. ``fill`` puts a
fold's code into its cell; ``mutants`` makes the AST-level wrong variants of a fold's
code (operators swapped, integers +-1, slice bounds shifted, call arguments swapped,
statements dropped). ``tests/notebook/test_checks.py`` runs them through the lessons' own checks.
"""

from __future__ import annotations

import ast
import itertools
import re
from typing import NamedTuple

from fakes import NOTEBOOKS, cells


class Fold(NamedTuple):
    lesson: str
    cell: str  # the code cell the learner fills
    code: str  # the fold's solution code
    check: str  # checks.<name> that judges it
    name: str  # what the filled cell defines and the check is given
    blank: bool  # a blank (try_yours) or an exercise (checks.exercise)


def _source(cell: dict) -> str:
    return "".join(cell["source"])


def _fold_code(text: str) -> str:
    """A fold's code: its python block, else its first inline code, else its bold number."""
    block = re.search(r"```python\n(.*?)```", text, flags=re.S)
    if block:
        return block.group(1)
    inline = re.search(r"`([^`]+)`", text)
    bold = re.search(r"\*\*([\d,]+)\*\*", text)
    if bold and (not inline or "C" in inline.group(1) and "²" in inline.group(1)):
        return bold.group(1).replace(",", "")
    return inline.group(1)


def folds(lesson: str) -> list[Fold]:
    lesson_cells = cells(NOTEBOOKS / f"{lesson}.ipynb")
    found = []
    for index, cell in enumerate(lesson_cells):
        text = _source(cell)
        if cell["cell_type"] != "markdown" or "<summary>Solution" not in text:
            continue
        before = [_source(c) for c in lesson_cells[max(0, index - 2) : index] if c["cell_type"] == "code"]
        after = _source(lesson_cells[index + 1]) if index + 1 < len(lesson_cells) else ""
        blank = "<summary>Solution of the blank" in text
        checking = after if blank else next((c for c in reversed(before) if "checks.exercise(" in c), "")
        name = re.search(r"checks\.(check_\w+),\s*(\w+)", checking)
        if not name:
            continue  # an exercise answered on paper
        solution = text.split("<summary>Solution")[1]  # this fold only
        cell_text = next(c for c in reversed(before) if re.search(r"# your|NotImplementedError|= None +#", c, re.I))
        found.append(Fold(lesson, cell_text, _fold_code(solution.split("</details>")[0]), name[1], name[2], blank))
    return found


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def fill(cell: str, code: str) -> str:
    """``cell`` with ``code`` in place of what the learner writes (checking calls removed).

    A ``def`` replaces that def; lines ``name = ...`` replace the blank's ``name = None``
    lines; a bare expression is the answer of ``name = None``; other code replaces the
    "# Your code" comment with the ``raise``/``return None`` under it.
    """
    lines = [line for line in cell.splitlines() if not line.startswith("checks.")]
    new = code.rstrip("\n").splitlines()
    head = re.match(r"def (\w+)\(", new[0])
    assigned = {m[1]: line for line in new if (m := re.match(r"(\w+) = ", line))}
    blanks = {m[1]: i for i, line in enumerate(lines) if (m := re.match(r"\s*(\w+) = None\b", line))}
    if head:
        start = next(i for i, line in enumerate(lines) if re.match(rf"\s*def {head[1]}\(", line))
        indent, end = _indent(lines[start]), start + 1
        while end < len(lines) and (not lines[end].strip() or lines[end].startswith(indent + " ")):
            end += 1
    elif assigned and set(assigned) <= set(blanks):
        for name, line in assigned.items():
            lines[blanks[name]] = _indent(lines[blanks[name]]) + line
        return "\n".join(lines)
    elif len(blanks) == 1 and _is_expression(code):
        (index,) = blanks.values()
        lines[index] = re.sub(r"= None.*", f"= {code.strip()}", lines[index])
        return "\n".join(lines)
    else:
        end = next(i for i, line in enumerate(lines) if re.search(r"raise NotImplementedError|return None", line))
        end, indent, start = end + 1, _indent(lines[end]), end
        while lines[start - 1].strip().startswith("#"):
            start -= 1
        if "return None" in lines[end - 1] and "raise" not in lines[end - 1]:
            start = end - 1  # "return None  # your code": the comment is on the line
    return "\n".join(lines[:start] + [indent + line if line else line for line in new] + lines[end:])


def _is_expression(code: str) -> bool:
    try:
        ast.parse(code.strip(), mode="eval")
    except SyntaxError:
        return False
    return True


# Wrong variants ------------------------------------------------------------
SWAPS = {ast.Add: [ast.Sub], ast.Sub: [ast.Add], ast.Mult: [ast.Div, ast.Add], ast.Div: [ast.Mult, ast.FloorDiv],
         ast.FloorDiv: [ast.Div, ast.Mult], ast.Mod: [ast.FloorDiv], ast.Pow: [ast.Mult],
         ast.Lt: [ast.LtE, ast.Gt], ast.LtE: [ast.Lt], ast.Gt: [ast.GtE, ast.Lt], ast.GtE: [ast.Gt],
         ast.Eq: [ast.NotEq], ast.NotEq: [ast.Eq]}


def _edits(node: ast.AST):
    """(description, field, value) for every single mutation of ``node``: ``node.field = value``."""
    if isinstance(node, ast.BinOp):
        for new in SWAPS.get(type(node.op), []):
            yield f"BinOp {type(node.op).__name__}->{new.__name__}", "op", new()
    elif isinstance(node, ast.Compare):
        for k, op in enumerate(node.ops):
            for new in SWAPS.get(type(op), []):
                swapped = [*node.ops[:k], new(), *node.ops[k + 1:]]
                yield f"Compare {type(op).__name__}->{new.__name__}", "ops", swapped
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        for delta in (1, -1):
            yield f"{node.value}{delta:+d}", "value", node.value + delta
    elif isinstance(node, ast.Slice):
        for bound in ("lower", "upper"):
            if getattr(node, bound) is not None:
                for op in (ast.Add, ast.Sub):
                    yield f"slice {bound} {op.__name__} 1", bound, ast.BinOp(getattr(node, bound), op(), ast.Constant(1))
    elif isinstance(node, ast.Call):
        for i, j in itertools.combinations(range(len(node.args)), 2):
            swapped = list(node.args)
            swapped[i], swapped[j] = node.args[j], node.args[i]
            yield f"call args {i}<->{j}", "args", swapped
    if isinstance(getattr(node, "body", None), list):
        for field in ("body", "orelse"):
            statements = getattr(node, field, [])
            for k in range(len(statements)):  # an emptied block holds `pass` (`else: pass` is no else)
                yield f"drop {field}[{k}]", field, statements[:k] + statements[k + 1:] or [ast.Pass()]


def _nodes(node: ast.AST):
    """``node`` and every node below it, parents first, in source order."""
    yield node
    for child in ast.iter_child_nodes(node):
        yield from _nodes(child)


def mutants(code: str) -> dict[str, str]:
    """Every single-edit variant of ``code`` that still parses, by a name of its edit."""
    tree = ast.parse(code)
    original, found = ast.unparse(tree), {}
    for node in _nodes(tree):
        for what, field, value in list(_edits(node)):
            name, kept = f"{ast.unparse(node).splitlines()[0][:40]} | {what}", getattr(node, field)
            setattr(node, field, value)  # the edit, undone once the variant is written out
            text = ast.unparse(tree)
            setattr(node, field, kept)
            if text != original:
                found.setdefault(name, text)
    return found
