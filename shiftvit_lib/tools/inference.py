"""Using a trained model: predictions on image files, evaluation helpers, saving.

* :func:`load_image` reads any image Pillow can open and resizes it.
* :func:`predict_folder` classifies every image in a folder; files that cannot
  be read are reported with a reason instead of stopping the batch.
* :func:`predict_images` / :func:`predict_probabilities` work on arrays.
* :func:`save_model`, :func:`export_saved_model`, :func:`load_model`.

The models here output LOGITS (unnormalised scores); the functions that
report confidences apply the softmax themselves.
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

import keras
import numpy as np
from PIL import Image

from shiftvit_lib.config import check_positive_int, is_positive_int
from shiftvit_lib.data import CIFAR10_CLASSES
from shiftvit_lib.images import UnsupportedImageError, decode_rgb, sniff_format
from shiftvit_lib.recipe import flip_tta_logits
from shiftvit_lib.tools.files import (  # noqa: F401 - the .keras caps are part of this module's API
    KERAS_MAX_UNPACKED_BYTES,
    KERAS_MEMBER_MAX_EXPANSION,
    KERAS_MEMBER_SLACK_BYTES,
    FileTooLargeError,
    atomic_output,
    check_keras_archive,
    escape_name,
    read_bounded,
    special_file_kind,
)

Fit = Literal["crop", "stretch"]
# Modules that register custom Keras objects; imported before loading .keras files.
# --------------------------------------------------------------------------
# Reading images
# --------------------------------------------------------------------------


class ImageReadError(ValueError):
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
        path: the image file.
        size: the output size, ``32`` or ``(height, width)``.
        fit: ``"crop"`` (default) cuts the centre to the target aspect ratio
            before resizing, so objects are not squashed; ``"stretch"``
            resizes the whole image, changing its proportions.

    Raises:
        FileNotFoundError: no such file.
        ImageReadError: (a ValueError) the file is empty, not an image, or corrupt.
    """
    path = Path(path)
    height, width = _as_height_width(size)
    if fit not in ("crop", "stretch"):
        raise ValueError(f"fit must be 'crop' or 'stretch'; got {fit!r}")
    kind = special_file_kind(path, follow_links=True)  # a path given explicitly may be a link
    if kind == "missing":
        raise FileNotFoundError(f"no image file at {escape_name(path)}")
    if kind is not None:
        raise ImageReadError(path, f"not a regular file: {kind}; not opened")
    data = _read_bounded(path, MAX_IMAGE_BYTES)
    if not data:
        raise ImageReadError(path, "empty file (0 bytes)")
    if sniff_format(data) is None:
        raise ImageReadError(path, _unidentified_reason(path, data))
    try:
        rgb, _ = decode_rgb(data)
    except UnsupportedImageError as error:
        raise ImageReadError(path, str(error)) from None
    return np.asarray(_resize(rgb, width, height, fit), dtype=np.uint8)


# An image file larger than this is refused before it is read (a 24-megapixel JPEG is ~10 MB).
MAX_IMAGE_BYTES = 64 * 2**20


