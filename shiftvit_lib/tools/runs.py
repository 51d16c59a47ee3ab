"""The resumable training run: :func:`train` reads top to bottom; its folder is :mod:`.run_folder`.

:func:`train` checks its inputs (:func:`~shiftvit_lib.recipe.check_training_inputs`), claims the run folder
(checked once, then locked: :func:`~shiftvit_lib.tools.run_folder.claim`), starts it or
resumes the interrupted run in it, builds and compiles the model in the asked precision
(:func:`build_for_training`, under a ``keras.distribution`` a lesson has set), runs
``model.fit`` over the remaining epochs with the callbacks of :func:`run_callbacks`,
evaluates the best checkpoint on the test split and writes ``run.json``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import keras

from shiftvit_lib import recipe
from shiftvit_lib.config import TrainingRecipe, check_whole_number, family_of
from shiftvit_lib.data import DataSplits
from shiftvit_lib.tools import devices, files
from shiftvit_lib.tools import run_folder as rf
from shiftvit_lib.tools.inference import load_model


class BestModelCheckpoint(keras.callbacks.Callback):
    """``best.keras``: the model of the best validation accuracy so far, written atomically."""

    def __init__(self, path: Path, best: float | None = None) -> None:
        super().__init__()
        self.path, self.best = path, float("-inf") if best is None else best

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        # A missing or NaN accuracy (a diverged epoch) is never better than any.
        if (value := float((logs or {}).get("val_accuracy", float("nan")))) > self.best:
            with files.atomic_output(self.path) as partial:
                self.model.save(partial)
            self.best = value


def run_callbacks(
    config: TrainingRecipe, folder: rf.RunFolder, steps_per_epoch: int
) -> dict[str, keras.callbacks.Callback]:
    """The run's callbacks by name, in the order Keras calls them after each epoch.

    The history row and ``best.keras`` come before the backup, so a death in between redoes
    that epoch; early stopping (if the recipe has it) comes after the backup. Every step is a
    whole batch (training drops the last, smaller one), so an epoch trains steps x batch images.
    """
    callbacks = {
        "throughput": recipe.ThroughputMeter(steps_per_epoch * config.batch_size),
        "history": rf.history_log(folder.path / rf.HISTORY_CSV),
        # After a resume, only an epoch better than any seen before replaces best.keras.
        "best_model": BestModelCheckpoint(folder.path / rf.BEST_MODEL, folder.best_val_accuracy),
        "backup": rf.RunBackup(folder.path),
    }
    if config.early_stopping_patience:
        callbacks["early_stopping"] = keras.callbacks.EarlyStopping(
            "val_accuracy", patience=config.early_stopping_patience, mode="max", restore_best_weights=True
        )
    return callbacks


def build_for_training(
    config: TrainingRecipe,
    steps_per_epoch: int,
    epochs: int,
    *,
    seed: int,
    jit_compile: bool | str = "auto",
    mixed_precision: str | None = None,
) -> keras.Model:
    """Build ``config``'s model (its family's builder, seeded) in the asked precision (a dtype policy)
    and compile it with the recipe."""
    with devices.precision_policy(mixed_precision):
        model = family_of(config).build(config, seed=seed)
        return recipe.compile_for_training(model, config, steps_per_epoch, epochs, jit_compile)


@dataclass
class TrainingRun:
    """What :func:`train` returns: the model, its history and the run's files."""

    model: keras.Model
    history: dict[str, list[float]]
    out_dir: Path
    record: dict[str, Any] = field(default_factory=dict)
    reused: bool = False  # read back from a finished run (train's ``reuse``), not trained


def fit_remaining(
    model: keras.Model, folder: rf.RunFolder, train_ds: Any, val_ds: Any, **options: Any
) -> None:
    """Fit the epochs ``folder`` has not trained (``options``: Keras' fit's), starting from its
    backup (weights and optimizer state, as Keras' own backup does); then note that fitting ended."""
    if folder.restore_from is not None:
        if not model.optimizer.built:  # a freshly compiled model's is not: the backup holds its state
            model.optimizer.build(model.trainable_variables)
        model.load_weights(folder.restore_from)
    if folder.resumed_from < options["epochs"]:  # the datasets shuffle themselves (seeded): fit must not
        model.fit(
            train_ds, validation_data=val_ds, initial_epoch=folder.resumed_from, shuffle=False, **options
        )
    rf.mark_fit_finished(folder)


