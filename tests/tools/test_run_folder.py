"""shiftvit_lib.tools.run_folder: a folder is claimed once (checked, then locked), and a claim
that fails before a run writes anything leaves the disk as it was. The folder's life with a
training in it (resume, backups, damaged files, the record) is tested through train in test_runs.py.

Only its own files (issue 48): every file a run writes there is planted as a link (symbolic
and hard) to a file outside; the run refuses in one line naming it, before it reads or
writes, and the outside file is unchanged. A resume starts at the newest readable backup
(a damaged one is set aside, never deleted); a bad number in history.csv is named.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import h5py
import numpy as np
import pytest
from fakes import one_line, plant, tiny_splits, write_tree

from shiftvit_lib import preset
from shiftvit_lib.config import InputError
from shiftvit_lib.tools import files
from shiftvit_lib.tools import run_folder as rf
from shiftvit_lib.tools.files import LOCK_FILE
from shiftvit_lib.tools.run_folder import Claim, RunFolderError, claim, open_run_folder, run_spec
from shiftvit_lib.tools.runs import BestModelCheckpoint, train


def test_a_failed_claim_removes_only_the_folders_it_made(tmp_path):
    with pytest.raises(KeyError), claim(tmp_path / "runs" / "new"):  # e.g. data that would not load
        assert (tmp_path / "runs" / "new" / LOCK_FILE).exists()
        raise KeyError("the data would not load")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "kept").mkdir()
    with pytest.raises(KeyError), claim(tmp_path / "kept"):
        raise KeyError("again")
    assert [path.name for path in (tmp_path / "kept").iterdir()] == [LOCK_FILE]  # not made by the claim
    with files.run_folder_lock(tmp_path / "kept"):  # the lock was released after the error
        pass


def test_a_claim_checks_once_and_a_held_claim_is_not_checked_again(tmp_path, monkeypatch):
    checked = []
    check = rf.check_run_folder
    monkeypatch.setattr(rf, "check_run_folder", lambda out, **kw: checked.append(out) or check(out, **kw))
    with claim(tmp_path / "run") as held:
        assert held == Claim(tmp_path / "run", "new")
        with claim(held) as again:
            assert again is held
        folder = open_run_folder(held, run_spec(preset("quick"), tiny_splits(), epochs=1))
    assert checked == [tmp_path / "run"] and folder.spec["epochs"] == 1


def test_a_spec_written_by_an_earlier_version_differs_in_each_field_added_since():
    current = run_spec(preset("quick"), tiny_splits(), epochs=1)
    saved = {**current, "config": {k: v for k, v in current["config"].items() if k != "stem_channels"}}
    assert rf.spec_differences(saved, current) == [f"config.stem_channels (None -> {preset('quick').stem_channels})"]


FINISHED = {"run/run_spec.json": b"{}", "run/run.json": b"{}", "run/history.csv": b"epoch\n0\n"}
# What an output folder holds -> check_run_folder's answer, or the words of its refusal.
FOLDERS = [
    ("run", {}, False, "new"),
    ("run", {"run/notes.txt": b"mine"}, False, "new"),
    ("run", {"run/run_spec.json": b"{}", "run/history.csv": b"epoch\n"}, False, "resume"),
    ("run", {"run/history.csv": b"epoch,loss\n0,2.3\n"}, False, "training files without run_spec.json"),
    ("run", FINISHED, False, r"already holds a finished run \(its record"), ("run", FINISHED, True, "new"),
    ("file/below", {"file": b"x"}, False, "is a file, not a folder"),
    ("r" * 256, {}, False, "more than the 255 a file system allows"),
    ("r" * 255, {}, False, "new"),
]


@pytest.mark.parametrize(("out", "holds", "overwrite", "expected"), FOLDERS, ids=range(len(FOLDERS)))
def test_a_folder_is_told_new_or_resumable_or_refused_in_one_line_writing_nothing(tmp_path, out, holds, overwrite,
                                                                                  expected):
    write_tree(tmp_path, holds)
    if expected in ("new", "resume"):
        assert rf.check_run_folder(tmp_path / out, overwrite=overwrite) == expected
    else:
        with pytest.raises(ValueError, match=expected) as refused:  # a RunFolderError or an UnsafeFileError
            rf.check_run_folder(tmp_path / out, overwrite=overwrite)
        one_line(refused.value)
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == sorted(holds)


# --------------------------------------------------------------------------- only its own files (issue 48)
OUTSIDE_TEXT = "the user's own file\n"
# Every member a run writes (or reads back) in its folder -> the writer of it that checks it again
# when it writes, in case a link appears after the folder was checked (a race).
MEMBERS = {
    ".lock": lambda run: files.run_folder_lock(run).__enter__(), "run_spec.json": None,
    "history.csv": lambda run: rf.history_log(run / "history.csv").on_epoch_end(0, {"loss": 1.0}),
    "best.keras": lambda run: BestModelCheckpoint(run / "best.keras").on_epoch_end(0, {"val_accuracy": 0.5}),
    "run.json": lambda run: rf.write_record(rf.RunFolder(run, {}), {"done": True}),
    "backup": lambda run: rf.RunBackup(run).on_epoch_end(0, {}), "backup/training_metadata.json": None,
    "backup/epoch-0001.weights.h5": lambda run: rf.RunBackup(run).on_epoch_end(0, {}),
}


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """The user's own file, alone in a folder of theirs: where a planted link points."""
    return write_tree(tmp_path / "mine", {"notes.txt": OUTSIDE_TEXT.encode()}) / "notes.txt"


