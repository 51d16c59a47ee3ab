"""Training with the example's recipe, correctly logged and resumable (lesson 05).

What :func:`train` does, in order:

1. builds the model (inside a distribution scope and a precision policy if asked);
2. compiles it with AdamW + :class:`~shiftvit_lib.schedules.WarmUpCosine`, the
   sparse cross-entropy *from logits* (the number Keras logs as ``loss`` is this
   cross-entropy, not the mean of the logits that the keras-io ``train_step`` logs),
   top-1 and top-5 accuracy;
3. fits with callbacks: ``BackupAndRestore`` (a run killed mid-way resumes from its
   last finished epoch), a best-model checkpoint ``best.keras``, a CSV history,
   early stopping, and a throughput meter;
4. evaluates the best model on the test split and writes ``run.json``, a record of
   the config, data source, epochs, wall time, images/s, metrics and machine.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import platform
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import keras
import numpy as np

from shiftvit_lib.config import ShiftViTConfig
from shiftvit_lib.data import DataSplits, make_dataset
from shiftvit_lib.model import build_shiftvit
from shiftvit_lib.schedules import WarmUpCosine

BEST_MODEL = "best.keras"
HISTORY_CSV = "history.csv"
RUN_RECORD = "run.json"
BACKUP_DIR = "backup"
# What a run folder holds: written when the run starts (run_spec.json), while it
# trains (history.csv, best.keras, backup/) and when it ends (run.json).
RUN_SPEC = "run_spec.json"
RUN_FILES = (RUN_SPEC, HISTORY_CSV, BEST_MODEL, RUN_RECORD)
# Fields of run_spec.json that are not the run's identity: the folder's progress, and the data
# source's sentence (an 'auto' fallback names its network error, which may differ between
# sessions; the data's identity is its hash, data_digest).
_SPEC_NOT_COMPARED = ("format", "created_at", "fit_finished_at", "data_source")


# --------------------------------------------------------------------------- compile
def compile_for_training(
    model: keras.Model,
    config: Any,
    steps_per_epoch: int,
    epochs: int | None = None,
    jit_compile: bool | str = "auto",
) -> keras.Model:
    """Compile ``model`` with the recipe of ``config`` (AdamW, warm-up cosine, CE, top-1/5)."""
    schedule = WarmUpCosine.from_recipe(config, steps_per_epoch, epochs)
    optimizer = keras.optimizers.AdamW(learning_rate=schedule, weight_decay=config.weight_decay)
    smoothing = getattr(config, "label_smoothing", 0.0)
    if mixes_labels(config):
        # MixUp/CutMix targets are mixed one-hot vectors (see data.mix_batch).
        loss: Any = keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=smoothing)
        metrics = [
            keras.metrics.CategoricalAccuracy(name="accuracy"),
            keras.metrics.TopKCategoricalAccuracy(k=5, name="top5"),
        ]
    else:
        if smoothing:
            # Label smoothing needs one-hot targets; labels stay integers in the data.
            loss = SmoothedSparseCrossentropy(smoothing, config.num_classes)
        else:
            loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        metrics = [
            keras.metrics.SparseCategoricalAccuracy(name="accuracy"),
            keras.metrics.SparseTopKCategoricalAccuracy(k=5, name="top5"),
        ]
    model.compile(
        optimizer=optimizer,
        loss=loss,
        metrics=metrics,
        jit_compile=jit_compile,
    )
    return model


def mixes_labels(config: Any) -> bool:
    """True if ``config`` trains with MixUp or CutMix (then targets are one-hot).

    ``ShiftViTConfig.mixes_labels`` decides; configs without it (a ViTConfig) never mix.
    """
    return bool(getattr(config, "mixes_labels", False))


def training_datasets(config: Any, data: DataSplits, seed: int) -> tuple[Any, Any, int]:
    """The training and validation batches of ``config``'s recipe, and steps per epoch.

    Training drops the last, smaller batch (a different one every epoch, as the
    order is reshuffled), so every step has one shape and XLA compiles the step
    once. MixUp/CutMix, if on, mix the training batches; both splits then carry
    one-hot targets.
    """
    batch = config.batch_size
    drop = len(data.y_train) >= batch
    mixing: dict[str, Any] = {}
    if mixes_labels(config):
        mixing = dict(num_classes=config.num_classes, mixup_alpha=config.mixup_alpha,
                      cutmix_alpha=config.cutmix_alpha)
    train_ds = make_dataset(data.x_train, data.y_train, batch, shuffle=True, seed=seed,
                            drop_remainder=drop, **mixing)
    val_ds = make_dataset(data.x_val, data.y_val, batch, shuffle=False,
                          num_classes=mixing.get("num_classes"))
    steps = len(data.y_train) // batch if drop else 1
    return train_ds, val_ds, steps


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


# --------------------------------------------------------------------------- devices
def describe_machine() -> dict[str, Any]:
    """Backend, accelerator and CPU of this machine, stored with every result."""
    backend = keras.backend.backend()
    devices: list[str] = []
    try:
        if backend == "jax":
            import jax

            devices = [f"{d.platform}:{getattr(d, 'device_kind', d)}" for d in jax.devices()]
        elif backend == "tensorflow":
            import tensorflow as tf

            devices = [d.name for d in tf.config.list_logical_devices()]
        elif backend == "torch":
            import torch

            devices = [torch.cuda.get_device_name(0)] if torch.cuda.is_available() else ["cpu"]
    except Exception as error:  # noqa: BLE001 - a description must never break training
        devices = [f"unknown ({error})"]
    return {
        "backend": backend,
        "keras": keras.__version__,
        "devices": devices,
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def accelerator_platform() -> str | None:
    """``"gpu"`` or ``"tpu"`` if the current backend sees one, else ``None`` (CPU only).

    Asks the backend for its *physical* devices by type, rather than parsing
    device names (TensorFlow calls its CPU ``/device:CPU:0``, JAX ``TFRT_CPU_0``).
    """
    backend = keras.backend.backend()
    try:
        if backend == "jax":
            import jax

            platforms = {device.platform.lower() for device in jax.devices()}
        elif backend == "tensorflow":
            import tensorflow as tf

            platforms = {device.device_type.lower() for device in tf.config.list_physical_devices()}
        elif backend == "torch":
            import torch

            platforms = {"gpu"} if torch.cuda.is_available() else {"cpu"}
        else:
            platforms = set()
    except Exception:  # noqa: BLE001 - no usable runtime means no accelerator
        return None
    if "tpu" in platforms:
        return "tpu"
    if platforms & {"gpu", "cuda", "rocm"}:
        return "gpu"
    return None


def has_accelerator() -> bool:
    """True if the current backend sees a GPU or TPU."""
    return accelerator_platform() is not None


def recommended_mixed_precision() -> str | None:
    """The dtype policy that speeds up training here, or ``None`` on a CPU.

    bfloat16 on TPUs and on GPUs of compute capability 8.0 or newer (A100, H100,
    RTX 30xx and later); float16 (Keras adds loss scaling) on older GPUs, which
    have no fast bfloat16. On a CPU, keep float32.
    """
    platform_kind = accelerator_platform()
    if platform_kind is None:
        return None
    if platform_kind == "gpu" and keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        gpus = tf.config.list_physical_devices("GPU")
        capability = tf.config.experimental.get_device_details(gpus[0]).get("compute_capability", (0, 0))
        if tuple(capability) < (8, 0):
            return "mixed_float16"
    if platform_kind == "gpu" and keras.backend.backend() == "jax":
        import jax

        capability = getattr(jax.devices()[0], "compute_capability", "8.0")
        if float(capability) < 8.0:
            return "mixed_float16"
    return "mixed_bfloat16"


@contextlib.contextmanager
def distribution_scope(kind: str | None, devices: Sequence[str] | None = None) -> Iterator[Any]:
    """Build and compile inside this scope to train on several devices.

    ``kind``: ``None`` (one device), ``"mirrored"`` (TensorFlow's
    ``MirroredStrategy``), or ``"data_parallel"`` (Keras' distribution API on JAX).
    """
    if kind is None:
        yield None
        return
    backend = keras.backend.backend()
    if kind == "mirrored":
        if backend != "tensorflow":
            raise ValueError("distribute='mirrored' needs the TensorFlow backend; on JAX use 'data_parallel'.")
        import tensorflow as tf

        strategy = tf.distribute.MirroredStrategy(devices=list(devices) if devices else None)
        with strategy.scope():
            yield strategy
        return
    if kind == "data_parallel":
        if backend != "jax":
            raise ValueError("distribute='data_parallel' needs the JAX backend; on TensorFlow use 'mirrored'.")
        previous = keras.distribution.distribution()
        keras.distribution.set_distribution(keras.distribution.DataParallel(devices=devices))
        try:
            yield keras.distribution.distribution()
        finally:
            keras.distribution.set_distribution(previous)
        return
    raise ValueError(f"Unknown distribute={kind!r}; use None, 'mirrored' or 'data_parallel'.")


@contextlib.contextmanager
def precision_policy(name: str | None) -> Iterator[None]:
    """Temporarily set Keras' dtype policy (e.g. ``"mixed_bfloat16"``) while building."""
    if name is None:
        yield
        return
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(name)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def _replica_count(strategy: Any) -> int:
    if strategy is None:
        return 1
    if hasattr(strategy, "num_replicas_in_sync"):  # tf.distribute
        return int(strategy.num_replicas_in_sync)
    return len(getattr(strategy, "_devices", None) or [1])  # keras.distribution


# --------------------------------------------------------------------------- callbacks
class ThroughputMeter(keras.callbacks.Callback):
    """Adds ``epoch_seconds`` and ``images_per_second`` to every epoch's logs.

    ``epoch_seconds`` is the whole epoch, validation included; ``images_per_second``
    counts training alone (the clock stops when validation starts).
    """

    def __init__(self, images_per_epoch: int) -> None:
        super().__init__()
        self.images_per_epoch = images_per_epoch
        self._start = 0.0
        self._training_end: float | None = None

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._start = time.perf_counter()
        self._training_end = None

    def on_test_begin(self, logs: dict[str, Any] | None = None) -> None:
        if self._training_end is None:
            self._training_end = time.perf_counter()

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        now = time.perf_counter()
        training_seconds = (self._training_end or now) - self._start
        if logs is not None:
            logs["epoch_seconds"] = now - self._start
            logs["images_per_second"] = self.images_per_epoch / max(training_seconds, 1e-9)


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


# --------------------------------------------------------------------------- run folders
class RunFolderError(ValueError):
    """An output folder that :func:`train` must not use as asked; the message says what to do."""


def data_digest(data: DataSplits) -> str:
    """A short hash of every image and label of ``data`` (its identity in ``run_spec.json``)."""
    digest = hashlib.blake2b(digest_size=12)
    for split in ("train", "val", "test"):
        for array in (getattr(data, f"x_{split}"), getattr(data, f"y_{split}")):
            array = np.ascontiguousarray(array)
            digest.update(f"{split}{array.dtype.str}{array.shape}".encode())
            digest.update(array.data)
    return digest.hexdigest()


def _builder_name(build_model: Callable[..., Any] | None, config: Any) -> str:
    function = build_model or default_builder(config)
    return f"{getattr(function, '__module__', '?')}.{getattr(function, '__qualname__', repr(function))}"


def run_spec(
    config: Any,
    data: DataSplits,
    *,
    epochs: int | None = None,
    seed: int = 42,
    mixed_precision: str | None = None,
    build_model: Callable[[Any], keras.Model] | None = None,
) -> dict[str, Any]:
    """What a run *is*: the settings a resumed run must share with the one it continues.

    The config (architecture and recipe, batch size included), the data (its source
    sentence, split sizes and a hash of every image), the number of epochs (it sets
    the learning-rate schedule), the seed, the precision policy and the model
    builder. :func:`train` stores it in ``run_spec.json`` when a run starts.
    """
    config_dict = config.to_dict() if hasattr(config, "to_dict") else dict(vars(config))
    spec = {
        "format": 1,
        "config": config_dict,
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
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise RunFolderError(f"{path} is unreadable ({error}); pass overwrite=True (--overwrite) to start "
                             "the run afresh there, or choose another folder") from error


def _has_run_files(folder: Path) -> bool:
    return any((folder / name).exists() for name in (*RUN_FILES, BACKUP_DIR))


def check_run_folder(out_dir: str | os.PathLike[str], *, overwrite: bool = False) -> str:
    """Check that ``out_dir`` may take a run, writing nothing; returns ``"new"`` or ``"resume"``.

    Raises :class:`RunFolderError` (a ``ValueError``) when ``out_dir`` is a file, or
    cannot be created or written, or (unless ``overwrite``) holds a finished run or
    training files of an unknown run. Whether an interrupted run's settings match is
    checked by :func:`train`, which knows them.
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
        raise RunFolderError(f"{out} already holds a finished run (its record: {record}); train into "
                             "another folder, or pass overwrite=True (--overwrite) to replace it")
    if read_run_spec(out) is None:
        raise RunFolderError(f"{out} holds training files without {RUN_SPEC} (an older version's or an "
                             "unknown run), so it cannot be resumed safely; pass overwrite=True "
                             "(--overwrite) to start afresh there, or choose another folder")
    return "resume"


def clear_run(out_dir: str | os.PathLike[str]) -> None:
    """Remove exactly the files a :func:`train` call writes into ``out_dir`` (nothing else)."""
    out = Path(out_dir)
    for name in RUN_FILES:
        (out / name).unlink(missing_ok=True)
    if (out / BACKUP_DIR).is_dir():
        shutil.rmtree(out / BACKUP_DIR)


def _write_json(path: Path, payload: dict[str, Any]) -> None:
    """Write JSON atomically: a reader never sees half a file."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(payload, indent=2, default=str))
    partial.replace(path)


def _prepare_run_folder(out: Path, spec: dict[str, Any], overwrite: bool) -> tuple[str, dict[str, Any]]:
    """Check, clear (``overwrite``) or resume ``out``; returns the state and the stored spec."""
    state = check_run_folder(out, overwrite=overwrite)
    if state == "resume":
        saved = read_run_spec(out) or {}
        differences = spec_differences(saved, spec)
        if differences:
            raise RunFolderError(
                f"{out} holds an interrupted run with other settings; it differs in "
                f"{'; '.join(differences)}. Resume it with the same settings, pass overwrite=True "
                "(--overwrite) to start afresh there, or choose another folder"
            )
        return state, saved
    try:
        out.mkdir(parents=True, exist_ok=True)
        if overwrite:
            clear_run(out)
        stored = {**spec, "created_at": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
        _write_json(out / RUN_SPEC, stored)
    except OSError as error:
        raise RunFolderError(f"cannot write the run folder {out} ({error.strerror or error})") from error
    return state, stored


def _resume_point(out: Path) -> int:
    """The epoch a resumed fit starts at: the last one ``BackupAndRestore`` saved, else 0."""
    metadata = out / BACKUP_DIR / "training_metadata.json"
    try:
        return int(json.loads(metadata.read_text())["epoch"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


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
    kept = [row for row in body if row and int(float(row[column])) < before_epoch]
    if len(kept) == len(body):
        return
    partial = path.with_name(f".{path.name}.tmp")
    with partial.open("w", newline="") as handle:
        csv.writer(handle).writerows([header, *kept])
    partial.replace(path)


# --------------------------------------------------------------------------- train
def default_builder(config: Any) -> Callable[..., keras.Model]:
    """The builder of a config: ``build_vit`` for a ViTConfig, else ``build_shiftvit``."""
    from shiftvit_lib.vit import ViTConfig, build_vit

    return build_vit if isinstance(config, ViTConfig) else build_shiftvit


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
    config: ShiftViTConfig | Any,
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
        build_model: ``config -> keras.Model``; default :func:`build_shiftvit`.
        jit_compile: XLA compilation (``"auto"``, True, False).
        mixed_precision: a Keras dtype policy such as ``"mixed_bfloat16"`` or
            ``"mixed_float16"`` (loss scaling is added by Keras for float16);
            ``"auto"`` picks :func:`recommended_mixed_precision` for this device
            (float32 on a CPU); ``None`` trains in float32.
        distribute: ``None``, ``"mirrored"`` (TF) or ``"data_parallel"`` (JAX).
        extra_callbacks: appended after the built-in callbacks.
        seed: seeds weights, augmentation and shuffling.
        overwrite: start afresh in ``out_dir``: first remove the files a previous
            run wrote there (:func:`clear_run`; nothing else in the folder).
    """
    out = Path(out_dir)
    if mixed_precision == "auto":
        mixed_precision = recommended_mixed_precision()
    epochs = int(epochs if epochs is not None else config.epochs)
    if epochs < 1:
        raise ValueError(f"epochs must be >= 1, got {epochs}")
    if distribute not in (None, "mirrored", "data_parallel"):
        raise ValueError(f"Unknown distribute={distribute!r}; use None, 'mirrored' or 'data_parallel'.")
    batch = getattr(config, "batch_size", None)
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch!r}")
    spec = run_spec(config, data, epochs=epochs, seed=seed, mixed_precision=mixed_precision,
                    build_model=build_model)
    state, stored_spec = _prepare_run_folder(out, spec, overwrite)
    fit_finished = state == "resume" and bool(stored_spec.get("fit_finished_at"))
    if fit_finished and not (out / BEST_MODEL).exists():
        raise RunFolderError(f"{out} says its training finished but holds no {BEST_MODEL}; pass "
                             "overwrite=True (--overwrite) to train afresh there, or choose another folder")
    resumed_from = 0
    if state == "resume" and not fit_finished:
        # Rows of epochs after the last backup would be trained again: drop them, so
        # history.csv never holds an epoch twice. Nothing backed up: start over.
        resumed_from = _resume_point(out)
        _keep_history_rows(out / HISTORY_CSV, resumed_from)
        if resumed_from == 0:
            clear_run(out)
            _write_json(out / RUN_SPEC, stored_spec)
    keras.utils.set_random_seed(seed)
    train_ds, val_ds, steps_per_epoch = training_datasets(config, data, seed)
    previous_history = read_history_csv(out / HISTORY_CSV)
    if fit_finished:
        resumed_from = len(previous_history.get("epoch", []))

    builder = build_model or (lambda cfg: default_builder(cfg)(cfg, seed=seed))
    with distribution_scope(distribute, devices) as strategy, precision_policy(mixed_precision):
        replicas = _replica_count(strategy)
        model = builder(config)
        compile_for_training(model, config, steps_per_epoch, epochs, jit_compile)

    checkpoint = keras.callbacks.ModelCheckpoint(
        out / BEST_MODEL, monitor="val_accuracy", mode="max", save_best_only=True
    )
    if previous_history.get("val_accuracy"):
        # After a resume, only a better epoch than any seen before may overwrite best.keras.
        checkpoint.best = max(previous_history["val_accuracy"])
    # The history row and the best model are written before the backup: if the
    # process dies in between, the resumed run redoes that epoch and replaces its row.
    callbacks: list[keras.callbacks.Callback] = [
        ThroughputMeter(min(steps_per_epoch * config.batch_size, len(data.y_train))),
        keras.callbacks.CSVLogger(str(out / HISTORY_CSV), append=True),
        checkpoint,
        keras.callbacks.BackupAndRestore(str(out / BACKUP_DIR)),
    ]
    if config.early_stopping_patience:
        callbacks.append(
            keras.callbacks.EarlyStopping(
                monitor="val_accuracy", mode="max", patience=config.early_stopping_patience,
                restore_best_weights=True,
            )
        )
    callbacks.extend(extra_callbacks)

    started = time.perf_counter()
    if not fit_finished:  # else a previous session trained to the end and died before run.json
        # The datasets shuffle themselves (seeded), so fit must not try to.
        model.fit(
            train_ds, validation_data=val_ds, epochs=epochs, callbacks=callbacks, verbose=verbose, shuffle=False
        )
        _write_json(out / RUN_SPEC, {**stored_spec, "fit_finished_at": time.strftime("%Y-%m-%d %H:%M:%S %Z")})
    wall_seconds = time.perf_counter() - started

    history = read_history_csv(out / HISTORY_CSV)
    best = keras.saving.load_model(out / BEST_MODEL, safe_mode=True) if (out / BEST_MODEL).exists() else model
    test_metrics = evaluate(best, data, batch_size=config.batch_size)
    speeds = history.get("images_per_second", [])
    record = {
        "config": config.to_dict() if hasattr(config, "to_dict") else vars(config),
        "data_source": data.source,
        "split_sizes": data.split_sizes(),
        "epochs_requested": epochs,
        "epochs_run": len(history.get("epoch", [])),
        "resumed_from_epoch": resumed_from,
        "best_val_accuracy": max(history.get("val_accuracy", [float("nan")])),
        "test": test_metrics,
        "wall_seconds_this_session": round(wall_seconds, 2),
        # Over all sessions of a resumed run: every epoch's time, validation included.
        "train_seconds": round(float(sum(history.get("epoch_seconds", []))), 2),
        # The first epoch includes compilation, so it is left out when possible.
        "train_images_per_second": round(float(np.median(speeds[1:] or speeds)), 1) if speeds else None,
        "parameters": int(model.count_params()),
        "jit_compile": jit_compile,
        "mixed_precision": mixed_precision,
        "distribute": distribute,
        "replicas": replicas,
        "machine": describe_machine(),
        "finished_at": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    _write_json(out / RUN_RECORD, record)
    return TrainingRun(model=best, history=history, out_dir=out, record=record)


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
    lines = [
        f"preset {config.get('name', '?')!r} on {record['data_source']}",
        f"split sizes {record.get('split_sizes')}",
        f"epochs run {record['epochs_run']} of {record['epochs_requested']}; best validation top-1 "
        f"{record['best_val_accuracy']:.2%}",
        f"test top-1 {test['accuracy']:.2%}, top-5 {test['top5']:.2%} on {test['images']:,} test images",
        f"training images/s (median epoch) {record.get('train_images_per_second')}, "
        f"mixed precision {record.get('mixed_precision')}, XLA {record.get('jit_compile')}",
        f"machine: backend {machine.get('backend')}, Keras {machine.get('keras')}, devices {machine.get('devices')}, "
        f"{machine.get('cpu_count')} CPU cores",
        f"finished {record.get('finished_at')}",
    ]
    if train_seconds is not None:
        lines.insert(4, f"training time (sum of epochs, validation included) {train_seconds / 60:.1f} min")
    return "\n".join(lines)


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


__all__ = [
    "compile_for_training",
    "mixes_labels",
    "training_datasets",
    "SmoothedSparseCrossentropy",
    "describe_machine",
    "accelerator_platform",
    "has_accelerator",
    "recommended_mixed_precision",
    "distribution_scope",
    "precision_policy",
    "ThroughputMeter",
    "read_history_csv",
    "TrainingRun",
    "train",
    "RunFolderError",
    "run_spec",
    "spec_differences",
    "read_run_spec",
    "check_run_folder",
    "clear_run",
    "data_digest",
    "default_builder",
    "evaluate",
    "load_run",
    "describe_run",
    "logits_metrics",
]