def _read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of a regular file, refusing one larger than ``limit`` before reading it."""
    try:
        return read_bounded(path, limit, "an image")
    except FileTooLargeError as error:
        raise ImageReadError(
            path,
            f"file too large ({error.size / 2**20:.1f} MiB; the limit for an "
            f"image is {limit / 2**20:.0f} MiB)",
        ) from None


def _as_height_width(size: int | tuple[int, int]) -> tuple[int, int]:
    pair = (size, size) if isinstance(size, (int, np.integer)) else tuple(size)
    if len(pair) != 2 or not all(is_positive_int(v) for v in pair):
        raise ValueError(f"size must be a positive int or (height, width); got {size!r}")
    return int(pair[0]), int(pair[1])


def _resize(image: Image.Image, width: int, height: int, fit: Fit) -> Image.Image:
    """Resize with Lanczos (sharp, little aliasing); crop the centre first if asked."""
    if image.size == (width, height):
        return image  # keep the exact pixels of images already at the model size
    box = (0.0, 0.0, float(image.width), float(image.height))
    if fit == "crop":
        scale = min(image.width / width, image.height / height)
        crop_w, crop_h = width * scale, height * scale
        left, top = (image.width - crop_w) / 2, (image.height - crop_h) / 2
        box = (left, top, left + crop_w, top + crop_h)
    # reducing_gap first shrinks big photos by an integer factor (fast, same quality).
    return image.resize((width, height), Image.Resampling.LANCZOS, box=box, reducing_gap=3.0)


def _unidentified_reason(path: Path, data: bytes) -> str:
    """Say what a file Pillow cannot identify looks like."""
    extension = f" despite its {path.suffix} extension" if path.suffix else ""
    head = data[:200]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and all(ch.isprintable() or ch in "\r\n\t" for ch in text):
        snippet = text.strip().splitlines()[0][:40] if text.strip() else ""
        return f"not an image{extension}: it is a text file (starts with {snippet!r})"
    return f"not an image{extension}: unknown or unsupported format"


# --------------------------------------------------------------------------
# Predictions
# --------------------------------------------------------------------------


class ClassScore(NamedTuple):
    """One candidate class for one image."""

    label: str
    class_index: int
    confidence: float  # softmax probability in [0, 1]


TopK = tuple[ClassScore, ...]


@dataclasses.dataclass(frozen=True)
class FilePrediction:
    """The top-k classes for one file, most likely first."""

    path: Path
    top_k: TopK

    @property
    def filename(self) -> str:
        return self.path.name

    @property
    def label(self) -> str:
        return self.top_k[0].label

    @property
    def confidence(self) -> float:
        return self.top_k[0].confidence


@dataclasses.dataclass(frozen=True)
class UnreadableFile:
    """A file ``predict_folder`` skipped, and why."""

    path: Path
    reason: str


@dataclasses.dataclass(frozen=True)
class FolderPredictions:
    """What :func:`predict_folder` returns. ``print()`` it for a table."""

    folder: Path
    predictions: tuple[FilePrediction, ...]
    failures: tuple[UnreadableFile, ...]

    def to_rows(self) -> list[dict[str, Any]]:
        """One dict per file (predictions, then failures); JSON-ready, or for ``pandas.DataFrame``."""
        rows: list[dict[str, Any]] = [
            {
                "file": p.filename,
                "prediction": p.label,
                "confidence": p.confidence,
                "top_k": ", ".join(f"{s.label} {s.confidence:.0%}" for s in p.top_k),
                "error": "",
            }
            for p in self.predictions
        ]
        rows += [
            {"file": f.path.name, "prediction": "", "confidence": None, "top_k": "", "error": f.reason}
            for f in self.failures
        ]
        return rows

    def format(self) -> str:
        """A plain-text table of predictions, followed by the unreadable files."""
        lines = [f"{len(self.predictions)} image(s) classified in {escape_name(self.folder)}"]
        if self.predictions:
            # Names are escaped: a newline in a file name cannot forge a row, nor an escape code
            # reach the terminal.
            width = max(len(escape_name(p.filename)) for p in self.predictions)
            label_width = max(len(s.label) for p in self.predictions for s in p.top_k)
            for p in self.predictions:
                scores = "  ".join(
                    f"{escape_name(s.label):<{label_width}} {s.confidence:6.1%}" for s in p.top_k
                )
                lines.append(f"  {escape_name(p.filename):<{width}}  {scores}")
        if self.failures:
            lines.append(f"{len(self.failures)} file(s) could not be read:")
            width = max(len(escape_name(f.path.name)) for f in self.failures)
            lines += [
                f"  {escape_name(f.path.name):<{width}}  {escape_name(f.reason)}" for f in self.failures
            ]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython/Jupyter shows the table when the result ends a cell."""
        printer.text(self.format())


