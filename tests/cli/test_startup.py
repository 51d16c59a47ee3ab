"""The start-up checks (shiftvit_lib/_startup.py): a Keras backend that cannot load is one line naming the fix."""

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fakes import one_line

from shiftvit_lib._startup import backend_problem

REPO = Path(__file__).resolve().parents[2]


def test_an_unknown_keras_backend_is_one_line_even_for_presets():
    env = {**os.environ, "KERAS_BACKEND": "tensorfow"}
    done = subprocess.run([sys.executable, "-m", "shiftvit_lib", "presets"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: the Keras backend 'tensorfow' (from KERAS_BACKEND) is not one Keras knows; set "
        "KERAS_BACKEND to jax, tensorflow or torch"]


def test_a_backend_that_is_not_installed_names_the_fix(tmp_path):
    installed = {"jax", "torch"}
    problem = backend_problem({"KERAS_BACKEND": "tensorflow"},
                              find_spec=lambda name: object() if name in installed else None)
    assert problem == ("Keras is to use tensorflow (from KERAS_BACKEND) but tensorflow is not installed; "
                       "set KERAS_BACKEND=jax (installed here), or pip install tensorflow")
    # No KERAS_BACKEND and no keras.json: Keras' default, TensorFlow, named as such.
    problem = backend_problem({"HOME": str(tmp_path)}, find_spec=lambda name: None)
    assert problem.startswith("Keras is to use tensorflow (from Keras' default (KERAS_BACKEND is not set))")
    assert backend_problem({"KERAS_BACKEND": "jax"}, find_spec=lambda name: object()) is None


def test_a_keras_json_with_a_list_as_backend_is_one_line_and_a_fifo_is_not_read(tmp_path):
    (tmp_path / "list" / "keras.json").parent.mkdir()
    (tmp_path / "list" / "keras.json").write_text('{"backend": ["jax"]}')
    problem = backend_problem({"KERAS_HOME": str(tmp_path / "list")})
    assert problem and "keras.json" in one_line(problem) and "KERAS_BACKEND" in problem
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
