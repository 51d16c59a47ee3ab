"""The resumable training run and its folder: what a run writes, and how it resumes or is reused.

A run folder holds ``run_spec.json`` (what the run *is*, written when it starts),
``history.csv`` and ``best.keras`` (written while it trains), ``backup/`` (the training
state after each epoch, :class:`RunBackup`, removed once the record is written) and
``run.json`` (the record written when it ends). Every file but the appended history is
written through a temporary name and renamed (:mod:`shiftvit_lib.tools.files`), so a crash
never leaves half a file; a file damaged otherwise is set aside by name and the run
resumes from the last readable state.

:func:`train` is the run. Before it writes anything it checks its inputs
(:func:`check_training_inputs`) and the folder (:func:`check_run_folder`); then, holding
the folder's lock, it starts the folder or resumes the interrupted run in it, only with the
same settings (:func:`open_run_folder`, :func:`run_spec`), builds and compiles the model in
the asked precision (:func:`build_for_training`, under a ``keras.distribution`` a lesson has
set), runs ``model.fit`` over the remaining epochs (callbacks: a throughput meter, the CSV
history, ``best.keras``, the backup and early stopping), evaluates
the best checkpoint on the test split and writes ``run.json`` (config, data, epochs, time,
images/s, metrics and machine). Lesson 05 reads finished runs back with :func:`load_run`
and :func:`describe_run`.
"""

from __future__ import annotations

import contextlib
import csv
import functools
import hashlib
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import keras
import numpy as np

from shiftvit_lib.config import TrainingRecipe, check_positive_int, family_of
from shiftvit_lib.data import DataSplits
from shiftvit_lib.recipe import compile_for_training, evaluate, training_datasets
from shiftvit_lib.tools import devices, files
from shiftvit_lib.tools.files import escape_name, read_json, run_folder_lock, write_json
from shiftvit_lib.tools.inference import load_model

BEST_MODEL = "best.keras"
HISTORY_CSV = "history.csv"
RUN_RECORD = "run.json"
BACKUP_DIR = "backup"
RUN_SPEC = "run_spec.json"
RUN_FILES = (RUN_SPEC, HISTORY_CSV, BEST_MODEL, RUN_RECORD)
BACKUP_METADATA = "training_metadata.json"
LEGACY_BACKUP_WEIGHTS = "latest.weights.h5"  # Keras' BackupAndRestore, in runs of earlier versions
_BACKUP_WEIGHTS = re.compile(r"epoch-(\d+)\.weights\.h5")
# Fields of run_spec.json that are not the run's identity: the folder's progress, and the data
# source's sentence (an 'auto' fallback names its network error, which may differ between
# sessions; the data's identity is its hash, data_digest).
_SPEC_NOT_COMPARED = ("format", "created_at", "fit_finished_at", "data_source")
_AFRESH = "pass overwrite=True (--overwrite) to start afresh there, or choose another folder"


class RunFolderError(ValueError):
    """An output folder that :func:`train` must not use as asked; the message says what to do."""


def now() -> str:
    """The local time as run records write it."""
    return time.strftime("%Y-%m-%d %H:%M:%S %Z")


def provenance(data: DataSplits) -> dict[str, Any]:
    """The part every record shares (run.json, a comparison's): the data, the machine, and when."""
    machine = devices.describe_machine()
    return dict(data_source=data.source, split_sizes=data.split_sizes(), machine=machine, finished_at=now())


def _one_line(error: object) -> str:
    return " ".join(str(error).split())


def read_history_csv(path: str | os.PathLike[str]) -> dict[str, list[float]]:
    """A ``history.csv`` written by training, as ``{metric: [value per epoch]}`` (``{}`` if none)."""
    path = Path(path)
    if not path.exists():
        return {}
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    return {key: [float(row[key]) for row in rows] for key in (rows[0] if rows else ())}


# --------------------------------------------------------------------------- what a run is
def data_digest(data: DataSplits) -> str:
    """A short hash of every image and label of ``data`` (its identity in ``run_spec.json``)."""
    digest = hashlib.blake2b(digest_size=12)
    for split in ("train", "val", "test"):
        for array in (getattr(data, f"x_{split}"), getattr(data, f"y_{split}")):
            array = np.ascontiguousarray(array)
            digest.update(f"{split}{array.dtype.str}{array.shape}".encode())
            digest.update(array.data)
    return digest.hexdigest()


