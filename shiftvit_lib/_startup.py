"""Import the Keras backend without TensorFlow's C++ start-up messages.

TensorFlow's native libraries write lines such as "Could not find cuda drivers"
straight to file descriptor 2 while they load; ``TF_CPP_MIN_LOG_LEVEL`` no longer
reaches them. Jupyter copies that descriptor into the notebook, so every lesson
would begin with a red block of noise. We point descriptor 2 at ``/dev/null`` for
the duration of the import only; Python-level errors and warnings are unaffected,
and ``SHIFTVIT_SHOW_BACKEND_LOGS=1`` turns this off.
"""

from __future__ import annotations

import os
import sys


def import_backend_quietly() -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
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
            import tensorflow  # noqa: F401
        except ImportError:
            pass  # keras reports a missing backend itself, with its own message
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
