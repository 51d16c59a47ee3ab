"""Issue 28: inputs an adversary (or an unlucky user) gives, each answered in one line, nothing lost.

Cases tested elsewhere: the run-folder lock and two trainings on one ``--out``
(``test_run_lock.py``), formats decided by content, PostScript named ``.png``, 16-bit and
transparent PNGs and the image fuzz test (``tests/core/test_images.py``), configs of the wrong
type or sign (``tests/core/test_config.py``), NaN pixels and a bad file in a predict batch
(``test_inference.py``), Ctrl-C (``test_cli.py``). This file holds the rest.
"""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from fakes import tiny_splits, write_tar_gz, write_tree, write_zip
from PIL import Image

from shiftvit_lib.config import preset
from shiftvit_lib.tools import data_sources, files, inference
from shiftvit_lib.tools.run_folder import RUN_SPEC, RunFolderError, run_spec
from shiftvit_lib.tools.runs import train

REPO = Path(__file__).resolve().parents[2]
FAST = dict(verbose=0, jit_compile=False)


def quick(**changes):
    return preset("quick", **{"batch_size": 32, "early_stopping_patience": None, **changes})


def one_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text, f"not one line: {text!r}"
    return text


# --------------------------------------------------------------------------- refused before writing
def finished_run_folder(folder: Path) -> dict[str, bytes]:
    """A folder that holds a finished run's files (their bytes, to check nothing changed)."""
    folder.mkdir(parents=True)
    files = {"run_spec.json": b'{"format": 1}', "run.json": b'{"test": {}}', "best.keras": b"weights",
             "history.csv": b"epoch,loss\n0,1.0\n"}
    for name, content in files.items():
        (folder / name).write_bytes(content)
    return files


def assert_untouched(folder: Path, files: dict[str, bytes]) -> None:
    assert sorted(p.name for p in folder.iterdir()) == sorted(files)
    for name, content in files.items():
        assert (folder / name).read_bytes() == content, f"{name} changed"


@pytest.mark.parametrize(
    ("case", "fragment"),
    [
        ("seed 2**40", "seed must be a whole number from 0 to 4,294,967,295"),
        ("negative seed", "seed must be a whole number from 0 to 4,294,967,295"),
        ("huge batch size", "batch size 1,000,000,000,000 is more than the 96 training images"),
        ("no validation images", "no validation images (val_fraction=0?)"),
        ("224 px preset on 32 px images", "the images are 32x32x3, but preset 'shiftvit_light_tiny' takes 224x224x3"),
    ],
)
def test_a_run_that_cannot_train_is_refused_before_the_folder_is_touched(tmp_path, case, fragment):
    config, data, seed = quick(), tiny_splits(), 42
    if case == "seed 2**40":
        seed = 2**40
    elif case == "negative seed":
        seed = -1
    elif case == "huge batch size":
        config = quick(batch_size=10**12)
    elif case == "no validation images":
        data = tiny_splits(n_val=0)
    elif case == "224 px preset on 32 px images":
        config = preset("shiftvit_light_tiny")
    # With overwrite=True, a folder that holds a finished run keeps it: the check comes first.
    kept = finished_run_folder(tmp_path / "finished")
    with pytest.raises(ValueError) as refused:
        train(config, data, tmp_path / "finished", epochs=1, seed=seed, overwrite=True, **FAST)
    assert fragment in one_line(refused.value)
    assert_untouched(tmp_path / "finished", kept)
    # And a new folder is not even created, so the corrected command is not refused later.
    with pytest.raises(ValueError):
        train(config, data, tmp_path / "new", epochs=1, seed=seed, **FAST)
    assert not (tmp_path / "new").exists()


def test_the_command_line_refuses_a_seed_past_32_bits_in_one_line(tmp_path):
    from shiftvit_lib.__main__ import main

    code = main(["train", "--data", "sample", "--seed", str(2**40), "--out", str(tmp_path / "run")])
    assert code == 2 and not (tmp_path / "run").exists()


def test_a_damaged_best_model_is_reported_as_damaged_not_missing(tmp_path):
    # A run whose training finished but whose record was never written: the resume only
    # evaluates best.keras, which a disk error has cut short.
    config, data = quick(), tiny_splits()
    spec = run_spec(config, data, epochs=1, seed=42)
    (tmp_path / RUN_SPEC).write_text(json.dumps({**spec, "fit_finished_at": "yesterday"}))
    (tmp_path / "history.csv").write_text("epoch,loss,val_accuracy\n0,2.3,0.1\n")
    (tmp_path / "best.keras").write_bytes(b"PK\x03\x04 cut short")
    with pytest.raises(RunFolderError) as damaged:
        train(config, data, tmp_path, epochs=1, seed=42, **FAST)
    message = one_line(damaged.value)
    assert "best.keras is damaged" in message and "--overwrite" in message
    assert "not found" not in message.lower()


