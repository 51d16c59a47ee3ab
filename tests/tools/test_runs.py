"""The resumable run (tools/runs.py): the logged loss is the real cross-entropy; runs resume, also after
a crash at any write; bad runs are refused before the folder is touched; the speed meter; strategies."""

import inspect
import json
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import keras
import numpy as np
import pytest
from fakes import one_line, run_on_backend, tiny_splits, write_tree
from reference import warmup_cosine

from shiftvit_lib import preset
from shiftvit_lib.recipe import logits_metrics
from shiftvit_lib.tools import run_folder as rf
from shiftvit_lib.tools import runs
from shiftvit_lib.tools.data_sources import load_cifar10
from shiftvit_lib.tools.runs import train

REPO = Path(__file__).resolve().parents[2]
FAST = dict(verbose=0, jit_compile=False)


def quick(**changes):
    return preset("quick", **{"batch_size": 32, "early_stopping_patience": None, **changes})


def interrupted(folder, data, config, epochs=3, after=1, error=ConnectionError, **options):
    """Train until ``error`` comes at the end of epoch ``after`` (1-based), after the run's own callbacks,
    like a lost session."""
    def disconnect(epoch, logs):
        if epoch + 1 == after:
            raise error("simulated disconnect")

    with pytest.raises(error):
        train(config, data, folder, epochs=epochs, **FAST, **options,
              extra_callbacks=[keras.callbacks.LambdaCallback(on_epoch_end=disconnect)])


@pytest.mark.slow
def test_logged_training_loss_is_the_real_cross_entropy_and_load_run_reads_the_run_back(tmp_path):
    # With a learning rate of 1e-30 (zero is refused) the weights do not change; without dropout,
    # drop path or augmentation the forward pass is deterministic: the loss Keras logs
    # for the epoch must equal the cross-entropy computed separately from the logits.
    # (The keras-io train_step logged the mean of the logits here.)
    data = tiny_splits()
    config = quick(lr_start=1e-30, lr_max=1e-30, augment=False, mlp_dropout=0.0, drop_path_rate=0.0)
    run = train(config, data, tmp_path, epochs=1, **FAST)
    expected = logits_metrics(run.model.predict(data.x_train, verbose=0), data.y_train)
    assert run.history["loss"][0] == pytest.approx(expected["loss"], rel=1e-4)
    assert run.history["accuracy"][0] == pytest.approx(expected["accuracy"], abs=1e-6)
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["test"]["loss"] == pytest.approx(logits_metrics(run.model.predict(data.x_test, verbose=0), data.y_test)["loss"], rel=1e-5)
    assert record["data_source"] == "random test images" and record["epochs_run"] == 1
    # load_run reads the run back; describe_run summarises it.
    assert rf.load_run(tmp_path) == (record, rf.read_history_csv(tmp_path / "history.csv"))
    assert record["train_seconds"] == pytest.approx(sum(rf.load_run(tmp_path)[1]["epoch_seconds"]), abs=0.01)
    text = rf.describe_run(record)
    assert "random test images" in text and f"test top-1 {run.record['test']['accuracy']:.2%}" in text
    assert "epochs run 1 of 1" in text and "test-time augmentation" not in text
    # The record names the backend's own version beside Keras', and the summary shows it.
    versions = record["machine"]["backend_versions"]
    assert versions and all(f"{name} {version}" in text for name, version in versions.items())
    tta_text = rf.describe_run({**record, "test_flip_tta": {"accuracy": 0.4321}})
    assert "test top-1 43.21%" in tta_text.split("with flip test-time augmentation:")[1]
    assert f"test top-1 {run.record['test']['accuracy']:.2%}" in tta_text  # beside, not instead
    with pytest.raises(FileNotFoundError, match=r"run.json is missing"):
        rf.load_run(tmp_path / "nothing_here")


@pytest.mark.slow
@pytest.mark.colab  # ran in the Colab environment before it was marked slow
def test_quick_preset_learns_on_the_sample(tmp_path):
    # Real CIFAR-10 images: a few epochs of the quick recipe must beat chance (10 %) clearly.
    data = load_cifar10("sample")
    run = train(preset("quick"), data, tmp_path, epochs=3, verbose=0)
    assert run.record["test"]["accuracy"] > 0.2
    assert (tmp_path / "best.keras").exists() and (tmp_path / "history.csv").exists()
    assert run.record["train_images_per_second"] > 0


