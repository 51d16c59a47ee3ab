"""The training recipe and its metrics (lesson 05): data, compile, evaluate.

A model learns with :func:`training_datasets` (the recipe's batches) and
:func:`compile_for_training`: AdamW + :class:`~shiftvit_lib.schedules.WarmUpCosine`,
the cross-entropy *from logits* (the number Keras logs as ``loss`` is this
cross-entropy, not the mean of the logits that the keras-io ``train_step`` logs),
top-1 and top-5. :func:`evaluate` and :func:`logits_metrics` measure a model.

The resumable, logged run built on these steps (run folder, checkpoints, record,
devices and precision) is tooling: :func:`shiftvit_lib.tools.runs.train`, also
``shiftvit_lib.train``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras
import numpy as np

from shiftvit_lib.config import TrainingRecipe
from shiftvit_lib.data import DataSplits, make_dataset
from shiftvit_lib.schedules import WarmUpCosine


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
    mixing = dict(mixup_alpha=config.mixup_alpha, cutmix_alpha=config.cutmix_alpha)
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
    model.compile(optimizer=optimizer, loss=loss, metrics=metrics, jit_compile=jit_compile)
    return model


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
        raise ValueError(f"split must be 'train', 'val' or 'test', got {split!r}")
    x, y = getattr(data, f"x_{split}"), getattr(data, f"y_{split}")
    num_classes = len(data.class_names)

    def logits_of(images: np.ndarray) -> np.ndarray:
        logits = model.predict(make_dataset(images, y, batch_size, shuffle=False), verbose=0)
        if not isinstance(logits, np.ndarray) or logits.shape[1:] != (num_classes,):
            shape = getattr(logits, "shape", f"a {type(logits).__name__} of arrays")
            raise ValueError(
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
