"""Layers: shapes, behaviour in training vs. inference, config round trips."""


import keras
import numpy as np
import pytest
from keras import layers as keras_layers
from keras import ops
from reference import shift_nhwc

from shiftvit_lib import preset
from shiftvit_lib.layers import (
    MLP,
    BranchingRandAugment,
    DropPath,
    ImagePreprocessing,
    PatchMerging,
    ShiftViTBlock,
    ShiftViTStage,
    drop_path_rates,
)

ALL_LAYERS = [
    ImagePreprocessing(resize_to=10, crop_size=8, seed=3),
    ImagePreprocessing(resize_to=16, crop_size=16, seed=1, rand_augment_ops=2, random_erasing=1.0),
    MLP(mlp_ratio=2.0, dropout=0.1),
    DropPath(0.3, seed=1),
    ShiftViTBlock(num_div=4, shift="keras_io", mlp_ratio=3.0, drop_path_rate=0.1, norm="group"),
    PatchMerging(norm="layer", epsilon=1e-6),
    ShiftViTStage(drop_path_rates=[0.0, 0.1], merge=True, num_div=4),
]


@pytest.mark.parametrize("layer", ALL_LAYERS, ids=lambda layer: type(layer).__name__)
def test_get_config_round_trip(layer):
    clone = type(layer).from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()


# (crop size, options): plain; a random crop and flip; RandAugment and erasing alone (the crop: all of it)
@pytest.mark.parametrize(("crop_size", "options"), [
    (10, dict(augment=False)), (10, {}), (12, dict(flip=False, rand_augment_ops=2, random_erasing=1.0))])
def test_preprocessing_is_fixed_at_inference_and_random_in_training_when_it_augments(crop_size, options):
    images = np.random.default_rng(0).integers(0, 256, (6, 8, 8, 3)).astype("uint8")
    layer = ImagePreprocessing(resize_to=12, crop_size=crop_size, seed=0, **options)
    plain = ImagePreprocessing(resize_to=12, crop_size=crop_size, seed=0, augment=False)
    first = ops.convert_to_numpy(layer(images, training=False))
    assert first.shape == (6, crop_size, crop_size, 3) and 0.0 <= first.min() and first.max() <= 1.0
    # at inference, no augmentation
    np.testing.assert_array_equal(first, ops.convert_to_numpy(plain(images, training=False)))
    trained = [ops.convert_to_numpy(layer(images, training=True)) for _ in range(3)]
    assert all(t.shape == first.shape and 0.0 <= t.min() and t.max() <= 1.0 for t in trained)
    assert all(np.array_equal(first, t) for t in trained) is ("augment" in options)


def test_preprocessing_random_crop_is_a_real_crop_of_the_resized_image():
    # Without resizing (resize_to = input size) every random crop must be a window of the input.
    images = np.arange(2 * 6 * 6 * 1, dtype="float32").reshape(2, 6, 6, 1)
    layer = ImagePreprocessing(resize_to=6, crop_size=4, flip=False, seed=5)
    crops = ops.convert_to_numpy(layer(images, training=True)) * 255.0
    for image, crop in zip(images, crops):
        windows = [image[r : r + 4, c : c + 4] for r in range(3) for c in range(3)]
        assert any(np.allclose(crop, w, atol=1e-3) for w in windows)
    centre = ops.convert_to_numpy(layer(images, training=False)) * 255.0
    np.testing.assert_allclose(centre, images[:, 1:5, 1:5], atol=1e-3)


@pytest.mark.parametrize(("make", "shape", "out", "params"), [
    (lambda: MLP(mlp_ratio=2.0), (2, 3, 3, 16), (2, 3, 3, 16), (16 * 32 + 32) + (32 * 16 + 16)),
    (PatchMerging, (2, 6, 6, 8), (2, 3, 3, 16), 2 * 8 + 2 * 2 * 8 * 16),  # norm + conv without bias
    (PatchMerging, (1, 3, 3, 8), (1, 2, 2, 16), 2 * 8 + 2 * 2 * 8 * 16),  # an odd map is padded
    (lambda: ShiftViTStage(drop_path_rates=[0.0], merge=False, num_div=4), (1, 4, 4, 16), (1, 4, 4, 16), None),
    (lambda: ShiftViTStage(drop_path_rates=[0.0, 0.1], merge=True, num_div=4), (1, 8, 8, 16), (1, 4, 4, 32), None),
])
def test_shapes_and_parameter_counts(make, shape, out, params):
    layer = make()
    assert tuple(layer(np.zeros(shape, "float32")).shape) == out
    assert params is None or layer.count_params() == params


