"""Model and training configuration: one recipe type, one config per model, presets as data.

A ShiftViT is fully described by a :class:`ShiftViTConfig`: its architecture, plus a
:class:`TrainingRecipe` (input pipeline, optimiser, schedule, loss, batch, epochs) that
lesson 07's ViT shares field for field. Presets are plain
dictionaries of the fields that differ from the defaults, so adding a model size
means adding data, not code (the timm / SPACH way)::

    >>> from shiftvit_lib import preset
    >>> cfg = preset("seed")
    >>> cfg.depths
    (2, 4, 8, 2)
    >>> preset("quick", epochs=3).epochs
    3
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal


class InputError(ValueError):
    """A value given to the library cannot work; the message says what to change.

    The command line prints it as one line (exit status 2); any other exception there is a
    bug and shows its traceback.
    """


def is_whole_number(value: Any) -> bool:
    """True for an int, Python's or NumPy's (not a bool, which Python counts as one)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_whole_number(value: Any, name: str, low: int = 1, high: float = math.inf) -> int:
    """``value`` as an int if it is a whole number from ``low`` to ``high``; else an :class:`InputError`."""
    if not is_whole_number(value) or not low <= value <= high:
        limits = f"from {low:,} to {high:,}" if high < math.inf else f"of at least {low:,}"
        raise InputError(f"{name} must be a whole number {limits}, got {value!r:.40}")
    return int(value)


def bounded(
    default: Any, low: float, high: float = math.inf, *, closed: bool = False, above: bool = False
) -> Any:
    """A config field that must lie in ``[low, high)`` (``[low, high]`` if ``closed``, ``(low, ...`` if
    ``above``: an epsilon is > 0); None passes."""
    return dataclasses.field(default=default, metadata={"range": (low, high, closed, above)})


def _check_field_names(cls: type, names: Any) -> None:
    unknown = set(names) - {f.name for f in dataclasses.fields(cls)}
    if unknown:
        raise TypeError(f"Unknown config field(s): {sorted(unknown)}")


if TYPE_CHECKING:
    from typing import Self

# The shifts a block may use (shiftvit_lib.shift), declared here once: the paper's, the keras-io
# example's (broken), none (an ablation); and the two ways to compute the paper's.
SHIFT_KINDS = ("official", "keras_io", "none")
SHIFT_IMPLEMENTATIONS = ("slice", "roll")
ShiftKind = Literal[SHIFT_KINDS]  # type: ignore[valid-type]
ShiftImplementation = Literal[SHIFT_IMPLEMENTATIONS]  # type: ignore[valid-type]
NormKind = Literal["layer", "group"]
DropPathSchedule = Literal["network", "per_stage"]
WeightInit = Literal["keras", "spach"]


@dataclass(frozen=True)
class InputPipeline:
    """What happens to an image (and its label) before the model's first layer.

    The defaults are the keras-io ShiftViT example's values.
    """

    input_shape: tuple[int, int, int] = (32, 32, 3)
    num_classes: int = bounded(10, 1)
    # Images are resized to `resize_to`, then cropped to `image_size`: a random crop
    # while training, the centre crop at inference (so `predict` is deterministic).
    augment: bool = True
    resize_to: int = bounded(52, 1)
    image_size: int = bounded(48, 1)
    flip: bool = True
    # Stronger augmentation (all off in the example's recipe). RandAugment is Keras'
    # layer: `rand_augment_ops` operations of strength `rand_augment_factor`, drawn
    # once per batch. Random erasing blanks a box in each image with this probability.
    rand_augment_ops: int = bounded(0, 0)
    rand_augment_factor: float = bounded(0.5, 0, 1, closed=True)
    random_erasing: float = bounded(0.0, 0, 1, closed=True)
    # MixUp / CutMix mix pairs of images *and* their labels, so they run where the
    # labels are, in the input pipeline (shiftvit_lib.data.mix_batch). With both on,
    # each batch uses one of them, chosen with equal odds.
    mixup_alpha: float = bounded(0.0, 0)
    cutmix_alpha: float = bounded(0.0, 0)
    # The host draws each batch's pairs and boxes either way; True mixes the pixels inside
    # the compiled train step (on a GPU, off the host's critical path), False on the host.
    mix_on_device: bool = False

    @property
    def one_hot_targets(self) -> bool:
        """True if training needs one-hot targets: mixed (MixUp/CutMix) or smoothed labels."""
        return self.mixup_alpha > 0 or self.cutmix_alpha > 0 or self.label_smoothing > 0


