"""The learner's runtime (shiftvit_lib/notebook/runtime.py): where runs go, lesson 06's model, estimates."""

import json
import os
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from shiftvit_lib import build_shiftvit, load_model, preset, save_model
from shiftvit_lib.notebook import runtime
from shiftvit_lib.notebook.runtime import (
    COLAB_LOCAL_RUNS,
    DRIVE_MOUNT_ENV,
    RunEstimate,
    format_duration,
    format_timings,
    learners_best_model,
    runs_root,
)


@pytest.fixture
def fake_colab(monkeypatch):
    """A Python that looks like Colab's: a ``google.colab`` module is loaded."""
    google = types.ModuleType("google")
    colab = types.ModuleType("google.colab")
    google.colab = colab
    monkeypatch.setitem(sys.modules, "google", google)
    monkeypatch.setitem(sys.modules, "google.colab", colab)


def test_on_colab_with_drive_mounted_full_runs_go_to_drive(fake_colab, monkeypatch, tmp_path):
    mount = tmp_path / "drive"  # stands in for /content/drive after drive.mount()
    (mount / "MyDrive").mkdir(parents=True)
    monkeypatch.setenv(DRIVE_MOUNT_ENV, str(mount))
    root = runs_root(full_mode=True)
    assert root.path == mount / "MyDrive" / "shiftvit" / "runs"
    assert "Google Drive" in root.note and "disconnect keeps" in root.note
    # Quick mode's scratch runs stay next to the notebook, even on Colab.
    assert runs_root(full_mode=False).path == Path("runs")


def test_on_colab_without_drive_runs_go_to_content_and_the_note_warns(fake_colab, monkeypatch, tmp_path):
    monkeypatch.setenv(DRIVE_MOUNT_ENV, str(tmp_path / "not_mounted"))
    root = runs_root(full_mode=True)
    assert root.path == COLAB_LOCAL_RUNS == Path("/content/runs")
    assert "disconnect loses" in root.note and "drive.mount" in root.note
    assert "\n" not in root.note  # one line


def test_elsewhere_runs_go_to_runs_next_to_the_notebook(monkeypatch, tmp_path):
    drive = tmp_path / "drive"
    (drive / "MyDrive").mkdir(parents=True)
    monkeypatch.setenv(DRIVE_MOUNT_ENV, str(drive))
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    # A mounted-looking folder does not matter off Colab.
    root = runs_root(full_mode=True)
    assert root.path == Path("runs") and "next to this notebook" in root.note
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    assert runs_root(full_mode=True).path == drive / "MyDrive" / "shiftvit" / "runs"


def _run_folder(root: Path, name: str, preset_name: str, finished: bool) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "run_spec.json").write_text(json.dumps({"config": {"name": preset_name}}))
    if finished:
        (folder / "run.json").write_text(json.dumps({"config": {"name": preset_name}}))
    return folder


def test_lesson06_uses_the_shipped_model_without_a_learners_run(tmp_path):
    # A quick-mode run is a smoke test, not a model to study, and other lessons' runs do not count.
    quick = _run_folder(tmp_path, "05_training_quick", "quick", finished=True)
    (quick / "best.keras").write_bytes(b"not read")
    other = _run_folder(tmp_path, "07_attention_vs_shift_full", "seed", finished=True)
    (other / "best.keras").write_bytes(b"not read")
    _run_folder(tmp_path, "05_training_seed", "seed", finished=False)  # no epoch finished: no best.keras
    assert learners_best_model([tmp_path, tmp_path / "missing"]) is None


def test_lesson06_uses_the_learners_best_model_when_there_is_one(tmp_path):
    # An interrupted run counts (its best epoch so far); the newest best.keras wins.
    older = _run_folder(tmp_path / "local", "05_training_cpu", "cpu", finished=True)
    (older / "best.keras").write_bytes(b"older")
    os.utime(older / "best.keras", (1_000_000, 1_000_000))
    folder = _run_folder(tmp_path / "drive", "05_training_seed", "seed", finished=False)
    model = build_shiftvit(preset("quick"), seed=3)
    save_model(model, folder / "best.keras")
    best = learners_best_model([tmp_path / "local", tmp_path / "drive"])
    assert best == folder / "best.keras"
    loaded = load_model(best)
    images = np.random.default_rng(0).integers(0, 256, (4, 32, 32, 3)).astype("uint8")
    assert np.array_equal(loaded.predict(images, verbose=0), model.predict(images, verbose=0))


def test_run_estimate_arithmetic():
    estimate = RunEstimate(step_seconds=0.25, steps_per_epoch=156, epochs=100, startup_seconds=60)
    assert estimate.epoch_seconds == pytest.approx(39.0)
    assert estimate.run_seconds == pytest.approx(3960.0)
    text = estimate.describe(early_stop_epochs=(46, 68))
    assert "39 s per epoch" in text and "100 epochs + 60 s of start-up (compilation) = 66.0 min" in text
    assert "30.9 min to 45.2 min" in text  # 46 x 39 s + 60 s and 68 x 39 s + 60 s
    assert [format_duration(s) for s in (0.35, 42, 450, 11520)] == ["0.3 s", "42 s", "7.5 min", "3.2 h"]
    with pytest.raises(ValueError, match="positive step time"):
        RunEstimate(0.0, 156, 100)


def test_timing_table_reports_speed_ups_over_float32_without_xla():
    rows = [runtime.StepTiming("float32", False, 64, 0.2), runtime.StepTiming("float32", True, 64, 0.1),
            runtime.StepTiming("mixed_float16", False, 64, 0.4), runtime.StepTiming("mixed_float16", True, 64, 0.05)]
    table = format_timings(rows).splitlines()
    assert table[1].split() == ["float32", "off", "64", "200.0", "320", "1.00x"]
    assert table[2].split()[-2:] == ["640", "2.00x"]
    assert table[3].split()[-1] == "0.50x" and table[4].split()[-1] == "4.00x"


