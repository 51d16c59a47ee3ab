"""The command line: every user error is one line on stderr and exit status 2, found before
anything is written to disk; finished and mismatched run folders are refused."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import keras
import numpy as np
import pytest
from fakes import one_line, png_bytes, tiny_splits
from PIL import Image

from shiftvit_lib.__main__ import in_flags, main
from shiftvit_lib.config import preset
from shiftvit_lib.tools import data_sources, inference
from shiftvit_lib.tools.inference import save_model
from shiftvit_lib.tools.run_folder import run_spec

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_user_error(code: int, err: str, *fragments: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def tiny_classifier(outputs: int = 10) -> keras.Model:
    inputs = keras.Input((32, 32, 3))
    flat = keras.layers.Flatten()(keras.layers.Rescaling(1 / 255)(inputs))
    return keras.Model(inputs, keras.layers.Dense(outputs)(flat))


@pytest.fixture()
def no_data_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    """A check that must happen before the data is loaded fails the test if it is not."""

    def must_not_load(*args: object, **kwargs: object) -> None:
        raise AssertionError("the data was loaded before the arguments were checked")

    monkeypatch.setattr(data_sources, "load_cifar10", must_not_load)


# --------------------------------------------------------------------------- arguments
@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["train", "--batch-size", "0"], "--batch-size: value must be a whole number from 1 to 1,048,576, got 0"),
        (["train", "--batch-size", "-8"], "--batch-size: value must be a whole number from 1 to 1,048,576, got -8"),
        (["train", "--epochs", "0"], "--epochs: value must be a whole number from 1"),
        (["train", "--limit", "ten"], "--limit: value must be a whole number from 1 to 2,147,483,647, got 'ten'"),
        (["train", "--verbose", "5"], "--verbose"),
        (["evaluate", "--model", "m.keras", "--batch-size", "0"], "--batch-size"),
        (["predict", "--model", "m.keras", "imgs", "--top-k", "0"], "--top-k"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_arguments_are_one_line(capsys, tmp_path, monkeypatch, no_data_loading, args, fragment):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, *args)
    assert_user_error(code, err, fragment)
    assert list(tmp_path.iterdir()) == []  # nothing created (not even runs/latest)


def test_train_checks_preset_precision_and_out_folder_before_loading_data(capsys, tmp_path, no_data_loading):
    code, _, err = run_cli(capsys, "train", "--preset", "nope", "--out", tmp_path / "a")
    assert_user_error(code, err, "nope")
    code, _, err = run_cli(capsys, "train", "--mixed-precision", "fp8", "--out", tmp_path / "a")
    assert_user_error(code, err, "--mixed-precision: invalid choice: 'fp8'")
    (tmp_path / "file").write_text("x")
    code, _, err = run_cli(capsys, "train", "--out", tmp_path / "file")
    assert_user_error(code, err, "is a file")
    code, _, err = run_cli(capsys, "train", "--out", tmp_path / "file" / "below")
    assert_user_error(code, err, "file is a file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_an_unwritable_out_folder_is_one_line(capsys, tmp_path, monkeypatch, no_data_loading):
    # Root may write anywhere, so the permission check is simulated.
    import os

    monkeypatch.setattr(os, "access", lambda path, mode: False)
    code, _, err = run_cli(capsys, "train", "--out", tmp_path / "runs" / "x")
    assert_user_error(code, err, "permission denied")
    assert not (tmp_path / "runs").exists()


def test_offline_keras_data_is_one_line(capsys, tmp_path, monkeypatch):
    def offline() -> None:
        raise Exception("URL fetch failure on https://www.cs.toronto.edu: no network")

    monkeypatch.setattr(keras.datasets.cifar10, "load_data", offline)
    code, _, err = run_cli(capsys, "train", "--data", "keras", "--out", tmp_path / "run")
    assert_user_error(code, err, "no network", "use --data sample")
    assert "source=" not in err
    assert not (tmp_path / "run").exists()


def test_data_naming_a_fifo_is_one_line(capsys, tmp_path):
    os.mkfifo(tmp_path / "x.zip")  # refused unopened (tests/tools/test_data_sources.py): no writer needed
    code, _, err = run_cli(capsys, "train", "--data", tmp_path / "x.zip", "--out", tmp_path / "run", "--limit", "2")
    assert_user_error(code, err, "named pipe", "x.zip")


def test_an_unreadable_data_folder_is_one_line(capsys, tmp_path, monkeypatch):
    (tmp_path / "data" / "train").mkdir(parents=True)
    (tmp_path / "data" / "test").mkdir()

    def walk(top, onerror=None, **kwargs):
        onerror(PermissionError(13, "Permission denied", str(top)))
        yield from ()

    monkeypatch.setattr(data_sources.os, "walk", walk)
    code, _, err = run_cli(capsys, "train", "--data", tmp_path / "data", "--out", tmp_path / "run")
    assert_user_error(code, err, "cannot read the folder", "Permission denied")


# --------------------------------------------------------------------------- run folders
@pytest.mark.slow
@pytest.mark.colab
def test_a_finished_out_folder_is_refused_and_overwrite_replaces_it(capsys, tmp_path):
    out = tmp_path / "run"
    common = ["train", "--data", "sample", "--limit", "20", "--epochs", "1", "--no-jit", "--verbose", "0",
              "--out", out]
    code, stdout, err = run_cli(capsys, *common, "--batch-size", "32")
    assert code == 0, err
    assert "test top-1" in stdout
    record = (out / "run.json").read_bytes()
    # Another preset into the finished folder: refused before the data is loaded; nothing changes.
    code, stdout, err = run_cli(capsys, *common, "--preset", "seed")
    assert_user_error(code, err, "already holds a finished run", str(out / "run.json"), "--overwrite")
    assert stdout == "" and (out / "run.json").read_bytes() == record
    code, _, err = run_cli(capsys, *common, "--batch-size", "16", "--overwrite")
    assert code == 0, err
    assert json.loads((out / "run.json").read_text())["config"]["batch_size"] == 16
    assert (out / "history.csv").read_text().count("\n") == 2  # header + one epoch, no old rows


def test_an_interrupted_out_folder_with_other_settings_names_the_fields(capsys, tmp_path):

    out = tmp_path / "run"
    out.mkdir()
    splits = data_sources.load_cifar10("sample", limit=20, seed=42)
    spec = run_spec(preset("quick", batch_size=32), splits, epochs=4, seed=42)
    (out / "run_spec.json").write_text(json.dumps(spec))  # a run that died after it started
    code, _, err = run_cli(capsys, "train", "--data", "sample", "--limit", "20", "--epochs", "6",
                           "--batch-size", "64", "--out", out)
    assert_user_error(code, err, "interrupted run with other settings", "epochs (4 -> 6)",
                      "config.batch_size (32 -> 64)", "batch_size (32 -> 64)")
    assert sorted(p.name for p in out.iterdir() if p.name != ".lock") == ["run_spec.json"]  # .lock: the run lock


# --------------------------------------------------------------------------- models
def test_a_saved_model_folder_is_refused_in_one_line(capsys, tmp_path):
    exported = tmp_path / "exported"  # what model.export() writes; never opened, so its bytes do not matter
    exported.mkdir()
    (exported / "saved_model.pb").write_bytes(b"a graph that would run if loaded")
    folder = tmp_path / "images"
    folder.mkdir()
    Image.fromarray(np.full((32, 32, 3), 90, np.uint8)).save(folder / "grey.png")
    code, _, err = run_cli(capsys, "predict", "--model", exported, folder)
    assert_user_error(code, err, "exported is a TensorFlow SavedModel folder", ".keras files only", "TFSMLayer")
    code, _, err = run_cli(capsys, "predict", "--model", exported, folder, "--trust-saved-model")
    assert code == 2 and "unrecognized arguments: --trust-saved-model" in err  # the switch is gone


def test_a_model_whose_outputs_do_not_fit_is_one_line(capsys, tmp_path):
    five = save_model(tiny_classifier(outputs=5), tmp_path / "five.keras")
    code, _, err = run_cli(capsys, "evaluate", "--model", five, "--data", "sample")
    assert_user_error(code, err, "(batch, 10)")
    inputs = keras.Input((32, 32, 3))
    flat = keras.layers.Flatten()(inputs)
    two = save_model(keras.Model(inputs, [keras.layers.Dense(10)(flat), keras.layers.Dense(10)(flat)]),
                     tmp_path / "two.keras")
    code, _, err = run_cli(capsys, "predict", "--model", two, tmp_path)
    assert_user_error(code, err, "2 outputs")


def test_predict_exits_non_zero_when_nothing_was_classified(capsys, tmp_path):
    import os

    model = save_model(tiny_classifier(), tmp_path / "m.keras")
    folder = tmp_path / "images"
    folder.mkdir()
    (folder / "notes.jpg").write_text("not an image")
    os.mkfifo(folder / "pipe.png")
    code, out, err = run_cli(capsys, "predict", "--model", model, folder)
    assert_user_error(code, err, "no image in", "2 unreadable file(s)")
    assert "notes.jpg" in out and "named pipe" in out  # the reasons are still shown
    Image.fromarray(np.zeros((40, 40, 3), np.uint8)).save(folder / "black.png")
    code, out, err = run_cli(capsys, "predict", "--model", model, folder)
    assert code == 0 and err == ""  # one readable image: the bad files are reported, the rest classified
    assert "1 image(s) classified" in out and "2 file(s) could not be read" in out


@pytest.mark.parametrize("case", ["missing model", "model folder", "not a folder", "missing folder"])
def test_predict_path_errors_are_one_line(capsys, tmp_path, case):
    model = save_model(tiny_classifier(), tmp_path / "m.keras")
    (tmp_path / "folder").mkdir()
    args = {
        "missing model": (tmp_path / "nope.keras", tmp_path / "folder"),
        "model folder": (tmp_path / "folder", tmp_path / "folder"),
        "not a folder": (model, model),
        "missing folder": (model, tmp_path / "nowhere"),
    }[case]
    code, _, err = run_cli(capsys, "predict", "--model", args[0], args[1])
    assert_user_error(code, err)


def test_an_unlistable_image_folder_is_one_line(capsys, tmp_path, monkeypatch):
    model = save_model(tiny_classifier(), tmp_path / "m.keras")
    (tmp_path / "images").mkdir()

    def refuse(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "iterdir", refuse)
    code, _, err = run_cli(capsys, "predict", "--model", model, tmp_path / "images")
    assert_user_error(code, err, "cannot list the folder", "Permission denied")


def test_ctrl_c_stops_with_one_line_saying_how_to_resume(monkeypatch, capsys, tmp_path):
    import shiftvit_lib.__main__ as cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_train", interrupted)
    code = main(["train", "--preset", "quick", "--data", "sample", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == cli.EXIT_INTERRUPTED == 130
    assert len(err) == 1 and "run the same command again to resume" in err[0] and "run" in err[0]


def test_evaluate_with_tta_reports_it_beside_the_plain_figure(capsys, tmp_path, monkeypatch):

    from shiftvit_lib.recipe import evaluate

    data = tiny_splits()
    monkeypatch.setattr(data_sources, "load_cifar10", lambda *args, **kwargs: data)
    model = tiny_classifier()
    path = save_model(model, tmp_path / "m.keras")
    code, out, err = run_cli(capsys, "evaluate", "--model", path, "--data", "sample", "--tta")
    assert code == 0, err
    plain, flipped = evaluate(model, data), evaluate(model, data, tta=True)
    lines = out.strip().splitlines()
    assert lines[-2].startswith(f"test top-1 {plain['accuracy']:.2%}")
    assert lines[-1] == (f"with flip TTA: top-1 {flipped['accuracy']:.2%}  top-5 {flipped['top5']:.2%}  "
                         f"loss {flipped['loss']:.4f}")
    code, out, _ = run_cli(capsys, "evaluate", "--model", path, "--data", "sample")
    assert code == 0 and "TTA" not in out  # only when asked


# --------------------------------------------------------------------------- speaking CLI
@pytest.mark.parametrize(
    ("library", "command_line"),
    [
        ("Resume it, or pass overwrite=True (--overwrite) to start afresh there", "or pass --overwrite to start"),
        ("or pass overwrite=True to replace it", "or pass --overwrite to replace it"),
        ("Without internet use source='sample', a local copy", "Without internet use --data sample, a local"),
        ("Pass source='keras' once online", "Pass --data keras once online"),
        ("load_cifar10('auto'): not the full data", "--data auto: not the full data"),
    ],
)
def test_keyword_advice_is_shown_as_flags(library, command_line):
    assert command_line in in_flags(library)


def test_a_library_warning_is_one_line_without_its_source_line(capsys, tmp_path, monkeypatch):
    from fakes import tiny_splits

    def falls_back(*args: object, **kwargs: object):
        warnings.warn("load_cifar10('auto'): not the full data. Pass source='keras' once online.", UserWarning,
                      stacklevel=2)
        return tiny_splits()

    monkeypatch.setattr(data_sources, "load_cifar10", falls_back)
    path = save_model(tiny_classifier(), tmp_path / "m.keras")
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        code, _, err = run_cli(capsys, "evaluate", "--model", path)
    assert code == 0, err
    assert err.splitlines() == ["warning: --data auto: not the full data. Pass --data keras once online."]


def test_predict_names_an_image_format_it_does_not_read(capsys, tmp_path):
    Image.new("RGB", (32, 32)).save(tmp_path / "photo.bmp")
    Image.new("RGB", (32, 32)).save(tmp_path / "photo.png")
    path = save_model(tiny_classifier(), tmp_path / "m.keras")
    code, out, _ = run_cli(capsys, "predict", "--model", path, tmp_path)
    assert code == 0
    assert "photo.bmp  a BMP image: only PNG and JPEG are read" in out


def test_help_states_the_formats_and_caps_read(capsys):
    code, out, _ = run_cli(capsys, "predict", "--help")
    assert code == 0
    from shiftvit_lib.images import MAX_PIXELS
    from shiftvit_lib.tools.inference import MAX_IMAGE_BYTES

    out = " ".join(out.split())
    assert "PNG or JPEG" in out and "any size" not in out
    assert f"{MAX_IMAGE_BYTES >> 20} MiB" in out and f"{MAX_PIXELS // 10**6} megapixels" in out


def _command_line(*args: str, **run: object) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}  # as a user's shell has it
    return subprocess.run([sys.executable, "-m", "shiftvit_lib", *args], env=environ, check=False, **run)


@pytest.mark.slow
def test_training_through_a_pipe_prints_no_backend_log_and_no_control_codes(tmp_path):
    done = _command_line("train", "--preset", "quick", "--data", "sample", "--epochs", "1", "--out",
                         str(tmp_path / "run"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    text = done.stdout.decode()
    assert done.returncode == 0, text
    for noise in ("E0000", "cuInit", "oneDNN", "\x1b", "\r"):
        assert noise not in text, (noise, text[-2000:])
    assert "test top-1" in text


@pytest.mark.slow
def test_a_reader_that_leaves_early_ends_the_program_quietly(tmp_path):
    Image.new("RGB", (32, 32)).save(tmp_path / "0.png")
    for index in range(1, 1200):  # JSON beyond a pipe's buffer
        (tmp_path / f"{index}.png").write_bytes((tmp_path / "0.png").read_bytes())
    path = save_model(tiny_classifier(), tmp_path / "m.keras")
    reader = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read(10)"], stdin=subprocess.PIPE)
    done = _command_line("predict", "--json", "--model", str(path), str(tmp_path), stdout=reader.stdin,
                         stderr=subprocess.PIPE)
    reader.stdin.close()
    reader.wait()
    assert done.stderr.decode() == ""


# --------------------------------------------------------------------------- issue 48: own files, names, Ctrl-C
@pytest.mark.parametrize("how", ["symlink", "hardlink"])
def test_compare_out_a_link_is_refused_before_training_and_its_target_kept(tmp_path, capsys, no_data_loading, how):
    outside = tmp_path / "notes.json"
    outside.write_text("the user's")
    out = tmp_path / "record.json"
    out.symlink_to(outside) if how == "symlink" else os.link(outside, out)
    code, _, err = run_cli(capsys, "compare", "--quick", "--runs", tmp_path / "runs", "--out", out)
    assert_user_error(code, err, str(out), "move it away")
    assert outside.read_text() == "the user's"


@pytest.mark.parametrize("command", [["compare", "--quick", "--out"], ["train", "--out"]])
def test_an_out_name_too_long_for_the_file_system_is_refused_before_the_data_loads(tmp_path, capsys, no_data_loading, command):
    code, _, err = run_cli(capsys, *command, tmp_path / ("x" * 256 + ".json"))
    assert_user_error(code, err, "more than the 255 a file system allows")


def test_save_model_to_the_longest_legal_name_works(tmp_path):
    save_model(tiny_classifier(), tmp_path / ("m" * 249 + ".keras"))
    assert (tmp_path / ("m" * 249 + ".keras")).is_file()


def test_ctrl_c_names_the_out_folder_escaped_on_one_line(tmp_path, capsys, monkeypatch):
    import shiftvit_lib.__main__ as cli

    def interrupted(args):
        raise SystemError("a TensorFlow call returned with an exception set") from KeyboardInterrupt()

    monkeypatch.setattr(cli, "_train", interrupted)
    code, _, err = run_cli(capsys, "train", "--out", tmp_path / "a\nerror: forged")
    assert code == 130 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("stopped (Ctrl-C); run the same command again to resume") and "\\nerror: forged" in err


def test_the_command_line_refuses_a_seed_past_32_bits_in_one_line(tmp_path):
    from shiftvit_lib.__main__ import main

    code = main(["train", "--data", "sample", "--seed", str(2**40), "--out", str(tmp_path / "run")])
    assert code == 2 and not (tmp_path / "run").exists()


def test_a_non_utf8_file_name_does_not_fail_a_strict_terminal(tmp_path, monkeypatch):
    from shiftvit_lib.__main__ import main

    model = inference.save_model(tiny_classifier(), tmp_path / "m.keras")
    folder = tmp_path / "imgs"
    folder.mkdir()
    odd = os.fsdecode(b"caf\xe9.png")  # Latin-1 bytes: not UTF-8, so Python holds a lone surrogate
    (folder / odd).write_bytes(png_bytes(100))
    strict = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    monkeypatch.setattr(sys, "stdout", strict)
    assert main(["predict", "--model", str(model), str(folder)]) == 0
    strict.flush()
    assert b"caf\\udce9.png" in strict.buffer.getvalue()


def test_a_batch_size_past_any_memory_is_refused_in_one_line(tmp_path, capsys):
    code = main(["evaluate", "--model", str(tmp_path / "m.keras"), "--batch-size", str(10**23)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "--batch-size" in one_line(err) and "from 1 to 1,048,576" in err


# --------------------------------------------------------------------------- one check per folder, errors by kind
class TrainingStarted(Exception):
    """Raised where training begins: every check of the run folder has happened by then."""


@pytest.mark.parametrize(
    ("command", "folder"),
    [
        (["train", "--data", "sample", "--limit", "20", "--epochs", "1", "--out", "{tmp}/run"], "run"),
        (["compare", "--quick", "--data", "sample", "--models", "vit", "--runs", "{tmp}/runs",
          "--out", "{tmp}/compare.json"], "runs/vit"),
    ],
)
def test_each_command_checks_its_run_folder_once(capsys, tmp_path, monkeypatch, command, folder):
    from shiftvit_lib import recipe
    from shiftvit_lib.tools import run_folder

    checked, check = [], run_folder.check_run_folder

    def counted(out, **options):
        checked.append(Path(out))
        return check(out, **options)

    def started(*args, **kwargs):
        raise TrainingStarted

    monkeypatch.setattr(run_folder, "check_run_folder", counted)
    monkeypatch.setattr(recipe, "training_datasets", started)
    with pytest.raises(TrainingStarted):  # not a user error: it passes through main
        main([part.replace("{tmp}", str(tmp_path)) for part in command])
    assert checked == [tmp_path / folder]


def test_a_bad_flag_value_is_one_line_and_an_internal_bug_is_a_traceback(capsys, tmp_path, monkeypatch):
    code, _, err = run_cli(capsys, "train", "--preset", "gigantic", "--out", tmp_path / "run")
    assert_user_error(code, err, "Unknown preset 'gigantic'")

    def bug(*args, **kwargs):
        raise ValueError("an internal bug, not the user's input")

    monkeypatch.setattr(data_sources, "load_cifar10", bug)
    with pytest.raises(ValueError, match="an internal bug"):
        main(["train", "--data", "sample", "--out", str(tmp_path / "run")])
    assert not (tmp_path / "run").exists()  # the claimed folder is given back untouched


def test_compare_command_rejects_an_unknown_model_before_writing_anything(tmp_path, capsys):
    from shiftvit_lib.__main__ import main

    out, runs = tmp_path / "comparison.json", tmp_path / "runs"
    code = main(["compare", "--quick", "--data", "sample", "--models", "shiftvit_official", "swin",
                 "--runs", str(runs), "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.count("\n") == 0 and "unknown swin" in err and "shiftvit_no_shift" in err  # names the choices
    assert not out.exists() and not any(runs.glob("*/run.json"))


@pytest.mark.slow
@pytest.mark.colab  # the command's record and reuse, in the Colab environment too
def test_compare_command_trains_only_the_chosen_models_and_reuses_them(tmp_path, capsys):
    # Two of the five models (lesson 07 trains all five through run_comparison, in both CI runs).
    from shiftvit_lib.__main__ import main

    out = tmp_path / "comparison.json"
    chosen = ["shiftvit_no_shift", "shiftvit_official"]  # not in the configs' order on purpose
    args = ["compare", "--quick", "--epochs", "1", "--data", "sample", "--seed", "43", "--models", *chosen,
            "--runs", str(tmp_path / "runs"), "--out", str(out)]
    assert main(args) == 0
    record = json.loads(out.read_text())
    assert record["mode"] == "quick" and record["epochs"] == 1 and "sample" in record["data_source"]
    assert [row["name"] for row in record["rows"]] == ["shiftvit_official", "shiftvit_no_shift"]
    assert all(row["epochs_run"] == 1 for row in record["rows"])
    assert record["seed"] == 43 and set(record["configs"]) == set(chosen)
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == sorted(chosen)
    assert "--models" in record["note"]
    # A second call finds the finished runs and reuses them instead of training again.
    capsys.readouterr()
    assert main(args) == 0
    assert capsys.readouterr().out.count("reused a finished run") == 2
