"""shiftvit_lib.tools.inference: image reading, predictions, metrics, saving and loading models."""

from __future__ import annotations

import functools
import io
import json
import os
from pathlib import Path
from unittest import mock

import fakes
import keras
import numpy as np
import pytest
from fakes import deflated_zip, finishes_within, logits_of, one_line, png_bytes, unreadable_zip, write_tree
from PIL import EpsImagePlugin, Image

import shiftvit_lib
from shiftvit_lib import build_shiftvit, preset
from shiftvit_lib.data import CIFAR10_CLASSES
from shiftvit_lib.tools import inference
from shiftvit_lib.tools.inference import load_image, load_model, predict_folder, predict_probabilities

DEMO_IMAGES = Path(shiftvit_lib.__file__).with_name("assets") / "demo_images"


@pytest.fixture(scope="module")
def model() -> keras.Model:
    """A stand-in for ShiftViT: raw [0, 255] pixels in, 10 logits out (a mirror image changes them)."""
    return fakes.left_right_sensitive_model()


def dense_model(side: int = 32, classes: int = 10, outputs: int = 1) -> keras.Model:
    """A classifier of ``side`` x ``side`` images into ``classes`` scores (``outputs`` times)."""
    inputs = keras.Input((side, side, 3))
    pooled = keras.layers.GlobalAveragePooling2D()(inputs)
    heads = [keras.layers.Dense(classes)(pooled) for _ in range(outputs)]
    return keras.Model(inputs, heads if outputs > 1 else heads[0])


def photo_like(width: int, height: int) -> Image.Image:
    """Random pixels enlarged: smooth colour fields that compress and resize like a real photo."""
    return Image.fromarray(PIXELS).resize((width, height), Image.Resampling.BICUBIC)


def save(image: Image.Image, fmt: str) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt)
    return buffer.getvalue()


# --------------------------------------------------------------------------
# load_image
# --------------------------------------------------------------------------


PIXELS = np.random.default_rng(1).integers(0, 256, (32, 32, 3), dtype=np.uint8)
# A PNG -> what load_image(path, 32) makes of it: RGB, whatever the mode (16-bit and transparent PNGs:
# tests/core/test_images.py, and test_data_sources.py's pixels as training sees them).
LOADED_AS = {
    "at the model size: exact": (Image.fromarray(PIXELS), lambda rgb: np.array_equal(rgb, PIXELS)),
    "grey": (Image.new("L", (40, 40), 100), lambda rgb: (rgb == 100).all()),
    "palette": (Image.new("RGB", (40, 40), (200, 10, 10)).convert("P"),
                lambda rgb: abs(int(rgb[0, 0, 0]) - 200) < 10 and rgb[0, 0, 1] < 20),
}


@pytest.mark.parametrize("kind", LOADED_AS)
def test_load_image_makes_any_png_uint8_rgb(tmp_path: Path, kind: str) -> None:
    image, as_expected = LOADED_AS[kind]
    image.save(tmp_path / "image.png")
    loaded = load_image(tmp_path / "image.png", 32)
    assert loaded.dtype == np.uint8 and loaded.shape == (32, 32, 3) and as_expected(loaded)


def test_crop_keeps_the_centre_and_stretch_keeps_everything(tmp_path: Path) -> None:
    stripes = np.zeros((32, 96, 3), np.uint8)
    stripes[:, :32, 0] = stripes[:, 32:64, 1] = stripes[:, 64:, 2] = 255  # red|green|blue
    Image.fromarray(stripes).save(tmp_path / "wide.png")
    cropped = load_image(tmp_path / "wide.png", 32, fit="crop")
    stretched = load_image(tmp_path / "wide.png", 32, fit="stretch")
    assert (cropped[:, :, 1] > 250).all() and (cropped[:, :, 0] < 5).all()
    assert stretched[16, 2, 0] > 250 and stretched[16, 16, 1] > 250 and stretched[16, 30, 2] > 250
    # A size not square (a large photo: predict_folder's mixed folder).
    assert load_image(tmp_path / "wide.png", (24, 40)).shape == (24, 40, 3)


