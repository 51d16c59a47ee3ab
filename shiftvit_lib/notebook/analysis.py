"""Reading a classifier's mistakes (lesson 06): the confusion matrix and its largest off-diagonal cells."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from shiftvit_lib.config import check_whole_number


def confusion_matrix(y_true: Any, y_pred: Any, num_classes: int) -> np.ndarray:
    """Counts ``cm[true_class, predicted_class]`` (rows: truth, columns: prediction).

    Both arguments are class indices of shape (N,) or (N, 1); for model
    outputs pass ``scores.argmax(axis=1)``.
    """
    true = _as_class_indices(y_true, "y_true", num_classes)
    pred = _as_class_indices(y_pred, "y_pred", num_classes)
    if len(true) != len(pred):
        raise ValueError(f"y_true has {len(true)} labels but y_pred has {len(pred)}")
    return np.bincount(true * num_classes + pred, minlength=num_classes**2).reshape(num_classes, num_classes)


def _as_class_indices(values: Any, name: str, num_classes: int) -> np.ndarray:
    array = np.asarray(values)
    array = array[:, 0] if array.ndim == 2 and array.shape[1] == 1 else array
    if array.ndim != 1:
        raise ValueError(
            f"{name} must be class indices of shape (N,); got shape {array.shape}. "
            "For scores or one-hot rows pass .argmax(axis=1)."
        )
    # Whole floats (labels read from a CSV) are accepted; 0.5 or a string is not.
    if array.dtype.kind not in "iuf" or np.any(array != np.round(array)):
        raise ValueError(f"{name} must hold integer class indices; got dtype {array.dtype}")
    if array.size and (array.min() < 0 or array.max() >= num_classes):
        raise ValueError(
            f"{name} values must be in [0, {num_classes - 1}]; found {array.min()}..{array.max()}"
        )
    return array.astype(np.int64)


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
    cm = np.asarray(cm, dtype=np.int64)
    if cm.shape != (len(class_names), len(class_names)):
        raise ValueError(f"cm must be square, one row per class ({len(class_names)}); got shape {cm.shape}")
    check_whole_number(k, "k")
    errors = cm - np.diag(np.diag(cm))
    # Stable sort keeps ties in (true, predicted) row-major order.
    order = np.argsort(-errors, axis=None, kind="stable")[:k]
    cells = [(t, p) for t, p in zip(*np.unravel_index(order, cm.shape)) if errors[t, p]]
    return [
        ConfusedPair(class_names[t], class_names[p], int(errors[t, p]), float(errors[t, p] / cm[t].sum()))
        for t, p in cells
    ]
