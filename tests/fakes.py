"""Small fake data shared by the core and tooling tests."""

import io
import tarfile
import zipfile
from pathlib import Path

import numpy as np

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


def write_zip(path: Path, files: dict[str, bytes], prefix: str = "") -> Path:
    """The same files give the same bytes: entries carry a fixed timestamp, not the clock's."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in files.items():
            archive.writestr(zipfile.ZipInfo(prefix + name, date_time=(2020, 1, 1, 0, 0, 0)), content)
    return path


def write_tar_gz(path: Path, files: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return path
