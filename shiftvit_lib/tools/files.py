"""File safety, in one place: what the project reads from a user and what it writes for one.

Every tool of the project goes through these functions when it touches a file:

* **kinds before opening** -- :func:`special_file_kind` and :func:`check_regular_file` say
  what a path is without opening it: reading a named pipe blocks forever, a device never
  ends, a folder is no file. :func:`open_regular` opens without blocking and checks again
  on the open file (the path could have been swapped in between).
* **bounded reads** -- :func:`read_bounded` refuses a file larger than its cap before
  reading it; :func:`sha256_of` hashes in blocks.
* **atomic writes** -- :func:`atomic_write_bytes`, :func:`atomic_write_text`,
  :func:`write_json` and :func:`atomic_output` write a temporary file in the same folder,
  flush it to disk and rename it over the target: a reader, a crash or a full disk never
  leaves half a file. The temporary file is created exclusively and without following
  links, and the rename replaces a link at the target instead of writing where it points.
* **the run lock** -- :func:`open_lock_file` opens ``.lock`` without following a link and
  refuses anything but a regular file.
* **.keras caps** -- :func:`check_keras_archive` reads a ``.keras`` zip's directory and
  its ``config.json`` before Keras does: no member may unpack to far more than it stores,
  and the config may not nest deeper than any model needs.
* **printed names** -- :func:`escape_name` shows a file name with its control characters
  escaped, so a newline cannot forge an output row and escape codes never reach a terminal.
* **output folders** -- :func:`prepare_output_folder` clears a folder only if a marker file
  says this project made it; it never touches a home directory, the file system's root,
  or a protected folder (the checkout) and its ancestors.

This module uses the standard library only, so scripts (the website, the Korean edition)
can load it without Keras.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import stat
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

PathLike = str | os.PathLike[str]


class UnsafeFileError(ValueError):
    """A path that is not what the project may read or write there; the message names it."""


# --------------------------------------------------------------------------- kinds
def describe_file_mode(mode: int) -> str:
    """What a file that is not a regular file is, from its ``st_mode`` (for error messages)."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def special_file_kind(path: PathLike, *, follow_links: bool = False) -> str | None:
    """``None`` for a regular file; else what it is, without opening it.

    ``"missing"``, ``"a folder"``, ``"a symbolic link (...)"``, ``"a named pipe"``,
    ``"a socket"``, ``"a device"``. With ``follow_links`` a link to a regular file counts
    as a regular file (and a dangling link as missing).
    """
    try:
        mode = (os.stat if follow_links else os.lstat)(path).st_mode
    except FileNotFoundError:
        return "missing"
    except NotADirectoryError:  # a parent is a file
        return "missing"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "a symbolic link (links are not followed; copy the file itself here)"
    return describe_file_mode(mode)


def check_regular_file(path: PathLike, what: str = "file", *, follow_links: bool = True) -> Path:
    """``path`` as a Path if it is a regular file; else a one-line error naming it and its kind.

    Raises ``FileNotFoundError`` for a missing path, :class:`UnsafeFileError` (a
    ``ValueError``) for a folder, pipe, socket, device (or a link, without ``follow_links``).
    """
    path = Path(path)
    kind = special_file_kind(path, follow_links=follow_links)
    if kind == "missing":
        raise FileNotFoundError(errno.ENOENT, f"no {what} at {escape_name(path)}", str(path))
    if kind is not None:
        raise UnsafeFileError(f"{escape_name(path)} is {kind}, not a regular file; give the path of a {what}")
    return path


