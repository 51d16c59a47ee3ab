"""Reading a classifier's mistakes (lesson 06): the confusion matrix and its largest off-diagonal cells."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from shiftvit_lib.config import check_positive_int


def confusion_matrix(y_true: Any, y_pred: Any, num_classes: int) -> np.ndarray:
    """Counts ``cm[true_class, predicted_class]`` (rows: truth, columns: prediction).

    Both arguments are class indices of shape (N,) or (N, 1); for model
    outputs pass ``scores.argmax(axis=1)``.
    """
    check_positive_int(num_classes, "num_classes")
    true = _as_class_indices(y_true, "y_true", num_classes)
    pred = _as_class_indices(y_pred, "y_pred", num_classes)
    if len(true) != len(pred):
        raise ValueError(f"y_true has {len(true)} labels but y_pred has {len(pred)}")
    flat = np.bincount(true * num_classes + pred, minlength=num_classes * num_classes)
    return flat.reshape(num_classes, num_classes)


def _as_class_indices(values: Any, name: str, num_classes: int) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim != 1:
        raise ValueError(
            f"{name} must be class indices of shape (N,); got shape {array.shape}. "
            "For scores or one-hot rows pass .argmax(axis=1)."
        )
    if not np.issubdtype(array.dtype, np.integer):
        if not (np.issubdtype(array.dtype, np.floating) and np.all(array == np.round(array))):
            raise ValueError(f"{name} must hold integer class indices; got dtype {array.dtype}")
    array = array.astype(np.int64)
    if len(array) and (array.min() < 0 or array.max() >= num_classes):
        raise ValueError(
            f"{name} values must be in [0, {num_classes - 1}]; found {array.min()}..{array.max()}"
        )
    return array


class ConfusedPair(NamedTuple):
    """A (true class, wrongly predicted class) pair and how often it happened."""

    true_label: str
    predicted_label: str
    count: int
    share_of_true: float  # count / number of images of the true class


def most_confused_pairs(cm: np.ndarray, class_names: Sequence[str], k: int = 5) -> list[ConfusedPair]:
    """The ``k`` largest off-diagonal cells of a confusion matrix, largest first.

    Pairs that never happened (count 0) are left out, so fewer than ``k``
    may come back.
    """
    cm = np.asarray(cm)
    if cm.ndim != 2 or cm.shape[0] != cm.shape[1] or cm.shape[0] != len(class_names):
        raise ValueError(
            f"cm must be a square matrix with one row per class ({len(class_names)}); got shape {cm.shape}"
        )
    check_positive_int(k, "k")
    errors = cm.astype(np.int64).copy()
    np.fill_diagonal(errors, 0)
    # Stable sort keeps ties in (true, predicted) row-major order.
    order = np.argsort(-errors, axis=None, kind="stable")[:k]
    row_totals = cm.sum(axis=1)
    pairs = []
    for flat_index in order:
        true, pred = divmod(int(flat_index), cm.shape[1])
        if errors[true, pred] == 0:
            break
        pairs.append(
            ConfusedPair(
                class_names[true],
                class_names[pred],
                int(errors[true, pred]),
                float(errors[true, pred] / row_totals[true]),
            )
        )
    return pairs