@pytest.mark.slow
def test_keras_data_parallel_over_two_virtual_cpus_on_jax(tmp_path, monkeypatch):
    # XLA splits the host CPU into two devices, so Keras' DataParallel, set as a lesson sets it
    # (the library has no code for it), shards each batch of train() over two replicas.
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
    stdout = run_on_backend("jax", f"""
        import jax, keras
        assert [d.platform for d in jax.devices()] == ["cpu", "cpu"], jax.devices()
        from fakes import tiny_splits
        from shiftvit_lib import preset
        from shiftvit_lib.tools.runs import train

        seen = []

        class RecordDistribution(keras.callbacks.Callback):
            def on_train_begin(self, logs=None):
                distribution = keras.distribution.distribution()
                seen.append((type(distribution).__name__, distribution.device_mesh.shape))

        keras.distribution.set_distribution(keras.distribution.DataParallel())
        run = train(preset("quick", batch_size=32), tiny_splits(), {str(tmp_path / "data_parallel")!r}, epochs=2,
                    extra_callbacks=[RecordDistribution()], verbose=0)
        print("DISTRIBUTED", seen[0][0], tuple(seen[0][1]))
        print("EPOCHS", run.record["epochs_run"])
        print("LOSS", max(run.history["loss"]))
        """)
    # During fit a two-device DataParallel is in force.
    assert "DISTRIBUTED DataParallel (2,)" in stdout and "EPOCHS 2" in stdout, stdout
    assert np.isfinite(float(stdout.split("LOSS")[1].split()[0]))


# --------------------------------------------------------------------------- run folders
@pytest.mark.slow
@pytest.mark.colab  # ran in the Colab environment before it was marked slow
def test_a_finished_folder_is_refused_reused_or_overwritten_and_never_trained_twice(tmp_path):
    # Lesson 05's training cell (reuse=True): re-running it never trains a finished run twice.
    data, out = tiny_splits(), tmp_path / "05_training_quick"
    first = train(quick(), data, out, epochs=1, reuse=True, **FAST)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    stamp = (out / "run.json").stat().st_mtime_ns
    again = train(quick(), data, out, epochs=1, reuse=True, **FAST)
    assert again.reused and not first.reused
    assert again.record == first.record and again.history == first.history
    assert again.model.count_params() == first.model.count_params()
    with pytest.raises(rf.RunFolderError, match="already holds a finished run"):  # reuse with other settings
        train(quick(), data, out, epochs=2, reuse=True, **FAST)
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before  # untouched
    assert (out / "run.json").stat().st_mtime_ns == stamp  # nothing rewritten, nothing deleted

    # Overwrite: another Keras' best.keras (unreadable if loaded) is never read back; notes are kept.
    (out / "notes.txt").write_text("mine")  # not a run file: overwrite keeps it
    (out / "best.keras").write_bytes(b"saved by some other Keras")
    second = train(quick(batch_size=16), data, out, epochs=1, overwrite=True, **FAST)
    record = json.loads((out / "run.json").read_text())
    assert not second.reused and record["config"]["batch_size"] == 16 and record["epochs_run"] == 1
    assert rf.read_history_csv(out / "history.csv")["epoch"] == [0] and len(second.history["loss"]) == 1
    assert json.loads((out / "run_spec.json").read_text())["config"]["batch_size"] == 16
    assert (out / "notes.txt").read_text() == "mine" and (out / "best.keras").read_bytes()[:2] == b"PK"
    assert first.record["finished_at"] and second.record["resumed_from_epoch"] == 0


@pytest.mark.parametrize(("changes", "difference"), [
    (dict(epochs=5), "epochs (3 -> 5)"), (dict(config=quick(batch_size=16)), "config.batch_size (32 -> 16)"),
    (dict(seed=7), "seed (42 -> 7)"), (dict(data=tiny_splits(seed=1)), "data (other images or labels)"),
])
def test_an_interrupted_run_with_other_settings_is_refused_naming_them_and_left_untouched(tmp_path, changes,
                                                                                            difference):
    data, config = tiny_splits(), quick()
    (tmp_path / "run_spec.json").write_text(json.dumps(rf.run_spec(config, data, epochs=3, seed=42)))
    (tmp_path / "history.csv").write_text("epoch,loss\n0,2.3\n")
    saved = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(rf.RunFolderError) as refused:
        train(**{"config": config, "data": data, "out_dir": tmp_path, "epochs": 3, **changes}, **FAST)
    assert "interrupted run with other settings" in one_line(refused.value) and difference in str(refused.value)
    assert {name: (tmp_path / name).read_bytes() for name in saved} == saved