def reused_run(out_dir: str | os.PathLike[str], spec: dict[str, Any]) -> TrainingRun | None:
    """The finished run in ``out_dir`` with exactly ``spec``, read back; else ``None``.

    Its ``best.keras`` was written atomically; one damaged since (by the disk, or by hand) is
    refused in one line naming it (:func:`~shiftvit_lib.tools.inference.load_model`).
    """
    out = Path(out_dir)
    record, saved = rf.read_run_file(out, rf.RUN_RECORD), rf.read_run_file(out)
    if record is None or saved is None or rf.spec_differences(saved, spec):
        return None
    model = load_model(out / rf.BEST_MODEL)
    return TrainingRun(model, rf.read_history_csv(out / rf.HISTORY_CSV), out, record, reused=True)


def train(
    config: TrainingRecipe,
    data: DataSplits,
    out_dir: str | os.PathLike[str] | rf.Claim,
    *,
    epochs: int | None = None,
    jit_compile: bool | str = "auto",
    mixed_precision: str | None = None,
    extra_callbacks: Sequence[keras.callbacks.Callback] = (),
    seed: int = 42,
    verbose: int | str = "auto",
    overwrite: bool = False,
    reuse: bool = False,
) -> TrainingRun:
    """Train a model with ``config``'s recipe on ``data`` in the run folder ``out_dir``; resumable, logged.

    ``config``: any family's config, built by its family's builder. ``out_dir``: a path, or a
    folder claimed already (:func:`~shiftvit_lib.tools.run_folder.claim`, as the command line
    does before loading data). Run again after an interruption, it resumes from the last
    finished epoch, only with the same settings (:func:`~shiftvit_lib.tools.run_folder.run_spec`);
    other settings or a finished run there raise ``RunFolderError`` before anything is written.
    ``mixed_precision``: a Keras dtype policy, ``"auto"`` (16-bit on a GPU or TPU) or ``None``;
    ``extra_callbacks`` follow the run's own; ``seed`` seeds weights, augmentation and order;
    ``overwrite`` starts afresh (removing only a run's files); ``reuse`` reads back a finished
    run with the same settings instead of refusing it. For several devices, set a
    ``keras.distribution`` (``DataParallel``) first.
    """
    family_of(config)  # a TypeError for anything but a model config
    epochs = check_whole_number(epochs if epochs is not None else config.epochs, "epochs")
    recipe.check_training_inputs(config, data, seed=seed)
    if mixed_precision == "auto":
        mixed_precision = devices.recommended_mixed_precision()
    precision = dict(jit_compile=jit_compile, mixed_precision=mixed_precision)
    spec = rf.run_spec(config, data, epochs=epochs, seed=seed, mixed_precision=mixed_precision)
    if reuse and not overwrite and not isinstance(out_dir, rf.Claim):
        reused = reused_run(out_dir, spec)
        if reused is not None:
            return reused
    with rf.claim(out_dir, overwrite=overwrite) as claim:  # a second process stops here
        folder = rf.open_run_folder(claim, spec)
        keras.utils.set_random_seed(seed)
        train_ds, val_ds, steps_per_epoch = recipe.training_datasets(config, data, seed)
        model = build_for_training(config, steps_per_epoch, epochs, seed=seed, **precision)
        started = time.perf_counter()
        if not folder.fit_finished:
            callbacks = [*run_callbacks(config, folder, steps_per_epoch).values(), *extra_callbacks]
            fit_remaining(
                model, folder, train_ds, val_ds, epochs=epochs, callbacks=callbacks, verbose=verbose
            )
        seconds = round(time.perf_counter() - started, 2)
        # No best.keras if no epoch had a finite validation accuracy: the model as trained.
        best = load_model(claim.path / rf.BEST_MODEL) if (claim.path / rf.BEST_MODEL).exists() else model
        test = recipe.evaluate(best, data, batch_size=config.batch_size)
        record = rf.run_record(
            folder, data, model, test, wall_seconds_this_session=seconds, jit_compile=jit_compile
        )
        rf.write_record(folder, record)
    return TrainingRun(best, rf.read_history_csv(claim.path / rf.HISTORY_CSV), claim.path, record)
