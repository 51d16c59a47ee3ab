"""WarmUpCosine against the keras-io formula, and its serialization."""

import keras
import numpy as np
import pytest
from keras import ops
from reference import warmup_cosine

from shiftvit_lib import preset
from shiftvit_lib.schedules import WarmUpCosine


@pytest.mark.parametrize("warmup, total", [(150, 1000), (10, 100), (0, 100)])
def test_matches_the_formula_everywhere_and_rises_then_falls_to_zero(warmup, total):
    steps = np.arange(total + 20)  # a schedule called beyond its end gives 0
    lrs = ops.convert_to_numpy(WarmUpCosine(1e-5, 1e-3, warmup_steps=warmup, total_steps=total)(steps))
    np.testing.assert_allclose(lrs, [warmup_cosine(s, 1e-5, 1e-3, warmup, total) for s in steps], rtol=1e-5, atol=1e-9)
    assert lrs[0] == pytest.approx(1e-5 if warmup else 1e-3)
    assert lrs.max() == pytest.approx(1e-3, rel=1e-4) and lrs.argmax() == warmup
    assert np.all(np.diff(lrs[: warmup + 1]) > 0) and np.all(np.diff(lrs[warmup:]) <= 1e-12)
    assert lrs[total] == pytest.approx(0.0, abs=1e-9) and not lrs[total + 1 :].any()


def test_from_recipe_uses_the_warmup_fraction_and_survives_serialization():
    schedule = WarmUpCosine.from_recipe(preset("seed"), steps_per_epoch=157)
    assert schedule.total_steps == 15700 and schedule.warmup_steps == int(15700 * 0.15)
    again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(schedule))
    assert again.get_config() == schedule.get_config()


@pytest.mark.parametrize(
    "args, message",
    [((1e-5, 1e-3, 100, 100), "warmup_steps"), ((1e-3, 1e-5, 10, 100), "lr_max"), ((1e-5, 1e-3, 0, 0), "total_steps")],
)
def test_bad_arguments(args, message):
    with pytest.raises(ValueError, match=message):
        WarmUpCosine(*args)
