"""The library's layers, read from its own source: no import cycle, the core stands alone.

Every import counts: at module level, inside functions, and a module named by a string
(``importlib.import_module("shiftvit_lib.x")`` or a table of such names, as the package's
lazy ``__getattr__`` uses). The layers, bottom up:

* **core**: the modules directly in ``shiftvit_lib/`` (what the lessons teach) import
  only each other, and together stay within :data:`CORE_LINE_LIMIT` lines;
* **tools**: ``shiftvit_lib/tools/`` imports the core and other tools;
* **lesson helpers** (:data:`LESSON_HELPERS`) and the entry points (the package's
  ``__init__`` with its ``_startup``, and ``__main__``) may import anything, as long as
  no cycle closes (``import shiftvit_lib as sv`` in a lesson helper is fine: the package
  imports no lesson helper).

The checker is tested too: on tiny fake packages with a cycle, a core module importing
tooling or a lesson helper, and an oversized core, it must report each one.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# 2,400 until issue 39 added the device-side RandAugment and the batches made ahead (+41).
CORE_LINE_LIMIT = 2450
LESSON_HELPERS = ("lesson", "plots", "checks", "solutions", "exercises")
# The package itself (its __init__ and the start-up it runs first) and the command line.
ENTRY_POINTS = ("__init__", "_startup", "__main__")


# --------------------------------------------------------------------------- the checker
def package_modules(package_dir: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of the package."""
    root = package_dir.name
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = [root, *path.relative_to(package_dir).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _resolve(name: str, known: set[str]) -> str | None:
    """The package module ``name`` refers to (its longest known prefix), else None."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """The package modules that ``module`` imports anywhere in its source."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # a relative import, from the module's own package upwards
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import sub` imports the submodule pkg.sub; `from pkg import name`, pkg itself.
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "." in node.value \
                and node.value in known:
            # A submodule named by a string: imported dynamically. (The bare package name is
            # also a label, e.g. Keras' registration package, so it does not count.)
            names = [node.value]
        for name in names:
            target = _resolve(name, known)
            if target is not None and target != module:
                found.add(target)
    return found


def layer_of(module: str, root: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in ENTRY_POINTS:
        return "entry point"
    if parts[1] == "tools":
        return "tools"
    if parts[1] in LESSON_HELPERS:
        return "lesson helper"
    return "core"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


ALLOWED = {  # layer -> the layers it may import
    "core": {"core"},
    "tools": {"core", "tools"},
    "lesson helper": {"core", "tools", "lesson helper", "entry point"},
    "entry point": {"core", "tools", "lesson helper", "entry point"},
}


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    modules = package_modules(package_dir)
    known = set(modules)
    return {module: imports_of(module, path, known) for module, path in modules.items()}


def core_lines(package_dir: Path) -> dict[str, int]:
    root = package_dir.name
    return {module: len(path.read_text().splitlines()) for module, path in package_modules(package_dir).items()
            if layer_of(module, root) == "core"}


def check_package(package_dir: Path, core_limit: int = CORE_LINE_LIMIT) -> list[str]:
    """Every breach of the layering, one sentence each; empty when the package is sound."""
    root = package_dir.name
    graph = import_graph(package_dir)
    problems = [f"import cycle: {' <-> '.join(cycle)}" for cycle in _cycles(graph)]
    for module, targets in sorted(graph.items()):
        layer = layer_of(module, root)
        for target in sorted(targets):
            target_layer = layer_of(target, root)
            if target_layer not in ALLOWED[layer]:
                problems.append(f"{layer} module {module} imports {target} ({target_layer})")
    lines = core_lines(package_dir)
    if sum(lines.values()) > core_limit:
        problems.append(f"the core has {sum(lines.values()):,} lines, more than {core_limit:,}: "
                        + ", ".join(f"{m.rpartition('.')[2]} {n}" for m, n in sorted(lines.items())))
    return problems


# --------------------------------------------------------------------------- shiftvit_lib itself
def test_shiftvit_lib_has_no_cycle_and_a_core_that_stands_alone():
    package = REPO / "shiftvit_lib"
    assert check_package(package) == []
    graph = import_graph(package)
    # The checker sees the imports it must see (a checker that sees nothing passes everything).
    assert "shiftvit_lib.train" in graph["shiftvit_lib.tools.runs"]  # tools -> core
    assert "shiftvit_lib.tools.runs" in graph["shiftvit_lib"]  # the lazy __getattr__'s table
    assert "shiftvit_lib.tools.devices" in graph["shiftvit_lib.lesson"]  # inside a function
    assert sum(core_lines(package).values()) <= CORE_LINE_LIMIT


CHEAP_IMPORT = textwrap.dedent(
    """
    import importlib, importlib.abc, sys

    class BlockMatplotlib(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "matplotlib":
                raise ImportError("matplotlib is blocked for this test")

    sys.meta_path.insert(0, BlockMatplotlib())
    import shiftvit_lib as sv
    above_core = sorted(m for m in sys.modules if m.startswith(("shiftvit_lib.tools", "shiftvit_lib.lesson",
                                                                 "shiftvit_lib.plots", "shiftvit_lib.__main__")))
    print("LOADED", above_core)
    print("TRAIN", type(sv.train).__name__, type(importlib.import_module("shiftvit_lib.train")).__name__)
    print("AFTER", "shiftvit_lib.tools.runs" in sys.modules)
    try:
        import shiftvit_lib.plots
    except ImportError as error:
        print("PLOTS", error)
    """
)


def test_importing_shiftvit_lib_loads_no_tooling_and_no_matplotlib():
    # Keras imports matplotlib itself when it is installed (keras.visualization), so the
    # child blocks it: `import shiftvit_lib` must work without it and load no tooling.
    env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run([sys.executable, "-c", CHEAP_IMPORT], env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "LOADED []" in result.stdout, result.stdout
    # sv.train is the tooling function, loaded on first use; shiftvit_lib.train stays the core module.
    assert "TRAIN function module" in result.stdout and "AFTER True" in result.stdout, result.stdout
    # The block works: the plotting helpers, which need matplotlib, fail to import under it.
    assert "PLOTS matplotlib is blocked" in result.stdout, result.stdout


# --------------------------------------------------------------------------- the checker fails when it should
def _fake_package(tmp_path: Path, files: dict[str, str]) -> Path:
    package = tmp_path / "fakepkg"
    for name, text in {"__init__.py": "", "tools/__init__.py": "", **files}.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return package


SOUND = {
    "shapes.py": "import numpy\n",
    "model.py": "from fakepkg.shapes import numpy\nfrom . import shapes\n",
    "tools/runs.py": "from fakepkg import model\n\ndef go():\n    from fakepkg.tools import helpers\n",
    "tools/helpers.py": "from fakepkg.model import shapes\n",
    "lesson.py": "from fakepkg.tools.runs import go\n",
    "__init__.py": "from fakepkg.model import shapes\n\ndef __getattr__(name):\n    return 'fakepkg.tools.runs'\n",
}


def test_the_checker_passes_a_sound_package(tmp_path):
    assert check_package(_fake_package(tmp_path, SOUND)) == []


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        # a cycle through an import inside a function
        ({"shapes.py": "def late():\n    from fakepkg import model\n"}, "import cycle: fakepkg.model <-> fakepkg.shapes"),
        # a cycle through a relative import and a module named by a string
        ({"tools/helpers.py": "import importlib\nM = importlib.import_module('fakepkg.tools.runs')\n"},
         "import cycle: fakepkg.tools.helpers <-> fakepkg.tools.runs"),
        # the core reaching up to tooling, inside a function
        ({"model.py": "def train():\n    from fakepkg.tools.runs import go\n"},
         "core module fakepkg.model imports fakepkg.tools.runs (tools)"),
        # the core reaching up to a lesson helper, and to the package's entry point
        ({"shapes.py": "import fakepkg.lesson\n"}, "core module fakepkg.shapes imports fakepkg.lesson (lesson helper)"),
        ({"shapes.py": "from fakepkg import something_lazy\n"},
         "core module fakepkg.shapes imports fakepkg (entry point)"),
        # tooling reaching up to a lesson helper
        ({"tools/helpers.py": "from ..lesson import go\n"},
         "tools module fakepkg.tools.helpers imports fakepkg.lesson (lesson helper)"),
        # an oversized core: the limit counts every core module's lines
        ({"big.py": "x = 1\n" * (CORE_LINE_LIMIT - 2)}, f"more than {CORE_LINE_LIMIT:,}"),
    ],
)
def test_the_checker_reports_each_breach(tmp_path, changes, expected):
    problems = check_package(_fake_package(tmp_path, {**SOUND, **changes}))
    assert any(expected in problem for problem in problems), problems
