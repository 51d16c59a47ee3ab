"""The start-up checks (shiftvit_lib/_startup.py): a Keras backend that cannot load is one line naming the fix."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakes import finishes_within, write_tree

from shiftvit_lib._startup import backend_problem, choose_backend_for_colab_tpu

REPO = Path(__file__).resolve().parents[2]
DEFAULT = "Keras' default (KERAS_BACKEND is not set)"


# KERAS_BACKEND (None: unset, no keras.json), the backends installed -> the one-line problem (None: none).
@pytest.mark.parametrize(("chosen", "installed", "problem"), [
    ("tensorflow", {"jax", "torch"}, "Keras is to use tensorflow (from KERAS_BACKEND) but tensorflow is not "
     "installed; set KERAS_BACKEND=jax (installed here), or pip install tensorflow"),
    (None, set(), f"Keras is to use tensorflow (from {DEFAULT}) but tensorflow is not installed; pip install tensorflow"),
    ("jax", {"jax"}, None),
    ("tensorfow", {"jax"}, "the Keras backend 'tensorfow' (from KERAS_BACKEND) is not one Keras knows; set "
     "KERAS_BACKEND to jax, tensorflow or torch"),
])
def test_a_backend_keras_cannot_load_is_one_line_naming_the_fix(tmp_path, chosen, installed, problem):
    environ = {"HOME": str(tmp_path)} if chosen is None else {"KERAS_BACKEND": chosen}
    assert backend_problem(environ, find_spec=lambda name: object() if name in installed else None) == problem


def test_the_command_line_prints_the_backends_problem_in_one_line_even_for_presets():
    env = {**os.environ, "KERAS_BACKEND": "tensorfow"}
    done = subprocess.run([sys.executable, "-m", "shiftvit_lib", "presets"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [f"error: {backend_problem(env)}"], done.stderr


def test_a_keras_json_with_a_list_as_backend_is_one_line_and_a_fifo_is_not_read(tmp_path):
    write_tree(tmp_path / "list", {"keras.json": b'{"backend": ["jax"]}'})
    problem = backend_problem({"KERAS_HOME": str(tmp_path / "list")})
    assert "['jax']" in problem and "keras.json" in problem and "\n" not in problem
    os.mkfifo(tmp_path / "keras.json")  # not read: Keras' default backend (here one not installed)
    assert DEFAULT in finishes_within(30, backend_problem, {"KERAS_HOME": str(tmp_path)}, lambda name: None)


# KERAS_BACKEND set or not, Colab or not, the TPU's marks -> whether JAX is chosen.
@pytest.mark.parametrize(("environ", "colab", "tpu_device", "chosen"), [
    ({}, True, True, True),  # a Colab TPU VM: /dev/accel0
    ({"COLAB_TPU_ADDR": "10.0.0.2:8470"}, True, False, True),  # the older TPU runtime
    ({"KERAS_BACKEND": "tensorflow"}, True, True, False),  # a backend the learner chose wins
    ({}, True, False, False),  # a GPU or CPU runtime
    ({}, False, True, False),  # a TPU machine off Colab
])
def test_a_colab_tpu_runtime_gets_the_jax_backend(environ, colab, tpu_device, chosen):
    before = dict(environ)
    note = choose_backend_for_colab_tpu(environ, {"google.colab": object()} if colab else {},
                                        lambda path: tpu_device and path == "/dev/accel0")
    assert (note is not None) == chosen and environ == ({**before, "KERAS_BACKEND": "jax"} if chosen else before)
    assert not note or ("JAX" in note and "\n" not in note)


@pytest.mark.slow
def test_a_process_without_descriptor_2_imports_the_package_all_the_same():
    """Python starts some processes with no usable descriptor 2 (pythonw, a closed stderr): nothing to quiet."""
    env = {**os.environ, "KERAS_BACKEND": "tensorflow"}
    done = subprocess.run([sys.executable, "-c", "import shiftvit_lib, sys; print(sys.stderr)"], cwd=REPO, env=env,
                          stdout=subprocess.PIPE, text=True, timeout=300, preexec_fn=lambda: os.close(2))
    assert done.returncode == 0 and done.stdout.strip() == "None", done.stdout
