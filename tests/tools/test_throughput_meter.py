"""The training run's own speed figure (``ThroughputMeter``, issue 39): it times computed steps.

On JAX, or on any GPU, a step returns before it is computed; when no callback runs after each
step, Keras never waits, and validation (where the meter's clock stopped) began while steps
were still queued: 15,000-40,000 images/s were logged on a 2-core CPU that trains about 400.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import keras

from shiftvit_lib.tools.runs import ThroughputMeter

DEVICE_SECONDS = 0.2  # how long the stand-in device still computes when validation begins


def _epoch_rate(monkeypatch, waits: bool) -> float:
    def wait_for_the_device(value):
        time.sleep(DEVICE_SECONDS)  # the queued steps finish, then the value is read
        return value

    monkeypatch.setattr(keras.ops, "convert_to_numpy", wait_for_the_device if waits else (lambda value: value))
    meter = ThroughputMeter(images_per_epoch=1000)
    meter.set_model(SimpleNamespace(optimizer=SimpleNamespace(iterations=7)))
    logs: dict = {}
    meter.on_epoch_begin(0)
    meter.on_test_begin()  # validation starts: the training steps are only dispatched
    meter.on_epoch_end(0, logs)
    return logs["images_per_second"]


def test_the_meter_waits_for_the_dispatched_steps_before_stopping_its_clock(monkeypatch):
    assert _epoch_rate(monkeypatch, waits=True) <= 1000 / DEVICE_SECONDS
    # A meter that read no value from the device would log the dispatch rate, far higher.
    assert _epoch_rate(monkeypatch, waits=False) > 10 * 1000 / DEVICE_SECONDS