# --------------------------------------------------------------------------- model files
def test_a_keras_file_that_would_unpack_to_far_more_than_it_stores_is_refused_unread(tmp_path, monkeypatch):
    bomb = tmp_path / "bomb.keras"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("metadata.json", "{}")
        archive.writestr("config.json", "{}")
        archive.writestr("model.weights.h5", bytes(64 * 2**20))  # 64 MiB of zeros, stored in 64 kB
    assert bomb.stat().st_size < 2**20

    def must_not_load(*args, **kwargs):
        raise AssertionError("Keras was asked to unpack the bomb")

    monkeypatch.setattr(inference.keras.saving, "load_model", must_not_load)
    with pytest.raises(ValueError) as refused:
        inference.load_model(bomb)
    assert "model.weights.h5 would unpack from" in one_line(refused.value)
    assert "decompression bomb" in str(refused.value)


def test_a_real_keras_file_passes_the_bomb_check(tmp_path):
    model = inference.keras.Sequential([inference.keras.Input((4,)), inference.keras.layers.Dense(300)])
    model.save(tmp_path / "small.keras")
    files.check_keras_archive(tmp_path / "small.keras")  # weights barely compress: accepted


# --------------------------------------------------------------------------- data archives
def png_bytes(value: int) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(np.full((32, 32, 3), value, np.uint8)).save(buffer, "PNG")
    return buffer.getvalue()


def class_folder_members(per_class: int = 5) -> dict[str, bytes]:
    from shiftvit_lib.data import CIFAR10_CLASSES

    return {f"{split}/{name}/{i}.png": png_bytes(10 * c + i)
            for split in ("train", "test") for c, name in enumerate(CIFAR10_CLASSES) for i in range(per_class)}


def test_a_flipped_byte_in_a_data_zip_is_one_line(tmp_path):
    path = tmp_path / "data.zip"
    members = {name: content * 20 for name, content in class_folder_members().items()}  # compressible
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        first = archive.infolist()[0]
    data_start = first.header_offset + 30 + len(first.filename.encode())  # after the local header
    raw[data_start + first.compress_size // 2] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError) as damaged:
        data_sources.load_cifar10(path)
    assert "data.zip is not a readable zip archive, damaged or truncated" in one_line(damaged.value)


def test_a_truncated_data_tar_gz_is_one_line(tmp_path):
    path = write_tar_gz(tmp_path / "data.tar.gz", class_folder_members())
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ValueError) as damaged:
        data_sources.load_cifar10(path)
    assert "data.tar.gz is not a readable tar archive, damaged or truncated" in one_line(damaged.value)