@pytest.mark.parametrize("how", ["symlink", "hardlink", "fifo"])
@pytest.mark.parametrize("member", MEMBERS)
def test_training_and_each_writer_refuse_a_link_or_pipe_in_place_of_a_run_file(tmp_path, outside, member, how):
    if member == "backup" and how == "hardlink":
        pytest.skip("a folder cannot be hard-linked")
    run = tmp_path / "run"
    plant(run / member, how, outside.parent if member == "backup" else outside)  # a folder for a folder
    with pytest.raises(ValueError) as refused:  # files.UnsafeFileError, or a RunFolderError
        train(preset("quick", batch_size=8), tiny_splits(16, 8, 8), run, epochs=1, verbose=0, jit_compile=False)
    assert files.escape_name(run / member) in one_line(refused.value)
    if MEMBERS[member]:
        with pytest.raises(files.UnsafeFileError) as refused:
            MEMBERS[member](run)
        assert files.escape_name(run / member) in one_line(refused.value)
    assert outside.read_text() == OUTSIDE_TEXT and os.listdir(outside.parent) == ["notes.txt"]


# --------------------------------------------------------------------------- numbers read back
def make_interrupted_run(run: Path, epochs: int = 3, backups: tuple[int, ...] = (1, 2)) -> dict:
    spec = {"format": 1, "config": preset("quick").to_dict(), "epochs": epochs, "seed": 3}
    (run / "backup").mkdir(parents=True)
    (run / "run_spec.json").write_text(json.dumps(spec))
    for epoch in backups:
        with h5py.File(run / "backup" / f"epoch-{epoch:04d}.weights.h5", "w") as handle:
            handle["weights"] = np.arange(4.0)
    return spec


# An interrupted run's backups (epoch -> "ok", "torn", or "pipe": its data in an outside named pipe,
# which a read would block on) -> the epoch its resume starts at. History rows after it are dropped;
# a damaged backup is set aside, kept by the restart and by the record, as a file of yours is.
RESUMES = [({1: "ok", 2: "ok"}, 2), ({1: "ok"}, 1), ({}, 0), ({1: "torn", 2: "torn"}, 0), ({1: "ok", 2: "pipe"}, 1)]


