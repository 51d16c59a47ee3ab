"""shiftvit_lib: the helper library of the "ShiftViT, step by step" lessons.

The modules mirror the lessons: ``config`` (presets), ``shift`` (lesson 02),
``layers`` (03), ``model`` (04), ``schedules`` and ``train`` (05),
``inference`` and ``plots`` (06), ``vit`` (07) and ``data`` (01).
"""

from shiftvit_lib.config import PRESETS, ShiftViTConfig, list_presets, preset
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
from shiftvit_lib.schedules import WarmUpCosine
from shiftvit_lib.shift import keras_io_shift, shift_channels

__version__ = "0.1.0"

__all__ = [
    "PRESETS",
    "ShiftViTConfig",
    "list_presets",
    "preset",
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
]
