"""Tests for shiftvit_lib.data: the sample, keras.datasets and "auto", the split, the input pipeline."""

from __future__ import annotations

import socket
import time
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from shiftvit_lib import data
from shiftvit_lib.data import (
    CIFAR10_CLASSES,
    DataSplits,
    NumpyBatches,
    RawData,
    iterate_batches,
    load_splits,
    make_dataset,
)
from shiftvit_lib.tools import data_sources
from shiftvit_lib.tools.data_sources import DataSourceFallbackWarning


@pytest.fixture(scope="module")
def sample_splits() -> DataSplits:
    return load_splits("sample")



# --------------------------------------------------------------------------
# The bundled sample and the split
# --------------------------------------------------------------------------


def test_sample_has_the_documented_sizes_and_class_balance(sample_splits: DataSplits) -> None:
    assert sample_splits.split_sizes() == {"train": 1600, "val": 400, "test": 500}
    counts = sample_splits.class_counts()
    assert counts["train"].tolist() == [160] * 10
    assert counts["val"].tolist() == [40] * 10
    assert counts["test"].tolist() == [50] * 10
    assert sample_splits.x_train.shape == (1600, 32, 32, 3)
    assert sample_splits.x_train.dtype == np.uint8
    assert sample_splits.y_test.shape == (500,)
    assert sample_splits.class_names == CIFAR10_CLASSES
    assert "bundled CIFAR-10 sample" in sample_splits.source
    assert "JPEG q75" in sample_splits.source


def test_sample_archive_is_small_and_has_2500_jpegs() -> None:
    path = data.SAMPLE_ARCHIVE
    assert path.stat().st_size < 3 * 1024 * 1024
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    assert len(names) == 2500
    assert sum(n.startswith("train/cat/") for n in names) == 200
    assert sum(n.startswith("test/cat/") for n in names) == 50


def test_summary_names_the_source_and_every_split(sample_splits: DataSplits) -> None:
    text = sample_splits.summary()
    assert text.splitlines()[0] == sample_splits.source
    assert "1,600 images (160 per class)" in text
    assert "400 images (40 per class)" in text
    assert "500 images (50 per class)" in text
    assert str(sample_splits) == text
    assert "train=1,600" in repr(sample_splits)


def test_train_and_val_partition_the_training_pool() -> None:
    full = load_splits("sample", val_fraction=0.0, limit=20)
    split = load_splits("sample", limit=20)

    def rows(x: np.ndarray) -> list[bytes]:
        return sorted(image.tobytes() for image in x)

    assert len(full.y_val) == 0
    assert rows(np.concatenate([split.x_train, split.x_val])) == rows(full.x_train)
    assert not set(rows(split.x_train)) & set(rows(split.x_val))


def test_split_is_reproducible_and_depends_on_the_seed() -> None:
    first = load_splits("sample", limit=20, seed=1)
    again = load_splits("sample", limit=20, seed=1)
    other = load_splits("sample", limit=20, seed=2)
    np.testing.assert_array_equal(first.x_val, again.x_val)
    np.testing.assert_array_equal(first.y_train, again.y_train)
    assert not np.array_equal(first.x_val, other.x_val)


def test_limit_caps_images_per_class_and_is_recorded_in_the_source() -> None:
    splits = load_splits("sample", limit=10)
    assert splits.class_counts()["train"].tolist() == [8] * 10
    assert splits.class_counts()["val"].tolist() == [2] * 10
    assert splits.class_counts()["test"].tolist() == [10] * 10
    assert "at most 10 images per class" in splits.source


def test_train_order_interleaves_classes(sample_splits: DataSplits) -> None:
    # A sorted-by-class order would make the first images of a plot all airplanes.
    assert len(set(sample_splits.y_train[:50].tolist())) > 5


def test_a_path_is_tooling_and_the_error_says_where_to_go(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"unknown data source .*for 'auto', a folder or an archive use "
                                         r"shiftvit_lib.load_cifar10"):
        load_splits(str(tmp_path))


# --------------------------------------------------------------------------
# Clear errors
# --------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [{"val_fraction": 1.0}, {"val_fraction": -0.1},
                                    {"limit": 0}, {"limit": 2.5}])
