"""WarmUpCosine against the keras-io formula, and its serialization."""

import keras
import numpy as np
import pytest
from keras import ops
from reference import warmup_cosine

from shiftvit_lib import preset
from shiftvit_lib.schedules import WarmUpCosine


def test_matches_the_formula_everywhere():
    schedule = WarmUpCosine(1e-5, 1e-3, warmup_steps=150, total_steps=1000)
    for step in [0, 1, 75, 149, 150, 151, 500, 999, 1000, 1001, 5000]:
        got = float(ops.convert_to_numpy(schedule(step)))
        assert got == pytest.approx(warmup_cosine(step, 1e-5, 1e-3, 150, 1000), rel=1e-5, abs=1e-9)


def test_shape_of_the_curve():
    schedule = WarmUpCosine(1e-5, 1e-3, warmup_steps=10, total_steps=100)
    lrs = np.array([float(ops.convert_to_numpy(schedule(s))) for s in range(101)])
    assert lrs[0] == pytest.approx(1e-5)
    assert lrs.max() == pytest.approx(1e-3, rel=1e-4) and lrs.argmax() == 10
    assert np.all(np.diff(lrs[:11]) > 0) and np.all(np.diff(lrs[10:]) <= 1e-12)
    assert lrs[-1] == pytest.approx(0.0, abs=1e-9)


def test_from_recipe_uses_the_warmup_fraction():
    schedule = WarmUpCosine.from_recipe(preset("seed"), steps_per_epoch=157)
    assert schedule.total_steps == 15700 and schedule.warmup_steps == int(15700 * 0.15)


def test_serialization_round_trip():
    schedule = WarmUpCosine(1e-5, 1e-3, 15, 100)
    again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(schedule))
    assert again.get_config() == schedule.get_config()


@pytest.mark.parametrize(
    "args, message",
    [((1e-5, 1e-3, 100, 100), "warmup_steps"), ((1e-3, 1e-5, 10, 100), "lr_max"), ((1e-5, 1e-3, 0, 0), "total_steps")],
)
def test_bad_arguments(args, message):
    with pytest.raises(ValueError, match=message):
        WarmUpCosine(*args)
