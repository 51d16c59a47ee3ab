"""The learner's run folders (shiftvit_lib/notebook/learner_runs.py): where runs go, lesson 06's model."""

import os
import sys
import types
from pathlib import Path

import pytest

from shiftvit_lib.notebook.learner_runs import DRIVE_MOUNT_ENV, learners_best_model, runs_root

DRIVE_RUNS = Path("MyDrive") / "shiftvit" / "runs"


# On Colab or not, Drive mounted or not, full or quick mode -> where the runs go and words of the note.
@pytest.mark.parametrize(("colab", "mounted", "full_mode", "where", "words"), [
    (True, True, True, DRIVE_RUNS, ["Google Drive", "disconnect keeps"]),
    (True, True, False, Path("runs"), ["next to this notebook"]),  # quick mode's scratch runs, even on Colab
    (True, False, True, Path("/content/runs"), ["disconnect loses", "drive.mount"]),
    (False, True, True, Path("runs"), ["next to this notebook"]),  # a mounted-looking folder off Colab
])
def test_runs_go_to_drive_on_colab_else_next_to_the_notebook(monkeypatch, tmp_path, colab, mounted, full_mode, where,
                                                             words):
    (tmp_path / "MyDrive").mkdir()  # stands in for /content/drive after drive.mount()
    monkeypatch.setenv(DRIVE_MOUNT_ENV, str(tmp_path if mounted else tmp_path / "not_mounted"))
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    if colab:  # a Python that looks like Colab's: a google.colab module is loaded
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    root = runs_root(full_mode=full_mode)
    assert root.path == (tmp_path / where if where == DRIVE_RUNS else where) and "\n" not in root.note
    assert all(word in root.note for word in words), root.note


def test_lesson06_studies_the_newest_best_model_of_a_lesson05_run(tmp_path):
    # A quick-mode run is a smoke test, not a model to study, and other lessons' runs do not count; an
    # interrupted run counts (its best epoch so far); the newest best.keras wins, in any root.
    (tmp_path / "local/05_training_seed").mkdir(parents=True)  # no epoch finished: no best.keras
    ignored = [tmp_path / "local" / run / "best.keras" for run in ("05_training_quick", "07_attention_vs_shift_full")]
    older, newer = tmp_path / "colab/05_training_cpu/best.keras", tmp_path / "drive/05_training_seed/best.keras"
    for path in [*ignored, older, newer]:
        path.parent.mkdir(parents=True)
        path.write_bytes(b"a model")
    os.utime(older, (1_000_000, 1_000_000))
    assert learners_best_model([tmp_path / "local", tmp_path / "missing"]) is None
    assert learners_best_model([tmp_path / "local", tmp_path / "colab", tmp_path / "drive"]) == newer
