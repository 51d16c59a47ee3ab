"""Trained models and run records that ship with the package (lessons 05-07).

A learner on Colab has the package but not this repository, so what the lessons
show of the full runs travels inside ``shiftvit_lib/assets/``:

* ``pretrained("cpu")`` -- the ShiftViT of the ``cpu`` preset, trained on the full
  CIFAR-10 on a 2-core CPU. Its weights are a plain ``.npz`` of arrays (no code, no
  pickles) and its sha256 is checked before anything is read from it.
* ``pretrained_info(name)`` -- where a model comes from: its run record (config,
  data, epochs, minutes, machine, test accuracy).
* ``load_record(name)`` -- a shipped run record (``run.json`` + ``history.csv``) or
  a comparison (lesson 07), as plain dicts.

Example::

    >>> import shiftvit_lib as sv
    >>> model = sv.pretrained("cpu")                # doctest: +SKIP
    >>> sv.pretrained_info("cpu")["test_top1"]      # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import keras
import numpy as np

from shiftvit_lib.config import FAMILIES, ModelFamily, TrainingRecipe
from shiftvit_lib.tools.files import atomic_output, read_bounded, sha256_of
from shiftvit_lib.tools.runs import read_history_csv

ASSETS = Path(__file__).resolve().parents[1] / "assets"
RECORDS = ASSETS / "records"

MAX_WEIGHTS_BYTES = 1 << 30  # the shipped cpu model takes a few MB

# Presets with no published weights yet, and how to get a model of them.
UNPUBLISHED_HINT = (
    "no weights are published for {name!r} yet. Train it yourself with "
    "`python -m shiftvit_lib train --preset {name} --data keras --out runs/{name}` "
    "and load runs/{name}/best.keras with shiftvit_lib.load_model; published: {published}"
)


def published() -> dict[str, tuple[ModelFamily, dict[str, str]]]:
    """Every shipped model: name -> (its family, its weights entry), from the families' registry."""
    return {name: (family, entry) for family in FAMILIES.values() for name, entry in family.weights.items()}


def list_pretrained() -> list[str]:
    """Names accepted by :func:`pretrained`."""
    return sorted(published())


def _entry(name: str) -> tuple[ModelFamily, dict[str, str]]:
    if not isinstance(name, str):
        raise TypeError(f"name must be a string such as 'cpu', got {type(name).__name__}")
    if name in published():
        return published()[name]
    if any(name in family.presets for family in FAMILIES.values()):
        raise ValueError(UNPUBLISHED_HINT.format(name=name, published=list_pretrained()))
    raise KeyError(f"unknown pretrained model {name!r}; choose one of {list_pretrained()}")


def _verified_bytes(name: str) -> bytes:
    """The weight file's bytes, after checking they are the published ones."""
    _, entry = _entry(name)
    path = ASSETS / entry["weights"]
    if not path.is_file():
        raise FileNotFoundError(
            f"the weights of {name!r} are missing ({path}); reinstall shiftvit_lib to restore them"
        )
    data = read_bounded(path, MAX_WEIGHTS_BYTES, "published weights")
    actual = hashlib.sha256(data).hexdigest()
    if actual != entry["sha256"]:
        raise ValueError(
            f"the weights of {name!r} ({path.name}) do not match their published sha256 "
            f"(expected {entry['sha256'][:16]}..., got {actual[:16]}...): the file was altered or "
            "damaged; reinstall shiftvit_lib"
        )
    return data


def pretrained(name: str = "cpu") -> keras.Model:
    """The trained model ``name``, built from its config with the published weights.

    The model is built by its family's builder (our code, :mod:`shiftvit_lib.config`'s registry), and
    only numbers are read from the file, so loading it cannot run code. Raises
    ``KeyError`` for an unknown name, ``ValueError`` for a preset without published
    weights (the message says how to train one) or a file whose hash is wrong,
    ``FileNotFoundError`` if the file is missing.
    """
    data = _verified_bytes(name)
    family, _ = _entry(name)
    with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
        config = family.config_type.from_dict(json.loads(str(arrays["config"])))
        paths = [str(p) for p in arrays["paths"]]
        values = [arrays[f"w{i:04d}"] for i in range(len(paths))]
    model = family.build(config)
    variables = {v.path: v for v in model.weights}
    if sorted(variables) != sorted(paths):
        raise ValueError(
            f"the weights of {name!r} do not fit the model its config builds (this version of "
            "shiftvit_lib builds other layers); install the version that published them"
        )
    for path, value in zip(paths, values):
        variables[path].assign(value)
    return model


def save_weights_npz(model: keras.Model, config: TrainingRecipe, path: str | Path) -> str:
    """Write ``model``'s weights and ``config`` as a plain ``.npz``; return its sha256.

    This is how the published file is made (``scripts/publish_pretrained.py``).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, Any] = {f"w{i:04d}": np.asarray(v.numpy()) for i, v in enumerate(model.weights)}
    arrays["paths"] = np.array([v.path for v in model.weights])
    arrays["config"] = np.array(json.dumps(config.to_dict(), sort_keys=True))
    with atomic_output(path) as partial, partial.open("wb") as handle:
        np.savez_compressed(handle, **arrays)
    return sha256_of(path)


def pretrained_info(name: str = "cpu") -> dict[str, Any]:
    """Where the model ``name`` comes from: its run record and the checks on it.

    Keys: ``name``, ``weights`` (file name), ``sha256``, ``size_bytes``,
    ``data_source``, ``test_top1``, ``test_top5``, ``test_images``,
    ``train_minutes``, ``machine``, ``command``, and ``record`` (the whole
    ``run.json``).
    """
    _, entry = _entry(name)
    record, _ = load_record(entry["record"])
    path = ASSETS / entry["weights"]
    return {
        "name": name,
        "weights": path.name,
        "sha256": entry["sha256"],
        "size_bytes": path.stat().st_size if path.is_file() else None,
        "data_source": record["data_source"],
        "test_top1": record["test"]["accuracy"],
        "test_top5": record["test"]["top5"],
        "test_images": record["test"]["images"],
        "train_minutes": round(record["train_seconds"] / 60, 1),
        "machine": record.get("machine", {}),
        "command": record.get("command"),
        "record": record,
    }


def list_records() -> list[str]:
    """Names accepted by :func:`load_record`."""
    if not RECORDS.is_dir():
        return []
    names = {p.name for p in RECORDS.iterdir() if p.is_dir() and (p / "run.json").is_file()}
    names |= {p.stem for p in RECORDS.glob("*.json")}
    return sorted(names)


def load_record(name: str) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """A shipped record: ``(run.json, history)`` of a run, or ``(comparison, {})``.

    ``name`` is a run folder (``"cpu_full"``) or a comparison (``"attention_vs_shift_cpu"``)
    under ``shiftvit_lib/assets/records/``, copies of what ``results/`` holds.
    """
    folder, single = RECORDS / name, RECORDS / f"{name}.json"
    if (folder / "run.json").is_file():
        return json.loads((folder / "run.json").read_text()), read_history_csv(folder / "history.csv")
    if single.is_file():
        return json.loads(single.read_text()), {}
    raise KeyError(f"no shipped record {name!r}; choose one of {list_records()}")
