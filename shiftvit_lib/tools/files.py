"""File safety, in one place: what the project reads from a user and what it writes for one.

Every tool of the project goes through these functions when it touches a file:

* **kinds before opening** -- :func:`special_file_kind` says what a path is without opening
  it (reading a named pipe blocks forever, a device never ends, a folder is no file);
  :func:`check_regular_file` turns that into one line naming the path; :func:`open_regular`
  opens without blocking and checks again on the open file (the path may have been swapped).
* **bounded reads** -- :func:`read_bounded` refuses a file larger than its cap before
  reading it; :func:`sha256_of` hashes in blocks; :func:`read_json` names a damaged file.
* **atomic writes** -- :func:`atomic_write_text`, :func:`write_json` and
  :func:`atomic_output` write a temporary file in the same folder, flush it to disk and
  rename it over the target: a reader, a crash or a full disk never leaves half a file. The
  rename replaces a link at the target instead of writing where it points;
  :func:`remove_abandoned_partials` removes what dead processes left.
* **own files only** -- :func:`check_own` refuses, in a run or output folder, a member the
  project did not make: a link (symbolic or hard) or anything but a regular file (a folder
  where a folder belongs); every read and write there goes through it, and
  :func:`append_text` appends by rewriting atomically, never through a link.
* **the run lock** -- :func:`run_folder_lock` holds a run folder's ``.lock`` (one training per
  folder), opened without following a link, refusing anything but a regular file.
* **.keras caps** -- :func:`check_keras_archive` reads a ``.keras`` zip's directory and
  its ``config.json`` before Keras does: no member may unpack to far more than it stores,
  and the config may not nest deeper than any model needs.
* **printed names** -- :func:`escape_name` shows a file name with its control characters
  escaped, so a newline cannot forge an output row and escape codes never reach a terminal;
  :func:`one_line` puts an error's message on one line.

This module uses the standard library only, so scripts (the website, the Korean edition)
can load it without Keras.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import lzma
import os
import re
import socket
import stat
import tarfile
import time
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

PathLike = str | os.PathLike[str]
_NOFOLLOW, _NONBLOCK, _CLOEXEC = (getattr(os, flag, 0) for flag in ("O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC"))


class UnsafeFileError(ValueError):
    """A path that is not what the project may read or write there; the message names it.

    ``reason`` is the message without the path, for a table that lists the files apart.
    """

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


# --------------------------------------------------------------------------- kinds
# What a file that is not a regular file is, by the first letter ``stat.filemode`` gives its mode.
_KINDS = dict(l="a symbolic link", d="a folder", p="a named pipe", s="a socket", c="a device", b="a device")


def mode_kind(mode: int) -> str | None:
    """``None`` for the ``st_mode`` of a regular file; else what the file is, for messages."""
    return None if stat.S_ISREG(mode) else _KINDS.get(stat.filemode(mode)[0], "not a regular file")


def special_file_kind(path: PathLike, *, follow_links: bool = False) -> str | None:
    """``None`` for a regular file; else what it is, without opening it.

    ``"missing"`` (also when a parent is a file), ``"a folder"``, ``"a symbolic link"``,
    ``"a named pipe"``, ``"a socket"``, ``"a device"``. With ``follow_links`` a link to a
    regular file counts as a regular file (and a dangling link as missing).
    """
    try:
        return mode_kind((os.stat if follow_links else os.lstat)(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return "missing"


def check_regular_file(path: PathLike, what: str = "a file", *, follow_links: bool = True) -> Path:
    """``path`` as a Path if it is a regular file; else a one-line error naming it and its kind.

    ``FileNotFoundError`` for a missing path, :class:`UnsafeFileError` (a ``ValueError``)
    for a folder, pipe, socket, device (or a link, without ``follow_links``). ``what`` names
    the file wanted, with its article ("an image").
    """
    path = Path(path)
    kind = special_file_kind(path, follow_links=follow_links)
    if kind == "missing":
        raise FileNotFoundError(f"nothing at {escape_name(path)}; give the path of {what}")
    if kind:
        message = f"{escape_name(path)} is {kind}, not a regular file; give the path of {what}"
        raise UnsafeFileError(message, f"not a regular file: {kind}")
    return path


def open_regular(path: PathLike, what: str = "a file", *, follow_links: bool = True) -> IO[bytes]:
    """Open a regular file for reading, never blocking on a pipe or a device swapped in."""
    path = check_regular_file(path, what, follow_links=follow_links)
    return os.fdopen(_open_checked(path, os.O_RDONLY | (0 if follow_links else _NOFOLLOW)), "rb")


def _open_checked(path: Path, flags: int, own: bool = False) -> int:
    """``os.open`` of a path checked to be a regular file (or missing), checked again once open.

    Opened without blocking, so a pipe or a device swapped in since the check is refused, not
    waited on; ``own``: a hard link swapped in is refused too.
    """
    fd = os.open(path, flags | _NONBLOCK | _CLOEXEC, 0o644)
    kind = _own_kind(os.fstat(fd)) if own else mode_kind(os.fstat(fd).st_mode)
    if kind:
        os.close(fd)
        raise UnsafeFileError(f"{escape_name(path)} is {kind}, not a regular file")
    os.set_blocking(fd, True)
    return fd


def folder_listing_error(error: OSError, doing: str = "list") -> OSError:
    """An error of listing a folder (``os.scandir``), as one line naming the folder and the fix."""
    hint = "; check its permissions" if isinstance(error, PermissionError) else ""
    message = f"cannot {doing} the folder {escape_name(error.filename)} ({error.strerror}){hint}"
    return type(error)(error.errno, message, error.filename)


def read_bounded(path: PathLike, limit: int, what: str = "a file", *, follow_links: bool = True) -> bytes:
    """The bytes of a regular file, refusing one larger than ``limit`` before reading it."""
    with open_regular(path, what, follow_links=follow_links) as handle:
        size = os.fstat(handle.fileno()).st_size
        data = b"" if size > limit else handle.read(limit + 1)  # limit + 1: it may grow as we read
    size = max(size, len(data))
    if size > limit:
        reason = f"file too large ({size / 2**20:.1f} MiB; the limit for {what} is {limit / 2**20:.0f} MiB)"
        raise UnsafeFileError(f"{escape_name(path)}: {reason}", reason)
    return data


def sha256_of(path: PathLike) -> str:
    """The hex sha256 of a regular file's bytes, read in blocks."""
    with open_regular(path) as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def read_json(path: PathLike, what: str = "JSON file", limit: int = 64 * 2**20) -> Any:
    """A JSON file, or a one-line ``ValueError`` naming it: cut short, not UTF-8, nested too deep."""
    data = read_bounded(path, limit, f"a {what}")
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        cut = getattr(error, "pos", -1) >= len(data.rstrip()) or "Unterminated string" in str(error)
        said = "it nests too deeply to read" if isinstance(error, RecursionError) else error
        raise UnsafeFileError(
            f"{escape_name(path)} is not valid UTF-8 JSON{' (cut short?)' if cut else ''} ({said}); is it the "
            "right file? Restore it from version control or write it again"
        ) from None


