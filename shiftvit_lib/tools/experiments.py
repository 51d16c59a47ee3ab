"""Compare several models on equal terms: same data, pipeline, recipe, epochs and seed (lesson 07).

A comparison is only fair if everything except the architecture is identical; this
module makes that checkable rather than a promise: :func:`shared_terms` names every
pipeline or recipe field that differs (set a field on all configs with ``config.replace``),
:func:`model_costs` counts parameters and MACs, :func:`run_comparison` trains every config
with :func:`~shiftvit_lib.tools.runs.train` (same data, epochs and seed), and
:func:`format_table` and :func:`comparison_record` give a text table and the JSON record.

Example::

    >>> from shiftvit_lib import preset
    >>> configs = {"a": preset("quick", epochs=3), "b": preset("quick", shift="none", epochs=3)}
    >>> shared_terms(configs)["epochs"]
    3
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from shiftvit_lib.config import PIPELINE_FIELDS, RECIPE_FIELDS, SHIFT_KINDS, InputError, family_of, preset
from shiftvit_lib.config import TrainingRecipe as Config  # any family's config: ShiftViT's, the ViT's
from shiftvit_lib.data import DataSplits
from shiftvit_lib.tools.run_folder import provenance
from shiftvit_lib.tools.runs import train

# Every field of the shared TrainingRecipe (its input pipeline included), by construction.
SHARED_FIELDS = PIPELINE_FIELDS + RECIPE_FIELDS

# (key, header, format) of the default comparison table.
DEFAULT_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("name", "model", "{}"),
    ("parameters", "params", "{:,}"),
    ("macs", "MACs", "{:,}"),
    ("train_images_per_second", "train img/s", "{:,.0f}"),
    ("test_top1", "test top-1", "{:.1%}"),
    ("test_top5", "test top-5", "{:.1%}"),
    ("epochs_run", "epochs", "{}"),
)

# The ablation's three ShiftViTs, one per shift kind: shiftvit_official, shiftvit_keras_io, shiftvit_no_shift.
SHIFT_ABLATION = {"shiftvit_" + kind.replace("none", "no_shift"): kind for kind in SHIFT_KINDS}

# Per scale of lesson 07's comparison: the two ViT presets, the ShiftViT preset, its changes and the
# epochs. All five share that ShiftViT preset's own pipeline and recipe (declared once, in config.py).
# num_div 16 instead of the cpu preset's 12: the keras-io split needs every stage width divisible by
# width // num_div (64 // 12 = 5 does not divide 64). The official shift then moves a quarter of the
# channels (the paper's default is a third). stem_channels 0: the ViTs embed patches with one
# projection, so the ShiftViTs do too (a convolutional stem would mix a convolution into the token
# mixers compared).
_SCALES: dict[str, tuple[tuple[str, str], str, dict[str, Any], int]] = {
    "quick": (("vit_quick", "vit_spt_lsa_quick"), "quick", {"projected_dim": 48}, 5),
    "cpu": (("vit_cpu", "vit_spt_lsa_cpu"), "cpu", {"num_div": 16, "stem_channels": 0}, 10),
    "full": (("vit_cifar", "vit_spt_lsa_cifar"), "seed", {}, 100),
}


def shared_terms(configs: Mapping[str, Config]) -> dict[str, Any]:
    """The pipeline and recipe fields that every config in ``configs`` has in common.

    Raises:
        ValueError: if any field of :data:`SHARED_FIELDS` differs between two configs
            (the message lists each field with its value per model), or if
            ``configs`` is empty.
    """
    if not configs:
        raise InputError("shared_terms needs at least one config.")
    shared, differences = {}, []
    for field in SHARED_FIELDS:
        per_model = {name: getattr(config, field) for name, config in configs.items()}
        shared[field] = next(iter(per_model.values()))
        if len(set(per_model.values())) > 1:
            named = ", ".join(f"{name}={value!r}" for name, value in per_model.items())
            differences.append(f"{field} ({named})")
    if differences:
        raise InputError("the configs are not on equal terms; they differ in: " + "; ".join(differences))
    return shared


def model_costs(config: Config) -> dict[str, int]:
    """``{"parameters": ..., "macs": ...}`` of the model a config describes (built, not trained)."""
    macs = int(family_of(config).count_macs(config)["total"])  # first: it rejects a wrong config type
    return {"parameters": int(family_of(config).build(config).count_params()), "macs": macs}


def _row(name: str, config: Config, record: Mapping[str, Any], seconds: float) -> dict[str, Any]:
    test = record["test"]
    accuracy, images = float(test["accuracy"]), int(test["images"])
    return {
        "name": name,
        "model": type(config).__name__,
        "parameters": int(record["parameters"]),
        "macs": int(family_of(config).count_macs(config)["total"]),
        "train_images_per_second": record["train_images_per_second"],
        "test_top1": accuracy,
        "test_top5": float(test["top5"]),
        "test_images": images,
        "test_top1_ci95": [round(bound, 4) for bound in top1_interval(accuracy, images)],
        "best_val_top1": float(record["best_val_accuracy"]),
        "epochs_run": int(record["epochs_run"]),
        # Training time from the run's own record (the same for a reused run), and the
        # wall time this call spent on it (about zero for a reused run).
        "train_seconds": float(record["train_seconds"]),
        "seconds": round(seconds, 1),
    }


def comparison_configs(scale: str | bool, epochs: int | None = None) -> dict[str, Config]:
    """The five models of lesson 07 on equal terms: ViT, ViT + SPT + LSA and three ShiftViTs.

    ``scale``:

    * ``"quick"`` (or ``True``): tiny models with the ``quick`` preset's recipe on 32-pixel
      crops, 5 epochs (a CPU smoke test);
    * ``"cpu"``: models the size of the ``cpu`` preset on 32-pixel crops, with its recipe
      on a shorter schedule (10 epochs): about an hour for all five on a 2-core CPU (an
      estimate from measured speeds); ``shiftvit_official`` is the ``cpu`` preset with
      ``num_div=16`` (which the keras-io shift needs) and without a convolutional stem;
    * ``"full"`` (or ``False``): the full-size models with the ``seed`` preset's recipe on
      48-pixel crops, 100 epochs (for a GPU).

    All five share the input pipeline and the recipe, without early stopping, so
    each trains exactly ``epochs`` epochs (:func:`run_comparison` checks it, :func:`shared_terms`).
    """
    if isinstance(scale, bool):
        scale = "quick" if scale else "full"
    if scale not in _SCALES:
        raise InputError(f"scale must be one of {tuple(_SCALES)}, got {scale!r}")
    vits, shiftvit, changes, scale_epochs = _SCALES[scale]
    base: dict[str, Config] = {"vit": preset(vits[0]), "vit_spt_lsa": preset(vits[1])}
    base.update({name: preset(shiftvit, shift=kind, **changes) for name, kind in SHIFT_ABLATION.items()})
    own = preset(shiftvit)
    terms = {name: getattr(own, name) for name in SHARED_FIELDS if name not in ("input_shape", "num_classes")}
    fields = {**terms, "epochs": scale_epochs if epochs is None else epochs, "early_stopping_patience": None}
    return {name: config.replace(**fields) for name, config in base.items()}


def run_comparison(
    configs: Mapping[str, Config],
    data: DataSplits,
    out_root: str | os.PathLike[str],
    *,
    seed: int = 42,
    restart: bool = True,
    log: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Train every config on ``data`` with ``seed`` for the epochs they share; one row per model (:func:`_row`).

    The configs must be on equal terms (:func:`shared_terms`), their ``epochs`` included. Each
    trains in ``out_root/<name>`` with :func:`~shiftvit_lib.tools.runs.train`; its test
    metrics are those of its best-validation checkpoint. ``restart=True`` starts every run
    afresh; ``False`` resumes an interrupted run and reuses a finished one with the same
    settings (:func:`~shiftvit_lib.tools.run_folder.run_spec`), so a long comparison survives a
    re-execution. ``log`` gets one line per model.
    """
    shared_terms(configs)  # the configs' own epochs: one figure, on every run and in the record
    rows, options = [], dict(seed=seed, verbose=0, overwrite=restart, reuse=not restart)
    for name, config in configs.items():
        started = time.perf_counter()
        run = train(config, data, Path(out_root) / name, **options)
        rows.append(row := _row(name, config, run.record, time.perf_counter() - started))
        log(
            f"{name:<22} {'reused a finished run' if run.reused else 'trained'}: {row['epochs_run']} epochs, "
            f"{row['train_seconds']:.0f} s of training, test top-1 {row['test_top1']:.1%}"
        )
    return rows


