"""The training recipe and its metrics (lesson 05): data, compile, evaluate.

A model learns with :func:`training_datasets` (the recipe's batches) and
:func:`compile_for_training`: AdamW + :class:`~shiftvit_lib.schedules.WarmUpCosine`,
the cross-entropy *from logits* (the number Keras logs as ``loss`` is this
cross-entropy, not the mean of the logits that the keras-io ``train_step`` logs),
top-1 and top-5. :func:`evaluate` and :func:`logits_metrics` measure a model;
:func:`check_training_inputs` refuses a run that could not train, and
:class:`ThroughputMeter` logs each epoch's speed.

The resumable, logged run built on these steps (run folder, checkpoints, record,
devices and precision) is tooling: :func:`shiftvit_lib.tools.runs.train`, also
``shiftvit_lib.train``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import keras
import numpy as np

from shiftvit_lib.config import InputError, TrainingRecipe, check_whole_number
from shiftvit_lib.data import DataSplits, make_dataset, mix_images
from shiftvit_lib.schedules import WarmUpCosine


def check_training_inputs(config: TrainingRecipe, data: DataSplits, *, seed: int) -> None:
    """Raise ``ValueError`` (one line saying what to change) for a run that could not train.

    :func:`shiftvit_lib.tools.runs.train` calls it before it touches the run folder, so a refused run leaves the
    folder as it was: a finished run there is not deleted by ``overwrite`` only to fail
    a moment later, and no ``run_spec.json`` pins the mistaken settings.
    """
    shape, expected, train_images = data.x_train.shape[1:], tuple(config.input_shape), len(data.y_train)
    check_whole_number(seed, "seed", 0, 2**32 - 1)  # NumPy's and Keras' seeds are 32-bit
    if tuple(shape) != expected:
        raise InputError(
            f"the images are {'x'.join(map(str, shape))}, but preset {getattr(config, 'name', '?')!r} takes "
            f"{'x'.join(map(str, expected))} input; choose a preset made for this data (the 'presets' "
            "command lists each preset's input size)"
        )
    if train_images == 0:
        raise InputError("the data has no training images; check the data source")
    if len(data.y_val) == 0:
        raise InputError(
            "the data has no validation images (val_fraction=0?); training picks its best "
            "epoch on them: load the data with val_fraction > 0, e.g. 0.2"
        )
    if config.batch_size > train_images:
        raise InputError(
            f"batch size {config.batch_size:,} is more than the {train_images:,} training "
            f"images; use a batch size of at most {train_images:,}"
        )


def training_datasets(config: TrainingRecipe, data: DataSplits, seed: int) -> tuple[Any, Any, int]:
    """The training and validation batches of ``config``'s recipe, and steps per epoch.

    Training drops the last, smaller batch (a different one every epoch, as the
    order is reshuffled), so every step has one shape and XLA compiles the step
    once. MixUp/CutMix, if on, mix the training batches; with them or label smoothing
    both splits carry one-hot targets, for Keras' ``CategoricalCrossentropy``.
    """
    batch = config.batch_size
    drop = len(data.y_train) >= batch
    options = dict(num_classes=config.num_classes) if config.one_hot_targets else {}
    mixing = {name: getattr(config, name) for name in ("mixup_alpha", "cutmix_alpha", "mix_on_device")}
    train_ds = make_dataset(
        data.x_train, data.y_train, batch, shuffle=True, seed=seed, drop_remainder=drop, **mixing, **options
    )
    val_ds = make_dataset(data.x_val, data.y_val, batch, shuffle=False, **options)
    return train_ds, val_ds, len(data.y_train) // batch if drop else 1


def compile_for_training(
    model: keras.Model,
    config: TrainingRecipe,
    steps_per_epoch: int,
    epochs: int | None = None,
    jit_compile: bool | str = "auto",
) -> keras.Model:
    """Compile ``model`` with the recipe of ``config`` (AdamW, warm-up cosine, CE, top-1/5)."""
    schedule = WarmUpCosine.from_recipe(config, steps_per_epoch, epochs)
    optimizer = keras.optimizers.AdamW(learning_rate=schedule, weight_decay=config.weight_decay)
    if config.one_hot_targets:  # smoothed, or mixed by data.mix_batch
        loss: Any = keras.losses.CategoricalCrossentropy(
            from_logits=True, label_smoothing=config.label_smoothing
        )
        metrics = [
            keras.metrics.CategoricalAccuracy(name="accuracy"),
            keras.metrics.TopKCategoricalAccuracy(k=5, name="top5"),
        ]
    else:
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        metrics = [
            keras.metrics.SparseCategoricalAccuracy(name="accuracy"),
            keras.metrics.SparseTopKCategoricalAccuracy(k=5, name="top5"),
        ]
    per_call = 1 if keras.backend.backend() == "torch" else config.steps_per_execution  # torch: only 1
    model.compile(optimizer, loss, metrics=metrics, jit_compile=jit_compile, steps_per_execution=per_call)
    if config.mix_on_device:
        model.call = mixing_call(model.call)
    return model


def mixing_call(call: Callable[..., Any]) -> Callable[..., Any]:
    """The model's ``call`` that first mixes a batch carrying its MixUp/CutMix draw
    (``{"images", "mixing"}``, :class:`~shiftvit_lib.data.NumpyBatches` with ``mix_on_device``):
    inside the compiled train step, so on the device. Plain images pass unchanged."""

    def mixed_call(inputs: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(inputs, dict):
            inputs = mix_images(inputs["images"], inputs["mixing"])
        return call(inputs, *args, **kwargs)

    return mixed_call


def evaluate(
    model: keras.Model, data: DataSplits, split: str = "test", batch_size: int = 256, *, tta: bool = False
) -> dict[str, float]:
    """Loss, top-1 and top-5 accuracy of ``model`` on one split of ``data``.

    ``tta=True`` scores each image as the mean of the logits for it and for its mirror
    image (test-time augmentation with horizontal flips, :func:`flip_tta_logits`): about
    twice the compute for a few tenths of a point. Report it beside the plain figure,
    never instead of it.
    """
    if split not in ("train", "val", "test"):
        raise InputError(f"split must be 'train', 'val' or 'test', got {split!r}")
    x, y = getattr(data, f"x_{split}"), getattr(data, f"y_{split}")
    num_classes = len(data.class_names)

    def logits_of(images: np.ndarray) -> np.ndarray:
        logits = model.predict(make_dataset(images, y, batch_size, shuffle=False), verbose=0)
        if not isinstance(logits, np.ndarray) or logits.shape[1:] != (num_classes,):
            shape = getattr(logits, "shape", f"a {type(logits).__name__} of arrays")
            raise InputError(
                f"the model outputs {shape}, but the data has {num_classes} classes: expected "
                f"one output of shape (batch, {num_classes}); is it the right model?"
            )
        return logits.astype(np.float64)

    logits = flip_tta_logits(logits_of, x) if tta else logits_of(x)
    return logits_metrics(logits, y)


def flip_tta_logits(logits_of: Callable[[np.ndarray], np.ndarray], images: np.ndarray) -> np.ndarray:
    """The mean of ``logits_of(images)`` and ``logits_of`` of the images mirrored left to right.

    A CIFAR class does not change in a mirror (training flips at random for that reason), so the
    two views are two honest guesses about the same image; their mean is the better guess. The
    flip is along the width axis of ``(N, height, width, channels)`` images.
    """
    return (logits_of(images) + logits_of(images[:, :, ::-1])) / 2


def logits_metrics(logits: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """Cross-entropy, top-1 and top-5 accuracy computed with NumPy from logits."""
    logits = np.asarray(logits, dtype="float64")
    labels = np.asarray(labels).reshape(-1)
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    top5 = np.argsort(-logits, axis=1)[:, :5]
    return {
        "loss": float(-log_probs[np.arange(len(labels)), labels].mean()),
        "accuracy": float((logits.argmax(axis=1) == labels).mean()),
        "top5": float((top5 == labels[:, None]).any(axis=1).mean()),
        "images": int(len(labels)),
    }


class ThroughputMeter(keras.callbacks.Callback):
    """Adds ``epoch_seconds`` and ``images_per_second`` to every epoch's logs.

    ``epoch_seconds`` is the whole epoch, validation included; ``images_per_second``
    counts training alone (the clock stops when validation starts).
    """

    def __init__(self, images_per_epoch: int) -> None:
        super().__init__()
        self.images_per_epoch = images_per_epoch

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._start, self._training_end = time.perf_counter(), None

    def on_test_begin(self, logs: dict[str, Any] | None = None) -> None:
        if self._training_end is None:
            # JAX (and any backend on a GPU) returns from a step before computing it. With no
            # per-step callback Keras never waits, so validation, and this clock's stop, came
            # while steps were still queued (issue 39: 15,000-40,000 images/s logged for a CPU
            # that trains about 400). The step counter, written by the last step, waits for it.
            keras.ops.convert_to_numpy(self.model.optimizer.iterations)
            self._training_end = time.perf_counter()

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        # Without validation, Keras has read this epoch's metrics to the host by now.
        now = time.perf_counter()
        training_seconds = (self._training_end or now) - self._start
        logs["epoch_seconds"] = now - self._start  # fit passes every epoch's logs
        logs["images_per_second"] = self.images_per_epoch / max(training_seconds, 1e-9)