# --------------------------------------------------------------------------- own files only
def _own_kind(info: os.stat_result, folder: bool = False, reading: bool = False) -> str | None:
    kind = mode_kind(info.st_mode)
    if folder:
        return None if kind == "a folder" else kind or "a file"
    hard_link = not (kind or reading) and info.st_nlink > 1
    return f"a hard link (one of {info.st_nlink} names of a file)" if hard_link else kind


def check_own(path: PathLike, *, folder: bool = False, reading: bool = False) -> Path:
    """``path`` if it is missing or a regular file (``folder``: a folder) that is no link.

    A run folder or an output folder holds only what the project made there: a symbolic link
    (it would be followed out of the folder), a hard link (writing it rewrites the user's
    file it shares), a pipe (reading it blocks forever), a device or a socket is refused in
    one line naming it, before anything reads or writes it (:class:`UnsafeFileError`).
    ``reading``: a hard link passes (reading it changes nothing; installers such as uv
    install a package's files as hard links).
    """
    path = Path(path)
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        if kind := _own_kind(os.lstat(path), folder, reading):
            raise UnsafeFileError(
                f"{escape_name(path)} is {kind}, not {'a folder' if folder else 'a file'} the project made; move it away "
                "(what it points to is left as it is) and run again"
            )
    return path


def check_name_length(path: PathLike) -> Path:
    """``path`` if each of its names fits a file system (255 bytes); else a one-line error, before any work."""
    path = Path(path)
    if long := [name for name in path.parts if len(os.fsencode(name)) > 255]:
        raise UnsafeFileError(
            f"the name {escape_name(long[0][:40])}... in {escape_name(path)[:80]}... is {len(os.fsencode(long[0]))} "
            "bytes, more than the 255 a file system allows; choose a shorter name"
        )
    return path


def read_own_text(path: PathLike, limit: int = 64 * 2**20) -> str:
    """The text of a file the project wrote (:func:`check_own`), ``""`` if there is none; bounded."""
    if not check_own(path, reading=True).exists():
        return ""
    data = read_bounded(path, limit, escape_name(Path(path).name), follow_links=False)
    return data.decode("utf-8", "replace")


