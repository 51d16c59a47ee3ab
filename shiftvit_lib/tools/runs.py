"""The resumable training run and its folder: what a run writes, and how it resumes or is reused.

A run folder holds ``run_spec.json`` (what the run *is*, written when it starts),
``history.csv`` and ``best.keras`` (written while it trains), ``backup/`` (the training
state after each epoch, :class:`RunBackup`, removed once the record is written) and
``run.json`` (the record written when it ends). Every file but the appended history is
written through a temporary name and renamed (:mod:`shiftvit_lib.tools.files`), so a crash
never leaves half a file; a file damaged otherwise is set aside by name and the run
resumes from the last readable state. :func:`train` is the run, a sequence of named steps that a lesson can call or
show on its own:

1. :func:`open_run_folder` -- start a run folder, or resume the interrupted run in it
   (only with the same settings, :func:`run_spec`);
2. :func:`shiftvit_lib.recipe.training_datasets` -- the training and validation batches;
3. :func:`build_for_training` -- build the model in the asked precision and
   :func:`~shiftvit_lib.recipe.compile_for_training` it (under a ``keras.distribution``
   a lesson has set, on the devices it names);
4. :func:`training_callbacks` -- a throughput meter, the CSV history, the best-model
   checkpoint ``best.keras``, the backup (a run killed mid-way resumes from its last
   finished epoch) and early stopping;
5. :func:`fit` -- ``model.fit`` over the remaining epochs;
6. :func:`evaluate_best` -- the best checkpoint on the test split;
7. :func:`run_record` -- ``run.json``: config, data, epochs, time, images/s, metrics
   and machine.

Lesson 05 reads finished runs back with :func:`load_run` and :func:`describe_run`.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import shutil
import sys
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import keras
import numpy as np

from shiftvit_lib.config import TrainingRecipe, family_of
from shiftvit_lib.data import DataSplits
from shiftvit_lib.recipe import compile_for_training, evaluate, training_datasets
from shiftvit_lib.tools.devices import (
    describe_machine,
    precision_policy,
    recommended_mixed_precision,
)
from shiftvit_lib.tools.files import (
    atomic_output,
    atomic_write_text,
    check_keras_archive,
    escape_name,
    read_json,
    remove_abandoned_partials,
)
from shiftvit_lib.tools.files import write_json as _write_json
from shiftvit_lib.tools.inference import load_model
from shiftvit_lib.tools.run_lock import run_folder_lock

BEST_MODEL = "best.keras"
HISTORY_CSV = "history.csv"
RUN_RECORD = "run.json"
BACKUP_DIR = "backup"
RUN_SPEC = "run_spec.json"
RUN_FILES = (RUN_SPEC, HISTORY_CSV, BEST_MODEL, RUN_RECORD)
# Fields of run_spec.json that are not the run's identity: the folder's progress, and the data
# source's sentence (an 'auto' fallback names its network error, which may differ between
# sessions; the data's identity is its hash, data_digest).
_SPEC_NOT_COMPARED = ("format", "created_at", "fit_finished_at", "data_source")


class RunFolderError(ValueError):
    """An output folder that :func:`train` must not use as asked; the message says what to do."""


def now() -> str:
    """The local time as run records write it."""
    return time.strftime("%Y-%m-%d %H:%M:%S %Z")


def write_json(path: Path, payload: dict[str, Any]) -> None:
    """Write JSON atomically (:func:`shiftvit_lib.tools.files.write_json`): never half a file."""
    _write_json(path, payload)


def read_history_csv(path: str | os.PathLike[str]) -> dict[str, list[float]]:
    """A ``history.csv`` written by training, as ``{metric: [value per epoch]}``."""
    path = Path(path)
    if not path.exists():
        return {}
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    history: dict[str, list[float]] = {}
    for row in rows:
        for key, value in row.items():
            history.setdefault(key, []).append(float(value))
    return history


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


def _builder_name(build_model: Callable[..., Any] | None, config: TrainingRecipe) -> str:
    function = build_model or family_of(config).build
    return f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', repr(function))}"


def run_spec(
    config: TrainingRecipe,
    data: DataSplits,
    *,
    epochs: int | None = None,
    seed: int = 42,
    mixed_precision: str | None = None,
    build_model: Callable[[Any], Any] | None = None,
) -> dict[str, Any]:
    """What a run *is*: the settings a resumed run must share with the one it continues.

    The config (architecture and recipe, batch size included), the data (its source
    sentence, split sizes and a hash of every image), the number of epochs (it sets
    the learning-rate schedule), the seed, the precision policy and the model
    builder. :func:`train` stores it in ``run_spec.json`` when a run starts.
    """
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
        "model_builder": _builder_name(build_model, config),
    }
    return json.loads(json.dumps(spec, default=str))  # as it reads back from the file


def in_current_form(saved_config: dict[str, Any], config: TrainingRecipe) -> dict[str, Any]:
    """A config dict that an older version recorded, as ``config``'s type writes it today.

    Fields added since take their defaults, which are what the older version did (a ViT
    recorded before ViTConfig shared the TrainingRecipe has no ``mixup_alpha``: it did not
    mix). A dict that is not of this type is returned as it is, so it still differs.
    """
    try:
        return type(config).from_dict(saved_config).to_dict()
    except (TypeError, ValueError):
        return saved_config


def spec_differences(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """The fields in which two run specs differ, e.g. ``["epochs (4 -> 6)", "config.lr_max (...)"]``."""
    differences = []
    for key in sorted(set(saved) | set(current)):
        if key in _SPEC_NOT_COMPARED or saved.get(key) == current.get(key):
            continue
        if key == "config" and isinstance(saved.get(key), dict) and isinstance(current.get(key), dict):
            old, new = saved[key], current[key]
            for name in sorted(set(old) | set(new)):
                if old.get(name) != new.get(name):
                    differences.append(f"config.{name} ({old.get(name)!r} -> {new.get(name)!r})")
        elif key == "data_digest":
            differences.append("data (other images or labels)")
        else:
            differences.append(f"{key} ({saved.get(key)!r} -> {current.get(key)!r})")
    return differences


def read_run_spec(folder: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The ``run_spec.json`` of a run folder, or ``None`` if it has none."""
    path = Path(folder) / RUN_SPEC
    if not path.exists() and not path.is_symlink():
        return None
    try:
        spec = read_json(path, RUN_SPEC)
        if not isinstance(spec, dict):
            raise ValueError(f"{escape_name(path)} holds no settings (a JSON {type(spec).__name__})")
        return spec
    except (OSError, ValueError) as error:
        raise RunFolderError(
            f"{escape_name(path)} is unreadable ({' '.join(str(error).split())}); pass overwrite=True (--overwrite) to start "
            "the run afresh there, or choose another folder"
        ) from error