def test_bad_arguments(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        load_splits("sample", **kwargs)


def test_too_few_images_for_a_validation_split() -> None:
    with pytest.raises(ValueError, match="too few"):
        load_splits("sample", limit=1)


def test_data_splits_rejects_inconsistent_arrays() -> None:
    x = np.zeros((4, 32, 32, 3), np.uint8)
    y = np.zeros(4, np.int64)
    ok = dict(x_train=x, y_train=y, x_val=x, y_val=y, x_test=x, y_test=y,
              class_names=CIFAR10_CLASSES, source="test")
    DataSplits(**ok)
    with pytest.raises(ValueError, match="uint8"):
        DataSplits(**{**ok, "x_val": x.astype(np.float32)})
    with pytest.raises(ValueError, match="4 images but 3 labels"):
        DataSplits(**{**ok, "y_test": y[:3]})
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 9\]"):
        DataSplits(**{**ok, "y_train": y + 10})


# --------------------------------------------------------------------------
# "auto": keras.datasets when possible, otherwise the sample, loudly
# --------------------------------------------------------------------------


def fake_keras_raw() -> RawData:
    x = np.zeros((30, 32, 32, 3), np.uint8)
    y = np.repeat(np.arange(10), 3).astype(np.int64)
    return RawData(x, y, x[:10], y[:10], description="fake keras.datasets")


def test_auto_falls_back_to_the_sample_when_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(data_sources, "keras_cifar10_available", lambda: (False, "the test is offline"))

    def must_not_download() -> RawData:
        raise AssertionError("auto must not try keras.datasets when it is unreachable")

    monkeypatch.setattr(data, "_load_from_keras", must_not_download)
    with pytest.warns(DataSourceFallbackWarning, match="bundled CIFAR-10 sample.*the test is offline"):
        splits = data_sources.load_cifar10("auto", limit=5)
    assert "bundled CIFAR-10 sample" in splits.source
    assert "fell back to the sample: the test is offline" in splits.source


def test_auto_falls_back_when_the_download_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(data_sources, "keras_cifar10_available", lambda: (True, "reachable"))

    def failing_download() -> RawData:
        raise Exception("URL fetch failure on https://www.cs.toronto.edu: 503")

    monkeypatch.setattr(data, "_load_from_keras", failing_download)
    with pytest.warns(DataSourceFallbackWarning, match="URL fetch failure"):
        splits = data_sources.load_cifar10("auto", limit=5)
    assert "bundled CIFAR-10 sample" in splits.source


def test_auto_uses_keras_datasets_when_available(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(data_sources, "keras_cifar10_available", lambda: (True, "cached"))
    monkeypatch.setattr(data, "_load_from_keras", fake_keras_raw)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataSourceFallbackWarning)
        splits = data_sources.load_cifar10("auto")
    assert splits.source == "fake keras.datasets"
    assert splits.split_sizes() == {"train": 20, "val": 10, "test": 10}


