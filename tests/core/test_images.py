"""One decoder for training and prediction: PNG and JPEG by content, a pixel cap, the same RGB."""

from __future__ import annotations

import io
import random
import re
import tracemalloc

import numpy as np
import pytest
from fakes import encoded
from PIL import Image

from shiftvit_lib.images import MAX_PIXELS, UnsupportedImageError, decode_rgb

POSTSCRIPT = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 32 32\nnewpath 0 0 moveto 32 32 lineto stroke\nshowpage\n"


PIXELS = np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8)
HIDDEN_RED = np.zeros((4, 4, 4), dtype=np.uint8)
HIDDEN_RED[..., 0] = 255  # red under full transparency
OTHER_FORMAT = "a {} image: only PNG and JPEG are read; convert it to PNG or JPEG"


@pytest.mark.parametrize(("image", "fmt", "expected"), [
    (Image.fromarray(PIXELS), "PNG", PIXELS),
    (Image.fromarray(PIXELS), "JPEG", None),  # lossy: its shape only
    (Image.fromarray(HIDDEN_RED, "RGBA"), "PNG", np.full((4, 4, 3), 255)),  # transparent pixels become white
])
def test_png_and_jpeg_decode_to_rgb(image, fmt, expected):
    rgb, found = decode_rgb(encoded(image, fmt))
    assert found == fmt and rgb.mode == "RGB" and np.asarray(rgb).shape == (*image.size[::-1], 3)
    assert expected is None or np.array_equal(np.asarray(rgb), expected)


@pytest.mark.parametrize(("data", "message"), [
    *[(encoded(Image.new("RGB", (8, 8), (10, 20, 30)), fmt), OTHER_FORMAT.format(name))
      for fmt, name in [("GIF", "GIF"), ("BMP", "BMP"), ("TIFF", "TIFF"), ("WEBP", "WebP")]],
    (POSTSCRIPT, "not a PNG or JPEG image by its content"),  # a PostScript file named .png
    (b"\x89PNG\r\n\x1a\n" + POSTSCRIPT, "corrupt or truncated PNG"),  # a PNG signature on PostScript
    (encoded(Image.new("RGB", (32, 32), (1, 2, 3)), "PNG")[:60], "corrupt or truncated PNG"),
])
def test_what_is_not_a_whole_png_or_jpeg_is_refused_before_any_decoder_runs_it(data, message, monkeypatch):
    from PIL import EpsImagePlugin

    def ghostscript(*args, **kwargs):  # what Pillow would run for a PostScript file
        raise AssertionError("Ghostscript was started")

    monkeypatch.setattr(EpsImagePlugin, "Ghostscript", ghostscript)
    with pytest.raises(UnsupportedImageError, match=re.escape(message)):
        decode_rgb(data)


def test_too_many_pixels_are_refused_before_decoding():
    data = encoded(Image.new("L", (300, 200)), "PNG")  # 60,000 pixels, a few hundred bytes
    with pytest.raises(UnsupportedImageError, match="300x200 pixels"):
        decode_rgb(data, max_pixels=50_000)
    assert decode_rgb(data, max_pixels=60_000)[0].size == (300, 200)
    assert MAX_PIXELS >= 20_000_000  # a large photo still decodes


def test_fuzzed_images_decode_or_fail_with_the_projects_error():
    """Byte-flipped PNGs and JPEGs: every one decodes or raises UnsupportedImageError, nothing else."""
    rng = random.Random(0)
    pixels = np.random.default_rng(1).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    originals = [encoded(Image.fromarray(pixels), fmt) for fmt in ("PNG", "JPEG")]
    outcomes = {"decoded": 0, "refused": 0}
    for trial in range(300):
        data = bytearray(originals[trial % 2])
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.2:
            data = data[: rng.randrange(len(data))]
        try:
            decode_rgb(bytes(data))
            outcomes["decoded"] += 1
        except UnsupportedImageError:
            outcomes["refused"] += 1
    assert outcomes["decoded"] and outcomes["refused"]


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