def finished_run(out_dir: Path, config: TrainingRecipe, spec: dict[str, Any]) -> dict[str, Any] | None:
    """The ``run.json`` record of a finished run in ``out_dir`` with exactly ``spec``, else ``None``.

    Configs recorded by older versions are compared in their current form
    (:func:`in_current_form`). A folder without ``run_spec.json`` (older still) matches
    on its recorded config and epochs.
    """
    record_path = out_dir / RUN_RECORD
    if not record_path.exists():
        return None
    try:
        record = read_json(record_path, RUN_RECORD)
    except (OSError, ValueError) as error:
        raise RunFolderError(
            f"{' '.join(str(error).split())}; pass overwrite=True (--overwrite) to train "
            "afresh there, or choose another folder"
        ) from None
    saved = read_run_spec(out_dir)
    if saved is None:
        saved = {"config": record.get("config"), "epochs": record.get("epochs_requested")}
        spec = {"config": spec["config"], "epochs": spec["epochs"]}
    saved = {**saved, "config": in_current_form(saved.get("config") or {}, config)}
    return record if not spec_differences(saved, spec) else None


# --------------------------------------------------------------------------- before anything is written
MAX_SEED = 2**32 - 1  # NumPy's and Keras' seeds are 32-bit


def check_training_inputs(config: TrainingRecipe, data: DataSplits, *, epochs: int, seed: int) -> None:
    """Raise ``ValueError`` (one line saying what to change) for a run that could not train.

    :func:`train` calls it before it touches the run folder, so a refused run leaves the
    folder as it was: a finished run there is not deleted by ``overwrite`` only to fail
    a moment later, and no ``run_spec.json`` pins the mistaken settings.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed must be a whole number from 0 to 2**32 - 1, got {seed!r}")
    if epochs < 1:
        raise ValueError(f"epochs must be >= 1, got {epochs}")
    expected = tuple(config.input_shape)
    if tuple(data.x_train.shape[1:]) != expected:
        raise ValueError(
            f"the images are {'x'.join(map(str, data.x_train.shape[1:]))}, but preset "
            f"{getattr(config, 'name', '?')!r} takes {'x'.join(map(str, expected))} input; choose a preset "
            "made for this data (the 'presets' command lists each preset's input size)"
        )
    if len(data.y_train) == 0:
        raise ValueError("the data has no training images; check the data source")
    if len(data.y_val) == 0:
        raise ValueError(
            "the data has no validation images (val_fraction=0?); training picks its best "
            "epoch on them: load the data with val_fraction > 0, e.g. 0.2"
        )
    if config.batch_size > len(data.y_train):
        raise ValueError(
            f"batch size {config.batch_size:,} is more than the {len(data.y_train):,} training "
            f"images; use a batch size of at most {len(data.y_train):,}"
        )


# --------------------------------------------------------------------------- the folder
def _has_run_files(folder: Path) -> bool:
    return any((folder / name).exists() for name in (*RUN_FILES, BACKUP_DIR))


def check_run_folder(out_dir: str | os.PathLike[str], *, overwrite: bool = False) -> str:
    """Check that ``out_dir`` may take a run, writing nothing; returns ``"new"`` or ``"resume"``.

    Raises :class:`RunFolderError` (a ``ValueError``) when ``out_dir`` is a file, or
    cannot be created or written, or (unless ``overwrite``) holds a finished run or
    training files of an unknown run. Whether an interrupted run's settings match is
    checked by :func:`open_run_folder`, which knows them.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise RunFolderError(f"the output folder {out} is a file; choose another folder")
    existing = out
    while not existing.exists():  # the nearest folder that exists: it must let us create ours
        existing = existing.parent
    if not existing.is_dir():
        raise RunFolderError(f"cannot create the output folder {out}: {existing} is a file")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise RunFolderError(f"cannot write to {existing} (permission denied); choose another output folder")
    if not out.exists() or overwrite or not _has_run_files(out):
        return "new"
    record = out / RUN_RECORD
    if record.exists():
        raise RunFolderError(
            f"{out} already holds a finished run (its record: {record}); train into "
            "another folder, or pass overwrite=True (--overwrite) to replace it"
        )
    if read_run_spec(out) is None:
        raise RunFolderError(
            f"{out} holds training files without {RUN_SPEC} (an older version's or an "
            "unknown run), so it cannot be resumed safely; pass overwrite=True "
            "(--overwrite) to start afresh there, or choose another folder"
        )
    return "resume"


