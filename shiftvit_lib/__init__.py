"""shiftvit_lib: the helper library of the "ShiftViT, step by step" lessons.

The modules at the top level are the core, what the lessons teach; they import
nothing from the layers above them:

=================  ======================================================
lesson             module
=================  ======================================================
01 data            ``data`` (CIFAR-10 loading, the split, input pipelines)
02 shift           ``shift`` (the shift operation, and the keras-io variant)
03 blocks          ``layers`` (MLP, DropPath, block, patch merging, stage)
04 model           ``config`` (recipe and presets) and ``model`` (the builder)
05 training        ``schedules`` and ``recipe`` (optimizer, schedule, loss, compile)
07 attention       ``vit`` (ViT, Shifted Patch Tokenization, LSA)
=================  ======================================================

``shiftvit_lib.tools`` holds the tooling the lessons use without teaching it, built
on the core: devices and precision, run folders and the resumable ``train``, folder
and archive data sources, inference and export (lesson 06), experiments (lesson 07),
the published weights and records. ``shiftvit_lib.notebook`` holds what only the lessons
use (set-up, plots, the exercises' checks and solutions, analysis, the learner's runtime).
This facade, its start-up (``_startup``) and the command line (``__main__``) sit above all
three; ``tests/test_import_graph.py`` reads each module's layer from its folder and keeps it so.

``import shiftvit_lib`` loads the core only (no tooling, no matplotlib), and changes nothing
outside the package but what ``_startup``'s docstring lists. The tooling
names below (``train``, ``pretrained``, ``load_model``...) load their module the
first time they are used.
"""

import importlib
from typing import Any

from shiftvit_lib._startup import import_backend_quietly

# Everything importing the package does outside it is in _startup's docstring. The core loads
# after the backend; under `python -m shiftvit_lib` with a backend Keras cannot load, it does
# not load at all, and the command line (__main__.main) reports the problem in one line.
if import_backend_quietly():
    from shiftvit_lib.config import PRESETS, ShiftViTConfig, list_presets, preset
    from shiftvit_lib.data import CIFAR10_CLASSES, DataSplits, make_dataset
    from shiftvit_lib.layers import (
        MLP,
        DropPath,
        ImagePreprocessing,
        PatchMerging,
        ShiftViTBlock,
        ShiftViTStage,
        drop_path_rates,
    )
    from shiftvit_lib.model import build_shiftvit, count_macs
    from shiftvit_lib.recipe import evaluate
    from shiftvit_lib.schedules import WarmUpCosine
    from shiftvit_lib.shift import keras_io_shift, shift_channels
    from shiftvit_lib.vit import ViTConfig, build_vit, vit_preset

# Tooling names, each loaded from its module on first use (see __getattr__).
_TOOLING = {
    "load_cifar10": "shiftvit_lib.tools.data_sources",  # data.load_splits, plus folders and archives
    "train": "shiftvit_lib.tools.runs",
    "export_saved_model": "shiftvit_lib.tools.inference",
    "load_model": "shiftvit_lib.tools.inference",
    "predict_folder": "shiftvit_lib.tools.inference",
    "predict_images": "shiftvit_lib.tools.inference",
    "save_model": "shiftvit_lib.tools.inference",
    "list_pretrained": "shiftvit_lib.tools.published",
    "load_record": "shiftvit_lib.tools.published",
    "pretrained": "shiftvit_lib.tools.published",
    "pretrained_info": "shiftvit_lib.tools.published",
}


def __getattr__(name: str) -> Any:
    if name not in _TOOLING:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_TOOLING[name]), name)
    globals()[name] = value  # later look-ups do not come back here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_TOOLING})


__version__ = "0.1.0"

__all__ = [  # the core names imported above, then the tooling names
    "PRESETS",
    "ShiftViTConfig",
    "list_presets",
    "preset",
    "CIFAR10_CLASSES",
    "DataSplits",
    "make_dataset",
    "MLP",
    "DropPath",
    "ImagePreprocessing",
    "PatchMerging",
    "ShiftViTBlock",
    "ShiftViTStage",
    "drop_path_rates",
    "build_shiftvit",
    "count_macs",
    "WarmUpCosine",
    "keras_io_shift",
    "shift_channels",
    "evaluate",
    "ViTConfig",
    "build_vit",
    "vit_preset",
    *_TOOLING,
]
