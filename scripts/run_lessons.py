"""Execute the lesson notebooks top to bottom, in order, and save them with HTML copies.

    python scripts/run_lessons.py --out build/lessons          # the main job (quick mode)
    python scripts/run_lessons.py --inplace 02_shift_operation # refresh stored outputs
    python scripts/run_lessons.py --measure                    # re-measure every time stated

--measure is how the project's times are measured: every lesson in quick mode (into
build/lessons/), then the other steps of `run.sh main` and `run.sh test-fast` (STEPS), each
timed, with the machine, the date and the load average before and after it, written to
results/timings.json. That file is the one source of every time the project states (the
lessons' time cards, README.md, run.sh's help, the fast tier's promise);
tests/project/test_run_lessons.py fails when one of them is more than 20 % off it. After a
measurement, `--write-cards` copies the lessons' times into their time cards and the commands'
times into the places STATED names, and rebuilds the Korean edition (scripts/build_korean.py),
without executing anything; then rebuild the practice copies (scripts/make_practice.py).

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
the lesson (website/_ext/lesson_footer.py).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from project_files import files  # noqa: E402 - files.py without Keras

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"

CARD_START = "<!-- time-card:start -->"
CARD_END = "<!-- time-card:end -->"
QUICK_ROW = "Quick mode (bundled sample), 2-core CPU"
FULL_ROW = "Full mode"
KOREAN_QUICK_ROW = "Quick mode(빠른 모드, 동봉 샘플), 2코어 CPU"  # build_korean.py fills it from the English
TIMINGS = NOTEBOOKS.parent / "results" / "timings.json"
# The other steps whose times the project states, each a command run from the repository root.
STEPS = {
    "animations": ["{python}", "animations/render.py", "--quality", "low",
                   "--mp4-dir", "build/animations", "--gif-dir", "build/animations"],
    "site": ["{python}", "website/build.py", "--out", "build/site"],
    "test-fast": ["bash", "run.sh", "test-fast"],
    "test": ["bash", "run.sh", "test"],  # the full suite, about half an hour
}


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


def card_text(seconds: float, machine: str, day: datetime.date | str, load: float | None = None) -> str:
    """What the time card says about one measured run (with the load average when it was known)."""
    day = day if isinstance(day, str) else day.isoformat()
    shown = "" if load is None else f", load {load:.1f}"
    return f"{seconds / 60:.1f} min, measured by the lesson runner ({machine}, {day}{shown})"


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


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (how busy the machine was), None where unknown."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def measurement(seconds: float, load_before: list[float] | None) -> dict:
    """One timed thing, with the date and the load around it (a shared machine shows in these)."""
    return {"seconds": round(seconds, 1), "date": datetime.date.today().isoformat(),
            "load_before": load_before, "load_after": load_average()}


def write_timings(lessons: dict[str, dict], steps: dict[str, dict], machine: str) -> None:
    """Write results/timings.json: what was timed, on what, when, under what load."""
    import json
    import platform

    # A step not timed this time keeps its earlier measurement, which carries its own date.
    old = json.loads(TIMINGS.read_text(encoding="utf-8")).get("steps", {}) if TIMINGS.exists() else {}
    steps = {**{name: timed for name, timed in old.items() if name in STEPS}, **steps}
    record = {
        "what": "seconds per lesson (quick mode, the bundled sample) and per step of run.sh, "
        "written by scripts/run_lessons.py --measure; the one source of the times the project states",
        "machine": machine,
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "date": datetime.date.today().isoformat(),
        "keras_backend": os.environ.get("KERAS_BACKEND", "tensorflow"),
        "lessons": lessons,
        "lessons_total_seconds": round(sum(m["seconds"] for m in lessons.values()), 1),
        "steps": steps,
    }
    files.atomic_write_text(TIMINGS, json.dumps(record, indent=2) + "\n")
    print(f"times written to {TIMINGS.relative_to(NOTEBOOKS.parent)}")


def write_notebook(notebook: nbformat.NotebookNode, path: Path) -> None:
    """``nbformat.write``, atomically: a full disk or a crash never leaves half a notebook."""
    files.atomic_write_text(path, nbformat.writes(notebook).rstrip("\n") + "\n")


def write_cards() -> int:
    """Copy results/timings.json's times into the lessons' time cards and where STATED says.

    The Korean cards follow the English ones when scripts/build_korean.py rebuilds the Korean
    edition, which this runs last.
    """
    import json

    record = json.loads(TIMINGS.read_text(encoding="utf-8"))
    machine, day = record["machine"], record["date"]
    for stem, timed in record["lessons"].items():
        path = NOTEBOOKS / f"{stem}.ipynb"
        notebook = nbformat.read(path, as_version=4)
        # The card stays short (the lessons' word budget); the load is in results/timings.json.
        if update_time_card(notebook, QUICK_ROW, card_text(timed["seconds"], machine, day)):
            write_notebook(notebook, path)
        else:
            print(f"note: {path.name} has no time card row {QUICK_ROW!r}", file=sys.stderr)
    write_stated_times(record)
    return subprocess.run([sys.executable, str(Path(__file__).with_name("build_korean.py"))], check=False).returncode


# Where the project states a command's time, as "about N min": (file, pattern whose group 2 is N,
# the command). Its time is the sum of TIMED_BY's measurements.
STATED = (
    ("README.md", r"(bash run\.sh main +# about )(\d+)( min)", "main"),
    ("README.md", r"(bash run\.sh test +# about )(\d+)( min)", "test"),
    ("README.md", r"(`bash run\.sh test-fast`, about )(\d+)( min)", "test-fast"),
    ("README.md", r"(the whole series in quick mode[^\n]*?about )(\d+)( min in all)", "lessons"),
    ("README.ko.md", r"(bash run\.sh main +# 약 )(\d+)(분)", "main"),
    ("README.ko.md", r"(bash run\.sh test +# 약 )(\d+)(분)", "test"),
    ("run.sh", r"(: main about )(\d+)( min)", "main"),
    ("run.sh", r"(, test about )(\d+)( min)", "test"),
    ("run.sh", r"(, test-fast about )(\d+)( min)", "test-fast"),
    ("run.sh", r"(the animations and the website, about )(\d+)( min)", "main"),
    ("CONTRIBUTING.md", r"(`bash run\.sh test-fast` is the inner loop[^.]*?in about )(\d+)( min)", "test-fast"),
)
TIMED_BY = {
    "main": ("lessons", "animations", "site"), "lessons": ("lessons",), "test": ("test",), "test-fast": ("test-fast",)
}


def command_seconds(record: dict, command: str) -> float | None:
    """A command's measured seconds from results/timings.json, None where a part is missing."""
    parts = [sum(m["seconds"] for m in record["lessons"].values()) if name == "lessons"
             else record["steps"].get(name, {}).get("seconds") for name in TIMED_BY[command]]
    return None if None in parts else sum(parts)


