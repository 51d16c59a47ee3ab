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

import os
import sys


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
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
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
