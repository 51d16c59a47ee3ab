"""One training per run folder: an operating-system lock held for the whole run.

Two ``train`` commands on one ``--out`` would both append to ``history.csv`` and both save
``best.keras``, leaving a folder no later command can read. The first to start holds an
exclusive ``flock`` on ``<out>/.lock`` until it ends (or dies: the OS drops the lock with the
process, so a crash never leaves a stale lock); a second one stops at once, before it writes
anything, with a one-line error naming the holder. Where ``fcntl`` does not exist (Windows),
runs are not locked.
"""

from __future__ import annotations

import datetime
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from shiftvit_lib.tools.files import escape_name, open_lock_file

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

LOCK_FILE = ".lock"


class RunFolderInUseError(ValueError):
    """Another process is training in this run folder."""


@contextmanager
def run_folder_lock(folder: str | os.PathLike[str]) -> Iterator[None]:
    """Hold ``folder``'s lock for the ``with`` block; raise RunFolderInUseError if another process has it."""
    folder = Path(folder)
    if fcntl is None:
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    fd = open_lock_file(folder / LOCK_FILE)  # no link followed, no pipe or device opened
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = escape_name(os.pread(fd, 200, 0).decode("utf-8", "replace").strip()) or "another process"
            raise RunFolderInUseError(
                f"{escape_name(folder)} is in use by {holder}; wait for that training to end, "
                "or choose another folder"
            ) from None
        started = datetime.datetime.now().isoformat(timespec="seconds")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()} (started {started})\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the file releases the lock
