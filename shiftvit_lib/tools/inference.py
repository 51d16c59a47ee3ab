"""Using a trained model: predictions on image files, evaluation helpers, saving.

* :func:`load_image` reads a PNG or JPEG file and resizes it.
* :func:`predict_folder` classifies every image in a folder; files that cannot
  be read are reported with a reason instead of stopping the batch.
* :func:`predict_probabilities` works on arrays.
* :func:`save_model`, :func:`load_model` (``.keras`` files only).

The models here output LOGITS (unnormalised scores); the functions that
report confidences apply the softmax themselves.
"""

from __future__ import annotations

import textwrap
import warnings
from pathlib import Path
from typing import Any, Literal, NamedTuple

import keras
import numpy as np
from PIL import Image

from shiftvit_lib.config import InputError, check_whole_number
from shiftvit_lib.data import CIFAR10_CLASSES
from shiftvit_lib.images import UnsupportedImageError, decode_rgb, refusal, sniff_format
from shiftvit_lib.recipe import flip_tta_logits
from shiftvit_lib.tools import files
from shiftvit_lib.tools.files import escape_name, special_file_kind

Fit = Literal["crop", "stretch"]
# An image file larger than this is refused before it is read (a 24-megapixel JPEG is ~10 MB).
MAX_IMAGE_BYTES = 64 * 2**20
# A prediction's memory grows with the model's input, not with the file: CIFAR-10 models take 32x32.
MAX_MODEL_INPUT_PIXELS = 1024 * 1024
MAX_MODEL_PARAMETERS = 500_000_000