def open_regular(path: PathLike, what: str = "file", *, follow_links: bool = True) -> IO[bytes]:
    """Open a regular file for reading, never blocking on a pipe or a device swapped in."""
    path = check_regular_file(path, what, follow_links=follow_links)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise UnsafeFileError(f"{escape_name(path)} is a symbolic link; not followed") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # swapped since it was checked
            raise UnsafeFileError(f"{escape_name(path)} is {describe_file_mode(mode)}, not a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class FileTooLargeError(ValueError):
    """A file over the size a reader accepts; ``size`` is what it holds (or at least)."""

    def __init__(self, path: Path, size: int, limit: int, what: str) -> None:
        super().__init__(
            f"{escape_name(path)} is too large for {what} ({size / 2**20:.1f} MiB; "
            f"the limit is {limit / 2**20:.0f} MiB)"
        )
        self.size = size
        self.limit = limit


def read_bounded(path: PathLike, limit: int, what: str = "a file", *, follow_links: bool = True) -> bytes:
    """The bytes of a regular file, refusing one larger than ``limit`` before reading it."""
    path = Path(path)
    with open_regular(path, follow_links=follow_links) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > limit:
            raise FileTooLargeError(path, size, limit, what)
        data = handle.read(limit + 1)
    if len(data) > limit:  # it grew while we read it
        raise FileTooLargeError(path, len(data), limit, what)
    return data


def sha256_of(path: PathLike) -> str:
    """The hex sha256 of a regular file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open_regular(path) as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_json(path: PathLike, what: str = "JSON file", limit: int = 64 * 2**20) -> Any:
    """A JSON file, or a one-line ``ValueError`` naming it: cut short, not UTF-8, nested too deep."""
    path = Path(path)
    data = read_bounded(path, limit, what)
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{escape_name(path)} is not UTF-8 text ({error.reason} at byte "
            f"{error.start}); is it the right file?"
        ) from None
    except json.JSONDecodeError as error:
        ends_early = error.pos >= len(data.rstrip()) or error.msg.startswith("Unterminated string")
        cut = " (cut short?)" if ends_early else ""
        raise ValueError(
            f"{escape_name(path)} is not valid JSON{cut}: {error.msg} at line "
            f"{error.lineno}, column {error.colno}; restore it from version control "
            "or write it again"
        ) from None
    except RecursionError:
        raise ValueError(
            f"{escape_name(path)} nests its JSON too deeply to read; is it the right file?"
        ) from None


# --------------------------------------------------------------------------- atomic writes
def _refuse_special_target(path: Path) -> None:
    """A write may replace a regular file or a link (the link itself), never a folder or a pipe."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise UnsafeFileError(
            f"cannot write {escape_name(path)}: it is {describe_file_mode(mode)}, "
            "not a file; move it away or choose another path"
        )


def _partial_name(path: Path, suffix: str = "") -> Path:
    """A temporary name beside ``path``: hidden, unique to this process and call."""
    return path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.partial{suffix}")


