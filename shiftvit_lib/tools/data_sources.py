"""Every CIFAR-10 source and its reader: the Keras download, the bundled sample, your own copy.

:func:`load_cifar10` (also ``shiftvit_lib.load_cifar10`` and the command line's ``--data``)
reads a source and splits it with :func:`shiftvit_lib.data.make_splits`. The sources
(:data:`SOURCES`): ``"keras"``, the original release via ``keras.datasets`` (downloaded once,
170 MB); ``"sample"``, the 2,000 + 500 images bundled with this package (JPEG q75,
offline); ``"auto"``, the first when it can be had, else the sample, with a warning; or a
path: a directory or a ``.tar.gz``/``.tgz``/``.tar``/``.zip`` archive laid out as
``train/<class>/*.jpg`` and ``test/<class>/*.jpg`` (PNG works too).

A directory and the two kinds of archive are each read by a small generator of entries
(name, kind, size, reader); one function reads them all alike. Archives are read without
extracting them to disk; what a source may make us read is capped
(:data:`MAX_IMAGE_FILE_BYTES`, :data:`MAX_TOTAL_BYTES`, :data:`MAX_FILES`), links, pipes
and devices are refused, and a whole archive, once decoded, is cached as arrays.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import multiprocessing.pool
import os
import socket
import stat
import tarfile
import warnings
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import keras
import numpy as np

from shiftvit_lib.config import InputError, check_whole_number
from shiftvit_lib.data import CIFAR10_CLASSES, DataSplits, RawData, cap_per_class, make_splits
from shiftvit_lib.images import UnsupportedImageError, decode_rgb
from shiftvit_lib.tools import files

SPLIT_FOLDERS = ("train", "test")
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
KERAS_CIFAR10_HOST = "www.cs.toronto.edu"  # where keras.datasets.cifar10 downloads from (HTTPS)
SAMPLE_ARCHIVE = Path(__file__).resolve().parents[1] / "assets" / "cifar10_sample.zip"


def load_cifar10(
    source: str | os.PathLike[str] = "auto",
    *,
    val_fraction: float = 0.2,
    seed: int = 42,
    limit: int | None = None,
) -> DataSplits:
    """CIFAR-10 from ``source``, split into train / validation / test (:func:`~shiftvit_lib.data.make_splits`).

    Args:
        source: ``"auto"``, ``"keras"``, ``"sample"`` (:data:`SOURCES`), or a class-folder
            directory or archive (a str or ``pathlib.Path``); see the module docstring.
        val_fraction: share of each class's training images moved to validation, in [0, 1).
        seed: seeds the ``limit`` subsampling, the split and the order of every split.
        limit: at most this many images per class in the training pool and in the test set.
    """
    if limit is not None:
        check_whole_number(limit, "limit (images per class)")
    rng = np.random.default_rng(seed)
    if isinstance(source, str) and source in SOURCES:
        raw = SOURCES[source](limit, rng)
    else:
        raw = _load_path(_existing_source_path(source), limit, rng)
    if limit is not None:
        raw.description += f" (at most {limit:,} images per class kept, seed {seed})"
    raw.description = files.escape_name(raw.description)  # it names the user's path: printed, it is one line
    return make_splits(raw, rng, val_fraction=val_fraction)


class DataSourceUnavailableError(RuntimeError):
    """A named data source could not be fetched (``"keras"`` offline, for example)."""


def read_keras(limit: int | None, rng: np.random.Generator) -> RawData:
    """The original release via ``keras.datasets`` (downloads 170 MB on first use)."""
    try:
        downloaded = keras.datasets.cifar10.load_data()  # ((x_train, y_train), (x_test, y_test))
    except Exception as error:  # noqa: BLE001 - get_file raises a bare Exception when the download fails
        failed = f"keras.datasets.cifar10.load_data() failed ({error})"
        offline = "Without internet use source='sample', a local copy, or source='auto' (it falls back to the sample)"
        raise DataSourceUnavailableError(f"{failed}. {offline}") from error
    arrays = []
    for images, labels in downloaded:
        labels = labels.reshape(-1).astype(np.int64)
        keep = cap_per_class(labels, limit, rng)
        arrays += [np.ascontiguousarray(images[keep]), labels[keep]]
    sizes = f"{len(arrays[1]):,} train / {len(arrays[3]):,} test images"
    return RawData(*arrays, f"CIFAR-10 via keras.datasets.cifar10 (original release): {sizes}")


def read_sample(limit: int | None, rng: np.random.Generator) -> RawData:
    """The bundled sample: ``train/<class>/*.jpg`` and ``test/<class>/*.jpg`` in one zip,
    read as your own copies are (it passes their caps and layout checks)."""
    raw = _read_class_folders(SAMPLE_ARCHIVE, limit, rng)
    sizes = f"{len(raw.y_train):,} train / {len(raw.y_test):,} test images, JPEG q75"
    differ = "pixels differ slightly from the original release"
    raw.description = f"bundled CIFAR-10 sample ({SAMPLE_ARCHIVE.name}): {sizes}; {differ}"
    return raw


class DataSourceFallbackWarning(UserWarning):
    """``load_cifar10("auto")`` used the bundled sample instead of the full data."""


def keras_cifar10_available(timeout_s: float = 3.0) -> tuple[bool, str]:
    """Can ``keras.datasets.cifar10.load_data()`` succeed right now? ``(available, reason)``.

    True when the download is already cached, or when the download host accepts a
    connection within ``timeout_s``. The connection is tried in a thread, so a DNS lookup
    that hangs cannot hang us too. Behind an HTTPS proxy the direct connection may fail:
    ``"auto"`` then falls back to the sample (with a warning), and ``"keras"`` still
    downloads through the proxy.
    """
    homes = [Path(os.environ.get("KERAS_HOME") or Path.home() / ".keras"), Path("/tmp/.keras")]
    for cached in (home / "datasets" / "cifar-10-batches-py-target_archive" for home in homes):
        if cached.is_file():  # where keras.utils.get_file keeps the download
            return True, f"keras.datasets.cifar10 is cached at {cached}"
    host, port = KERAS_CIFAR10_HOST, 443
    try:  # the pool's thread is a daemon: one stuck in a DNS lookup never holds the interpreter
        with multiprocessing.pool.ThreadPool(1) as pool:
            pool.apply_async(socket.create_connection, ((host, port), timeout_s)).get(timeout_s + 0.5).close()
    except multiprocessing.pool.TimeoutError:
        return False, f"keras.datasets got no answer from {host}:{port} within {timeout_s:g} s"
    except OSError as error:
        return False, f"keras.datasets cannot reach {host}:{port} ({error})"
    return True, f"{host}:{port} is reachable"


def read_auto(limit: int | None, rng: np.random.Generator) -> RawData:
    """Prefer keras.datasets; fall back to the sample, loudly, when it is out of reach."""
    available, reason = keras_cifar10_available()
    if available:
        try:
            return read_keras(limit, rng)
        except DataSourceUnavailableError as error:  # the fallback names the failure
            reason = f"keras.datasets.cifar10.load_data() failed: {error.__cause__}"
    raw = read_sample(limit, rng)
    raw.description += f" (source='auto' fell back to the sample: {reason})"
    fix = "Pass source='keras' once online, or the path of a local copy."
    message = f"load_cifar10('auto'): not the full data but the {raw.description}. {fix}"
    warnings.warn(message, DataSourceFallbackWarning, stacklevel=3)
    return raw


# The named sources and their readers ``(limit per class, generator) -> RawData``; a path is the fourth kind.
SOURCES = {"auto": read_auto, "keras": read_keras, "sample": read_sample}


def _existing_source_path(source: str | os.PathLike[str]) -> Path:
    """Turn a path-like source into an existing Path, or explain what is wrong.

    Anything else is refused by ``Path`` itself, in one line that names the type it got.
    """
    path = Path(source).expanduser()
    if path.exists():
        return path
    text = os.fspath(source)
    if isinstance(source, str) and not (len(path.parts) > 1 or _is_archive(path) or text.startswith(".")):
        named = ", ".join(map(repr, SOURCES))
        raise InputError(f"unknown data source {text!r}. Valid sources: {named}, or a class-folder path")
    loop = " (a symbolic link that leads nowhere: a loop or a missing target)" if path.is_symlink() else ""
    where = files.escape_name(os.path.abspath(path))
    raise FileNotFoundError(f"data source {text!r} does not exist{loop} ({where}); check the path")


def _is_archive(path: Path) -> bool:
    return path.name.lower().endswith(ARCHIVE_SUFFIXES)


def _load_path(path: Path, limit: int | None, rng: np.random.Generator) -> RawData:
    """Read the class-folder directory or archive at ``path``; a whole archive through the cache."""
    if not path.is_dir():
        # a named pipe called x.tar.gz would block the reader forever
        files.check_regular_file(path, "a class-folder directory or an archive")
        if not _is_archive(path):
            raise InputError(f"{path}: not a supported archive; use a folder or {'/'.join(ARCHIVE_SUFFIXES)}")
        if limit is None:
            return _load_archive_cached(path)
    return _read_class_folders(path, limit, rng)


# --------------------------------------------------------------------------- reading entries
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
# A tar member's own header may carry a long name or PAX attributes; tarfile reads such a
# header whole into memory, so one that claims 512 MiB costs 512 MiB. Real ones take a few
# hundred bytes.
MAX_TAR_HEADER_BYTES = 64 * 2**10
_TAR_HEADER_TYPES = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE)
# A tar's links are named; its pipes and devices (only a crafted archive holds them) are "not a regular file".
_TAR_LINKS = {tarfile.SYMTYPE: "a symbolic link", tarfile.LNKTYPE: "a hard link"}

# One entry of a source (folders are not entries): (name, kind, size, reader). Kind is None for a
# regular file, or what else it is ("a symbolic link"...); the reader returns a regular file's bytes.
_Entry = tuple[str, str | None, int, Callable[[], bytes]]


def _directory_entries(root: Path) -> Iterator[_Entry]:
    """train/ and test/ under ``root`` (not the rest of root, which may be large); links not followed."""
    # A missing split folder is reported once the layout is checked.
    for top in (root / split for split in SPLIT_FOLDERS if (root / split).is_dir()):
        for folder, subfolders, names in os.walk(top, onerror=_raise_walk_error):
            # a link to a folder is among the subfolders: listed (and refused), never followed
            for path in (Path(folder, name) for name in subfolders + names):
                info = os.lstat(path)
                read = functools.partial(files.read_bounded, path, MAX_IMAGE_FILE_BYTES, follow_links=False)
                if not stat.S_ISDIR(info.st_mode):
                    yield path.relative_to(root).as_posix(), files.mode_kind(info.st_mode), info.st_size, read


def _raise_walk_error(error: OSError) -> None:
    """``os.walk`` skips a folder it cannot list unless told otherwise; say which one instead."""
    raise files.folder_listing_error(error, "read")


def _zip_entries(path: Path) -> Iterator[_Entry]:
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():  # read() never returns more than an entry declares
            if problem := files.zip_member_problem(info):
                raise InputError(f"{files.escape_name(path)}: {problem}; give it unpacked (a folder)")
            kind = "a symbolic link" if stat.S_ISLNK(info.external_attr >> 16) else None
            if not info.is_dir():
                yield info.filename, kind, info.file_size, functools.partial(archive.read, info)


class CappedTarInfo(tarfile.TarInfo):
    """tarfile's member header, refusing a long-name or PAX header larger than any real one."""

    def _proc_member(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        if self.type in _TAR_HEADER_TYPES and self.size > MAX_TAR_HEADER_BYTES:
            raise tarfile.HeaderError(f"a header claims {self.size:,} bytes; real ones take a few hundred")
        return super()._proc_member(tarfile_)


def _tar_entries(path: Path) -> Iterator[_Entry]:
    with tarfile.open(path, "r:*", tarinfo=CappedTarInfo) as tar:
        for member in tar:  # a compressed tar is read in one pass: the caller reads each entry at once
            kind = None if member.isfile() else _TAR_LINKS.get(member.type, "not a regular file")
            if not member.isdir():
                yield member.name, kind, member.size, lambda member=member: tar.extractfile(member).read()


# The image files of a source: {split: {class: {name: bytes}}}, every split and class present.
_Layout = dict[str, dict[str, dict[str, bytes]]]


def _read_source(path: Path) -> tuple[_Layout, str]:
    """The image files of a directory or archive, by split and class, and its name for messages."""
    if path.is_dir():
        return _read_layout(_directory_entries(path), f"directory {path}"), f"directory {path}"
    kind = "zip" if path.name.lower().endswith(".zip") else "tar"
    where = f"archive {path.name}"
    try:
        entries = _zip_entries(path) if kind == "zip" else _tar_entries(path)
        return _read_layout(entries, where, path.stat().st_size), where
    except files.ARCHIVE_ERRORS as error:
        raise InputError(
            f"{path} is not a readable {kind} archive, damaged or truncated ({' '.join(str(error).split())}); download or build it again"
        ) from None


def _read_layout(entries: Iterable[_Entry], where: str, archive_bytes: int | None = None) -> _Layout:
    """Read the image files under train/<class>/ and test/<class>/, checking each one's place and size first.

    One pass: entries outside ``train/`` and ``test/`` (a README, a licence, anything large)
    are skipped, and a misplaced file or one over a cap is refused, before it is read. Names
    lose a wrapper folder that holds train/ and test/; data in two places is refused, never mixed.
    A link, pipe or device is named, never read.
    """
    layout = {split: {name: {} for name in CIFAR10_CLASSES} for split in SPLIT_FOLDERS}
    roots, count, total = set(), 0, 0
    for name, kind, size, read in entries:
        parts = name.removeprefix("./").rstrip("/").split("/")
        # hidden files (a Mac's __MACOSX/ holds only "._" files), or not data (at the top or in
        # one wrapper folder): skipped before reading
        if any(part.startswith(".") for part in parts) or set(parts[:2]).isdisjoint(SPLIT_FOLDERS):
            continue
        roots.add("./" if parts[0] in SPLIT_FOLDERS else f"{parts.pop(0)}/")
        name = "/".join(parts)
        if len(roots) > 1:
            raise InputError(f"{where}: train/ and test/ in {' and '.join(sorted(roots))}; keep one copy")
        if kind:
            raise InputError(f"{where}: {name} is {kind}; only regular image files are read (copy it in)")
        count += 1
        total += size
        _check_entry(where, name, parts, size, count, total, archive_bytes)
        layout[parts[0]][parts[1]][name] = read()
    empty = []
    for split, classes in layout.items():  # a split without any image is named once
        missing = [f"{split}/{name}/" for name, found in classes.items() if not found]
        empty += [f"{split}/"] if len(missing) == len(classes) else missing
    expected = f"train/<class>/*.jpg and test/<class>/*.jpg for each of: {', '.join(CIFAR10_CLASSES)}"
    if empty:
        raise InputError(f"{where}: no images in {', '.join(empty)}; expected {expected}")
    return layout


def _check_entry(
    where: str, name: str, parts: list[str], size: int, count: int, total: int, archive_bytes: int | None
) -> None:
    """A one-line ``ValueError`` if the image file ``name`` (``parts``) is misplaced, or reading it passes a cap.

    It is the ``count``-th image file, of ``size`` bytes, and brings the total to ``total``.
    """
    if len(parts) != 3:
        problem = f"{name} is not inside a class folder ({parts[0]}/<class>/<file>); move or remove it"
    elif parts[1] not in CIFAR10_CLASSES:
        problem = f"{parts[0]}/{parts[1]}/ is not a CIFAR-10 class ({', '.join(CIFAR10_CLASSES)}); rename it"
    elif not name.lower().endswith((".jpg", ".jpeg", ".png")):
        problem = f"{name} is not a .jpg/.jpeg/.png image; remove it"
    elif size > MAX_IMAGE_FILE_BYTES:
        problem = f"{name} is {_mib(size)}, over the {_mib(MAX_IMAGE_FILE_BYTES)} cap for one image file"
    elif count > MAX_FILES:
        problem = f"more than {MAX_FILES:,} files under train/ and test/; a CIFAR-10 copy has 60,000"
    elif total > MAX_TOTAL_BYTES:
        problem = f"the images add up to more than {_mib(MAX_TOTAL_BYTES)}; CIFAR-10 takes under 200 MiB"
    elif archive_bytes is not None and total > ARCHIVE_MAX_EXPANSION * archive_bytes + ARCHIVE_SLACK_BYTES:
        # image files barely compress: an archive that unpacks to far more is a bomb
        problem = f"{_mib(total)} from a {_mib(archive_bytes)} archive: this looks like a decompression bomb"
    else:
        return
    raise InputError(f"{where}: {problem}. Is this the right data?")


def _mib(size: int) -> str:
    return f"{size / 2**20:,.1f} MiB"


# --------------------------------------------------------------------------- decoding
def _read_class_folders(path: Path, limit: int | None, rng: np.random.Generator) -> RawData:
    """Read and decode the images of a class-folder directory or archive (at most ``limit`` per class)."""
    layout, where = _read_source(path)
    arrays = {}
    counts = Counter()  # of the image formats
    for split, classes in layout.items():
        found = [item for images in classes.values() for item in sorted(images.items())]  # (name, bytes)
        labels = np.repeat(np.arange(len(classes)), [len(images) for images in classes.values()])
        keep = cap_per_class(labels, limit, rng)
        decoded = [_decode_cifar_image(found[i][1], f"{where}:{found[i][0]}") for i in keep]
        counts.update(image_format for _, image_format in decoded)
        arrays[split] = np.stack([image for image, _ in decoded]), labels[keep].astype(np.int64)
    formats = ", ".join(f"{n:,} {fmt}" if len(counts) > 1 else fmt for fmt, n in counts.most_common())
    sizes = f"{len(arrays['train'][1]):,} train / {len(arrays['test'][1]):,} test images"
    description = f"CIFAR-10 class folders from {where}: {sizes}, {formats}"
    return RawData(*arrays["train"], *arrays["test"], description, image_formats=formats)


def _decode_cifar_image(data: bytes, name: str) -> tuple[np.ndarray, str]:
    """Decode one 32x32 image to uint8 RGB; also return its format ("JPEG", "PNG").

    The size is checked on the file's header, before decoding (the decoder predictions use,
    too), so a small file that claims to be 30,000 pixels wide costs nothing.
    """
    try:
        rgb, image_format = decode_rgb(data, expected_size=(32, 32))
    except UnsupportedImageError as error:  # its size is checked first (WrongImageSizeError)
        raise InputError(f"{name}: {error}; replace or remove it (CIFAR-10: 32x32 PNG or JPEG)") from None
    return np.asarray(rgb, dtype=np.uint8), image_format


# --------------------------------------------------------------------------- the archive cache
def array_cache_dir() -> Path:
    """Where decoded archives are kept: ``$SHIFTVIT_CACHE`` or ``~/.cache/shiftvit_lib``."""
    folder = Path(os.environ.get("SHIFTVIT_CACHE") or Path.home() / ".cache" / "shiftvit_lib")
    kind = files.special_file_kind(folder, follow_links=True)
    if kind not in ("missing", "a folder"):
        raise InputError(f"{files.escape_name(folder)}: {kind or 'a file'}; point SHIFTVIT_CACHE at a folder")
    return folder


def _load_archive_cached(path: Path) -> RawData:
    """Decode a whole archive once and keep the arrays, keyed by the archive's sha256.

    Decoding 60,000 JPEGs takes about a minute on two cores; every later run (and
    every model of a comparison) reads the arrays back in a second. The key is the
    file's content, so an edited archive never reuses a stale cache. The cache holds
    plain arrays and strings, read with ``allow_pickle=False``; a truncated or altered
    cache fails its zip's CRC-32 checks (:func:`_read_cache`) and is decoded again.
    """
    source = files.sha256_of(path)
    cache = array_cache_dir() / f"cifar10-{source[:32]}.npz"
    raw = _read_cache(cache, source)
    if raw is None:
        raw = _read_class_folders(path, None, np.random.default_rng(0))
        _write_cache(cache, raw, source)
    return raw


def _read_cache(cache: Path, source: str) -> RawData | None:
    """The arrays in ``cache``, else None: missing, or set aside (named) when it fails a check.

    The cache proves itself: the sha256 of the archive it was built from, a sha256 of its
    arrays (names, dtypes, shapes, bytes), uint8 32x32 RGB images with one label in 0..9
    each; a truncated file or a changed byte also fails its zip's CRC-32 (``BadZipFile``).
    """
    if files.special_file_kind(cache) == "missing":
        return None
    try:
        with files.open_regular(cache) as handle, np.load(handle, allow_pickle=False) as stored:
            arrays = {name: value if value.ndim else str(value) for name, value in stored.items()}
        checks = {  # in this order: the digest is of the arrays left once the two digests are taken out
            "it was built from another archive": arrays.pop("source_sha256", "") == source,
            "its arrays do not match their digest": arrays.pop("digest", "") == _arrays_digest(arrays),
            "its images are not uint8 32x32 RGB, one label 0..9 each": all(
                _sound(arrays[f"x_{split}"], arrays[f"y_{split}"]) for split in SPLIT_FOLDERS
            ),
        }
        problem = next((why for why, sound in checks.items() if not sound), None)
    except (OSError, KeyError, TypeError, ValueError, zipfile.BadZipFile) as error:
        problem = f"it cannot be read ({' '.join(str(error).split())})"
    if not problem:
        return RawData(**arrays)
    with contextlib.suppress(OSError):
        os.replace(cache, cache.with_name(f"{cache.name}.damaged"))
    message = f"the data cache {files.escape_name(cache)} is set aside ({problem}); decoding the data again"
    warnings.warn(message, stacklevel=4)
    return None


def _arrays_digest(arrays: dict[str, Any]) -> str:
    digest = hashlib.sha256()
    for name, value in sorted(arrays.items()):
        digest.update(f"{name} {np.asarray(value).dtype} {np.shape(value)}\n".encode())
        digest.update(np.ascontiguousarray(value).tobytes())
    return digest.hexdigest()


def _sound(x: np.ndarray, y: np.ndarray) -> bool:
    """uint8 32x32 RGB images, one whole-number label 0..9 each."""
    shapes = x.dtype == np.uint8 and x.shape[1:] == (32, 32, 3) and y.shape == x.shape[:1]
    return shapes and y.dtype.kind in "iu" and set(np.unique(y)) <= set(range(len(CIFAR10_CLASSES)))


def _write_cache(cache: Path, raw: RawData, source: str) -> None:
    """Write ``cache`` atomically, with its digests; a failed write (a full disk) leaves no partial file."""
    with contextlib.suppress(OSError):  # no writable cache (or no space): the next run decodes again
        cache.parent.mkdir(parents=True, exist_ok=True)
        files.remove_abandoned_partials(cache.parent, "*cifar10-*")
        with files.atomic_output(cache) as partial:  # a reader never sees half a file
            # plain arrays and strings: no pickle needed to read them
            np.savez(partial, **vars(raw), digest=_arrays_digest(vars(raw)), source_sha256=source)
