"""shiftvit_lib: the helper library of the "ShiftViT, step by step" lessons.

The modules mirror the lessons:

=================  ======================================================
lesson             module
=================  ======================================================
01 data            ``data`` (CIFAR-10 loading, the split, input pipelines)
02 shift           ``shift`` (the shift operation, and the keras-io variant)
03 blocks          ``layers`` (MLP, DropPath, block, patch merging, stage)
04 model           ``config`` (presets) and ``model`` (the builder)
05 training        ``schedules`` and ``train``
06 inference       ``inference`` and ``plots``
07 attention       ``vit`` (ViT, Shifted Patch Tokenization, LSA)
05-07 payoff       ``published`` (the shipped trained model and run records)
=================  ======================================================
"""

from shiftvit_lib._startup import import_backend_quietly

import_backend_quietly()

# The imports below need the backend loaded (quietly) first.
from shiftvit_lib.config import PRESETS, ShiftViTConfig, list_presets, preset  # noqa: E402
from shiftvit_lib.data import CIFAR10_CLASSES, DataSplits, load_cifar10, make_dataset  # noqa: E402
from shiftvit_lib.inference import (  # noqa: E402
    export_saved_model,
    load_model,
    predict_folder,
    predict_images,
    save_model,
)
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
from shiftvit_lib.published import list_pretrained, load_record, pretrained, pretrained_info  # noqa: E402
from shiftvit_lib.schedules import WarmUpCosine  # noqa: E402
from shiftvit_lib.shift import keras_io_shift, shift_channels  # noqa: E402
from shiftvit_lib.train import evaluate, train  # noqa: E402
from shiftvit_lib.vit import ViTConfig, build_vit, vit_preset  # noqa: E402

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
