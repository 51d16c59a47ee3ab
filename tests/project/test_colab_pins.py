"""CI's Colab environment: the pins, the check that installing the project changes none of
them (.ci/colab_pins.py), and code that still runs on Colab's Python 3.13."""

from __future__ import annotations

import ast
import re
import tomllib

import pytest
from fakes import LESSONS, NOTEBOOKS, REPO, cells, load_script, write_tree
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

PINS = REPO / ".ci" / "colab-default-runtime.txt"
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]

colab_pins = load_script(".ci/colab_pins.py")
PINNED = colab_pins.parse_freeze(PINS.read_text())  # package -> version

# Colab's default runtime since 2026-08-25 (googlecolab/backend-info, colabtools#6081).
COLAB_DEFAULT = {
    "tensorflow": "2.20.0", "keras": "3.13.2", "jax": "0.7.2", "numpy": "2.1.3",
    "matplotlib": "3.10.0", "pillow": "11.3.0", "ipython": "7.34.0",
}
# Standard-library modules Python 3.13 removed (PEP 594, and lib2to3).
REMOVED_IN_3_13 = {
    "aifc", "audioop", "cgi", "cgitb", "chunk", "crypt", "imghdr", "mailcap", "msilib", "nis",
    "nntplib", "ossaudiodev", "pipes", "sndhdr", "spwd", "sunau", "telnetlib", "uu", "xdrlib", "lib2to3",
}


@pytest.mark.parametrize("before, after, changed", [
    # an unchanged set passes, and new packages are allowed
    ("numpy==2.1.3\nkeras==3.13.2\n", "numpy==2.1.3\nkeras==3.13.2\nshiftvit_lib @ file:///repo\n", []),
    # an upgrade, a downgrade and a removal are each named
    ("numpy==2.1.3\nipython==7.34.0\nkeras==3.13.2\npillow==11.3.0\n", "numpy==2.3.0\nipython==7.34.0\nkeras==3.12.0\n",
     ["keras 3.13.2 -> 3.12.0", "numpy 2.1.3 -> 2.3.0", "pillow 11.3.0 was removed"]),
    # names are compared the way pip spells them; a comment is no package
    ("ML_Dtypes==0.6.0\n# a comment\ntorch @ https://x/torch.whl\n", "ml-dtypes==0.6.0\ntorch @ https://x/torch.whl\n", []),
    ("ML_Dtypes==0.6.0\ntorch @ https://x/torch.whl\n", "ml_dtypes==0.5.0\n",
     ["ml-dtypes 0.6.0 -> 0.5.0", "torch https://x/torch.whl was removed"]),
])
def test_the_check_command_fails_naming_each_changed_package(tmp_path, capsys, before, after, changed):
    write_tree(tmp_path, {"before.txt": before.encode(), "after.txt": after.encode()})
    assert colab_pins.changed_packages(colab_pins.parse_freeze(before), colab_pins.parse_freeze(after)) == changed
    status = colab_pins.main(["check", str(tmp_path / "before.txt"), str(tmp_path / "after.txt"), "--step", "it"])
    error = capsys.readouterr().err
    assert status == bool(changed) and (f"it changed {len(changed)} preinstalled package(s)" in error) is bool(changed)


def test_the_pins_are_colabs_default_runtime_exactly():
    assert {name: PINNED.get(name) for name in COLAB_DEFAULT} == COLAB_DEFAULT
    lines = [line for line in PINS.read_text().splitlines() if line and not line.startswith("#")]
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[^ ]+( +#.*)?", line) for line in lines), "exact pins only"
    assert "2026-08-25" in PINS.read_text() and "backend-info" in PINS.read_text()


def test_every_root_of_the_refresh_is_pinned_and_pyproject_accepts_its_pin():
    # so that installing the project upgrades nothing
    assert all(colab_pins.normalize(root) in PINNED for root in colab_pins.ROOTS)
    for text in PROJECT["dependencies"]:
        requirement = Requirement(text)
        version = PINNED[colab_pins.normalize(requirement.name)]
        assert requirement.specifier.contains(version), f"{text} would replace Colab's {version}"


def test_the_declared_python_versions_include_colabs_and_the_jax_extra_excludes_a_miscompiling_release():
    accepted = SpecifierSet(PROJECT["requires-python"])
    # Keras >= 3.13 (the dependencies' floor) needs Python 3.11: pip must refuse 3.10 up front.
    assert "3.10.14" not in accepted and "3.11.0" in accepted and "3.13.5" in accepted
    declared = {c.rsplit(" :: ", 1)[-1] for c in PROJECT["classifiers"] if c.startswith("Programming Language")}
    assert {"3.11", "3.12", "3.13"} <= declared and "3.10" not in declared
    jax = next(Requirement(text) for text in PROJECT["optional-dependencies"]["jax"] if text.startswith("jax"))
    # jax-ml/jax#39103: a CPU miscompilation reported against 0.10.2; its neighbours stay allowed.
    assert "0.10.2" not in jax.specifier and "0.10.1" in jax.specifier and "0.7.2" in jax.specifier


def imported_modules(source: str) -> set[str]:
    """Top-level names of the modules a piece of Python source imports."""
    # A notebook's IPython lines (%pip, !apt-get) become `pass`, keeping their indentation.
    source = re.sub(r"^([ \t]*)[%!].*$", r"\1pass", source, flags=re.M)
    nodes = list(ast.walk(ast.parse(source)))
    names = [alias.name for node in nodes if isinstance(node, ast.Import) for alias in node.names]
    names += [node.module for node in nodes if isinstance(node, ast.ImportFrom) and node.module and not node.level]
    return {name.split(".")[0] for name in names}


def project_sources():
    for folder in ("shiftvit_lib", "tests", "scripts", "animations", "website", "benchmarks", ".ci"):
        for path in sorted((REPO / folder).rglob("*.py")):
            yield path, path.read_text()
    for path in LESSONS:
        yield path, "\n".join("".join(c["source"]) for c in cells(path) if c["cell_type"] == "code")


def test_no_code_imports_what_python_3_13_removed():
    assert imported_modules("import imghdr\nfrom cgi import escape\nimport os.path") == {"imghdr", "cgi", "os"}
    found = {path.relative_to(REPO): imported_modules(source) & REMOVED_IN_3_13 for path, source in project_sources()}
    # the modules removed in Python 3.13 (Colab's Python) that each file imports
    assert {str(path): sorted(names) for path, names in found.items() if names} == {}


def test_lesson_00_compares_colabs_versions_with_the_pinned_ones():
    """Lesson 00's Colab cell names the versions CI tested: the pins' (Python: the runtime's)."""
    code = ["".join(c["source"]) for c in cells(NOTEBOOKS / "00_overview.ipynb") if c["cell_type"] == "code"]
    source = next(text for text in code if "TESTED = {" in text)
    tested = ast.literal_eval(re.search(r"TESTED = (\{.*?\})", source, re.S).group(1))
    assert tested.pop("python") == "3.13" and "Python 3.13" in PINS.read_text()
    assert tested == {name: PINNED[name] for name in tested} and len(tested) >= 4
    assert "Runtime version" in source  # the way back to the tested runtime
