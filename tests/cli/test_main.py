"""The command line: every user error is one line on stderr and exit status 2, found before
anything is written to disk; finished and mismatched run folders are refused."""

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import warnings
import weakref
from pathlib import Path

import keras
import pytest
from fakes import left_right_sensitive_model, png_bytes, tiny_splits, write_tree

import shiftvit_lib.__main__ as cli
from shiftvit_lib import recipe
from shiftvit_lib.__main__ import main
from shiftvit_lib.config import preset
from shiftvit_lib.tools import data_sources
from shiftvit_lib.tools.inference import save_model
from shiftvit_lib.tools.run_folder import run_spec

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_user_error(code: int, err: str, *fragments: str) -> None:
    """One line, exit status 2, the library's keyword advice shown as flags (``--overwrite``, ``--data sample``)."""
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("error: "), err
    assert all(fragment in err for fragment in fragments) and not re.search(r"source=|overwrite=|load_cifar10", err), err


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    """A folder of saved models: m.keras (a CIFAR-10 classifier), the same under the longest name a file
    system allows (a save's temporary names fit), and five.keras (5 classes)."""
    folder = tmp_path_factory.mktemp("models")
    for name in ("m", "m" * 249):
        save_model(left_right_sensitive_model(), folder / f"{name}.keras")
    save_model(keras.Sequential([keras.Input((32, 32, 3)), keras.layers.Flatten(), keras.layers.Dense(5)]),
               folder / "five.keras")
    return folder


def must_not_load(*args: object, **kwargs: object) -> None:
    """In place of load_cifar10 where a check must come before the data loads."""
    raise AssertionError("the data was loaded before the arguments were checked")


# --------------------------------------------------------------------------- arguments
@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["train", "--batch-size", "-8"], ["--batch-size: value must be a whole number from 1 to 1,048,576, got -8"]),
        (["train", "--epochs", "0"], ["--epochs: value must be a whole number from 1"]),
        (["train", "--limit", "ten"], ["--limit: value must be a whole number from 1 to 2,147,483,647, got 'ten'"]),
        (["train", "--verbose", "5"], ["--verbose: invalid choice: 5"]),
        (["train", "--seed", str(2**40)], ["--seed"]),
        (["train", "--preset", "gigantic"], ["Unknown preset 'gigantic'"]),
        (["train", "--mixed-precision", "fp8"], ["--mixed-precision: invalid choice: 'fp8'"]),
        (["train", "--out", "x" * 256], ["more than the 255 a file system allows"]),
        (["compare", "--quick", "--out", "x" * 256 + ".json"], ["more than the 255 a file system allows"]),
        (["compare", "--quick", "--models", "shiftvit_official", "swin", "--out", "c.json"],
         ["unknown swin", "shiftvit_no_shift"]),  # names the choices
        (["evaluate", "--model", "m.keras", "--batch-size", str(10**23)], ["--batch-size", "from 1 to 1,048,576"]),
        (["predict", "--model", "m.keras", "imgs", "--top-k", "0"], ["--top-k"]),
        (["frobnicate"], ["invalid choice"]),
    ],
)
def test_bad_arguments_are_one_line(capsys, tmp_path, monkeypatch, args, fragments):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(data_sources, "load_cifar10", must_not_load)  # each is checked before the data loads
    code, _, err = run_cli(capsys, *args)
    assert_user_error(code, err, *fragments)
    assert list(tmp_path.iterdir()) == []  # nothing created (not even runs/latest)


def offline() -> None:
    raise Exception("URL fetch failure on https://www.cs.toronto.edu: no network")


def refused_listing(self):
    raise PermissionError(13, "Permission denied", str(self))


