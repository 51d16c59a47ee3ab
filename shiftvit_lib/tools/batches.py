"""Backend-neutral training batches: what ``shiftvit_lib.data.make_dataset`` returns off TensorFlow.

On JAX and PyTorch (and, on any backend, when MixUp/CutMix mix the labels) batches
come from :class:`NumpyBatches`, a ``keras.utils.PyDataset`` of NumPy arrays, so no
TensorFlow is needed there.
"""

from __future__ import annotations

import math
from typing import Any

import keras
import numpy as np

from shiftvit_lib.data import mix_batch, one_hot


def check_batch_inputs(x: Any, y: Any, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """``x`` and ``y`` as arrays, checked to make batches of ``batch_size``; else a ``ValueError``."""
    x, y = np.asarray(x), np.asarray(y)
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer; got {batch_size!r}")
    if len(x) != len(y):
        raise ValueError(f"x has {len(x)} items but y has {len(y)}")
    if len(x) == 0:
        raise ValueError("cannot make a dataset from zero images")
    return x, y


class NumpyBatches(keras.utils.PyDataset):
    """Backend-neutral batches of NumPy arrays, reshuffled after every epoch.

    Keras calls ``on_epoch_end`` after each epoch; a seeded
    ``numpy.random.Generator`` makes the sequence of orders reproducible.
    With ``num_classes``, labels come one-hot; with a MixUp/CutMix alpha, each
    batch is mixed by :func:`mix_batch` with a generator seeded by
    (seed, epoch, batch index), so a batch is the same whatever thread loads it.
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
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.x, self.y = check_batch_inputs(x, y, batch_size)
        self.batch_size = int(batch_size)
        if drop_remainder and len(self.x) < self.batch_size:
            raise ValueError(
                f"drop_remainder with {len(self.x)} images and batch_size {batch_size} leaves no batch; "
                "use a smaller batch_size"
            )
        self.shuffle = shuffle
        self.drop_remainder = drop_remainder
        self.num_classes = num_classes
        self.mixup_alpha = float(mixup_alpha)
        self.cutmix_alpha = float(cutmix_alpha)
        self._seed = seed if seed is not None else int(np.random.SeedSequence().entropy % 2**32)
        self._epoch = 0
        self._rng = np.random.default_rng(self._seed)
        self._order = self._rng.permutation(len(self.x)) if shuffle else np.arange(len(self.x))

    def __len__(self) -> int:
        if self.drop_remainder:
            return len(self.x) // self.batch_size
        return math.ceil(len(self.x) / self.batch_size)

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        if not 0 <= index < len(self):
            raise IndexError(f"batch index {index} out of range for {len(self)} batches")
        rows = self._order[index * self.batch_size:(index + 1) * self.batch_size]
        images, labels = self.x[rows], self.y[rows]
        if self.num_classes is None:
            return images, labels
        targets = one_hot(labels, self.num_classes)
        if self.mixup_alpha or self.cutmix_alpha:
            rng = np.random.default_rng([self._seed, self._epoch, index])
            images, targets, _ = mix_batch(
                images, targets, rng, mixup_alpha=self.mixup_alpha, cutmix_alpha=self.cutmix_alpha
            )
        return images, targets

    def on_epoch_end(self) -> None:
        self._epoch += 1
        if self.shuffle:
            self._order = self._rng.permutation(len(self.x))


__all__ = ["NumpyBatches", "check_batch_inputs"]