@pytest.mark.slow
@pytest.mark.colab  # ran in the Colab environment before it was marked slow
def test_an_interrupted_run_resumes_where_it_stopped(tmp_path):
    # Lesson 05's training cell (reuse=True) after a disconnect (Colab: a KeyboardInterrupt).
    data, config = tiny_splits(), quick()
    interrupted(tmp_path, data, config, epochs=3, after=1, error=KeyboardInterrupt, reuse=True)
    assert not (tmp_path / "run.json").exists() and (tmp_path / "backup").exists()
    # The same settings resume at epoch 1, and the schedule continues where it stopped: the restored
    # optimizer's step and learning rate when the first epoch of this session begins.
    seen = []
    probe = keras.callbacks.LambdaCallback(on_epoch_begin=lambda epoch, logs: seen.append(
        (epoch, int(probe.model.optimizer.iterations.numpy()), float(probe.model.optimizer.learning_rate))))
    run = train(config, data, tmp_path, epochs=3, extra_callbacks=[probe], reuse=True, **FAST)
    steps = len(data.y_train) // config.batch_size
    total = steps * 3
    expected_lr = warmup_cosine(steps, config.lr_start, config.lr_max, int(total * config.warmup_fraction), total)
    assert seen[0] == (1, steps, pytest.approx(expected_lr, rel=1e-5))
    assert run.record["resumed_from_epoch"] == 1 and run.history["epoch"] == [0, 1, 2]