def clear_run(out_dir: str | os.PathLike[str]) -> None:
    """Remove exactly the files a :func:`train` call writes into ``out_dir`` (nothing else)."""
    out = Path(out_dir)
    for name in RUN_FILES:
        (out / name).unlink(missing_ok=True)
    if (out / BACKUP_DIR).is_dir():
        shutil.rmtree(out / BACKUP_DIR)


@dataclass
class RunFolder:
    """A run folder ready for training: where it is, what it holds, where training starts."""

    path: Path
    spec: dict[str, Any]  # as stored in run_spec.json
    resumed_from: int  # the first epoch this session trains (0: a fresh run)
    fit_finished: bool  # a previous session trained to the end and died before run.json
    best_val_accuracy: float | None  # the best epoch so far (a resumed run must beat it)
    restore_from: Path | None = None  # the backup weights the resumed fit starts from
    recovered: list[str] = field(default_factory=list)  # damaged files set aside, one line each

    def mark_fit_finished(self) -> None:
        """Record that fitting ended, so a session that dies before run.json does not train again."""
        self.spec = {**self.spec, "fit_finished_at": now()}
        write_json(self.path / RUN_SPEC, self.spec)


def open_run_folder(
    out_dir: str | os.PathLike[str], spec: dict[str, Any], config: TrainingRecipe, *, overwrite: bool = False
) -> RunFolder:
    """Start a run in ``out_dir``, or resume the interrupted run there with the same ``spec``.

    Raises :class:`RunFolderError`, before anything is written, for a folder that holds a
    finished run (unless ``overwrite``), a run with other settings (naming what differs),
    or cannot be written.
    """
    out = Path(out_dir)
    state = check_run_folder(out, overwrite=overwrite)
    for folder in (out, out / BACKUP_DIR):  # temporary files of a process killed mid-write
        if folder.is_dir():
            remove_abandoned_partials(folder)
    if state == "new":
        try:
            out.mkdir(parents=True, exist_ok=True)
            if overwrite:
                clear_run(out)
            stored = {**spec, "created_at": now()}
            write_json(out / RUN_SPEC, stored)
        except OSError as error:
            raise RunFolderError(f"cannot write the run folder {out} ({error.strerror or error})") from error
        return RunFolder(out, stored, resumed_from=0, fit_finished=False, best_val_accuracy=None)

    saved = read_run_spec(out) or {}
    differences = spec_differences(
        {**saved, "config": in_current_form(saved.get("config") or {}, config)}, spec
    )
    if differences:
        raise RunFolderError(
            f"{out} holds an interrupted run with other settings; it differs in "
            f"{'; '.join(differences)}. Resume it with the same settings, pass overwrite=True "
            "(--overwrite) to start afresh there, or choose another folder"
        )
    recovered: list[str] = []
    best = out / BEST_MODEL
    problem = keras_file_problem(best) if best.exists() or best.is_symlink() else None
    if problem:
        recovered.append(set_aside_damaged(best, problem, "training resumes from the last readable state"))
    fit_finished = bool(saved.get("fit_finished_at"))
    point = _resume_point(out) if not fit_finished or not best.exists() else None
    recovered += point.damaged if point else []
    if fit_finished and not best.exists():
        if point is None or point.weights is None:
            state = (
                f"{BEST_MODEL} is damaged (kept as {BEST_MODEL}.damaged)"
                if problem
                else f"it holds no {BEST_MODEL}"
            )
            raise RunFolderError(
                f"{escape_name(out)} says its training finished, but {state} and no backup "
                "is left to recover from; pass overwrite=True (--overwrite) to train afresh "
                "there, or choose another folder"
            )
        fit_finished = False  # evaluated from the last backup instead: record.recovered says so
    if fit_finished:
        resumed_from = len(read_history_csv(out / HISTORY_CSV).get("epoch", []))
    else:
        # Rows of epochs after the last backup would be trained again: drop them, so
        # history.csv never holds an epoch twice. Nothing backed up: start over.
        resumed_from = point.epoch
        _keep_history_rows(out / HISTORY_CSV, resumed_from)
        if resumed_from == 0:
            clear_run(out)
            write_json(out / RUN_SPEC, saved)
    val_accuracy = read_history_csv(out / HISTORY_CSV).get("val_accuracy") if best.exists() else None
    return RunFolder(
        out,
        saved,
        resumed_from,
        fit_finished,
        max(val_accuracy) if val_accuracy else None,
        restore_from=None if fit_finished else point.weights,
        recovered=recovered,
    )