def run_spec(
    config: TrainingRecipe,
    data: DataSplits,
    *,
    epochs: int | None = None,
    seed: int = 42,
    mixed_precision: str | None = None,
) -> dict[str, Any]:
    """What a run *is*: the settings a resumed run must share with the one it continues.

    The config (architecture and recipe, batch size included), the data (its source
    sentence, split sizes and a hash of every image), the number of epochs (it sets
    the learning-rate schedule), the seed, the precision policy and the model
    builder. :func:`train` stores it in ``run_spec.json`` when a run starts.
    """
    builder = family_of(config).build
    spec = {
        "format": 1,
        "config": config.to_dict(),
        "data_source": data.source,
        "split_sizes": data.split_sizes(),
        "data_digest": data_digest(data),
        "epochs": int(epochs if epochs is not None else config.epochs),
        "batch_size": int(config.batch_size),
        "seed": int(seed),
        "mixed_precision": mixed_precision,
        "model_builder": f"{getattr(builder, '__module__', '?')}.{getattr(builder, '__qualname__', builder)}",
    }
    return json.loads(json.dumps(spec, default=str))  # as it reads back from the file


def spec_differences(saved: dict[str, Any], current: dict[str, Any], config: TrainingRecipe) -> list[str]:
    """How a stored run spec differs from ``current``, e.g. ``["epochs (4 -> 6)", "config.lr_max (...)"]``.

    The stored config is read as ``config``'s type writes it today: fields added since take
    their defaults, which are what the older version did (a ViT recorded before it shared the
    TrainingRecipe has no ``mixup_alpha``: it did not mix), so a learner's interrupted run
    still resumes after an update. A config not of this type is compared as it is.
    """
    with contextlib.suppress(KeyError, TypeError, ValueError, AttributeError):
        saved = {**saved, "config": type(config).from_dict(saved["config"]).to_dict()}

    def flat(spec: dict[str, Any]) -> dict[str, Any]:
        fields = spec.get("config") if isinstance(spec.get("config"), dict) else {"": spec.get("config")}
        return {**spec, "config": None, **{f"config.{name}": value for name, value in fields.items()}}

    old, new = flat(saved), flat(current)
    return [
        "data (other images or labels)"
        if key == "data_digest"
        else f"{key} ({old.get(key)!r} -> {new.get(key)!r})"
        for key in sorted(old.keys() | new.keys())
        if key not in _SPEC_NOT_COMPARED and old.get(key) != new.get(key)
    ]


def read_run_file(folder: str | os.PathLike[str], name: str = RUN_SPEC) -> dict[str, Any] | None:
    """A JSON file of a run folder (``run_spec.json``, ``run.json``), or ``None`` if it has none.

    A damaged one, or one that holds no JSON object, is a :class:`RunFolderError` naming it.
    """
    path = Path(folder) / name
    if not path.exists() and not path.is_symlink():
        return None
    try:
        if isinstance(found := read_json(path, name), dict):
            return found
        problem = f"it holds a JSON {type(found).__name__}, not a JSON object"
    except (OSError, ValueError) as error:
        problem = _one_line(error)
    raise RunFolderError(f"{escape_name(path)} is unreadable ({problem}); {_AFRESH}")


def finished_run(out_dir: Path, config: TrainingRecipe, spec: dict[str, Any]) -> dict[str, Any] | None:
    """The ``run.json`` record of a finished run in ``out_dir`` with exactly ``spec``, else ``None``.

    A folder without ``run_spec.json`` (an older version's) matches on its recorded config and epochs.
    """
    if (record := read_run_file(out_dir, RUN_RECORD)) is None:
        return None
    saved = read_run_file(out_dir)
    if saved is None:
        saved = {"config": record.get("config"), "epochs": record.get("epochs_requested")}
        spec = {"config": spec["config"], "epochs": spec["epochs"]}
    return None if spec_differences(saved, spec, config) else record


