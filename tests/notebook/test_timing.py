"""Lesson 05's device table and run estimate (shiftvit_lib/notebook/timing.py)."""

import pytest

from shiftvit_lib import preset
from shiftvit_lib.notebook import timing


def test_run_estimate_arithmetic():
    estimate = timing.RunEstimate(step_seconds=0.25, steps_per_epoch=156, epochs=100, startup_seconds=60)
    assert estimate.epoch_seconds == pytest.approx(39.0)
    assert estimate.run_seconds == pytest.approx(3960.0)
    text = estimate.describe(early_stop_epochs=(46, 68))
    assert "39 s per epoch" in text and "100 epochs + 60 s of start-up (compilation) = 66.0 min" in text
    assert "30.9 min to 45.2 min" in text  # 46 x 39 s + 60 s and 68 x 39 s + 60 s
    assert [timing.format_duration(s) for s in (0.35, 42, 450, 11520)] == ["0.3 s", "42 s", "7.5 min", "3.2 h"]
    with pytest.raises(ValueError, match="positive step time"):
        timing.RunEstimate(0.0, 156, 100)


def test_timing_table_reports_speed_ups_over_float32_without_xla():
    rows = [timing.StepTiming("float32", False, 64, 0.2), timing.StepTiming("float32", True, 64, 0.1),
            timing.StepTiming("mixed_float16", False, 64, 0.4), timing.StepTiming("mixed_float16", True, 64, 0.05)]
    table = timing.format_timings(rows).splitlines()
    assert table[1].split() == ["float32", "off", "64", "200.0", "320", "1.00x"]
    assert table[2].split()[-2:] == ["640", "2.00x"]
    assert table[3].split()[-1] == "0.50x" and table[4].split()[-1] == "4.00x"


@pytest.mark.slow
@pytest.mark.colab
def test_a_training_step_is_timed_on_this_device():
    (timed,) = timing.time_training_steps(preset("quick", batch_size=8), xla=(False,), steps=2, warmup=1)
    assert timed.precision == "float32" and timed.xla is False and timed.batch_size == 8
    assert 0 < timed.step_seconds < 30 and timed.startup_seconds > 0
    assert timed.images_per_second == pytest.approx(8 / timed.step_seconds)
    with pytest.raises(ValueError, match="warm-up"):
        timing.time_training_steps(preset("quick"), warmup=0)