def test_explicit_keras_source_explains_a_failed_download(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing_download() -> RawData:
        raise Exception("URL fetch failure on https://www.cs.toronto.edu: no network")

    monkeypatch.setattr(data, "_load_from_keras", failing_download)
    with pytest.raises(RuntimeError, match="no network.*source='sample'"):
        load_splits("keras")


def test_reachability_check_reports_a_refused_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(data_sources, "_keras_cached_files", lambda: [])
    monkeypatch.setattr(data_sources.urllib.request, "getproxies", lambda: {})

    def refuse(*args: object, **kwargs: object) -> socket.socket:
        raise ConnectionRefusedError("refused for the test")

    monkeypatch.setattr(data_sources.socket, "create_connection", refuse)
    available, reason = data_sources.keras_cifar10_available(timeout_s=1.0)
    assert not available
    assert "www.cs.toronto.edu:443" in reason and "refused for the test" in reason


def test_reachability_check_never_hangs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(data_sources, "_keras_cached_files", lambda: [])
    monkeypatch.setattr(data_sources.urllib.request, "getproxies", lambda: {})

    def silent_host(*args: object, **kwargs: object) -> socket.socket:
        time.sleep(3)  # like a DNS lookup that hangs; the check must not wait for it
        raise TimeoutError("too late")

    monkeypatch.setattr(data_sources.socket, "create_connection", silent_host)
    start = time.monotonic()
    available, reason = data_sources.keras_cifar10_available(timeout_s=0.2)
    assert time.monotonic() - start < 2
    assert not available and "no answer" in reason


def test_reachability_check_accepts_a_cached_download(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cached = tmp_path / "datasets" / "cifar-10-batches-py-target_archive"
    cached.parent.mkdir()
    cached.write_bytes(b"x")
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    available, reason = data_sources.keras_cifar10_available()
    assert available and "cached" in reason


# --------------------------------------------------------------------------
# make_dataset
# --------------------------------------------------------------------------


def labelled_pixels(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Images whose pixels equal their index, so pairing can be checked."""
    x = np.broadcast_to(np.arange(n, dtype=np.uint8)[:, None, None, None], (n, 32, 32, 3)).copy()
    return x, np.arange(n, dtype=np.int64)


def epoch_order(dataset: object) -> list[int]:
    return [int(v) for _, labels in iterate_batches(dataset) for v in labels]


def test_make_dataset_batches_keep_uint8_and_pairing() -> None:
    x, y = labelled_pixels(10)
    batches = list(iterate_batches(make_dataset(x, y, 4, shuffle=True, seed=0)))
    assert [len(labels) for _, labels in batches] == [4, 4, 2]
    images, labels = batches[0]
    assert images.shape == (4, 32, 32, 3) and images.dtype == np.uint8
    np.testing.assert_array_equal(images[:, 0, 0, 0], labels)  # each image kept its label
    dropped = list(iterate_batches(make_dataset(x, y, 4, shuffle=False, drop_remainder=True)))
    assert [len(labels) for _, labels in dropped] == [4, 4]


def test_make_dataset_seeded_shuffle_is_reproducible() -> None:
    x, y = labelled_pixels(50)
    first = make_dataset(x, y, 8, shuffle=True, seed=7)
    second = make_dataset(x, y, 8, shuffle=True, seed=7)
    epoch1 = epoch_order(first)
    assert epoch1 == epoch_order(second)
    assert sorted(epoch1) == list(range(50)) and epoch1 != list(range(50))
    first.on_epoch_end()  # as Keras does after every epoch
    assert epoch_order(first) != epoch1  # a new order every epoch
    assert epoch_order(make_dataset(x, y, 8, shuffle=True, seed=8)) != epoch1
    assert epoch_order(make_dataset(x, y, 8, shuffle=False)) == list(range(50))


def test_numpy_batches_reshuffle_after_each_epoch() -> None:
    x, y = labelled_pixels(10)
    batches = NumpyBatches(x, y, 4, shuffle=True, seed=3)
    again = NumpyBatches(x, y, 4, shuffle=True, seed=3)
    assert len(batches) == 3
    images, labels = batches[0]
    assert images.shape == (4, 32, 32, 3) and images.dtype == np.uint8
    np.testing.assert_array_equal(images[:, 0, 0, 0], labels)
    epoch1 = epoch_order(batches)
    assert epoch1 == epoch_order(again) and sorted(epoch1) == list(range(10))
    batches.on_epoch_end()
    assert epoch_order(batches) != epoch1
    assert len(NumpyBatches(x, y, 4, shuffle=False, drop_remainder=True)) == 2
    assert epoch_order(NumpyBatches(x, y, 4, shuffle=False)) == list(range(10))
    with pytest.raises(IndexError):
        batches[3]


def test_make_dataset_rejects_bad_input() -> None:
    x, y = labelled_pixels(4)
    with pytest.raises(ValueError, match="batch_size"):
        make_dataset(x, y, 0, shuffle=False)
    with pytest.raises(ValueError, match="4 items but y has 3"):
        make_dataset(x, y[:3], 2, shuffle=False)


def test_test_split_is_interleaved_not_sorted_by_class(sample_splits) -> None:
    # Class folders list images class by class; the first test images must still mix classes,
    # or a lesson's "first eight test images" would all be airplanes.
    assert len(set(sample_splits.y_test[:20].tolist())) >= 5
    assert sample_splits.class_counts()["test"].tolist() == [50] * 10
    again = load_splits("sample")
    np.testing.assert_array_equal(again.y_test, sample_splits.y_test)  # seeded: same order every time


def test_offline_keras_source_is_a_data_source_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing_download() -> RawData:
        raise Exception("URL fetch failure: no network")

    monkeypatch.setattr(data, "_load_from_keras", failing_download)
    with pytest.raises(data.DataSourceUnavailableError, match="no network"):
        load_splits("keras")