# A file load_image refuses -> (its name, its bytes (None: absent), options, error, words). A named pipe
# and a truncated file: in predict_folder's mixed folder; the decoder's refusals: tests/core/test_images.py.
IMAGE_MISTAKES = {
    "missing": ("missing.png", None, {}, FileNotFoundError, "missing.png"),
    "zero height": ("empty.png", b"", {"size": (0, 32)}, ValueError, "height must be a whole number"),
    "unknown fit": ("empty.png", b"", {"fit": "squash"}, ValueError, "fit"),
    "GIF": ("other.gif", save(Image.new("RGB", (40, 40), (200, 10, 10)), "GIF"), {}, inference.ImageReadError,
            "a GIF image: only PNG and JPEG are read"),  # PNG and JPEG only
    "over the cap": ("big.png", save(photo_like(64, 64), "PNG"), {"cap": 1000}, inference.ImageReadError,
                     r"file too large \(0\.0 MiB; the limit"),
}


@pytest.mark.parametrize("mistake", IMAGE_MISTAKES)
def test_load_image_refuses_a_file_it_cannot_read(tmp_path, monkeypatch, mistake) -> None:
    name, content, options, error, words = IMAGE_MISTAKES[mistake]
    options = dict(options)
    if content is not None:
        (tmp_path / name).write_bytes(content)
    monkeypatch.setattr(inference, "MAX_IMAGE_BYTES", options.pop("cap", inference.MAX_IMAGE_BYTES))
    with pytest.raises(error, match=words):
        load_image(tmp_path / name, options.pop("size", 32), **options)


# --------------------------------------------------------------------------
# predict_folder / predict_probabilities
# --------------------------------------------------------------------------


