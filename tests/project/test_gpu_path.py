"""The GPU code path, proven on the CPU, for TensorFlow and JAX (issue 23).

A GPU run differs from a CPU run in three switches: mixed precision (float16 with loss
scaling on a T4, bfloat16 on an A100/L4/H100), XLA, and data parallelism over several
devices. ``gpu_path_checks.py`` runs each of them on the CPU in a fresh process per backend
(the backend and XLA's device count are fixed when Keras starts); these tests judge the
numbers it reports. Two CPU devices stand in for two GPUs: JAX with
``XLA_FLAGS=--xla_force_host_platform_device_count=2`` and ``keras.distribution.DataParallel``,
TensorFlow with two logical CPUs and ``MirroredStrategy``.
"""

import functools
import json
import math
from pathlib import Path

import pytest
from fakes import run_on_backend

# Two devices must reach one device's weights to within this fraction of how far one
# device moved them in three steps (summation order differs between the two: float32 noise).
SAME_WEIGHTS = 0.01
# A run on other batches, the deliberately different run, must differ by more than this fraction.
OTHER_WEIGHTS = 0.3


@functools.cache  # one subprocess per backend per session, whatever the test order
def _run_checks(backend: str) -> dict:
    output = run_on_backend(backend, Path(__file__).with_name("gpu_path_checks.py").read_text(), timeout=900)
    return json.loads(output.rpartition("REPORT ")[2])


# Function-scoped, with the reports cached above: a module-scoped parametrised fixture is set up
# again each time a random test order alternates between the backends (8 runs of a minute, not 2).
# Marked `colab` too: CI's second environment (Colab's Keras 3.13.2, TensorFlow 2.20, JAX 0.7.2)
# runs them although they are slow: about 170 CPU-seconds for both backends (measured in .venv-colab,
# 2026-11-26, on the shared 2-core machine).
@pytest.fixture(params=[pytest.param(backend, marks=[pytest.mark.slow, pytest.mark.colab])
                        for backend in ("tensorflow", "jax")])
def report(request):
    report = _run_checks(request.param)
    assert report["backend"] == request.param
    return report


def _falls(losses, by=0.8):
    return all(math.isfinite(v) for v in losses) and losses[-1] < by * losses[0]


def test_each_step_reports_its_own_loss(report):
    # The other checks read one loss per step; Keras before 3.15 returned from train_on_batch the
    # mean over all calls so far unless the metrics are reset (gpu_path_checks._step_loss).
    run = report["step_loss"]
    assert abs(run["first"] - run["direct"]) > 1e-3 * run["direct"], run  # two batches, two losses
    assert math.isclose(run["reported"], run["direct"], rel_tol=1e-4), (report["keras"], run)


def test_mixed_float16_scales_the_loss_and_learns(report):
    run = report["mixed_float16"]
    assert run["optimizer"] == "LossScaleOptimizer"  # Keras wraps the optimizer for float16
    assert run["loss_scale"] is not None and run["loss_scale"] > 1  # and the scale is in use
    assert run["dtypes"] == ["float16", "float32", "float32"]  # a block's computations, its variables, the logits
    assert _falls(run["losses"]), run["losses"]  # no NaN, and the loss falls on a batch it learns


def test_mixed_bfloat16_learns_without_loss_scaling(report):
    run = report["mixed_bfloat16"]
    assert run["optimizer"] == "AdamW" and run["loss_scale"] is None  # bfloat16 has float32's range
    assert run["dtypes"] == ["bfloat16", "float32", "float32"]
    assert _falls(run["losses"]), run["losses"]


def test_xla_compiles_the_step_and_computes_the_same_losses(report):
    run = report["xla"]
    assert run["jit_compile"] is True and run["plain_jit_compile"] is False
    assert _falls(run["xla_losses"])
    for compiled, plain in zip(run["xla_losses"], run["plain_losses"]):
        assert math.isclose(compiled, plain, rel_tol=1e-4), (run["xla_losses"], run["plain_losses"])


def test_two_devices_reach_the_weights_of_one(report):
    run = report["data_parallel"]
    assert report["devices"] == 2 and run["replicas"] == 2
    assert run["moved"] > 0
    assert run["two_vs_one"] < SAME_WEIGHTS * run["moved"], run
    assert run["other_vs_one"] > OTHER_WEIGHTS * run["moved"], run  # the comparison can tell runs apart


# A report as the checks print it (shortened), and mistakes each test must catch.
GOOD = {
    "backend": "jax", "keras": "3.13.2", "devices": 2,
    "step_loss": {"first": 2.91, "direct": 2.62, "reported": 2.62},
    "mixed_float16": {"optimizer": "LossScaleOptimizer", "loss_scale": 32768.0,
                      "dtypes": ["float16", "float32", "float32"], "losses": [2.8, 2.3, 1.7]},
    "mixed_bfloat16": {"optimizer": "AdamW", "loss_scale": None, "dtypes": ["bfloat16", "float32", "float32"],
                       "losses": [2.8, 2.3, 1.6]},
    "xla": {"jit_compile": True, "plain_jit_compile": False, "xla_losses": [2.79, 2.2], "plain_losses": [2.79, 2.2]},
    "data_parallel": {"replicas": 2, "moved": 4e-3, "two_vs_one": 4e-6, "other_vs_one": 8e-3},
}
MISTAKES = [
    # the running mean of the two steps, what Keras 3.13 reports without the reset
    (test_each_step_reports_its_own_loss, "step_loss", "reported", (2.91 + 2.62) / 2),
    (test_each_step_reports_its_own_loss, "step_loss", "first", 2.62),
    (test_mixed_float16_scales_the_loss_and_learns, "mixed_float16", "optimizer", "AdamW"),
    (test_mixed_float16_scales_the_loss_and_learns, "mixed_float16", "loss_scale", None),
    (test_mixed_float16_scales_the_loss_and_learns, "mixed_float16", "losses", [2.8, float("nan"), 1.7]),
    (test_mixed_float16_scales_the_loss_and_learns, "mixed_float16", "dtypes", ["float32", "float32", "float32"]),
    (test_mixed_bfloat16_learns_without_loss_scaling, "mixed_bfloat16", "losses", [2.8, 2.8, 2.7]),
    (test_mixed_bfloat16_learns_without_loss_scaling, "mixed_bfloat16", "dtypes", ["bfloat16", "float32", "bfloat16"]),
    (test_xla_compiles_the_step_and_computes_the_same_losses, "xla", "jit_compile", False),
    (test_xla_compiles_the_step_and_computes_the_same_losses, "xla", "xla_losses", [2.79, 2.3]),
    (test_two_devices_reach_the_weights_of_one, "data_parallel", "replicas", 1),
    (test_two_devices_reach_the_weights_of_one, "data_parallel", "two_vs_one", 1e-3),
    (test_two_devices_reach_the_weights_of_one, "data_parallel", "other_vs_one", 1e-6),
]


@pytest.mark.parametrize("check, part, field, wrong", MISTAKES)
def test_the_checks_pass_a_good_report_and_catch_a_wrong_one(check, part, field, wrong):
    check(GOOD)
    bad = json.loads(json.dumps(GOOD))
    bad[part][field] = wrong
    with pytest.raises(AssertionError):
        check(bad)
