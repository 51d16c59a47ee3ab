"""The stronger recipe: MixUp/CutMix, RandAugment, random erasing, SPACH init, the `strong` preset."""

import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
from fakes import tiny_splits as random_splits
from keras import ops

from shiftvit_lib import build_shiftvit, preset
from shiftvit_lib.data import DataSplits, NumpyBatches, make_dataset, mix_batch, one_hot
from shiftvit_lib.layers import BranchingRandAugment, ImagePreprocessing
from shiftvit_lib.model import initialise_like_spach
from shiftvit_lib.recipe import compile_for_training, training_datasets
from shiftvit_lib.tools.devices import precision_policy

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _distinct_images(n: int, side: int = 8) -> np.ndarray:
    """Image i is filled with the value 10 * i, so every pixel says where it came from."""
    return np.broadcast_to((10.0 * np.arange(n))[:, None, None, None], (n, side, side, 3)).astype("float32")


# --------------------------------------------------------------------------- mix_batch
def test_mixup_blends_images_and_targets_with_one_weight():
    images, labels = _distinct_images(6), np.array([0, 1, 2, 3, 4, 5])
    targets = one_hot(labels, 10)
    mixed, mixed_targets, info = mix_batch(images, targets, np.random.default_rng(0), mixup_alpha=0.8)
    lam, partner = info["lam"], info["partner"]
    assert info["kind"] == "mixup" and 0.0 < lam < 1.0 and sorted(partner) == list(range(6))
    np.testing.assert_allclose(mixed, lam * images + (1 - lam) * images[partner], rtol=1e-6)
    np.testing.assert_allclose(mixed_targets, lam * targets + (1 - lam) * targets[partner], rtol=1e-6)
    np.testing.assert_allclose(mixed_targets.sum(axis=1), 1.0, rtol=1e-6)


def test_cutmix_pastes_a_box_and_weights_targets_by_its_exact_area():
    images, labels = _distinct_images(8, side=16), np.arange(8)
    targets = one_hot(labels, 10)
    for seed in range(20):
        mixed, mixed_targets, info = mix_batch(images, targets, np.random.default_rng(seed), cutmix_alpha=1.0)
        assert info["kind"] == "cutmix"
        top, bottom, left, right = info["box"]
        inside = np.zeros((16, 16), bool)
        inside[top:bottom, left:right] = True
        partner = info["partner"]
        for i in range(8):
            np.testing.assert_array_equal(mixed[i][inside], images[partner[i]][inside])
            np.testing.assert_array_equal(mixed[i][~inside], images[i][~inside])
            own_share = (~inside).mean()
            if partner[i] != i:  # the target's weight on each label is that label's share of pixels
                assert mixed_targets[i, i] == pytest.approx(own_share)
                assert mixed_targets[i, partner[i]] == pytest.approx(1 - own_share)
        assert info["lam"] == pytest.approx((~inside).mean())


def test_both_alphas_pick_each_kind_and_zero_alphas_change_nothing():
    images, targets = _distinct_images(4), one_hot(np.arange(4), 10)
    kinds = {mix_batch(images, targets, np.random.default_rng(s), mixup_alpha=0.8, cutmix_alpha=1.0)[2]["kind"]
             for s in range(30)}
    assert kinds == {"mixup", "cutmix"}
    same, same_targets, info = mix_batch(images, targets, np.random.default_rng(0))
    assert info["kind"] == "none"
    np.testing.assert_array_equal(same, images)
    np.testing.assert_array_equal(same_targets, targets)


def test_mix_batch_and_one_hot_reject_bad_input():
    with pytest.raises(ValueError, match="one-hot targets"):
        mix_batch(_distinct_images(4), np.arange(4), np.random.default_rng(0), mixup_alpha=1.0)
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 10\)"):
        one_hot(np.array([0, 10]), 10)


def test_mixed_batches_are_reproducible_whatever_order_they_are_loaded_in():
    x, y = np.random.default_rng(0).integers(0, 256, (40, 8, 8, 3)).astype("uint8"), np.arange(40) % 10
    kwargs = dict(shuffle=True, seed=5, num_classes=10, mixup_alpha=0.8, cutmix_alpha=1.0, drop_remainder=True)
    first, second = NumpyBatches(x, y, 16, **kwargs), NumpyBatches(x, y, 16, **kwargs)
    forward = [first[i] for i in range(len(first))]
    backward = [second[i] for i in reversed(range(len(second)))][::-1]
    assert len(forward) == 2  # 40 // 16: the last, smaller batch is dropped
    for (a_images, a_targets), (b_images, b_targets) in zip(forward, backward):
        np.testing.assert_array_equal(a_images, b_images)
        np.testing.assert_array_equal(a_targets, b_targets)
        assert a_images.dtype == np.float32 and a_targets.shape == (16, 10)
        np.testing.assert_allclose(a_targets.sum(axis=1), 1.0, rtol=1e-6)
    first.on_epoch_end()
    assert not np.array_equal(first[0][0], forward[0][0])  # a new epoch mixes differently