def write_stated_times(record: dict) -> None:
    """Put each command's measured minutes where STATED says the project states them."""
    for name, pattern, command in STATED:
        path, seconds = NOTEBOOKS.parent / name, command_seconds(record, command)
        if seconds is None:
            continue
        text = path.read_text(encoding="utf-8")
        minutes = max(1, round(seconds / 60))
        new, found = re.subn(pattern, lambda m, n=minutes: f"{m[1]}{n}{m[3]}", text)
        if not found:
            print(f"note: {name} no longer states the time of {command!r} where STATED looks", file=sys.stderr)
        files.atomic_write_text(path, new)


def time_steps(names: list[str]) -> dict[str, dict]:
    """Run each named step of STEPS from the repository root and time it."""
    steps = {}
    for name in names:
        command = [part.format(python=sys.executable) for part in STEPS[name]]
        before, started = load_average(), time.perf_counter()
        done = subprocess.run(command, cwd=NOTEBOOKS.parent, stdout=subprocess.DEVNULL, check=False)
        steps[name] = measurement(time.perf_counter() - started, before)
        status = "ok    " if done.returncode == 0 else f"FAILED (status {done.returncode})"
        print(f"{status} step {name:23} {steps[name]['seconds']:6.1f} s", flush=True)
        if done.returncode:
            steps[name]["failed"] = True
    return steps