@dataclass(frozen=True)
class TrainingRecipe(InputPipeline):
    """The input pipeline and how a model is trained: shared by every model config.

    :class:`ShiftViTConfig` and :class:`shiftvit_lib.vit.ViTConfig` both extend it with
    their architecture, so "trained on equal terms" means "equal in every field
    declared here" (``name`` aside): :data:`PIPELINE_FIELDS` and :data:`RECIPE_FIELDS`.
    """

    name: str = "custom"  # the preset's name; it labels a run, it is not a setting
    # "keras": Keras' defaults (Glorot uniform), as the keras-io example;
    # "spach": every Dense/Conv kernel from N(0, 0.02^2), biases zero, as the official
    # code's _init_weights (shiftvit_lib.model.initialise_like_spach).
    init: WeightInit = "keras"
    batch_size: int = bounded(256, 1)
    epochs: int = bounded(100, 1)
    lr_start: float = 1e-5
    lr_max: float = 1e-3
    warmup_fraction: float = bounded(0.15, 0, 1)
    weight_decay: float = bounded(1e-4, 0)
    label_smoothing: float = bounded(0.0, 0, 1)
    early_stopping_patience: int | None = bounded(5, 1)  # None: no early stopping
    # Train steps per call from Python (Keras' steps_per_execution): a GPU waits less on the host.
    steps_per_execution: int = bounded(1, 1)

    def __post_init__(self) -> None:
        # Lists from JSON or from a user become tuples so the config stays hashable.
        for name, value in list(vars(self).items()):
            if isinstance(value, (list, tuple)):
                object.__setattr__(self, name, tuple(int(item) for item in value))
            elif isinstance(value, numbers.Number) and hasattr(value, "item"):  # NumPy's: JSON takes Python's
                object.__setattr__(self, name, value.item())
        self.validate()

    def validate(self) -> None:
        """Raise ``ValueError`` naming the fields that cannot work, in one line.

        Two rounds, the second needing the first: each field alone (its type, then its
        :func:`bounded` range or its ``Literal`` choices), then the fields together.
        """
        problems = self.field_problems() or self.combination_problems()
        if problems:
            raise InputError(f"Invalid {type(self).__name__} {self.name!r}: " + "; ".join(problems))

    def field_problems(self) -> list[str]:
        """Each field alone: its type (``depths=(2)`` is the int 2, ``num_div=4.5`` no count of
        groups), then its :func:`bounded` range or its ``Literal`` choices (``ShiftKind``...)."""
        problems, hints = [], typing.get_type_hints(type(self))
        for field in dataclasses.fields(self):
            name, value, hint = field.name, getattr(self, field.name), hints[field.name]
            if isinstance(hint, types.UnionType):  # `int | None`: None passes, else the type
                hint = None if value is None else typing.get_args(hint)[0]
            if hint is int and not is_whole_number(value):
                problems.append(f"{name} must be a whole number, got {value!r}")
            elif hint is float and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
                problems.append(f"{name} must be a number, got {value!r}")
            elif typing.get_origin(hint) is tuple and isinstance(value, tuple) and min(value, default=1) < 1:
                problems.append(f"{name} must hold whole numbers of at least 1, got {value!r}")
            elif typing.get_origin(hint) is tuple and not isinstance(value, tuple):
                problems.append(
                    f"{name} must be a list of whole numbers such as (2, 2), got {value!r} "
                    "(in Python (2) is the number 2; write (2,) for one stage)"
                )
            elif typing.get_origin(hint) is Literal and value not in typing.get_args(hint):
                choices = typing.get_args(hint)
                allowed = " or ".join([", ".join(map(repr, choices[:-1])), repr(choices[-1])])
                problems.append(f"{name} must be {allowed}, got {value!r}")
            elif "range" in field.metadata and value is not None:
                low, high, closed, above = field.metadata["range"]
                if not (low <= value <= high if closed else low <= value < high) or (above and value == low):
                    limit = (
                        f"be {'>' if above else '>='} {low:g}"
                        if high == math.inf
                        else f"lie in [{low:g}, {high:g}{']' if closed else ')'}"
                    )
                    finite = " and finite" if high == math.inf and isinstance(value, float) else ""
                    problems.append(f"{name} must {limit}{finite}, got {value!r}")
        return problems

    def combination_problems(self) -> list[str]:
        """What cannot work in the fields together; each model config adds its architecture's."""
        problems = []
        if len(self.input_shape) != 3:
            problems.append(f"input_shape must be (height, width, channels), got {self.input_shape}")
        if self.image_size > self.resize_to:
            problems.append(
                f"image_size ({self.image_size}) cannot be larger than resize_to ({self.resize_to})"
            )
        if not 0 < self.lr_max < math.inf:  # a negative rate trains uphill, zero never moves
            problems.append(
                f"lr_max must be positive and finite, such as 1e-3, got {self.lr_max} (a minus sign?)"
            )
        elif not 0 <= self.lr_start <= self.lr_max:
            problems.append(
                f"the learning rates must satisfy 0 <= lr_start <= lr_max, "
                f"got lr_start {self.lr_start}, lr_max {self.lr_max}"
            )
        return problems

    def replace(self, **changes: Any) -> Self:
        """A copy with some fields changed (the config itself is immutable)."""
        _check_field_names(type(self), changes)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (saved next to every training run).

        Keys in reading order: the name, the input pipeline, the architecture, the recipe.
        """
        architecture = [f.name for f in dataclasses.fields(self) if f.name not in _RECIPE_TYPE_FIELDS]
        order = ["name", *PIPELINE_FIELDS, *architecture, *RECIPE_FIELDS]
        return {key: list(v) if isinstance(v := getattr(self, key), tuple) else v for key in order}

    @classmethod
    def from_preset(cls, presets: dict[str, dict[str, Any]], name: str, **overrides: Any) -> Self:
        """The preset ``name`` of ``presets`` (fields that differ from the defaults) with ``overrides``.

        Raises:
            InputError: ``name`` is not a preset (the message lists the valid names).
            TypeError: an override is not a field of ``cls``.
        """
        if name not in presets:
            raise InputError(f"Unknown preset {name!r}; choose one of {sorted(presets)}")
        _check_field_names(cls, overrides)
        return cls(**{"name": name, **presets[name], **overrides})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Inverse of :meth:`to_dict`; unknown keys are an error, not silently dropped.

        A field missing from ``data`` (a record written before the field existed) takes
        its default, which is the value that older version used.
        """
        _check_field_names(cls, data)
        return cls(**data)


