"""Execute the lesson notebooks top to bottom, in order, and save them with HTML copies.

    python scripts/run_lessons.py --out build/lessons          # the main job (quick mode)
    python scripts/run_lessons.py --inplace 02_shift_operation # refresh stored outputs

The mode of each lesson comes from SHIFTVIT_QUICK (see shiftvit_lib/lesson.py); the
main job sets SHIFTVIT_QUICK=1 so the series runs on a CPU with the bundled sample.
A lesson that fails is reported and the others still run; the exit status is 1 then.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from nbconvert import HTMLExporter

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


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
    args = parser.parse_args(argv)

    lessons = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    if args.names:
        lessons = [p for p in lessons if any(p.stem.startswith(n) for n in args.names)]
    if not lessons:
        print(f"error: no lesson matches {args.names} in {NOTEBOOKS}", file=sys.stderr)
        return 2
    if not args.inplace:
        args.out.mkdir(parents=True, exist_ok=True)

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
        destination = path if args.inplace else args.out / path.name
        nbformat.write(notebook, destination)
        if not args.inplace:
            html, _ = HTMLExporter().from_notebook_node(notebook)
            destination.with_suffix(".html").write_text(html, encoding="utf-8")
        print(f"ok     {path.stem:28} {seconds:6.1f} s  -> {destination}", flush=True)

    if failures:
        print(f"{len(failures)} lesson(s) failed: {', '.join(failures)}", file=sys.stderr)
        return 1
    print(f"all {len(lessons)} lessons executed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