# A mistake a user can make (what the test plants in tmp, what it patches) -> the command and the words of its
# one-line error: one case per kind of error the command line reports (how each library function refuses
# each case of its kind: that module's tests).
USER_MISTAKES = {
    "out is a file": (lambda tmp: (tmp / "file").write_bytes(b"x"), None, ["train", "--out", "{tmp}/file"],
                      ["is a file"]),
    "finished out": (lambda tmp: write_tree(tmp / "run", {"run.json": b'{"test": {}}'}),
                     (data_sources, "load_cifar10", must_not_load),  # refused before the data loads
                     ["train", "--data", "sample", "--out", "{tmp}/run"],
                     ["already holds a finished run", "run.json", "--overwrite"]),
    # Root may write anywhere, so the permission check is simulated.
    "unwritable out": (None, (os, "access", lambda path, mode: False), ["train", "--out", "{tmp}/runs/x"],
                       ["permission denied"]),
    "data a named pipe": (lambda tmp: os.mkfifo(tmp / "x.zip"), None,  # refused unopened: no writer needed
                          ["train", "--data", "{tmp}/x.zip", "--out", "{tmp}/run"], ["named pipe", "x.zip"]),
    "offline keras data": (None, (keras.datasets.cifar10, "load_data", offline),
                           ["train", "--data", "keras", "--out", "{tmp}/run"], ["no network", "use --data sample"]),
    "five classes": (None, (data_sources, "load_cifar10", must_not_load),  # refused before the data loads
                     ["evaluate", "--model", "{models}/five.keras"], ["(batch, 10)"]),
    "missing model": (None, None, ["predict", "--model", "{tmp}/nope.keras", "{tmp}"], ["nope.keras"]),
    "images not a folder": (None, None, ["predict", "--model", "{models}/" + "m" * 249 + ".keras", "{models}/m.keras"],
                            ["m.keras"]),  # the model saved under the longest legal name is read
    "unlistable images": (lambda tmp: (tmp / "images").mkdir(), (Path, "iterdir", refused_listing),
                          ["predict", "--model", "{models}/m.keras", "{tmp}/images"],
                          ["cannot list the folder", "Permission denied"]),
    "compare out a symlink": (lambda tmp: (tmp / "record.json").symlink_to(tmp / "notes.json"), None,
                              ["compare", "--quick", "--runs", "{tmp}/runs", "--out", "{tmp}/record.json"],
                              ["record.json", "move it away"]),
}


