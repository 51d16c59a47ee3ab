"""The resumable run (tools/runs.py): the logged loss is the real cross-entropy; runs resume; strategies work."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import keras
import numpy as np
import pytest
from fakes import tiny_splits as _tiny_splits
from reference import warmup_cosine

from shiftvit_lib import preset
from shiftvit_lib.data import load_splits
from shiftvit_lib.recipe import logits_metrics
from shiftvit_lib.tools.runs import RunFolderError, read_history_csv, train

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_logged_training_loss_is_the_real_cross_entropy(tmp_path):
    # With a learning rate of 1e-30 (zero is refused) the weights do not change; without dropout,
    # drop path or augmentation the forward pass is deterministic: the loss Keras logs
    # for the epoch must equal the cross-entropy computed separately from the logits.
    # (The keras-io train_step logged the mean of the logits here.)
    data = _tiny_splits()
    config = preset(
        "quick", lr_start=1e-30, lr_max=1e-30, augment=False, mlp_dropout=0.0, drop_path_rate=0.0,
        batch_size=32, early_stopping_patience=None,
    )
    run = train(config, data, tmp_path, epochs=1, verbose=0, jit_compile=False)
    expected = logits_metrics(run.model.predict(data.x_train, verbose=0), data.y_train)
    assert run.history["loss"][0] == pytest.approx(expected["loss"], rel=1e-4)
    assert run.history["accuracy"][0] == pytest.approx(expected["accuracy"], abs=1e-6)
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["test"]["loss"] == pytest.approx(logits_metrics(run.model.predict(data.x_test, verbose=0), data.y_test)["loss"], rel=1e-5)
    assert record["data_source"] == "random test images" and record["epochs_run"] == 1


@pytest.mark.slow
@pytest.mark.colab  # ran in the Colab environment before it was marked slow
def test_quick_preset_learns_on_the_sample(tmp_path):
    # Real CIFAR-10 images: a few epochs of the quick recipe must beat chance (10 %) clearly.
    data = load_splits("sample")
    run = train(preset("quick"), data, tmp_path, epochs=3, verbose=0)
    assert run.record["test"]["accuracy"] > 0.2
    assert (tmp_path / "best.keras").exists() and (tmp_path / "history.csv").exists()
    assert run.record["train_images_per_second"] > 0


KILLED_RUN = textwrap.dedent(
    """
    import os, sys, keras
    import numpy as np
    sys.path.insert(0, {tests!r})
    from fakes import tiny_splits as _tiny_splits
    from shiftvit_lib import preset
    from shiftvit_lib.tools.runs import train

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


