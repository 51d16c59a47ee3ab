"""The shift operation against an independent NumPy transcription of SPACH's shift_feat."""

import numpy as np
import pytest
from fakes import run_on_backend
from hypothesis import given, settings
from hypothesis import strategies as st
from keras import ops
from reference import shift_nhwc

from shiftvit_lib.shift import keras_io_shift, no_shift, shift_channels, shift_channels_roll


@pytest.mark.parametrize("shift", [shift_channels, shift_channels_roll])
@settings(max_examples=45, deadline=None)
@given(num_div=st.integers(4, 16), height=st.integers(2, 9), width=st.integers(2, 9), batch=st.integers(1, 3),
       seed=st.integers(0, 2**16), data=st.data())
def test_the_shift_and_its_roll_variant_match_the_official_formula(shift, num_div, height, width, batch, seed, data):
    channels = data.draw(st.integers(num_div, 3 * num_div + 5))  # need not divide evenly
    shift_pixel = data.draw(st.integers(1, min(height, width) - 1))
    x = np.random.default_rng(seed).normal(size=(batch, height, width, channels)).astype("float32")
    np.testing.assert_array_equal(ops.convert_to_numpy(shift(x, num_div, shift_pixel)), shift_nhwc(x, num_div, shift_pixel))


def test_keras_io_shift_moves_nothing_and_zeroes_a_border_of_48_channels():
    x = np.random.default_rng(1).normal(size=(1, 6, 6, 192)).astype("float32") + 5.0
    y = ops.convert_to_numpy(keras_io_shift(x, num_div=12, shift_pixel=1))
    changed = np.argwhere(y != x)
    assert set(np.unique(changed[:, 3])) == set(range(48))  # 4 groups of 12, not 4 * 16
    assert np.all(y[y != x] == 0)  # changed values became zeros; nothing moved
    assert np.all(y[0, :, 5, 0:12] == 0) and np.array_equal(y[0, :, :5, 0:12], x[0, :, :5, 0:12])
    assert np.all(y[0, :, 0, 12:24] == 0) and np.array_equal(y[0, :, 1:, 12:24], x[0, :, 1:, 12:24])
    assert np.all(y[0, 5, :, 24:36] == 0) and np.all(y[0, 0, :, 36:48] == 0)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_no_shift_is_identity_and_the_shift_keeps_the_dtype(dtype):
    x = np.ones((1, 4, 4, 12), dtype)
    np.testing.assert_array_equal(ops.convert_to_numpy(no_shift(x)), x)
    assert ops.convert_to_numpy(shift_channels(x, 4)).dtype == dtype


@pytest.mark.parametrize(("shape", "num_div", "shift_pixel", "message"), [
    ((1, 4, 4, 12), 3, 1, "num_div must be >= 4"),
    ((1, 4, 4, 8), 12, 1, "8 channels but num_div is 12"),
    ((1, 4, 4, 12), 4, 0, "shift_pixel must be >= 1"),
    ((1, 4, 6, 12), 4, 4, "feature map's height"),
    ((1, 6, 3, 12), 4, 3, "feature map's width"),
    ((4, 4, 12), 4, 1, "4-D NHWC tensor"),
    ((1, 4, 4, 8), 4.0, 1, "must be a whole number"),
    ((1, 4, 4, 8), True, 1, "must be a whole number"),
    ((1, 4, 4, 8), 4, 1.5, "must be a whole number"),
])
def test_bad_arguments_raise_clear_errors(shape, num_div, shift_pixel, message):
    with pytest.raises(ValueError, match=message) as refused:
        shift_channels(np.zeros(shape, "float32"), num_div, shift_pixel)
    assert "\n" not in str(refused.value)


@pytest.mark.slow
@pytest.mark.colab  # ran in the Colab environment before it was marked slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_shift_matches_reference_on_other_backends(backend):
    script = """
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
    assert "OK" in run_on_backend(backend, script)
