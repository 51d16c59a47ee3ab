"""Everything that importing shiftvit_lib does outside the package, in one place.

``import shiftvit_lib`` leaves ``os.environ``, file descriptor 2 and every logger as it found
them, never exits the process, and does only this (``import_backend_quietly``):

* It checks, before Keras loads, that Keras can load its backend; if not it raises
  :class:`BackendChoiceError` with a one-line fix. (Under ``python -m shiftvit_lib`` it imports
  nothing instead, and the command line prints that line and exits with status 2.)
* Under ``python -m shiftvit_lib`` only, the process is the program's own: it sets
  ``TF_CPP_MIN_LOG_LEVEL=3`` (unless set) before TensorFlow loads, so TensorFlow's C++ log lines
  (``E0000 ... cuInit``, oneDNN, memory patches), which come later than its import, stay off.
* While TensorFlow's native libraries load, descriptor 2 points at ``/dev/null``, then back
  at what it was: they write lines such as "Could not find cuda drivers" straight to it,
  which Jupyter would copy into every lesson as a red block. ``SHIFTVIT_SHOW_BACKEND_LOGS=1``
  turns this off. (Lessons also set ``TF_CPP_MIN_LOG_LEVEL`` themselves, in their first
  cell, and ``setup_lesson`` quiets TensorFlow's Python logger.)
* On a Google Colab TPU runtime with no ``KERAS_BACKEND`` set, it sets ``KERAS_BACKEND=jax``
  and prints one line saying so: that runtime has no TensorFlow for its TPU. Set
  ``KERAS_BACKEND`` yourself to choose otherwise.

``tests/project/test_import_graph.py`` checks the first sentence.
"""

import importlib.util
import json
import os
import sys
from pathlib import Path

KERAS_BACKENDS = ("tensorflow", "jax", "torch", "numpy", "openvino")  # Keras 3's, each its package's name


class BackendChoiceError(ImportError):
    """``KERAS_BACKEND`` names no backend, or one that is not installed; the message says what to do."""


def _configured_backend(environ) -> tuple[str, str]:
    """The backend Keras will load and where that choice comes from (Keras' own order)."""
    if environ.get("KERAS_BACKEND"):
        return environ["KERAS_BACKEND"], "KERAS_BACKEND"
    home = environ.get("KERAS_HOME") or Path(environ.get("HOME") or Path.home()) / ".keras"
    path = Path(home) / "keras.json"
    try:  # only a regular file is read: a named pipe there would block the import forever
        settings = json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, ValueError, RecursionError):
        settings = {}
    name = settings.get("backend") if isinstance(settings, dict) else settings
    if name is None:
        return "tensorflow", "Keras' default (KERAS_BACKEND is not set)"
    # A list, a number...: Keras would fail on it with a traceback, so it is named, on one line.
    return (name if isinstance(name, str) else " ".join(repr(name).split())[:60]), str(path)


def backend_problem(environ=os.environ, find_spec=importlib.util.find_spec) -> str | None:
    """Why Keras cannot load its backend here, in one line, or None if it can (checked, not imported)."""
    name, source = _configured_backend(environ)
    if name not in KERAS_BACKENDS:
        return (
            f"the Keras backend {name!r} (from {source}) is not one Keras knows; set KERAS_BACKEND "
            "to jax, tensorflow or torch"
        )
    if find_spec(name) is not None:
        return None
    others = [b for b in ("jax", "tensorflow", "torch") if b != name and find_spec(b) is not None]
    instead = f"set KERAS_BACKEND={others[0]} (installed here), or " if others else ""
    return f"Keras is to use {name} (from {source}) but {name} is not installed; {instead}pip install {name}"


def choose_backend_for_colab_tpu(environ=os.environ, modules=None, exists=os.path.exists) -> str | None:
    """On a Google Colab TPU runtime with no backend chosen, choose JAX; returns the one-line note, else None.

    That runtime ships JAX for the TPU and no TensorFlow, which Keras would otherwise default
    to (pip would install a CPU-only one, leaving the TPU idle). Colab's TPU VMs show the chips
    as ``/dev/accel*`` (or ``/dev/vfio`` on newer ones); the older TPU runtime set ``COLAB_TPU_ADDR``.
    """
    if "KERAS_BACKEND" in environ or "google.colab" not in (sys.modules if modules is None else modules):
        return None
    tpu_marks = (environ.get("COLAB_TPU_ADDR"), environ.get("TPU_ACCELERATOR_TYPE"))
    if not any(tpu_marks) and not exists("/dev/accel0") and not exists("/dev/vfio/0"):
        return None
    environ["KERAS_BACKEND"] = "jax"
    return "Colab TPU runtime: Keras runs on JAX here (the runtime has no TensorFlow for its TPU)."


def running_command_line(argv=sys.orig_argv) -> bool:
    """Whether this process is ``python -m shiftvit_lib`` (the command line)."""
    return any(arg == "-m" and argv[i + 1 : i + 2] == ["shiftvit_lib"] for i, arg in enumerate(argv))


def import_backend_quietly() -> bool:
    """Load Keras' backend (see the module docstring); False if the command line is to report a problem."""
    note = choose_backend_for_colab_tpu()
    if note:
        print(note)
    problem = backend_problem()
    if problem and running_command_line():
        return False  # under `python -m shiftvit_lib`: __main__.main reports it in one line
    if problem:
        raise BackendChoiceError(problem)
    if running_command_line():  # the program's own process (module docstring)
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    quiet = os.environ.get("SHIFTVIT_SHOW_BACKEND_LOGS") != "1" and "tensorflow" not in sys.modules
    # No sys.stderr: Python found no usable descriptor 2 at start-up (pythonw, some embedded
    # interpreters); there is nothing to quiet, and nothing to save and restore.
    if _configured_backend(os.environ)[0] != "tensorflow" or not quiet or sys.stderr is None:
        return True
    saved = os.dup(2)
    sys.stderr.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:  # (installed: backend_problem checked; a broken install raises its own ImportError)
        os.dup2(devnull, 2)
        import tensorflow  # noqa: F401
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
    return True