def predict_folder(
    model: keras.Model,
    folder: str | Path,
    top_k: int = 3,
    class_names: Sequence[str] = CIFAR10_CLASSES,
    batch_size: int = 64,
    *,
    image_size: int | tuple[int, int] | None = None,
    fit: Fit = "crop",
    tta: bool = False,
) -> FolderPredictions:
    """Classify every image file in ``folder`` (sorted by name, not recursive).

    Hidden files (names starting with ".") and sub-folders are skipped. Symbolic
    links, named pipes, sockets and devices are listed in ``result.failures``
    without being opened (a pipe could block forever). Each
    image is resized to the model's input size (``model.input_shape``, or
    ``image_size`` when the model does not fix it). A file that cannot be read
    is listed in ``result.failures`` with the reason; it never stops the batch.
    ``tta=True`` scores each image together with its mirror image (:func:`predict_probabilities`).
    """
    folder = Path(folder)
    if not folder.exists():
        raise FileNotFoundError(f"folder {folder} does not exist")
    if not folder.is_dir():
        raise ValueError(
            f"{folder} is a file, not a folder; use load_image() and predict_images() for a single image"
        )
    _check_top_k(top_k, len(class_names))
    height, width = _as_height_width(image_size) if image_size else model_image_size(model)
    try:
        entries = sorted((p for p in folder.iterdir() if not p.name.startswith(".")), key=lambda p: p.name)
    except PermissionError as error:
        raise PermissionError(
            error.errno, f"cannot list the folder {folder} ({error.strerror})", str(folder)
        ) from None
    files = [p for p in entries if special_file_kind(p) != "a folder"]
    if not files:
        raise ValueError(
            f"folder {folder} has no files to classify (hidden files and sub-folders are skipped)"
        )

    images, readable, failures = [], [], []
    for path in files:
        kind = special_file_kind(path)
        if kind is not None:  # a link, pipe, socket or device: reported, never opened
            failures.append(UnreadableFile(path, f"not a regular file: {kind}"))
            continue
        try:
            images.append(load_image(path, (height, width), fit=fit))
            readable.append(path)
        except ImageReadError as error:
            failures.append(UnreadableFile(path, error.reason))
        except OSError as error:  # e.g. permission denied
            failures.append(UnreadableFile(path, f"cannot open the file ({error.strerror or error})"))
    top = predict_images(model, np.stack(images), top_k, class_names, batch_size, tta=tta) if images else []
    return FolderPredictions(
        folder=folder,
        predictions=tuple(FilePrediction(p, t) for p, t in zip(readable, top, strict=True)),
        failures=tuple(failures),
    )


def predict_images(
    model: keras.Model,
    images: np.ndarray,
    top_k: int = 3,
    class_names: Sequence[str] = CIFAR10_CLASSES,
    batch_size: int = 64,
    *,
    tta: bool = False,
) -> list[TopK]:
    """Top-k classes with softmax confidences for a batch of images.

    ``images`` has shape (N, H, W, 3) with pixel values in [0, 255] (uint8 is
    best), at the model's input size. Returns one tuple of
    :class:`ClassScore` per image, most likely first.
    """
    _check_top_k(top_k, len(class_names))
    check_positive_int(batch_size, "batch_size")
    probabilities = predict_probabilities(model, images, batch_size, tta=tta)
    if probabilities.shape[1] != len(class_names):
        raise ValueError(
            f"the model outputs {probabilities.shape[1]} scores per image but "
            f"{len(class_names)} class names were given"
        )
    best_first = np.argsort(-probabilities, axis=1, kind="stable")[:, :top_k]
    return [
        tuple(ClassScore(class_names[i], int(i), float(row_probs[i])) for i in row_best)
        for row_probs, row_best in zip(probabilities, best_first, strict=True)
    ]