# --------------------------------------------------------------------------- the backup
BACKUP_METADATA = "training_metadata.json"
LEGACY_BACKUP_WEIGHTS = "latest.weights.h5"  # Keras' BackupAndRestore, in runs of earlier versions
_BACKUP_WEIGHTS = re.compile(r"epoch-(\d+)\.weights\.h5")


def backup_weights_path(folder: Path, epoch: int) -> Path:
    """The backup of the training state after ``epoch`` epochs."""
    return folder / BACKUP_DIR / f"epoch-{epoch:04d}.weights.h5"


def weights_file_problem(path: Path) -> str | None:
    """Why an HDF5 weights file cannot be read back (cut short, overwritten...), or None."""
    import h5py

    try:
        with h5py.File(path, "r") as handle:
            datasets: list[Any] = []
            handle.visititems(
                lambda _, item: datasets.append(item) if isinstance(item, h5py.Dataset) else None
            )
            for dataset in datasets:
                dataset[()]  # reads every value: a cut-short file fails here
    except Exception as error:  # noqa: BLE001 - h5py raises OSError, KeyError, RuntimeError... alike
        return " ".join(str(error).split()) or type(error).__name__
    return None


def keras_file_problem(path: Path) -> str | None:
    """Why a ``.keras`` file cannot be loaded back (cut short, overwritten...), or None."""
    try:
        check_keras_archive(path)
        with zipfile.ZipFile(path) as archive:
            failed = archive.testzip()  # every member's checksum
            if failed:
                return f"its member {escape_name(failed)} fails its checksum"
            if "model.weights.h5" in archive.namelist():
                with archive.open("model.weights.h5") as member:
                    return weights_file_problem(io.BytesIO(member.read()))  # type: ignore[arg-type]
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as error:
        return " ".join(str(error).split())
    return None


