"""Training: the logged loss is the real cross-entropy; runs resume; strategies work."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from shiftvit_lib import build_shiftvit, preset
from shiftvit_lib.data import DataSplits, load_cifar10
from shiftvit_lib.train import (
    SmoothedSparseCrossentropy,
    compile_for_training,
    logits_metrics,
    read_history_csv,
    train,
)

REPO = Path(__file__).resolve().parents[1]


def _tiny_splits(n_train=96, n_val=32, n_test=32, seed=0) -> DataSplits:
    """Random images keep the test fast; labels balanced over 10 classes."""
    rng = np.random.default_rng(seed)

    def part(n):
        return rng.integers(0, 256, (n, 32, 32, 3)).astype("uint8"), np.arange(n) % 10

    (xt, yt), (xv, yv), (xs, ys) = part(n_train), part(n_val), part(n_test)
    names = tuple(f"class_{i}" for i in range(10))
    return DataSplits(xt, yt, xv, yv, xs, ys, names, source="random test images")


def test_logits_metrics_by_hand():
    logits = np.array([[2.0, 1.0, 0.0], [0.0, 0.0, 3.0]])
    metrics = logits_metrics(logits, np.array([0, 1]))
    expected = -(np.log(np.exp(2) / np.exp([2, 1, 0]).sum()) + np.log(1 / np.exp([0, 0, 3]).sum())) / 2
    assert metrics["loss"] == pytest.approx(expected)
    assert metrics["accuracy"] == 0.5 and metrics["top5"] == 1.0


def test_logged_training_loss_is_the_real_cross_entropy(tmp_path):
    # With the learning rate at zero the weights never change, and without dropout,
    # drop path or augmentation the forward pass is deterministic: the loss Keras logs
    # for the epoch must equal the cross-entropy computed separately from the logits.
    # (The keras-io train_step logged the mean of the logits here.)
    data = _tiny_splits()
    config = preset(
        "quick", lr_start=0.0, lr_max=0.0, augment=False, mlp_dropout=0.0, drop_path_rate=0.0,
        batch_size=32, early_stopping_patience=None,
    )
    run = train(config, data, tmp_path, epochs=1, verbose=0, jit_compile=False)
    expected = logits_metrics(run.model.predict(data.x_train, verbose=0), data.y_train)
    assert run.history["loss"][0] == pytest.approx(expected["loss"], rel=1e-4)
    assert run.history["accuracy"][0] == pytest.approx(expected["accuracy"], abs=1e-6)
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["test"]["loss"] == pytest.approx(logits_metrics(run.model.predict(data.x_test, verbose=0), data.y_test)["loss"], rel=1e-5)
    assert record["data_source"] == "random test images" and record["epochs_run"] == 1


def test_label_smoothing_loss_matches_formula():
    loss = SmoothedSparseCrossentropy(0.1, 3)
    logits = np.array([[2.0, 0.5, -1.0]], "float32")
    target = np.array([0.1 / 3 + 0.9, 0.1 / 3, 0.1 / 3])
    log_p = logits[0] - np.log(np.exp(logits[0]).sum())
    assert float(loss(np.array([0]), logits)) == pytest.approx(-(target * log_p).sum(), rel=1e-5)


def test_quick_preset_learns_on_the_sample(tmp_path):
    # Real CIFAR-10 images: a few epochs of the quick recipe must beat chance (10 %) clearly.
    data = load_cifar10("sample")
    run = train(preset("quick"), data, tmp_path, epochs=3, verbose=0)
    assert run.record["test"]["accuracy"] > 0.2
    assert (tmp_path / "best.keras").exists() and (tmp_path / "history.csv").exists()
    assert run.record["train_images_per_second"] > 0


KILLED_RUN = textwrap.dedent(
    """
    import os, sys, keras
    import numpy as np
    sys.path.insert(0, {tests!r})
    from test_train import _tiny_splits
    from shiftvit_lib import preset
    from shiftvit_lib.train import train

    class DieAfterSecondEpoch(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                os._exit(17)  # like a Colab disconnect: no clean-up, no exception handling

    kill = sys.argv[2] == "kill"
    train(preset("quick", batch_size=32), _tiny_splits(), sys.argv[1], epochs=4, verbose=0,
          extra_callbacks=[DieAfterSecondEpoch()] if kill else [])
    print("FINISHED")
    """
)


def test_killed_run_resumes_from_the_saved_epoch(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(KILLED_RUN.format(tests=str(Path(__file__).parent)))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = tmp_path / "run"
    first = subprocess.run([sys.executable, str(script), str(out), "kill"], env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 17, first.stderr[-2000:]
    assert read_history_csv(out / "history.csv")["epoch"] == [0, 1]
    assert (out / "backup").exists()

    second = subprocess.run([sys.executable, str(script), str(out), "resume"], env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0 and "FINISHED" in second.stdout, second.stderr[-2000:]
    history = read_history_csv(out / "history.csv")
    assert history["epoch"] == [0, 1, 2, 3]  # resumed at epoch 2, not from zero; 4 epochs in all
    record = json.loads((out / "run.json").read_text())
    assert record["resumed_from_epoch"] == 2 and record["epochs_run"] == 4
    assert not (out / "backup").exists()  # a finished run cleans its backup


def test_mirrored_strategy_over_two_logical_cpus(tmp_path):
    script = textwrap.dedent(
        f"""
        import sys
        import tensorflow as tf
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_train import _tiny_splits
        from shiftvit_lib import preset
        from shiftvit_lib.train import train
        run = train(preset("quick", batch_size=32), _tiny_splits(), {str(tmp_path / "mirrored")!r}, epochs=2,
                    distribute="mirrored", devices=["/cpu:0", "/cpu:1"], verbose=0)
        print("REPLICAS", run.record["distribute"], run.record["replicas"], run.record["epochs_run"])
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "KERAS_BACKEND": "tensorflow"}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "REPLICAS mirrored 2 2" in result.stdout  # two replicas, two epochs


def test_mixed_precision_build_keeps_float32_logits():
    from shiftvit_lib.train import precision_policy

    with precision_policy("mixed_bfloat16"):
        model = build_shiftvit(preset("quick"))
        compile_for_training(model, preset("quick"), steps_per_epoch=10)
    assert model.get_layer("stage_1").compute_dtype == "bfloat16"
    logits = model.predict(np.zeros((2, 32, 32, 3), "uint8"), verbose=0)
    assert logits.dtype == np.float32


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="epochs"):
        train(preset("quick"), _tiny_splits(), tmp_path, epochs=0)
    with pytest.raises(ValueError, match="distribute"):
        train(preset("quick"), _tiny_splits(), tmp_path, epochs=1, distribute="everywhere")


def test_accelerator_detection_matches_the_backend_device_list():
    # CPU-only machines (CI) must not be mistaken for GPU machines: the lessons pick
    # quick or full mode from this answer.
    import tensorflow as tf

    from shiftvit_lib.train import accelerator_platform, has_accelerator, recommended_mixed_precision

    gpus = tf.config.list_physical_devices("GPU")
    tpus = tf.config.list_physical_devices("TPU")
    assert has_accelerator() == bool(gpus or tpus)
    if not (gpus or tpus):
        assert accelerator_platform() is None
        assert recommended_mixed_precision() is None
