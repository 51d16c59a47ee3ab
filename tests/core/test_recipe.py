"""The training recipe (recipe.py): its datasets, compile, the smoothed loss, metrics from logits, flip TTA."""

import time
from types import SimpleNamespace

import keras
import numpy as np
import pytest
from fakes import left_right_sensitive_model, logits_of, one_line, tiny_splits

from shiftvit_lib import build_shiftvit, preset
from shiftvit_lib.data import mix_images
from shiftvit_lib.recipe import (
    ThroughputMeter,
    compile_for_training,
    evaluate,
    logits_metrics,
    training_datasets,
)


def test_training_datasets_drop_the_last_batch_and_carry_one_hot_targets_when_mixing():
    config = preset("quick", batch_size=16, mixup_alpha=0.8, cutmix_alpha=1.0)
    assert config.one_hot_targets and preset("quick", label_smoothing=0.1).one_hot_targets
    assert not preset("quick").one_hot_targets
    train_ds, val_ds, steps = training_datasets(config, tiny_splits(40, 16, 16), seed=0)
    assert steps == len(train_ds) == 2
    _, targets = train_ds[0]
    _, val_targets = val_ds[0]
    assert targets.shape == (16, 10) and val_targets.shape == (16, 10)
    assert set(np.unique(val_targets)) == {0.0, 1.0}  # validation is never mixed


def test_compile_takes_soft_targets_with_keras_own_smoothed_loss_and_keeps_the_metric_names(tmp_path):
    config = preset("quick", cutmix_alpha=1.0, label_smoothing=0.1)
    model = compile_for_training(build_shiftvit(config, seed=0), config, steps_per_epoch=1, jit_compile=False)
    assert isinstance(model.loss, keras.losses.CategoricalCrossentropy)  # Keras' own, on the model's logits
    assert model.loss.get_config()["from_logits"]
    assert model.loss.get_config()["label_smoothing"] == pytest.approx(0.1)
    x = np.zeros((2, 32, 32, 3), "uint8")
    soft = np.array([[0.0, 0.7, 0.3] + [0.0] * 7, [0.0, 0.2, 0.8] + [0.0] * 7], "float32")
    logs = model.test_on_batch(x, soft, return_dict=True)
    assert {"loss", "accuracy", "top5"} <= set(logs)  # EarlyStopping and best.keras watch these names
    assert logs["accuracy"] == pytest.approx(np.mean(logits_of(model, x).argmax(axis=1) == soft.argmax(axis=1)))
    model.optimizer.build(model.trainable_variables)  # as after training: the file holds its state
    model.save(tmp_path / "smoothed.keras")
    loaded = keras.saving.load_model(tmp_path / "smoothed.keras", safe_mode=True)
    assert loaded.loss.get_config()["label_smoothing"] == pytest.approx(0.1)
    compile_for_training(model, preset("quick"), steps_per_epoch=1)
    assert isinstance(model.loss, keras.losses.SparseCategoricalCrossentropy)


def test_mixing_on_the_device_gives_the_host_pixels_and_targets_for_the_same_draws(seed=1):
    # The same seed draws the same pairs and boxes; the host mixes them in NumPy, the device
    # batch carries them to the model, whose compiled predict mixes them as training does.
    host, device = (preset("quick", batch_size=8, mixup_alpha=0.8, cutmix_alpha=1.0, mix_on_device=where)
                    for where in (False, True))
    model = compile_for_training(build_shiftvit(device), device, steps_per_epoch=2)
    (host_ds, _, _), (device_ds, _, _) = (training_datasets(c, tiny_splits(40, 16, 16), seed) for c in (host, device))
    for index in range(len(host_ds)):
        (mixed, targets), (batch, device_targets) = host_ds[index], device_ds[index]
        np.testing.assert_array_equal(device_targets, targets)
        np.testing.assert_allclose(mix_images(batch["images"], batch["mixing"]), mixed, atol=1e-3)
        np.testing.assert_allclose(model.predict_on_batch(batch), model.predict_on_batch(mixed), atol=1e-4)
    assert {device_ds[i][0]["mixing"][0, 1] == 1 for i in range(len(device_ds))} == {True, False}  # CutMix, MixUp


