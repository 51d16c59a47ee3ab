"""Execute the lesson notebooks top to bottom, in order, and save them with HTML copies.

    python scripts/run_lessons.py --out build/lessons          # the main job (quick mode)
    python scripts/run_lessons.py --inplace 02_shift_operation # refresh stored outputs

The mode of each lesson comes from SHIFTVIT_QUICK (see shiftvit_lib/notebook/lesson.py): 1 or
unset runs quick (the lessons' FULL_MODE switch is False as shipped), 0 runs full. The
main job sets SHIFTVIT_QUICK=1 so the series runs on a CPU with the bundled sample.
A lesson that fails is reported and the others still run; the exit status is 1 then.

The runner times each lesson and writes that time into the lesson's time card, the
table between <!-- time-card:start --> and <!-- time-card:end --> in its first cell:
a quick run rewrites the row "Quick mode (bundled sample), 2-core CPU", a full run
the row "Full mode", each with the minutes, the machine and the date. So the card
says what the runner measured. --no-time-card leaves the cards alone.

Each executed notebook records the run that made its outputs in its metadata
(`shiftvit.outputs`: date, Keras version, backend, Python version); the website shows it under
the lesson (website/_ext/lesson_footer.py, issue 44).
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from nbconvert import HTMLExporter

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"

CARD_START = "<!-- time-card:start -->"
CARD_END = "<!-- time-card:end -->"
QUICK_ROW = "Quick mode (bundled sample), 2-core CPU"
FULL_ROW = "Full mode"


def run_mode(environ: dict[str, str] | None = None) -> str:
    """``"full"`` if SHIFTVIT_QUICK asks for it, else ``"quick"`` (as shiftvit_lib.notebook.lesson.choose_mode decides
    for a lesson whose FULL_MODE switch is False; this script does not import the library)."""
    value = (os.environ if environ is None else environ).get("SHIFTVIT_QUICK", "").strip().lower()
    return "full" if value in ("0", "false", "no") else "quick"


def machine_label() -> str:
    """The GPU's name if ``nvidia-smi`` sees one, else the number of CPU cores."""
    if shutil.which("nvidia-smi"):
        try:
            names = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                                   capture_output=True, text=True, timeout=30, check=True).stdout.split("\n")
            names = [n.strip() for n in names if n.strip()]
            if names:
                return names[0]
        except (OSError, subprocess.SubprocessError):
            pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cores} CPU cores"


def update_time_card(notebook: nbformat.NotebookNode, row: str, text: str) -> bool:
    """Put ``text`` in the second column of the time card's row ``row`` (first markdown cell).

    Returns False, changing nothing, when the first cell has no time card or no such row.
    """
    cells = [c for c in notebook.cells if c.cell_type == "markdown"]
    if not cells:
        return False
    source = cells[0].source
    start, end = source.find(CARD_START), source.find(CARD_END)
    if start < 0 or end < start:
        return False
    card = source[start:end]
    pattern = re.compile(r"^\|\s*" + re.escape(row) + r"\s*\|[^\n]*$", re.MULTILINE)
    if not pattern.search(card):
        return False
    card = pattern.sub(lambda _: f"| {row} | {text} |", card, count=1)
    cells[0].source = source[:start] + card + source[end:]
    return True


def card_text(seconds: float, machine: str, day: datetime.date) -> str:
    """What the time card says about one measured run."""
    return f"{seconds / 60:.1f} min, measured by the lesson runner ({machine}, {day.isoformat()})"


def outputs_record(day: datetime.date, environ: dict[str, str] | None = None) -> dict[str, str]:
    """The run that makes a notebook's outputs: the kernel runs this interpreter's packages, with
    the backend KERAS_BACKEND names (else Keras's own config file, else its default)."""
    import importlib.metadata
    import json
    import platform

    environ = os.environ if environ is None else environ
    backend = environ.get("KERAS_BACKEND", "").strip()
    config = Path(environ.get("KERAS_HOME", Path.home() / ".keras")) / "keras.json"
    if not backend and config.is_file():
        try:
            backend = str(json.loads(config.read_text()).get("backend", ""))
        except ValueError:
            backend = ""
    try:
        keras = importlib.metadata.version("keras")
    except importlib.metadata.PackageNotFoundError:
        keras = "not installed"
    return {"date": day.isoformat(), "keras": keras, "backend": backend or "tensorflow",
            "python": platform.python_version()}


def execute(path: Path, timeout: int) -> nbformat.NotebookNode:
    """Run every cell of the notebook at ``path`` with the lesson folder as working directory."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}},
        # The kernel's own start-up warnings (e.g. about its local TCP ports) are not
        # the lesson's business; errors still show.
        extra_arguments=["--log-level=ERROR"],
    )
    client.execute()
    return notebook


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="lesson names or prefixes (default: all)")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--out", type=Path, default=Path("build/lessons"), help="folder for executed copies")
    target.add_argument("--inplace", action="store_true", help="overwrite the stored notebooks' outputs")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell")
    parser.add_argument("--no-time-card", action="store_true", help="leave the lessons' time cards as they are")
    args = parser.parse_args(argv)

    lessons = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    if args.names:
        lessons = [p for p in lessons if any(p.stem.startswith(n) for n in args.names)]
    if not lessons:
        print(f"error: no lesson matches {args.names} in {NOTEBOOKS}", file=sys.stderr)
        return 2
    if not args.inplace:
        args.out.mkdir(parents=True, exist_ok=True)

    mode = run_mode()
    row = QUICK_ROW if mode == "quick" else FULL_ROW
    machine = machine_label()
    print(f"{mode} mode on {machine}", flush=True)
    failures = []
    for path in lessons:
        started = time.perf_counter()
        try:
            notebook = execute(path, args.timeout)
        except CellExecutionError as error:
            failures.append(path.stem)
            print(f"FAILED {path.stem}: {str(error).strip().splitlines()[-1]}", flush=True)
            continue
        seconds = time.perf_counter() - started
        card = ""
        if not args.no_time_card:
            found = update_time_card(notebook, row, card_text(seconds, machine, datetime.date.today()))
            card = "  (time card updated)" if found else f"  (no time card row {row!r} to update)"
        notebook.metadata.setdefault("shiftvit", {})["outputs"] = outputs_record(datetime.date.today())
        destination = path if args.inplace else args.out / path.name
        nbformat.write(notebook, destination)
        if not args.inplace:
            html, _ = HTMLExporter().from_notebook_node(notebook)
            destination.with_suffix(".html").write_text(html, encoding="utf-8")
        print(f"ok     {path.stem:28} {seconds:6.1f} s  -> {destination}{card}", flush=True)

    if args.inplace:  # the practice copies follow the lessons (their time cards included)
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import make_practice

        make_practice.main([])
    if failures:
        print(f"{len(failures)} lesson(s) failed: {', '.join(failures)}", file=sys.stderr)
        return 1
    print(f"all {len(lessons)} lessons executed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