# --------------------------------------------------------------------------- before anything is written
def check_training_inputs(config: TrainingRecipe, data: DataSplits, *, seed: int) -> None:
    """Raise ``ValueError`` (one line saying what to change) for a run that could not train.

    :func:`train` calls it before it touches the run folder, so a refused run leaves the
    folder as it was: a finished run there is not deleted by ``overwrite`` only to fail
    a moment later, and no ``run_spec.json`` pins the mistaken settings.
    """
    shape, expected, train_images = data.x_train.shape[1:], tuple(config.input_shape), len(data.y_train)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**32:
        raise ValueError(f"seed must be a whole number from 0 to 2**32 - 1, got {seed!r}")  # NumPy's, Keras'
    if tuple(shape) != expected:
        raise ValueError(
            f"the images are {'x'.join(map(str, shape))}, but preset {getattr(config, 'name', '?')!r} takes "
            f"{'x'.join(map(str, expected))} input; choose a preset made for this data (the 'presets' "
            "command lists each preset's input size)"
        )
    if train_images == 0:
        raise ValueError("the data has no training images; check the data source")
    if len(data.y_val) == 0:
        raise ValueError(
            "the data has no validation images (val_fraction=0?); training picks its best "
            "epoch on them: load the data with val_fraction > 0, e.g. 0.2"
        )
    if config.batch_size > train_images:
        raise ValueError(
            f"batch size {config.batch_size:,} is more than the {train_images:,} training "
            f"images; use a batch size of at most {train_images:,}"
        )