def format_table(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str, str]] = DEFAULT_COLUMNS
) -> str:
    """An aligned plain-text table: first column left-aligned, the others right-aligned.

    ``columns`` holds ``(key, header, format)`` triples; a missing or ``None``
    value prints as ``-``.
    """
    cells = [[header for _, header, _ in columns]]
    cells += [
        [fmt.format(row[key]) if row.get(key) is not None else "-" for key, _, fmt in columns] for row in rows
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    lines = [
        "  ".join([line[0].ljust(widths[0])] + [v.rjust(w) for v, w in zip(line[1:], widths[1:])]).rstrip()
        for line in cells
    ]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])


def top1_interval(accuracy: float, images: int, z: float = 1.96) -> tuple[float, float]:
    """Approximate 95 % interval of a top-1 accuracy measured on ``images`` test images.

    Normal approximation to the binomial: ``accuracy +- z * sqrt(p (1 - p) / n)``,
    clipped to [0, 1]. It covers only the luck of *which* test images were drawn,
    not the run-to-run spread of training (seed, data order), which adds to it.
    """
    if images < 1:
        raise InputError(f"images must be positive, got {images}")
    half = z * math.sqrt(max(accuracy * (1 - accuracy), 0.0) / images)
    return max(0.0, accuracy - half), min(1.0, accuracy + half)


def comparison_record(
    rows: Sequence[Mapping[str, Any]],
    configs: Mapping[str, Config],
    data: DataSplits,
    *,
    seed: int,
    mode: str,
    note: str = "",
) -> dict[str, Any]:
    """A JSON-ready record of a comparison: rows, shared terms (the epochs among them), configs, data and machine."""
    terms = shared_terms(configs)
    return {
        "mode": mode,
        "note": note,
        "epochs": int(terms["epochs"]),
        "seed": int(seed),
        "shared_terms": {k: list(v) if isinstance(v, tuple) else v for k, v in terms.items()},
        "rows": [dict(row) for row in rows],
        "configs": {name: config.to_dict() for name, config in configs.items()},
        **provenance(data),
    }