def test_mixed_batches_made_ahead_in_threads_equal_those_made_in_the_loop():
    # Issue 39: threads make the mixed batches ahead; for a fixed seed every batch of
    # every epoch must be what the loop itself would have made, in any access order.
    x, y = np.random.default_rng(1).integers(0, 256, (200, 8, 8, 3)).astype("uint8"), np.arange(200) % 10
    kwargs = dict(shuffle=True, seed=7, num_classes=10, mixup_alpha=0.8, cutmix_alpha=1.0, drop_remainder=True)
    threaded, in_loop = NumpyBatches(x, y, 16, **kwargs), NumpyBatches(x, y, 16, **kwargs)
    in_loop.ahead_threads = 0
    assert threaded.ahead_threads >= 1
    for epoch in range(3):
        order = list(range(len(threaded))) if epoch != 1 else [0, 5, 1, 2, 11, 3, 4, 6, 7, 8, 9, 10]
        for index in order:
            (a_images, a_targets), (b_images, b_targets) = threaded[index], in_loop[index]
            np.testing.assert_array_equal(a_images, b_images)
            np.testing.assert_array_equal(a_targets, b_targets)
        threaded.on_epoch_end(), in_loop.on_epoch_end()


def test_make_dataset_one_hot_without_mixing_keeps_uint8_and_needs_classes_to_mix():
    x, y = np.zeros((5, 8, 8, 3), "uint8"), np.array([0, 1, 2, 3, 9])
    images, targets = make_dataset(x, y, 5, shuffle=False, num_classes=10)[0]
    assert images.dtype == np.uint8
    np.testing.assert_array_equal(targets.argmax(axis=1), y)
    with pytest.raises(ValueError, match="pass num_classes"):
        make_dataset(x, y, 5, shuffle=False, mixup_alpha=0.5)
    with pytest.raises(ValueError, match="leaves no batch"):
        NumpyBatches(x, y, 8, shuffle=False, drop_remainder=True)


# --------------------------------------------------------------------------- config and preset
def test_strong_preset_keeps_the_seed_architecture_and_turns_the_regularisers_on():
    strong, seed = preset("strong"), preset("seed")
    assert (strong.depths, strong.projected_dim, strong.image_size) == (seed.depths, seed.projected_dim, seed.image_size)
    assert strong.one_hot_targets and not seed.one_hot_targets
    assert strong.rand_augment_ops == 2 and strong.random_erasing > 0 and strong.label_smoothing > 0
    assert strong.init == "spach" and strong.early_stopping_patience is None


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(mixup_alpha=-1.0), "mixup_alpha must be >= 0"),
        (dict(random_erasing=1.5), r"random_erasing must lie in \[0, 1\], got 1.5"),
        (dict(rand_augment_ops=-1), "rand_augment_ops must be >= 0"),
        (dict(label_smoothing=1.0), "label_smoothing must lie in"),
        (dict(init="xavier"), "init must be 'keras' or 'spach'"),
    ],
)
def test_bad_recipe_fields_are_named(changes, message):
    with pytest.raises(ValueError, match=message):
        preset("strong", **changes)


