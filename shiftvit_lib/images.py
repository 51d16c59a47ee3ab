"""One way to turn image bytes into RGB pixels, shared by training data and predictions.

Pillow opens whatever a file *is*, whatever its name says: a PostScript file named ``.png`` would
reach Ghostscript, a SPIDER file named ``.jpg`` an obscure decoder. So the format is decided by the
file's first bytes, only PNG and JPEG are opened, and the pixel count is checked before decoding.
Training (the class-folder loader) and prediction (``load_image``) both call :func:`decode_rgb`, so
a 16-bit PNG, a palette or a transparent pixel becomes the same RGB value in both.
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageOps

from shiftvit_lib.config import InputError

# What the project reads, recognised by the file's first bytes (its "magic number").
SIGNATURES = {"PNG": b"\x89PNG\r\n\x1a\n", "JPEG": b"\xff\xd8\xff"}
# Image formats refused by name, told by their first bytes (a WebP file by its bytes 8-11).
REFUSED_FORMATS = {b"BM": "BMP", b"GIF8": "GIF", b"II*\x00": "TIFF", b"MM\x00*": "TIFF"}
# Refused before decoding: a 20-megapixel photo is fine, a 40,000 x 40,000 PNG of a few kB is not.
MAX_PIXELS = 40_000_000


class UnsupportedImageError(InputError):
    """Image bytes this project does not decode; the message says why, in one line."""


def sniff_format(data: bytes) -> str | None:
    """``"PNG"`` or ``"JPEG"`` from the first bytes, or None for anything else."""
    return next((name for name, magic in SIGNATURES.items() if data.startswith(magic)), None)


def refusal(data: bytes) -> str:
    """Why bytes that are not PNG or JPEG are refused, in one line that names a known image format."""
    webp = data.startswith(b"RIFF") and data[8:12] == b"WEBP"
    name = (
        "WebP" if webp else next((n for magic, n in REFUSED_FORMATS.items() if data.startswith(magic)), None)
    )
    what = f"a {name} image" if name else "not a PNG or JPEG image by its content"
    return f"{what}: only PNG and JPEG are read; convert it to PNG or JPEG"


class WrongImageSizeError(UnsupportedImageError):
    """An image whose header gives another size than the one asked for (found before decoding)."""

    def __init__(self, size: tuple[int, int], expected: tuple[int, int]) -> None:
        super().__init__(f"{size[0]}x{size[1]} pixels, expected {expected[0]}x{expected[1]}")
        self.size = size


def decode_rgb(
    data: bytes, *, max_pixels: int = MAX_PIXELS, expected_size: tuple[int, int] | None = None
) -> tuple[Image.Image, str]:
    """Decode PNG or JPEG bytes to an 8-bit RGB image; also return the format's name.

    ``expected_size`` (width, height), if given, is checked on the header, before decoding.

    Raises:
        UnsupportedImageError: not PNG or JPEG by content, too many pixels, or data that does not
            decode completely (truncated, corrupt); :class:`WrongImageSizeError` for another size
            than ``expected_size``.
    """
    image_format = sniff_format(data)
    if image_format is None:
        raise UnsupportedImageError(refusal(data))
    try:
        with Image.open(io.BytesIO(data), formats=[image_format]) as image:
            if expected_size is not None and image.size != tuple(expected_size):
                raise WrongImageSizeError(image.size, tuple(expected_size))
            if image.width * image.height > max_pixels:
                raise UnsupportedImageError(
                    f"{image.width}x{image.height} pixels is more than the "
                    f"{max_pixels:,} this project decodes; shrink the image first"
                )
            image.load()  # decode everything now, so truncated data fails here
            # The EXIF orientation of photos applied (training images have none).
            return to_rgb(ImageOps.exif_transpose(image)), image_format
    except UnsupportedImageError:
        raise
    except Image.DecompressionBombError:  # Pillow's own cap, hit when the header claims billions
        raise UnsupportedImageError(
            f"more pixels than the {max_pixels:,} this project decodes; shrink the image first"
        ) from None
    except Exception as error:  # noqa: BLE001 - any decoder failure is a bad file, reported in one line
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise UnsupportedImageError(f"corrupt or truncated {image_format} data ({reason})") from None


def to_rgb(image: Image.Image) -> Image.Image:
    """Any Pillow mode as 8-bit RGB: 16-bit scaled (not clipped), transparency composited on white."""
    if image.mode in ("I", "I;16", "I;16B", "I;16L"):
        # 16-bit grey, scaled in bands of rows, no wide float copy: round(v / 257) is (v + 128) // 257.
        grey = np.empty((image.height, image.width), dtype=np.uint8)
        for top in range(0, image.height, 256):
            band = np.asarray(image.crop((0, top, image.width, min(top + 256, image.height))))
            grey[top : top + len(band)] = (np.clip(band, 0, 65535).astype(np.uint32) + 128) // 257
        image = Image.fromarray(grey, mode="L")
    has_alpha = "A" in image.getbands() or "a" in image.getbands()
    if has_alpha or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    return image.convert("RGB")
