"""File safety in one place (shiftvit_lib/tools/files.py), tried against hostile files: atomic
writes, safe reads, the run-folder lock (one training per folder; a link or pipe in place of the
lock: test_run_folder.py's writers table), the .keras archive check."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import pytest
from fakes import one_line, plant

from shiftvit_lib.tools import files
from shiftvit_lib.tools.files import LOCK_FILE, run_folder_lock

REPO = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- kinds and reads
def test_kinds_are_told_without_opening(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "file").write_text("x")
    os.symlink(tmp_path / "file", tmp_path / "link")
    kinds = {"file": None, "pipe": "a named pipe", ".": "a folder", "link": "a symbolic link", "nothing": "missing",
             "file/below": "missing"}  # (a parent that is a file)
    assert {name: files.special_file_kind(tmp_path / name) for name in kinds} == kinds
    assert files.special_file_kind(tmp_path / "link", follow_links=True) is None
    with pytest.raises(ValueError, match="named pipe") as refused:
        files.read_bounded(tmp_path / "pipe", 100)  # would block forever if opened
    assert "pipe" in one_line(refused.value)
    with pytest.raises(ValueError, match="a folder"):
        files.sha256_of(tmp_path)
    with pytest.raises(ValueError, match="too large"):
        files.read_bounded(tmp_path / "file", 0)
    with pytest.raises(FileNotFoundError, match=f"nothing at {tmp_path / 'nothing'}"):
        files.read_json(tmp_path / "nothing")


@pytest.mark.parametrize("text, fragment", [
    ('{"cells": [1, 2', "cut short"),  # a notebook cut short by a crash
    ("[" * 100_000, "nest|cut short"),
    ("\udcff", "UTF-8"),
])
def test_json_that_cannot_be_read_is_one_line_naming_the_file(tmp_path, text, fragment):
    path = tmp_path / "damaged.json"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(ValueError, match=fragment) as refused:
        files.read_json(path)
    assert str(path) in one_line(refused.value)


# Each way the project writes or reads a file in its own folders, and a refused one.
OWN_FILE_USES = {
    "write_json": lambda path: files.write_json(path, {"a": 1}),
    "atomic_write_text": lambda path: files.atomic_write_text(path, "new"),
    "append_text": lambda path: files.append_text(path, "row\n", header="head\n"),
    "read_own_text": lambda path: files.read_own_text(path),
    "check_own": lambda path: files.check_own(path),
}


@pytest.mark.parametrize("how", ["symlink", "hardlink", "fifo", "folder"])
@pytest.mark.parametrize("use", OWN_FILE_USES)
def test_a_link_or_pipe_where_the_project_writes_is_refused_and_the_outside_file_kept(tmp_path, use, how):
    outside = tmp_path / "precious.txt"
    outside.write_text("the user's")
    plant(tmp_path / "out.json", how, outside)
    if (use, how) == ("read_own_text", "hardlink"):  # reading changes nothing (uv installs hard links)
        assert files.read_own_text(tmp_path / "out.json") == "the user's"
        return
    with pytest.raises(files.UnsafeFileError) as refused:
        OWN_FILE_USES[use](tmp_path / "out.json")
    assert str(tmp_path / "out.json") in one_line(refused.value) and "move it away" in str(refused.value)
    assert outside.read_text() == "the user's"


def test_append_text_appends_by_an_atomic_rewrite_with_the_header_once(tmp_path):
    target = tmp_path / "history.csv"
    for row in ("1\n", "2\n"):
        files.append_text(target, row, header="epoch\n")
    assert target.read_text() == "epoch\n1\n2\n" and sorted(os.listdir(tmp_path)) == ["history.csv"]


@pytest.mark.parametrize("name", ["model.keras", "r" * 255, "r" * 240 + ".weights.h5", "é" * 127])
def test_atomic_output_renames_only_a_finished_write_also_to_the_longest_legal_name(tmp_path, monkeypatch, name):
    with files.atomic_output(tmp_path / name) as partial:
        assert len(os.fsencode(partial.name)) <= 255 and partial.name.endswith(Path(name).suffix)
        assert partial.parent == tmp_path
        partial.write_text("whole")
    with pytest.raises(RuntimeError), files.atomic_output(tmp_path / name) as partial:
        partial.write_text("half")
        raise RuntimeError("killed")
    # Case 5: a full disk at the end of a write (`build_korean.py import` left invalid JSON). Every
    # script writes through files.py (a house test: tests/project/test_import_graph.py).
    monkeypatch.setattr(files.os, "fsync", mock.Mock(side_effect=OSError(28, "No space left on device")))
    with pytest.raises(OSError, match="No space"):
        files.write_json(tmp_path / name, {"ko": "나" * 10_000})
    assert (tmp_path / name).read_text() == "whole" and os.listdir(tmp_path) == [name]


# --------------------------------------------------------------------------- partial files (case 7)
def test_a_partial_named_with_a_huge_pid_is_cleaned_without_overflow(tmp_path):
    # Case 7: os.kill(10**30, 0) raises OverflowError; such a file belongs to no process.
    dead = [tmp_path / f".cifar10-abc.npz.{pid}.deadbeef.partial.npz" for pid in (10**30, 2**40)]
    mine = tmp_path / f".cifar10-def.npz.{os.getpid()}.deadbeef.partial.npz"
    kept = [mine, tmp_path / f"cifar10-abc.{2**40}.tmp.npz", tmp_path / "cifar10-notes.123.tmp.txt.bak",
            tmp_path / ".cifar10-notes.partial"]  # not names atomic_output writes: the user's files
    for path in (*dead, *kept):
        path.write_bytes(b"left over")
    assert not files.process_alive(-1) and files.process_alive(os.getpid())
    files.remove_abandoned_partials(tmp_path, "*cifar10-*")
    assert sorted(tmp_path.iterdir()) == sorted(kept)


# --------------------------------------------------------------------------- printed names (case 8)
def test_escaped_names_keep_one_line_and_no_escape_codes():
    assert files.escape_name("cat\nhorse 99.0%.png") == "cat\\nhorse 99.0%.png"
    assert files.escape_name("\x1b[2Jx.png") == "\\x1b[2Jx.png"
    assert files.escape_name(Path("a\rb")) == "a\\rb"
    assert files.escape_name("고양이 é.png") == "고양이 é.png"  # printable text stays as it is
    assert files.escape_name("bad\udcffname") == "bad\\udcffname"


# A .keras file python cannot unpack, or whose config nests too deep: tests/tools/test_inference.py.
def test_json_depth_skips_brackets_in_strings():
    assert files.json_depth(b'{"a": "[[[[[[", "b": [{"c": "\\"["}]}') == 3


# ---- one training per run folder: the second process stops at once, naming the first


HOLD = "import sys, time; from shiftvit_lib.tools.files import run_folder_lock\n" \
       "with run_folder_lock(sys.argv[1]):\n    print('held', flush=True); time.sleep(60)\n"


@pytest.mark.slow  # two more Python processes (about 10 s): in the full suite, not the inner loop
def test_a_second_training_stops_at_once_naming_the_holder_and_a_dead_holders_lock_is_free(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                              env=env)
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        second = subprocess.run([sys.executable, "-m", "shiftvit_lib", "train", "--preset", "quick", "--data",
                                 "sample", "--out", str(tmp_path)], capture_output=True, text=True, env=env, timeout=120)
        error_lines = [line for line in second.stderr.splitlines() if line.strip()]
        assert second.returncode != 0 and len(error_lines) == 1, second.stderr
        assert f"in use by pid {holder.pid} on " in error_lines[0]
        assert time.monotonic() - started < 60  # at once: before loading data or building a model
    finally:
        holder.kill()
        holder.wait()
    with run_folder_lock(tmp_path):  # a dead holder's lock is gone with it
        assert f"pid {os.getpid()} " in (tmp_path / LOCK_FILE).read_text()
