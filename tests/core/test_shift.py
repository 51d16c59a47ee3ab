"""The shift operation against an independent NumPy transcription of SPACH's shift_feat."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from keras import ops
from reference import shift_nhwc

from shiftvit_lib.shift import keras_io_shift, no_shift, shift_channels, shift_channels_roll


@st.composite
def shift_cases(draw):
    num_div = draw(st.integers(4, 16))
    channels = draw(st.integers(num_div, 3 * num_div + 5))  # need not divide evenly
    height = draw(st.integers(2, 9))
    width = draw(st.integers(2, 9))
    shift_pixel = draw(st.integers(1, min(height, width) - 1))
    batch = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**16))
    x = np.random.default_rng(seed).normal(size=(batch, height, width, channels)).astype("float32")
    return x, num_div, shift_pixel


@settings(max_examples=60, deadline=None)
@given(shift_cases())
def test_shift_channels_matches_official_formula(case):
    x, num_div, shift_pixel = case
    got = ops.convert_to_numpy(shift_channels(x, num_div, shift_pixel))
    np.testing.assert_array_equal(got, shift_nhwc(x, num_div, shift_pixel))


@settings(max_examples=30, deadline=None)
@given(shift_cases())
def test_roll_and_mask_variant_matches_official_formula(case):
    x, num_div, shift_pixel = case
    got = ops.convert_to_numpy(shift_channels_roll(x, num_div, shift_pixel))
    np.testing.assert_array_equal(got, shift_nhwc(x, num_div, shift_pixel))


def test_toy_tensor_moves_in_the_documented_directions():
    # One channel per group (num_div=4): a single 1 in the middle of a 3x3 map.
    x = np.zeros((1, 3, 3, 4), "float32")
    x[0, 1, 1, :] = 1.0
    y = ops.convert_to_numpy(shift_channels(x, num_div=4))
    assert y[0, 1, 0, 0] == 1  # left
    assert y[0, 1, 2, 1] == 1  # right
    assert y[0, 0, 1, 2] == 1  # up
    assert y[0, 2, 1, 3] == 1  # down
    assert y.sum() == 4


def test_only_four_groups_change_and_the_rest_is_untouched():
    x = np.random.default_rng(0).normal(size=(2, 6, 6, 96)).astype("float32")
    y = ops.convert_to_numpy(shift_channels(x, num_div=12))
    np.testing.assert_array_equal(y[..., 32:], x[..., 32:])  # 4 * (96 // 12) = 32 moved
    assert not np.array_equal(y[..., :32], x[..., :32])


def test_keras_io_shift_moves_nothing_and_zeroes_a_border_of_48_channels():
    x = np.random.default_rng(1).normal(size=(1, 6, 6, 192)).astype("float32") + 5.0
    y = ops.convert_to_numpy(keras_io_shift(x, num_div=12, shift_pixel=1))
    changed = np.argwhere(y != x)
    assert set(np.unique(changed[:, 3])) == set(range(48))  # 4 groups of 12, not 4 * 16
    assert np.all(y[y != x] == 0)  # changed values became zeros; nothing moved
    assert np.all(y[0, :, 5, 0:12] == 0) and np.array_equal(y[0, :, :5, 0:12], x[0, :, :5, 0:12])
    assert np.all(y[0, :, 0, 12:24] == 0) and np.array_equal(y[0, :, 1:, 12:24], x[0, :, 1:, 12:24])
    assert np.all(y[0, 5, :, 24:36] == 0) and np.all(y[0, 0, :, 36:48] == 0)


def test_no_shift_is_identity():
    x = np.ones((1, 3, 3, 12), "float32")
    np.testing.assert_array_equal(ops.convert_to_numpy(no_shift(x)), x)


@pytest.mark.parametrize(
    "shape, num_div, shift_pixel, message",
    [
        ((1, 4, 4, 12), 3, 1, "num_div must be >= 4"),
        ((1, 4, 4, 8), 12, 1, "8 channels but num_div is 12"),
        ((1, 4, 4, 12), 4, 0, "shift_pixel must be >= 1"),
        ((1, 4, 6, 12), 4, 4, "feature map's height"),
        ((1, 6, 3, 12), 4, 3, "feature map's width"),
        ((4, 4, 12), 4, 1, "4-D NHWC tensor"),
    ],
)
def test_bad_arguments_raise_clear_errors(shape, num_div, shift_pixel, message):
    with pytest.raises(ValueError, match=message):
        shift_channels(np.zeros(shape, "float32"), num_div, shift_pixel)


def test_shift_preserves_dtype():
    x = np.ones((1, 4, 4, 12), "float16")
    assert ops.convert_to_numpy(shift_channels(x, 4)).dtype == np.float16


def _backend_available(name):
    import importlib.util

    return importlib.util.find_spec({"jax": "jax", "torch": "torch"}[name]) is not None


@pytest.mark.slow
@pytest.mark.colab  # ran in the Colab environment before it was marked slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_shift_matches_reference_on_other_backends(backend):
    if not _backend_available(backend):
        pytest.skip(f"{backend} is not installed")
    script = textwrap.dedent(
        """
        import numpy as np
        from keras import ops
        from reference import shift_nhwc
        from shiftvit_lib.shift import shift_channels, shift_channels_roll
        rng = np.random.default_rng(0)
        for shape, n, s in [((2, 5, 7, 30), 12, 1), ((1, 6, 6, 13), 4, 2)]:
            x = rng.normal(size=shape).astype("float32")
            for fn in (shift_channels, shift_channels_roll):
                np.testing.assert_array_equal(ops.convert_to_numpy(fn(x, n, s)), shift_nhwc(x, n, s))
        print("OK")
        """
    )
    tests_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "KERAS_BACKEND": backend, "PYTHONPATH": os.pathsep.join([tests_dir, os.path.dirname(tests_dir)])}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "OK" in result.stdout, result.stderr[-2000:]


@pytest.mark.parametrize("arguments", [dict(num_div=4.0), dict(num_div=True), dict(shift_pixel=1.5)])
def test_the_shift_refuses_counts_that_are_not_whole_numbers(arguments):
    x = np.zeros((1, 4, 4, 8), "float32")
    with pytest.raises(ValueError, match="must be a whole number") as refused:
        shift_channels(x, **{"num_div": 4, **arguments})
    assert "\n" not in str(refused.value)
