"""Training with the example's recipe, correctly logged and resumable (lesson 05).

:func:`train` is a sequence of named steps, each a function of this module that a
lesson can call or show on its own:

1. :func:`open_run_folder` -- start a run folder, or resume the interrupted run in it
   (only with the same settings; run records live in :mod:`shiftvit_lib.tools.runs`);
2. :func:`training_datasets` -- the training and validation batches of the recipe;
3. :func:`build_for_training` -- inside :func:`distribution_scope` (the asked devices),
   build the model in the asked precision (:mod:`shiftvit_lib.tools.devices`) and
   :func:`compile_for_training` it
   with AdamW + :class:`~shiftvit_lib.schedules.WarmUpCosine`, the cross-entropy
   *from logits* (the number Keras logs as ``loss`` is this cross-entropy, not the
   mean of the logits that the keras-io ``train_step`` logs), top-1 and top-5;
4. :func:`training_callbacks` -- a throughput meter, the CSV history, the best-model
   checkpoint ``best.keras``, ``BackupAndRestore`` (a run killed mid-way resumes
   from its last finished epoch) and early stopping;
5. :func:`fit` -- ``model.fit`` over the remaining epochs, still on those devices;
6. :func:`evaluate_best` -- the best checkpoint on the test split;
7. :func:`run_record` -- ``run.json``: config, data, epochs, time, images/s, metrics
   and machine.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import keras
import numpy as np

from shiftvit_lib.config import TrainingRecipe
from shiftvit_lib.data import DataSplits, make_dataset
from shiftvit_lib.model import build_shiftvit
from shiftvit_lib.schedules import WarmUpCosine
from shiftvit_lib.tools.devices import (
    describe_machine,
    distribution_scope,
    has_accelerator,
    precision_policy,
    recommended_mixed_precision,
    replica_count,
)
from shiftvit_lib.tools.runs import (
    BACKUP_DIR,
    BEST_MODEL,
    HISTORY_CSV,
    RunFolder,
    RunFolderError,
    ThroughputMeter,
    describe_run,
    load_run,
    open_run_folder,
    read_history_csv,
    run_record,
    run_spec,
)

DISTRIBUTIONS = (None, "mirrored", "data_parallel")


# --------------------------------------------------------------------------- data and model
def training_datasets(config: TrainingRecipe, data: DataSplits, seed: int) -> tuple[Any, Any, int]:
    """The training and validation batches of ``config``'s recipe, and steps per epoch.

    Training drops the last, smaller batch (a different one every epoch, as the
    order is reshuffled), so every step has one shape and XLA compiles the step
    once. MixUp/CutMix, if on, mix the training batches; both splits then carry
    one-hot targets.
    """
    batch = config.batch_size
    drop = len(data.y_train) >= batch
    mixing: dict[str, Any] = {}
    if config.mixes_labels:
        mixing = dict(num_classes=config.num_classes, mixup_alpha=config.mixup_alpha,
                      cutmix_alpha=config.cutmix_alpha)
    train_ds = make_dataset(data.x_train, data.y_train, batch, shuffle=True, seed=seed,
                            drop_remainder=drop, **mixing)
    val_ds = make_dataset(data.x_val, data.y_val, batch, shuffle=False,
                          num_classes=mixing.get("num_classes"))
    steps = len(data.y_train) // batch if drop else 1
    return train_ds, val_ds, steps


def default_builder(config: TrainingRecipe) -> Callable[..., keras.Model]:
    """The builder of a config: ``build_vit`` for a ViTConfig, else ``build_shiftvit``."""
    from shiftvit_lib.vit import ViTConfig, build_vit  # vit builds on this package's layers

    return build_vit if isinstance(config, ViTConfig) else build_shiftvit


@keras.saving.register_keras_serializable(package="shiftvit_lib")
class SmoothedSparseCrossentropy(keras.losses.Loss):
    """Cross-entropy from logits against integer labels with label smoothing."""

    def __init__(self, smoothing: float, num_classes: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.smoothing = float(smoothing)
        self.num_classes = int(num_classes)

    def call(self, y_true: Any, y_pred: Any) -> Any:
        labels = keras.ops.one_hot(keras.ops.cast(keras.ops.reshape(y_true, (-1,)), "int32"), self.num_classes)
        return keras.losses.categorical_crossentropy(
            labels, y_pred, from_logits=True, label_smoothing=self.smoothing
        )

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "smoothing": self.smoothing, "num_classes": self.num_classes}


def compile_for_training(model: keras.Model, config: TrainingRecipe, steps_per_epoch: int,
                         epochs: int | None = None, jit_compile: bool | str = "auto") -> keras.Model:
    """Compile ``model`` with the recipe of ``config`` (AdamW, warm-up cosine, CE, top-1/5)."""
    schedule = WarmUpCosine.from_recipe(config, steps_per_epoch, epochs)
    optimizer = keras.optimizers.AdamW(learning_rate=schedule, weight_decay=config.weight_decay)
    if config.mixes_labels:
        # MixUp/CutMix targets are mixed one-hot vectors (see data.mix_batch).
        loss: Any = keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=config.label_smoothing)
        metrics = [
            keras.metrics.CategoricalAccuracy(name="accuracy"),
            keras.metrics.TopKCategoricalAccuracy(k=5, name="top5"),
        ]
    else:
        if config.label_smoothing:
            # Label smoothing needs one-hot targets; labels stay integers in the data.
            loss = SmoothedSparseCrossentropy(config.label_smoothing, config.num_classes)
        else:
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        metrics = [
            keras.metrics.SparseCategoricalAccuracy(name="accuracy"),
            keras.metrics.SparseTopKCategoricalAccuracy(k=5, name="top5"),
        ]
    model.compile(optimizer=optimizer, loss=loss, metrics=metrics, jit_compile=jit_compile)
    return model


def build_for_training(config: TrainingRecipe, builder: Callable[[Any], keras.Model], steps_per_epoch: int,
                       epochs: int, *, jit_compile: bool | str = "auto",
                       mixed_precision: str | None = None) -> keras.Model:
    """Build the model in the asked precision (a dtype policy) and compile it with the recipe.

    Called inside :func:`distribution_scope`, it also places the model on those devices.
    """
    with precision_policy(mixed_precision):
        model = builder(config)
        compile_for_training(model, config, steps_per_epoch, epochs, jit_compile)
    return model


# --------------------------------------------------------------------------- fitting
def training_callbacks(config: TrainingRecipe, folder: RunFolder, images_per_epoch: int,
                       extra: Sequence[keras.callbacks.Callback] = ()) -> list[keras.callbacks.Callback]:
    """What :func:`fit` runs after every epoch, in this order, then ``extra``.

    The history row and the best model are written before the backup: if the process
    dies in between, the resumed run redoes that epoch and replaces its row.
    """
    checkpoint = keras.callbacks.ModelCheckpoint(
        folder.path / BEST_MODEL, monitor="val_accuracy", mode="max", save_best_only=True
    )
    if folder.best_val_accuracy is not None:
        # After a resume, only a better epoch than any seen before may overwrite best.keras.
        checkpoint.best = folder.best_val_accuracy
    callbacks: list[keras.callbacks.Callback] = [
        ThroughputMeter(images_per_epoch),
        keras.callbacks.CSVLogger(str(folder.path / HISTORY_CSV), append=True),
        checkpoint,
        keras.callbacks.BackupAndRestore(str(folder.path / BACKUP_DIR)),
    ]
    if config.early_stopping_patience:
        callbacks.append(
            keras.callbacks.EarlyStopping(
                monitor="val_accuracy", mode="max", patience=config.early_stopping_patience,
                restore_best_weights=True,
            )
        )
    return [*callbacks, *extra]


def fit(model: keras.Model, train_ds: Any, val_ds: Any, epochs: int, callbacks: Sequence[Any],
        folder: RunFolder, verbose: int | str = "auto") -> float:
    """Train the epochs the folder has not trained yet; returns the wall seconds it took."""
    started = time.perf_counter()
    if not folder.fit_finished:
        # The datasets shuffle themselves (seeded), so fit must not try to.
        model.fit(train_ds, validation_data=val_ds, epochs=epochs, callbacks=list(callbacks),
                  verbose=verbose, shuffle=False)
        folder.mark_fit_finished()
    return time.perf_counter() - started


def evaluate_best(model: keras.Model, folder: RunFolder, data: DataSplits,
                  batch_size: int) -> tuple[keras.Model, dict[str, float]]:
    """The best checkpoint (``model`` itself if none was saved) and its test metrics."""
    path = folder.path / BEST_MODEL
    best = keras.saving.load_model(path, safe_mode=True) if path.exists() else model
    return best, evaluate(best, data, batch_size=batch_size)


# --------------------------------------------------------------------------- train
@dataclass
class TrainingRun:
    """What :func:`train` returns: the model, its history and the run's files."""

    model: keras.Model
    history: dict[str, list[float]]
    out_dir: Path
    record: dict[str, Any] = field(default_factory=dict)

    @property
    def best_model_path(self) -> Path:
        return self.out_dir / BEST_MODEL


