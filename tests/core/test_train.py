"""The training recipe's core (recipe.py): metrics, the smoothed loss, precision of the logits."""

import keras
import numpy as np
import pytest
from fakes import tiny_splits

from shiftvit_lib import build_shiftvit, preset
from shiftvit_lib.data import iterate_batches
from shiftvit_lib.recipe import (
    compile_for_training,
    evaluate,
    logits_metrics,
    training_datasets,
)
from shiftvit_lib.tools.devices import precision_policy


def test_logits_metrics_by_hand():
    logits = np.array([[2.0, 1.0, 0.0], [0.0, 0.0, 3.0]])
    metrics = logits_metrics(logits, np.array([0, 1]))
    expected = -(np.log(np.exp(2) / np.exp([2, 1, 0]).sum()) + np.log(1 / np.exp([0, 0, 3]).sum())) / 2
    assert metrics["loss"] == pytest.approx(expected)
    assert metrics["accuracy"] == 0.5 and metrics["top5"] == 1.0


def test_label_smoothing_is_keras_own_loss_on_one_hot_targets(tmp_path):
    config = preset("quick", label_smoothing=0.1)
    model = compile_for_training(build_shiftvit(config, seed=0), config, steps_per_epoch=1, jit_compile=False)
    assert isinstance(model.loss, keras.losses.CategoricalCrossentropy)
    train_ds, val_ds, _ = training_datasets(config, tiny_splits(), seed=0)
    for dataset in (train_ds, val_ds):
        _, targets = next(iter(iterate_batches(dataset)))
        assert targets.shape[1:] == (config.num_classes,)  # one-hot rows
    # The smoothed cross-entropy by hand: 0.1 of the target spread evenly over the classes.
    logits = np.array([[2.0, 0.5, -1.0]], "float32")
    target = np.array([0.1 / 3 + 0.9, 0.1 / 3, 0.1 / 3])
    log_p = logits[0] - np.log(np.exp(logits[0]).sum())
    assert float(model.loss(np.eye(3)[[0]], logits)) == pytest.approx(-(target * log_p).sum(), rel=1e-5)
    model.optimizer.build(model.trainable_variables)  # as after training: the file holds its state
    model.save(tmp_path / "smoothed.keras")
    loaded = keras.saving.load_model(tmp_path / "smoothed.keras", safe_mode=True)
    assert loaded.loss.get_config()["label_smoothing"] == pytest.approx(0.1)
    no_smoothing = compile_for_training(build_shiftvit(preset("quick"), seed=0), preset("quick"), steps_per_epoch=1)
    assert isinstance(no_smoothing.loss, keras.losses.SparseCategoricalCrossentropy)


def test_a_model_saved_with_a_loss_this_version_lacks_still_loads(tmp_path):
    # Runs before issue 34 saved best.keras with the library's own smoothed loss, since removed.
    from shiftvit_lib.tools.inference import load_model

    @keras.saving.register_keras_serializable(package="shiftvit_test")
    class RetiredLoss(keras.losses.Loss):
        def call(self, y_true, y_pred):
            return keras.ops.mean(y_pred)

    model = build_shiftvit(preset("quick"), seed=0)
    model.compile(optimizer="adam", loss=RetiredLoss())
    model.save(tmp_path / "old.keras")
    del keras.saving.get_custom_objects()["shiftvit_test>RetiredLoss"]
    loaded = load_model(tmp_path / "old.keras")
    images = np.zeros((2, 32, 32, 3), "uint8")
    np.testing.assert_allclose(loaded.predict(images, verbose=0), model.predict(images, verbose=0), atol=1e-6)


def test_mixed_precision_build_keeps_float32_logits():
    with precision_policy("mixed_bfloat16"):
        model = build_shiftvit(preset("quick"))
        compile_for_training(model, preset("quick"), steps_per_epoch=10)
    assert model.get_layer("stage_1").compute_dtype == "bfloat16"
    logits = model.predict(np.zeros((2, 32, 32, 3), "uint8"), verbose=0)
    assert logits.dtype == np.float32


def _left_right_sensitive_model() -> keras.Model:
    """Logits that change when an image is mirrored: a dense layer on the raw pixels."""
    inputs = keras.Input((32, 32, 3))
    outputs = keras.layers.Dense(10, kernel_initializer=keras.initializers.RandomNormal(seed=3))(
        keras.layers.Flatten()(keras.layers.Rescaling(1 / 255)(inputs)))
    return keras.Model(inputs, outputs)


def test_flip_tta_averages_the_logits_of_the_image_and_its_mirror():
    model = _left_right_sensitive_model()
    data = tiny_splits()
    x = data.x_test
    plain = model.predict(x, verbose=0)
    mirrored = model.predict(x[:, :, ::-1], verbose=0)  # width is axis 2 of (N, H, W, C)
    assert not np.allclose(plain, mirrored, atol=1e-3)  # the model can tell the two apart
    expected = logits_metrics((plain + mirrored) / 2, data.y_test)
    upside_down = logits_metrics((plain + model.predict(x[:, ::-1], verbose=0)) / 2, data.y_test)
    assert expected["loss"] != pytest.approx(upside_down["loss"], rel=1e-4)  # a wrong axis would show
    tta = evaluate(model, data, tta=True)
    assert tta["loss"] == pytest.approx(expected["loss"], rel=1e-5)
    assert tta["accuracy"] == expected["accuracy"]
    assert evaluate(model, data)["loss"] == pytest.approx(logits_metrics(plain, data.y_test)["loss"], rel=1e-5)


def test_predict_with_tta_is_the_softmax_of_the_mean_logits():
    from shiftvit_lib.tools.inference import predict_probabilities

    model = _left_right_sensitive_model()
    x = tiny_splits().x_test[:5]
    mean_logits = (model.predict(x, verbose=0) + model.predict(x[:, :, ::-1], verbose=0)) / 2
    expected = np.exp(mean_logits) / np.exp(mean_logits).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(predict_probabilities(model, x, tta=True), expected, atol=1e-5)