def predict_probabilities(
    model: keras.Model, images: np.ndarray, batch_size: int = 64, *, tta: bool = False
) -> np.ndarray:
    """Softmax probabilities, shape (N, num_classes), for images in [0, 255].

    ``tta=True`` averages the logits of each image and of its mirror image first
    (:func:`shiftvit_lib.recipe.flip_tta_logits`).
    """
    check_positive_int(batch_size, "batch_size")
    images = np.asarray(images)
    if images.ndim == 3 and images.shape[-1] != 3:
        raise ValueError(
            f"images have shape {images.shape}: no colour axis. For a batch of grey images "
            "repeat them to 3 channels: np.repeat(images[..., None], 3, axis=-1)"
        )
    if images.ndim == 3:
        images = images[np.newaxis]  # a single image
    if images.ndim != 4 or images.shape[-1] != 3 or len(images) == 0:
        raise ValueError(f"images must have shape (N, height, width, 3) with N >= 1; got {images.shape}")
    if np.issubdtype(images.dtype, np.integer) and images.size and (images.max() > 255 or images.min() < 0):
        raise ValueError(
            f"pixel values must lie in [0, 255], got {images.min()}..{images.max()} "
            f"({images.dtype}); 16-bit images: divide by 257 (or load them with load_image)"
        )
    expected = _fixed_input_size(model)
    if expected and images.shape[1:3] != expected:
        raise ValueError(
            f"images are {images.shape[1]}x{images.shape[2]} but the model takes "
            f"{expected[0]}x{expected[1]}; resize them with load_image(path, "
            f"{expected}) or predict_folder()"
        )
    if np.issubdtype(images.dtype, np.floating) and not np.isfinite(images).all():
        bad = int((~np.isfinite(images)).any(axis=(1, 2, 3)).sum())
        raise ValueError(
            f"{bad} of {len(images)} images hold NaN or infinite pixel values; "
            "pixels must be numbers in [0, 255]"
        )
    if np.issubdtype(images.dtype, np.floating) and 0 < images.max() <= 1.0:
        warnings.warn(
            "images look scaled to [0, 1], but the model expects pixel values in "
            "[0, 255] (it rescales inside); multiply by 255 or pass uint8 images",
            stacklevel=2,
        )

    def logits_of(batch: np.ndarray) -> np.ndarray:
        return np.asarray(model.predict(batch, batch_size=batch_size, verbose=0), dtype=np.float64)

    logits = flip_tta_logits(logits_of, images) if tta else logits_of(images)
    if logits.ndim != 2:
        raise ValueError(f"expected the model to output (N, num_classes) logits; got {logits.shape}")
    if np.all(logits >= 0) and np.allclose(logits.sum(axis=1), 1.0, atol=1e-4):
        warnings.warn(
            "the model's outputs already look like probabilities; these helpers expect "
            "logits and apply softmax themselves, which flattens probabilities. "
            "Remove the model's final softmax.",
            stacklevel=2,
        )
    return softmax(logits).astype(np.float32)


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax; subtracting the row max avoids overflow in exp."""
    shifted = logits - logits.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=-1, keepdims=True)


def model_image_size(model: keras.Model) -> tuple[int, int]:
    """(height, width) the model takes, from ``model.input_shape``."""
    size = _fixed_input_size(model)
    if size is None:
        raise ValueError(
            f"cannot tell the model's image size from its input_shape "
            f"{getattr(model, 'input_shape', None)}; pass image_size=(height, width)"
        )
    return size


def _fixed_input_size(model: keras.Model) -> tuple[int, int] | None:
    shape = getattr(model, "input_shape", None)
    if not isinstance(shape, tuple) or len(shape) != 4 or shape[1] is None or shape[2] is None:
        return None
    return int(shape[1]), int(shape[2])


def _check_top_k(top_k: int, num_classes: int) -> None:
    if not is_positive_int(top_k) or top_k > num_classes:
        raise ValueError(
            f"top_k must be an integer from 1 to {num_classes} (the number of classes); got {top_k!r}"
        )


# --------------------------------------------------------------------------
# Saving and loading
# --------------------------------------------------------------------------


def save_model(model: keras.Model, path: str | Path) -> Path:
    """Save the whole model (architecture, weights, optimizer) as a ``.keras`` file."""
    path = Path(path)
    if path.suffix != ".keras":
        raise ValueError(
            f"save_model writes the Keras format, so the path must end in .keras; "
            f"got {path.name}. For a TensorFlow SavedModel use export_saved_model()."
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_output(path) as partial:  # never half a file, never written through a link
        model.save(partial)
    return path


def export_saved_model(model: keras.Model, path: str | Path) -> Path:
    """Export an inference-only TensorFlow SavedModel directory (endpoint ``serve``).

    Serving tools (TF Serving, TFLite converters) read this format. Needs the
    TensorFlow backend.
    """
    _require_tensorflow_backend("export_saved_model")
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{path} is an existing file; a SavedModel is a directory")
    model.export(str(path), format="tf_saved_model", verbose=False)
    return path


class ModelLoadError(ValueError):
    """A ``.keras`` file that Keras could not load.

    ``reason`` is this library's explanation and what to do (stable text, for
    lessons and logs); the message adds Keras' own error, whose wording changes
    between Keras releases.
    """

    def __init__(self, path: Path, reason: str, cause: BaseException) -> None:
        # Keras' message may quote whole weight arrays: its first 300 characters, on one line.
        said = " ".join(str(cause).split())
        said = said if len(said) <= 300 else said[:300] + " ..."
        super().__init__(f"could not load {escape_name(path)} ({type(cause).__name__}: {said}). {reason}")
        self.path = path
        self.reason = reason


class UntrustedModelError(ValueError):
    """A model format that runs code when loaded was given without the trust switch."""


def load_model(path: str | Path, *, trust_saved_model: bool = False) -> keras.Model:
    """Load a ``.keras`` file (safe mode) or, if you trust it, a SavedModel directory.

    A ``.keras`` file always loads in Keras' safe mode: it refuses Python code
    stored in the file (a ``Lambda`` layer's lambda, for example).

    A TensorFlow SavedModel is a compiled TensorFlow graph, and loading and calling
    it runs whatever that graph does; its ops can read and write files, for
    instance. Keras' safe mode cannot check it, so it loads only with
    ``trust_saved_model=True`` (command line: ``--trust-saved-model``): pass it for
    a SavedModel you exported yourself or got from a source you trust. Otherwise
    :class:`UntrustedModelError` (a ``ValueError``) says so. The SavedModel is
    wrapped in a Keras model around ``keras.layers.TFSMLayer`` so ``model.predict``
    and :func:`predict_folder` work the same; it is inference only.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no model at {path}")
    if path.is_dir():
        if (path / "saved_model.pb").is_file():
            if not trust_saved_model:
                raise UntrustedModelError(
                    f"{path} is a TensorFlow SavedModel: loading it runs the TensorFlow graph it "
                    "contains, which Keras' safe mode cannot check. Load it only if you exported it "
                    "yourself or trust its source: load_model(path, trust_saved_model=True), or "
                    "--trust-saved-model on the command line. A .keras file loads safely without it."
                )
            return _load_saved_model(path)
        raise ValueError(
            f"{path} is a directory without saved_model.pb: expected a .keras file or a SavedModel directory"
        )
    if path.suffix != ".keras":
        raise ValueError(f"expected a .keras file or a SavedModel directory; got {path.name}")
    kind = special_file_kind(path, follow_links=True)
    if kind is not None:
        raise ValueError(f"{escape_name(path)} is {kind}, not a regular file; expected a .keras file")
    if not zipfile.is_zipfile(path):
        raise ValueError(
            f"{path} is not a valid .keras file (a .keras file is a zip archive); "
            "it is corrupt or truncated. Save it again with save_model()."
        )
    check_keras_archive(path)
    # The custom layers are registered (importing this module imported the package's core);
    # safe_mode refuses to run code embedded in the file (e.g. lambdas).
    failures = (ValueError, TypeError, KeyError, OSError, zipfile.BadZipFile, RecursionError)
    try:
        return keras.saving.load_model(path, safe_mode=True)
    except failures as error:
        if "Could not locate class" in str(error):
            # A training set-up this version no longer has (runs before issue 34 saved their own
            # smoothed loss): the model itself still loads, uncompiled, and predicts the same.
            with contextlib.suppress(*failures):
                return keras.saving.load_model(path, safe_mode=True, compile=False)
        raise ModelLoadError(path, _load_failure_hint(str(error)), error) from error


def check_classifier(model: keras.Model, num_classes: int = len(CIFAR10_CLASSES)) -> None:
    """Raise ``ValueError`` unless ``model`` maps one image batch to ``num_classes`` logits.

    Checked before a model is used for :func:`predict_folder` or an evaluation, so
    a model of another task fails with one clear sentence instead of deep inside NumPy.
    """
    shape = getattr(model, "output_shape", None)
    if isinstance(shape, list) or (isinstance(shape, tuple) and shape and isinstance(shape[0], tuple)):
        raise ValueError(
            f"the model has {len(shape)} outputs; expected one output of {num_classes} class scores (logits)"
        )
    if isinstance(shape, dict):
        raise ValueError(
            f"the model has outputs {sorted(shape)}; expected one output of {num_classes} "
            "class scores (logits)"
        )
    if not isinstance(shape, tuple) or len(shape) != 2 or shape[1] != num_classes:
        raise ValueError(
            f"the model outputs shape {shape}, but a CIFAR-10 classifier outputs "
            f"(batch, {num_classes}) class scores; is it the right model file?"
        )


def _load_failure_hint(message: str) -> str:
    """What to do about a failed ``.keras`` load, judged from Keras' error message."""
    lowered = message.lower()
    if "safe_mode" in lowered or "lambda" in lowered:
        return (
            "The file contains Python code (for example a Lambda layer) that safe mode refuses "
            "to run. Only if you trust where the file came from, load it with "
            "keras.saving.load_model(path, safe_mode=False)."
        )
    if (
        "could not locate" in lowered
        or "unknown layer" in lowered
        or "register_keras_serializable" in lowered
    ):
        return (
            "The file uses a custom class that Keras does not know: import the module that "
            "defines it (decorated with @keras.saving.register_keras_serializable) before loading."
        )
    return "Is it a complete .keras file written by save_model()/model.save()?"


def _load_saved_model(path: Path) -> keras.Model:
    _require_tensorflow_backend("loading a SavedModel")
    try:
        layer = keras.layers.TFSMLayer(str(path), call_endpoint="serve")
        spec, as_list = _serving_input_spec(layer.call_endpoint_fn)
    # TensorFlow raises many error types (protobuf DecodeError, OpError...) for a bad
    # SavedModel; all mean the same thing to the caller.
    except Exception as error:  # noqa: BLE001
        raise ValueError(
            f"could not load the SavedModel at {path} ({type(error).__name__}: "
            f"{error}). Export it again with export_saved_model()."
        ) from error
    inputs = keras.Input(shape=tuple(spec.shape[1:]), dtype=spec.dtype.name)
    return keras.Model(inputs, layer([inputs] if as_list else inputs), name=f"saved_model_{path.name}")


def _serving_input_spec(endpoint: Any) -> tuple[Any, bool]:
    """The one image ``TensorSpec`` of a serving endpoint, and whether it takes a list.

    The signature's structure depends on the Keras version that exported the model:
    ``(TensorSpec,)`` for a freshly built model, ``([TensorSpec],)`` for one that was
    loaded from a ``.keras`` file by Keras 3.10 (TensorFlow 2.19, Colab's set).
    """
    import tensorflow as tf

    functions = getattr(endpoint, "concrete_functions", None) or [endpoint]
    args, kwargs = functions[0].structured_input_signature
    specs = [s for s in tf.nest.flatten((args, kwargs)) if isinstance(s, tf.TensorSpec)]
    if len(specs) != 1:
        raise ValueError(f"the serving endpoint takes {len(specs)} tensors; expected one batch of images")
    return specs[0], bool(args) and isinstance(args[0], (list, tuple))


class BackendError(RuntimeError):
    """The operation needs another Keras backend than the one in use."""


def _require_tensorflow_backend(what: str) -> None:
    backend = keras.backend.backend()
    if backend != "tensorflow":
        raise BackendError(
            f"{what} needs the TensorFlow backend, but Keras uses {backend!r}. "
            "Save a .keras file with save_model() instead, or run with "
            "KERAS_BACKEND=tensorflow."
        )