@pytest.fixture()
def mixed_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three readable images, seven broken files, plus things that must be skipped."""
    # A PostScript file named .png is refused, never handed to Ghostscript.
    monkeypatch.setattr(EpsImagePlugin, "Ghostscript", mock.Mock(side_effect=AssertionError("Ghostscript ran")))
    good_jpeg = save(photo_like(64, 64), "JPEG")
    folder = write_tree(tmp_path / "photos", {
        "a_truncated.jpg": good_jpeg[: len(good_jpeg) // 2], "b_empty.jpg": b"", ".hidden.jpg": b"",
        "c_notes.jpg": b"this is a shopping list, not a photo\n", "d_drawing.png": b"%!PS-Adobe-3.0\nnewpath 0 0 moveto showpage\n",
        "d_noise.png": bytes(range(256)) * 4})  # an unknown binary format
    os.mkfifo(folder / "c_pipe.jpg")  # opening it for reading would block forever
    rgba = np.zeros((50, 50, 4), np.uint8)
    rgba[10:40, 10:40] = (200, 50, 50, 255)
    Image.fromarray(rgba, "RGBA").save(folder / "d_alpha.png")
    (folder / "d_link.png").symlink_to(folder / "e_gray.png")
    Image.new("L", (32, 32), 90).save(folder / "e_gray.png")
    photo_like(1000, 700).save(folder / "f_photo.jpg", quality=85)
    (folder / "subfolder").mkdir()  # sub-folders are skipped, as documented
    return folder


def test_predict_folder_reports_bad_files_predicts_the_rest_as_predict_probabilities_does(model, mixed_folder) -> None:
    result = finishes_within(60, predict_folder, model, mixed_folder)  # past every bad file; never opens the pipe
    assert [p.path.name for p in result.predictions] == ["d_alpha.png", "e_gray.png", "f_photo.jpg"]
    reasons = {f.path.name: f.reason for f in result.failures}
    words = {"a_truncated.jpg": "truncated JPEG", "b_empty.jpg": "empty file (0 bytes)", "c_notes.jpg":
             "text file (starts with 'this is a shopping list", "c_pipe.jpg": "named pipe", "d_drawing.png":
             "not an image despite its .png extension", "d_link.png": "symbolic link", "d_noise.png": "unknown or unsupported format"}
    assert list(reasons) == list(words) and all(words[name] in reasons[name] for name in words), reasons
    # A link given explicitly to load_image is followed to its regular file.
    np.testing.assert_array_equal(load_image(mixed_folder / "d_link.png", 32), load_image(mixed_folder / "e_gray.png", 32))
    # The top 3 of each image: the highest probabilities of predict_probabilities, in order.
    probabilities = predict_probabilities(model, np.stack([load_image(p.path, 32) for p in result.predictions]))
    best = np.argsort(-probabilities, axis=1)[:, :3]
    assert [[s.class_index for s in p.top_k] for p in result.predictions] == best.tolist()
    np.testing.assert_allclose([[s.confidence for s in p.top_k] for p in result.predictions],
                               np.take_along_axis(probabilities, best, axis=1), rtol=1e-6)
    assert all(p.top_k[0].label == CIFAR10_CLASSES[p.top_k[0].class_index] for p in result.predictions)
    # The table and the rows (JSON).
    text = str(result)
    assert "3 image(s) classified" in text and "7 file(s) could not be read" in text and "f_photo.jpg" in text
    rows = result.to_rows()
    assert len(rows) == 10 and rows[4] == {"file": "b_empty.jpg", "error": "empty file (0 bytes)"}
    top = result.predictions[0].top_k[0]
    assert rows[0]["top_k"][0] == {"label": top.label, "class_index": top.class_index, "confidence": top.confidence}
    assert json.loads(json.dumps(rows)) == rows


# A call predict_folder refuses -> (the folder, the model's shape, predict_folder's options, error, words).
# A model that is no 10-class classifier, or past the caps, is refused before any image is read.
FOLDER_MISTAKES = {
    "missing folder": ("missing", {}, {}, FileNotFoundError, r"cannot list the folder .*missing \(No such file"),
    "empty folder": ("empty", {}, {}, ValueError, "no files"),
    "a file": ("photos/one.png", {}, {}, NotADirectoryError, r"photos/one\.png \(Not a directory"),
    **{f"top_k={k}": ("photos", {}, {"top_k": k}, ValueError, "top_k must be a whole number from 1 to 10")
       for k in (0, 11)},
    "five classes": ("photos", {"classes": 5}, {"top_k": 1}, ValueError, r"outputs shape \(None, 5\).*\(batch, 10\)"),
    "two outputs": ("photos", {"outputs": 2}, {}, ValueError, r"outputs shape \[\(None, 10\), \(None, 10\)\]"),
    "1025x1025 input": ("photos", {"side": 1025}, {}, ValueError, "takes 1025x1025 images.*right file"),
    "40 parameters, cap 10": ("photos", {"parameter_cap": 10}, {}, ValueError, "has 40 parameters.*right file"),
}


@pytest.mark.parametrize("mistake", FOLDER_MISTAKES)
def test_predict_folder_refuses_a_bad_call_in_one_line(tmp_path, monkeypatch, mistake) -> None:
    folder, shape, options, error, words = FOLDER_MISTAKES[mistake]
    write_tree(tmp_path, {"photos/one.png": png_bytes(1)})
    (tmp_path / "empty").mkdir()
    monkeypatch.setattr(inference, "MAX_MODEL_PARAMETERS", shape.pop("parameter_cap", 500_000_000))
    with pytest.raises(error, match=words) as refused:
        predict_folder(dense_model(**shape), tmp_path / folder, **options)
    one_line(refused.value)


def softmax(logits: np.ndarray) -> np.ndarray:
    return np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)


def test_predict_probabilities_is_the_softmax_of_the_logits_also_large_ones_and_with_tta(model) -> None:
    images = np.random.default_rng(2).integers(0, 256, (5, 32, 32, 3), dtype=np.uint8)
    np.testing.assert_allclose(predict_probabilities(model, images), softmax(model.predict(images, verbose=0)),
                               rtol=1e-5)
    # With tta=True: the softmax of the mean logits of the image and its mirror image.
    mean_logits = (model.predict(images, verbose=0) + model.predict(images[:, :, ::-1], verbose=0)) / 2
    assert not np.allclose(softmax(mean_logits), predict_probabilities(model, images), atol=1e-3)  # the flip matters
    np.testing.assert_allclose(predict_probabilities(model, images, tta=True), softmax(mean_logits), atol=1e-5)
    # Logits [1000, 0] and [0, 0]: exp(1000) overflows unless the softmax subtracts the row max.
    inputs = keras.Input((1, 1, 3))
    dense = keras.layers.Dense(2, kernel_initializer=keras.initializers.Constant([[4.0, 0.0]] + [[0.0, 0.0]] * 2))
    large = keras.Model(inputs, dense(keras.layers.Flatten()(inputs)))
    pixels = np.array([[250.0, 0.0, 0.0], [0.0, 0.0, 0.0]]).reshape(2, 1, 1, 3)  # 4 x 250 = 1000
    np.testing.assert_allclose(predict_probabilities(large, pixels), [[1.0, 0.0], [0.5, 0.5]])


def test_pixels_scaled_to_0_1_are_warned_about_and_16_bit_white_is_read(model: keras.Model) -> None:
    with pytest.warns(UserWarning, match=r"scaled to \[0, 1\]"):
        predict_probabilities(model, np.full((1, 32, 32, 3), 0.5, np.float32))
    assert predict_probabilities(model, np.full((1, 32, 32, 3), 255, np.uint16)).shape == (1, 10)


# Images predict_probabilities refuses -> (the images, options, the words of its one-line error).
BAD_BATCHES = {
    "the wrong size": (np.zeros((2, 64, 64, 3), np.uint8), {}, "model takes 32x32"),
    "NaN pixels": (np.stack([np.full((32, 32, 3), 100.0), np.full((32, 32, 3), np.nan)]), {}, "1 of 2 images hold NaN or infinite pixel values"),
    "a negative batch size": (np.zeros((2, 32, 32, 3), np.uint8), {"batch_size": -1}, "batch_size"),
    "16-bit pixels": (np.full((2, 32, 32, 3), 65_535, np.uint16), {}, "divide by 257"),
    "grey images": (np.zeros((4, 32, 32), np.uint8), {}, "grey.*np.repeat"),
}


@pytest.mark.parametrize("batch", BAD_BATCHES)
def test_predict_probabilities_refuses_a_bad_batch_in_one_line(model: keras.Model, batch: str) -> None:
    images, options, words = BAD_BATCHES[batch]
    with pytest.raises(ValueError, match=words) as refused:
        predict_probabilities(model, images, **options)
    one_line(refused.value)


# --------------------------------------------------------------------------
# Saving and loading
# --------------------------------------------------------------------------


def test_the_real_shiftvit_model_predicts_the_demo_images_and_round_trips_through_a_keras_file(tmp_path) -> None:
    shiftvit = build_shiftvit(preset("quick"))
    result = predict_folder(shiftvit, DEMO_IMAGES, top_k=3)
    assert len(result.predictions) == 6 and not result.failures and "could not be read" not in str(result)
    path = inference.save_model(shiftvit, tmp_path / "models" / "shiftvit.keras")  # real weights pass the bomb check
    images = np.stack([load_image(p.path, 32) for p in result.predictions])
    np.testing.assert_allclose(logits_of(load_model(path), images), logits_of(shiftvit, images), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match=r"must end in \.keras"):
        inference.save_model(shiftvit, tmp_path / "tiny.h5")


def zip_of(members: dict[str, str | bytes]):
    return functools.partial(deflated_zip, files=members)


# A file load_model refuses -> (its name, how it is written (None: absent), error, words).
MODEL_MISTAKES = {
    "missing": ("missing.keras", None, FileNotFoundError, "missing.keras"),
    "an .h5 file": ("old.h5", lambda path: path.write_bytes(b"\x89HDF"), ValueError,
                    r"expected a \.keras file; got old\.h5"),
    "not a zip": ("corrupt.keras", lambda path: path.write_bytes(b"garbage"), ValueError, "corrupt or truncated"),
    "another zip": ("other.keras", zip_of({"hello.txt": "a zip, but not a Keras model"}), ValueError,
                    "could not load .*config.json"),
    "a folder": ("not_a_model", Path.mkdir, ValueError,
                 r"not_a_model is a folder, and shiftvit_lib loads \.keras files only"),
    "a named pipe": ("pipe.keras", os.mkfifo, ValueError, "not a regular file"),
    # Loading a SavedModel runs its graph, which safe mode cannot check: the library never
    # opens one (lesson 08, A9, does it with keras.layers.TFSMLayer, for a model you trust).
    "a SavedModel folder": ("exported", lambda path: write_tree(path, {"saved_model.pb": b"never parsed"}), ValueError,
                            r"exported is a TensorFlow SavedModel folder.*\.keras files only.*"
                            r"keras\.layers\.TFSMLayer \(lesson 08, A9\)"),
    "a deep config": ("deep.keras", zip_of({"config.json": '{"a": ' * 5000 + "1" + "}" * 5000, "model.weights.h5": b"",
                                            "metadata.json": '{"keras_version": "3.0.0"}'}), ValueError,
                      "nests 5000 levels"),  # refused unparsed
    # Zips Python lists but cannot unpack.
    **{f"{damage} members": ("model.keras", lambda path, damage=damage: unreadable_zip(
        path, {"config.json": b'{"a": "%s"}' % (b"x" * 9), "w.h5": b"w"}, damage), ValueError, words)
       for damage, words in [("encrypted", "its member config.json is encrypted"),
                             ("deflate64", "uses compression method 9"), ("lzma", "is corrupt or truncated")]},
    # 64 MiB of zeros stored in 64 kB: refused before Keras unpacks it (Keras would fail in other words).
    "a bomb": ("bomb.keras", zip_of({"metadata.json": "{}", "config.json": "{}", "model.weights.h5": bytes(64 * 2**20)}),
               ValueError, "model.weights.h5 would unpack from .*decompression bomb"),
}


@pytest.mark.parametrize("mistake", MODEL_MISTAKES)
def test_load_model_refuses_a_file_that_is_no_keras_model(tmp_path: Path, mistake: str) -> None:
    name, write, error, words = MODEL_MISTAKES[mistake]
    if write:
        write(tmp_path / name)
    with pytest.raises(error, match=words) as refused:
        load_model(tmp_path / name)
    if error is ValueError:
        assert name in one_line(refused.value)


def test_load_model_explains_safe_mode_a_class_this_version_lacks_and_a_weight_mismatch_in_one_line(tmp_path):
    @keras.saving.register_keras_serializable(package="shiftvit_test")
    class RetiredLoss(keras.losses.Loss):  # saved, then no longer registered (no retry without compiling)
        def call(self, y_true, y_pred):
            return keras.ops.mean(y_pred)

    inputs = keras.Input((4,))
    keras.Model(inputs, keras.layers.Lambda(lambda t: t * 2.0)(inputs)).save(tmp_path / "lambda.keras")
    retired = keras.Model(inputs, keras.layers.Dense(10)(inputs))
    retired.compile(optimizer="adam", loss=RetiredLoss())
    retired.save(tmp_path / "retired.keras")
    del keras.saving.get_custom_objects()["shiftvit_test>RetiredLoss"]
    for name, reason in [("lambda", "The file contains Python code"), ("retired", "The file uses a custom class")]:
        with pytest.raises(inference.ModelLoadError) as refused:
            load_model(tmp_path / f"{name}.keras")
        text = one_line(refused.value)  # Keras' words, then ours (``reason``: stable across Keras releases)
        assert refused.value.reason.startswith(reason) and text.endswith(refused.value.reason)
        assert name == "lambda" or "RetiredLoss" in text
    # A weight mismatch does not dump the weights Keras' message holds.
    keras_message = "Layer 'dense' expected 2 variables, but received 0: " + repr(np.arange(5000.0))
    error = inference.ModelLoadError(tmp_path / "m.keras", "Is it a complete .keras file?",
                                     ValueError(keras_message))
    assert len(one_line(str(error))) < 600 and "m.keras" in str(error)


def test_printed_file_names_cannot_forge_rows_or_reach_the_terminal(tmp_path):
    forged = "cat.png\n  evil.png  airplane 100.0%"
    escape = "\x1b]0;owned\x07\x1b[2Jdog.png"
    scores = (inference.ClassScore("cat", 3, 0.9),)
    result = inference.FolderPredictions(
        tmp_path, (inference.FilePrediction(tmp_path / forged, scores),
                   inference.FilePrediction(tmp_path / escape, scores)),
        (inference.ImageReadError(tmp_path / "x\ny.png", "not an image"),))
    table = result.format()
    assert len(table.splitlines()) == 1 + 2 + 1 + 1  # title, two rows, the failures' title, one failure
    assert "\x1b" not in table and "\x07" not in table
    assert "cat.png\\n  evil.png" in table and "x\\ny.png" in table
