"""Lesson 06's reading of a model's mistakes (shiftvit_lib/notebook/analysis.py)."""

import numpy as np
import pytest

from shiftvit_lib.notebook.analysis import confusion_matrix, most_confused_pairs


def test_confusion_matrix_by_hand() -> None:
    y_true = [0, 0, 1, 2, 2, 2]
    y_pred = [0, 1, 1, 2, 0, 2]
    expected = [[1, 1, 0],
                [0, 1, 0],
                [1, 0, 2]]
    np.testing.assert_array_equal(confusion_matrix(y_true, y_pred, 3), expected)
    column = np.array(y_true)[:, None]  # keras-style (N, 1) labels
    np.testing.assert_array_equal(confusion_matrix(column, y_pred, 3), expected)


def test_confusion_matrix_errors() -> None:
    with pytest.raises(ValueError, match=r"y_pred values must be in \[0, 2\]"):
        confusion_matrix([0, 1], [0, 3], 3)
    with pytest.raises(ValueError, match="argmax"):
        confusion_matrix([0, 1], np.eye(2), 2)
    with pytest.raises(ValueError, match="2 labels but y_pred has 1"):
        confusion_matrix([0, 1], [0], 2)
    with pytest.raises(ValueError, match="integer"):
        confusion_matrix([0, 1], [0.5, 1.0], 2)


def test_most_confused_pairs() -> None:
    cm = np.array([[5, 3, 0],
                   [1, 8, 1],
                   [3, 0, 7]])
    pairs = most_confused_pairs(cm, ["cat", "dog", "frog"], k=3)
    assert [(p.true_label, p.predicted_label, p.count) for p in pairs] == [
        ("cat", "dog", 3), ("frog", "cat", 3), ("dog", "cat", 1)]
    assert pairs[0].share_of_true == pytest.approx(3 / 8)
    assert len(most_confused_pairs(np.diag([4, 4, 4]), ["a", "b", "c"])) == 0
    with pytest.raises(ValueError, match="square"):
        most_confused_pairs(cm, ["cat", "dog"])
