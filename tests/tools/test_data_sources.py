"""shiftvit_lib.tools.data_sources: "auto" and keras.datasets, class-folder directories and archives
(read with care: damaged, huge, bombs, named pipes), and the decoded-array cache."""

from __future__ import annotations

import gzip
import inspect
import io
import os
import re
import shutil
import stat
import struct
import tarfile
import time
import tracemalloc
import warnings
import zipfile
import zlib
from pathlib import Path

import keras
import numpy as np
import pytest
from fakes import deflated_zip, finishes_within, one_line, unreadable_zip, write_tar, write_tree, write_zip
from PIL import Image

import shiftvit_lib
from shiftvit_lib.data import CIFAR10_CLASSES
from shiftvit_lib.tools import data_sources, inference
from shiftvit_lib.tools.data_sources import DataSourceFallbackWarning, load_cifar10

TRAIN_PER_CLASS, TEST_PER_CLASS = 5, 2


# --------------------------------------------------------------------------
# Helpers: a tiny class-folder tree whose pixels encode the label
# --------------------------------------------------------------------------


def pixel_value(class_index: int, item: int) -> int:
    """Each image is one flat grey level that identifies its class and item."""
    return class_index * 20 + item


def encode(value: int | Image.Image, fmt: str, size: tuple[int, int] = (32, 32)) -> bytes:
    """The file of an image, or of one flat grey ``value``."""
    buffer = io.BytesIO()
    (value if isinstance(value, Image.Image) else Image.new("RGB", size, (value, value, value))).save(buffer, fmt)
    return buffer.getvalue()


def class_folder_files(per_split: dict[str, int] | None = None) -> dict[str, bytes]:
    """Relative name -> bytes for a complete tree; odd items are JPEG, even ones PNG."""
    per_split = per_split or {"train": TRAIN_PER_CLASS, "test": TEST_PER_CLASS}
    files = {}
    for split, count in per_split.items():
        for class_index, class_name in enumerate(CIFAR10_CLASSES):
            for item in range(count):
                fmt, ext = ("JPEG", "jpg") if item % 2 else ("PNG", "png")
                files[f"{split}/{class_name}/{item:04d}.{ext}"] = encode(
                    pixel_value(class_index, item), fmt)
    return files


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "cifar", class_folder_files())


# --------------------------------------------------------------------------
# Class-folder directories and archives
# --------------------------------------------------------------------------


# Hidden files and files beside train/ and test/ are ignored, in the folder and in the zip
# (there in one wrapper folder, with a Mac's metadata around the data).
JUNK = {"README.txt": b"not data", "train/cat/.DS_Store": b"junk", "__MACOSX/train/cat/._0000.png": b"junk"}
WRITERS = {"directory": lambda path, files: str(write_tree(path, {**files, **JUNK})),  # a str path is accepted
           "cifar.zip": lambda path, files: write_zip(path, {**files, **JUNK}, prefix="cifar10/"),
           "cifar.tar.gz": write_tar, "cifar.tgz": write_tar}