def check_run_folder(out_dir: str | os.PathLike[str], *, overwrite: bool = False) -> str:
    """Check that ``out_dir`` may take a run, writing nothing; returns ``"new"`` or ``"resume"``.

    Raises :class:`RunFolderError` (a ``ValueError``) when ``out_dir`` is a file, or
    cannot be created or written, or (unless ``overwrite``) holds a finished run or
    training files of an unknown run. Whether an interrupted run's settings match is
    checked by :func:`open_run_folder`, which knows them.
    """
    out = existing = Path(out_dir)
    while not existing.exists():  # the nearest folder that exists (``out`` itself, if it does)
        existing = existing.parent
    if not existing.is_dir():
        raise RunFolderError(
            f"cannot use the output folder {out}: {existing} is a file; choose another folder"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise RunFolderError(f"cannot write to {existing} (permission denied); choose another output folder")
    if overwrite or not any((out / name).exists() for name in (*RUN_FILES, BACKUP_DIR)):
        return "new"
    if (out / RUN_RECORD).exists():
        raise RunFolderError(
            f"{out} already holds a finished run (its record: {out / RUN_RECORD}); train into "
            "another folder, or pass overwrite=True (--overwrite) to replace it"
        )
    if read_run_file(out) is None:
        raise RunFolderError(
            f"{out} holds training files without {RUN_SPEC} (an older version's or an unknown run), "
            f"so it cannot be resumed safely; {_AFRESH}"
        )
    return "resume"


def clear_run(out_dir: str | os.PathLike[str]) -> None:
    """Remove exactly the files a :func:`train` call writes into ``out_dir`` (nothing else)."""
    out = Path(out_dir)
    for name in RUN_FILES:
        (out / name).unlink(missing_ok=True)
    shutil.rmtree(out / BACKUP_DIR, ignore_errors=True)


# --------------------------------------------------------------------------- the folder
@dataclass
class RunFolder:
    """A run folder ready for training: what it holds, where training starts."""

    spec: dict[str, Any]  # as stored in run_spec.json
    resumed_from: int = 0  # the first epoch this session trains (0: a fresh run)
    fit_finished: bool = False  # a previous session trained to the end and died before run.json
    best_val_accuracy: float | None = None  # the best epoch so far (a resumed run must beat it)
    restore_from: Path | None = None  # the backup weights the resumed fit starts from
    recovered: list[str] = field(default_factory=list)  # damaged files set aside, one line each


def open_run_folder(
    out_dir: str | os.PathLike[str], spec: dict[str, Any], config: TrainingRecipe, *, overwrite: bool = False
) -> RunFolder:
    """Start a run in ``out_dir``, or resume the interrupted run there with the same ``spec``.

    Raises :class:`RunFolderError`, before anything is written, for a folder that holds a
    finished run (unless ``overwrite``), a run with other settings (naming what differs),
    or cannot be written. A damaged ``best.keras`` or backup is set aside by name.
    """
    out = Path(out_dir)
    resuming = check_run_folder(out, overwrite=overwrite) == "resume"
    for folder in (out, out / BACKUP_DIR):  # temporary files of a process killed mid-write (a glob of
        files.remove_abandoned_partials(folder)  # a missing folder finds nothing)
    run = _resume(out, spec, config) if resuming else RunFolder(spec)
    if run.resumed_from == 0 and not run.fit_finished:  # a fresh start, or an interrupted run with no backup
        try:
            out.mkdir(parents=True, exist_ok=True)
            clear_run(out)
            run.spec = {**spec, "created_at": now()}
            write_json(out / RUN_SPEC, run.spec)
        except OSError as error:
            raise RunFolderError(f"cannot write the run folder {out} ({error.strerror or error})") from error
    return run


def _resume(out: Path, spec: dict[str, Any], config: TrainingRecipe) -> RunFolder:
    """The interrupted run in ``out`` if it has ``spec``: where it resumes; damaged files set aside."""
    saved = read_run_file(out) or {}
    if differences := spec_differences(saved, spec, config):
        raise RunFolderError(
            f"{out} holds an interrupted run with other settings; it differs in {'; '.join(differences)}. "
            f"Resume it with the same settings, or {_AFRESH}"
        )
    run, best = RunFolder(saved, fit_finished=bool(saved.get("fit_finished_at"))), out / BEST_MODEL
    if problem := (file_problem(best) if best.exists() or best.is_symlink() else None):
        run.recovered.append(
            set_aside_damaged(best, problem, "training resumes from the last readable state")
        )
    # Unfinished, or finished without a readable best.keras: from the last backup (record.recovered says so).
    if not (run.fit_finished and best.exists()):
        run.resumed_from, run.restore_from = _resume_point(out, run.recovered)
        if run.fit_finished and run.restore_from is None:
            what = f"is damaged (kept as {BEST_MODEL}.damaged)" if problem else "is missing"
            raise RunFolderError(
                f"{escape_name(out)} says its training finished, but its {BEST_MODEL} {what} and no backup is left to "
                f"recover from; {_AFRESH}"
            )
        run.fit_finished = False
        # Rows of epochs after the last backup would be trained again: drop them, so
        # history.csv never holds an epoch twice.
        _keep_history_rows(out / HISTORY_CSV, run.resumed_from)
    history = read_history_csv(out / HISTORY_CSV) if best.exists() else {}
    if run.fit_finished:  # the previous session trained to the end: no epoch is left
        run.resumed_from = len(history.get("epoch", []))
    run.best_val_accuracy = max(history.get("val_accuracy") or [None])
    return run


def _keep_history_rows(path: Path, before_epoch: int) -> None:
    """Drop the rows of epochs >= ``before_epoch`` (they will be trained again) and rows cut short.

    Keras' CSVLogger writes the epoch first and numbers only, so a row is split on commas.
    """
    header, *rows = (path.read_text() if path.exists() else "").splitlines(keepends=True) or [""]
    kept = [
        row
        for row in rows
        if row.endswith("\n")
        and row.count(",") == header.count(",")
        and (epoch := row.split(",")[0]).isdigit()
        and int(epoch) < before_epoch
    ]
    if len(kept) < len(rows):
        files.atomic_write_text(path, header + "".join(kept))


# --------------------------------------------------------------------------- the backup and damaged files
def file_problem(path: Path) -> str | None:
    """Why a ``.keras`` model or an HDF5 weights file cannot be read back (cut short, overwritten...), or None."""
    import h5py

    def read(_: str, item: Any) -> None:  # every value: a cut-short file fails here
        if isinstance(item, h5py.Dataset):
            item[()]

    try:
        if path.suffix == ".keras":
            load_model(path)
        else:
            with h5py.File(path, "r") as handle:
                handle.visititems(read)
    except Exception as error:  # noqa: BLE001 - a torn file fails in Keras, zipfile or h5py alike
        return _one_line(error) or type(error).__name__
    return None


def set_aside_damaged(path: Path, problem: str, what_next: str) -> str:
    """Rename a damaged run file to ``<name>.damaged`` (kept, never deleted); return the line reported."""
    target, number = path.with_name(f"{path.name}.damaged"), 1
    while target.exists() or target.is_symlink():
        number += 1
        target = path.with_name(f"{path.name}.damaged{number}")
    os.replace(path, target)
    line = f"{escape_name(path)} is damaged ({problem[:200]}); it is kept as {escape_name(target.name)} and {what_next}"
    print(f"warning: {line}", file=sys.stderr, flush=True)
    return line


def _resume_point(out: Path, damaged: list[str]) -> tuple[int, Path | None]:
    """The last readable backup ``(epochs done, weights)``: the epoch its metadata names, else an earlier one.

    Backups are written atomically (:class:`RunBackup`), so a crash never tears one; a file
    damaged otherwise (a disk error, a copy cut short, an earlier version's torn write) is
    set aside by name (its line appended to ``damaged``) and the run resumes from the one
    before it; with none left, from epoch 0.
    """
    backup = out / BACKUP_DIR
    try:
        recorded: int | None = int(read_json(backup / BACKUP_METADATA)["epoch"])
    except (OSError, ValueError, KeyError, TypeError):
        recorded = None
    saved = {
        int(m.group(1)): path for path in backup.glob("*") if (m := _BACKUP_WEIGHTS.fullmatch(path.name))
    }
    if recorded is not None and recorded not in saved and (backup / LEGACY_BACKUP_WEIGHTS).is_file():
        saved[recorded] = backup / LEGACY_BACKUP_WEIGHTS
    # A backup past the recorded epoch was written, but its history row may not be: train that epoch again.
    for epoch in sorted((epoch for epoch in saved if recorded is None or epoch <= recorded), reverse=True):
        if (problem := file_problem(saved[epoch])) is None:
            return epoch, saved[epoch]
        damaged.append(set_aside_damaged(saved[epoch], problem, "the run resumes from the backup before it"))
    return 0, None


class RunBackup(keras.callbacks.Callback):
    """After every epoch, the training state (weights and optimizer) in ``backup/``.

    Each epoch's state is a file of its own, ``epoch-<n>.weights.h5``, written through a
    temporary name and renamed, and only then named in ``training_metadata.json``
    (written the same way): a crash at any moment leaves the previous state whole. The
    state before the last is kept too, the fall-back if the last is damaged.
    """

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.backup = folder / BACKUP_DIR

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self.backup.mkdir(exist_ok=True)
        with files.atomic_output(self.backup / f"epoch-{epoch + 1:04d}.weights.h5") as partial:
            self.model.save_weights(partial)
        write_json(self.backup / BACKUP_METADATA, {"epoch": epoch + 1, "batch": 0})
        (self.backup / f"epoch-{epoch - 1:04d}.weights.h5").unlink(missing_ok=True)  # two states back


class BestModelCheckpoint(keras.callbacks.Callback):
    """``best.keras``: the model of the best validation accuracy so far, written atomically."""

    def __init__(self, path: Path, best: float | None = None) -> None:
        super().__init__()
        self.path, self.best = path, -np.inf if best is None else best

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        # A missing or NaN accuracy (a diverged epoch) is never better than any.
        if (value := float((logs or {}).get("val_accuracy", np.nan))) > self.best:
            with files.atomic_output(self.path) as partial:
                self.model.save(partial)
            self.best = value


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


# --------------------------------------------------------------------------- the run
def build_for_training(
    config: TrainingRecipe,
    builder: Callable[[Any], keras.Model],
    steps_per_epoch: int,
    epochs: int,
    *,
    jit_compile: bool | str = "auto",
    mixed_precision: str | None = None,
) -> keras.Model:
    """Build the model in the asked precision (a dtype policy) and compile it with the recipe."""
    with devices.precision_policy(mixed_precision):
        model = builder(config)
        compile_for_training(model, config, steps_per_epoch, epochs, jit_compile)
    return model


@dataclass
class TrainingRun:
    """What :func:`train` returns: the model, its history and the run's files."""

    model: keras.Model
    history: dict[str, list[float]]
    out_dir: Path
    record: dict[str, Any] = field(default_factory=dict)
    reused: bool = False  # read back from a finished run (train's ``reuse``), not trained

    @property
    def best_model_path(self) -> Path:
        return self.out_dir / BEST_MODEL


def train(
    config: TrainingRecipe,
    data: DataSplits,
    out_dir: str | os.PathLike[str],
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
    """Train a model with ``config``'s recipe on ``data``; resumable and logged.

    Args:
        config: the recipe and the architecture: a ShiftViTConfig, or a ViTConfig
            (the model is built by its family's builder: :func:`shiftvit_lib.vit.build_vit`).
        data: splits from :func:`shiftvit_lib.load_cifar10`.
        out_dir: where ``run_spec.json``, ``best.keras``, ``history.csv``,
            ``run.json`` and the backup go. Running again with the same ``out_dir``
            after an interruption resumes from the last finished epoch, but only with
            the same settings (:func:`run_spec`); other settings, or a folder that
            holds a finished run, raise :class:`RunFolderError` before anything is
            written, saying what differs.
        epochs: overrides ``config.epochs`` (e.g. a short run).
        jit_compile: XLA compilation (``"auto"``, True, False).
        mixed_precision: a Keras dtype policy such as ``"mixed_bfloat16"`` or
            ``"mixed_float16"`` (loss scaling is added by Keras for float16);
            ``"auto"`` picks :func:`~shiftvit_lib.tools.devices.recommended_mixed_precision`
            for this device (float32 on a CPU); ``None`` trains in float32.
        extra_callbacks: appended after the built-in callbacks.
        seed: seeds weights, augmentation and shuffling.
        overwrite: start afresh in ``out_dir``: first remove the files a previous
            run wrote there (:func:`clear_run`; nothing else in the folder).
        reuse: a finished run with the same settings in ``out_dir`` is read back
            (``reused=True``) instead of refused, so re-running a lesson never trains it twice.

    To train on several devices, set a ``keras.distribution`` (``DataParallel``) first.
    """
    family = family_of(config)  # a TypeError for anything but a model config
    epochs = check_positive_int(epochs if epochs is not None else config.epochs, "epochs")
    check_training_inputs(config, data, seed=seed)
    if mixed_precision == "auto":
        mixed_precision = devices.recommended_mixed_precision()
    spec = run_spec(config, data, epochs=epochs, seed=seed, mixed_precision=mixed_precision)
    out = Path(out_dir)
    if reuse and not overwrite and (record := finished_run(out, config, spec)) is not None:
        try:
            return TrainingRun(
                load_model(out / BEST_MODEL), read_history_csv(out / HISTORY_CSV), out, record, True
            )
        except (ValueError, OSError) as error:  # reported by path and set aside (kept); trained again
            set_aside_damaged(out / BEST_MODEL, _one_line(error), "the run is trained again")
            overwrite = True
    check_run_folder(out, overwrite=overwrite)  # writes nothing: a wrong folder fails before the lock
    with run_folder_lock(out):  # a second process on this folder stops here, having written nothing
        folder = open_run_folder(out, spec, config, overwrite=overwrite)
        keras.utils.set_random_seed(seed)
        train_ds, val_ds, steps_per_epoch = training_datasets(config, data, seed)
        builder = functools.partial(family.build, seed=seed)
        model = build_for_training(
            config, builder, steps_per_epoch, epochs, jit_compile=jit_compile, mixed_precision=mixed_precision
        )
        started = time.perf_counter()
        if not folder.fit_finished:
            if folder.restore_from is not None:  # the weights and optimizer state, as Keras' own backup does
                if not model.optimizer.built:
                    model.optimizer.build(model.trainable_variables)
                model.load_weights(folder.restore_from)
            if folder.resumed_from < epochs:  # the datasets shuffle themselves (seeded), so fit must not
                callbacks = [
                    ThroughputMeter(min(steps_per_epoch * config.batch_size, len(data.y_train))),
                    keras.callbacks.CSVLogger(str(out / HISTORY_CSV), append=True),
                    # After a resume, only an epoch better than any seen before replaces best.keras.
                    BestModelCheckpoint(out / BEST_MODEL, folder.best_val_accuracy),
                    # After the history row and best.keras: a death in between redoes that epoch.
                    RunBackup(out),
                    *extra_callbacks,
                ]
                if patience := config.early_stopping_patience:
                    stop = keras.callbacks.EarlyStopping(
                        "val_accuracy", patience=patience, mode="max", restore_best_weights=True
                    )
                    callbacks.insert(4, stop)
                model.fit(
                    train_ds,
                    validation_data=val_ds,
                    epochs=epochs,
                    initial_epoch=folder.resumed_from,
                    callbacks=callbacks,
                    verbose=verbose,
                    shuffle=False,
                )
            # Fitting ended: a session that dies before run.json does not train again.
            write_json(out / RUN_SPEC, {**folder.spec, "fit_finished_at": now()})
        wall_seconds = time.perf_counter() - started
        # No best.keras if no epoch had a finite validation accuracy: the model as trained.
        best = load_model(out / BEST_MODEL) if (out / BEST_MODEL).exists() else model
        test_metrics = evaluate(best, data, batch_size=config.batch_size)
        history = read_history_csv(out / HISTORY_CSV)
        speeds = history.get("images_per_second", [])
        record = {
            "config": config.to_dict(),
            "epochs_requested": epochs,
            "epochs_run": len(history.get("epoch", [])),
            "resumed_from_epoch": folder.resumed_from,
            "best_val_accuracy": max(history.get("val_accuracy", [float("nan")])),
            "test": test_metrics,
            "wall_seconds_this_session": round(wall_seconds, 2),
            # Over all sessions of a resumed run: every epoch's time, validation included.
            "train_seconds": round(float(sum(history.get("epoch_seconds", []))), 2),
            # The first epoch includes compilation, so it is left out when possible (and so in
            # benchmarks/benchmark.py, which reports its figure by the same rule).
            "train_images_per_second": round(float(np.median(speeds[1:] or speeds)), 1) if speeds else None,
            "parameters": int(model.count_params()),
            "jit_compile": jit_compile,
            "mixed_precision": mixed_precision,
            **provenance(data),
        }
        if folder.recovered:  # damaged files set aside on the way: the record says so
            record["recovered"] = folder.recovered
        write_json(out / RUN_RECORD, record)
        shutil.rmtree(out / BACKUP_DIR, ignore_errors=True)  # the record is written: nothing to resume
    return TrainingRun(best, history, out, record)


# --------------------------------------------------------------------------- finished runs
def load_run(folder: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """The ``run.json`` record and the ``history.csv`` of a finished run in ``folder``.

    Lessons use it to show a full run that was trained elsewhere (on a GPU) and
    stored under ``results/``. Raises ``FileNotFoundError`` naming the missing file.
    """
    folder = Path(folder)
    if not (folder / RUN_RECORD).exists():
        raise FileNotFoundError(
            f"no finished run in {folder}: {RUN_RECORD} is missing (a run writes it when it ends; "
            "results/README.md gives the commands for the full runs)"
        )
    return json.loads((folder / RUN_RECORD).read_text()), read_history_csv(folder / HISTORY_CSV)


def describe_run(record: dict[str, Any]) -> str:
    """A few lines on a run record: data, epochs, test accuracy, time, speed and machine."""
    test, machine, config = record["test"], record.get("machine", {}), record.get("config", {})
    versions = "".join(f", {name} {version}" for name, version in machine.get("backend_versions", {}).items())
    minutes, tta = record.get("train_seconds"), record.get("test_flip_tta")  # TTA: beside the plain figure
    lines = [
        f"preset {config.get('name', '?')!r} on {record['data_source']}",
        f"split sizes {record.get('split_sizes')}",
        f"epochs run {record['epochs_run']} of {record['epochs_requested']}; best validation top-1 "
        f"{record['best_val_accuracy']:.2%}",
        f"test top-1 {test['accuracy']:.2%}, top-5 {test['top5']:.2%} on {test['images']:,} test images",
        *(
            [f"training time (sum of epochs, validation included) {minutes / 60:.1f} min"]
            if minutes is not None
            else []
        ),
        *([f"with flip test-time augmentation: test top-1 {tta['accuracy']:.2%}"] if tta else []),
        f"training images/s (median epoch) {record.get('train_images_per_second')}, "
        f"mixed precision {record.get('mixed_precision')}, XLA {record.get('jit_compile')}",
        f"machine: backend {machine.get('backend')}, Keras {machine.get('keras')}{versions}, "
        f"devices {machine.get('devices')}, {machine.get('cpu_count')} CPU cores",
        f"finished {record.get('finished_at')}",
    ]
    return "\n".join(lines)
