"""A run folder: what a run *is*, what it holds at each moment, its lock, backups and record.

A run folder holds ``run_spec.json`` (what the run *is*, written when it starts),
``history.csv`` and ``best.keras`` (written while it trains), ``backup/`` (the training
state after each epoch, :class:`RunBackup`, removed once the record is written) and
``run.json`` (the record written when it ends). Every file, the history too, is written
through a temporary name and renamed (:mod:`shiftvit_lib.tools.files`), so a crash never
leaves half a file; a file damaged otherwise is set aside by name and the run resumes from
the last readable state. A member that is a link (symbolic or hard) or a special file is
refused before the run reads or writes it (:func:`check_run_folder`): a run writes only
files it made, never through a link out of its folder.

A run takes its folder with :func:`claim` (the folder checked once, :func:`check_run_folder`,
then its lock held), starts it or resumes the interrupted run in it only with the same
settings (:func:`open_run_folder`, :func:`run_spec`) and ends with :func:`write_record`.
:func:`shiftvit_lib.tools.runs.train` does all of this; lesson 05 reads finished runs back
with :func:`load_run` and :func:`describe_run`.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import keras
import numpy as np

from shiftvit_lib.config import InputError, TrainingRecipe
from shiftvit_lib.data import DataSplits
from shiftvit_lib.tools import devices, files
from shiftvit_lib.tools.files import LOCK_FILE, escape_name, read_json, run_folder_lock, write_json
from shiftvit_lib.tools.inference import load_model

BEST_MODEL = "best.keras"
HISTORY_CSV = "history.csv"
RUN_RECORD = "run.json"
BACKUP_DIR = "backup"
RUN_SPEC = "run_spec.json"
RUN_FILES = (RUN_SPEC, HISTORY_CSV, BEST_MODEL, RUN_RECORD)
BACKUP_METADATA = "training_metadata.json"
_BACKUP_WEIGHTS = re.compile(r"epoch-(\d+)\.weights\.h5")
# Fields of run_spec.json that are not the run's identity: the folder's progress, and the data
# source's sentence (an 'auto' fallback names its network error, which may differ between
# sessions; the data's identity is its hash, data_digest).
_SPEC_NOT_COMPARED = ("format", "created_at", "fit_finished_at", "data_source")
_RECORD_KEYS = ("data_source", "test", "epochs_run", "epochs_requested", "best_val_accuracy", "train_seconds")
_AFRESH = "pass overwrite=True (--overwrite) to start afresh there, or choose another folder"


class RunFolderError(InputError):
    """An output folder that :func:`train` must not use as asked; the message says what to do."""


def now() -> str:
    """The local time as run records write it."""
    return time.strftime("%Y-%m-%d %H:%M:%S %Z")


def provenance(data: DataSplits) -> dict[str, Any]:
    """The part every record shares (run.json, a comparison's): the data, the machine, and when."""
    machine = devices.describe_machine()
    return dict(data_source=data.source, split_sizes=data.split_sizes(), machine=machine, finished_at=now())


def read_history_csv(path: str | os.PathLike[str]) -> dict[str, list[float]]:
    """A ``history.csv`` written by training, as ``{metric: [value per epoch]}`` (``{}`` if none).

    A value that is not a number (a hand edit) is a :class:`RunFolderError` naming the file and line.
    """
    rows = list(csv.DictReader(files.read_own_text(path).splitlines()))
    history: dict[str, list[float]] = {key: [] for key in (rows[0] if rows else ())}
    for line, row in enumerate(rows, 2):
        for key, values in history.items():
            try:
                values.append(float(row[key]))
            except (TypeError, ValueError):
                raise RunFolderError(
                    f"{escape_name(path)}, line {line}: {escape_name(key)} is {escape_name(repr(row[key]))}, not a "
                    "number (training writes numbers only); correct or delete that line"
                ) from None
    return history


def run_spec(
    config: TrainingRecipe,
    data: DataSplits,
    *,
    epochs: int | None = None,
    seed: int = 42,
    mixed_precision: str | None = None,
) -> dict[str, Any]:
    """What a run *is*: the settings a resumed run must share with the one it continues.

    The config (architecture and recipe, batch size included; its fields name the model
    family), the data (its source sentence, split sizes and a hash of every image), the
    number of epochs (it sets the learning-rate schedule), the seed and the precision
    policy, each once. :func:`train` stores it in ``run_spec.json`` when a run starts.
    """
    spec = {
        "format": 1,
        "config": config.to_dict(),
        "data_source": data.source,
        "split_sizes": data.split_sizes(),
        "data_digest": data.digest(),
        "epochs": int(epochs if epochs is not None else config.epochs),
        "seed": int(seed),
        "mixed_precision": mixed_precision,
    }
    return json.loads(json.dumps(spec, default=str))  # as it reads back from the file


def spec_differences(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """How a stored run spec differs from ``current``, e.g. ``["epochs (4 -> 6)", "config.lr_max (...)"]``.

    Compared as stored: a spec written by an earlier version, whose config lacks a field added
    since, differs in that field (its run is not resumed or reused; train it afresh).
    """

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
    path = files.check_own(Path(folder) / name, reading=True)  # a link is refused, not followed
    if not path.exists():
        return None
    try:
        if isinstance(found := read_json(path, name), dict):
            return found
        problem = f"it holds a JSON {type(found).__name__}, not a JSON object"
    except (OSError, ValueError) as error:
        problem = files.one_line(error)
    raise RunFolderError(f"{escape_name(path)} is unreadable ({problem}); {_AFRESH}")


# --------------------------------------------------------------------------- claiming the folder
def check_location(out_dir: str | os.PathLike[str]) -> Path:
    """``out_dir`` as a Path if a folder can be made or written there; a :class:`RunFolderError` if not."""
    out = files.check_name_length(out_dir)
    existing = next(path for path in (out, *out.parents) if path.exists())  # the nearest
    if not existing.is_dir():
        raise RunFolderError(f"{escape_name(existing)} is a file, not a folder: choose another output folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise RunFolderError(f"{escape_name(existing)}: permission denied; choose another output folder")
    return out


def check_run_folder(out_dir: str | os.PathLike[str], *, overwrite: bool = False) -> str:
    """Check that ``out_dir`` may take a run, writing nothing; returns ``"new"`` or ``"resume"``.

    Raises :class:`RunFolderError` (a ``ValueError``) when ``out_dir`` is a file, or
    cannot be created or written (:func:`check_location`), or (unless ``overwrite``) holds a
    finished run or training files without ``run_spec.json``. Whether an interrupted run's
    settings match is checked by :func:`open_run_folder`, which knows them.
    """
    out = check_location(out_dir)
    backup = files.check_own(out / BACKUP_DIR, folder=True)  # a missing folder globs to nothing
    for path in (*(out / name for name in (LOCK_FILE, *RUN_FILES)), *backup.glob("*")):
        files.check_own(path)  # a link or a special file where a run writes: refused
    if overwrite or not any((out / name).exists() for name in (*RUN_FILES, BACKUP_DIR)):
        return "new"
    if (out / RUN_RECORD).exists():
        raise RunFolderError(
            f"{out} already holds a finished run (its record: {out / RUN_RECORD}); train into "
            "another folder, or pass overwrite=True (--overwrite) to replace it"
        )
    if read_run_file(out) is None:
        raise RunFolderError(
            f"{out} holds training files without {RUN_SPEC} (not a run this library started), "
            f"so it cannot be resumed safely; {_AFRESH}"
        )
    return "resume"


class Claim(NamedTuple):
    """A run folder checked once and locked by this process: what :func:`claim` gives."""

    path: Path
    state: str  # "new" or "resume", from check_run_folder


@contextlib.contextmanager
def claim(out_dir: str | os.PathLike[str] | Claim, *, overwrite: bool = False) -> Iterator[Claim]:
    """Check ``out_dir`` once (:func:`check_run_folder`) and hold its lock for the ``with`` block.

    The lock is taken right after the check, so a second process stops before it reads its
    data. A folder the claim made is removed again if the block fails before a run wrote
    anything there (data that would not load): a refused command leaves the disk as it was.
    A :class:`Claim` already held is given back as it is.
    """
    if isinstance(out_dir, Claim):
        yield out_dir
        return
    out = Path(out_dir)
    state = check_run_folder(out, overwrite=overwrite)
    made = [folder for folder in (out, *out.parents) if not folder.exists()]  # by the lock's mkdir
    try:
        with run_folder_lock(out):
            yield Claim(out, state)
    except BaseException:
        if made and out.is_dir() and [path.name for path in out.iterdir()] == [LOCK_FILE]:
            (out / LOCK_FILE).unlink()
            for folder in made:
                folder.rmdir()
        raise


def remove_backups(out: Path) -> None:
    """Remove the backups :class:`RunBackup` wrote; a damaged one set aside (or a file of yours) is kept."""
    backup = files.check_own(out / BACKUP_DIR, folder=True)
    for path in backup.glob("*"):
        if path.name == BACKUP_METADATA or _BACKUP_WEIGHTS.fullmatch(path.name):
            path.unlink()
    with contextlib.suppress(OSError):  # not empty: what is left is kept
        backup.rmdir()


# --------------------------------------------------------------------------- the folder
@dataclass
class RunFolder:
    """A run folder ready for training: what it holds, where training starts."""

    path: Path
    spec: dict[str, Any]  # as stored in run_spec.json
    resumed_from: int = 0  # the first epoch this session trains (0: a fresh run)
    fit_finished: bool = False  # a previous session trained to the end and died before run.json
    best_val_accuracy: float | None = None  # the best epoch so far (a resumed run must beat it)
    restore_from: Path | None = None  # the backup weights the resumed fit starts from
    recovered: list[str] = field(default_factory=list)  # damaged files set aside, one line each


def open_run_folder(folder: Claim, spec: dict[str, Any]) -> RunFolder:
    """Start a run in the claimed ``folder``, or resume the interrupted run there with the same ``spec``.

    Raises :class:`RunFolderError`, before anything is written, for an interrupted run with
    other settings (naming what differs). A damaged ``best.keras`` or backup is set aside by
    name. The claim's lock made the folder and showed it writable; a disk error later (a full
    disk) is an ``OSError`` naming the file.
    """
    out = folder.path
    for place in (out, out / BACKUP_DIR):  # temporary files of a process killed mid-write (a glob of
        files.remove_abandoned_partials(place)  # a missing folder finds nothing)
    run = _resume(out, spec) if folder.state == "resume" else RunFolder(out, spec)
    if run.resumed_from == 0 and not run.fit_finished:  # a fresh start, or an interrupted run with no backup
        for name in RUN_FILES:  # exactly the files a run writes: nothing else in the folder
            (out / name).unlink(missing_ok=True)
        remove_backups(out)
        run.spec = {**spec, "created_at": now()}
        write_json(out / RUN_SPEC, run.spec)
    return run


def _resume(out: Path, spec: dict[str, Any]) -> RunFolder:
    """The interrupted run in ``out`` if it has ``spec``: where it resumes; damaged files set aside."""
    saved = read_run_file(out) or {}
    differences = spec_differences(saved, spec)
    if differences:
        raise RunFolderError(
            f"{out} holds an interrupted run with other settings; it differs in {'; '.join(differences)}. "
            f"Resume it with the same settings, or {_AFRESH}"
        )
    run = RunFolder(out, {**saved, **spec}, fit_finished=bool(saved.get("fit_finished_at")))
    best = files.check_own(out / BEST_MODEL)  # a link is refused here too, whoever claimed the folder
    problem = file_problem(best) if best.exists() else None
    if problem:
        run.recovered.append(set_aside_damaged(best, problem, "training resumes from the last good state"))
    # Unfinished, or finished without a readable best.keras: from the last backup (record.recovered says so).
    if not (run.fit_finished and best.exists()):
        run.resumed_from, run.restore_from = _resume_point(out, run.recovered, int(spec["epochs"]))
        if run.fit_finished and run.restore_from is None:  # a damaged best.keras was named above, set aside
            raise RunFolderError(
                f"{escape_name(out)} says its training finished, but it has no readable {BEST_MODEL} and no backup "
                f"is left to recover from; {_AFRESH}"
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
    """Drop the rows of epochs >= ``before_epoch``: they will be trained again.

    :func:`history_log` writes whole rows only (an atomic rewrite), so no row is cut short; a
    value edited by hand is named by :func:`read_history_csv`, which skips empty lines as this does.
    """
    lines = files.read_own_text(path).splitlines(keepends=True)
    header, *rows = [line for line in lines if line.strip()] or [""]
    epochs = read_history_csv(path).get("epoch", [])
    kept = [row for row, epoch in zip(rows, epochs) if epoch < before_epoch]
    if len(kept) < len(rows):
        files.atomic_write_text(path, header + "".join(kept))


# --------------------------------------------------------------------------- the backup and damaged files
def file_problem(path: Path) -> str | None:
    """Why a ``.keras`` model or an HDF5 weights file cannot be read back (cut short, overwritten...), or None."""
    import h5py

    def read(_: str, item: Any) -> None:  # every value: a cut-short file fails here
        if isinstance(item, h5py.Dataset):
            if item.external:  # data stored in another file (a pipe would block): not one we wrote
                raise ValueError(f"its dataset {item.name} is stored in outside files {item.external}")
            item[()]

    try:
        if path.suffix == ".keras":
            load_model(path)
        else:
            with h5py.File(path, "r") as handle:
                handle.visititems(read)
    except Exception as error:  # noqa: BLE001 - a torn file fails in Keras, zipfile or h5py alike
        return files.one_line(error) or type(error).__name__
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


def _resume_point(out: Path, damaged: list[str], epochs: int) -> tuple[int, Path | None]:
    """The newest readable backup ``(epochs done, weights)`` of at most ``epochs``, or ``(0, None)``.

    Backups are written atomically (:class:`RunBackup`), each after its epoch's history row and
    ``best.keras``, so any backup in place is a state to resume from. A file damaged otherwise
    (a disk error, a copy cut short) is set aside by name (its line appended to ``damaged``) and
    the run resumes from the one before it; with none left, from epoch 0.
    """
    backup = files.check_own(out / BACKUP_DIR, folder=True)
    saved = {
        int(m.group(1)): path for path in backup.glob("*") if (m := _BACKUP_WEIGHTS.fullmatch(path.name))
    }
    for epoch in sorted((epoch for epoch in saved if 1 <= epoch <= epochs), reverse=True):
        if (problem := file_problem(saved[epoch])) is None:
            return epoch, saved[epoch]
        damaged.append(set_aside_damaged(saved[epoch], problem, "the run resumes from the backup before it"))
    return 0, None


class RunBackup(keras.callbacks.Callback):
    """After every epoch, the training state (weights and optimizer) in ``backup/``.

    Each epoch's state is a file of its own, ``epoch-<n>.weights.h5``, written through a
    temporary name and renamed: a crash at any moment leaves the previous state whole. The
    state before the last is kept too, the fall-back if the last is damaged. The epoch is
    also written to ``training_metadata.json`` (Keras' ``BackupAndRestore`` layout), for a
    reader; the resume goes by the weights files themselves (:func:`_resume_point`).
    """

    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.backup = folder / BACKUP_DIR

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        files.check_own(self.backup, folder=True).mkdir(exist_ok=True)
        with files.atomic_output(self.backup / f"epoch-{epoch + 1:04d}.weights.h5") as partial:
            self.model.save_weights(partial)
        write_json(self.backup / BACKUP_METADATA, {"epoch": epoch + 1, "batch": 0})
        (self.backup / f"epoch-{epoch - 1:04d}.weights.h5").unlink(missing_ok=True)  # two states back


def history_log(path: Path) -> keras.callbacks.Callback:
    """``history.csv``: a row per epoch, the epoch first, then the logs by name (Keras' CSVLogger's layout).

    Appended by rewriting the file atomically (:func:`~shiftvit_lib.tools.files.append_text`):
    never written through a link, never left half a row.
    """

    def write_row(epoch: int, logs: dict[str, Any] | None = None) -> None:
        row = {"epoch": epoch, **{key: float(value) for key, value in sorted((logs or {}).items())}}
        files.append_text(path, ",".join(map(str, row.values())) + "\n", header=",".join(row) + "\n")

    return keras.callbacks.LambdaCallback(on_epoch_end=write_row)


# --------------------------------------------------------------------------- the record
def run_record(
    folder: RunFolder, data: DataSplits, model: keras.Model, test: dict[str, Any], **session: Any
) -> dict[str, Any]:
    """``run.json``: the run's config and epochs (its spec), what ``history.csv`` says, the ``test``
    metrics (of the best checkpoint), the model's size, the ``session``'s facts (time, XLA), the
    data and the machine."""
    history = read_history_csv(folder.path / HISTORY_CSV)
    speeds = history.get("images_per_second", [])
    return {
        "config": folder.spec["config"],
        "epochs_requested": folder.spec["epochs"],
        "epochs_run": len(history.get("epoch", [])),
        "resumed_from_epoch": folder.resumed_from,
        "best_val_accuracy": max(history.get("val_accuracy", [float("nan")])),
        "test": test,
        # Over all sessions of a resumed run: every epoch's time, validation included.
        "train_seconds": round(float(sum(history.get("epoch_seconds", []))), 2),
        # The first epoch includes compilation, so it is left out when possible (and so in
        # benchmarks/benchmark.py, which reports its figure by the same rule).
        "train_images_per_second": round(float(np.median(speeds[1:] or speeds)), 1) if speeds else None,
        "parameters": int(model.count_params()),
        **session,
        "mixed_precision": folder.spec["mixed_precision"],
        "recovered": folder.recovered,  # damaged files set aside on the way, one line each
        **provenance(data),
    }


def mark_fit_finished(folder: RunFolder) -> None:
    """Note in ``run_spec.json`` that fitting ended: a session that dies before ``run.json`` does not train again."""
    write_json(folder.path / RUN_SPEC, {**folder.spec, "fit_finished_at": now()})


def write_record(folder: RunFolder, record: dict[str, Any]) -> None:
    """Write ``run.json`` and remove the backup: the run is finished, nothing is left to resume."""
    write_json(folder.path / RUN_RECORD, record)
    remove_backups(folder.path)


# --------------------------------------------------------------------------- finished runs
def load_run(folder: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """The ``run.json`` record and the ``history.csv`` of a finished run in ``folder``.

    Lessons use it to show a full run that was trained elsewhere (on a GPU) and
    stored under ``results/``. Raises ``FileNotFoundError`` naming the missing file.
    """
    folder = Path(folder)
    if (record := read_run_file(folder, RUN_RECORD)) is None:
        raise FileNotFoundError(
            f"no finished run in {escape_name(folder)}: {RUN_RECORD} is missing (a run writes it when it ends; "
            "results/README.md gives the commands for the full runs)"
        )
    if missing := [key for key in _RECORD_KEYS if key not in record]:
        raise RunFolderError(
            f"{escape_name(folder / RUN_RECORD)} is not a whole run record (no {', '.join(missing)}); restore it "
            "from version control, or train the run again"
        )
    return record, read_history_csv(folder / HISTORY_CSV)


def describe_run(record: dict[str, Any]) -> str:
    """A few lines on a run record: data, epochs, test accuracy, time, speed and machine."""
    test, machine, config = record["test"], record.get("machine", {}), record.get("config", {})
    versions = "".join(f", {name} {version}" for name, version in machine.get("backend_versions", {}).items())
    lines = [
        f"preset {config.get('name', '?')!r} on {record['data_source']}",
        f"split sizes {record.get('split_sizes')}",
        f"epochs run {record['epochs_run']} of {record['epochs_requested']}; best validation top-1 "
        f"{record['best_val_accuracy']:.2%}",
        f"test top-1 {test['accuracy']:.2%}, top-5 {test['top5']:.2%} on {test['images']:,} test images",
        f"training time (sum of epochs, validation included) {record['train_seconds'] / 60:.1f} min",
    ]
    flipped = record.get("test_flip_tta")
    if flipped:  # beside the plain figure, never instead of it
        lines.append(f"with flip test-time augmentation: test top-1 {flipped['accuracy']:.2%}")
    lines += [
        f"training images/s (median epoch) {record.get('train_images_per_second')}, "
        f"mixed precision {record.get('mixed_precision')}, XLA {record.get('jit_compile')}",
        f"machine: backend {machine.get('backend')}, Keras {machine.get('keras')}{versions}, "
        f"devices {machine.get('devices')}, {machine.get('cpu_count')} CPU cores",
        f"finished {record.get('finished_at')}",
    ]
    return "\n".join(lines)