@pytest.mark.parametrize("kind", WRITERS)
def test_a_directory_or_archive_loads_with_labels_matching_the_pixels(tmp_path: Path, kind: str) -> None:
    splits = load_cifar10(WRITERS[kind](tmp_path / kind, class_folder_files()), seed=3)
    assert splits.split_sizes() == {"train": 40, "val": 10, "test": 20}
    assert splits.class_counts()["val"].tolist() == [1] * 10
    for x, y in [(splits.x_train, splits.y_train), (splits.x_val, splits.y_val), (splits.x_test, splits.y_test)]:
        np.testing.assert_array_equal((x[:, 16, 16, 0].astype(int) + 3) // 20, y)  # grey level -> label (JPEG: +-3)
    assert any((image == pixel_value(0, 0)).all() for image in splits.x_test[splits.y_test == 0])  # PNG: exact
    assert f"from {kind.replace('cifar', 'archive cifar')}" in splits.source and "40 PNG, 30 JPEG" in splits.source


# --------------------------------------------------------------------------
# Clear errors
# --------------------------------------------------------------------------


def png_header_claiming(width: int, height: int) -> bytes:
    """A 32x32 PNG whose header claims ``width`` x ``height`` pixels (a decoder would allocate them)."""
    png = bytearray(encode(1, "PNG"))
    png[16:24] = struct.pack(">II", width, height)  # IHDR's body, then its CRC-32
    png[29:33] = struct.pack(">I", zlib.crc32(png[12:29]))
    return bytes(png)


# A mistake in a good class-folder tree (files written, paths removed) -> the words of its error.
TREE_MISTAKES = {
    "no train/ and test/": ({"cat/0001.png": encode(1, "PNG")}, ["train", "test"], "no images in train/, test/;"),
    "unknown class folder": ({"train/cats/0001.png": encode(1, "PNG")}, [], "train/cats/ is not a CIFAR-10 class"),
    "missing class folder": ({}, ["test/frog"], "no images in test/frog/;"),
    "image of the wrong size": ({"train/dog/big.png": encode(1, "PNG", size=(64, 48))}, [],
                                "train/dog/big.png: 64x48 pixels, expected 32x32"),
    "corrupt image": ({"train/dog/broken.jpg": encode(1, "JPEG")[:60]}, [], "train/dog/broken.jpg"),
    "not an image": ({"train/dog/notes.txt": b"hello"}, [], "notes.txt is not a .jpg/.jpeg/.png image"),
    "file beside the classes": ({"train/loose.png": encode(1, "PNG")}, [], "train/loose.png is not inside a class"),
    "a class with one image": ({}, ["train/cat/000[1-4].*"], "class 'cat' has 1 training image"),
    # a 32x32 image whose header claims 9,000 x 9,000 pixels: refused on the header (decoding it would
    # allocate them, and fail on the 32x32 data with other words)
    "huge size claimed": ({"train/dog/huge.png": png_header_claiming(9_000, 9_000)}, [],
                          "train/dog/huge.png: 9000x9000 pixels, expected 32x32"),
}


@pytest.mark.parametrize("mistake", list(TREE_MISTAKES))
def test_a_mistake_in_a_class_folder_tree_is_named(tree: Path, mistake: str) -> None:
    written, removed, words = TREE_MISTAKES[mistake]
    for path in [path for pattern in removed for path in tree.glob(pattern)]:
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    write_tree(tree, written)
    with pytest.raises(ValueError) as refused:
        load_cifar10(tree)
    message = one_line(refused.value)  # the data named, never a keyword the command line lacks
    assert words in message and str(tree) in message and "val_fraction=" not in message


def test_a_newline_or_escape_code_in_the_data_path_cannot_forge_a_printed_line(tmp_path: Path) -> None:
    folder = write_tree(tmp_path / "a\nerror: forged \x1b[2J", class_folder_files())
    source = load_cifar10(folder).source
    assert "\n" not in source and "\x1b" not in source and "forged" in source


@pytest.mark.parametrize(("name", "make", "error", "words"), [
    ("cifar-10", None, ValueError, "'auto', 'keras', 'sample'"),  # not a source: the valid ones listed
    ("nowhere", None, FileNotFoundError, "does not exist"),
    ("./no/such/dir", None, FileNotFoundError, "does not exist"),  # a string, relative to the working folder
    ("data.csv", lambda path: path.write_bytes(b"a,b"), ValueError, "not a supported archive"),
    ("loop", lambda path: path.symlink_to(path), FileNotFoundError, "symbolic link that leads nowhere"),
    *[(name, os.mkfifo, ValueError, "named pipe") for name in ("x.tar.gz", "x.zip", "x.tar")],  # never opened
])
def test_a_source_that_is_no_class_folder_data_is_named(tmp_path: Path, name, make, error, words) -> None:
    path = name if name in ("cifar-10", "./no/such/dir") else tmp_path / name
    if make:
        make(path)
    with pytest.raises(error) as refused:
        finishes_within(30, load_cifar10, path)
    shown = name if name == "cifar-10" else os.path.abspath(path)  # a path named in full, relative or not
    assert words in str(refused.value) and shown in one_line(refused.value)


@pytest.mark.parametrize("second_copy", ["", "b/"])
def test_data_in_two_places_is_refused_not_mixed(tmp_path: Path, second_copy: str) -> None:
    files = {f"a/{name}": content for name, content in class_folder_files().items()}
    files.update({f"{second_copy}{name}": content for name, content in class_folder_files().items()})
    path = write_zip(tmp_path / "two_copies.zip", files)
    where = "./ and a/" if not second_copy else "a/ and b/"
    with pytest.raises(ValueError, match=f"two_copies.zip: train/ and test/ in {where}; keep one copy"):
        load_cifar10(path)


# --------------------------------------------------------------------------
# Bounded inputs: skipped entries, size caps, links and special files
# --------------------------------------------------------------------------


def reads_of(monkeypatch: pytest.MonkeyPatch, owner: type, method: str) -> list[str]:
    """The names of the members ``owner.method`` (ZipFile.open, TarFile.extractfile) is asked to read."""
    read, original = [], getattr(owner, method)

    def recording(self, member, *args, **kwargs):
        read.append(getattr(member, "filename", getattr(member, "name", member)))
        return original(self, member, *args, **kwargs)

    monkeypatch.setattr(owner, method, recording)
    return read


@pytest.mark.parametrize(("write", "name", "owner", "method"), [
    (deflated_zip, "x.zip", zipfile.ZipFile, "open"), (write_tar, "x.tar.gz", tarfile.TarFile, "extractfile"),
], ids=["zip", "tar.gz"])
def test_archive_entries_outside_train_and_test_are_skipped_before_reading(tmp_path, monkeypatch, write, name, owner,
                                                                           method):
    # A bomb beside the data: 64 MiB of zeros compress to about 64 KiB.
    path = write(tmp_path / name, {**class_folder_files(), "extras/bomb.bin": b"\0" * (64 * 2**20)})
    assert path.stat().st_size < 2**20
    read = reads_of(monkeypatch, owner, method)
    # (a limit bypasses the decoded-array cache, itself a zip file)
    assert load_cifar10(path, limit=TRAIN_PER_CLASS).split_sizes()["test"] == 20
    assert sorted(read) == sorted(class_folder_files())  # every image read once, nothing else


ONE_FILE_CAP = ({"MAX_IMAGE_FILE_BYTES": 4096}, r"train/cat/0000\.png is .* MiB, over the 0\.0 MiB")


@pytest.mark.parametrize(("kind", "caps", "words"), [
    ("zip", *ONE_FILE_CAP), ("tar.gz", *ONE_FILE_CAP), ("directory", *ONE_FILE_CAP),
    ("zip", {"MAX_TOTAL_BYTES": 10_000}, r"add up to more than .*MiB"), ("zip", {"MAX_FILES": 10}, "more than 10 files"),
])
def test_data_over_a_size_cap_is_refused_by_name(tmp_path, monkeypatch, kind, caps, words) -> None:
    for name, value in caps.items():
        monkeypatch.setattr(data_sources, name, value)
    files = class_folder_files()
    files["train/cat/0000.png"] = encode(1, "PNG") + b"\0" * 8192  # a valid PNG with trailing bytes
    source = {"zip": write_zip, "tar.gz": write_tar, "directory": write_tree}[kind](tmp_path / f"big.{kind}", files)
    with pytest.raises(ValueError, match=words):
        load_cifar10(source, limit=3)


# A link, pipe or device planted in a good tree: its name, what a folder of it says (None: only the
# tar holds it), what a tar of it says. A zip holds a link by that name. Named, never read nor followed.
@pytest.mark.parametrize(("name", "in_folder", "in_tar"), [
    ("train/cat/pipe.png", "a named pipe", "not a regular file"),  # reading it would block forever
    ("test/dog/link.png", "a symbolic link", "a symbolic link"),
    ("train/linked_class", "a symbolic link", "a symbolic link"),  # a link to a class folder
    ("test/dog/zero.png", None, "not a regular file"),  # a device
])
def test_a_link_pipe_or_device_in_a_folder_a_tar_or_a_zip_is_named_not_read(tree, tmp_path, name, in_folder, in_tar):
    if in_folder == "a named pipe":
        os.mkfifo(tree / name)
    elif in_folder:
        (tree / name).symlink_to(tree / ("train/cat" if name.endswith("class") else "test/dog/0000.png"))
    (tree / "README.link").symlink_to("/etc/passwd")  # outside train/ and test/: not data, ignored
    with tarfile.open(tmp_path / "x.tar", "w") as archive:  # the same tree, its link or pipe as it is
        archive.add(tree, "cifar")
        if in_folder is None:
            device = tarfile.TarInfo(f"cifar/{name}")
            device.type = tarfile.CHRTYPE
            archive.addfile(device)
    with zipfile.ZipFile(write_zip(tmp_path / "x.zip", class_folder_files()), "a") as archive:
        link = zipfile.ZipInfo(name)
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "/etc/passwd")
    for source, kind in ((tree, in_folder), (tmp_path / "x.tar", in_tar), (tmp_path / "x.zip", "a symbolic link")):
        if kind:
            with pytest.raises(ValueError, match=f": {name} is {kind}; only regular image files") as raised:
                finishes_within(60, load_cifar10, source)
            assert "README" not in str(raised.value)


