"""Your own copy of CIFAR-10: class-folder directories and archives, read with care.

:func:`load_cifar10` reads what :func:`shiftvit_lib.data.load_splits` reads (``"auto"``, ``"keras"``,
``"sample"``), plus a path: a directory or a ``.tar.gz``/``.tgz``/``.tar``/``.zip``
archive laid out as ``train/<class>/*.jpg`` and ``test/<class>/*.jpg`` (PNG works too).
It is also ``shiftvit_lib.load_cifar10`` and the command line's ``--data``.

Archives are read without extracting them to disk; what a source may make us read is
capped (:data:`MAX_IMAGE_FILE_BYTES`, :data:`MAX_TOTAL_BYTES`, :data:`MAX_FILES`), links,
pipes and devices are refused, and a whole archive, once decoded, is cached as arrays.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import socket
import stat
import tarfile
import threading
import urllib.parse
import urllib.request
import warnings
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from shiftvit_lib import data
from shiftvit_lib.data import CIFAR10_CLASSES, NAMED_SOURCES, RawData, cap_per_class
from shiftvit_lib.images import UnsupportedImageError, WrongImageSizeError, decode_rgb
from shiftvit_lib.tools.files import (  # noqa: F401 - describe_file_mode, sha256_of: this module's API too
    atomic_output,
    describe_file_mode,
    escape_name,
    open_regular,
    process_alive,
    read_json,
    remove_abandoned_partials,
    sha256_of,
    special_file_kind,
    write_json,
)

CIFAR10_IMAGE_SHAPE = (32, 32, 3)
SPLIT_FOLDERS = ("train", "test")
VALID_SOURCES_TEXT = (
    "'auto', 'keras', 'sample', or the path of a directory or "
    ".tar.gz/.tgz/.tar/.zip archive with train/<class>/ and test/<class>/ image folders"
)
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
KERAS_CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")


def load_cifar10(source: str | os.PathLike[str] = "auto", **options: Any) -> data.DataSplits:
    """CIFAR-10 split into train / validation / test: :func:`shiftvit_lib.data.load_splits` (same ``options``), or a path.

    ``source``: ``"auto"``, ``"keras"``, ``"sample"``, or a class-folder directory or
    archive (a str or ``pathlib.Path``); see the module docstring.
    """
    if source == "auto":
        source = load_auto
    elif not (isinstance(source, str) and source in NAMED_SOURCES):
        source = functools.partial(load_path_source, _existing_source_path(source))
    return data.load_splits(source, **options)


class DataSourceFallbackWarning(UserWarning):
    """``load_cifar10("auto")`` used the bundled sample instead of the full data."""


def keras_cifar10_available(timeout_s: float = 3.0) -> tuple[bool, str]:
    """Can ``keras.datasets.cifar10.load_data()`` succeed right now? ``(available, reason)``.

    True when the download is already cached, or when the download host (or the
    configured HTTPS proxy) accepts a connection within ``timeout_s``. The connection
    is tried in a thread, so a DNS lookup that hangs cannot hang us too.
    """
    cached = _keras_cached_files()
    if cached:
        return True, f"keras.datasets.cifar10 is cached at {cached[0]}"
    proxy = urllib.request.getproxies().get("https")
    url = urllib.parse.urlsplit(
        (proxy if "://" in proxy else f"http://{proxy}") if proxy else KERAS_CIFAR10_URL
    )
    host, port = url.hostname or "", url.port or (80 if proxy else 443)
    outcome: dict[str, Any] = {}

    def attempt() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                outcome["ok"] = True
        except OSError as error:
            outcome["error"] = error

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(timeout_s + 0.5)
    if outcome.get("ok"):
        return True, f"{host}:{port} is reachable"
    if "error" in outcome:
        return False, f"keras.datasets cannot reach {host}:{port} ({outcome['error']})"
    return False, f"keras.datasets got no answer from {host}:{port} within {timeout_s:g} s"


def _keras_cached_files() -> list[Path]:
    """Existing cached CIFAR-10 downloads, where keras.utils.get_file keeps them."""
    homes = [Path(os.environ.get("KERAS_HOME") or Path.home() / ".keras"), Path("/tmp/.keras")]
    candidates = [home / "datasets" / "cifar-10-batches-py-target_archive" for home in homes]
    return [path for path in candidates if path.is_file()]


def load_auto(limit: int | None, rng: np.random.Generator) -> RawData:
    """Prefer keras.datasets; fall back to the sample, loudly, when it is out of reach."""
    available, reason = keras_cifar10_available()
    if available:
        try:
            return data._cap_raw(data._load_from_keras(), limit, rng)
        except Exception as error:  # noqa: BLE001 - any failure leads to the fallback, which names it
            reason = f"keras.datasets.cifar10.load_data() failed: {error}"
    warnings.warn(
        "load_cifar10('auto'): using the small bundled CIFAR-10 sample (2,000 train / 500 test images) "
        f"instead of the full dataset, because {reason}. Pass source='keras' once you are online, "
        "or the path of a local copy.",
        DataSourceFallbackWarning,
        stacklevel=4,
    )
    raw = data._load_sample(limit, rng)
    raw.description += f" (source='auto' fell back to the sample: {reason})"
    return raw


def load_path_source(source: Any, limit: int | None, rng: np.random.Generator) -> RawData:
    """Read a class-folder directory or archive named by ``source`` (a str or a path)."""
    path = _existing_source_path(source)
    if path.is_dir():
        return _load_class_folders(_scan_directory(path), str(path), f"directory {path}", limit, rng)
    kind = special_file_kind(path, follow_links=True)
    if kind is not None:  # a named pipe called x.tar.gz would block the reader forever
        raise ValueError(
            f"data source {escape_name(path)} is {kind}, not a regular file; give a "
            "class-folder directory or an archive file"
        )
    if _is_archive(path):
        if limit is None:
            return _load_archive_cached(path)
        return _load_class_folders(_scan_archive(path), path.name, f"archive {path.name}", limit, rng)
    raise ValueError(
        f"{path} is a file but not a supported archive; expected a directory or a file "
        f"ending in {', '.join(ARCHIVE_SUFFIXES)}"
    )


def _existing_source_path(source: Any) -> Path:
    """Turn a path-like source into an existing Path, or explain what is wrong."""
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(
            f"source must be a string or a path; got {type(source).__name__}. "
            f"Valid sources: {VALID_SOURCES_TEXT}"
        )
    path = Path(source).expanduser()
    if path.exists():
        return path
    text = os.fspath(source)
    looks_like_path = (
        isinstance(source, os.PathLike)
        or "/" in text
        or os.sep in text
        or _is_archive(path)
        or text.startswith((".", "~"))
    )
    if not looks_like_path:
        raise ValueError(f"unknown data source {text!r}. Valid sources: {VALID_SOURCES_TEXT}")
    raise FileNotFoundError(
        f"data source {text!r} does not exist (resolved to {path.resolve()}). Check the path, "
        "or use source='sample' for the small dataset bundled with shiftvit_lib."
    )


def _is_archive(path: Path) -> bool:
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


@dataclasses.dataclass
class _ClassFolderListing:
    """What a directory or archive holds: relative POSIX names, and a reader."""

    file_names: list[str]
    dir_names: list[str]
    read_bytes: Callable[[str], bytes]


# Bounds on what a class-folder source may make us read. A 32x32 CIFAR image takes a few
# kilobytes; the whole of CIFAR-10 as JPEG about 55 MB (as PNG about 150 MB).
MAX_IMAGE_FILE_BYTES = 1 * 2**20  # one image file (directory or archive entry)
MAX_TOTAL_BYTES = 1 * 2**30  # all image files of one source together
MAX_FILES = 1_000_000  # image files under train/ and test/
# Image files are compressed already, so an archive of them barely shrinks: CIFAR-10's JPEGs
# unpack to 2.8x their .tar.gz (the tar headers and the JPEG tables repeat). An archive that would
# unpack to far more is a decompression bomb, refused before it fills the memory.
ARCHIVE_MAX_EXPANSION = 16
ARCHIVE_SLACK_BYTES = 16 * 2**20


def _mib(size: int) -> str:
    return f"{size / 2**20:,.1f} MiB"


class _ReadBudget:
    """Counts files and bytes read from one source; raises a clear ``ValueError`` past the caps."""

    def __init__(self, where: str, archive_bytes: int | None = None) -> None:
        self.where = where
        self.files = 0
        self.bytes = 0
        self.archive_bytes = archive_bytes
        self.max_bytes = MAX_TOTAL_BYTES
        if archive_bytes is not None:
            self.max_bytes = min(MAX_TOTAL_BYTES, ARCHIVE_MAX_EXPANSION * archive_bytes + ARCHIVE_SLACK_BYTES)

    def check_entry(self, name: str, size: int) -> None:
        if size > MAX_IMAGE_FILE_BYTES:
            raise ValueError(
                f"{self.where}: {name} is {_mib(size)}, more than the {_mib(MAX_IMAGE_FILE_BYTES)} a "
                "32x32 image file may take here; remove it (or is this the right data?)"
            )
        self.files += 1
        self.bytes += size
        if self.files > MAX_FILES:
            raise ValueError(
                f"{self.where}: more than {MAX_FILES:,} files under train/ and test/; "
                "a CIFAR-10 copy has 60,000. Is this the right data?"
            )
        if self.bytes > self.max_bytes and self.max_bytes < MAX_TOTAL_BYTES:
            raise ValueError(
                f"{self.where}: its images would unpack to more than {_mib(self.max_bytes)} from "
                f"{_mib(self.archive_bytes or 0)} on disk; image files barely compress, so this looks "
                "like a decompression bomb, not a dataset. Is this the right file?"
            )
        if self.bytes > MAX_TOTAL_BYTES:
            raise ValueError(
                f"{self.where}: the files under train/ and test/ add up to more than "
                f"{_mib(MAX_TOTAL_BYTES)}; CIFAR-10 as JPEG or PNG takes under 200 MiB. "
                "Is this the right data?"
            )


def _raise_walk_error(error: OSError) -> None:
    """``os.walk`` skips a folder it cannot list unless told otherwise; say which one instead."""
    hint = "; check its permissions" if isinstance(error, PermissionError) else ""
    raise OSError(
        error.errno, f"cannot read the folder {error.filename} ({error.strerror}){hint}", error.filename
    )


def _scan_directory(root: Path) -> _ClassFolderListing:
    """List train/ and test/ under ``root`` (not the rest of root, which may be large).

    Only regular files are read: a symbolic link, named pipe, socket or device under
    train/ or test/ is an error that names it (reading a pipe could block forever),
    as is a folder that cannot be listed and a file over :data:`MAX_IMAGE_FILE_BYTES`.
    """
    missing = [s for s in SPLIT_FOLDERS if not (root / s).is_dir()]
    if missing:
        raise ValueError(_missing_splits_message(str(root), missing))
    file_names, dir_names, special = [], [], []
    budget = _ReadBudget(str(root))
    for split in SPLIT_FOLDERS:
        for folder, subfolders, files in os.walk(root / split, onerror=_raise_walk_error):
            relative = Path(folder).relative_to(root).as_posix()
            for name in list(subfolders):
                if os.path.islink(os.path.join(folder, name)):
                    special.append(f"{relative}/{name} (a symbolic link to a folder)")
                    subfolders.remove(name)
                else:
                    dir_names.append(f"{relative}/{name}")
            for name in files:
                full, entry = os.path.join(folder, name), f"{relative}/{name}"
                if _is_hidden(entry):
                    continue
                info = os.lstat(full)
                if stat.S_ISREG(info.st_mode):
                    budget.check_entry(entry, info.st_size)
                    file_names.append(entry)
                else:
                    special.append(f"{entry} ({describe_file_mode(info.st_mode)})")
    if special:
        shown = ", ".join(special[:5]) + (f" and {len(special) - 5} more" if len(special) > 5 else "")
        raise ValueError(
            f"{root}: only regular image files are read, but found {shown}. "
            "Replace links with copies of the files and remove anything else."
        )

    def read(name: str) -> bytes:
        with open_regular(root / name, "image file", follow_links=False) as handle:  # no pipe swapped in
            data = handle.read(MAX_IMAGE_FILE_BYTES + 1)
        if len(data) > MAX_IMAGE_FILE_BYTES:  # it grew since it was listed
            budget.check_entry(name, len(data))
        return data

    return _ClassFolderListing(file_names, dir_names, read)


def _wanted_entry(name: str) -> bool:
    """Could this archive entry be data: under train/ or test/, at the top or in one wrapper folder?"""
    parts = name.split("/")
    return not _is_hidden(name) and (
        parts[0] in SPLIT_FOLDERS or (len(parts) > 1 and parts[1] in SPLIT_FOLDERS)
    )


def _scan_archive(path: Path) -> _ClassFolderListing:
    """Read a .zip or tar archive's images into memory, without extracting to disk.

    CIFAR-10 is small (60,000 files, ~55 MB as JPEG), and a compressed tar
    cannot be read at random cheaply, so every file is read in one pass. Entries
    outside ``train/`` and ``test/`` (a README, a licence, anything large) are
    skipped before they are read; an image entry over :data:`MAX_IMAGE_FILE_BYTES`,
    more than :data:`MAX_TOTAL_BYTES` in all, or a link, pipe or device entry under
    ``train/`` or ``test/`` is an error that names it.
    """
    contents: dict[str, bytes] = {}
    dirs: list[str] = []
    special: list[str] = []
    budget = _ReadBudget(path.name, archive_bytes=path.stat().st_size)
    if path.name.lower().endswith(".zip"):
        try:
            with zipfile.ZipFile(path) as archive:
                infos = archive.infolist()
                prefix = _archive_root_prefix([i.filename.rstrip("/") for i in infos])
                for info in infos:
                    name = info.filename.rstrip("/")
                    relative = name.removeprefix(prefix)
                    if (
                        not name.startswith(prefix)
                        or relative.split("/")[0] not in SPLIT_FOLDERS
                        or _is_hidden(relative)
                    ):
                        continue  # skipped before reading: it is not data
                    if info.is_dir():
                        dirs.append(name)
                    elif stat.S_ISLNK(info.external_attr >> 16):
                        special.append(f"{name} (a symbolic link)")
                    else:
                        budget.check_entry(name, info.file_size)
                        with archive.open(info) as member:
                            data = member.read(MAX_IMAGE_FILE_BYTES + 1)
                        if len(data) > MAX_IMAGE_FILE_BYTES:  # the header understated the size
                            budget.check_entry(name, len(data))
                        contents[name] = data
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as error:
            # zlib.error: a damaged byte inside a compressed member
            raise ValueError(
                f"{path} is not a readable zip archive, damaged or truncated ({error}); "
                "download or build it again"
            ) from None
    else:
        try:
            with tarfile.open(path, "r:*", tarinfo=CappedTarInfo) as tar:
                for member in tar:
                    name = member.name.removeprefix("./").rstrip("/")
                    if not _wanted_entry(name):
                        continue  # skipped before reading: it is not data
                    if member.isdir():
                        dirs.append(name)
                    elif member.isfile():
                        budget.check_entry(name, member.size)
                        extracted = tar.extractfile(member)
                        contents[name] = extracted.read() if extracted else b""
                    else:
                        kind = (
                            "a symbolic link"
                            if member.issym()
                            else "a hard link"
                            if member.islnk()
                            else "a named pipe"
                            if member.isfifo()
                            else "a device"
                            if member.isdev()
                            else "not a regular file"
                        )
                        special.append(f"{name} ({kind})")
        except (tarfile.TarError, zlib.error, EOFError, OSError) as error:
            raise ValueError(
                f"{path} is not a readable tar archive, damaged or truncated ({error}); "
                "download or build it again"
            ) from None
    prefix = _archive_root_prefix(list(contents) + dirs + [s.split(" (")[0] for s in special])
    special = [s for s in special if s.startswith(prefix)]
    if special:
        shown = ", ".join(special[:5]) + (f" and {len(special) - 5} more" if len(special) > 5 else "")
        raise ValueError(
            f"{path.name}: only regular image files are read, but the archive holds {shown} "
            "under train/ or test/. Rebuild it with the files themselves."
        )
    return _ClassFolderListing(
        [f.removeprefix(prefix) for f in contents if f.startswith(prefix)],
        [d.removeprefix(prefix) for d in dirs if d.startswith(prefix)],
        lambda name: contents[prefix + name],
    )


# A tar member's own header may carry a long name or PAX attributes; tarfile reads such a
# header whole into memory, so one that claims 512 MiB costs 512 MiB. Real ones take a few
# hundred bytes.
MAX_TAR_HEADER_BYTES = 64 * 2**10


class CappedTarInfo(tarfile.TarInfo):
    """tarfile's member header, refusing a long-name or PAX header larger than any real one."""

    def _check_header_size(self) -> None:
        if self.size > MAX_TAR_HEADER_BYTES:
            raise tarfile.HeaderError(
                f"a member header claims {self.size:,} bytes, more than the "
                f"{MAX_TAR_HEADER_BYTES:,} any real one takes"
            )

    def _proc_gnulong(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:  # type: ignore[override]
        self._check_header_size()
        return super()._proc_gnulong(tarfile_)

    def _proc_pax(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:  # type: ignore[override]
        self._check_header_size()
        return super()._proc_pax(tarfile_)


def array_cache_dir() -> Path:
    """Where decoded archives are kept: ``$SHIFTVIT_CACHE`` or ``~/.cache/shiftvit_lib``."""
    folder = Path(os.environ.get("SHIFTVIT_CACHE") or Path.home() / ".cache" / "shiftvit_lib")
    kind = special_file_kind(folder, follow_links=True)
    if kind not in ("missing", "a folder"):
        raise ValueError(
            f"SHIFTVIT_CACHE (or ~/.cache/shiftvit_lib) is {escape_name(folder)}, which is "
            f"{kind or 'a file'}; point SHIFTVIT_CACHE at a folder"
        )
    return folder


def _load_archive_cached(path: Path) -> RawData:
    """Decode a whole archive once and keep the arrays, keyed by the archive's sha256.

    Decoding 60,000 JPEGs takes about a minute on two cores; every later run (and
    every model of a comparison) reads the arrays back in a second. The key is the
    file's content, so an edited archive never reuses a stale cache. The cache holds
    plain arrays and strings, read with ``allow_pickle=False``, and is trusted only if
    it still has the size and sha256 recorded beside it when it was written
    (:func:`_read_cache`); anything else is decoded again.
    """
    cache = array_cache_dir() / f"cifar10-{sha256_of(path)[:32]}.npz"
    cached = _read_cache(cache)
    if cached is not None:
        return cached
    raw = _load_class_folders(
        _scan_archive(path), path.name, f"archive {path.name}", None, np.random.default_rng(0)
    )
    _write_cache(cache, raw)
    return raw


def _cache_record(cache: Path) -> Path:
    return cache.with_suffix(".json")


def _read_cache(cache: Path) -> RawData | None:
    """The arrays in ``cache`` if it matches its record (size, then sha256), else None."""
    try:
        record = read_json(_cache_record(cache))
        if cache.stat().st_size != record["bytes"] or sha256_of(cache) != record["sha256"]:
            return None  # truncated or altered since it was written: decode again
        with np.load(cache, allow_pickle=False) as arrays:
            return RawData(
                arrays["x_train"],
                arrays["y_train"],
                arrays["x_test"],
                arrays["y_test"],
                description=str(arrays["description"]),
                image_formats=str(arrays["image_formats"]),
            )
    except (OSError, KeyError, TypeError, ValueError, zipfile.BadZipFile):
        return None  # missing, unreadable or damaged: decode again


def _write_cache(cache: Path, raw: RawData) -> None:
    """Write ``cache`` and its record atomically; a failed write (a full disk) leaves no partial file."""
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        remove_abandoned_partials(cache.parent, "*cifar10-*")
        _cache_record(cache).unlink(missing_ok=True)  # the old record no longer vouches for the file
        with atomic_output(cache) as partial:  # a reader never sees half a file
            np.savez(
                partial,
                x_train=raw.x_train,
                y_train=raw.y_train,
                x_test=raw.x_test,
                y_test=raw.y_test,
                description=np.array(raw.description),
                image_formats=np.array(raw.image_formats),
            )
        # Until this lands, the cache is not trusted.
        write_json(_cache_record(cache), {"bytes": cache.stat().st_size, "sha256": sha256_of(cache)})
    except OSError:
        pass  # no writable cache (or no space): the next run decodes again, nothing else changes


def _process_alive(pid: int) -> bool:
    """Whether a process with this id exists (kept for callers of earlier versions)."""
    return process_alive(pid)


def _archive_root_prefix(names: Sequence[str]) -> str:
    """ "" if train/ and test/ are at the top, or "wrapper/" if all sit in one folder."""
    tops = {n.split("/", 1)[0] for n in names if n and not _is_hidden(n)}
    if tops & set(SPLIT_FOLDERS) or len(tops) != 1:
        return ""
    return f"{tops.pop()}/"


def _is_hidden(name: str) -> bool:
    """Hidden files and macOS zip metadata (.DS_Store, __MACOSX/) are not data."""
    return any(part.startswith(".") or part == "__MACOSX" for part in name.split("/"))


def _missing_splits_message(where: str, missing: Sequence[str]) -> str:
    return (
        f"{where} has no {' and '.join(m + '/' for m in missing)} folder"
        f"{'s' if len(missing) > 1 else ''}. Expected train/<class>/*.jpg and "
        f"test/<class>/*.jpg with <class> one of: {', '.join(CIFAR10_CLASSES)}"
    )


def _group_by_split_and_class(listing: _ClassFolderListing, where: str) -> dict[str, dict[str, list[str]]]:
    """Validate the layout; return ``{split: {class: sorted file names}}``."""
    layout: dict[str, dict[str, list[str]]] = {s: {} for s in SPLIT_FOLDERS}
    seen_splits: set[str] = set()

    def class_folder(split: str, class_name: str) -> list[str]:
        if class_name not in CIFAR10_CLASSES:
            raise ValueError(
                f"{where}: folder {split}/{class_name}/ is not a CIFAR-10 class. Class "
                f"folders must be named {', '.join(CIFAR10_CLASSES)}; rename or remove it."
            )
        return layout[split].setdefault(class_name, [])

    for name in sorted(set(listing.dir_names)):
        parts = name.split("/")
        if parts[0] in SPLIT_FOLDERS and not _is_hidden(name):
            seen_splits.add(parts[0])
            if len(parts) == 2:
                class_folder(parts[0], parts[1])
    for name in sorted(listing.file_names):
        parts = name.split("/")
        if parts[0] not in SPLIT_FOLDERS or _is_hidden(name):
            continue  # anything outside train/ and test/ (a README, a licence) is ignored
        seen_splits.add(parts[0])
        if len(parts) != 3:
            raise ValueError(
                f"{where}: {name} is not inside a class folder; images must be at "
                f"{parts[0]}/<class>/<file>. Move or remove it."
            )
        if not parts[2].lower().endswith(IMAGE_SUFFIXES):
            raise ValueError(
                f"{where}: {name} is not a .jpg/.jpeg/.png image; remove it from the class folder."
            )
        class_folder(parts[0], parts[1]).append(name)

    missing_splits = [s for s in SPLIT_FOLDERS if s not in seen_splits]
    if missing_splits:
        raise ValueError(_missing_splits_message(where, missing_splits))
    for split in SPLIT_FOLDERS:
        missing = [c for c in CIFAR10_CLASSES if c not in layout[split]]
        if missing:
            raise ValueError(
                f"{where}: {split}/ has no folder for class(es) {', '.join(missing)}; "
                "every split needs all 10 class folders."
            )
        empty = [c for c in CIFAR10_CLASSES if not layout[split][c]]
        if empty:
            raise ValueError(
                f"{where}: class folder(s) {', '.join(f'{split}/{c}/' for c in empty)} "
                "hold no images; add images or check the copy is complete."
            )
    return layout


def _load_class_folders(
    listing: _ClassFolderListing,
    where: str,
    what: str,
    limit: int | None,
    rng: np.random.Generator,
) -> RawData:
    """Decode the images of a validated class-folder listing."""
    layout = _group_by_split_and_class(listing, where)
    arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    format_counts: Counter[str] = Counter()
    for split in SPLIT_FOLDERS:
        names = [n for c in CIFAR10_CLASSES for n in layout[split][c]]
        labels = np.array(
            [i for i, c in enumerate(CIFAR10_CLASSES) for _ in layout[split][c]], dtype=np.int64
        )
        keep = cap_per_class(labels, limit, rng)
        images = np.empty((len(keep), *CIFAR10_IMAGE_SHAPE), dtype=np.uint8)
        for row, index in enumerate(keep):
            images[row], image_format = _decode_cifar_image(
                listing.read_bytes(names[index]), f"{where}:{names[index]}"
            )
            format_counts[image_format] += 1
        arrays[split] = images, labels[keep]
    formats = ", ".join(
        fmt if len(format_counts) == 1 else f"{count:,} {fmt}" for fmt, count in format_counts.most_common()
    )
    (x_train, y_train), (x_test, y_test) = arrays["train"], arrays["test"]
    return RawData(
        x_train,
        y_train,
        x_test,
        y_test,
        description=(
            f"CIFAR-10 class folders from {what}: {len(y_train):,} train / "
            f"{len(y_test):,} test images, {formats}"
        ),
        image_formats=formats,
    )


def _decode_cifar_image(data: bytes, name: str) -> tuple[np.ndarray, str]:
    """Decode one 32x32 image to uint8 RGB; also return its format ("JPEG", "PNG").

    The size is checked on the file's header, before decoding (the decoder predictions use,
    too), so a small file that claims to be 30,000 pixels wide costs nothing.
    """
    try:
        rgb, image_format = decode_rgb(data, expected_size=CIFAR10_IMAGE_SHAPE[1::-1])
    except WrongImageSizeError as error:
        raise ValueError(
            f"{name} is {error.size[0]}x{error.size[1]} pixels, but CIFAR-10 images are 32x32. "
            "Resize it (e.g. shiftvit_lib.tools.inference.load_image(path, 32)) or remove it."
        ) from None
    except UnsupportedImageError as error:
        raise ValueError(f"cannot decode image {name}: {error}. Replace or remove the file.") from None
    return np.asarray(rgb, dtype=np.uint8), image_format