def set_aside_damaged(path: Path, problem: str, what_next: str) -> str:
    """Rename a damaged run file to ``<name>.damaged`` (kept, never deleted); return the line reported."""
    target = path.with_name(f"{path.name}.damaged")
    number = 1
    while target.exists() or target.is_symlink():
        number += 1
        target = path.with_name(f"{path.name}.damaged{number}")
    os.replace(path, target)
    line = (
        f"{escape_name(path)} is damaged ({problem[:200]}); it is kept as {escape_name(target.name)} "
        f"and {what_next}"
    )
    print(f"warning: {line}", file=sys.stderr, flush=True)
    return line


@dataclass
class ResumePoint:
    """Where a resumed fit starts: ``epoch`` epochs done, the weights to load, what was damaged."""

    epoch: int
    weights: Path | None
    damaged: list[str]


def _resume_point(out: Path) -> ResumePoint:
    """The last readable backup: the epoch its metadata names, else an earlier one kept, else 0.

    Backups are written atomically (:class:`RunBackup`), so a crash never tears one; a file
    damaged otherwise (a disk error, a copy cut short, an earlier version's torn write) is
    set aside by name and the run resumes from the one before it.
    """
    backup = out / BACKUP_DIR
    try:
        recorded: int | None = int(read_json(backup / BACKUP_METADATA)["epoch"])
    except (OSError, ValueError, KeyError, TypeError):
        recorded = None
    files = {
        int(match.group(1)): path
        for path in (backup.glob("epoch-*.weights.h5") if backup.is_dir() else [])
        if (match := _BACKUP_WEIGHTS.fullmatch(path.name))
    }
    if recorded is not None and recorded not in files and (backup / LEGACY_BACKUP_WEIGHTS).is_file():
        files[recorded] = backup / LEGACY_BACKUP_WEIGHTS
    damaged = []
    for epoch in sorted(files, reverse=True):
        if recorded is not None and epoch > recorded:
            continue  # written, but its history row may not be: train that epoch again
        problem = weights_file_problem(files[epoch])
        if problem is None:
            return ResumePoint(epoch, files[epoch], damaged)
        damaged.append(set_aside_damaged(files[epoch], problem, "the run resumes from the backup before it"))
    return ResumePoint(0, None, damaged)


class RunBackup(keras.callbacks.Callback):
    """After every epoch, the training state (weights and optimizer) in ``backup/``.

    Each epoch's state is a file of its own, ``epoch-<n>.weights.h5``, written through a
    temporary name and renamed, and only then named in ``training_metadata.json``
    (written the same way): a crash at any moment leaves the previous state whole. The
    state before the last is kept too, the fall-back if the last is damaged.
    """

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        done = epoch + 1
        path = backup_weights_path(self.folder, done)
        path.parent.mkdir(exist_ok=True)
        with atomic_output(path) as partial:
            self.model.save_weights(partial)
        write_json(path.parent / BACKUP_METADATA, {"epoch": done, "batch": 0})
        for old in path.parent.glob("epoch-*.weights.h5"):
            match = _BACKUP_WEIGHTS.fullmatch(old.name)
            if match and int(match.group(1)) < done - 1:
                old.unlink(missing_ok=True)


def restore_backup(model: keras.Model, weights: Path) -> None:
    """Load a backup's weights and optimizer state into a compiled ``model`` (as Keras' own does)."""
    if model.optimizer is not None and not model.optimizer.built:
        model.optimizer.build(model.trainable_variables)
    model.load_weights(weights)


class BestModelCheckpoint(keras.callbacks.Callback):
    """``best.keras``: the model of the best validation accuracy so far, written atomically."""

    def __init__(self, path: Path, best: float | None = None) -> None:
        super().__init__()
        self.path = path
        self.best = best

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        value = (logs or {}).get("val_accuracy")
        if value is None or not np.isfinite(value) or (self.best is not None and not value > self.best):
            return
        with atomic_output(self.path) as partial:
            self.model.save(partial)
        self.best = float(value)


