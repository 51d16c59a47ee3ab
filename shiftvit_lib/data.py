"""CIFAR-10 loading, the train/validation/test split, and the input pipeline (lesson 01).

``load_cifar10`` returns a :class:`DataSplits`: uint8 NHWC images, integer labels, and a
``source`` sentence that says exactly which data was loaded, because "CIFAR-10" can mean
the original release (``"keras"``, downloaded once) or the 2,000 + 500 images bundled with
this package (``"sample"``, JPEG q75, offline). ``"auto"`` takes the first when it can be
had, else the sample, with a :class:`DataSourceFallbackWarning` saying why. Your own copy
(a class-folder directory or archive) is read by :mod:`shiftvit_lib.tools.data_sources`,
which hands its reader to :func:`load_cifar10`.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import math
import os
import socket
import threading
import urllib.parse
import urllib.request
import warnings
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import keras
import numpy as np

from shiftvit_lib.images import decode_rgb

CIFAR10_CLASSES: tuple[str, ...] = (
    "airplane", "automobile", "bird", "cat", "deer",
    "dog", "frog", "horse", "ship", "truck",
)
DEFAULT_SEED = 42
SPLITS = ("train", "val", "test")
NAMED_SOURCES = ("auto", "keras", "sample")
SAMPLE_ARCHIVE = Path(__file__).resolve().parent / "assets" / "cifar10_sample.zip"
KERAS_CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"


class DataSourceFallbackWarning(UserWarning):
    """``load_cifar10("auto")`` used the bundled sample instead of the full data."""


class DataSourceUnavailableError(RuntimeError):
    """A named data source could not be fetched (``"keras"`` offline, for example)."""


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class DataSplits:
    """Train/validation/test images and labels, plus where they came from.

    Images are uint8 arrays of shape (N, 32, 32, 3) with pixel values in
    [0, 255]; labels are int64 arrays of shape (N,) indexing ``class_names``.
    ``source`` is a sentence describing exactly which data this is.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    class_names: tuple[str, ...]
    source: str

    def __post_init__(self) -> None:
        for split in SPLITS:
            x, y = getattr(self, f"x_{split}"), getattr(self, f"y_{split}")
            _check_images_and_labels(x, y, len(self.class_names), where=f"{split} split")

    def split_sizes(self) -> dict[str, int]:
        """Number of images per split, e.g. ``{"train": 40000, ...}``."""
        return {split: len(getattr(self, f"y_{split}")) for split in SPLITS}

    def class_counts(self) -> dict[str, np.ndarray]:
        """Images per class for each split (arrays of length ``len(class_names)``)."""
        return {split: np.bincount(getattr(self, f"y_{split}"), minlength=len(self.class_names)) for split in SPLITS}

    def summary(self) -> str:
        """A few lines: the source, then the size of each split."""
        lines = [self.source]
        for split, counts in self.class_counts().items():
            per_class = f"{counts[0]:,}" if len(counts) and counts.min() == counts.max() else \
                f"{counts.min():,} to {counts.max():,}"
            lines.append(f"  {split + ':':6} {counts.sum():>6,} images ({per_class} per class)")
        height, width, channels = self.x_train.shape[1:]
        lines.append(f"  images: {height}x{width}x{channels} {self.x_train.dtype}, "
                     f"labels: {len(self.class_names)} classes ({', '.join(self.class_names)})")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        sizes = ", ".join(f"{k}={v:,}" for k, v in self.split_sizes().items())
        return f"DataSplits({sizes}, source={self.source!r})"