def test_a_folder_that_cannot_be_listed_is_named(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_walk = os.walk

    def walk(top, onerror=None, **kwargs):
        # What os.walk does for a folder it may not list (chmod 000; root is exempt, so simulated).
        if Path(top).name == "test":
            onerror(PermissionError(13, "Permission denied", str(top)))
        yield from real_walk(top, onerror=onerror, **kwargs)

    monkeypatch.setattr(data_sources.os, "walk", walk)
    with pytest.raises(PermissionError, match=r"cannot read the folder .*test \(Permission denied\); check"):
        load_cifar10(tree)


def test_one_load_cifar10_and_every_source_is_named_and_read_here_not_in_the_core():
    """``sv.load_cifar10`` is this module's; the core has no loader of its own and names no source."""
    assert shiftvit_lib.load_cifar10 is data_sources.load_cifar10 and not hasattr(shiftvit_lib.data, "load_cifar10")
    core = inspect.getsource(shiftvit_lib.data)
    assert set(data_sources.SOURCES) == {"auto", "keras", "sample"}
    for name in ["'auto'", "'keras'", "'sample'", '"auto"', '"keras"', '"sample"', "keras.datasets", "zipfile",
                 "cifar10_sample", "load_data"]:
        assert name not in core, name


def keras_download(failure: str | None = None):
    """keras.datasets.cifar10.load_data for 30 + 10 blank images, or one that fails with ``failure``."""

    def load_data():
        if failure:
            raise Exception(failure)
        x = np.zeros((30, 32, 32, 3), np.uint8)
        y = np.repeat(np.arange(10), 3).astype(np.uint8).reshape(-1, 1)
        return (x, y), (x[:10], y[:10])

    return load_data


def test_the_sample_has_the_documented_sizes_balance_and_limit() -> None:
    assert data_sources.SAMPLE_ARCHIVE.stat().st_size < 3 * 2**20  # 2,000 + 500 images in the package
    splits = load_cifar10("sample")
    assert {split: counts.tolist() for split, counts in splits.class_counts().items()} == {
        "train": [160] * 10, "val": [40] * 10, "test": [50] * 10}
    assert splits.x_train.shape == (1600, 32, 32, 3) and splits.x_train.dtype == np.uint8
    assert "bundled CIFAR-10 sample" in splits.source and "JPEG q75" in splits.source
    limited = load_cifar10("sample", limit=10)  # images per class, recorded in the source
    assert {split: counts.tolist() for split, counts in limited.class_counts().items()} == {
        "train": [8] * 10, "val": [2] * 10, "test": [10] * 10}
    assert "at most 10 images per class" in limited.source


@pytest.mark.parametrize(("reachable", "failure", "warned", "source"), [
    ((False, "the test is offline"), "auto must not try keras.datasets when it is unreachable",
     "bundled CIFAR-10 sample.*the test is offline", "fell back to the sample: the test is offline"),
    ((True, "reachable"), "URL fetch failure on https://www.cs.toronto.edu: 503", "URL fetch failure",
     "bundled CIFAR-10 sample"),
    ((True, "cached"), None, None, "CIFAR-10 via keras.datasets.cifar10"),
], ids=["offline", "download fails", "available"])
def test_auto_uses_keras_datasets_when_it_can_and_else_falls_back_to_the_sample(monkeypatch, reachable, failure,
                                                                                warned, source) -> None:
    monkeypatch.setattr(data_sources, "keras_cifar10_available", lambda: reachable)
    monkeypatch.setattr(keras.datasets.cifar10, "load_data", keras_download(failure))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        splits = data_sources.load_cifar10("auto", limit=5)
    fallbacks = [str(w.message) for w in caught if issubclass(w.category, DataSourceFallbackWarning)]
    assert [bool(re.search(warned, message)) for message in fallbacks] == ([True] if warned else []), fallbacks
    assert source in splits.source
    if not failure:
        assert splits.source.startswith(source) and splits.split_sizes() == {"train": 20, "val": 10, "test": 10}


def test_explicit_keras_source_explains_a_failed_download(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keras.datasets.cifar10, "load_data",
                        keras_download("URL fetch failure on https://www.cs.toronto.edu: no network"))
    with pytest.raises(data_sources.DataSourceUnavailableError, match="no network.*source='sample'"):
        load_cifar10("keras")


@pytest.mark.parametrize(("error", "delay", "words"), [
    (ConnectionRefusedError("refused for the test"), 0, ["www.cs.toronto.edu:443", "refused for the test"]),
    (TimeoutError("too late"), 3, ["no answer"]),  # like a DNS lookup that hangs: the check must not wait
    (None, 0, ["cached"]),  # a cached download: no connection needed
], ids=["refused", "silent host", "cached"])
def test_reachability_check_reports_a_failure_and_never_hangs(monkeypatch, tmp_path, error, delay, words) -> None:
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    if error is None:
        write_tree(tmp_path, {"datasets/cifar-10-batches-py-target_archive": b"x"})

    def connect(*args: object, **kwargs: object):
        time.sleep(delay)
        raise error

    monkeypatch.setattr(data_sources.socket, "create_connection", connect)
    start = time.monotonic()
    available, reason = data_sources.keras_cifar10_available(timeout_s=0.5)
    assert time.monotonic() - start < 2
    assert available == (error is None) and all(word in reason for word in words), reason


@pytest.mark.parametrize(("name", "damage", "words"), [
    ("data.zip", "encrypted", "is encrypted, which Python cannot unpack; give it unpacked (a folder)"),
    ("data.zip", "deflate64", "uses compression method 9 (9: Deflate64), which Python cannot unpack"),
    ("data.zip", "lzma", "is not a readable zip archive"),
    ("data.zip", "w", "is not a readable zip archive, damaged or truncated"),  # a flipped byte in Deflate data
    ("data.tar.gz", "w:gz", "is not a readable tar archive, damaged or truncated"),  # cut short
    ("data.tar", "w:xz", "is not a readable tar archive"), ("data.tar", "w:bz2", "is not a readable tar archive"),
    # the central directory claims one-byte entries: an error, not a big read
    ("data.zip", "understated", "is not a readable zip archive, damaged or truncated (Bad CRC"),
])
def test_an_archive_that_is_damaged_or_python_cannot_unpack_is_one_line_naming_it(tmp_path, monkeypatch, name, damage,
                                                                                   words):
    path = tmp_path / name
    members = {f"{split}/{name}/{i}.png": encode(10 * c + i, "PNG") * 20  # a small PNG tree, as measured
               for split in ("train", "test") for c, name in enumerate(CIFAR10_CLASSES) for i in range(5)}
    if damage in ("encrypted", "deflate64", "lzma"):
        unreadable_zip(path, members, damage)
    elif damage == "understated":
        infolist = zipfile.ZipFile.infolist
        monkeypatch.setattr(zipfile.ZipFile, "infolist", lambda self: [
            setattr(info, "file_size", 1) or info for info in infolist(self)])
        deflated_zip(path, members)
    else:
        (deflated_zip if name.endswith(".zip") else write_tar)(path, members, *([] if damage == "w" else [damage]))
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data[: len(data) // 2] if damage == "w:gz" else data))
    with pytest.raises(ValueError) as refused:
        data_sources.load_cifar10(path)
    assert str(path) in one_line(refused.value) and words in one_line(refused.value)


def test_a_small_zip_that_unpacks_to_a_lot_is_refused_early(tmp_path, monkeypatch):
    # 300 entries of 0.9 MiB zeros: under the per-file cap each, 270 MiB in all, about 0.3 MB as a zip.
    path = deflated_zip(tmp_path / "bomb.zip", {f"train/cat/{i}.png": bytes(900 * 1024) for i in range(300)})
    assert path.stat().st_size < 2**20
    read = reads_of(monkeypatch, zipfile.ZipFile, "open")
    with pytest.raises(ValueError) as refused:
        data_sources.load_cifar10(path)
    assert "looks like a decompression bomb" in one_line(refused.value)
    assert len(read) < 30  # stopped after reading about 16 MiB, not 270


@pytest.fixture()
def archive_and_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SHIFTVIT_CACHE", str(tmp_path / "cache"))
    return write_zip(tmp_path / "data.zip", class_folder_files()), tmp_path / "cache"


def _forged(arrays: dict, forge: str) -> dict:
    """A cache rewritten consistently (each array's zip CRC-32 is right), as a tool or a person would."""
    x, y = arrays["x_train"], arrays["y_train"]
    arrays |= {"altered": {"x_train": 255 - x}, "float images": {"x_train": x.astype(np.float32)},
               "a label short": {"y_train": y[:-1]}, "a label out of range": {"y_train": y + 10},
               "no digest": {}}[forge]
    if forge in ("float images", "a label short", "a label out of range"):  # its digest forged too
        arrays["digest"] = data_sources._arrays_digest({k: v for k, v in arrays.items() if k not in ("digest", "source_sha256")})
    return {k: v for k, v in arrays.items() if not (forge == "no digest" and k == "digest")}


@pytest.mark.parametrize("forge", ["truncated", "a byte changed", "altered", "float images", "a label short",
                                   "a label out of range", "no digest", "from another archive"])
def test_a_cache_that_fails_its_checks_is_named_set_aside_and_rebuilt(archive_and_cache, tmp_path, monkeypatch, forge):
    path, cache = archive_and_cache
    first = data_sources.load_cifar10(path, seed=1)
    (npz,) = cache.glob("cifar10-*.npz")
    with monkeypatch.context() as decoding:  # read back from the cache, not decoded again
        decoding.setattr(data_sources, "_read_class_folders", None)
        np.testing.assert_array_equal(data_sources.load_cifar10(path, seed=1).x_train, first.x_train)
    if forge == "from another archive":  # another archive's cache under this archive's name
        other = write_zip(tmp_path / "other.zip", class_folder_files({"train": 3, "test": 3}))
        data_sources.load_cifar10(other)
        (other_npz,) = set(cache.glob("cifar10-*.npz")) - {npz}
        other_npz.replace(npz)
    elif forge in ("truncated", "a byte changed"):  # the zip's CRC-32 of the array catches a changed byte
        content = bytearray(npz.read_bytes())
        content[content.find(b"x_train.npy") + 400] ^= 0xFF
        npz.write_bytes(bytes(content[: len(content) // 2] if forge == "truncated" else content))
    else:
        with np.load(npz) as stored:
            np.savez(npz, **_forged(dict(stored), forge))
    with pytest.warns(UserWarning, match="data cache .* is set aside") as warned:
        again = data_sources.load_cifar10(path, seed=1)
    assert str(npz) in str(warned[0].message) and (npz.parent / f"{npz.name}.damaged").is_file()
    np.testing.assert_array_equal(again.x_train, first.x_train)
    np.testing.assert_array_equal(again.y_train, first.y_train)


def test_a_cache_write_that_fails_leaves_no_partial_file(archive_and_cache, monkeypatch):
    path, cache = archive_and_cache
    cache.mkdir()
    (cache / ".cifar10-abc.npz.999999999.deadbeef.partial.npz").write_bytes(b"left by a killed process")

    def disk_full(file, **arrays):
        Path(file).write_bytes(b"half an npz")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(data_sources.np, "savez", disk_full)
    data = data_sources.load_cifar10(path)
    assert len(data.y_test) == 20  # the data is still there, decoded
    assert sorted(p.name for p in cache.iterdir()) == []  # no partial file, the dead one removed too


def test_training_sees_the_pixels_predict_sees_for_16_bit_and_transparent_pngs(tmp_path):
    rgba = np.zeros((32, 32, 4), np.uint8)
    rgba[..., 0] = 255  # red, hidden under full transparency
    pngs = [encode(Image.fromarray(rgba, "RGBA"), "PNG"),
            encode(Image.fromarray(np.full((32, 32), 1000, np.uint16)), "PNG")]  # 1000/65535: nearly black
    members = {name: content for name, content in class_folder_files().items() if "/airplane/" not in name}
    members.update({f"{split}/airplane/{i}.png": pngs[i % 2] for split in ("train", "test") for i in range(5)})
    folder = write_tree(tmp_path / "cifar", members)
    loaded = data_sources.load_cifar10(folder, val_fraction=0.2)
    airplanes = loaded.x_test[loaded.y_test == 0]
    from_predict = {inference.load_image(folder / f"test/airplane/{i}.png", 32).tobytes() for i in range(5)}
    assert {image.tobytes() for image in airplanes} == from_predict
    assert {int(image.max()) for image in airplanes} == {4, 255}  # 1000/257 rounds to 4; white, not red
    assert all((image == image[0, 0]).all() for image in airplanes)


def test_a_tar_long_name_header_is_capped_before_it_is_read(tmp_path):
    # A GNU long-name header claiming 32 MiB (zeros: a tiny .tar.gz); tarfile read it whole.
    claimed = 32 * 2**20
    header = tarfile.TarInfo("././@LongLink")
    header.type, header.size = tarfile.GNUTYPE_LONGNAME, claimed
    tar = header.tobuf(format=tarfile.GNU_FORMAT) + b"train/cat/" + b"a" * (claimed - 10) + bytes(-claimed % 512 + 1024)
    archive = tmp_path / "bomb.tar.gz"
    archive.write_bytes(gzip.compress(tar, compresslevel=1))
    assert archive.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="header claims") as refused:
            data_sources.load_cifar10(str(archive), limit=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "bomb.tar.gz" in one_line(str(refused.value))
    assert peak < 8 * 2**20, f"{peak / 2**20:.0f} MiB held while reading the headers"


def test_a_cache_folder_that_is_a_file_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "cache").write_text("not a folder")
    monkeypatch.setenv("SHIFTVIT_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ValueError, match="point SHIFTVIT_CACHE at a folder") as refused:
        data_sources.array_cache_dir()
    assert str(tmp_path / "cache") in one_line(str(refused.value))