def _keep_history_rows(path: Path, before_epoch: int) -> None:
    """Drop the rows of epochs >= ``before_epoch`` (they will be trained again)."""
    if not path.exists():
        return
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    if not rows:
        return
    header, body = rows[0], rows[1:]
    column = header.index("epoch") if "epoch" in header else 0
    kept = [row for row in body if row and _epoch_of(row, column) < before_epoch]
    if len(kept) == len(body):
        return
    text = io.StringIO(newline="")
    csv.writer(text).writerows([header, *kept])
    atomic_write_text(path, text.getvalue())


def _epoch_of(row: list[str], column: int) -> float:
    """The epoch of a history row; a row cut short by a crash counts as after every epoch."""
    try:
        return int(float(row[column]))
    except (IndexError, ValueError):
        return float("inf")


# --------------------------------------------------------------------------- the record
class ThroughputMeter(keras.callbacks.Callback):
    """Adds ``epoch_seconds`` and ``images_per_second`` to every epoch's logs.

    ``epoch_seconds`` is the whole epoch, validation included; ``images_per_second``
    counts training alone (the clock stops when validation starts).
    """

    def __init__(self, images_per_epoch: int) -> None:
        super().__init__()
        self.images_per_epoch = images_per_epoch
        self._start, self._training_end = 0.0, None

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
        if logs is not None:
            logs["epoch_seconds"] = now - self._start
            logs["images_per_second"] = self.images_per_epoch / max(training_seconds, 1e-9)


def run_record(
    folder: RunFolder,
    config: TrainingRecipe,
    data: DataSplits,
    *,
    epochs: int,
    test_metrics: dict[str, float],
    wall_seconds: float,
    parameters: int,
    settings: dict[str, Any],
    machine: dict[str, Any],
) -> dict[str, Any]:
    """The ``run.json`` record of a finished run, written into its folder and returned.

    ``settings``: how it ran (``jit_compile``, ``mixed_precision``).
    """
    history = read_history_csv(folder.path / HISTORY_CSV)
    speeds = history.get("images_per_second", [])
    record = {
        "config": config.to_dict(),
        "data_source": data.source,
        "split_sizes": data.split_sizes(),
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
        "parameters": parameters,
        **settings,
        "machine": machine,
        "finished_at": now(),
    }
    if folder.recovered:  # damaged files set aside on the way: the record says so
        record["recovered"] = list(folder.recovered)
    write_json(folder.path / RUN_RECORD, record)
    return record


