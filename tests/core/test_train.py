"""The training recipe's core (train.py): metrics, the smoothed loss, precision of the logits."""

import numpy as np
import pytest
from fakes import tiny_splits

from shiftvit_lib import build_shiftvit, preset
from shiftvit_lib.tools.devices import precision_policy
from shiftvit_lib.train import compile_for_training, logits_metrics, training_datasets


def test_logits_metrics_by_hand():
    logits = np.array([[2.0, 1.0, 0.0], [0.0, 0.0, 3.0]])
    metrics = logits_metrics(logits, np.array([0, 1]))
    expected = -(np.log(np.exp(2) / np.exp([2, 1, 0]).sum()) + np.log(1 / np.exp([0, 0, 3]).sum())) / 2
    assert metrics["loss"] == pytest.approx(expected)
    assert metrics["accuracy"] == 0.5 and metrics["top5"] == 1.0


def test_label_smoothing_trains_on_one_hot_targets_with_the_smoothed_loss():
    config = preset("quick", label_smoothing=0.1, batch_size=16, augment=False)
    assert config.one_hot_targets and not preset("quick").one_hot_targets
    _, val_ds, _ = training_datasets(config, tiny_splits(), seed=0)
    images, targets = val_ds[0]
    assert targets.shape == (16, 10) and set(np.unique(targets)) == {0.0, 1.0}  # the loss smooths them
    model = compile_for_training(build_shiftvit(config, seed=0), config, steps_per_epoch=1, jit_compile=False)
    logits = model.predict(images, verbose=0).astype("float64")
    log_p = logits - logits.max(axis=1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(axis=1, keepdims=True))
    smoothed = 0.9 * targets + 0.1 / 10
    logged = model.test_on_batch(images, targets, return_dict=True)["loss"]
    assert logged == pytest.approx(-(smoothed * log_p).sum(axis=1).mean(), rel=1e-4)
    assert logged != pytest.approx(-(targets * log_p).sum(axis=1).mean(), rel=1e-4)  # smoothing changed it


def test_mixed_precision_build_keeps_float32_logits():
    with precision_policy("mixed_bfloat16"):
        model = build_shiftvit(preset("quick"))
        compile_for_training(model, preset("quick"), steps_per_epoch=10)
    assert model.get_layer("stage_1").compute_dtype == "bfloat16"
    logits = model.predict(np.zeros((2, 32, 32, 3), "uint8"), verbose=0)
    assert logits.dtype == np.float32