@pytest.mark.slow
@pytest.mark.colab  # ran in the Colab environment before it was marked slow
@pytest.mark.parametrize("lost", ["run.json", "best.keras"])
def test_a_run_that_died_after_its_last_epoch_finishes_without_training_again(tmp_path, capsys, lost):
    # It died before its record (run.json lost), or after its last epoch's backup, before marking its
    # fit finished, and then its best.keras was damaged: the resume names that file and evaluates
    # the last backed-up state.
    config, data = quick(), tiny_splits()
    if lost == "run.json":
        train(config, data, tmp_path, epochs=2, **FAST)
        (tmp_path / "run.json").unlink()
    else:
        interrupted(tmp_path, data, config, epochs=2, after=2)
        best = tmp_path / "best.keras"
        best.write_bytes(best.read_bytes()[: best.stat().st_size // 2])
    must_not_train = keras.callbacks.LambdaCallback(on_epoch_begin=lambda *_: pytest.fail("it had finished"))
    run = train(config, data, tmp_path, epochs=2, extra_callbacks=[must_not_train], **FAST)
    assert run.history["epoch"] == [0, 1] and (run.record["epochs_run"], run.record["resumed_from_epoch"]) == (2, 2)
    if lost == "best.keras":
        assert f"warning: {tmp_path / 'best.keras'} is damaged" in capsys.readouterr().err
        assert (tmp_path / "best.keras.damaged").exists() and "best.keras" in run.record["recovered"][0]


# --------------------------------------------------------------------------- runs of the stronger recipe
@pytest.mark.slow
@pytest.mark.colab  # ran in the Colab environment before it was marked slow
def test_a_mixed_label_run_trains_with_soft_targets_and_reports_hard_label_metrics(tmp_path):
    config = preset("quick", batch_size=16, mixup_alpha=0.8, cutmix_alpha=1.0, rand_augment_ops=1,
                    random_erasing=0.25, label_smoothing=0.1, init="spach")
    data = tiny_splits(n_train=40, n_val=16, n_test=16)
    run = train(config, data, tmp_path, epochs=2, verbose=0)
    assert run.model.loss.__class__.__name__ == "CategoricalCrossentropy"
    assert all(np.isfinite(run.history["loss"])) and len(run.history["val_accuracy"]) == 2
    # The test metrics come from integer labels, computed apart from Keras.
    expected = logits_metrics(run.model.predict(data.x_test, verbose=0), data.y_test)
    assert run.record["test"]["accuracy"] == pytest.approx(expected["accuracy"])
    assert run.record["config"]["mixup_alpha"] == 0.8


# ---- no crash leaves a run unrecoverable. The test kills training runs (kill -9) at each kind of
# write (each file name a run renames into place, epoch numbers aside): before the rename, right
# after it, or after a torn file was renamed into place. Every resume must finish the run or name
# the damaged file, recover from the last readable epoch and hold each epoch once in the history.
# The processes form a chain (each one resumes the run the previous one left killed, then starts
# the next and is killed in it): each imports TensorFlow, about 15 s on 2 cores.
# Among the kills: a run killed mid-run resumes from its saved epoch, not from zero, and a finished
# run cleans its backup; a history row written before its backup is replaced, not repeated; a torn
# backup is named, kept as .damaged, and the run resumes from the state before it.


EPOCHS = 3


def train_arguments(epochs: int) -> list[str]:
    return ["train", "--preset", "quick", "--data", "sample", "--limit", "6", "--batch-size", "8",
            "--epochs", str(epochs), "--no-jit", "--verbose", "0", "--seed", "3"]


# Where each process of the chain dies: (kind of file renamed, which of its renames, how). The first
# epoch's writes and the final ones reach a fresh run, mid-run states and a finished run.
CRASH_EPOCHS = 2
KILLS = [("run_spec.json", 1, "before"), ("history.csv", 1, "after"), ("best.keras", 1, "torn"),
         ("epoch-N.weights.h5", 1, "torn"), ("training_metadata.json", 1, "after"),
         ("run_spec.json", 2, "before"), ("run.json", 1, "after")]


# One process of a chain: resume argv[1] (if given), then start a run in argv[2] and die at the
# argv[4]-th rename of a file of kind argv[3] (how: argv[5]), or where the test sends it Ctrl-C;
# every rename's kind is printed as it happens.
STEP = textwrap.dedent(
    """
    import os, re, signal, sys, time
    from shiftvit_lib.__main__ import main

    # A shell's background job starts with Ctrl-C ignored, and Python keeps that: as at a terminal, it raises.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    resume, out, kill_kind, kill_at, how = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    arguments = {arguments!r}
    import shiftvit_lib.tools.runs  # loaded before the run, as after a resume: every run as long as the uncut one
    if resume != "-":
        print(f"=== RESUMED {{main([*arguments, '--out', resume])}}", file=sys.stderr, flush=True)
    real_replace, seen = os.replace, {{}}

    def replace(source, target, *args, **kwargs):
        kind = re.sub(r"-[0-9]+[.]", "-N.", os.path.basename(target))  # epoch-0001.weights.h5: one kind
        seen[kind] = seen.get(kind, 0) + 1
        print(f"RENAME {{kind}}", flush=True)
        if (kind, seen[kind]) == (kill_kind, kill_at):
            if how == "torn" and str(target).endswith((".keras", ".weights.h5")):
                with open(source, "r+b") as handle:  # half the file reaches its place
                    handle.truncate(os.path.getsize(source) // 2)
                real_replace(source, target, *args, **kwargs)
            elif how == "after":
                real_replace(source, target, *args, **kwargs)
            os.kill(os.getpid(), signal.SIGKILL)
        return real_replace(source, target, *args, **kwargs)

    os.replace = replace
    if out != "-":
        print("=== START", file=sys.stderr, flush=True)
        started = time.perf_counter()
        sys.argv = ["shiftvit", *arguments, "--out", out]
        code = main()  # as the program runs it: a Ctrl-C after the run ended is ignored
        print(f"=== DONE {{code}} after {{time.perf_counter() - started:.2f}} s", file=sys.stderr, flush=True)
    """
)


def step(script: Path, resume: Path | None, out: Path | None, kill: tuple = ("-", 0, "before"),
         delay: float | None = None) -> tuple[int, str, str]:
    """Run a step; ``delay`` seconds after it starts its run, send SIGINT (None: never)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
    process = subprocess.Popen([sys.executable, str(script), str(resume or "-"), str(out or "-"), *map(str, kill)],
                               env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    lines = []
    for line in process.stderr:  # until the run starts (the resume before it is never interrupted)
        lines.append(line)
        if line.startswith("=== START"):
            if delay is not None:
                time.sleep(delay)
                process.send_signal(signal.SIGINT)
            break
    stdout, stderr = process.communicate(timeout=900)
    return process.returncode, "".join(lines) + stderr, stdout


def expected_resume(folder: Path) -> tuple[int | None, list[str]]:
    """Where a resume of ``folder`` must start (the last readable state; None: a fresh or a
    finished run) and the files it must name as damaged, judged here independently."""
    if (folder / rf.RUN_RECORD).exists() or not (folder / rf.RUN_SPEC).exists():
        return None, []
    spec = json.loads((folder / rf.RUN_SPEC).read_text())
    best = folder / rf.BEST_MODEL
    damaged = [rf.BEST_MODEL] if best.exists() and rf.file_problem(best) else []
    if spec.get("fit_finished_at") and best.exists() and not damaged:
        return len(rf.read_history_csv(folder / rf.HISTORY_CSV).get("epoch", [])), damaged
    saved = sorted((int(m.group(1)), path) for path in (folder / rf.BACKUP_DIR).glob("epoch-*.weights.h5")
                   if (m := re.fullmatch(r"epoch-(\d+)\.weights\.h5", path.name)))
    for epoch, path in reversed(saved):  # the newest readable backup
        if rf.file_problem(path) is None:
            return epoch, damaged
        damaged.append(path.name)
    return 0, damaged


def check_resumed(folder: Path, expected_epoch: int | None, damaged: list[str], stderr: str, epochs: int) -> None:
    if "already holds a finished run" in stderr:  # killed after run.json landed: the run was done
        assert "=== RESUMED 2" in stderr and expected_epoch is None, stderr[-3000:]
        assert json.loads((folder / rf.RUN_RECORD).read_text())["epochs_run"] == epochs
        return
    assert "=== RESUMED 0" in stderr, stderr[-3000:]
    record = json.loads((folder / rf.RUN_RECORD).read_text())
    history = rf.read_history_csv(folder / rf.HISTORY_CSV)
    assert history["epoch"] == list(range(epochs)), history  # every epoch once, in order
    assert record["epochs_run"] == epochs
    if expected_epoch is not None:
        assert record["resumed_from_epoch"] == expected_epoch, (record["resumed_from_epoch"], expected_epoch)
    for name in damaged:  # named, by path, on one line, and in the record
        assert re.search(rf"warning: \S*{re.escape(name)} is damaged", stderr), stderr[-3000:]
        assert any(name in line for line in record.get("recovered", [])), record.get("recovered")
    kept = sorted(p.name for p in (folder / rf.BACKUP_DIR).iterdir()) if (folder / rf.BACKUP_DIR).exists() else []
    assert kept == sorted(f"{name}.damaged" for name in damaged if name.startswith("epoch-")), kept  # only those
    assert not [p.name for p in folder.iterdir() if ".partial" in p.name]  # killed writes cleaned up


@pytest.mark.slow
def test_runs_killed_at_each_of_their_writes_all_resume(tmp_path):
    script = tmp_path / "step.py"
    script.write_text(STEP.format(arguments=train_arguments(CRASH_EPOCHS)))
    previous, summary, written = None, [], []
    for trial, kill in enumerate([*KILLS, None]):
        out = tmp_path / f"trial{trial:02d}" if kill else None
        expected, damaged = expected_resume(previous) if previous else (None, [])
        code, err, printed = step(script, previous, out, *([kill] if kill else []))
        if previous is not None:
            check_resumed(previous, expected, damaged, err, CRASH_EPOCHS)
            summary.append((KILLS[trial - 1], expected, damaged))
        if kill:
            assert code == -9, err[-3000:]  # killed at its planned write
            written = re.findall(r"RENAME (\S+)", printed)
            assert written[-1] == kill[0] and written.count(kill[0]) == kill[1], (kill, written)
        previous = out
    print("\n".join(f"killed at {kill}: resumed from {expected}, damaged {damaged}"
                    for kill, expected, damaged in summary))
    # The last kill came at the run's last write (its resume found the run finished), so the run
    # wrote no kind of file that was not cut.
    assert set(written) == {kind for kind, _, _ in KILLS}, written
    # The cuts reached a fresh run, mid-run states and a finished training, torn files among them.
    assert {None, 0, 1, CRASH_EPOCHS} <= {expected for _, expected, _ in summary}, summary
    assert any(damaged for *_, damaged in summary), summary


FINISHED_RUN = {"run_spec.json": b'{"format": 1}', "run.json": b'{"test": {}}', "best.keras": b"weights",
                "history.csv": b"epoch,loss\n0,1.0\n"}


@pytest.mark.parametrize(("case", "fragment"), [
    *[(dict(seed=seed), "seed must be a whole number from 0 to 4,294,967,295") for seed in (2**40, -1)],
    (dict(epochs=0), "epochs"),
    (dict(config=quick(batch_size=10**12)), "batch size 1,000,000,000,000 is more than the 96 training images"),
    (dict(data=tiny_splits(n_val=0)), "no validation images (val_fraction=0?)"),
    (dict(config=preset("shiftvit_light_tiny")), "the images are 32x32x3, but preset 'shiftvit_light_tiny' takes 224"),
])
def test_a_run_that_cannot_train_is_refused_before_the_folder_is_touched(tmp_path, case, fragment):
    arguments = {"config": quick(), "data": tiny_splits(), "epochs": 1, **case, **FAST}
    # With overwrite=True, a folder that holds a finished run keeps it: the check comes first.
    finished = write_tree(tmp_path / "finished", FINISHED_RUN)
    with pytest.raises(ValueError) as refused:
        train(out_dir=finished, overwrite=True, **arguments)
    assert fragment in one_line(refused.value)
    assert {p.name: p.read_bytes() for p in finished.iterdir()} == FINISHED_RUN
    # And a new folder is not even created, so the corrected command is not refused later.
    with pytest.raises(ValueError):
        train(out_dir=tmp_path / "new", **arguments)
    assert not (tmp_path / "new").exists()


def test_train_reads_top_to_bottom_and_builds_its_callbacks_by_name(tmp_path):
    assert len(inspect.getsource(runs.train).splitlines()) <= 60
    folder = rf.RunFolder(tmp_path, {})
    stopping = runs.run_callbacks(preset("quick", early_stopping_patience=3), folder, 64)
    assert list(stopping) == ["throughput", "history", "best_model", "backup", "early_stopping"]
    assert "early_stopping" not in runs.run_callbacks(preset("quick"), folder, 64)


# --------------------------------------------------------------------------- Ctrl-C (issue 48)
# Each try starts a Python process that loads TensorFlow and trains (20-40 s on 2 cores): CI runs 3;
# SHIFTVIT_SIGINT_TRIES=20 runs the full count (about 12 minutes).
SIGINT_TRIES = int(os.environ.get("SHIFTVIT_SIGINT_TRIES", "3"))
@pytest.mark.slow
def test_ctrl_c_at_random_moments_stops_with_the_resume_hint_and_every_resume_finishes(tmp_path):
    script = tmp_path / "step.py"
    script.write_text(STEP.format(arguments=train_arguments(EPOCHS)))
    code, err, _ = step(script, None, tmp_path / "uncut")
    assert code == 0, err[-3000:]
    length = float(re.search(r"=== DONE 0 after ([\d.]+) s", err).group(1))
    rng, previous, moments = random.Random(48), None, []
    for trial in range(SIGINT_TRIES + 1):
        out = tmp_path / f"try{trial:02d}" if trial < SIGINT_TRIES else None
        delay = rng.uniform(0, 0.75 * length) if out else None
        code, err, _ = step(script, previous, out, delay=delay)
        assert "Traceback" not in err and "SystemError" not in err, err[-3000:]
        if previous is not None:  # the run interrupted before resumes to the end
            check_resumed(previous, None, [], err, EPOCHS)
        if out is not None and "=== DONE 0" in err:  # the run ended before the signal came: no resume
            assert json.loads((out / rf.RUN_RECORD).read_text())["epochs_run"] == EPOCHS
            out = None
        if out is not None:
            hint = f"stopped (Ctrl-C); run the same command again to resume {out} from its last finished epoch"
            assert "=== DONE 130" in err and hint in err, err[-3000:]
            moments.append(round(delay, 2))
        previous = out
    assert len(moments) >= 2 * SIGINT_TRIES // 3, f"only {len(moments)} of {SIGINT_TRIES} runs were cut"
    print(f"interrupted {len(moments)} runs of {length:.1f} s at {moments} s")
