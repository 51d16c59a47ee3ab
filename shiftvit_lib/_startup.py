"""Import the Keras backend without TensorFlow's C++ start-up messages.

TensorFlow's native libraries write lines such as "Could not find cuda drivers"
straight to file descriptor 2 while they load; ``TF_CPP_MIN_LOG_LEVEL`` no longer
reaches them. Jupyter copies that descriptor into the notebook, so every lesson
would begin with a red block of noise. We point descriptor 2 at ``/dev/null`` for
the duration of the import only, and set TensorFlow's own Python logger to errors
only; Python warnings are unaffected, and ``SHIFTVIT_SHOW_BACKEND_LOGS=1`` turns all
of this off.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

# Keras 3's backends, and the package each one needs.
KERAS_BACKENDS = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch", "numpy": "numpy",
                  "openvino": "openvino"}


class BackendChoiceError(ImportError):
    """``KERAS_BACKEND`` names no backend, or one that is not installed; the message says what to do."""


def _configured_backend(environ) -> tuple[str, str]:
    """The backend Keras will load and where that choice comes from (Keras' own order)."""
    if environ.get("KERAS_BACKEND"):
        return environ["KERAS_BACKEND"], "KERAS_BACKEND"
    home = Path(environ.get("KERAS_HOME") or Path(environ.get("HOME") or Path.home()) / ".keras")
    try:  # only a regular file is read: a named pipe there would block the import forever
        settings = json.loads((home / "keras.json").read_text()) if (home / "keras.json").is_file() else {}
    except (OSError, ValueError, RecursionError):
        settings = {}
    name = settings.get("backend") if isinstance(settings, dict) else settings
    if isinstance(name, str) and name:
        return name, str(home / "keras.json")
    if name is not None:  # a list, a number...: Keras would fail on it with a traceback
        return " ".join(repr(name).split())[:60], str(home / "keras.json")
    return "tensorflow", "Keras' default (KERAS_BACKEND is not set)"


def backend_problem(environ=None, find_spec=importlib.util.find_spec) -> str | None:
    """Why Keras cannot load its backend here, in one line, or None if it can (checked, not imported)."""
    environ = os.environ if environ is None else environ
    name, source = _configured_backend(environ)
    if name not in KERAS_BACKENDS:
        return (f"the Keras backend {name!r} (from {source}) is not one Keras knows; set KERAS_BACKEND "
                "to jax, tensorflow or torch")
    if find_spec(KERAS_BACKENDS[name]) is None:
        others = [b for b in ("jax", "tensorflow", "torch") if b != name and find_spec(b) is not None]
        instead = f"set KERAS_BACKEND={others[0]} (installed here), or " if others else ""
        return (f"Keras is to use {name} (from {source}) but {name} is not installed; {instead}"
                f"pip install {KERAS_BACKENDS[name]}")
    return None


def _running_as_command_line() -> bool:
    """True while ``python -m shiftvit_lib`` imports the package (before its ``__main__`` runs)."""
    argv = getattr(sys, "orig_argv", [])
    return any(arg == "-m" and argv[i + 1:i + 2] == ["shiftvit_lib"] for i, arg in enumerate(argv))


def on_colab_tpu(environ=None, modules=None, exists=os.path.exists) -> bool:
    """True on a Google Colab TPU runtime (it ships JAX for the TPU, and no TensorFlow).

    Colab's TPU VMs show the chips as ``/dev/accel*`` (or ``/dev/vfio`` on newer ones);
    the older TPU runtime set ``COLAB_TPU_ADDR``.
    """
    environ = os.environ if environ is None else environ
    modules = sys.modules if modules is None else modules
    if "google.colab" not in modules:
        return False
    return bool(environ.get("COLAB_TPU_ADDR") or environ.get("TPU_ACCELERATOR_TYPE")
                or exists("/dev/accel0") or exists("/dev/vfio/0"))


def choose_backend_for_colab_tpu(environ=None, modules=None, exists=os.path.exists) -> str | None:
    """On a Colab TPU runtime with no backend chosen, choose JAX; returns the one-line note, else None.

    Keras would otherwise default to TensorFlow, which that runtime lacks (pip would install
    a CPU-only one, leaving the TPU idle).
    """
    environ = os.environ if environ is None else environ
    if "KERAS_BACKEND" in environ or not on_colab_tpu(environ, modules, exists):
        return None
    environ["KERAS_BACKEND"] = "jax"
    return "Colab TPU runtime: Keras runs on JAX here (the runtime has no TensorFlow for its TPU)."


def import_backend_quietly() -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    note = choose_backend_for_colab_tpu()
    if note:
        print(note)
    problem = backend_problem()
    if problem:
        if _running_as_command_line():  # the command line reports a user's mistake in one line
            print(f"error: {problem}", file=sys.stderr)
            raise SystemExit(2)
        raise BackendChoiceError(problem)
    backend, _ = _configured_backend(os.environ)
    if backend != "tensorflow" or "tensorflow" in sys.modules:
        return
    if os.environ.get("SHIFTVIT_SHOW_BACKEND_LOGS") == "1":
        return
    try:
        saved = os.dup(2)
    except OSError:  # no usable descriptor 2 (some embedded interpreters)
        return
    sys.stderr.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        try:
            import tensorflow
        except ImportError:
            return  # keras reports a missing backend itself, with its own message
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
    # TensorFlow's Python logger warns, for example, each time a freshly built model
    # traces its predict function ("triggered tf.function retracing"): expected when
    # a lesson trains several models, and only noise to a learner. Errors still show.
    tensorflow.get_logger().setLevel("ERROR")
