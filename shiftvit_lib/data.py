"""CIFAR-10 loading, the train/validation/test split, and the input pipeline (lesson 01).

``load_cifar10`` returns a :class:`DataSplits`: uint8 NHWC images, integer labels, and a
``source`` sentence that says exactly which data was loaded, because "CIFAR-10" can mean
the original release (``"keras"``, downloaded once), a JPEG re-encoding of it (a folder
or archive of image files), or the 2,000 + 500 images bundled with this package
(``"sample"``, offline). ``"auto"`` takes the first when it can be had, else the sample,
with a :class:`DataSourceFallbackWarning` saying why. Fetching and decoding the sources
is tooling: :mod:`shiftvit_lib.tools.data_sources`.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterable
from typing import Any

import keras
import numpy as np

CIFAR10_CLASSES: tuple[str, ...] = (
    "airplane", "automobile", "bird", "cat", "deer",
    "dog", "frog", "horse", "ship", "truck",
)
DEFAULT_SEED = 42


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
        for split in ("train", "val", "test"):
            x, y = getattr(self, f"x_{split}"), getattr(self, f"y_{split}")
            _check_images_and_labels(x, y, len(self.class_names), where=f"{split} split")

    def split_sizes(self) -> dict[str, int]:
        """Number of images per split, e.g. ``{"train": 40000, ...}``."""
        return {"train": len(self.y_train), "val": len(self.y_val), "test": len(self.y_test)}

    def class_counts(self) -> dict[str, np.ndarray]:
        """Images per class for each split (arrays of length ``len(class_names)``)."""
        n = len(self.class_names)
        return {
            "train": np.bincount(self.y_train, minlength=n),
            "val": np.bincount(self.y_val, minlength=n),
            "test": np.bincount(self.y_test, minlength=n),
        }

    def summary(self) -> str:
        """A few lines: the source, then the size of each split."""
        lines = [self.source]
        counts = self.class_counts()
        for split, size in self.split_sizes().items():
            lines.append(f"  {split + ':':6} {size:>6,} images ({_describe_counts(counts[split])})")
        height, width, channels = self.x_train.shape[1:]
        lines.append(
            f"  images: {height}x{width}x{channels} {self.x_train.dtype}, "
            f"labels: {len(self.class_names)} classes ({', '.join(self.class_names)})"
        )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        sizes = ", ".join(f"{k}={v:,}" for k, v in self.split_sizes().items())
        return f"DataSplits({sizes}, source={self.source!r})"


def _describe_counts(counts: np.ndarray) -> str:
    if len(counts) and counts.min() == counts.max():
        return f"{counts[0]:,} per class"
    return f"{counts.min():,} to {counts.max():,} per class"


def _check_images_and_labels(x: np.ndarray, y: np.ndarray, num_classes: int, where: str) -> None:
    """Raise ValueError unless x is (N, H, W, 3) uint8 and y is (N,) ints in range."""
    if not isinstance(x, np.ndarray) or x.ndim != 4 or x.shape[-1] != 3 or x.dtype != np.uint8:
        raise ValueError(
            f"{where}: images must be a uint8 array of shape (N, height, width, 3); got "
            f"{type(x).__name__} {getattr(x, 'dtype', '')} {getattr(x, 'shape', '')}"
        )
    if not isinstance(y, np.ndarray) or y.ndim != 1 or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(
            f"{where}: labels must be a 1-D integer array; got "
            f"{type(y).__name__} {getattr(y, 'dtype', '')} {getattr(y, 'shape', '')}"
        )
    if len(x) != len(y):
        raise ValueError(f"{where}: {len(x)} images but {len(y)} labels")
    if len(y) and (y.min() < 0 or y.max() >= num_classes):
        raise ValueError(f"{where}: labels must lie in [0, {num_classes - 1}]; "
                         f"found {y.min()}..{y.max()}")


def load_cifar10(
    source: str | os.PathLike[str] = "auto",
    *,
    val_fraction: float = 0.2,
    seed: int = DEFAULT_SEED,
    limit: int | None = None,
) -> DataSplits:
    """Load CIFAR-10 and split it into train / validation / test.

    The validation set is a stratified (class-balanced) ``val_fraction`` of
    the training images, as in the keras-io ShiftViT example: 40,000 train /
    10,000 val / 10,000 test with the defaults. The test set keeps all its
    images; only their order is shuffled (seeded), because class-folder
    sources list them class by class and ``x_test[:8]`` should not be eight
    airplanes.

    Args:
        source: ``"auto"``, ``"keras"``, ``"sample"``, or a path (str or
            ``pathlib.Path``) to a class-folder directory or archive; see the
            module docstring.
        val_fraction: share of each class's training images moved to the
            validation split, in [0, 1).
        seed: seeds the validation split, the order of every split, and the
            ``limit`` subsampling.
        limit: keep at most this many images per class in the training pool
            (before the validation split) and in the test set; for quick runs.

    Returns:
        A :class:`DataSplits`; ``print(splits)`` shows its source and sizes.
    """
    if not 0.0 <= val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in [0, 1); got {val_fraction}")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, np.integer))
                              or limit < 1):
        raise ValueError(f"limit must be a positive integer (images per class) or None; got {limit!r}")
    # Where the images come from is tooling: downloads, archives, folders, caches.
    from shiftvit_lib.tools.data_sources import load_source

    rng = np.random.default_rng(seed)
    raw = load_source(source, limit, rng)

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

    On the TensorFlow backend this is a ``tf.data.Dataset`` (shuffle with
    ``seed``, batch, prefetch). On JAX or PyTorch it is a
    :class:`NumpyBatches` (a ``keras.utils.PyDataset`` yielding NumPy batches),
    so no TensorFlow is needed there.

    Images are NOT converted to float: the model rescales (and augments)
    inside, so the saved model takes raw [0, 255] pixels at inference time,
    and uint8 batches use a quarter of the memory of float32 ones.

    With ``num_classes`` the labels come as one-hot float vectors, and
    ``mixup_alpha`` / ``cutmix_alpha`` > 0 mix each batch with
    :func:`mix_batch` (images become float32). Both need the labels, so they run
    here rather than in the model; these batches are always a :class:`NumpyBatches`.

    With ``shuffle=True`` the order changes every epoch; the same ``seed``
    gives the same sequence of orders. ``seed=None`` is random.
    """
    # Batches of NumPy arrays serve every backend (and MixUp/CutMix); they are tooling.
    from shiftvit_lib.tools.batches import NumpyBatches, check_batch_inputs

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