def test_a_small_zip_that_unpacks_to_a_lot_is_refused_early(tmp_path, monkeypatch):
    # 300 entries of 0.9 MiB zeros: under the per-file cap each, 270 MiB in all, about 0.3 MB as a zip.
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for i in range(300):
            archive.writestr(f"train/cat/{i}.png", bytes(900 * 1024))
    assert path.stat().st_size < 2**20
    read = []
    original_open = zipfile.ZipFile.open

    def counting_open(self, name, *args, **kwargs):
        read.append(name)
        return original_open(self, name, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", counting_open)
    with pytest.raises(ValueError) as refused:
        data_sources.load_cifar10(path)
    assert "looks like a decompression bomb" in one_line(refused.value)
    assert len(read) < 30  # stopped after reading about 16 MiB, not 270


def png_header_claiming(width: int, height: int) -> bytes:
    """A tiny PNG whose header claims ``width`` x ``height`` pixels (a real decoder would allocate them)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 100))
            + chunk(b"IEND", b""))


def test_a_small_png_claiming_a_huge_size_is_refused_before_decoding(tmp_path, monkeypatch):
    folder = write_tree(tmp_path / "cifar",
                        {**class_folder_members(1), "train/dog/huge.png": png_header_claiming(9_000, 9_000)})

    from PIL import ImageFile

    def must_not_decode(self, *args, **kwargs):
        if self.size[0] > 32:
            raise AssertionError("the 9,000-pixel-wide image was decoded")
        return original_load(self, *args, **kwargs)

    original_load = ImageFile.ImageFile.load
    monkeypatch.setattr(ImageFile.ImageFile, "load", must_not_decode)
    with pytest.raises(ValueError) as refused:
        data_sources.load_cifar10(folder)
    assert "huge.png is 9000x9000 pixels, but CIFAR-10 images are 32x32" in one_line(refused.value)


# --------------------------------------------------------------------------- the archive cache
@pytest.fixture()
def archive_and_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SHIFTVIT_CACHE", str(tmp_path / "cache"))
    return write_zip(tmp_path / "data.zip", class_folder_members()), tmp_path / "cache"


def cache_file(cache: Path) -> Path:
    (npz,) = cache.glob("cifar10-*.npz")
    return npz


def test_a_truncated_or_altered_cache_is_rebuilt_not_trusted(archive_and_cache):
    path, cache = archive_and_cache
    first = data_sources.load_cifar10(path, seed=1)
    npz = cache_file(cache)
    for damage in ("truncate", "alter"):
        content = bytearray(npz.read_bytes())
        if damage == "truncate":
            content = content[: len(content) // 2]
        else:  # same size, other pixels: the zip's CRC-32 of the array catches it
            index = content.find(b"x_train.npy") + 400
            content[index] ^= 0xFF
        npz.write_bytes(bytes(content))
        again = data_sources.load_cifar10(path, seed=1)
        np.testing.assert_array_equal(again.x_train, first.x_train)
        np.testing.assert_array_equal(again.y_test, first.y_test)
        assert npz.stat().st_size == len(npz.read_bytes()) and data_sources._read_cache(npz) is not None


def test_a_cache_write_that_fails_leaves_no_partial_file(archive_and_cache, monkeypatch):
    path, cache = archive_and_cache
    cache.mkdir()
    (cache / "cifar10-abc.999999999.tmp.npz").write_bytes(b"left by a killed process")

    def disk_full(file, **arrays):
        Path(file).write_bytes(b"half an npz")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(data_sources.np, "savez", disk_full)
    data = data_sources.load_cifar10(path)
    assert len(data.y_test) == 50  # the data is still there, decoded
    assert sorted(p.name for p in cache.iterdir()) == []  # no partial file, the dead one removed too


# --------------------------------------------------------------------------- the backend
def test_an_unknown_keras_backend_is_one_line_even_for_presets():
    env = {**os.environ, "KERAS_BACKEND": "tensorfow"}
    done = subprocess.run([sys.executable, "-m", "shiftvit_lib", "presets"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: the Keras backend 'tensorfow' (from KERAS_BACKEND) is not one Keras knows; set "
        "KERAS_BACKEND to jax, tensorflow or torch"]


def test_a_backend_that_is_not_installed_names_the_fix(tmp_path):
    from shiftvit_lib._startup import backend_problem

    installed = {"jax", "torch"}
    problem = backend_problem({"KERAS_BACKEND": "tensorflow"},
                              find_spec=lambda name: object() if name in installed else None)
    assert problem == ("Keras is to use tensorflow (from KERAS_BACKEND) but tensorflow is not installed; "
                       "set KERAS_BACKEND=jax (installed here), or pip install tensorflow")
    # No KERAS_BACKEND and no keras.json: Keras' default, TensorFlow, named as such.
    problem = backend_problem({"HOME": str(tmp_path)}, find_spec=lambda name: None)
    assert problem.startswith("Keras is to use tensorflow (from Keras' default (KERAS_BACKEND is not set))")
    assert backend_problem({"KERAS_BACKEND": "jax"}, find_spec=lambda name: object()) is None


# --------------------------------------------------------------------------- a path the terminal cannot show
def test_a_non_utf8_file_name_does_not_fail_a_strict_terminal(tmp_path, monkeypatch):
    from shiftvit_lib.__main__ import main

    model = inference.save_model(_tiny_classifier(), tmp_path / "m.keras")
    folder = tmp_path / "imgs"
    folder.mkdir()
    odd = os.fsdecode(b"caf\xe9.png")  # Latin-1 bytes: not UTF-8, so Python holds a lone surrogate
    (folder / odd).write_bytes(png_bytes(100))
    strict = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    monkeypatch.setattr(sys, "stdout", strict)
    assert main(["predict", "--model", str(model), str(folder)]) == 0
    strict.flush()
    assert b"caf\\udce9.png" in strict.buffer.getvalue()


def _tiny_classifier():
    keras = inference.keras
    inputs = keras.Input((32, 32, 3))
    return keras.Model(inputs, keras.layers.Dense(10)(keras.layers.Flatten()(inputs)))


# --------------------------------------------------------------------------- one decoder for training and predict
def test_training_sees_the_pixels_predict_sees_for_16_bit_and_transparent_pngs(tmp_path):
    sixteen = io.BytesIO()
    Image.fromarray(np.full((32, 32), 1000, np.uint16)).save(sixteen, "PNG")  # 1000/65535: nearly black
    rgba = np.zeros((32, 32, 4), np.uint8)
    rgba[..., 0] = 255  # red, hidden under full transparency
    transparent = io.BytesIO()
    Image.fromarray(rgba, "RGBA").save(transparent, "PNG")
    members = {name: content for name, content in class_folder_members().items() if "/airplane/" not in name}
    members.update({f"{split}/airplane/{i}.png": (sixteen if i % 2 else transparent).getvalue()
                    for split in ("train", "test") for i in range(5)})
    folder = write_tree(tmp_path / "cifar", members)
    loaded = data_sources.load_cifar10(folder, val_fraction=0.2)
    airplanes = loaded.x_test[loaded.y_test == 0]
    from_predict = {inference.load_image(folder / f"test/airplane/{i}.png", 32).tobytes() for i in range(5)}
    assert {image.tobytes() for image in airplanes} == from_predict
    assert {int(image.max()) for image in airplanes} == {4, 255}  # 1000/257 rounds to 4; white, not red
    assert all((image == image[0, 0]).all() for image in airplanes)
