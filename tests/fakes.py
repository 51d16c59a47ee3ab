"""Small fakes and checks shared by the tests: data, image files, models, the one-line error, other backends."""

import functools
import importlib.util
import io
import json
import multiprocessing.pool
import os
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import keras
import numpy as np
import pytest
from PIL import Image

from shiftvit_lib.data import DataSplits


def tiny_splits(n_train=96, n_val=32, n_test=32, seed=0) -> DataSplits:
    """Random images keep a test fast; labels balanced over 10 classes."""
    rng = np.random.default_rng(seed)

    def part(n):
        return rng.integers(0, 256, (n, 32, 32, 3)).astype("uint8"), np.arange(n) % 10

    (xt, yt), (xv, yv), (xs, ys) = part(n_train), part(n_val), part(n_test)
    names = tuple(f"class_{i}" for i in range(10))
    return DataSplits(xt, yt, xv, yv, xs, ys, names, source="random test images")


# Class-folder data on disk: a tree, a zip and a .tar.gz of {relative name: file bytes}.
def write_tree(root: Path, files: dict[str, bytes]) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return root


def write_zip(path: Path, files: dict, prefix: str = "", method: int = zipfile.ZIP_STORED) -> Path:
    """The same files give the same bytes: entries carry a fixed timestamp, not the clock's."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in files.items():
            entry = zipfile.ZipInfo(prefix + name, date_time=(2020, 1, 1, 0, 0, 0))
            archive.writestr(entry, content, compress_type=method)
    return path


# A zip whose members are compressed (write_zip stores them): zeros shrink a thousandfold.
deflated_zip = functools.partial(write_zip, method=zipfile.ZIP_DEFLATED)


def unreadable_zip(path: Path, files: dict[str, bytes], damage: str) -> Path:
    """A zip Python lists but cannot unpack: every member marked ``encrypted`` or ``deflate64``
    (method 9, as 7-Zip and Windows write), or ``lzma``-compressed with a flipped byte."""
    write_zip(path, files, method=zipfile.ZIP_LZMA if damage == "lzma" else zipfile.ZIP_STORED)
    with zipfile.ZipFile(path) as archive:
        first = archive.infolist()[0]
    data = bytearray(path.read_bytes())
    for signature, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # local and central headers
        for start in [i for i in range(len(data)) if data.startswith(signature, i)]:
            if damage == "encrypted":
                data[start + flags_at] |= 1
            elif damage == "deflate64":
                data[start + flags_at + 2] = 9
    if damage == "lzma":
        data[first.header_offset + 30 + len(first.filename) + first.compress_size // 2] ^= 0xFF  # in its data
    path.write_bytes(bytes(data))
    return path


def write_tar(path: Path, files: dict[str, bytes], mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode) as archive:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return path


def left_right_sensitive_model() -> keras.Model:
    """Logits that change when an image is mirrored: a dense layer on the raw pixels."""
    inputs = keras.Input((32, 32, 3))
    outputs = keras.layers.Dense(10, kernel_initializer=keras.initializers.RandomNormal(seed=3))(
        keras.layers.Flatten()(keras.layers.Rescaling(1 / 255)(inputs)))
    return keras.Model(inputs, outputs)


def logits_of(model: keras.Model, images) -> np.ndarray:
    """Inference logits without ``predict``'s traced function (seconds per model in a test)."""
    return keras.ops.convert_to_numpy(model(images, training=False))


def encoded(image: Image.Image, image_format: str) -> bytes:
    """``image``'s file in ``image_format`` ("PNG", "JPEG", "GIF"...), as bytes."""
    buffer = io.BytesIO()
    image.save(buffer, format=image_format)
    return buffer.getvalue()


def png_bytes(value: int, side: int = 32) -> bytes:
    """A PNG of one grey ``value``."""
    return encoded(Image.fromarray(np.full((side, side, 3), value, np.uint8)), "PNG")


def one_line(error: BaseException | str) -> str:
    """An error's text, asserted to be one line (a user error says what was wrong in one line)."""
    text = str(error)
    assert "\n" not in text.strip(), f"not one line: {text!r}"
    return text


def run_on_backend(backend: str, script: str, timeout: int = 600) -> str:
    """``script`` (dedented) run by a fresh Python on Keras ``backend`` (fixed at import), CPU only; its
    stdout. Skips the test when the backend is not installed; a failed run fails it with its stderr."""
    if importlib.util.find_spec(backend) is None:
        pytest.skip(f"{backend} is not installed")
    tests = Path(__file__).resolve().parent
    env = {**os.environ, "KERAS_BACKEND": backend, "JAX_PLATFORMS": "cpu", "CUDA_VISIBLE_DEVICES": "",
           "PYTHONPATH": os.pathsep.join([str(tests.parent), str(tests)])}
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env, capture_output=True,
                            text=True, timeout=timeout, cwd=tests.parent)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    return result.stdout


def finishes_within(seconds: float, function, *args):
    """``function(*args)`` in a daemon thread: its result or its error, or a failure (not a hung CI) if it blocks."""
    pool = multiprocessing.pool.ThreadPool(1)
    try:
        return pool.apply_async(function, args).get(seconds)
    except multiprocessing.TimeoutError:
        pytest.fail(f"{function.__name__} blocked for {seconds} s (did it open a pipe?)")
    finally:
        pool.close()  # a blocked thread is left behind: it never holds the interpreter


def plant(path: Path, how: str, outside: Path) -> Path:
    """A symbolic or hard link to ``outside``, a named pipe or a folder where the project will read or
    write ``path`` (added by d-tools-a: tests/tools/test_files.py and test_run_folder.py share it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    {"symlink": lambda: path.symlink_to(outside), "hardlink": lambda: os.link(outside, path),
     "fifo": lambda: os.mkfifo(path), "folder": path.mkdir}[how]()
    return path


# The repository's root, its lessons read as a learner sees them, and its scripts loaded as modules.
REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
LESSONS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))  # the nine English lessons


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def printed(cell: dict) -> str:
    """What a code cell's stored outputs show as text."""
    return "".join("".join(out.get("text", "")) for out in cell.get("outputs", []))


def load_script(relative: str):
    """A script of the repository (``scripts/x.py``) loaded as a module, to call its functions."""
    path = REPO / relative
    spec = importlib.util.spec_from_file_location(f"script_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module
