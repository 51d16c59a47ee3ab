"""Issue 35 in the core: decoders without wide copies (case 6), counts that must be counts (case 7)."""

from __future__ import annotations

import io
import tracemalloc

import numpy as np
import pytest
from PIL import Image

from shiftvit_lib.images import decode_rgb
from shiftvit_lib.shift import shift_channels


def test_a_16_bit_png_is_converted_without_a_wide_copy():
    # Case 6: a 16-bit PNG was converted through a float64 copy of every pixel (8 bytes a
    # pixel, and as much again for each step): 1 GB for an image under the pixel cap.
    height, width = 1500, 2000
    ramp = (np.arange(height * width, dtype=np.uint32) % 65_536).astype(np.uint16).reshape(height, width)
    buffer = io.BytesIO()
    Image.fromarray(ramp).save(buffer, format="PNG")
    tracemalloc.start()
    try:
        rgb, image_format = decode_rgb(buffer.getvalue())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert image_format == "PNG" and rgb.size == (width, height)
    pixels = height * width
    assert peak < 4 * pixels, f"{peak / pixels:.1f} bytes per pixel held by NumPy while converting"
    grey = np.asarray(rgb)[..., 0]
    assert np.array_equal(grey, np.round(ramp / 257.0).astype(np.uint8))  # the same values as before


@pytest.mark.parametrize("arguments", [dict(num_div=4.0), dict(num_div=True), dict(shift_pixel=1.5)])
def test_the_shift_refuses_counts_that_are_not_whole_numbers(arguments):
    x = np.zeros((1, 4, 4, 8), "float32")
    with pytest.raises(ValueError, match="must be a whole number") as refused:
        shift_channels(x, **{"num_div": 4, **arguments})
    assert "\n" not in str(refused.value)
