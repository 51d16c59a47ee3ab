"""Lesson 06's reading of a model's mistakes (shiftvit_lib/notebook/analysis.py)."""

import numpy as np
import pytest

from shiftvit_lib.notebook.analysis import confusion_matrix, most_confused_pairs


def test_confusion_matrix_and_its_most_confused_pairs_by_hand() -> None:
    y_true, y_pred = [0, 0, 1, 2, 2, 2], [0, 1, 1, 2, 0, 2]
    for labels in (y_true, np.array(y_true)[:, None]):  # and keras-style (N, 1) labels
        np.testing.assert_array_equal(confusion_matrix(labels, y_pred, 3), [[1, 1, 0], [0, 1, 0], [1, 0, 2]])
    pairs = most_confused_pairs(np.array([[5, 3, 0], [1, 8, 1], [3, 0, 7]]), ["cat", "dog", "frog"], k=3)
    assert [(p.true_label, p.predicted_label, p.count) for p in pairs] == [  # ties in row order
        ("cat", "dog", 3), ("frog", "cat", 3), ("dog", "cat", 1)]
    assert pairs[0].share_of_true == pytest.approx(3 / 8)
    assert most_confused_pairs(np.diag([4, 4, 4]), ["a", "b", "c"]) == []  # no mistake, no pair


@pytest.mark.parametrize(("call", "words"), [
    (lambda: confusion_matrix([0, 1], [0, 3], 3), r"y_pred values must be in \[0, 2\]"),
    (lambda: confusion_matrix([0, 1], np.eye(2), 2), "argmax"),
    (lambda: confusion_matrix([0, 1], [0], 2), "2 labels but y_pred has 1"),
    (lambda: confusion_matrix([0, 1], [0.5, 1.0], 2), "integer"),
    (lambda: most_confused_pairs(np.eye(3), ["cat", "dog"]), "square"),
])
def test_labels_that_are_not_class_indices_are_refused(call, words) -> None:
    with pytest.raises(ValueError, match=words):
        call()