def load_run(folder: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """The ``run.json`` record and the ``history.csv`` of a finished run in ``folder``.

    Lessons use it to show a full run that was trained elsewhere (on a GPU) and
    stored under ``results/``. Raises ``FileNotFoundError`` naming the missing file.
    """
    folder = Path(folder)
    record_path = folder / RUN_RECORD
    if not record_path.exists():
        raise FileNotFoundError(
            f"no finished run in {folder}: {RUN_RECORD} is missing (a run writes it when it ends; "
            "results/README.md gives the commands for the full runs)"
        )
    return json.loads(record_path.read_text()), read_history_csv(folder / HISTORY_CSV)


def describe_run(record: dict[str, Any]) -> str:
    """A few lines on a run record: data, epochs, test accuracy, time, speed and machine."""
    test, machine = record["test"], record.get("machine", {})
    config = record.get("config", {})
    train_seconds = record.get("train_seconds")
    backend_versions = "".join(
        f", {name} {version}" for name, version in machine.get("backend_versions", {}).items()
    )
    lines = [
        f"preset {config.get('name', '?')!r} on {record['data_source']}",
        f"split sizes {record.get('split_sizes')}",
        f"epochs run {record['epochs_run']} of {record['epochs_requested']}; best validation top-1 "
        f"{record['best_val_accuracy']:.2%}",
        f"test top-1 {test['accuracy']:.2%}, top-5 {test['top5']:.2%} on {test['images']:,} test images",
        f"training images/s (median epoch) {record.get('train_images_per_second')}, "
        f"mixed precision {record.get('mixed_precision')}, XLA {record.get('jit_compile')}",
        f"machine: backend {machine.get('backend')}, Keras {machine.get('keras')}{backend_versions}, "
        f"devices {machine.get('devices')}, "
        f"{machine.get('cpu_count')} CPU cores",
        f"finished {record.get('finished_at')}",
    ]
    if "test_flip_tta" in record:  # reported beside the plain figure, never instead of it
        lines.insert(
            4, f"with flip test-time augmentation: test top-1 {record['test_flip_tta']['accuracy']:.2%}"
        )
    if train_seconds is not None:
        lines.insert(4, f"training time (sum of epochs, validation included) {train_seconds / 60:.1f} min")
    return "\n".join(lines)


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
    with precision_policy(mixed_precision):
        model = builder(config)
        compile_for_training(model, config, steps_per_epoch, epochs, jit_compile)
    return model


def training_callbacks(
    config: TrainingRecipe,
    folder: RunFolder,
    images_per_epoch: int,
    extra: Sequence[keras.callbacks.Callback] = (),
) -> list[keras.callbacks.Callback]:
    """What :func:`fit` runs after every epoch, in this order, then ``extra``.

    The history row and the best model are written before the backup: if the process
    dies in between, the resumed run redoes that epoch and replaces its row.
    """
    # After a resume, only a better epoch than any seen before may overwrite best.keras.
    checkpoint = BestModelCheckpoint(folder.path / BEST_MODEL, folder.best_val_accuracy)
    callbacks: list[keras.callbacks.Callback] = [
        ThroughputMeter(images_per_epoch),
        keras.callbacks.CSVLogger(str(folder.path / HISTORY_CSV), append=True),
        checkpoint,
        RunBackup(folder.path),
    ]
    if config.early_stopping_patience:
        callbacks.append(
            keras.callbacks.EarlyStopping(
                monitor="val_accuracy",
                mode="max",
                patience=config.early_stopping_patience,
                restore_best_weights=True,
            )
        )
    return [*callbacks, *extra]


def fit(
    model: keras.Model,
    train_ds: Any,
    val_ds: Any,
    epochs: int,
    callbacks: Sequence[Any],
    folder: RunFolder,
    verbose: int | str = "auto",
) -> float:
    """Train the epochs the folder has not trained yet; returns the wall seconds it took."""
    started = time.perf_counter()
    if not folder.fit_finished:
        if folder.restore_from is not None:
            restore_backup(model, folder.restore_from)
        if folder.resumed_from < epochs:
            # The datasets shuffle themselves (seeded), so fit must not try to.
            model.fit(
                train_ds,
                validation_data=val_ds,
                epochs=epochs,
                initial_epoch=folder.resumed_from,
                callbacks=list(callbacks),
                verbose=verbose,
                shuffle=False,
            )
        folder.mark_fit_finished()
    return time.perf_counter() - started


def evaluate_best(
    model: keras.Model, folder: RunFolder, data: DataSplits, batch_size: int
) -> tuple[keras.Model, dict[str, float]]:
    """The best checkpoint (``model`` itself if none was saved) and its test metrics."""
    path = folder.path / BEST_MODEL
    if not path.exists():
        return model, evaluate(model, data, batch_size=batch_size)
    try:
        best = load_model(path)
    except (ValueError, OSError) as error:
        # Not even a zip archive: cut short or overwritten (a full disk, a copy that stopped).
        state = "is damaged and " if not zipfile.is_zipfile(path) else ""
        raise RunFolderError(
            f"{escape_name(path)} {state}cannot be loaded ({' '.join(str(error).split())[:300]}); "
            "restore it, or pass overwrite=True (--overwrite) to train afresh"
        ) from error
    return best, evaluate(best, data, batch_size=batch_size)


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
    build_model: Callable[[Any], keras.Model] | None = None,
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
            (then the model is built with :func:`shiftvit_lib.vit.build_vit`).
        data: splits from :func:`shiftvit_lib.load_cifar10`.
        out_dir: where ``run_spec.json``, ``best.keras``, ``history.csv``,
            ``run.json`` and the backup go. Running again with the same ``out_dir``
            after an interruption resumes from the last finished epoch, but only with
            the same settings (:func:`run_spec`); other settings, or a folder that
            holds a finished run, raise :class:`RunFolderError` before anything is
            written, saying what differs.
        epochs: overrides ``config.epochs`` (e.g. a short run).
        build_model: ``config -> keras.Model``; default: the builder of the config's family.
        jit_compile: XLA compilation (``"auto"``, True, False).
        mixed_precision: a Keras dtype policy such as ``"mixed_bfloat16"`` or
            ``"mixed_float16"`` (loss scaling is added by Keras for float16);
            ``"auto"`` picks :func:`recommended_mixed_precision` for this device
            (float32 on a CPU); ``None`` trains in float32.
        extra_callbacks: appended after the built-in callbacks.
        seed: seeds weights, augmentation and shuffling.
        overwrite: start afresh in ``out_dir``: first remove the files a previous
            run wrote there (:func:`clear_run`; nothing else in the folder).
        reuse: a finished run with the same settings in ``out_dir`` is read back
            (``reused=True``) instead of refused, so re-running a lesson never trains it twice.

    To train on several devices, set a ``keras.distribution`` (``DataParallel``) first.
    """
    family = family_of(config)  # a TypeError for anything but a model config
    epochs = int(epochs if epochs is not None else config.epochs)
    check_training_inputs(config, data, epochs=epochs, seed=seed)
    if mixed_precision == "auto":
        mixed_precision = recommended_mixed_precision()
    builder = build_model or (lambda cfg: family.build(cfg, seed=seed))

    spec = run_spec(
        config, data, epochs=epochs, seed=seed, mixed_precision=mixed_precision, build_model=build_model
    )
    record = finished_run(Path(out_dir), config, spec) if reuse and not overwrite else None
    out = Path(out_dir)
    problem = keras_file_problem(out / BEST_MODEL) if record is not None else None
    if problem:  # reported by path and set aside (kept); the run is trained again from its start
        set_aside_damaged(out / BEST_MODEL, problem, "the run is trained again")
        record, overwrite = None, True
    if record is not None:
        return TrainingRun(
            model=load_model(out / BEST_MODEL),
            history=read_history_csv(out / HISTORY_CSV),
            out_dir=out,
            record=record,
            reused=True,
        )
    check_run_folder(out_dir, overwrite=overwrite)  # writes nothing: a wrong folder fails before the lock
    with run_folder_lock(out_dir):  # a second process on this folder stops here, having written nothing
        return _train_locked(
            config,
            data,
            out_dir,
            spec,
            epochs=epochs,
            builder=builder,
            jit_compile=jit_compile,
            mixed_precision=mixed_precision,
            extra_callbacks=extra_callbacks,
            seed=seed,
            verbose=verbose,
            overwrite=overwrite,
        )


def _train_locked(
    config: TrainingRecipe,
    data: DataSplits,
    out_dir: str | os.PathLike[str],
    spec: dict,
    *,
    epochs: int,
    builder: Callable[[Any], keras.Model],
    jit_compile: bool | str,
    mixed_precision: str | None,
    extra_callbacks: Sequence[keras.callbacks.Callback],
    seed: int,
    verbose: int | str,
    overwrite: bool,
) -> TrainingRun:
    """:func:`train`'s work, while this process holds the run folder's lock."""
    folder = open_run_folder(out_dir, spec, config, overwrite=overwrite)
    keras.utils.set_random_seed(seed)
    train_ds, val_ds, steps_per_epoch = training_datasets(config, data, seed)
    model = build_for_training(
        config, builder, steps_per_epoch, epochs, jit_compile=jit_compile, mixed_precision=mixed_precision
    )
    images_per_epoch = min(steps_per_epoch * config.batch_size, len(data.y_train))
    callbacks = training_callbacks(config, folder, images_per_epoch, extra_callbacks)
    wall_seconds = fit(model, train_ds, val_ds, epochs, callbacks, folder, verbose)
    best, test_metrics = evaluate_best(model, folder, data, config.batch_size)
    settings = dict(jit_compile=jit_compile, mixed_precision=mixed_precision)
    record = run_record(
        folder,
        config,
        data,
        epochs=epochs,
        test_metrics=test_metrics,
        wall_seconds=wall_seconds,
        parameters=int(model.count_params()),
        settings=settings,
        machine=describe_machine(),
    )
    shutil.rmtree(folder.path / BACKUP_DIR, ignore_errors=True)  # the record is written: nothing to resume
    return TrainingRun(
        model=best, history=read_history_csv(folder.path / HISTORY_CSV), out_dir=folder.path, record=record
    )
