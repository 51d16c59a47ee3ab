"""CIFAR-10's three splits and the input pipeline (lesson 01): arrays in, batches out.

:func:`make_splits` turns the arrays a source gave (a :class:`RawData`: training pool, test
set and a sentence saying exactly which data it is) into a :class:`DataSplits`: uint8 NHWC
images and integer labels for train, validation and test. Reading a source is tooling:
:func:`shiftvit_lib.load_cifar10` (:mod:`shiftvit_lib.tools.data_sources`) reads it and calls
:func:`make_splits`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Iterable
from typing import Any

import keras
import numpy as np

from shiftvit_lib.config import InputError, check_whole_number

CIFAR10_CLASSES: tuple[str, ...] = tuple(
    "airplane automobile bird cat deer dog frog horse ship truck".split()
)
SPLITS = ("train", "val", "test")


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

    def digest(self) -> str:
        """A short hash of every image and label: the data's identity (a run folder stores it)."""
        digest = hashlib.blake2b(digest_size=12)
        for split in SPLITS:
            for array in (getattr(self, f"x_{split}"), getattr(self, f"y_{split}")):
                array = np.ascontiguousarray(array)
                digest.update(f"{split}{array.dtype.str}{array.shape}".encode())
                digest.update(array.data)
        return digest.hexdigest()

    def split_sizes(self) -> dict[str, int]:
        """Number of images per split, e.g. ``{"train": 40000, ...}``."""
        return {split: len(getattr(self, f"y_{split}")) for split in SPLITS}

    def class_counts(self) -> dict[str, np.ndarray]:
        """Images per class for each split (arrays of length ``len(class_names)``)."""
        return {
            split: np.bincount(getattr(self, f"y_{split}"), minlength=len(self.class_names))
            for split in SPLITS
        }

    def summary(self) -> str:
        """A few lines: the source, then the size of each split."""
        lines = [self.source]
        for split, counts in self.class_counts().items():
            low, high = (counts.min(), counts.max()) if len(counts) else (0, 0)
            per_class = f"{low:,}" if low == high else f"{low:,} to {high:,}"
            lines.append(f"  {split + ':':6} {counts.sum():>6,} images ({per_class} per class)")
        height, width, channels = self.x_train.shape[1:]
        lines.append(
            f"  images: {height}x{width}x{channels} {self.x_train.dtype}, "
            f"labels: {len(self.class_names)} classes ({', '.join(self.class_names)})"
        )
        return "\n".join(lines)

    __str__ = summary

    def __repr__(self) -> str:
        sizes = ", ".join(f"{k}={v:,}" for k, v in self.split_sizes().items())
        return f"DataSplits({sizes}, source={self.source!r})"


def _check_images_and_labels(x: np.ndarray, y: np.ndarray, num_classes: int, where: str) -> None:
    """Raise ValueError unless x is (N, H, W, 3) uint8 and y is (N,) ints in range."""

    def described(array: Any) -> str:
        return f"{type(array).__name__} {getattr(array, 'dtype', '')} {getattr(array, 'shape', '')}"

    if not isinstance(x, np.ndarray) or x.ndim != 4 or x.shape[-1] != 3 or x.dtype != np.uint8:
        raise InputError(
            f"{where}: images must be a uint8 array of shape (N, height, width, 3); got {described(x)}"
        )
    if not isinstance(y, np.ndarray) or y.ndim != 1 or not np.issubdtype(y.dtype, np.integer):
        raise InputError(f"{where}: labels must be a 1-D integer array; got {described(y)}")
    if len(x) != len(y):
        raise InputError(f"{where}: {len(x)} images but {len(y)} labels")
    if len(y) and (y.min() < 0 or y.max() >= num_classes):
        raise InputError(f"{where}: labels must lie in [0, {num_classes - 1}]; found {y.min()}..{y.max()}")