def train(
    config: TrainingRecipe,
    data: DataSplits,
    out_dir: str | os.PathLike[str],
    *,
    epochs: int | None = None,
    build_model: Callable[[Any], keras.Model] | None = None,
    jit_compile: bool | str = "auto",
    mixed_precision: str | None = None,
    distribute: str | None = None,
    devices: Sequence[str] | None = None,
    extra_callbacks: Sequence[keras.callbacks.Callback] = (),
    seed: int = 42,
    verbose: int | str = "auto",
    overwrite: bool = False,
) -> TrainingRun:
    """Train a model with ``config``'s recipe on ``data``; resumable and logged.

    Args:
        config: the recipe and the architecture: a ShiftViTConfig, or a ViTConfig
            (then the model is built with :func:`shiftvit_lib.vit.build_vit`).
        data: splits from :func:`shiftvit_lib.data.load_cifar10`.
        out_dir: where ``run_spec.json``, ``best.keras``, ``history.csv``,
            ``run.json`` and the backup go. Running again with the same ``out_dir``
            after an interruption resumes from the last finished epoch, but only with
            the same settings (:func:`run_spec`); other settings, or a folder that
            holds a finished run, raise :class:`RunFolderError` before anything is
            written, saying what differs.
        epochs: overrides ``config.epochs`` (e.g. a short run).
        build_model: ``config -> keras.Model``; default :func:`default_builder`'s.
        jit_compile: XLA compilation (``"auto"``, True, False).
        mixed_precision: a Keras dtype policy such as ``"mixed_bfloat16"`` or
            ``"mixed_float16"`` (loss scaling is added by Keras for float16);
            ``"auto"`` picks :func:`recommended_mixed_precision` for this device
            (float32 on a CPU); ``None`` trains in float32.
        distribute: ``None``, ``"mirrored"`` (TF) or ``"data_parallel"`` (JAX).
        devices: the devices to distribute over (default: all the backend sees).
        extra_callbacks: appended after the built-in callbacks.
        seed: seeds weights, augmentation and shuffling.
        overwrite: start afresh in ``out_dir``: first remove the files a previous
            run wrote there (:func:`clear_run`; nothing else in the folder).
    """
    if not isinstance(config, TrainingRecipe):
        raise TypeError(f"config must be a ShiftViTConfig or a ViTConfig, got {type(config).__name__}")
    epochs = int(epochs if epochs is not None else config.epochs)
    if epochs < 1:
        raise ValueError(f"epochs must be >= 1, got {epochs}")
    if distribute not in DISTRIBUTIONS:
        raise ValueError(f"Unknown distribute={distribute!r}; use None, 'mirrored' or 'data_parallel'.")
    if mixed_precision == "auto":
        mixed_precision = recommended_mixed_precision()
    builder = build_model or (lambda cfg: default_builder(cfg)(cfg, seed=seed))

    spec = run_spec(config, data, epochs=epochs, seed=seed, mixed_precision=mixed_precision,
                    build_model=build_model)
    folder = open_run_folder(out_dir, spec, config, overwrite=overwrite)
    keras.utils.set_random_seed(seed)
    train_ds, val_ds, steps_per_epoch = training_datasets(config, data, seed)
    # Keras' DataParallel (JAX) is in force only inside the scope: build *and* fit there.
    with distribution_scope(distribute, devices) as strategy:
        model = build_for_training(config, builder, steps_per_epoch, epochs, jit_compile=jit_compile,
                                   mixed_precision=mixed_precision)
        images_per_epoch = min(steps_per_epoch * config.batch_size, len(data.y_train))
        callbacks = training_callbacks(config, folder, images_per_epoch, extra_callbacks)
        wall_seconds = fit(model, train_ds, val_ds, epochs, callbacks, folder, verbose)
    best, test_metrics = evaluate_best(model, folder, data, config.batch_size)
    settings = dict(jit_compile=jit_compile, mixed_precision=mixed_precision, distribute=distribute,
                    replicas=replica_count(strategy))
    record = run_record(folder, config, data, epochs=epochs, test_metrics=test_metrics,
                        wall_seconds=wall_seconds, parameters=int(model.count_params()),
                        settings=settings, machine=describe_machine())
    return TrainingRun(model=best, history=read_history_csv(folder.path / HISTORY_CSV), out_dir=folder.path,
                       record=record)