@pytest.mark.parametrize(("backups", "resumed"), RESUMES)
def test_a_resume_starts_at_the_newest_readable_backup_and_keeps_the_damaged_ones(tmp_path, backups, resumed):
    run = tmp_path / "run"
    spec = make_interrupted_run(run, backups=tuple(backups))
    for epoch, how in backups.items():
        if how == "torn":
            (run / "backup" / f"epoch-{epoch:04d}.weights.h5").write_bytes(b"torn")
        elif how == "pipe":
            os.mkfifo(tmp_path / "pipe")
            with h5py.File(run / "backup" / f"epoch-{epoch:04d}.weights.h5", "w") as handle:
                handle.create_dataset("weights", (4,), "f8", external=[(str(tmp_path / "pipe"), 0, 32)])
    (run / "backup" / "training_metadata.json").write_text('{"epoch": 1, "batch": 0}')  # not what it goes by
    (run / "backup" / "notes.txt").write_text("mine")
    (run / "history.csv").write_text("epoch,loss\n0,2.3\n\n1,2.1\n")  # an empty line, by hand
    folder = rf.open_run_folder(rf.Claim(run, "resume"), spec)
    assert folder.resumed_from == resumed
    assert rf.read_history_csv(run / "history.csv").get("epoch", []) == list(range(resumed))
    assert ("outside files" in " ".join(folder.recovered)) == ("pipe" in backups.values())
    kept = sorted(f"epoch-{epoch:04d}.weights.h5.damaged" for epoch, how in backups.items() if how != "ok")
    assert set(kept) <= set(os.listdir(run / "backup")) and len(folder.recovered) == len(kept)
    rf.write_record(folder, {})
    assert sorted(os.listdir(run / "backup")) == [*kept, "notes.txt"]


@pytest.mark.parametrize("how", ["symlink", "hardlink"])
def test_a_resume_refuses_a_linked_best_model_even_under_a_claim_built_by_hand(tmp_path, outside, how):
    run = tmp_path / "run"
    spec = make_interrupted_run(run)
    plant(run / "best.keras", how, outside)
    with pytest.raises(files.UnsafeFileError, match="best.keras is a"):  # the claim's check never ran
        rf.open_run_folder(Claim(run, "resume"), spec)
    assert outside.read_text() == OUTSIDE_TEXT and (run / "best.keras").exists()


def test_a_finished_fit_whose_best_model_is_damaged_and_no_backup_left_is_refused_naming_it(tmp_path, capsys):
    run = tmp_path / "run"
    spec = make_interrupted_run(run, backups=())
    (run / "run_spec.json").write_text(json.dumps({**spec, "fit_finished_at": "yesterday"}))
    (run / "history.csv").write_text("epoch,loss,val_accuracy\n0,2.3,0.1\n")
    (run / "best.keras").write_bytes(b"PK\x03\x04 cut short")
    with pytest.raises(RunFolderError) as refused:
        rf.open_run_folder(rf.Claim(run, "resume"), spec)
    assert "has no readable best.keras and no backup" in one_line(refused.value)
    assert f"warning: {run / 'best.keras'} is damaged" in capsys.readouterr().err  # named as it is set aside
    assert "--overwrite" in str(refused.value) and (run / "best.keras.damaged").exists()


# A hand-edited or damaged file a run reads back -> its name, its text, the reader, the words of its error.
READ_BACK = [
    ("history.csv", "epoch,loss\n0,0.5\n1,abc\n", rf.read_history_csv, "history.csv, line 3: loss is 'abc'"),
    ("history.csv", "epoch,loss\n0,0.5\n1\n", rf.read_history_csv, "history.csv, line 3: loss is None"),
    ("run.json", '{"test": ', lambda path: rf.load_run(path.parent), "is unreadable"),
    ("run.json", '{"test": {}, "epochs_run": 1}', lambda path: rf.load_run(path.parent), "no data_source"),
    ("run.json", "[1, 2]", lambda path: rf.load_run(path.parent), "not a JSON object"),
]


@pytest.mark.parametrize(("name", "text", "read", "words"), READ_BACK)
def test_a_damaged_file_read_back_is_one_line_naming_it(tmp_path, name, text, read, words):
    (tmp_path / name).write_text(text)
    with pytest.raises(InputError) as refused:
        read(tmp_path / name)
    assert str(tmp_path / name) in one_line(refused.value) and words in one_line(refused.value)
    assert name == "run.json" or "correct or delete that line" in str(refused.value)
