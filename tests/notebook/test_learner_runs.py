"""The learner's run folders (shiftvit_lib/notebook/learner_runs.py): where runs go, lesson 06's model."""

import json
import os
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from fakes import logits_of

from shiftvit_lib import build_shiftvit, load_model, preset, save_model
from shiftvit_lib.notebook.learner_runs import (
    COLAB_LOCAL_RUNS,
    DRIVE_MOUNT_ENV,
    learners_best_model,
    runs_root,
)


@pytest.fixture
def fake_colab(monkeypatch):
    """A Python that looks like Colab's: a ``google.colab`` module is loaded."""
    google = types.ModuleType("google")
    colab = types.ModuleType("google.colab")
    google.colab = colab
    monkeypatch.setitem(sys.modules, "google", google)
    monkeypatch.setitem(sys.modules, "google.colab", colab)


def test_on_colab_with_drive_mounted_full_runs_go_to_drive(fake_colab, monkeypatch, tmp_path):
    mount = tmp_path / "drive"  # stands in for /content/drive after drive.mount()
    (mount / "MyDrive").mkdir(parents=True)
    monkeypatch.setenv(DRIVE_MOUNT_ENV, str(mount))
    root = runs_root(full_mode=True)
    assert root.path == mount / "MyDrive" / "shiftvit" / "runs"
    assert "Google Drive" in root.note and "disconnect keeps" in root.note
    # Quick mode's scratch runs stay next to the notebook, even on Colab.
    assert runs_root(full_mode=False).path == Path("runs")


def test_on_colab_without_drive_runs_go_to_content_and_the_note_warns(fake_colab, monkeypatch, tmp_path):
    monkeypatch.setenv(DRIVE_MOUNT_ENV, str(tmp_path / "not_mounted"))
    root = runs_root(full_mode=True)
    assert root.path == COLAB_LOCAL_RUNS == Path("/content/runs")
    assert "disconnect loses" in root.note and "drive.mount" in root.note
    assert "\n" not in root.note  # one line


def test_elsewhere_runs_go_to_runs_next_to_the_notebook(monkeypatch, tmp_path):
    drive = tmp_path / "drive"
    (drive / "MyDrive").mkdir(parents=True)
    monkeypatch.setenv(DRIVE_MOUNT_ENV, str(drive))
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    # A mounted-looking folder does not matter off Colab.
    root = runs_root(full_mode=True)
    assert root.path == Path("runs") and "next to this notebook" in root.note
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    assert runs_root(full_mode=True).path == drive / "MyDrive" / "shiftvit" / "runs"


def _run_folder(root: Path, name: str, preset_name: str, finished: bool) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "run_spec.json").write_text(json.dumps({"config": {"name": preset_name}}))
    if finished:
        (folder / "run.json").write_text(json.dumps({"config": {"name": preset_name}}))
    return folder


def test_lesson06_uses_the_shipped_model_without_a_learners_run(tmp_path):
    # A quick-mode run is a smoke test, not a model to study, and other lessons' runs do not count.
    quick = _run_folder(tmp_path, "05_training_quick", "quick", finished=True)
    (quick / "best.keras").write_bytes(b"not read")
    other = _run_folder(tmp_path, "07_attention_vs_shift_full", "seed", finished=True)
    (other / "best.keras").write_bytes(b"not read")
    _run_folder(tmp_path, "05_training_seed", "seed", finished=False)  # no epoch finished: no best.keras
    assert learners_best_model([tmp_path, tmp_path / "missing"]) is None


def test_lesson06_uses_the_learners_best_model_when_there_is_one(tmp_path):
    # An interrupted run counts (its best epoch so far); the newest best.keras wins.
    older = _run_folder(tmp_path / "local", "05_training_cpu", "cpu", finished=True)
    (older / "best.keras").write_bytes(b"older")
    os.utime(older / "best.keras", (1_000_000, 1_000_000))
    folder = _run_folder(tmp_path / "drive", "05_training_seed", "seed", finished=False)
    model = build_shiftvit(preset("quick"), seed=3)
    save_model(model, folder / "best.keras")
    best = learners_best_model([tmp_path / "local", tmp_path / "drive"])
    assert best == folder / "best.keras"
    loaded = load_model(best)
    images = np.random.default_rng(0).integers(0, 256, (4, 32, 32, 3)).astype("uint8")
    assert np.array_equal(logits_of(loaded, images), logits_of(model, images))
