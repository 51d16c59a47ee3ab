"""The facade (``import shiftvit_lib as sv``): every name the lessons and the README use is there,
and each one is the object of the module ``_EXPORTS`` names for it."""

import importlib
import json
import re

from fakes import REPO

import shiftvit_lib as sv


def _names_used_by_the_lessons() -> set[str]:
    texts = [path.read_text() for path in (REPO / "notebooks").rglob("*.ipynb")]
    texts += [(REPO / name).read_text() for name in ("README.md", "README.ko.md")]
    return {name for text in texts for name in re.findall(r"\bsv\.([A-Za-z_][A-Za-z0-9_]*)", text)} - {"__file__"}


def test_every_name_a_lesson_or_the_readme_uses_is_in_the_facade():
    used = _names_used_by_the_lessons()
    assert {"preset", "train", "pretrained", "MLP", "data"} <= used  # the scan finds what it must
    missing = sorted(name for name in used if not hasattr(sv, name))
    assert missing == []


def test_each_name_comes_from_the_module_its_table_names():
    assert sorted(sv.__all__) == sorted(sv._MODULE_OF) and set(sv.__all__) <= set(dir(sv))
    for name in sv.__all__:
        assert getattr(sv, name) is getattr(importlib.import_module(sv._MODULE_OF[name]), name), name


def doors(code: str) -> dict[str, set[str]]:
    """Library module -> how lesson code reaches it: ``"sv"`` (``sv.name``) and/or ``"module"``
    (``from shiftvit_lib.x import name``, or ``from shiftvit_lib.notebook import x`` for module x)."""
    found: dict[str, set[str]] = {}
    for name in re.findall(r"\bsv\.([A-Za-z_]\w*)", code):
        if name in sv._MODULE_OF:
            found.setdefault(sv._MODULE_OF[name], set()).add("sv")
    imports = re.findall(r"^\s*from (shiftvit_lib[\w.]*) import (\([^)]*\)|[^\n]*)", code, flags=re.M)
    for package, names in imports:
        for name in re.findall(r"\w+", re.sub(r"#.*|\s+as\s+\w+", "", names)):
            path = REPO.joinpath(*package.split("."), name)
            is_module = path.is_dir() or path.with_suffix(".py").is_file()  # a package, or a module
            module = f"{package}.{name}" if is_module else package
            found.setdefault(module, set()).add("module")
    return found


def test_doors_finds_both_ways_into_a_module():
    code = "x = sv.shift_channels(y)\nfrom shiftvit_lib.shift import (\n    keras_io_shift,\n)\n" \
           "from shiftvit_lib.notebook import checks, plots  # figures\n"
    assert doors(code) == {"shiftvit_lib.shift": {"sv", "module"}, "shiftvit_lib.notebook.checks": {"module"},
                           "shiftvit_lib.notebook.plots": {"module"}}


def test_the_lessons_reach_each_library_module_by_one_door():
    """For each module, the lessons (all of them together) use the facade or the module, never both."""
    code = "\n".join("".join(cell["source"]) for path in sorted((REPO / "notebooks").glob("[0-9][0-9]_*.ipynb"))
                     for cell in json.loads(path.read_text())["cells"] if cell["cell_type"] == "code")
    found = doors(code)
    assert {"sv"} in found.values() and {"module"} in found.values()  # the scan sees both doors
    assert {module: sorted(ways) for module, ways in found.items() if len(ways) > 1} == {}
