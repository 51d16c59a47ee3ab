"""Shared test set-up: quiet TensorFlow, a fixed seed, the repo on sys.path."""

import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

# First: the library loads TensorFlow with its start-up logs silenced (xdist's workers print them).
import shiftvit_lib  # noqa: E402,F401

# isort: split
import keras  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _fixed_seed():
    keras.utils.set_random_seed(1234)


@pytest.fixture(autouse=True)
def _private_array_cache(tmp_path_factory, monkeypatch):
    """Each test starts with an empty archive cache of its own, never ~/.cache/shiftvit_lib.

    Decoded archives are cached by the archive's sha256. A zip's bytes include its
    entries' timestamps (2-second resolution), so two tests that write the same files
    within the same two seconds wrote the same archive; with a shared cache the second
    test was served the first one's arrays and never read its own archive, and a test
    that expects an error while reading it passed or failed depending on the clock.
    """
    monkeypatch.setenv("SHIFTVIT_CACHE", str(tmp_path_factory.mktemp("shiftvit_cache")))


@pytest.hookimpl(tryfirst=True)  # before pytest-random-order shuffles (`--random-order`)
def pytest_collection_modifyitems(items):
    """A lesson's cells (nbval) run in their order; only whole lessons and test modules move."""
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.random_order(disabled=True))


@pytest.fixture
def dtype_policy():
    """Keras' ``set_dtype_policy``, for the test to set one ("mixed_bfloat16" as on an A100 or H100,
    "mixed_float16" as on a T4); the policy before the test is restored after it."""
    previous = keras.config.dtype_policy()
    yield keras.config.set_dtype_policy
    keras.config.set_dtype_policy(previous)