# The fields that make two models' training comparable, each declared once above.
PIPELINE_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(InputPipeline))
_RECIPE_TYPE_FIELDS = frozenset(f.name for f in dataclasses.fields(TrainingRecipe))
RECIPE_FIELDS: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(TrainingRecipe) if f.name not in PIPELINE_FIELDS and f.name != "name"
)


@dataclass(frozen=True)
class ShiftViTConfig(TrainingRecipe):
    """A ShiftViT: its architecture, plus the :class:`TrainingRecipe` it is trained with.

    The defaults are the keras-io ShiftViT example's values; presets override a few.
    """

    patch_size: int = bounded(4, 1)
    projected_dim: int = 96
    depths: tuple[int, ...] = (2, 4, 8, 2)
    num_div: int = bounded(12, 4)  # four groups move
    shift_pixel: int = bounded(1, 1)
    shift: ShiftKind = "official"
    # How the official shift is computed: slicing + zero padding, or roll + border
    # mask. Same numbers; benchmarks/ measures which is faster on a device.
    shift_implementation: ShiftImplementation = "slice"
    mlp_ratio: float = bounded(2.0, 0, above=True)
    mlp_dropout: float = bounded(0.2, 0, 1)
    drop_path_rate: float = bounded(0.2, 0, 1)
    # "network": rates rise linearly over all blocks (official SPACH);
    # "per_stage": they restart from 0 in every stage (the keras-io example).
    drop_path_schedule: DropPathSchedule = "network"
    norm: NormKind = "layer"
    layer_norm_epsilon: float = bounded(1e-5, 0, above=True)
    patch_norm: bool = False
    final_norm: bool = False
    # 0: one linear projection per patch (the paper). > 0: a convolutional stem first,
    # a 3x3 convolution with this many channels at stride 2, BatchNorm and GELU, so
    # neighbouring patches overlap; the projection then covers patch_size / 2.
    stem_channels: int = bounded(0, 0)

    def combination_problems(self) -> list[str]:
        problems = super().combination_problems()
        if not self.depths or any(d < 1 for d in self.depths):
            problems.append(f"depths must be a non-empty list of positive ints, got {self.depths}")
            return problems  # the checks below need the stages
        if self.projected_dim < self.num_div:
            problems.append(
                f"projected_dim ({self.projected_dim}) must be >= num_div ({self.num_div}) "
                "so that every shifted group holds at least one channel"
            )
        if self.stem_channels and self.patch_size % 2:
            problems.append(
                f"a convolutional stem (stem_channels {self.stem_channels}) halves the image first, so "
                f"patch_size must be even, got {self.patch_size}: use patch_size 2 or 4, or stem_channels 0"
            )
        if self.image_size % self.patch_size:
            problems.append(
                f"image_size ({self.image_size}) must be a multiple of patch_size ({self.patch_size})"
            )
        if self.shift != "none" and self.shift_pixel >= min(self.stage_resolutions):
            problems.append(
                f"shift_pixel ({self.shift_pixel}) must be smaller than the last stage's "
                f"resolution {self.stage_resolutions}: use fewer stages, a larger image or "
                "a smaller patch_size"
            )
        if self.shift == "keras_io":
            # The example's split(x, C // num_div) needs C divisible by C // num_div, and
            # at least four groups (the ones that move).
            bad = [dim for dim in self.stage_dims if dim < 4 * self.num_div or dim % (dim // self.num_div)]
            if bad:
                problems.append(
                    f"the keras-io shift splits C channels into C // num_div groups, four of which move, so "
                    f"every stage width must be at least 4 * num_div and divisible by width // num_div; "
                    f"{bad} are not with num_div {self.num_div}: choose num_div 8 or 16 for power-of-two widths"
                )
        return problems

    @property
    def stage_dims(self) -> tuple[int, ...]:
        """Channels of each stage: patch merging doubles them from stage to stage."""
        return tuple(self.projected_dim * 2**i for i in range(len(self.depths)))

    @property
    def stage_resolutions(self) -> tuple[int, ...]:
        """Feature-map side length of each stage (merging halves it)."""
        # Patch projection and merging use "same" padding, hence the ceilings.
        side = -(-self.image_size // self.patch_size)
        return tuple(-(-side // 2**stage) for stage in range(len(self.depths)))


# What SPACH's ImageNet models share: 224 px and 1000 classes, a norm after the stem
# and before the head, GroupNorm(1) in the blocks.
_SPACH_IMAGENET = dict(
    input_shape=(224, 224, 3),
    num_classes=1000,
    augment=False,
    resize_to=224,
    image_size=224,
    mlp_dropout=0.0,
    norm="group",
    patch_norm=True,
    final_norm=True,
)
# Presets hold only what differs from the defaults above.
PRESETS: dict[str, dict[str, Any]] = {
    # The keras-io example's recipe, with the shift fixed. Its drop-path schedule
    # restarts in every stage, so we keep that to compare like with like.
    "seed": dict(drop_path_schedule="per_stage", steps_per_execution=8),
    # The same recipe with the example's (broken) shift, for the ablation.
    "seed_keras_io_shift": dict(drop_path_schedule="per_stage", shift="keras_io"),
    # Tiny and fast: CPU tests, CI and the quick mode of every lesson.
    "quick": dict(
        resize_to=36,
        image_size=32,
        projected_dim=24,
        depths=(1, 2, 1),
        num_div=12,
        mlp_dropout=0.0,
        drop_path_rate=0.1,
        batch_size=64,
        epochs=5,
        warmup_fraction=0.1,
        lr_max=2e-3,
        early_stopping_patience=None,
    ),
    # A stronger recipe for CIFAR-10 with the seed architecture: the regularisers
    # that let vision transformers learn from small datasets (RandAugment, MixUp,
    # CutMix, random erasing, label smoothing; the recipe of Lee et al. 2021,
    # "Vision Transformer for Small-Size Datasets", whose ViT reached 93.6 % on
    # CIFAR-10 in 100 epochs), with SPACH's initialisation, no dropout, and
    # decoupled weight decay 0.05 as in DeiT/SPACH. No early stopping: with mixed
    # labels the validation accuracy keeps rising late in the cosine schedule.
    "strong": dict(
        mlp_dropout=0.0,
        drop_path_rate=0.1,
        init="spach",
        rand_augment_ops=2,
        rand_augment_factor=0.5,
        random_erasing=0.25,
        mixup_alpha=0.8,
        cutmix_alpha=1.0,
        label_smoothing=0.1,
        weight_decay=0.05,
        warmup_fraction=0.1,
        epochs=100,
        early_stopping_patience=None,
        mix_on_device=True,
        steps_per_execution=8,
    ),
    # Sized and scheduled for a 2-core CPU: the full CIFAR-10 at its own 32 px
    # (the resize-and-crop makes a 36 -> 32 px random crop), 64 channels, depths
    # (2, 2, 6), a short schedule (30 epochs, about one of warm-up: warmup_fraction
    # 0.04), light regularisation (a short run underfits rather than overfits), and a
    # 32-channel convolutional stem (overlapping patches, 4.7 % more multiply-adds).
    # Chosen on the validation split on the 2-core machine (issue 26, results/README.md):
    # best validation top-1 83.17 % against 81.09 % without the stem at 28 epochs; 21
    # minutes of training there with transparent huge pages on (results/cpu_full/).
    "cpu": dict(
        resize_to=36,
        image_size=32,
        projected_dim=64,
        depths=(2, 2, 6),
        mlp_dropout=0.0,
        drop_path_rate=0.2,
        random_erasing=0.25,
        batch_size=128,
        epochs=30,
        lr_max=2e-3,
        warmup_fraction=0.04,
        weight_decay=0.05,
        label_smoothing=0.1,
        early_stopping_patience=None,
        stem_channels=32,
    ),
    # Official SPACH sizes (registry names shiftvit_light_tiny and shiftvit_r2_tiny),
    # with their normalisation placement (see _SPACH_IMAGENET).
    "shiftvit_light_tiny": dict(_SPACH_IMAGENET, depths=(2, 2, 6, 2), mlp_ratio=4.0),
    "shiftvit_r2_tiny": dict(_SPACH_IMAGENET, depths=(6, 8, 18, 6), mlp_ratio=2.0),
}


def list_presets(family: str = "shiftvit") -> list[str]:
    """The preset names of one model family (ShiftViT's unless told); :func:`preset` takes every family's."""
    return sorted(FAMILIES[family].presets)


def preset(name: str, **overrides: Any) -> TrainingRecipe:
    """The preset ``name`` of whichever model family holds it (``"seed"``, ``"vit_cifar"``...),
    with ``overrides`` (see :meth:`~TrainingRecipe.from_preset`)."""
    for family in FAMILIES.values():
        if name in family.presets:
            return family.config_type.from_preset(family.presets, name, **overrides)
    known = sorted(name for family in FAMILIES.values() for name in family.presets)
    raise InputError(f"Unknown preset {name!r}; choose one of {known}")


# --------------------------------------------------------------------------- model families
@dataclass(frozen=True)
class ModelFamily:
    """What the library knows of one kind of model, in one place.

    ``config_type`` describes a model of the family, ``presets`` are its named configs,
    ``build(config, seed=...)`` makes the Keras model, ``count_macs(config)`` counts one
    forward pass (a dict with a ``"total"``), and ``weights`` are its shipped weights: name ->
    ``{"weights": file under assets/, "sha256": ..., "record": shipped run record}``. The
    hash lives in code, not beside the file, so a replaced file cannot bring its own hash.
    """

    name: str
    config_type: type[TrainingRecipe]
    presets: dict[str, dict[str, Any]]
    build: Callable[..., Any]
    count_macs: Callable[[Any], dict[str, int]]
    weights: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)


# Family name -> family. Each family's module registers it when it is imported (``model`` the
# ShiftViT, ``vit`` the ViT); ``import shiftvit_lib`` imports both.
FAMILIES: dict[str, ModelFamily] = {}


def register_family(family: ModelFamily) -> ModelFamily:
    FAMILIES[family.name] = family
    return family


def family_of(config: Any) -> ModelFamily:
    """The family whose config type ``config`` is (or derives from); a TypeError otherwise."""
    by_type = {family.config_type: family for family in FAMILIES.values()}
    for cls in type(config).__mro__:
        if cls in by_type:
            return by_type[cls]
    known = " or ".join(family.config_type.__name__ for family in FAMILIES.values())
    raise TypeError(f"expected a model config ({known}), got {type(config).__name__}")