def _fsync_folder(folder: Path) -> None:
    """Make a rename durable (best effort: not every system can open a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file and a rename: all of it or nothing.

    A link at ``path`` is replaced by the file, never written through; a folder, pipe or
    device there is refused (:class:`UnsafeFileError`). On any failure (a full disk) the
    temporary file is removed and ``path`` keeps what it held.
    """
    path = Path(path)
    _refuse_special_target(path)
    partial = _partial_name(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(partial, flags, 0o644)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    _fsync_folder(path.parent)
    return path


def atomic_write_text(path: PathLike, text: str, encoding: str = "utf-8") -> Path:
    """:func:`atomic_write_bytes` for text."""
    return atomic_write_bytes(path, text.encode(encoding))


def write_json(path: PathLike, payload: Any, **dumps_options: Any) -> Path:
    """Write JSON atomically (``indent=2`` unless told otherwise): a reader never sees half a file."""
    dumps_options.setdefault("indent", 2)
    dumps_options.setdefault("default", str)
    return atomic_write_text(path, json.dumps(payload, **dumps_options) + "\n")


@contextlib.contextmanager
def atomic_output(path: PathLike, suffix: str | None = None) -> Iterator[Path]:
    """A temporary path to write ``path`` through, for writers that want a path (``model.save``).

    The ``with`` block writes the temporary path (its name ends in ``suffix``, default
    ``path``'s own suffixes, since Keras and NumPy choose the format by the name); when the
    block ends normally it is flushed and renamed over ``path``, else removed.
    """
    path = Path(path)
    _refuse_special_target(path)
    partial = _partial_name(path, "".join(path.suffixes) if suffix is None else suffix)
    try:
        yield partial
        if not partial.is_file() or partial.is_symlink():
            raise UnsafeFileError(
                f"the writer of {escape_name(path)} left no regular file at {escape_name(partial)}"
            )
        fd = os.open(partial, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    _fsync_folder(path.parent)


_PARTIAL = re.compile(r"\..+\.(\d+)\.[0-9a-f]{8}\.partial(\..*)?")
_LEGACY_PARTIAL = re.compile(r"cifar10-[0-9a-f]+\.(\d+)\.tmp\..*")  # cache files of earlier versions


def is_partial_name(name: str) -> bool:
    """Whether ``name`` is a temporary file of :func:`atomic_write_bytes` / :func:`atomic_output`."""
    return _PARTIAL.fullmatch(name) is not None


def partial_owner(name: str) -> int | None:
    """The process id in a temporary file's name, or None if it holds no plausible one."""
    match = _PARTIAL.fullmatch(name) or _LEGACY_PARTIAL.fullmatch(name)
    pid = int(match.group(1)) if match else 0
    return pid if 0 < pid < 2**31 else None


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists (ids no system gives out count as dead)."""
    if not isinstance(pid, int) or not 0 < pid < 2**31:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except PermissionError:
        return True  # alive, another user's
    except OSError:
        return False
    return True


def remove_abandoned_partials(folder: PathLike, pattern: str = "*") -> list[Path]:
    """Remove the temporary files, matching ``pattern``, of processes that died while writing.

    Only names this module makes count (and the cache's of earlier versions); a pid no
    system gives out (a forged or damaged name) belongs to no live process.
    """
    removed = []
    for leftover in Path(folder).glob(pattern):
        if not (is_partial_name(leftover.name) or _LEGACY_PARTIAL.fullmatch(leftover.name)):
            continue
        pid = partial_owner(leftover.name)
        if pid is not None and process_alive(pid):
            continue
        if special_file_kind(leftover) is None:
            leftover.unlink(missing_ok=True)
            removed.append(leftover)
    return removed


# --------------------------------------------------------------------------- the run lock
def open_lock_file(path: PathLike) -> int:
    """A file descriptor on the lock file ``path`` (created if missing), for ``flock``.

    Never follows a link (a link there would make the lock text overwrite its target) and
    refuses a pipe, socket, device or folder, in one line naming the path.
    """
    path = Path(path)
    flags = (
        os.O_RDWR
        | os.O_CREAT
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_NONBLOCK", 0)
        | getattr(os, "O_CLOEXEC", 0)
    )
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as error:
        kind = special_file_kind(path)
        if error.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR) or kind not in (None, "missing"):
            raise UnsafeFileError(
                f"the lock file {escape_name(path)} is {kind or 'not a regular file'}; "
                "remove it (training recreates it as a plain file)"
            ) from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise UnsafeFileError(
            f"the lock file {escape_name(path)} is {describe_file_mode(mode)}; "
            "remove it (training recreates it as a plain file)"
        )
    os.set_blocking(fd, True)
    return fd


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
    depth = deepest = 0
    in_string = escaped = False
    for byte in text:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def check_keras_archive(path: PathLike) -> None:
    """Raise ``ValueError`` (one line) for a ``.keras`` zip Keras should not be given.

    Checked on the sizes the zip declares, before anything is unpacked (Python's zip reader
    never returns more than a member declares); then ``config.json`` is read, capped, and
    its nesting checked without recursion.
    """
    path = Path(path)
    name = escape_name(path)
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            for info in infos:
                if (
                    info.file_size
                    > KERAS_MEMBER_MAX_EXPANSION * info.compress_size + KERAS_MEMBER_SLACK_BYTES
                ):
                    raise ValueError(
                        f"{name} is not a model file this library loads: its member "
                        f"{escape_name(info.filename)} would unpack from {info.compress_size:,} to "
                        f"{info.file_size:,} bytes (model weights barely compress), as a decompression "
                        "bomb does. Use a .keras file saved by Keras."
                    )
            total = sum(info.file_size for info in infos)
            if total > KERAS_MAX_UNPACKED_BYTES:
                raise ValueError(
                    f"{name} would unpack to {total / 2**30:.1f} GiB, more than the "
                    f"{KERAS_MAX_UNPACKED_BYTES >> 30} GiB this library loads"
                )
            config = next((info for info in infos if info.filename == "config.json"), None)
            if config is not None:
                if config.file_size > KERAS_MAX_CONFIG_BYTES:
                    raise ValueError(
                        f"{name}: its config.json is {config.file_size:,} bytes, more than "
                        f"any model needs ({KERAS_MAX_CONFIG_BYTES:,}); is it a model file?"
                    )
                with archive.open(config) as member:
                    depth = json_depth(member.read(KERAS_MAX_CONFIG_BYTES + 1))
                if depth > KERAS_MAX_CONFIG_DEPTH:
                    raise ValueError(
                        f"{name}: its config.json nests {depth} levels deep, more than any "
                        f"model's ({KERAS_MAX_CONFIG_DEPTH}); it is not a model file this "
                        "library loads"
                    )
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as error:
        if isinstance(error, ValueError) and not isinstance(error, zipfile.BadZipFile):
            raise
        raise ValueError(
            f"{name} is not a valid .keras file ({' '.join(str(error).split())}); it is "
            "corrupt or truncated. Save it again with save_model()."
        ) from None


# --------------------------------------------------------------------------- printed names
def escape_name(name: Any) -> str:
    """``name`` (a str or a path) with every control or unprintable character escaped.

    ``"a\\nb.png"`` prints as ``a\\nb.png`` on one line; ``"\\x1b[2J"`` as ``\\x1b[2J``. Undecodable
    bytes (surrogates) become ``\\udcXX``. Printable text, accented letters and Hangul included,
    stays as it is.
    """
    text = os.fspath(name) if isinstance(name, os.PathLike) else str(name)
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else _escaped_char(char) for char in text)


def _escaped_char(char: str) -> str:
    code = ord(char)
    if char in "\n\r\t":
        return repr(char)[1:-1]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


# --------------------------------------------------------------------------- output folders
OUTPUT_MARKER = ".made-by-shiftvit"


def _forbidden_output(folder: Path, protect: Iterable[PathLike]) -> str | None:
    """Why ``folder`` (resolved) may never be cleared, or None."""
    home = Path.home().resolve()
    if folder == Path(folder.anchor):
        return "the root of the file system"
    if folder == home:
        return "your home directory"
    if folder.parent == home.parent and home.parent != Path(home.anchor):
        return "a home directory"  # /home/<anyone>
    for guarded in protect:
        guarded = Path(guarded).resolve()
        if folder == guarded:
            return f"the checkout ({guarded})"
        if folder in guarded.parents:
            return f"a folder that holds the checkout ({guarded})"
    return None


def check_output_folder(folder: PathLike, *, tool: str, protect: Iterable[PathLike] = ()) -> Path:
    """``folder`` resolved, if :func:`prepare_output_folder` may clear it; else its one-line refusal.

    Writes nothing: a tool that clears several folders checks them all first.
    """
    folder = Path(folder).expanduser().resolve()
    forbidden = _forbidden_output(folder, protect)
    if forbidden:
        raise UnsafeFileError(
            f"{tool} will not write into {escape_name(folder)}: it is {forbidden}, and "
            "writing there means clearing it first; choose a new folder such as "
            "build/site"
        )
    if folder.exists() or folder.is_symlink():
        kind = special_file_kind(folder, follow_links=True)
        if kind != "a folder":
            raise UnsafeFileError(
                f"{tool} will not replace {escape_name(folder)}: it is "
                f"{kind or 'a file'}, not a folder it made; choose a new folder"
            )
        marked = special_file_kind(folder / OUTPUT_MARKER) is None
        if not marked and any(folder.iterdir()):
            raise UnsafeFileError(
                f"{tool} will not clear {escape_name(folder)}: it exists and was not made by this project "
                f"(no {OUTPUT_MARKER} file in it); choose a new folder, or empty it yourself"
            )
    return folder


def prepare_output_folder(folder: PathLike, *, tool: str, protect: Iterable[PathLike] = ()) -> Path:
    """An empty output folder for ``tool`` at ``folder`` (resolved), with its marker file.

    A folder is cleared only if it holds :data:`OUTPUT_MARKER` (this project made it) or is
    empty. Anything else -- a folder of the user's, a file, the file system's root, a home
    directory, a ``protect``-ed folder or one that holds it -- is refused with an
    :class:`UnsafeFileError` (a ``ValueError``) in one line, before anything is removed.
    """
    folder = check_output_folder(folder, tool=tool, protect=protect)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    atomic_write_text(folder / OUTPUT_MARKER, f"made by {tool}; it clears and rewrites this folder\n")
    return folder