# --------------------------------------------------------------------------- initialisation
@pytest.mark.slow  # builds the full-size model (about 4 s): in the full suite, not the inner loop
def test_spach_init_draws_kernels_with_std_0_02_and_zeroes_biases():
    model = build_shiftvit(preset("seed", init="spach"), seed=3)
    kernels = [v for v in model.trainable_variables if v.path.endswith("/kernel")]
    biases = [v for v in model.trainable_variables if v.path.endswith("/bias")]
    gammas = [v for v in model.trainable_variables if v.path.endswith("/gamma")]
    assert len(kernels) > 30 and len(biases) > 30 and gammas  # merging convs have no bias
    big = np.concatenate([ops.convert_to_numpy(k).ravel() for k in kernels])
    assert np.std(big) == pytest.approx(0.02, rel=0.02) and abs(np.mean(big)) < 1e-4
    assert all(not np.any(ops.convert_to_numpy(b)) for b in biases)
    assert all(np.all(ops.convert_to_numpy(g) == 1.0) for g in gammas)
    # One generator for all kernels: two kernels of the same shape must differ.
    expand, project = (ops.convert_to_numpy(k) for k in kernels[1:3])
    assert expand.size == project.size and not np.allclose(np.sort(expand.ravel()), np.sort(project.ravel()))
    keras_default = build_shiftvit(preset("seed"), seed=3)
    glorot = ops.convert_to_numpy(keras_default.get_layer("classifier").kernel)
    assert np.std(glorot) > 2 * 0.02  # the default really is different


def test_initialise_like_spach_is_seeded():
    a = initialise_like_spach(build_shiftvit(preset("quick")), seed=7)
    b = initialise_like_spach(build_shiftvit(preset("quick")), seed=7)
    for va, vb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(va, vb)


# --------------------------------------------------------------------------- augmentation layers
def test_rand_augment_and_erasing_act_in_training_only():
    images = np.random.default_rng(0).integers(0, 256, (8, 16, 16, 3)).astype("uint8")
    plain = ImagePreprocessing(resize_to=16, crop_size=16, flip=False, seed=1)
    strong = ImagePreprocessing(resize_to=16, crop_size=16, flip=False, seed=1, rand_augment_ops=2,
                                random_erasing=1.0)
    inference = ops.convert_to_numpy(strong(images, training=False))
    np.testing.assert_array_equal(inference, ops.convert_to_numpy(plain(images, training=False)))
    trained = ops.convert_to_numpy(strong(images, training=True))
    assert trained.shape == (8, 16, 16, 3) and 0.0 <= trained.min() and trained.max() <= 1.0
    assert not np.allclose(trained, inference)
    clone = ImagePreprocessing.from_config(strong.get_config())
    assert clone.get_config() == strong.get_config() and clone.rand_augment.num_ops == 2


def test_branching_rand_augment_gives_keras_rand_augments_images_for_the_same_seed():
    # Issue 39: the layer that computes only the drawn operations must augment exactly as
    # Keras' layer, which computes all of them and keeps the drawn one. Six draws of two
    # operations meet most of the eleven. (On JAX under jit the two agree exactly too.)
    images = np.random.default_rng(3).integers(0, 256, (8, 16, 16, 3)).astype("float32")
    settings = dict(value_range=(0, 255), num_ops=2, factor=0.5, seed=11, dtype="float32")
    keras_layer, branching = keras.layers.RandAugment(**settings), BranchingRandAugment(**settings)
    drawn = set()
    for _ in range(6):  # the whole layers: the same draws from the same seed
        # Equal up to float32 rounding: on JAX the chosen branch runs compiled (lax.switch).
        np.testing.assert_allclose(ops.convert_to_numpy(branching(images, training=True)),
                                   ops.convert_to_numpy(keras_layer(images, training=True)), rtol=0, atol=1e-3)
    for _ in range(6):  # one draw, both ways of applying it
        transformation = keras_layer.get_random_transformation(images)
        drawn |= set(ops.convert_to_numpy(transformation["layer_idxes"]).tolist())
        expected = ops.convert_to_numpy(keras_layer.transform_images(images, transformation))
        np.testing.assert_allclose(ops.convert_to_numpy(branching.transform_images(images, transformation)),
                                   expected, rtol=0, atol=1e-3)
    assert len(drawn) >= 4
    assert not np.array_equal(expected, images)


@pytest.mark.slow
@pytest.mark.colab  # ran in the Colab environment before it was marked slow
def test_strong_model_round_trips_and_predicts_deterministically(tmp_path):
    model = build_shiftvit(preset("strong"), seed=0)
    images = np.random.default_rng(1).integers(0, 256, (3, 32, 32, 3)).astype("uint8")
    before = model.predict(images, verbose=0)
    np.testing.assert_array_equal(before, model.predict(images, verbose=0))
    model.save(tmp_path / "strong.keras")
    again = keras.saving.load_model(tmp_path / "strong.keras", safe_mode=True)
    np.testing.assert_array_equal(before, again.predict(images, verbose=0))


# --------------------------------------------------------------------------- training
def _tiny_splits() -> DataSplits:
    return random_splits(n_train=40, n_val=16, n_test=16)


