"""Turn nbval's '# NBVAL_*' comment markers in the lessons into cell tags.

    python scripts/nbval_tags.py            # rewrites notebooks/*.ipynb in place

nbval reads the same markers from a cell's metadata tags (nbval-check-output,
nbval-ignore-output, nbval-skip, nbval-raises-exception), so the learner never sees
them in the code. Only the source and metadata change; outputs are kept.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from project_files import files  # noqa: E402 - files.py without Keras

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
TAGS = {
    "NBVAL_IGNORE_OUTPUT": "nbval-ignore-output",
    "NBVAL_CHECK_OUTPUT": "nbval-check-output",
    "NBVAL_SKIP": "nbval-skip",
    "NBVAL_RAISES_EXCEPTION": "nbval-raises-exception",
}


def convert(notebook: dict) -> int:
    """Move the markers of every code cell into its tags; return how many moved."""
    moved = 0
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        kept, tags = [], []
        for line in "".join(cell["source"]).split("\n"):
            marker = line.strip().lstrip("#").strip()
            if line.strip().startswith("#") and marker in TAGS:
                tags.append(TAGS[marker])
            else:
                kept.append(line)
        if tags:
            cell["source"] = "\n".join(kept).splitlines(keepends=True)
            cell_tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            cell_tags.extend(tag for tag in tags if tag not in cell_tags)
            moved += len(tags)
    return moved


def main(folder: Path = NOTEBOOKS) -> None:
    for path in sorted(folder.glob("*.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        if convert(notebook):
            files.atomic_write_text(path, json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
            print("converted", path.name)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else NOTEBOOKS)