@dataclasses.dataclass
class RawData:
    """Train and test data as read from a source, before the validation split."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    description: str
    image_formats: str = ""  # e.g. "JPEG"; empty for arrays that never were image files


def make_splits(raw: RawData, rng: np.random.Generator, *, val_fraction: float = 0.2) -> DataSplits:
    """Split ``raw`` into train / validation / test with ``rng``.

    ``val_fraction`` of each class's training images go to validation, in [0, 1): a stratified
    split as in the keras-io example (40,000 / 10,000 / 10,000 for the full data). Every split
    is shuffled (so ``x_test[:8]`` is not eight airplanes); ``rng`` decides how.
    """
    if not 0.0 <= val_fraction < 1.0:
        raise InputError(f"val_fraction must be in [0, 1); got {val_fraction}")
    try:
        train_idx, val_idx = stratified_split_indices(raw.y_train, val_fraction, rng)
    except InputError as error:  # name the data it is about
        raise InputError(f"{raw.description}: {error}") from None
    x, y, test_idx = raw.x_train, raw.y_train, rng.permutation(len(raw.y_test))
    splits = x[train_idx], y[train_idx], x[val_idx], y[val_idx], raw.x_test[test_idx], raw.y_test[test_idx]
    return DataSplits(*splits, CIFAR10_CLASSES, raw.description)


def cap_per_class(labels: np.ndarray, limit: int | None, rng: np.random.Generator) -> np.ndarray:
    """Indices keeping at most ``limit`` random items per class, in original order."""
    if limit is None:
        return np.arange(len(labels))
    kept = [rng.permutation(np.flatnonzero(labels == c))[:limit] for c in np.unique(labels)]
    return np.sort(np.concatenate(kept)) if kept else np.zeros(0, dtype=int)


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
            name = CIFAR10_CLASSES[class_index] if 0 <= class_index < len(CIFAR10_CLASSES) else class_index
            raise InputError(
                f"class {name!r} has {len(members)} training image(s): too few to send {val_fraction:.0%} to "
                "validation and keep some for training; give it more images (in its train/ folder, or a larger --limit)"
            )
        val_parts.append(members[:n_val])
        train_parts.append(members[n_val:])
    train = rng.permutation(np.concatenate(train_parts)) if train_parts else np.zeros(0, int)
    val = rng.permutation(np.concatenate(val_parts)) if val_parts else np.zeros(0, int)
    return train, val


# --------------------------------------------------------------------------- input pipeline
class NumpyBatches(keras.utils.PyDataset):
    """Batches of (images, labels) for ``model.fit`` / ``model.evaluate``, on every backend.

    Also called :func:`make_dataset`. Images stay uint8 [0, 255] pixels (a quarter of
    float32's memory): the model rescales and augments inside, so a saved model takes raw
    pixels. ``shuffle`` reorders every epoch (Keras calls ``on_epoch_end``), the same
    ``seed`` the same way. With ``num_classes``, labels come one-hot; with a MixUp/CutMix
    alpha, each batch is mixed by :func:`mix_batch` with a generator seeded by (seed,
    epoch, batch index), so a batch is the same whatever order it is asked in; with
    ``mix_on_device`` the batch carries the draw instead (``{"images", "mixing"}``,
    :func:`mixing_columns`) and the model mixes it inside the compiled train step
    (:func:`mix_images`): off the host, which issue 39's threads only overlapped.
    """

    def __init__(
        self,
        x: np.ndarray,
        y: np.ndarray,
        batch_size: int,
        *,
        shuffle: bool,
        seed: int | None = None,
        drop_remainder: bool = False,
        num_classes: int | None = None,
        mixup_alpha: float = 0.0,
        cutmix_alpha: float = 0.0,
        mix_on_device: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.x, self.y = np.asarray(x), np.asarray(y)
        self.batch_size = check_whole_number(batch_size, "batch_size")
        if len(self.x) != len(self.y):
            raise InputError(f"x has {len(self.x)} items but y has {len(self.y)}")
        if len(self.x) == 0:
            raise InputError("cannot make a dataset from zero images")
        if (mixup_alpha or cutmix_alpha) and num_classes is None:
            raise InputError("MixUp/CutMix mix the labels: pass num_classes so they can be one-hot encoded")
        if drop_remainder and len(self.x) < self.batch_size:
            raise InputError(
                f"drop_remainder with {len(self.x)} images and batch_size {batch_size} leaves "
                "no batch; use a smaller batch_size"
            )
        self.shuffle, self.drop_remainder, self.num_classes = shuffle, drop_remainder, num_classes
        self.mixup_alpha, self.cutmix_alpha = float(mixup_alpha), float(cutmix_alpha)
        self.mix_on_device = mix_on_device
        self._seed = seed if seed is not None else int(np.random.SeedSequence().entropy % 2**32)
        self._epoch, self._rng = 0, np.random.default_rng(self._seed)
        self._order = self._rng.permutation(len(self.x)) if shuffle else np.arange(len(self.x))

    def __len__(self) -> int:
        whole, rest = divmod(len(self.x), self.batch_size)
        return whole + int(rest > 0 and not self.drop_remainder)

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        if not 0 <= index < len(self):
            raise IndexError(f"batch index {index} out of range for {len(self)} batches")
        rows = self._order[index * self.batch_size : (index + 1) * self.batch_size]
        images, labels = self.x[rows], self.y[rows]
        if self.num_classes is None:
            return images, labels
        targets = one_hot(labels, self.num_classes)
        if self.mixup_alpha or self.cutmix_alpha:
            rng = np.random.default_rng([self._seed, self._epoch, index])
            alphas = dict(mixup_alpha=self.mixup_alpha, cutmix_alpha=self.cutmix_alpha)
            if self.mix_on_device:  # only the draw here: the compiled step mixes the pixels
                draw = draw_mix(rng, images.shape, **alphas)
                return {"images": images, "mixing": mixing_columns(draw)}, mix_targets(targets, draw)
            images, targets, _ = mix_batch(images, targets, rng, **alphas)
        return images, targets

    def on_epoch_end(self) -> None:
        self._epoch += 1
        if self.shuffle:
            self._order = self._rng.permutation(len(self.x))


make_dataset = NumpyBatches  # the name lesson 01 teaches


def one_hot(labels: np.ndarray, num_classes: int) -> np.ndarray:
    """Integer labels as float32 one-hot rows; a label outside [0, num_classes) is an error."""
    labels = np.asarray(labels).reshape(-1).astype("int64")
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        raise InputError(f"labels must lie in [0, {num_classes}); got {labels.min()}..{labels.max()}")
    return np.eye(num_classes, dtype="float32")[labels]


def mix_batch(
    images: np.ndarray,
    targets: np.ndarray,
    rng: np.random.Generator,
    *,
    mixup_alpha: float = 0.0,
    cutmix_alpha: float = 0.0,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """MixUp or CutMix one batch of images (N, H, W, C) and one-hot ``targets``, on the host.

    Every image is paired with another of the batch (a random permutation). MixUp
    (Zhang et al. 2018) blends the pair with one weight ``lam ~ Beta(a, a)``; CutMix (Yun
    et al. 2019) pastes a box of the partner covering about ``1 - lam`` of the image,
    ``lam`` then being the box's exact share after clipping. Either way the target is
    ``lam * own + (1 - lam) * partner``; with both alphas > 0 a fair coin picks one.
    Returns the mixed images and targets (float32) and ``{"kind", "lam", "partner", "box"}``
    (:func:`draw_mix`; :func:`mix_images` applies the same draw inside a compiled step).
    """
    images, targets = np.asarray(images, dtype="float32"), np.asarray(targets, dtype="float32")
    if images.ndim != 4 or targets.ndim != 2 or len(images) != len(targets):
        raise InputError(
            f"mix_batch expects images (N, H, W, C) and one-hot targets (N, classes); "
            f"got {images.shape} and {targets.shape}"
        )
    if mixup_alpha <= 0 and cutmix_alpha <= 0:
        return images, targets, {"kind": "none", "lam": 1.0, "partner": np.arange(len(images)), "box": None}
    draw = draw_mix(rng, images.shape, mixup_alpha=mixup_alpha, cutmix_alpha=cutmix_alpha)
    partner = draw["partner"]
    if draw["box"] is None:
        mixed = draw["lam"] * images + (1 - draw["lam"]) * images[partner]
    else:
        (top, bottom, left, right), mixed = draw["box"], images.copy()
        mixed[:, top:bottom, left:right] = images[partner, top:bottom, left:right]
    return mixed.astype("float32"), mix_targets(targets, draw), draw


def draw_mix(rng: np.random.Generator, shape: tuple, *, mixup_alpha: float, cutmix_alpha: float) -> dict:
    """One batch's MixUp/CutMix draw for images of ``shape`` (N, H, W, C): :func:`mix_batch`'s record."""
    batch, height, width = shape[:3]
    use_cutmix = cutmix_alpha > 0 and (mixup_alpha <= 0 or rng.random() < 0.5)
    partner = rng.permutation(batch)
    if not use_cutmix:
        lam = float(rng.beta(mixup_alpha, mixup_alpha))
        return {"kind": "mixup", "lam": lam, "partner": partner, "box": None}
    lam = float(rng.beta(cutmix_alpha, cutmix_alpha))
    cut_h, cut_w = int(round(height * np.sqrt(1 - lam))), int(round(width * np.sqrt(1 - lam)))
    centre_y, centre_x = int(rng.integers(height)), int(rng.integers(width))
    top, bottom = np.clip([centre_y - cut_h // 2, centre_y - cut_h // 2 + cut_h], 0, height)
    left, right = np.clip([centre_x - cut_w // 2, centre_x - cut_w // 2 + cut_w], 0, width)
    lam, box = 1.0 - (bottom - top) * (right - left) / (height * width), (top, bottom, left, right)
    return {"kind": "cutmix", "lam": float(lam), "partner": partner, "box": tuple(map(int, box))}


def mix_targets(targets: np.ndarray, draw: dict) -> np.ndarray:
    """The one-hot ``targets`` mixed as :func:`draw_mix` drew: ``lam * own + (1 - lam) * partner``."""
    return (draw["lam"] * targets + (1 - draw["lam"]) * targets[draw["partner"]]).astype("float32")


def mixing_columns(draw: dict) -> np.ndarray:
    """A draw as one (N, 6) float32 array for the device: each image's partner, its own weight
    outside the box (MixUp's ``lam``, CutMix's 1), and the box's top, bottom, left, right."""
    n, box, own = len(draw["partner"]), draw["box"] or (0, 0, 0, 0), 1.0 if draw["box"] else draw["lam"]
    return np.column_stack([draw["partner"], np.full(n, own), np.tile(box, (n, 1))]).astype("float32")


def mix_images(images: Any, mixing: Any) -> Any:
    """:func:`mix_batch`'s images from the same draw (:func:`mixing_columns`), in ``keras.ops``:
    the model's call runs it inside the compiled train step (recipe.mixing_call), on the device."""
    ops = keras.ops
    images, mixing = ops.cast(images, "float32"), ops.cast(mixing, "float32")
    top, bottom, left, right = (mixing[:, column, None, None] for column in range(2, 6))
    rows = ops.arange(images.shape[1], dtype="float32")[None, :, None]
    cols = ops.arange(images.shape[2], dtype="float32")[None, None, :]
    inside = (rows >= top) & (rows < bottom) & (cols >= left) & (cols < right)
    own = ops.where(inside, 0.0, mixing[:, 1, None, None])[..., None]
    return own * images + (1 - own) * ops.take(images, ops.cast(mixing[:, 0], "int32"), axis=0)


def iterate_batches(dataset: NumpyBatches) -> Iterable[tuple[np.ndarray, np.ndarray]]:
    """Yield the NumPy (images, labels) batches of a :class:`NumpyBatches`, in order."""
    for index in range(len(dataset)):
        yield dataset[index]