def working_folder(out: Path | None) -> Path:
    """Where the lessons run: ``notebooks/`` for --inplace, else ``<out>/notebooks``.

    A lesson writes its runs to ``runs/`` next to itself and reads ``../results``; run from
    ``<out>/notebooks``, with ``<out>/results`` pointing at the repository's, nothing it
    writes lands outside ``out`` (``run.sh main`` writes only under ``build/``).
    """
    if out is None:
        return NOTEBOOKS
    work = out / "notebooks"
    work.mkdir(parents=True, exist_ok=True)
    results = out / "results"
    if not results.exists():
        results.symlink_to(NOTEBOOKS.parent.resolve() / "results", target_is_directory=True)
    return work


def execute(path: Path, timeout: int, cwd: Path = NOTEBOOKS) -> nbformat.NotebookNode:
    """Run every cell of the notebook at ``path`` with ``cwd`` as working directory."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}},
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
    parser.add_argument("--measure", action="store_true",
                        help="all lessons in quick mode into --out, then the steps; write results/timings.json")
    parser.add_argument("--steps", nargs="*", choices=sorted(STEPS), default=sorted(STEPS), metavar="STEP",
                        help=f"with --measure: the steps to time (default: all of {', '.join(sorted(STEPS))})")
    parser.add_argument("--write-cards", action="store_true",
                        help="copy results/timings.json's lesson times into the time cards; run nothing")
    args = parser.parse_args(argv)
    if args.write_cards:
        return write_cards()
    if args.measure and (args.names or args.inplace or run_mode() != "quick"):
        parser.error("--measure times every lesson in quick mode into --out: give no lesson names, "
                     "no --inplace, and leave SHIFTVIT_QUICK unset or 1")

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
    cwd = working_folder(None if args.inplace else args.out)
    failures, timed = [], {}
    for path in lessons:
        before, started = load_average(), time.perf_counter()
        try:
            notebook = execute(path, args.timeout, cwd)
        except CellExecutionError as error:
            failures.append(path.stem)
            print(f"FAILED {path.stem}: {str(error).strip().splitlines()[-1]}", flush=True)
            continue
        seconds = time.perf_counter() - started
        timed[path.stem] = measurement(seconds, before)
        card = ""
        if not args.no_time_card:
            found = update_time_card(notebook, row, card_text(seconds, machine, datetime.date.today()))
            card = "  (time card updated)" if found else f"  (no time card row {row!r} to update)"
        notebook.metadata.setdefault("shiftvit", {})["outputs"] = outputs_record(datetime.date.today())
        destination = path if args.inplace else args.out / path.name
        write_notebook(notebook, destination)
        if not args.inplace:
            html, _ = HTMLExporter().from_notebook_node(notebook)
            files.atomic_write_text(destination.with_suffix(".html"), html)
        print(f"ok     {path.stem:28} {seconds:6.1f} s  -> {destination}{card}", flush=True)

    if args.inplace:  # the practice copies follow the lessons (their time cards included)
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import make_practice

        make_practice.main([])
    if failures:
        print(f"{len(failures)} lesson(s) failed: {', '.join(failures)}", file=sys.stderr)
        return 1
    print(f"all {len(lessons)} lessons executed")
    if args.measure:
        steps = time_steps(args.steps)
        write_timings(timed, steps, machine)
        if any(step.get("failed") for step in steps.values()):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
