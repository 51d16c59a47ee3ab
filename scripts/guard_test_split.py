"""Guarding the test split: every read of it by the record scripts is logged, and a second read refused.

``results/test_split_reads.jsonl`` holds one JSON object per line, appended, never rewritten:
when the test split was read, at which commit, by which script, for which model (the sha256 of
its ``.keras`` file) and what it gave. A script that is about to read the test split calls
``refuse_a_second_read`` first: a model whose file is already in the log is refused, so a second
look at the test set cannot happen by accident, and one that does happen is on record.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from project_files import files  # noqa: E402 - files.py without Keras: every write is atomic

REPO = Path(__file__).resolve().parents[1]
LOG = REPO / "results" / "test_split_reads.jsonl"


def model_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def reads(log: Path = LOG) -> list[dict]:
    """The logged reads, oldest first (an absent log: none)."""
    if not log.is_file():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def refuse_a_second_read(sha256: str, log: Path = LOG) -> None:
    """Raise ``SystemExit`` with a one-line reason if the model's test figure was read already."""
    for read in reads(log):
        if read.get("model_sha256") == sha256:
            raise SystemExit(f"the test split was read for this model already ({read['time']}, "
                             f"{read['script']}: top-1 {read['test_top1']:.2%}); see {log.name}")


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                              text=True, check=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def log_read(script: str, model: str, sha256: str, figures: dict, log: Path = LOG) -> dict:
    """Append one read to the log and return it."""
    entry = {"time": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"),
             "commit": _commit(), "script": script, "model": model, "model_sha256": sha256, **figures}
    log.parent.mkdir(parents=True, exist_ok=True)
    files.append_text(log, json.dumps(entry) + "\n")  # rewritten atomically
    return entry