@pytest.mark.slow
@pytest.mark.colab  # ran in the Colab environment before it was marked slow
def test_killed_run_resumes_from_the_saved_epoch(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(KILLED_RUN.format(tests=str(Path(__file__).parents[1])))
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


@pytest.mark.slow
def test_keras_data_parallel_over_two_virtual_cpus_on_jax(tmp_path):
    # XLA splits the host CPU into two devices, so Keras' DataParallel, set as a lesson sets it
    # (the library has no code for it), shards each batch of train() over two replicas.
    pytest.importorskip("jax")
    script = textwrap.dedent(
        f"""
        import sys
        import jax, keras
        assert [d.platform for d in jax.devices()] == ["cpu", "cpu"], jax.devices()
        sys.path.insert(0, {str(Path(__file__).parents[1])!r})
        from fakes import tiny_splits as _tiny_splits
        from shiftvit_lib import preset
        from shiftvit_lib.tools.runs import train

        seen = []

        class RecordDistribution(keras.callbacks.Callback):
            def on_train_begin(self, logs=None):
                distribution = keras.distribution.distribution()
                seen.append((type(distribution).__name__, distribution.device_mesh.shape))

        keras.distribution.set_distribution(keras.distribution.DataParallel())
        run = train(preset("quick", batch_size=32), _tiny_splits(), {str(tmp_path / "data_parallel")!r}, epochs=2,
                    extra_callbacks=[RecordDistribution()], verbose=0)
        print("DISTRIBUTED", seen[0][0], tuple(seen[0][1]))
        print("EPOCHS", run.record["epochs_run"])
        print("LOSS", max(run.history["loss"]))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "KERAS_BACKEND": "jax",
           "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    # During fit a two-device DataParallel is in force.
    assert "DISTRIBUTED DataParallel (2,)" in result.stdout, result.stdout
    assert "EPOCHS 2" in result.stdout
    loss = float(result.stdout.split("LOSS")[1].split()[0])
    assert np.isfinite(loss)


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="epochs"):
        train(preset("quick"), _tiny_splits(), tmp_path, epochs=0)


def test_accelerator_detection_matches_the_backend_device_list():
    # CPU-only machines (CI) must not be mistaken for GPU machines: the lessons pick
    # quick or full mode from this answer.
    import tensorflow as tf

    from shiftvit_lib.tools.devices import accelerator_platform, has_accelerator, recommended_mixed_precision

    gpus = tf.config.list_physical_devices("GPU")
    tpus = tf.config.list_physical_devices("TPU")
    assert has_accelerator() == bool(gpus or tpus)
    if not (gpus or tpus):
        assert accelerator_platform() is None
        assert recommended_mixed_precision() is None


# --------------------------------------------------------------------------- run folders
FAST = dict(verbose=0, jit_compile=False)


def _fast_config(**changes):
    return preset("quick", **{"batch_size": 32, "early_stopping_patience": None, **changes})


class _Disconnect(keras.callbacks.Callback):
    """Raise at the end of epoch ``after`` (1-based), like a lost Colab session."""

    def __init__(self, after):
        super().__init__()
        self.after = after

    def on_epoch_end(self, epoch, logs=None):
        if epoch + 1 == self.after:
            raise ConnectionError("simulated disconnect")


class _RecordResume(keras.callbacks.Callback):
    """After BackupAndRestore has restored the state: the optimizer step and learning rate."""

    def __init__(self):
        super().__init__()
        self.seen = {}

    def on_epoch_begin(self, epoch, logs=None):
        if not self.seen:
            optimizer = self.model.optimizer
            self.seen = {"epoch": epoch, "iterations": int(optimizer.iterations.numpy()),
                         "lr": float(keras.ops.convert_to_numpy(optimizer.learning_rate))}


def _interrupted(folder, data, config, epochs=3, after=1):
    with pytest.raises(ConnectionError):
        train(config, data, folder, epochs=epochs, extra_callbacks=[_Disconnect(after)], **FAST)
    return {name: (folder / name).read_bytes() for name in ("run_spec.json", "history.csv")}


@pytest.mark.slow
@pytest.mark.colab  # ran in the Colab environment before it was marked slow
def test_a_finished_folder_is_refused_and_overwrite_replaces_it(tmp_path):
    data = _tiny_splits()
    first = train(_fast_config(), data, tmp_path, epochs=1, **FAST)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    with pytest.raises(RunFolderError, match=r"already holds a finished run \(its record: .*run\.json\).*overwrite"):
        train(_fast_config(batch_size=16), data, tmp_path, epochs=1, **FAST)
    with pytest.raises(RunFolderError, match="finished run"):  # the same settings: finished is finished
        train(_fast_config(), data, tmp_path, epochs=1, **FAST)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before  # untouched

    (tmp_path / "notes.txt").write_text("mine")  # not a run file: overwrite keeps it
    second = train(_fast_config(batch_size=16), data, tmp_path, epochs=1, overwrite=True, **FAST)
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["config"]["batch_size"] == 16 and record["epochs_run"] == 1
    assert read_history_csv(tmp_path / "history.csv")["epoch"] == [0]
    assert json.loads((tmp_path / "run_spec.json").read_text())["batch_size"] == 16
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert first.record["finished_at"] and second.record["resumed_from_epoch"] == 0


@pytest.mark.slow
@pytest.mark.colab  # ran in the Colab environment before it was marked slow
def test_an_interrupted_run_resumes_only_with_the_same_settings(tmp_path):
    data = _tiny_splits()
    config = _fast_config()
    saved = _interrupted(tmp_path, data, config, epochs=3, after=1)
    attempts = {
        "epochs (3 -> 5)": dict(config=config, data=data, epochs=5),
        "config.batch_size (32 -> 16)": dict(config=_fast_config(batch_size=16), data=data, epochs=3),
        "seed (42 -> 7)": dict(config=config, data=data, epochs=3, seed=7),
        "data (other images or labels)": dict(config=config, data=_tiny_splits(seed=1), epochs=3),
    }
    for field, arguments in attempts.items():
        with pytest.raises(RunFolderError) as refused:
            train(out_dir=tmp_path, **arguments, **FAST)
        message = str(refused.value)
        assert "interrupted run with other settings" in message and field in message, message
        assert "\n" not in message
        assert {name: (tmp_path / name).read_bytes() for name in saved} == saved  # nothing changed

    # The same settings resume at epoch 1, and the schedule continues where it stopped.
    probe = _RecordResume()
    run = train(config, data, tmp_path, epochs=3, extra_callbacks=[probe], **FAST)
    steps = len(data.y_train) // config.batch_size
    assert probe.seen["epoch"] == 1 and probe.seen["iterations"] == steps
    total = steps * 3
    expected_lr = warmup_cosine(steps, config.lr_start, config.lr_max, int(total * config.warmup_fraction), total)
    assert probe.seen["lr"] == pytest.approx(expected_lr, rel=1e-5)
    assert run.record["resumed_from_epoch"] == 1 and run.history["epoch"] == [0, 1, 2]


@pytest.mark.slow
@pytest.mark.colab  # ran in the Colab environment before it was marked slow
def test_history_rows_never_duplicate_when_the_backup_lags(tmp_path):
    # Killed after history.csv got epoch 1's row but before the backup of epoch 1 was
    # written: the resumed run redoes epoch 1 and its row is replaced, not repeated.
    data = _tiny_splits()
    config = _fast_config()
    _interrupted(tmp_path, data, config, epochs=3, after=2)
    assert read_history_csv(tmp_path / "history.csv")["epoch"] == [0, 1]
    metadata = tmp_path / "backup" / "training_metadata.json"
    metadata.write_text(json.dumps({"epoch": 1, "batch": 0}))
    run = train(config, data, tmp_path, epochs=3, **FAST)
    assert run.history["epoch"] == [0, 1, 2]
    assert run.record["resumed_from_epoch"] == 1


@pytest.mark.slow
@pytest.mark.colab  # ran in the Colab environment before it was marked slow
def test_a_run_that_died_before_its_record_finishes_without_training(tmp_path):
    data = _tiny_splits()
    config = _fast_config()
    train(config, data, tmp_path, epochs=1, **FAST)
    (tmp_path / "run.json").unlink()  # as if the process died while evaluating

    class MustNotTrain(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            raise AssertionError("the run had finished training")

    run = train(config, data, tmp_path, epochs=1, extra_callbacks=[MustNotTrain()], **FAST)
    assert run.history["epoch"] == [0] and (tmp_path / "run.json").exists()


def test_unusable_output_folders_are_refused_before_anything_is_written(tmp_path):
    data = _tiny_splits()
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(RunFolderError, match="is a file"):
        train(_fast_config(), data, tmp_path / "a_file", epochs=1, **FAST)
    with pytest.raises(RunFolderError, match="a_file is a file"):
        train(_fast_config(), data, tmp_path / "a_file" / "run", epochs=1, **FAST)
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "history.csv").write_text("epoch,loss\n0,2.3\n")  # an older version's interrupted run
    with pytest.raises(RunFolderError, match="without run_spec.json"):
        train(_fast_config(), data, legacy, epochs=1, **FAST)
    assert sorted(p.name for p in legacy.iterdir()) == ["history.csv"]
    with pytest.raises(ValueError, match="batch_size"):  # the config refuses it, or train() does
        train(_fast_config(batch_size=0), data, tmp_path / "zero", epochs=1, **FAST)
    assert not (tmp_path / "zero").exists()


# --------------------------------------------------------------------------- runs of the stronger recipe
@pytest.mark.slow
@pytest.mark.colab  # ran in the Colab environment before it was marked slow
def test_a_mixed_label_run_trains_with_soft_targets_and_reports_hard_label_metrics(tmp_path):
    config = preset("quick", batch_size=16, mixup_alpha=0.8, cutmix_alpha=1.0, rand_augment_ops=1,
                    random_erasing=0.25, label_smoothing=0.1, init="spach")
    data = _tiny_splits(n_train=40, n_val=16, n_test=16)
    run = train(config, data, tmp_path, epochs=2, verbose=0)
    assert run.model.loss.__class__.__name__ == "CategoricalCrossentropy"
    assert all(np.isfinite(run.history["loss"])) and len(run.history["val_accuracy"]) == 2
    # The test metrics come from integer labels, computed apart from Keras.
    expected = logits_metrics(run.model.predict(data.x_test, verbose=0), data.y_test)
    assert run.record["test"]["accuracy"] == pytest.approx(expected["accuracy"])
    assert run.record["config"]["mixup_alpha"] == 0.8


@pytest.mark.slow
@pytest.mark.colab  # ran in the Colab environment before it was marked slow
def test_load_run_reads_back_a_finished_run_and_names_a_missing_one(tmp_path):
    from shiftvit_lib.tools.runs import describe_run, load_run

    data = _tiny_splits(n_train=40, n_val=16, n_test=16)
    run = train(preset("quick", batch_size=16), data, tmp_path / "run", epochs=2, verbose=0)
    record, history = load_run(tmp_path / "run")
    assert record == json.loads((tmp_path / "run" / "run.json").read_text())
    assert len(history["epoch"]) == 2 and record["train_seconds"] == pytest.approx(sum(history["epoch_seconds"]), abs=0.01)
    text = describe_run(record)
    assert "random test images" in text and f"test top-1 {run.record['test']['accuracy']:.2%}" in text
    assert "epochs run 2 of 2" in text and "test-time augmentation" not in text
    # The record names the backend's own version beside Keras', and the summary shows it.
    versions = record["machine"]["backend_versions"]
    assert versions and all(f"{name} {version}" in text for name, version in versions.items())
    tta_text = describe_run({**record, "test_flip_tta": {"accuracy": 0.4321}})
    assert "test top-1 43.21%" in tta_text.split("with flip test-time augmentation:")[1]
    assert f"test top-1 {run.record['test']['accuracy']:.2%}" in tta_text  # beside, not instead
    with pytest.raises(FileNotFoundError, match=r"run.json is missing"):
        load_run(tmp_path / "nothing_here")


# --------------------------------------------------------------------------- re-running a lesson's training cell
@pytest.mark.slow
@pytest.mark.colab
def test_reuse_reads_a_finished_run_back_and_refuses_other_settings(tmp_path):
    # Lesson 05's training cell (reuse=True): re-running it never trains a finished run twice.

    data, config, out = _tiny_splits(n_train=64), preset("quick", batch_size=32), tmp_path / "05_training_quick"
    first = train(config, data, out, epochs=1, verbose=0, jit_compile=False, reuse=True)
    stamp = (out / "run.json").stat().st_mtime_ns
    again = train(config, data, out, epochs=1, verbose=0, jit_compile=False, reuse=True)
    assert again.reused and not first.reused
    assert (out / "run.json").stat().st_mtime_ns == stamp  # nothing rewritten, nothing deleted
    assert again.record == first.record and again.history == first.history
    assert again.model.count_params() == first.model.count_params()
    # Other settings: a refusal that names the finished run, and the folder is kept.
    with pytest.raises(RunFolderError, match="already holds a finished run"):
        train(config, data, out, epochs=2, verbose=0, jit_compile=False, reuse=True)
    assert (out / "best.keras").exists() and (out / "run.json").stat().st_mtime_ns == stamp


@pytest.mark.slow  # trains twice (~15 s): the full suite and the Colab run keep it
@pytest.mark.colab
def test_overwrite_trains_a_quick_run_afresh_over_a_finished_one(tmp_path):
    # Quick mode's scratch run: a second run of the lesson (another Keras version, say) must
    # not read the first run's model back, and must leave one clean run in the folder.
    data, config, out = _tiny_splits(n_train=64), preset("quick", batch_size=32), tmp_path / "05_training_quick"
    train(config, data, out, epochs=1, verbose=0, jit_compile=False, reuse=True)
    (out / "best.keras").write_bytes(b"saved by some other Keras")  # unreadable if loaded
    run = train(config, data, out, epochs=1, verbose=0, jit_compile=False, overwrite=True)
    assert not run.reused
    assert run.record["epochs_run"] == 1 and len(run.history["loss"]) == 1
    assert (out / "best.keras").read_bytes()[:2] == b"PK"  # a fresh .keras (zip) file


@pytest.mark.slow  # trains twice (~15 s): the full suite and the Colab run keep it
@pytest.mark.colab
def test_after_a_disconnect_reuse_resumes_from_the_last_finished_epoch(tmp_path):
    class Disconnect(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                raise KeyboardInterrupt("the runtime disconnected")

    data, config, out = _tiny_splits(n_train=64), preset("quick", batch_size=32), tmp_path / "05_training_quick"
    with pytest.raises(KeyboardInterrupt):
        train(config, data, out, epochs=3, verbose=0, jit_compile=False, reuse=True, extra_callbacks=[Disconnect()])
    assert not (out / "run.json").exists() and (out / "backup").exists()
    run = train(config, data, out, epochs=3, verbose=0, jit_compile=False, reuse=True)
    assert run.record["resumed_from_epoch"] == 2 and run.history["epoch"] == [0, 1, 2]
