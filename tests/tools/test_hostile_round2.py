"""Issue 35: the second adversarial round, one test per numbered case (the issue's numbers).

Also elsewhere: file safety itself, the website's output folders (case 1), catalogues
written on a full disk (case 5), partial files with huge pids and cut-short notebooks
(case 7), escaped names (case 8) in ``test_files.py``; the crash test and torn backups
(case 3) in ``test_crash_resume.py``; 16-bit PNGs without wide copies (case 6) and the shift's
arguments (case 7) in ``tests/core/test_hostile_core.py``; impossible config values (case 9)
in ``tests/core/test_config.py``; lesson helpers given the wrong things (case 9) in
``tests/lessons/test_checks_hostile.py``.
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import threading
import tracemalloc
import zipfile

import keras
import numpy as np
import pytest
from fakes import tiny_splits

from shiftvit_lib.__main__ import main
from shiftvit_lib._startup import backend_problem
from shiftvit_lib.config import preset
from shiftvit_lib.tools import data_sources, inference
from shiftvit_lib.tools.files import run_folder_lock
from shiftvit_lib.tools.runs import train

FAST = dict(verbose=0, jit_compile=False)


def one_line(text: str) -> str:
    assert "\n" not in text.strip(), f"not one line: {text!r}"
    return text


def tiny_classifier() -> keras.Model:
    inputs = keras.Input((32, 32, 3))
    pooled = keras.layers.GlobalAveragePooling2D()(keras.layers.Rescaling(1 / 255)(inputs))
    return keras.Model(inputs, keras.layers.Dense(10)(pooled))


# --------------------------------------------------------------------------- case 2: the lock
def test_a_lock_that_is_a_link_never_overwrites_its_target(tmp_path):
    precious = tmp_path / "thesis.tex"
    precious.write_text("work")
    run = tmp_path / "run"
    run.mkdir()
    (run / ".lock").symlink_to(precious)
    with pytest.raises(ValueError, match="symbolic link") as refused, run_folder_lock(run):
        pass
    assert ".lock" in one_line(str(refused.value))
    assert precious.read_text() == "work"


def test_a_lock_that_is_a_fifo_is_named_by_the_command_line(tmp_path, capsys, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / ".lock")
    (run / "run_spec.json").write_text("{}")  # not needed: the lock is taken before the folder is read
    with pytest.raises(ValueError, match="named pipe") as refused, run_folder_lock(run):
        pass
    message = one_line(str(refused.value))
    assert str(run / ".lock") in message and "Invalid argument" not in message


# --------------------------------------------------------------------------- case 4: --data a FIFO
@pytest.mark.parametrize("name", ["x.tar.gz", "x.zip", "x.tar"])
def test_data_naming_a_fifo_is_refused_without_opening_it(tmp_path, name, capsys):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    outcome: dict[str, BaseException] = {}

    def load() -> None:
        try:
            data_sources.load_cifar10(str(fifo))
        except BaseException as error:  # noqa: BLE001 - reported below
            outcome["error"] = error

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(timeout=30)
    if reader.is_alive():  # opening the pipe blocks until a writer comes: let it end
        with open(fifo, "wb"):
            pass
        pytest.fail(f"load_cifar10 hung on a named pipe called {name}")
    assert isinstance(outcome.get("error"), ValueError), outcome
    assert "named pipe" in one_line(str(outcome["error"])) and name in str(outcome["error"])
    code = main(["train", "--data", str(fifo), "--out", str(tmp_path / "run"), "--limit", "2"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "named pipe" in one_line(err) and name in err


# --------------------------------------------------------------------------- case 6: archive headers
def test_a_tar_long_name_header_is_capped_before_it_is_read(tmp_path):
    # A GNU long-name header claiming 32 MiB (zeros: a tiny .tar.gz); tarfile read it whole.
    claimed = 32 * 2**20
    header = tarfile.TarInfo("././@LongLink")
    header.type, header.size = tarfile.GNUTYPE_LONGNAME, claimed
    raw = io.BytesIO()
    raw.write(header.tobuf(format=tarfile.GNU_FORMAT))
    raw.write(b"train/cat/" + b"a" * (claimed - 10))
    raw.write(b"\0" * (-claimed % 512) + b"\0" * 1024)
    archive = tmp_path / "bomb.tar.gz"
    archive.write_bytes(gzip.compress(raw.getvalue(), compresslevel=1))
    assert archive.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="header claims") as refused:
            data_sources.load_cifar10(str(archive), limit=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "bomb.tar.gz" in one_line(str(refused.value))
    assert peak < 8 * 2**20, f"{peak / 2**20:.0f} MiB held while reading the headers"


# --------------------------------------------------------------------------- case 7: one line each
def test_a_keras_file_with_a_deeply_nested_config_is_one_line(tmp_path):
    path = tmp_path / "deep.keras"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("config.json", "[" * 200_000 + "]" * 200_000)
        archive.writestr("metadata.json", '{"keras_version": "3.0.0"}')
        archive.writestr("model.weights.h5", b"")
    with pytest.raises(ValueError) as refused:
        inference.load_model(path)
    assert str(path) in one_line(str(refused.value))


def test_a_cache_folder_that_is_a_file_is_one_line(tmp_path, monkeypatch):
    (tmp_path / "cache").write_text("not a folder")
    monkeypatch.setenv("SHIFTVIT_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ValueError, match="point SHIFTVIT_CACHE at a folder") as refused:
        data_sources.array_cache_dir()
    assert str(tmp_path / "cache") in one_line(str(refused.value))


def test_a_keras_json_with_a_list_as_backend_is_one_line(tmp_path):
    (tmp_path / "keras.json").write_text('{"backend": ["jax"]}')
    problem = backend_problem({"KERAS_HOME": str(tmp_path)})
    assert problem and "keras.json" in one_line(problem) and "KERAS_BACKEND" in problem


def test_a_keras_json_that_is_a_fifo_is_not_read(tmp_path):
    os.mkfifo(tmp_path / "keras.json")
    answers: list[object] = []
    reader = threading.Thread(target=lambda: answers.append(backend_problem({"KERAS_HOME": str(tmp_path)})),
                              daemon=True)
    reader.start()
    reader.join(timeout=30)
    if reader.is_alive():
        with open(tmp_path / "keras.json", "wb"):
            pass
        pytest.fail("reading a keras.json that is a named pipe hung")
    assert answers  # Keras' default backend (no settings read)


def test_a_batch_size_past_any_memory_is_refused_in_one_line(tmp_path, capsys):
    code = main(["evaluate", "--model", str(tmp_path / "m.keras"), "--batch-size", str(10**23)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "--batch-size" in one_line(err) and "from 1 to 1,048,576" in err


def test_a_weight_mismatch_does_not_dump_the_weights(tmp_path):
    keras_message = "Layer 'dense' expected 2 variables, but received 0: " + repr(np.arange(5000.0))
    error = inference.ModelLoadError(tmp_path / "m.keras", "Is it a complete .keras file?",
                                     ValueError(keras_message))
    assert len(one_line(str(error))) < 600 and "m.keras" in str(error)


def test_predict_probabilities_refuses_a_negative_batch_size():
    images = np.zeros((2, 32, 32, 3), np.uint8)
    with pytest.raises(ValueError, match="batch_size") as refused:
        inference.predict_probabilities(tiny_classifier(), images, batch_size=-1)
    one_line(str(refused.value))


# --------------------------------------------------------------------------- case 8: forged rows
def test_printed_file_names_cannot_forge_rows_or_reach_the_terminal(tmp_path):
    forged = "cat.png\n  evil.png  airplane 100.0%"
    escape = "\x1b]0;owned\x07\x1b[2Jdog.png"
    scores = (inference.ClassScore("cat", 3, 0.9),)
    result = inference.FolderPredictions(
        tmp_path, (inference.FilePrediction(tmp_path / forged, scores),
                   inference.FilePrediction(tmp_path / escape, scores)),
        (inference.ImageReadError(tmp_path / "x\ny.png", "not an image"),))
    table = result.format()
    assert len(table.splitlines()) == 1 + 2 + 1 + 1  # title, two rows, the failures' title, one failure
    assert "\x1b" not in table and "\x07" not in table
    assert "cat.png\\n  evil.png" in table and "x\\ny.png" in table


# --------------------------------------------------------------------------- case 9: pixels
def test_16_bit_pixels_and_grey_batches_are_refused_with_a_hint():
    model = tiny_classifier()
    wide = np.full((2, 32, 32, 3), 65_535, np.uint16)
    with pytest.raises(ValueError, match="divide by 257") as refused:
        inference.predict_probabilities(model, wide)
    one_line(str(refused.value))
    grey = np.zeros((4, 32, 32), np.uint8)
    with pytest.raises(ValueError, match="grey") as refused:
        inference.predict_probabilities(model, grey)
    assert "np.repeat" in one_line(str(refused.value))
    assert inference.predict_probabilities(model, np.full((1, 32, 32, 3), 255, np.uint16)).shape == (1, 10)


# --------------------------------------------------------------------------- case 3 (in process)
@pytest.mark.slow
def test_a_damaged_best_model_after_training_falls_back_to_the_backup(tmp_path, capsys):
    # The run trained to its end but died before its record; then best.keras was damaged.
    # Resuming names it and evaluates the last backed-up state instead of refusing.
    config, data = preset("quick", batch_size=32, early_stopping_patience=None), tiny_splits()

    class DieBeforeTheRecord(keras.callbacks.Callback):
        def on_train_end(self, logs=None):
            raise ConnectionError("simulated disconnect after the last epoch")

    with pytest.raises(ConnectionError):
        train(config, data, tmp_path, epochs=2, extra_callbacks=[DieBeforeTheRecord()], **FAST)
    assert (tmp_path / "backup").is_dir()
    best = tmp_path / "best.keras"
    best.write_bytes(best.read_bytes()[: best.stat().st_size // 2])
    run = train(config, data, tmp_path, epochs=2, **FAST)
    err = capsys.readouterr().err
    assert f"warning: {best} is damaged" in err
    assert (tmp_path / "best.keras.damaged").exists()  # kept, never deleted
    assert run.record["epochs_run"] == 2 and run.record["resumed_from_epoch"] == 2
    assert "best.keras" in run.record["recovered"][0]
