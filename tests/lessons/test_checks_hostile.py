"""Issue 35, case 9: lesson helpers given the wrong things say what the learner most likely did."""

from __future__ import annotations

import numpy as np
import pytest

from shiftvit_lib.layers import DropPath
from shiftvit_lib.notebook import checks
from shiftvit_lib.shift import shift_channels


def test_try_yours_with_the_check_second_says_the_order():
    with pytest.raises(TypeError, match=r"takes the check first: try_yours\(check_drop_path") as refused:
        checks.try_yours(DropPath, checks.check_drop_path, DropPath)
    assert "\n" not in str(refused.value)


def test_a_layer_instead_of_its_class_is_named():
    with pytest.raises(TypeError, match=r"pass the class itself \(DropPath\), not a layer") as refused:
        checks.check_drop_path(DropPath(0.1))
    assert "\n" not in str(refused.value)


def test_a_function_without_return_is_told_about_the_return():
    def my_shift(x, num_div=12, s=1):
        np.zeros(1)  # the work, but no `return`

    with pytest.raises(AssertionError, match="returned None: did you forget its `return` line"):
        checks.check_shift(my_shift)
    checks.check_shift(shift_channels)  # a written one passes