def append_text(path: PathLike, text: str, header: str = "") -> None:
    """Append ``text`` to a file the project wrote (``header`` first if it is empty), rewriting it atomically."""
    atomic_write_text(path, (read_own_text(path) or header) + text)


# --------------------------------------------------------------------------- atomic writes
@contextlib.contextmanager
def atomic_output(path: PathLike) -> Iterator[Path]:
    """A temporary path to write ``path`` through, for writers that want a path (``model.save``).

    The ``with`` block writes the temporary path (hidden, unique to this process and call,
    ending in ``path``'s suffixes, since Keras and NumPy choose the format by the name);
    when the block ends normally it is flushed and renamed over ``path`` (a link there is
    replaced, never written through), else removed. A link (symbolic or hard), folder, pipe
    or device at ``path`` is refused (:func:`check_own`) before anything is written. The
    temporary name is cut to fit the file system's 255 bytes, as long as ``path``'s own.
    """
    path = check_own(path)
    suffixes = "".join(path.suffixes[-2:])[-40:]
    tail = f".{os.getpid()}.{os.urandom(4).hex()}.partial{suffixes}"
    stem = os.fsencode(path.name)[: 254 - len(os.fsencode(tail))]
    partial = path.with_name(f".{os.fsdecode(stem)}{tail}")
    try:
        yield partial
        _fsync(partial, _NOFOLLOW)  # a link the writer left is refused, not followed
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    with contextlib.suppress(OSError):  # make the rename durable (not every system opens a folder)
        _fsync(path.parent)


def _fsync(path: Path, flags: int = 0) -> None:
    fd = os.open(path, os.O_RDONLY | flags)  # an fsync needs no write access
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_text(path: PathLike, text: str | bytes) -> None:
    """Write ``text`` (UTF-8; bytes as they are) to ``path`` through :func:`atomic_output`: all or nothing."""
    with atomic_output(path) as partial:
        partial.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))


def write_json(path: PathLike, payload: Any) -> None:
    """Write JSON (indented) atomically: a reader never sees half a file."""
    atomic_write_text(path, json.dumps(payload, indent=2, default=str) + "\n")