# --------------------------------------------------------------------------- metrics
def evaluate(model: keras.Model, data: DataSplits, split: str = "test", batch_size: int = 256) -> dict[str, float]:
    """Loss, top-1 and top-5 accuracy of ``model`` on one split of ``data``."""
    if split not in ("train", "val", "test"):
        raise ValueError(f"split must be 'train', 'val' or 'test', got {split!r}")
    x, y = getattr(data, f"x_{split}"), getattr(data, f"y_{split}")
    logits = model.predict(make_dataset(x, y, batch_size, shuffle=False), verbose=0)
    num_classes = len(data.class_names)
    if isinstance(logits, (list, tuple, dict)) or np.ndim(logits) != 2 or np.shape(logits)[1] != num_classes:
        shape = [np.shape(o) for o in logits] if isinstance(logits, (list, tuple)) else np.shape(logits)
        raise ValueError(f"the model outputs {shape}, but the data has {num_classes} classes: expected "
                         f"one output of shape (batch, {num_classes}); is it the right model?")
    return logits_metrics(logits, y)


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


# After the steps of train() and their helpers, names that lessons import from this module
# although they live in shiftvit_lib.tools (devices and precision, run records).
__all__ = [
    "train", "TrainingRun", "open_run_folder", "training_datasets", "build_for_training", "fit",
    "compile_for_training", "training_callbacks", "evaluate_best", "run_record", "default_builder",
    "SmoothedSparseCrossentropy", "ThroughputMeter", "evaluate", "logits_metrics",
    "describe_machine", "distribution_scope", "has_accelerator", "precision_policy", "recommended_mixed_precision",
    "RunFolderError", "describe_run", "load_run", "read_history_csv",
]