def _check_images_and_labels(x: np.ndarray, y: np.ndarray, num_classes: int, where: str) -> None:
    """Raise ValueError unless x is (N, H, W, 3) uint8 and y is (N,) ints in range."""
    def described(array: Any) -> str:
        return f"{type(array).__name__} {getattr(array, 'dtype', '')} {getattr(array, 'shape', '')}"

    if not isinstance(x, np.ndarray) or x.ndim != 4 or x.shape[-1] != 3 or x.dtype != np.uint8:
        raise ValueError(f"{where}: images must be a uint8 array of shape (N, height, width, 3); got {described(x)}")
    if not isinstance(y, np.ndarray) or y.ndim != 1 or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"{where}: labels must be a 1-D integer array; got {described(y)}")
    if len(x) != len(y):
        raise ValueError(f"{where}: {len(x)} images but {len(y)} labels")
    if len(y) and (y.min() < 0 or y.max() >= num_classes):
        raise ValueError(f"{where}: labels must lie in [0, {num_classes - 1}]; found {y.min()}..{y.max()}")


@dataclasses.dataclass
class RawData:
    """Train and test data as read from a source, before the validation split."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    description: str
    image_formats: str = ""  # e.g. "JPEG"; empty for keras.datasets arrays


# A reader of a source: (limit per class, generator) -> RawData.
Reader = Callable[[int | None, np.random.Generator], RawData]


def load_cifar10(source: str | Reader = "auto", *, val_fraction: float = 0.2, seed: int = DEFAULT_SEED,
                 limit: int | None = None) -> DataSplits:
    """Load CIFAR-10 and split it into train / validation / test; ``print()`` the result to see both.

    Args:
        source: ``"auto"``, ``"keras"`` or ``"sample"`` (see the module docstring), or a
            reader ``(limit, rng) -> RawData``. For your own copy (a folder or archive) call
            ``shiftvit_lib.load_cifar10(path)`` (:mod:`shiftvit_lib.tools.data_sources`).
        val_fraction: share of each class's training images moved to validation, in [0, 1):
            a stratified split as in the keras-io example (40,000 / 10,000 / 10,000 by default).
        seed: seeds the split, the order of every split (the test set is only shuffled, so
            ``x_test[:8]`` is not eight airplanes) and the ``limit`` subsampling.
        limit: at most this many images per class in the training pool and in the test set.
    """
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in [0, 1); got {val_fraction}")
    if limit is not None:
        check_positive_int(limit, "limit (images per class)")
    rng = np.random.default_rng(seed)
    raw = source(limit, rng) if callable(source) else _read_named_source(source, limit, rng)
    train_idx, val_idx = stratified_split_indices(raw.y_train, val_fraction, rng)
    test_idx = rng.permutation(len(raw.y_test))
    description = raw.description
    if limit is not None:
        description += f" (at most {limit:,} images per class kept, seed {seed})"
    return DataSplits(
        x_train=raw.x_train[train_idx], y_train=raw.y_train[train_idx],
        x_val=raw.x_train[val_idx], y_val=raw.y_train[val_idx],
        x_test=raw.x_test[test_idx], y_test=raw.y_test[test_idx],
        class_names=CIFAR10_CLASSES, source=description,
    )


def is_positive_int(value: Any) -> bool:
    """True for an int (Python or NumPy, not a bool) of at least 1: a count, a size, a batch."""
    return not isinstance(value, bool) and isinstance(value, (int, np.integer)) and value >= 1


def check_positive_int(value: Any, name: str) -> int:
    """``value`` as an int if :func:`is_positive_int`; else a ValueError naming ``name``."""
    if not is_positive_int(value):
        raise ValueError(f"{name} must be a positive integer; got {value!r}")
    return int(value)


def _read_named_source(source: Any, limit: int | None, rng: np.random.Generator) -> RawData:
    if source == "sample":
        return _load_sample(limit, rng)
    if source == "auto":
        return _load_auto(limit, rng)
    if source != "keras":
        raise ValueError(f"unknown data source {source!r}: data.load_cifar10 reads 'auto', 'keras' or "
                         "'sample'; for a folder or archive use shiftvit_lib.load_cifar10(path)")
    try:
        return _cap_raw(_load_from_keras(), limit, rng)
    except Exception as error:  # noqa: BLE001 - get_file raises a bare Exception when the download fails
        raise DataSourceUnavailableError(
            f"keras.datasets.cifar10.load_data() failed ({error}). Without internet use "
            "source='sample', a local copy (directory or archive), or source='auto', "
            "which falls back to the sample by itself."
        ) from error


def _load_from_keras() -> RawData:
    """The original release via keras.datasets (downloads 170 MB on first use)."""
    (x_train, y_train), (x_test, y_test) = keras.datasets.cifar10.load_data()
    if x_train.shape[-1] != 3:  # Keras returns NCHW when image_data_format is "channels_first"
        x_train, x_test = x_train.transpose(0, 2, 3, 1), x_test.transpose(0, 2, 3, 1)
    return RawData(
        np.ascontiguousarray(x_train), y_train.reshape(-1).astype(np.int64),
        np.ascontiguousarray(x_test), y_test.reshape(-1).astype(np.int64),
        description=(f"CIFAR-10 via keras.datasets.cifar10 (original release): "
                     f"{len(x_train):,} train / {len(x_test):,} test images"),
    )


def _load_sample(limit: int | None, rng: np.random.Generator) -> RawData:
    """The bundled sample: ``train/<class>/*.jpg`` and ``test/<class>/*.jpg`` in one zip.

    It ships with the package, so it is trusted: no size caps or layout checks (those
    guard your own copies, in :mod:`shiftvit_lib.tools.data_sources`).
    """
    if not SAMPLE_ARCHIVE.is_file():
        raise FileNotFoundError(f"the bundled CIFAR-10 sample is missing ({SAMPLE_ARCHIVE}). Reinstall "
                                "shiftvit_lib, or rebuild it with `python scripts/make_sample.py`.")
    arrays = []
    with zipfile.ZipFile(SAMPLE_ARCHIVE) as archive:
        names = sorted(n for n in archive.namelist() if not n.endswith("/"))
        for split in ("train", "test"):
            files = [n for c in CIFAR10_CLASSES for n in names if n.startswith(f"{split}/{c}/")]
            labels = np.array([CIFAR10_CLASSES.index(n.split("/")[1]) for n in files], dtype=np.int64)
            keep = cap_per_class(labels, limit, rng)
            images = [np.asarray(decode_rgb(archive.read(files[i]))[0]) for i in keep]
            arrays += [np.stack(images).astype(np.uint8), labels[keep]]
    return RawData(*arrays, image_formats="JPEG", description=(
        f"bundled CIFAR-10 sample ({SAMPLE_ARCHIVE.name}): {len(arrays[1]):,} train / {len(arrays[3]):,} "
        "test images, JPEG q75; pixels differ slightly from the original release"))


def _load_auto(limit: int | None, rng: np.random.Generator) -> RawData:
    """Prefer keras.datasets; fall back to the sample, loudly, when it is out of reach."""
    available, reason = keras_cifar10_available()
    if available:
        try:
            return _cap_raw(_load_from_keras(), limit, rng)
        except Exception as error:  # noqa: BLE001 - any failure leads to the fallback, which names it
            reason = f"keras.datasets.cifar10.load_data() failed: {error}"
    warnings.warn(
        "load_cifar10('auto'): using the small bundled CIFAR-10 sample (2,000 train / 500 test images) "
        f"instead of the full dataset, because {reason}. Pass source='keras' once you are online, "
        "or the path of a local copy.", DataSourceFallbackWarning, stacklevel=4)
    raw = _load_sample(limit, rng)
    raw.description += f" (source='auto' fell back to the sample: {reason})"
    return raw


def cap_per_class(labels: np.ndarray, limit: int | None, rng: np.random.Generator) -> np.ndarray:
    """Indices keeping at most ``limit`` random items per class, in original order."""
    if limit is None:
        return np.arange(len(labels))
    kept = [rng.permutation(np.flatnonzero(labels == c))[:limit] for c in np.unique(labels)]
    return np.sort(np.concatenate(kept)) if kept else np.zeros(0, dtype=int)


def _cap_raw(raw: RawData, limit: int | None, rng: np.random.Generator) -> RawData:
    train, test = cap_per_class(raw.y_train, limit, rng), cap_per_class(raw.y_test, limit, rng)
    return dataclasses.replace(raw, x_train=raw.x_train[train], y_train=raw.y_train[train],
                               x_test=raw.x_test[test], y_test=raw.y_test[test])


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
    url = urllib.parse.urlsplit((proxy if "://" in proxy else f"http://{proxy}") if proxy else KERAS_CIFAR10_URL)
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


def stratified_split_indices(
    labels: np.ndarray, val_fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Split indices so each class sends the same share to validation.

    Returns ``(train_indices, val_indices)``, each in shuffled order so that
    classes are interleaved (handy for plotting the first few images).
    """
    train_parts, val_parts = [], []
    for class_index in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == class_index))
        # Round half up (Python's round() rounds 2.5 to 2).
        n_val = int(math.floor(len(members) * val_fraction + 0.5))
        if val_fraction > 0 and not 0 < n_val < len(members):
            raise ValueError(
                f"class {class_index} has {len(members)} training images: too few to move "
                f"{val_fraction:.0%} to validation and keep some for training. "
                "Use a larger limit or val_fraction=0."
            )
        val_parts.append(members[:n_val])
        train_parts.append(members[n_val:])
    train = rng.permutation(np.concatenate(train_parts)) if train_parts else np.zeros(0, int)
    val = rng.permutation(np.concatenate(val_parts)) if val_parts else np.zeros(0, int)
    return train, val


# --------------------------------------------------------------------------- input pipeline
def make_dataset(x: np.ndarray, y: np.ndarray, batch_size: int, *, shuffle: bool, seed: int | None = None,
                 drop_remainder: bool = False, num_classes: int | None = None, mixup_alpha: float = 0.0,
                 cutmix_alpha: float = 0.0) -> Any:
    """Batches of (images, labels) for ``model.fit`` / ``model.evaluate``.

    A ``tf.data.Dataset`` on TensorFlow; on JAX or PyTorch, and whenever ``num_classes``
    asks for one-hot labels (which ``mixup_alpha`` / ``cutmix_alpha`` > 0 then mix with
    :func:`mix_batch`), a :class:`NumpyBatches`. Images stay uint8 [0, 255] pixels (a
    quarter of float32's memory): the model rescales and augments inside, so a saved
    model takes raw pixels. ``shuffle`` reorders every epoch, the same ``seed`` the same way.
    """
    x, y = check_batch_inputs(x, y, batch_size)
    if (mixup_alpha or cutmix_alpha) and num_classes is None:
        raise ValueError("MixUp/CutMix mix the labels: pass num_classes so they can be one-hot encoded")
    if keras.backend.backend() != "tensorflow" or num_classes is not None:
        return NumpyBatches(x, y, batch_size, shuffle=shuffle, seed=seed, drop_remainder=drop_remainder,
                            num_classes=num_classes, mixup_alpha=mixup_alpha, cutmix_alpha=cutmix_alpha)
    import tensorflow as tf  # only on the TensorFlow backend

    dataset = tf.data.Dataset.from_tensor_slices((x, y))
    if shuffle:
        # A buffer as big as the data gives a uniform shuffle (CIFAR fits in memory).
        dataset = dataset.shuffle(len(x), seed=seed, reshuffle_each_iteration=True)
    return dataset.batch(batch_size, drop_remainder=drop_remainder).prefetch(tf.data.AUTOTUNE)


def check_batch_inputs(x: Any, y: Any, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """``x`` and ``y`` as arrays, checked to make batches of ``batch_size``; else a ``ValueError``."""
    x, y = np.asarray(x), np.asarray(y)
    check_positive_int(batch_size, "batch_size")
    if len(x) != len(y):
        raise ValueError(f"x has {len(x)} items but y has {len(y)}")
    if len(x) == 0:
        raise ValueError("cannot make a dataset from zero images")
    return x, y


class NumpyBatches(keras.utils.PyDataset):
    """Backend-neutral batches of NumPy arrays, reshuffled after every epoch.

    What :func:`make_dataset` returns off TensorFlow, and whenever labels are one-hot.
    Keras calls ``on_epoch_end`` after each epoch; a seeded generator makes the
    sequence of orders reproducible. With ``num_classes``, labels come one-hot; with
    a MixUp/CutMix alpha, each batch is mixed by :func:`mix_batch` with a generator
    seeded by (seed, epoch, batch index), so a batch is the same whatever thread loads it.
    """

    def __init__(self, x: np.ndarray, y: np.ndarray, batch_size: int, *, shuffle: bool, seed: int | None = None,
                 drop_remainder: bool = False, num_classes: int | None = None, mixup_alpha: float = 0.0,
                 cutmix_alpha: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.x, self.y = check_batch_inputs(x, y, batch_size)
        self.batch_size = int(batch_size)
        if drop_remainder and len(self.x) < self.batch_size:
            raise ValueError(f"drop_remainder with {len(self.x)} images and batch_size {batch_size} leaves "
                             "no batch; use a smaller batch_size")
        self.shuffle, self.drop_remainder, self.num_classes = shuffle, drop_remainder, num_classes
        self.mixup_alpha, self.cutmix_alpha = float(mixup_alpha), float(cutmix_alpha)
        self._seed = seed if seed is not None else int(np.random.SeedSequence().entropy % 2**32)
        self._epoch = 0
        self._rng = np.random.default_rng(self._seed)
        self._order = self._rng.permutation(len(self.x)) if shuffle else np.arange(len(self.x))
        # Mixed batches are made ahead in threads (NumPy frees the GIL in its loops), off a
        # GPU step's critical path (issue 39); the others are one cheap uint8 gather.
        mixes = num_classes is not None and (self.mixup_alpha or self.cutmix_alpha)
        self.ahead_threads = min(4, os.cpu_count() or 1) if mixes else 0
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._ahead: dict[int, concurrent.futures.Future] = {}

    def __len__(self) -> int:
        if self.drop_remainder:
            return len(self.x) // self.batch_size
        return math.ceil(len(self.x) / self.batch_size)

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        if not 0 <= index < len(self):
            raise IndexError(f"batch index {index} out of range for {len(self)} batches")
        if not self.ahead_threads:
            return self._batch(index, self._epoch, self._order)
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(self.ahead_threads, thread_name_prefix="batches")
        made = self._ahead.pop(index, None)
        for stale in [i for i in self._ahead if i < index]:  # after a jump: not needed now
            self._ahead.pop(stale).cancel()
        for ahead in range(index + 1, min(index + 1 + 2 * self.ahead_threads, len(self))):
            if ahead not in self._ahead:
                self._ahead[ahead] = self._pool.submit(self._batch, ahead, self._epoch, self._order)
        return made.result() if made is not None else self._batch(index, self._epoch, self._order)

    def _batch(self, index: int, epoch: int, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Batch ``index`` of ``epoch``: a function of its arguments only, so any thread may make it."""
        rows = order[index * self.batch_size:(index + 1) * self.batch_size]
        images, labels = self.x[rows], self.y[rows]
        if self.num_classes is None:
            return images, labels
        targets = one_hot(labels, self.num_classes)
        if self.mixup_alpha or self.cutmix_alpha:
            rng = np.random.default_rng([self._seed, epoch, index])
            images, targets, _ = mix_batch(images, targets, rng, mixup_alpha=self.mixup_alpha,
                                           cutmix_alpha=self.cutmix_alpha)
        return images, targets

    def on_epoch_end(self) -> None:
        for made in self._ahead.values():  # made with the old order and epoch
            made.cancel()
        self._ahead.clear()
        self._epoch += 1
        if self.shuffle:
            self._order = self._rng.permutation(len(self.x))


def one_hot(labels: np.ndarray, num_classes: int) -> np.ndarray:
    """Integer labels as float32 one-hot rows; a label outside [0, num_classes) is an error."""
    labels = np.asarray(labels).reshape(-1).astype("int64")
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(f"labels must lie in [0, {num_classes}); got {labels.min()}..{labels.max()}")
    return np.eye(num_classes, dtype="float32")[labels]


def mix_batch(images: np.ndarray, targets: np.ndarray, rng: np.random.Generator, *, mixup_alpha: float = 0.0,
              cutmix_alpha: float = 0.0) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """MixUp or CutMix one batch of images (N, H, W, C) and one-hot ``targets``.

    Every image is paired with another of the batch (a random permutation). MixUp
    (Zhang et al. 2018) blends the pair with one weight ``lam ~ Beta(a, a)``; CutMix (Yun
    et al. 2019) pastes a box of the partner covering about ``1 - lam`` of the image,
    ``lam`` then being the box's exact share after clipping. Either way the target is
    ``lam * own + (1 - lam) * partner``; with both alphas > 0 a fair coin picks one.
    Returns the mixed images and targets (float32) and ``{"kind", "lam", "partner", "box"}``.
    """
    images = np.asarray(images, dtype="float32")
    targets = np.asarray(targets, dtype="float32")
    if images.ndim != 4 or targets.ndim != 2 or len(images) != len(targets):
        raise ValueError(f"mix_batch expects images (N, H, W, C) and one-hot targets (N, classes); "
                         f"got {images.shape} and {targets.shape}")
    if mixup_alpha <= 0 and cutmix_alpha <= 0:
        return images, targets, {"kind": "none", "lam": 1.0, "partner": np.arange(len(images)), "box": None}
    use_cutmix = cutmix_alpha > 0 and (mixup_alpha <= 0 or rng.random() < 0.5)
    partner = rng.permutation(len(images))
    box = None
    if use_cutmix:
        lam = float(rng.beta(cutmix_alpha, cutmix_alpha))
        height, width = images.shape[1:3]
        cut_h, cut_w = int(round(height * np.sqrt(1 - lam))), int(round(width * np.sqrt(1 - lam)))
        centre_y, centre_x = int(rng.integers(height)), int(rng.integers(width))
        top, bottom = np.clip([centre_y - cut_h // 2, centre_y - cut_h // 2 + cut_h], 0, height)
        left, right = np.clip([centre_x - cut_w // 2, centre_x - cut_w // 2 + cut_w], 0, width)
        mixed = images.copy()
        mixed[:, top:bottom, left:right] = images[partner, top:bottom, left:right]
        lam = 1.0 - (bottom - top) * (right - left) / (height * width)
        box = (int(top), int(bottom), int(left), int(right))
    else:
        lam = float(rng.beta(mixup_alpha, mixup_alpha))
        mixed = lam * images + (1 - lam) * images[partner]
    mixed_targets = lam * targets + (1 - lam) * targets[partner]
    record = {"kind": "cutmix" if use_cutmix else "mixup", "lam": float(lam), "partner": partner, "box": box}
    return mixed.astype("float32"), mixed_targets.astype("float32"), record


def iterate_batches(dataset: Any) -> Iterable[tuple[np.ndarray, np.ndarray]]:
    """Yield NumPy (images, labels) batches from either kind of make_dataset result."""
    if isinstance(dataset, keras.utils.PyDataset):
        for index in range(len(dataset)):
            yield dataset[index]
        return
    yield from dataset.as_numpy_iterator()
