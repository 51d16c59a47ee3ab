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
and archive data sources, inference and .keras files (lesson 06), experiments (lesson 07),
the published weights and records. ``shiftvit_lib.notebook`` holds what only the lessons
use (set-up, plots, the exercises' checks and solutions, analysis, the learner's runtime).
This facade, its start-up (``_startup``) and the command line (``__main__``) sit above all
three; ``tests/project/test_import_graph.py`` reads each module's layer from its folder and keeps it so.

``import shiftvit_lib`` loads the core only (no tooling, no matplotlib), and changes nothing
outside the package but what ``_startup``'s docstring lists. The names below (``_EXPORTS``)
come from their module on first use: the tooling ones (``train``, ``pretrained``,
``load_model``...) load their module then.
"""

import importlib
from typing import Any

from shiftvit_lib import _startup

# Everything importing the package does outside it is in _startup's docstring. The core loads
# after the backend; under `python -m shiftvit_lib` with a backend Keras cannot load, it does
# not load at all, and the command line (__main__.main) reports the problem in one line.
if _startup.import_backend_quietly():
    from shiftvit_lib import config, data, layers, model, recipe, schedules, shift, vit  # noqa: F401

# The facade's names by their module; __getattr__ loads each on first use (a tooling module then).
_EXPORTS = {
    "shiftvit_lib.config": "ShiftViTConfig list_presets preset",
    "shiftvit_lib.data": "CIFAR10_CLASSES make_dataset",
    "shiftvit_lib.layers": "MLP DropPath ImagePreprocessing ShiftViTBlock ShiftViTStage drop_path_rates",
    "shiftvit_lib.model": "build_shiftvit count_macs",
    "shiftvit_lib.recipe": "evaluate",
    "shiftvit_lib.schedules": "WarmUpCosine",
    "shiftvit_lib.shift": "shift_channels",
    "shiftvit_lib.vit": "ViTConfig build_vit",
    "shiftvit_lib.tools.data_sources": "load_cifar10",  # every source, then data.make_splits
    "shiftvit_lib.tools.runs": "train",
    "shiftvit_lib.tools.inference": "load_model predict_folder save_model",
    "shiftvit_lib.tools.published": "load_record pretrained pretrained_info",
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names.split()}
__all__ = list(_MODULE_OF)
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_MODULE_OF[name]), name)
    globals()[name] = value  # later look-ups do not come back here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_MODULE_OF})
