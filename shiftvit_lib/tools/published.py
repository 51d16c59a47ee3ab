"""Trained models and run records that ship with the package (lessons 05-07).

A learner on Colab has the package but not this repository, so what the lessons
show of the full runs travels inside ``shiftvit_lib/assets/``:

* ``pretrained("cpu")`` -- the ShiftViT of the ``cpu`` preset, trained on the full
  CIFAR-10 on a 2-core CPU. Its weights are a plain ``.npz`` of arrays (no code, no
  pickles; ``scripts/publish_pretrained.py`` writes it) and its sha256 is checked
  before anything is read from it.
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

from shiftvit_lib.config import FAMILIES, ModelFamily
from shiftvit_lib.tools.files import read_bounded
from shiftvit_lib.tools.run_folder import load_run

ASSETS = Path(__file__).resolve().parents[1] / "assets"
RECORDS = ASSETS / "records"
MAX_WEIGHTS_BYTES = 1 << 30  # the shipped cpu model takes a few MB


def published() -> dict[str, tuple[ModelFamily, dict[str, str]]]:
    """Every shipped model: name -> (its family, its weights entry), from the families' registry."""
    return {name: (family, entry) for family in FAMILIES.values() for name, entry in family.weights.items()}


def _entry(name: str) -> tuple[ModelFamily, dict[str, str]]:
    if entry := published().get(name):
        return entry
    if any(name in family.presets for family in FAMILIES.values()):
        raise ValueError(
            f"no weights are published for {name!r} yet. Train it yourself with `python -m shiftvit_lib "
            f"train --preset {name} --data keras --out runs/{name}` and load runs/{name}/best.keras with "
            f"shiftvit_lib.load_model; published: {sorted(published())}"
        )
    raise KeyError(f"unknown pretrained model {name!r}; choose one of {sorted(published())}")


def pretrained(name: str = "cpu") -> keras.Model:
    """The trained model ``name``, built from its config with the published weights.

    The model is built by its family's builder (our code, :mod:`shiftvit_lib.config`'s registry), and
    only numbers are read from the file, after its sha256 is checked, so loading it cannot run code.
    Raises ``KeyError`` for an unknown name, ``ValueError`` for a preset without published
    weights (the message says how to train one) or a file whose hash is wrong,
    ``FileNotFoundError`` if the file is missing.
    """
    family, entry = _entry(name)
    path = ASSETS / entry["weights"]  # shipped in the package: missing, it is named (FileNotFoundError)
    data = read_bounded(path, MAX_WEIGHTS_BYTES, "published weights")
    if (actual := hashlib.sha256(data).hexdigest()) != entry["sha256"]:
        raise ValueError(
            f"the weights of {name!r} ({path.name}) do not match their published sha256 (expected "
            f"{entry['sha256'][:16]}..., got {actual[:16]}...): the file was altered or damaged; reinstall shiftvit_lib"
        )
    with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
        config = family.config_type.from_dict(json.loads(str(arrays["config"])))
        values = {str(key): arrays[f"w{i:04d}"] for i, key in enumerate(arrays["paths"])}
    model = family.build(config)  # the weights ship with this builder, checked by their sha256
    for variable in model.weights:
        variable.assign(values[variable.path])
    return model


class PretrainedInfo(dict):
    """:func:`pretrained_info`'s answer: a dict that prints as one line per key, the record aside."""

    def __repr__(self) -> str:
        rows = [f"{key:13} {value}" for key, value in self.items() if key != "record"]
        return "\n".join([*rows, "record        the whole run.json: info['record']"])


def pretrained_info(name: str = "cpu") -> PretrainedInfo:
    """Where the model ``name`` comes from: its run record and the checks on it.

    Keys: ``name``, ``sha256`` (of its weights), ``data_source``, ``epochs`` (trained),
    ``test_top1``, ``test_images``, ``train_minutes``, ``machine``, and ``record`` (the whole
    ``run.json``). It prints as one line per key.
    """
    _, entry = _entry(name)
    record, _ = load_record(entry["record"])
    # The run's config is the one it trained with: an --epochs override is part of it (one figure).
    record["config"] = {**record["config"], "epochs": record["epochs_run"]}
    return PretrainedInfo(
        name=name,
        sha256=entry["sha256"],
        data_source=record["data_source"],
        epochs=record["epochs_run"],
        test_top1=record["test"]["accuracy"],
        test_images=record["test"]["images"],
        train_minutes=round(record["train_seconds"] / 60, 1),
        machine=record.get("machine", {}),
        record=record,
    )


def load_record(name: str) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """A shipped record: ``(run.json, history)`` of a run, or ``(comparison, {})``.

    ``name`` is a run folder (``"cpu_full"``) or a comparison (``"attention_vs_shift_cpu"``)
    under ``shiftvit_lib/assets/records/``, copies of what ``results/`` holds.
    """
    folder, single = RECORDS / name, RECORDS / f"{name}.json"
    if (folder / "run.json").is_file():
        return load_run(folder)
    if single.is_file():
        return json.loads(single.read_text()), {}
    names = [run.parent.name for run in RECORDS.glob("*/run.json")] + [c.stem for c in RECORDS.glob("*.json")]
    raise KeyError(f"no shipped record {name!r}; choose one of {sorted(names)}")