@pytest.mark.slow
@pytest.mark.colab
def test_a_training_step_is_timed_on_this_device():
    (timing,) = runtime.time_training_steps(preset("quick", batch_size=8), xla=(False,), steps=2, warmup=1)
    assert timing.precision == "float32" and timing.xla is False and timing.batch_size == 8
    assert 0 < timing.step_seconds < 30 and timing.startup_seconds > 0
    assert timing.images_per_second == pytest.approx(8 / timing.step_seconds)
    with pytest.raises(ValueError, match="warm-up"):
        runtime.time_training_steps(preset("quick"), warmup=0)


def _tiny_splits():
    from shiftvit_lib.data import DataSplits

    rng = np.random.default_rng(0)

    def part(n):
        return rng.integers(0, 256, (n, 32, 32, 3)).astype("uint8"), np.arange(n) % 10

    (xt, yt), (xv, yv), (xs, ys) = part(64), part(32), part(32)
    return DataSplits(xt, yt, xv, yv, xs, ys, tuple(f"c{i}" for i in range(10)), source="random test images")


@pytest.mark.slow
@pytest.mark.colab
def test_rerunning_the_training_cell_reads_a_finished_run_back(tmp_path, capsys):
    from shiftvit_lib.tools.run_folder import RunFolderError

    data, config, out = _tiny_splits(), preset("quick", batch_size=32), tmp_path / "05_training_quick"
    first = runtime.train_or_reuse(config, data, out, epochs=1, verbose=0, jit_compile=False)
    stamp = (out / "run.json").stat().st_mtime_ns
    again = runtime.train_or_reuse(config, data, out, epochs=1, verbose=0, jit_compile=False)
    assert "read back, not trained again" in capsys.readouterr().out
    assert (out / "run.json").stat().st_mtime_ns == stamp  # nothing rewritten, nothing deleted
    assert again.record == first.record and again.history == first.history
    assert again.model.count_params() == first.model.count_params()
    # Other settings: sv.train's refusal, which names the finished run, and the folder is kept.
    with pytest.raises(RunFolderError, match="already holds a finished run"):
        runtime.train_or_reuse(config, data, out, epochs=2, verbose=0, jit_compile=False)
    assert (out / "best.keras").exists() and (out / "run.json").stat().st_mtime_ns == stamp


@pytest.mark.slow  # trains twice (~15 s): the full suite and the Colab run keep it
@pytest.mark.colab
def test_restart_trains_a_quick_run_afresh_over_a_finished_one(tmp_path, capsys):
    # Quick mode's scratch run: a second run of the lesson (another Keras version, say) must
    # not read the first run's model back, and must leave one clean run in the folder.
    data, config, out = _tiny_splits(), preset("quick", batch_size=32), tmp_path / "05_training_quick"
    runtime.train_or_reuse(config, data, out, epochs=1, verbose=0, jit_compile=False)
    (out / "best.keras").write_bytes(b"saved by some other Keras")  # unreadable if loaded
    run = runtime.train_or_reuse(config, data, out, epochs=1, verbose=0, jit_compile=False, restart=True)
    assert "read back" not in capsys.readouterr().out
    assert run.record["epochs_run"] == 1 and len(run.history["loss"]) == 1
    assert (out / "best.keras").read_bytes()[:2] == b"PK"  # a fresh .keras (zip) file


def test_a_colab_tpu_runtime_gets_the_jax_backend():
    from shiftvit_lib._startup import choose_backend_for_colab_tpu

    colab = {"google.colab": object()}
    tpu_vm = {"/dev/accel0"}.__contains__
    environ = {}
    note = choose_backend_for_colab_tpu(environ, colab, tpu_vm)
    assert environ["KERAS_BACKEND"] == "jax" and "JAX" in note and "\n" not in note
    assert choose_backend_for_colab_tpu({"COLAB_TPU_ADDR": "10.0.0.2:8470"}, colab, lambda path: False)
    # A backend the learner chose wins; a GPU or CPU runtime, or a TPU machine off Colab, is left alone.
    chosen = {"KERAS_BACKEND": "tensorflow"}
    assert choose_backend_for_colab_tpu(chosen, colab, tpu_vm) is None and chosen["KERAS_BACKEND"] == "tensorflow"
    for environ, modules, exists in [({}, colab, lambda path: False), ({}, {}, tpu_vm)]:
        assert choose_backend_for_colab_tpu(environ, modules, exists) is None and "KERAS_BACKEND" not in environ


@pytest.mark.slow  # trains twice (~15 s): the full suite and the Colab run keep it
@pytest.mark.colab
def test_after_a_disconnect_the_training_cell_resumes_from_the_last_finished_epoch(tmp_path):
    import keras

    class Disconnect(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                raise KeyboardInterrupt("the runtime disconnected")

    data, config, out = _tiny_splits(), preset("quick", batch_size=32), tmp_path / "05_training_quick"
    with pytest.raises(KeyboardInterrupt):
        runtime.train_or_reuse(config, data, out, epochs=3, verbose=0, jit_compile=False,
                               extra_callbacks=[Disconnect()])
    assert not (out / "run.json").exists() and (out / "backup").exists()
    run = runtime.train_or_reuse(config, data, out, epochs=3, verbose=0, jit_compile=False)
    assert run.record["resumed_from_epoch"] == 2 and run.history["epoch"] == [0, 1, 2]
