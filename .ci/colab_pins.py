"""Colab's preinstalled packages in CI: compare two `pip freeze` lists, or refresh the pins.

    python .ci/colab_pins.py check BEFORE AFTER --step "installing shiftvit_lib"
        exit 1, naming each package, when a package listed in BEFORE has another version
        (or is gone) in AFTER; packages only in AFTER (the project, its new dependencies)
        are fine. On Colab a changed NumPy, IPython or Keras forces a runtime restart.

    python .ci/colab_pins.py refresh FREEZE [--pins .ci/colab-default-runtime.txt]
        re-resolve the pinned set against a new pip-freeze.txt from googlecolab/backend-info
        and rewrite the pins file below its header (update the header's runtime and date).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

PINS = Path(__file__).with_name("colab-default-runtime.txt")
# What the lessons and the tests import that Colab preinstalls; pip adds their dependencies.
ROOTS = [
    "tensorflow", "keras", "jax", "jaxlib", "numpy", "matplotlib", "pillow", "h5py", "ml-dtypes",
    "protobuf", "ipython", "ipykernel", "jupyter-client", "jupyter-core", "nbformat", "nbclient",
    "nbconvert", "pytest", "PyYAML",
]
PROJECT = "shiftvit-lib"  # the package being installed is not "preinstalled", even in a reused venv


def normalize(name: str) -> str:
    """PEP 503 name: `ML_Dtypes` and `ml-dtypes` are the same package."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_freeze(text: str) -> dict[str, str]:
    """{normalized name: version or direct reference} from `pip freeze` output."""
    packages = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        if " @ " in line:
            name, where = line.split(" @ ", 1)
        elif "==" in line:
            name, where = line.split("==", 1)
        else:
            continue
        packages[normalize(name.strip())] = where.strip()
    return packages


def changed_packages(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """One line per package of ``before`` that ``after`` upgraded, downgraded or removed."""
    changes = []
    for name, version in sorted(before.items()):
        if name == PROJECT:
            continue
        if name not in after:
            changes.append(f"{name} {version} was removed")
        elif after[name] != version:
            changes.append(f"{name} {version} -> {after[name]}")
    return changes


def check(before_path: Path, after_path: Path, step: str) -> int:
    before = parse_freeze(before_path.read_text())
    after = parse_freeze(after_path.read_text())
    changes = changed_packages(before, after)
    if changes:
        print(f"error: {step} changed {len(changes)} preinstalled package(s); on Colab that forces "
              f"a runtime restart: {'; '.join(changes)}. Relax the requirement that caused it "
              "(pyproject.toml) so that Colab's version satisfies it.", file=sys.stderr)
        return 1
    print(f"ok: {step} left all {len(before)} preinstalled packages as they were")
    return 0


def refresh(freeze_path: Path, pins_path: Path) -> int:
    """Resolve ROOTS under the freeze's versions; write every package pip picks, pinned."""
    freeze = parse_freeze(freeze_path.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        constraints = Path(tmp) / "constraints.txt"
        constraints.write_text("".join(f"{n}=={v}\n" for n, v in freeze.items() if "://" not in v))
        report = Path(tmp) / "report.json"
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--dry-run", "--ignore-installed",
                        "--report", str(report), "-c", str(constraints), *ROOTS], check=True)
        resolved = json.loads(report.read_text())["install"]
    lines = []
    for item in sorted(resolved, key=lambda i: normalize(i["metadata"]["name"])):
        name, version = item["metadata"]["name"], item["metadata"]["version"]
        note = "" if normalize(name) in freeze else "  # not in Colab's freeze: the version pip resolves"
        lines.append(f"{name}=={version}{note}\n")
    header = [line for line in pins_path.read_text().splitlines(keepends=True) if line.startswith("#")]
    pins_path.write_text("".join(header) + "".join(lines))
    print(f"{pins_path}: {len(lines)} pins; now update its header's runtime, date and source commit")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    check_parser = commands.add_parser("check", help="fail when AFTER changed a package of BEFORE")
    check_parser.add_argument("before", type=Path)
    check_parser.add_argument("after", type=Path)
    check_parser.add_argument("--step", default="the install", help="what ran in between (for the message)")
    refresh_parser = commands.add_parser("refresh", help="rewrite the pins from a new pip-freeze.txt")
    refresh_parser.add_argument("freeze", type=Path)
    refresh_parser.add_argument("--pins", type=Path, default=PINS)
    args = parser.parse_args(argv)
    if args.command == "check":
        return check(args.before, args.after, args.step)
    return refresh(args.freeze, args.pins)


if __name__ == "__main__":
    sys.exit(main())
