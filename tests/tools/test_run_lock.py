"""One training per run folder (issue 28): the second process stops at once, the first finishes clean."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shiftvit_lib.tools.files import LOCK_FILE, RunFolderInUseError, run_folder_lock

REPO = Path(__file__).resolve().parents[2]
HOLD = "import sys, time; from shiftvit_lib.tools.files import run_folder_lock\n" \
       "with run_folder_lock(sys.argv[1]):\n    print('held', flush=True); time.sleep(60)\n"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "KERAS_BACKEND": os.environ.get("KERAS_BACKEND", "tensorflow")}


@pytest.mark.slow  # a second Python process holds the lock (about 3 s): in the full suite, not the inner loop
def test_a_second_holder_is_refused_naming_the_first(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                              env=_env())
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunFolderInUseError, match=f"in use by pid {holder.pid} on "):
            with run_folder_lock(tmp_path):
                pass
    finally:
        holder.kill()
        holder.wait()
    with run_folder_lock(tmp_path):  # a dead holder's lock is gone with it
        assert f"pid {os.getpid()} " in (tmp_path / LOCK_FILE).read_text()


def test_the_lock_is_released_after_the_block_and_after_an_error(tmp_path):
    with pytest.raises(KeyError):
        with run_folder_lock(tmp_path):
            raise KeyError("training failed")
    with run_folder_lock(tmp_path):
        pass


@pytest.mark.slow
def test_two_trainings_on_one_out_folder(tmp_path):
    out = tmp_path / "run"
    command = [sys.executable, "-m", "shiftvit_lib", "train", "--preset", "quick", "--data", "sample",
               "--epochs", "3", "--verbose", "0", "--out", str(out)]
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
    deadline = time.monotonic() + 120
    while not (out / LOCK_FILE).exists() or f"pid {first.pid} " not in (out / LOCK_FILE).read_text():
        assert first.poll() is None and time.monotonic() < deadline, "the first training never took the lock"
        time.sleep(0.2)
    started = time.monotonic()
    second = subprocess.run(command, capture_output=True, text=True, env=_env(), timeout=120)
    assert second.returncode != 0
    error_lines = [line for line in second.stderr.splitlines() if line.strip()]
    assert len(error_lines) == 1 and f"in use by pid {first.pid}" in error_lines[0], second.stderr
    assert time.monotonic() - started < 60  # at once: before loading data or building a model
    out_text, err_text = first.communicate(timeout=600)
    assert first.returncode == 0, err_text
    with open(out / "history.csv", newline="") as file:
        epochs = [int(row["epoch"]) for row in csv.DictReader(file)]
    assert epochs == [0, 1, 2]