# --------------------------------------------------------------------------- reading images
class ImageReadError(InputError):
    """A file exists but is not a readable image; ``reason`` says why."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"cannot read {escape_name(path)}: {reason}")
        self.path = path
        self.reason = reason


def load_image(path: str | Path, size: int | tuple[int, int], *, fit: Fit = "crop") -> np.ndarray:
    """Read an image file as a uint8 RGB array of shape (height, width, 3).

    PNG and JPEG, recognised by their content (not the name): other formats are
    refused, so a file never reaches a decoder it should not (see shiftvit_lib.images).
    Grayscale, 16-bit and palette images become RGB; transparent areas are composited
    onto white (what a viewer shows); the EXIF orientation of photos is applied.

    Args:
        path: the image file (a link is followed).
        size: the output size, ``32`` or ``(height, width)``.
        fit: ``"crop"`` (default) cuts the centre to the target aspect ratio
            before resizing, so objects are not squashed; ``"stretch"``
            resizes the whole image, changing its proportions.

    Raises:
        FileNotFoundError: no such file.
        ImageReadError: (a ValueError) not a regular file, empty, too large, not an image, or corrupt.
    """
    path = Path(path)
    height, width = (size, size) if isinstance(size, (int, np.integer)) else size  # a pair, or a ValueError
    height, width = check_whole_number(height, "height"), check_whole_number(width, "width")
    if fit not in ("crop", "stretch"):
        raise InputError(f"fit must be 'crop' or 'stretch'; got {fit!r}")
    try:  # a pipe or a device is refused unopened (reading a pipe would block forever)
        data = files.read_bounded(path, MAX_IMAGE_BYTES, "an image")
        if not data:
            raise ImageReadError(path, "empty file (0 bytes)")
        if sniff_format(data) is None:
            raise ImageReadError(path, _unidentified_reason(path, data))
        rgb, _ = decode_rgb(data)
    except (files.UnsafeFileError, UnsupportedImageError) as error:
        raise ImageReadError(path, getattr(error, "reason", str(error))) from None
    return np.asarray(_resize(rgb, width, height, fit), dtype=np.uint8)


def _resize(image: Image.Image, width: int, height: int, fit: Fit) -> Image.Image:
    """Resize with Lanczos (sharp, little aliasing); crop the centre first if asked.

    An image already at the model size keeps its exact pixels: Pillow copies it unresampled.
    """
    scale = min(image.width / width, image.height / height) if fit == "crop" else None
    crop_w, crop_h = (width * scale, height * scale) if scale else image.size
    left, top = (image.width - crop_w) / 2, (image.height - crop_h) / 2
    # reducing_gap first shrinks big photos by an integer factor (fast, same quality).
    box = (left, top, left + crop_w, top + crop_h)
    return image.resize((width, height), Image.Resampling.LANCZOS, box=box, reducing_gap=3.0)


def _unidentified_reason(path: Path, data: bytes) -> str:
    """Say what a file that is neither PNG nor JPEG looks like."""
    if refusal(data).startswith("a "):  # an image format we do not read, named
        return refusal(data)
    what = f"not an image despite its {path.suffix} extension" if path.suffix else "not an image"
    text = data[:200].decode("utf-8", "replace").strip()
    if text and "\ufffd" not in text and "".join(text.split()).isprintable():
        return f"{what}: it is a text file (starts with {text.splitlines()[0][:40]!r})"
    return f"{what}: unknown or unsupported format"


# --------------------------------------------------------------------------- predictions
class ClassScore(NamedTuple):
    """One candidate class for one image."""

    label: str
    class_index: int
    confidence: float  # softmax probability in [0, 1]


class FilePrediction(NamedTuple):
    """The top-k classes for one file, most likely first."""

    path: Path
    top_k: tuple[ClassScore, ...]


class FolderPredictions(NamedTuple):
    """What :func:`predict_folder` returns. ``print()`` it for a table."""

    folder: Path
    predictions: tuple[FilePrediction, ...]
    failures: tuple[ImageReadError, ...]  # the files skipped: ``path`` and ``reason``

    def to_rows(self) -> list[dict[str, Any]]:
        """One JSON-ready dict per file: predictions (``top_k``: label, class_index, confidence), then failures."""
        rows = [{"file": p.path.name, "top_k": [s._asdict() for s in p.top_k]} for p in self.predictions]
        return rows + [{"file": f.path.name, "error": f.reason} for f in self.failures]

    def format(self) -> str:
        """A plain-text table of predictions, followed by the unreadable files.

        Names are escaped: a newline in a file name cannot forge a row, nor an escape code
        reach the terminal.
        """
        width = max((len(s.label) for p in self.predictions for s in p.top_k), default=0)
        scores = [
            "  ".join(f"{s.label:<{width}} {s.confidence:6.1%}" for s in p.top_k) for p in self.predictions
        ]
        lines = [f"{len(scores)} image(s) classified in {escape_name(self.folder)}"]
        lines += _aligned([p.path.name for p in self.predictions], scores)
        if self.failures:
            lines.append(f"{len(self.failures)} file(s) could not be read:")
            lines += _aligned([f.path.name for f in self.failures], [f.reason for f in self.failures])
        return "\n".join(lines)

    __str__ = format


def _aligned(names: list[str], texts: list[str]) -> list[str]:
    """Table rows: the names padded to one width, each followed by its text; both escaped."""
    names = [escape_name(name) for name in names]
    width = max(map(len, names), default=0)
    return [f"  {name:<{width}}  {escape_name(text)}" for name, text in zip(names, texts, strict=True)]


def predict_folder(
    model: keras.Model, folder: str | Path, top_k: int = 3, *, fit: Fit = "crop", **options: Any
) -> FolderPredictions:
    """Classify every image file in ``folder`` (sorted by name, not recursive).

    Hidden files (names starting with ".") and sub-folders are skipped. Symbolic
    links, named pipes, sockets and devices are listed in ``result.failures``
    without being opened (a pipe could block forever). Each image is resized to the
    model's input size (``model.input_shape``; ``fit`` as in :func:`load_image`). A file
    that cannot be read is listed in ``result.failures`` with the reason; it never stops
    the batch. ``options`` (``batch_size``, ``tta``) go to :func:`predict_probabilities`.
    """
    folder = Path(folder)
    check_whole_number(top_k, "top_k", 1, len(CIFAR10_CLASSES))
    check_classifier(model)
    size = _model_image_size(model)
    if size is None:
        raise InputError("the model fixes no image size: use load_image(path, size), predict_probabilities()")
    try:  # a missing folder or a file is named as a folder that cannot be listed (one line)
        paths = sorted(p for p in folder.iterdir() if p.name[0] != "." and special_file_kind(p) != "a folder")
    except OSError as error:
        raise files.folder_listing_error(error) from None
    if not paths:
        raise InputError(f"folder {folder} has no files to classify (hidden files and folders are skipped)")
    images, readable, failures = [], [], []
    for path in paths:
        try:  # a link inside the folder is reported, not followed
            files.check_regular_file(path, follow_links=False)
            images.append(load_image(path, size, fit=fit))
            readable.append(path)
        except (ImageReadError, files.UnsafeFileError, OSError) as error:  # OSError: e.g. permission denied
            reason = getattr(error, "reason", None) or f"cannot open the file ({error.strerror or error})"
            failures.append(ImageReadError(path, reason))
    probs = predict_probabilities(model, np.stack(images), **options) if images else np.zeros((0, 10))
    best_first = np.argsort(-probs, axis=1, kind="stable")[:, :top_k]
    predictions = tuple(
        FilePrediction(path, tuple(ClassScore(CIFAR10_CLASSES[i], int(i), float(row[i])) for i in best))
        for path, row, best in zip(readable, probs, best_first, strict=True)
    )
    return FolderPredictions(folder, predictions, tuple(failures))


def predict_probabilities(
    model: keras.Model, images: np.ndarray, batch_size: int = 64, *, tta: bool = False
) -> np.ndarray:
    """Softmax probabilities, shape (N, num_classes), for images in [0, 255].

    ``tta=True`` averages the logits of each image and of its mirror image first
    (:func:`shiftvit_lib.recipe.flip_tta_logits`).
    """
    check_whole_number(batch_size, "batch_size")
    images = np.asarray(images)
    images = images[np.newaxis] if images.ndim == 3 and images.shape[-1] == 3 else images  # one image
    if images.ndim != 4 or images.shape[-1] != 3 or len(images) == 0:
        grey = "; grey images: np.repeat(images[..., None], 3, axis=-1)" if images.ndim == 3 else ""
        raise InputError(f"images must have shape (N, height, width, 3), N >= 1; got {images.shape}{grey}")
    if np.issubdtype(images.dtype, np.integer) and images.size and (images.max() > 255 or images.min() < 0):
        raise InputError(f"pixels must be 0..255, not {images.min()}..{images.max()}; 16-bit: divide by 257")
    expected = _model_image_size(model)
    if expected and images.shape[1:3] != expected:
        takes = f"the model takes {expected[0]}x{expected[1]}"
        raise InputError(f"images are {images.shape[1]}x{images.shape[2]} but {takes}; resize them")
    if not np.isfinite(images).all():
        bad = int((~np.isfinite(images)).any(axis=(1, 2, 3)).sum())
        raise InputError(f"{bad} of {len(images)} images hold NaN or infinite pixel values, not [0, 255]")
    if np.issubdtype(images.dtype, np.floating) and 0 < images.max() <= 1.0:
        warnings.warn("images look scaled to [0, 1]; the model takes [0, 255]: multiply by 255", stacklevel=2)

    def logits_of(batch: np.ndarray) -> np.ndarray:
        return np.asarray(model.predict(batch, batch_size=batch_size, verbose=0), dtype=np.float64)

    logits = flip_tta_logits(logits_of, images) if tta else logits_of(images)
    return keras.ops.convert_to_numpy(keras.ops.softmax(logits)).astype(np.float32)


def _model_image_size(model: keras.Model) -> tuple[int, int] | None:
    """(height, width) the model takes, from ``model.input_shape``; None if it does not fix them."""
    shape = getattr(model, "input_shape", None)
    fixed = isinstance(shape, tuple) and len(shape) == 4 and None not in shape[1:3]
    return (int(shape[1]), int(shape[2])) if fixed else None


def check_classifier(model: keras.Model, num_classes: int = len(CIFAR10_CLASSES)) -> None:
    """Raise ``ValueError`` unless ``model`` maps one image batch to ``num_classes`` logits.

    Checked before a model is used for :func:`predict_folder` or an evaluation, so
    a model of another task (or with several outputs) fails with one clear sentence
    instead of deep inside NumPy; so does one past the caps on its input and parameters.
    """
    height, width = _model_image_size(model) or (0, 0)
    if height * width > MAX_MODEL_INPUT_PIXELS or model.count_params() > MAX_MODEL_PARAMETERS:
        found = f"takes {height}x{width} images and has {model.count_params():,} parameters"
        caps = f"past the caps (1024x1024, {MAX_MODEL_PARAMETERS:,}) of shiftvit_lib's predict"
        raise InputError(f"the model {found}, {caps}: is it the right file?")
    shape = getattr(model, "output_shape", None)
    if not (isinstance(shape, tuple) and len(shape) == 2 and shape[1] == num_classes):
        wanted = f"a CIFAR-10 classifier outputs (batch, {num_classes}) logits"  # several outputs: a list
        raise InputError(f"the model outputs shape {shape}, but {wanted}; is it the right file?")


# --------------------------------------------------------------------------- saving and loading
def save_model(model: keras.Model, path: str | Path) -> Path:
    """Save the whole model (architecture, weights, optimizer) as a ``.keras`` file."""
    path = Path(path)
    if path.suffix != ".keras":
        raise InputError(f"the path must end in .keras; got {path.name} (a SavedModel: model.export())")
    path.parent.mkdir(parents=True, exist_ok=True)
    with files.atomic_output(path) as partial:  # never half a file, never written through a link
        model.save(partial)
    return path


class ModelLoadError(InputError):
    """A ``.keras`` file that Keras could not load.

    ``reason`` is this library's explanation and what to do (stable text, for
    lessons and logs); the message adds Keras' own error, whose wording changes
    between Keras releases.
    """

    def __init__(self, path: Path, reason: str, cause: BaseException) -> None:
        # Keras' message may quote whole weight arrays: its first 300 characters, on one line.
        said = textwrap.shorten(str(cause), 300, placeholder=" ...")
        super().__init__(f"could not load {escape_name(path)} ({type(cause).__name__}: {said}). {reason}")
        self.reason = reason


def load_model(path: str | Path) -> keras.Model:
    """Load a ``.keras`` file, always in Keras' safe mode.

    Safe mode refuses Python code stored in the file (a ``Lambda`` layer's lambda, for
    example); the file first passes the caps of :func:`shiftvit_lib.tools.files.check_keras_archive`.
    A TensorFlow SavedModel folder is refused: loading one runs the graph it holds, which safe
    mode cannot check. Lesson 08 (A9) opens one you trust with ``keras.layers.TFSMLayer``.
    """
    path = Path(path)
    if path.is_dir():
        what = "a TensorFlow SavedModel folder" if (path / "saved_model.pb").exists() else "a folder"
        trusted = "open a SavedModel you trust with keras.layers.TFSMLayer (lesson 08, A9)"
        give = "shiftvit_lib loads .keras files only: give a .keras file (save_model())"
        raise InputError(f"{escape_name(path)} is {what}, and {give}; {trusted}")
    files.check_regular_file(path, "a .keras file")
    if path.suffix != ".keras":
        raise InputError(f"expected a .keras file; got {path.name}")
    files.check_keras_archive(path)
    # The custom layers are registered (importing this module imported the package's core);
    # safe_mode refuses to run code embedded in the file (e.g. lambdas).
    try:
        return keras.saving.load_model(path, safe_mode=True)
    except (ValueError, TypeError, KeyError, RecursionError, *files.ARCHIVE_ERRORS) as error:
        raise ModelLoadError(path, _load_failure_hint(str(error).lower()), error) from error


def _load_failure_hint(message: str) -> str:
    """What to do about a failed ``.keras`` load, judged from Keras' (lower-cased) error message."""
    if "safe_mode" in message or "lambda" in message:
        return (
            "The file contains Python code (e.g. a Lambda layer) that safe mode refuses to run. Only if you "
            "trust its source, load it with keras.saving.load_model(path, safe_mode=False)."
        )
    if any(hint in message for hint in ("could not locate", "unknown layer", "register_keras_serializable")):
        return (
            "The file uses a custom class that Keras does not know: import the module that defines "
            "it (with @keras.saving.register_keras_serializable) before loading."
        )
    return "Is it a complete .keras file written by save_model()/model.save()?"
