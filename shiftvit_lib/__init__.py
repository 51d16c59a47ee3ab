"""shiftvit_lib: the helper library of the "ShiftViT, step by step" lessons.

The modules at the top level are what the lessons teach:

=================  ======================================================
lesson             module
=================  ======================================================
01 data            ``data`` (CIFAR-10 loading, the split, input pipelines)
02 shift           ``shift`` (the shift operation, and the keras-io variant)
03 blocks          ``layers`` (MLP, DropPath, block, patch merging, stage)
04 model           ``config`` (recipe and presets) and ``model`` (the builder)
05 training        ``schedules`` and ``train``
07 attention       ``vit`` (ViT, Shifted Patch Tokenization, LSA)
=================  ======================================================

``shiftvit_lib.tools`` holds the tooling the lessons use without teaching it:
devices and precision, run records, folder and archive data sources, inference and
export (lesson 06), experiments (lesson 07), the published weights and records;
``lesson`` and ``plots`` help the notebooks; ``__main__`` is the command line.
"""

import sys

from shiftvit_lib._startup import import_backend_quietly

import_backend_quietly()

# The imports below need the backend loaded (quietly) first.
from shiftvit_lib.config import PRESETS, ShiftViTConfig, list_presets, preset  # noqa: E402
from shiftvit_lib.data import CIFAR10_CLASSES, DataSplits, load_cifar10, make_dataset  # noqa: E402
from shiftvit_lib.layers import (  # noqa: E402
    MLP,
    DropPath,
    ImagePreprocessing,
    PatchMerging,
    ShiftViTBlock,
    ShiftViTStage,
    drop_path_rates,
)
from shiftvit_lib.model import build_shiftvit, count_macs  # noqa: E402
from shiftvit_lib.schedules import WarmUpCosine  # noqa: E402
from shiftvit_lib.shift import keras_io_shift, shift_channels  # noqa: E402
from shiftvit_lib.tools import experiments, inference, published  # noqa: E402
from shiftvit_lib.tools.inference import (  # noqa: E402
    export_saved_model,
    load_model,
    predict_folder,
    predict_images,
    save_model,
)
from shiftvit_lib.tools.published import list_pretrained, load_record, pretrained, pretrained_info  # noqa: E402
from shiftvit_lib.train import evaluate, train  # noqa: E402
from shiftvit_lib.vit import ViTConfig, build_vit, vit_preset  # noqa: E402

# These tooling modules were once top-level modules; their old import paths keep working.
for _module in (experiments, inference, published):
    sys.modules[f"{__name__}.{_module.__name__.rsplit('.', 1)[-1]}"] = _module

__version__ = "0.1.0"

__all__ = [
    "PRESETS",
    "ShiftViTConfig",
    "list_presets",
    "preset",
    "CIFAR10_CLASSES",
    "DataSplits",
    "load_cifar10",
    "make_dataset",
    "export_saved_model",
    "load_model",
    "predict_folder",
    "predict_images",
    "save_model",
    "MLP",
    "DropPath",
    "ImagePreprocessing",
    "PatchMerging",
    "ShiftViTBlock",
    "ShiftViTStage",
    "drop_path_rates",
    "build_shiftvit",
    "count_macs",
    "list_pretrained",
    "load_record",
    "pretrained",
    "pretrained_info",
    "WarmUpCosine",
    "keras_io_shift",
    "shift_channels",
    "evaluate",
    "train",
    "ViTConfig",
    "build_vit",
    "vit_preset",
]