@pytest.mark.parametrize("mistake", USER_MISTAKES)
def test_a_user_mistake_is_one_line_and_changes_nothing(capsys, tmp_path, monkeypatch, models, mistake):
    plant, patch, command, fragments = USER_MISTAKES[mistake]
    (tmp_path / "notes.json").write_text("the user's")
    if plant:
        plant(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    if patch:
        monkeypatch.setattr(*patch)
    code, _, err = run_cli(capsys, *(part.format(tmp=tmp_path, models=models) for part in command))
    monkeypatch.undo()
    assert_user_error(code, err, *fragments)
    assert sorted(tmp_path.rglob("*")) == before and (tmp_path / "notes.json").read_text() == "the user's"


# --------------------------------------------------------------------------- run folders
def test_an_interrupted_out_folder_with_other_settings_names_the_fields(capsys, tmp_path):
    splits = data_sources.load_cifar10("sample", limit=20, seed=42)
    spec = run_spec(preset("quick", batch_size=32), splits, epochs=4, seed=42)
    # A run that died after it started.
    out = write_tree(tmp_path / "run", {"run_spec.json": json.dumps(spec).encode()})
    code, _, err = run_cli(capsys, "train", "--data", "sample", "--limit", "20", "--epochs", "6",
                           "--batch-size", "64", "--out", out)
    assert_user_error(code, err, "interrupted run with other settings", "epochs (4 -> 6)",
                      "config.batch_size (32 -> 64)", "batch_size (32 -> 64)")
    assert sorted(p.name for p in out.iterdir() if p.name != ".lock") == ["run_spec.json"]  # .lock: the run lock


# --------------------------------------------------------------------------- models
def test_predict_exits_non_zero_when_nothing_was_classified(capsys, tmp_path, monkeypatch, models):
    model = models / "m.keras"
    folder = write_tree(tmp_path / "images", {"notes.jpg": b"not an image"})
    code, out, err = run_cli(capsys, "predict", "--model", model, folder)
    assert_user_error(code, err, "no image in", "1 unreadable file(s)")
    assert "notes.jpg" in out  # the reasons are still shown
    # One readable image, named in bytes that are not UTF-8 (Python holds a lone surrogate), on a strict
    # terminal: the bad files are reported, the rest classified.
    (folder / os.fsdecode(b"caf\xe9.png")).write_bytes(png_bytes(100))
    strict = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    monkeypatch.setattr(sys, "stdout", strict)
    assert main(["predict", "--model", str(model), str(folder)]) == 0 and capsys.readouterr().err == ""
    strict.flush()
    out = strict.buffer.getvalue().decode()
    assert "1 image(s) classified" in out and "1 file(s) could not be read" in out and "caf\\udce9.png" in out


@pytest.mark.parametrize("error", [KeyboardInterrupt(), SystemError("a TensorFlow call returned with an exception set")])
def test_ctrl_c_stops_with_one_line_naming_the_out_folder_escaped_and_how_to_resume(monkeypatch, capsys, tmp_path,
                                                                                  error):
    def interrupted(args):  # a Ctrl-C, also one TensorFlow reports as the cause of another error
        raise error from KeyboardInterrupt()

    monkeypatch.setattr(cli, "_train", interrupted)
    code, _, err = run_cli(capsys, "train", "--preset", "quick", "--data", "sample", "--out", tmp_path / "a\nerror: forged")
    assert code == cli.EXIT_INTERRUPTED == 130 and len(err.strip().splitlines()) == 1, err
    assert err.startswith("stopped (Ctrl-C); run the same command again to resume") and "\\nerror: forged" in err


def test_a_ctrl_c_that_lands_in_a_weakref_callback_still_stops_the_run(monkeypatch, capsys, tmp_path):
    # Python drops an exception raised in a weakref callback ("Exception ignored", a traceback): CI saw
    # a Ctrl-C lost that way, and the run trained on to its end.
    def dropped_then_busy(args):
        def callback(_):
            raise KeyboardInterrupt  # where SIGINT's handler raised it

        # The object is a temporary: it dies as weakref.ref returns (no name in the frame's locals
        # that a tracer such as coverage's could keep alive); the weak reference lives on.
        reference = weakref.ref(type("Thing", (), {})(), callback)  # noqa: F841
        started = time.perf_counter()
        while time.perf_counter() - started < 60:  # the rest of the run: the re-delivered Ctrl-C ends it
            pass  # (a machine under load may take a while to run the delivering thread)
        return 0

    monkeypatch.setattr(cli, "_train", dropped_then_busy)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's, as in the program
    try:
        code, _, err = run_cli(capsys, "train", "--preset", "quick", "--data", "sample", "--out", tmp_path / "run")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert code == 130 and err.startswith("stopped (Ctrl-C)") and "Traceback" not in err, err


ABANDONED_WORK = """
import sys
import shiftvit_lib.__main__ as cli

def context():  # a tracing context whose clean-up fails once its graph is torn down (TensorFlow's)
    try:
        yield
    finally:
        raise TypeError("'NoneType' object is not iterable")

def interrupted(args):
    in_frame, in_cycle, in_module = context(), [context()], context()
    in_cycle.append(in_cycle)
    cli.LEFT = in_module
    for started in (in_frame, in_cycle[0], in_module):
        next(started)
    raise KeyboardInterrupt  # freed: with the traceback, by the collector, as Python exits

cli._train = interrupted
sys.argv = ["shiftvit", "train", "--preset", "quick", "--data", "sample", "--out", sys.argv[1]]
sys.exit(cli.main())
"""


@pytest.mark.slow  # a Python process that loads Keras
def test_a_ctrl_c_says_one_line_however_the_work_it_abandoned_is_freed(tmp_path):
    # CI saw TensorFlow's abandoned tracing context fail as it was freed ("Exception ignored", a traceback).
    done = subprocess.run([sys.executable, "-c", ABANDONED_WORK, str(tmp_path / "run")], capture_output=True,
                          text=True, timeout=300)
    hint = f"stopped (Ctrl-C); run the same command again to resume {tmp_path / 'run'} from its last finished epoch"
    assert (done.returncode, done.stderr) == (130, hint + "\n")


def test_evaluate_reports_flip_tta_beside_the_plain_figure_and_a_warning_in_one_line(capsys, monkeypatch, models):
    def falls_back(*args: object, **kwargs: object):
        warnings.warn("load_cifar10('auto'): not the full data. Pass source='keras' once online.", UserWarning,
                      stacklevel=2)
        return tiny_splits()

    def scores(model, data, batch_size, tta=False) -> dict:  # the flipped figures differ from the plain ones
        return {"accuracy": 0.5 if tta else 0.25, "top5": 1.0, "loss": 0.5 if tta else 2.0, "images": 32}

    monkeypatch.setattr(data_sources, "load_cifar10", falls_back)
    monkeypatch.setattr(recipe, "evaluate", scores)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        code, out, err = run_cli(capsys, "evaluate", "--model", models / "m.keras")
    assert code == 0 and "TTA" not in out, err  # only when asked
    assert err.splitlines() == ["warning: --data auto: not the full data. Pass --data keras once online."]
    code, out, err = run_cli(capsys, "evaluate", "--model", models / "m.keras", "--tta")
    assert code == 0 and out.splitlines()[-2:] == ["test top-1 25.00%  top-5 100.00%  loss 2.0000  (32 images)",
                                                   "with flip TTA: top-1 50.00%  top-5 100.00%  loss 0.5000"], err


def test_help_states_the_formats_and_caps_read(capsys):
    from shiftvit_lib.images import MAX_PIXELS
    from shiftvit_lib.tools.inference import MAX_IMAGE_BYTES

    code, out, _ = run_cli(capsys, "predict", "--help")
    out = " ".join(out.split())
    assert code == 0 and "PNG or JPEG" in out and f"{MAX_IMAGE_BYTES >> 20} MiB" in out
    assert f"{MAX_PIXELS // 10**6} megapixels" in out
    code, out, _ = run_cli(capsys, "train", "--help")
    assert code == 0 and "--verbose {0,1,2}" in out  # the values it takes, not a type's name


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
def test_a_reader_that_leaves_early_ends_the_program_quietly(tmp_path, models):
    write_tree(tmp_path, {f"{index}.png": png_bytes(0) for index in range(1200)})  # JSON past a pipe's buffer
    path = models / "m.keras"
    reader = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read(10)"], stdin=subprocess.PIPE)
    done = _command_line("predict", "--json", "--model", str(path), str(tmp_path), stdout=reader.stdin,
                         stderr=subprocess.PIPE)
    reader.stdin.close()
    reader.wait()
    assert done.stderr.decode() == ""


# --------------------------------------------------------------------------- one check per folder, errors by kind
class TrainingStarted(ValueError):
    """Raised where training begins, when every check of the run folder has happened: a ValueError, as an
    internal bug may be, and not one the project raises about the user's input, so main lets it through."""


@pytest.mark.parametrize(
    ("command", "folder"),
    [  # train over the finished run the test plants: --overwrite takes it past the check
        (["train", "--data", "sample", "--limit", "20", "--epochs", "1", "--overwrite", "--out", "{tmp}/run"], "run"),
        (["compare", "--quick", "--data", "sample", "--models", "vit", "--runs", "{tmp}/runs",
          "--out", "{tmp}/compare.json"], "runs/vit"),
    ],
)
def test_each_command_checks_its_run_folder_once_and_an_internal_error_is_a_traceback(capsys, tmp_path, monkeypatch,
                                                                                      command, folder):
    from shiftvit_lib.tools import run_folder

    checked, check = [], run_folder.check_run_folder

    def counted(out, **options):
        checked.append(Path(out))
        return check(out, **options)

    def started(*args, **kwargs):
        raise TrainingStarted

    write_tree(tmp_path / "run", {"run.json": b'{"test": {}}'})
    monkeypatch.setattr(run_folder, "check_run_folder", counted)
    monkeypatch.setattr(recipe, "training_datasets", started)
    with pytest.raises(TrainingStarted):
        main([part.replace("{tmp}", str(tmp_path)) for part in command])
    assert checked == [tmp_path / folder]


@pytest.mark.slow
@pytest.mark.colab  # the command's record and reuse, in the Colab environment too
def test_compare_command_trains_only_the_chosen_models_and_reuses_them(tmp_path, capsys):
    # Two of the five models (lesson 07 trains all five through run_comparison, in both CI runs).
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