def test_training_datasets_drop_the_last_batch_and_carry_one_hot_targets_when_mixing():
    config = preset("quick", batch_size=16, mixup_alpha=0.8, cutmix_alpha=1.0)
    assert config.one_hot_targets and not preset("quick").one_hot_targets
    train_ds, val_ds, steps = training_datasets(config, _tiny_splits(), seed=0)
    assert steps == len(train_ds) == 2
    _, targets = train_ds[0]
    _, val_targets = val_ds[0]
    assert targets.shape == (16, 10) and val_targets.shape == (16, 10)
    assert set(np.unique(val_targets)) == {0.0, 1.0}  # validation is never mixed


def test_compile_for_mixed_labels_takes_soft_targets_and_keeps_the_metric_names():
    model = build_shiftvit(preset("quick"))
    compile_for_training(model, preset("quick", cutmix_alpha=1.0, label_smoothing=0.1), steps_per_epoch=1)
    assert model.loss.label_smoothing == pytest.approx(0.1)
    x = np.zeros((2, 32, 32, 3), "uint8")
    soft = np.array([[0.0, 0.7, 0.3] + [0.0] * 7, [0.0, 0.2, 0.8] + [0.0] * 7], "float32")
    logs = model.test_on_batch(x, soft, return_dict=True)
    assert {"loss", "accuracy", "top5"} <= set(logs)  # EarlyStopping and best.keras watch these names
    predicted = model.predict(x, verbose=0).argmax(axis=1)
    assert logs["accuracy"] == pytest.approx(np.mean(predicted == soft.argmax(axis=1)))


@pytest.mark.slow
@pytest.mark.colab  # ran in the Colab environment before it was marked slow
def test_rand_augment_model_compiles_with_xla_on_jax():
    # Keras marks two of RandAugment's layers as not XLA-safe (a TensorFlow kernel);
    # on JAX our preprocessing layer lifts that, so jit_compile="auto" keeps XLA on.
    pytest.importorskip("jax")
    script = textwrap.dedent(
        """
        import numpy as np
        from shiftvit_lib import build_shiftvit, preset
        from shiftvit_lib.recipe import compile_for_training
        from shiftvit_lib.data import one_hot
        config = preset("quick", input_shape=(16, 16, 3), resize_to=16, image_size=16, depths=(1,),
                        rand_augment_ops=2, random_erasing=0.5, mixup_alpha=0.8, batch_size=8)
        model = build_shiftvit(config, seed=0)
        compile_for_training(model, config, steps_per_epoch=2, epochs=1, jit_compile="auto")
        x = np.random.default_rng(0).integers(0, 256, (16, 16, 16, 3)).astype("float32")
        history = model.fit(x, one_hot(np.arange(16) % 10, 10), batch_size=8, epochs=1, verbose=0)
        assert np.isfinite(history.history["loss"][0])
        print("JIT", model.jit_compile)
        """
    )
    env = {**os.environ, "KERAS_BACKEND": "jax", "PYTHONPATH": REPO}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "JIT True" in result.stdout, result.stdout + result.stderr[-2000:]


def test_augmentations_stay_float32_under_mixed_precision():
    with precision_policy("mixed_bfloat16"):
        model = build_shiftvit(preset("quick", rand_augment_ops=2, random_erasing=0.5), seed=0)
    preprocessing = model.get_layer("preprocessing")
    assert preprocessing.rand_augment.compute_dtype == "float32" and preprocessing.eraser.compute_dtype == "float32"
    images = np.random.default_rng(0).integers(0, 256, (4, 32, 32, 3)).astype("float32")
    logits = ops.convert_to_numpy(model(images, training=True))
    assert logits.dtype == np.float32 and np.isfinite(logits).all()


@pytest.mark.parametrize("outputs", [lambda x: keras.layers.Dense(5)(x), lambda x: [keras.layers.Dense(10)(x)] * 2])
def test_evaluate_names_a_model_whose_outputs_do_not_fit_the_classes(outputs):
    from shiftvit_lib.recipe import evaluate

    inputs = keras.Input((32, 32, 3))
    model = keras.Model(inputs, outputs(keras.layers.GlobalAveragePooling2D()(inputs)))
    with pytest.raises(ValueError, match=r"the model outputs .*10 classes.*right model") as refused:
        evaluate(model, random_splits(n_test=8), batch_size=8)
    assert "\n" not in str(refused.value)