@pytest.mark.parametrize("outputs", [lambda x: keras.layers.Dense(5)(x), lambda x: [keras.layers.Dense(10)(x)] * 2])
def test_evaluate_names_a_model_whose_outputs_do_not_fit_the_classes(outputs):
    inputs = keras.Input((32, 32, 3))
    model = keras.Model(inputs, outputs(keras.layers.GlobalAveragePooling2D()(inputs)))
    with pytest.raises(ValueError, match=r"the model outputs .*10 classes.*right model") as refused:
        evaluate(model, tiny_splits(n_test=8), batch_size=8)
    one_line(refused.value)


def test_logits_metrics_by_hand():
    logits = np.array([[2.0, 1.0, 0.0], [0.0, 0.0, 3.0]])
    metrics = logits_metrics(logits, np.array([0, 1]))
    expected = -(np.log(np.exp(2) / np.exp([2, 1, 0]).sum()) + np.log(1 / np.exp([0, 0, 3]).sum())) / 2
    assert metrics["loss"] == pytest.approx(expected)
    assert metrics["accuracy"] == 0.5 and metrics["top5"] == 1.0


def test_mixed_precision_build_keeps_float32_logits(dtype_policy):
    dtype_policy("mixed_bfloat16")
    model = compile_for_training(build_shiftvit(preset("quick")), preset("quick"), steps_per_epoch=10)
    assert model.get_layer("stage_1").compute_dtype == "bfloat16"
    assert logits_of(model, np.zeros((2, 32, 32, 3), "uint8")).dtype == np.float32


def test_flip_tta_averages_the_logits_of_the_image_and_its_mirror():
    model = left_right_sensitive_model()
    data = tiny_splits()
    x = data.x_test
    plain = logits_of(model, x)
    mirrored = logits_of(model, x[:, :, ::-1])  # width is axis 2 of (N, H, W, C)
    assert not np.allclose(plain, mirrored, atol=1e-3)  # the model can tell the two apart
    expected = logits_metrics((plain + mirrored) / 2, data.y_test)
    upside_down = logits_metrics((plain + logits_of(model, x[:, ::-1])) / 2, data.y_test)
    assert expected["loss"] != pytest.approx(upside_down["loss"], rel=1e-4)  # a wrong axis would show
    tta = evaluate(model, data, tta=True)
    assert tta["loss"] == pytest.approx(expected["loss"], rel=1e-5)
    assert tta["accuracy"] == expected["accuracy"]
    assert evaluate(model, data)["loss"] == pytest.approx(logits_metrics(plain, data.y_test)["loss"], rel=1e-5)


# ---- the run's own speed figure (ThroughputMeter) times computed steps. On JAX or a GPU a step
# returns before it is computed; the meter's clock stopped when validation began, while steps were
# still queued: 15,000-40,000 images/s were logged on a 2-core CPU that trains about 400.
DEVICE_SECONDS = 0.2  # how long the stand-in device still computes when validation begins


def _epoch_rate(monkeypatch, waits: bool) -> float:
    def wait_for_the_device(value):
        time.sleep(DEVICE_SECONDS)  # the queued steps finish, then the value is read
        return value

    monkeypatch.setattr(keras.ops, "convert_to_numpy", wait_for_the_device if waits else (lambda value: value))
    meter = ThroughputMeter(images_per_epoch=1000)
    meter.set_model(SimpleNamespace(optimizer=SimpleNamespace(iterations=7)))
    logs: dict = {}
    meter.on_epoch_begin(0)
    meter.on_test_begin()  # validation starts: the training steps are only dispatched
    meter.on_epoch_end(0, logs)
    return logs["images_per_second"]


def test_the_meter_waits_for_the_dispatched_steps_before_stopping_its_clock(monkeypatch):
    assert _epoch_rate(monkeypatch, waits=True) <= 1000 / DEVICE_SECONDS
    # A meter that read no value from the device would log the dispatch rate, far higher.
    assert _epoch_rate(monkeypatch, waits=False) > 10 * 1000 / DEVICE_SECONDS