def test_drop_path_identity_at_inference_and_per_sample_in_training():
    x = np.ones((2000, 3), "float32")
    layer = DropPath(0.25, seed=0)
    np.testing.assert_array_equal(ops.convert_to_numpy(layer(x, training=False)), x)
    y = ops.convert_to_numpy(layer(x, training=True))
    assert np.all(y == y[:, :1])  # a whole sample is kept or dropped, never single entries
    np.testing.assert_allclose(np.unique(y), [0.0, 1 / 0.75], rtol=1e-6)
    assert abs((y[:, 0] == 0).mean() - 0.25) < 0.05
    with pytest.raises(ValueError, match="rate"):
        DropPath(1.0)


def test_block_equals_shift_then_residual_mlp():
    x = np.random.default_rng(0).normal(size=(2, 5, 5, 24)).astype("float32")
    block = ShiftViTBlock(num_div=12, mlp_ratio=2.0)
    y = ops.convert_to_numpy(block(x, training=False))
    shifted = shift_nhwc(x, 12)
    expected = shifted + ops.convert_to_numpy(block.mlp(block.norm(shifted)))
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)
    assert block.count_params() == 4 * 24 * 24 + 5 * 24  # norm + two dense layers


def test_block_shift_kinds_have_the_same_parameters_and_differ():
    x = np.random.default_rng(0).normal(size=(1, 6, 6, 48)).astype("float32")
    blocks = {kind: ShiftViTBlock(num_div=4, shift=kind) for kind in ("official", "keras_io", "none")}
    blocks["group_norm"] = ShiftViTBlock(num_div=4, norm="group")
    for block in blocks.values():
        block.build(x.shape)
        block.set_weights(blocks["official"].get_weights())  # the same shapes: the shift has no parameters
    results = {kind: ops.convert_to_numpy(block(x)) for kind, block in blocks.items()}
    assert not np.allclose(results["official"], results["none"])
    assert not np.allclose(results["official"], results["keras_io"])
    # GroupNorm with one group normalises over positions and channels, LayerNorm over channels only
    assert isinstance(blocks["group_norm"].norm, keras_layers.GroupNormalization)
    with pytest.raises(ValueError, match="Unknown shift"):
        ShiftViTBlock(shift="diagonal")


def test_drop_path_schedules():
    assert drop_path_rates([2, 4, 8, 2], 0.2)[-1][-1] == pytest.approx(0.2)
    flat = sum(drop_path_rates([2, 4, 8, 2], 0.2), [])
    assert len(flat) == 16 and np.all(np.diff(flat) > 0)
    per_stage = drop_path_rates([2, 4, 8, 2], 0.2, "per_stage")
    assert [rates[0] for rates in per_stage] == [0.0] * 4
    assert [rates[-1] for rates in per_stage] == [pytest.approx(0.2)] * 4
    with pytest.raises(ValueError, match="schedule"):
        drop_path_rates([1], 0.1, "cubic")


def test_branching_rand_augment_gives_keras_rand_augments_images_for_the_same_seed():
    # Issue 39: the layer that computes only the drawn operations must augment exactly as
    # Keras' layer, which computes all of them and keeps the drawn one. Four draws of two
    # operations meet at least four of the eleven (each call of Keras' layer computes all
    # eleven: seconds). (On JAX under jit the two agree exactly too.)
    images = np.random.default_rng(3).integers(0, 256, (8, 16, 16, 3)).astype("float32")
    settings = dict(value_range=(0, 255), num_ops=2, factor=0.5, seed=11, dtype="float32")
    keras_layer, branching = keras.layers.RandAugment(**settings), BranchingRandAugment(**settings)
    drawn = set()
    for _ in range(3):  # the whole layers: the same draws from the same seed
        # Equal up to float32 rounding: on JAX the chosen branch runs compiled (lax.switch).
        np.testing.assert_allclose(ops.convert_to_numpy(branching(images, training=True)),
                                   ops.convert_to_numpy(keras_layer(images, training=True)), rtol=0, atol=1e-3)
    for _ in range(4):  # one draw, both ways of applying it
        transformation = keras_layer.get_random_transformation(images)
        drawn |= set(ops.convert_to_numpy(transformation["layer_idxes"]).tolist())
        expected = ops.convert_to_numpy(keras_layer.transform_images(images, transformation))
        np.testing.assert_allclose(ops.convert_to_numpy(branching.transform_images(images, transformation)),
                                   expected, rtol=0, atol=1e-3)
    assert len(drawn) >= 4
    assert not np.array_equal(expected, images)


def test_augmentations_stay_float32_under_mixed_precision(dtype_policy):
    dtype_policy("mixed_bfloat16")
    config = preset("quick", rand_augment_ops=2, random_erasing=0.5)
    preprocessing = ImagePreprocessing.for_pipeline(config, seed=0)
    images = np.random.default_rng(0).integers(0, 256, (4, 32, 32, 3)).astype("float32")
    augmented = ops.convert_to_numpy(preprocessing(images, training=True))
    assert preprocessing.rand_augment.compute_dtype == "float32" and preprocessing.eraser.compute_dtype == "float32"
    assert augmented.shape == (4, 32, 32, 3) and np.isfinite(augmented.astype("float32")).all()