def one_hot(labels: np.ndarray, num_classes: int) -> np.ndarray:
    """Integer labels as float32 one-hot rows; a label outside [0, num_classes) is an error."""
    labels = np.asarray(labels).reshape(-1).astype("int64")
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(f"labels must lie in [0, {num_classes}); got {labels.min()}..{labels.max()}")
    return np.eye(num_classes, dtype="float32")[labels]


def mix_batch(images: np.ndarray, targets: np.ndarray, rng: np.random.Generator, *, mixup_alpha: float = 0.0,
              cutmix_alpha: float = 0.0) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """MixUp or CutMix one batch of images (N, H, W, C) and one-hot ``targets``.

    Every image is paired with another image of the batch (a random permutation).
    MixUp (Zhang et al. 2018) blends the pair with weight ``lam ~ Beta(a, a)``;
    CutMix (Yun et al. 2019) pastes a box of the partner covering about ``1 - lam``
    of the image, and ``lam`` is corrected to the box's exact area after clipping
    at the border. In both, the target is ``lam * own + (1 - lam) * partner``.
    With both alphas > 0, a fair coin picks one per batch. One ``lam`` per batch.

    Returns the mixed images (float32), the mixed targets and a record of what was
    done (``{"kind", "lam", "partner", "box"}``) for tests and lessons.
    """
    images = np.asarray(images, dtype="float32")
    targets = np.asarray(targets, dtype="float32")
    if images.ndim != 4 or targets.ndim != 2 or len(images) != len(targets):
        raise ValueError(
            f"mix_batch expects images (N, H, W, C) and one-hot targets (N, classes); "
            f"got {images.shape} and {targets.shape}"
        )
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