# The temporary files of atomic_output: group 1 is the pid.
_PARTIAL = re.compile(r"\..+\.(\d+)\.[0-9a-f]{8}\.partial(?:\..*)?")


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists (ids no system gives out count as dead)."""
    if not 0 < pid < 2**31:
        return False
    try:
        os.kill(pid, 0)
    except OSError as error:
        return isinstance(error, PermissionError)  # alive, another user's; else gone
    return True


def remove_abandoned_partials(folder: PathLike, pattern: str = "*") -> None:
    """Remove the temporary files, matching ``pattern``, of processes that died while writing.

    Only names :func:`atomic_output` makes count; a pid
    no system gives out (a forged or damaged name) belongs to no live process.
    """
    for leftover in Path(folder).glob(pattern):
        match = _PARTIAL.fullmatch(leftover.name)
        dead = match is not None and not process_alive(int(match.group(1)))
        if dead and special_file_kind(leftover) is None:
            leftover.unlink(missing_ok=True)


# --------------------------------------------------------------------------- the run lock
LOCK_FILE = ".lock"


class RunFolderInUseError(ValueError):
    """Another process is training in this run folder."""


@contextlib.contextmanager
def run_folder_lock(folder: PathLike) -> Iterator[None]:
    """Hold ``folder``'s lock for the ``with`` block; raise RunFolderInUseError if another process has it.

    Two trainings on one folder would both append to ``history.csv`` and both save
    ``best.keras``. The first holds an exclusive ``flock`` on ``<folder>/.lock`` until it ends
    (or dies: the OS drops the lock with the process, so a crash leaves no stale lock); a
    second stops at once, before it writes anything, naming the holder. The lock file is
    never followed through a link (the lock text would overwrite its target), and a pipe,
    socket, device or folder there is refused in one line naming it. Windows has no ``fcntl``:
    there runs are not locked, so two trainings in one folder are not stopped.
    """
    path = Path(folder) / LOCK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    if os.name == "nt":  # not protected there (see above)
        yield
        return
    import fcntl

    fd = _open_checked(check_own(path), os.O_RDWR | os.O_CREAT | _NOFOLLOW, own=True)
    with os.fdopen(fd, "r+", 1, "utf-8", "replace") as lock:  # line-buffered; closing it releases the lock
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = escape_name(lock.read(200).strip()) or "another process"
            raise RunFolderInUseError(
                f"{escape_name(folder)} is in use by {holder}; wait for that training to end, or choose another folder"
            ) from None
        lock.truncate(0)
        lock.write(f"pid {os.getpid()} on {socket.gethostname()} (started {time.ctime()})\n")
        yield


# --------------------------------------------------------------------------- .keras caps
# A .keras file is a zip of a small config and the weights, and weights barely compress. A member
# that would unpack to many times its stored size is a decompression bomb: Keras (before 3.14)
# unpacks the weights into memory or a temporary folder without asking.
KERAS_MEMBER_MAX_EXPANSION = 16
KERAS_MEMBER_SLACK_BYTES = 1 << 20  # small members (the JSON config) may compress better
KERAS_MAX_UNPACKED_BYTES = 4 << 30
KERAS_MAX_CONFIG_BYTES = 16 << 20  # a ShiftViT's config.json takes about 100 kB
KERAS_MAX_CONFIG_DEPTH = 100  # a model's config nests about 10 deep; Python's JSON parser recurses


def json_depth(text: bytes) -> int:
    """How deep JSON text nests its arrays and objects (strings skipped), without parsing it."""
    brackets = re.sub(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[^\[\]{}"]+|"', b"", text)  # strings, then all but brackets
    return max(itertools.accumulate(1 if byte in b"[{" else -1 for byte in brackets), default=0)


# Every error Python's archive readers raise for a damaged file (bz2's and gzip's are OSErrors).
ARCHIVE_ERRORS = (zipfile.BadZipFile, tarfile.TarError, lzma.LZMAError, zlib.error, EOFError, OSError)
# The zip compression methods Python reads (7-Zip and Windows also write Deflate64, method 9).
_ZIP_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)


def zip_member_problem(info: zipfile.ZipInfo) -> str | None:
    """Why Python cannot unpack a zip member it lists (encrypted, or compressed as it cannot), else None."""
    encrypted = info.flag_bits & 0x1
    how = "is encrypted" if encrypted else f"uses compression method {info.compress_type} (9: Deflate64)"
    if encrypted or info.compress_type not in _ZIP_METHODS:
        return f"its member {escape_name(info.filename)} {how}, which Python cannot unpack"
    return None


def check_keras_archive(path: PathLike) -> None:
    """Raise ``ValueError`` (one line) for a ``.keras`` zip Keras should not be given.

    Checked on the sizes the zip declares, before anything is unpacked (Python's zip reader
    never returns more than a member declares); then ``config.json`` is read, capped, and
    its nesting checked without recursion.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            problem = _keras_archive_problem(archive)
    except ARCHIVE_ERRORS as error:
        problem = f"is corrupt or truncated, not a .keras file ({one_line(error)}); save it again"
    if problem:
        raise UnsafeFileError(f"{escape_name(path)} {problem}")


def _keras_archive_problem(archive: zipfile.ZipFile) -> str | None:
    infos = archive.infolist()
    for info in infos:
        if problem := zip_member_problem(info):
            return f"is not a .keras file Keras saved: {problem}; save the model again (save_model)"
        if info.file_size > KERAS_MEMBER_MAX_EXPANSION * info.compress_size + KERAS_MEMBER_SLACK_BYTES:
            return (
                f"is not a model file: its member {escape_name(info.filename)} would unpack from "
                f"{info.compress_size:,} to {info.file_size:,} bytes, as a decompression bomb does (weights barely compress)"
            )
    total = sum(info.file_size for info in infos)
    if total > KERAS_MAX_UNPACKED_BYTES:
        return f"would unpack to {total / 2**30:.1f} GiB, over the {KERAS_MAX_UNPACKED_BYTES >> 30} GiB cap"
    config = next((info for info in infos if info.filename == "config.json"), None)
    if config is not None and config.file_size > KERAS_MAX_CONFIG_BYTES:
        return f"has a {config.file_size:,}-byte config.json, more than any model needs"
    depth = 0 if config is None else json_depth(archive.read(config))  # no more than it declares
    if depth > KERAS_MAX_CONFIG_DEPTH:
        return f"is not a model file: its config.json nests {depth} levels deep, more than any model's"
    return None


# --------------------------------------------------------------------------- printed names
def escape_name(name: Any) -> str:
    """``name`` (a str or a path) with every control or unprintable character escaped.

    ``"a\\nb.png"`` prints as ``a\\nb.png`` on one line; ``"\\x1b[2J"`` as ``\\x1b[2J``. Undecodable
    bytes (surrogates) become ``\\udcXX``. Printable text, accented letters and Hangul included,
    stays as it is.
    """
    text = os.fspath(name) if isinstance(name, os.PathLike) else str(name)
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def one_line(error: object) -> str:
    """An error's message on one line (its line breaks and runs of spaces as single spaces)."""
    return " ".join(str(error).split())
