"""The benchmark script's bookkeeping (not its timings: those belong in benchmarks/, not in tests)."""

import itertools
import json

import numpy as np
import pytest
from fakes import load_script

import shiftvit_lib as sv

bench = load_script("benchmarks/benchmark.py")


@pytest.mark.parametrize("speeds, kept", [
    ({"plain": 100, "xla": 150, "mixed": 60, "roll": 110}, dict(jit=True, precision=None, shift_implementation="roll")),
    # roll within noise of plain: not a speed-up
    ({"plain": 100, "xla": 150, "mixed": 60, "roll": 101}, dict(jit=True, precision=None, shift_implementation="slice")),
    ({"plain": 100, "xla": 150, "mixed": 300, "roll": 90},
     dict(jit=True, precision="mixed_bfloat16", shift_implementation="slice")),
])
def test_all_variant_keeps_only_the_speedups_that_helped(speeds, kept):
    train = {name: {"images_per_second": float(value)} for name, value in speeds.items()}
    assert bench.combine_measured_speedups(train) == kept


def test_readme_tables_are_rebuilt_from_the_stored_records_with_their_fit_checks(tmp_path):
    # one record from before epochs were timed (one fit), one with its fit check, one of `--variants --check-fit`
    machine = {"backend": "tensorflow", "keras": "3.0", "devices": ["/device:CPU:0"], "cpu_count": 2}
    old = {"date": "2026-01-01", "machine": machine, "preset": "seed", "batch_size": 32, "steps": 4,
           "variants": {"plain": "XLA off, float32, slice shift", "xla": "XLA on, float32, slice shift"},
           "train": {"plain": {"images_per_second": 100.0, "step_ms": 320.0},
                     "xla": {"images_per_second": 150.0, "step_ms": 213.3}},
           "inference": {"plain": {"images_per_second": 300.0}, "xla": {"images_per_second": 450.0}},
           "shift_ops": [{"stage": 1, "shape": [8, 8, 8, 24], "function": "keras_io_shift", "microseconds": None,
                          "not_run": "too few channels"},
                         {"stage": 1, "shape": [32, 12, 12, 96], "function": "shift_channels", "microseconds": 500.0}]}
    checked = {**old, "date": "2026-01-02", "steps": 10, "epochs": 3, "warmup_steps": 3, "wall_seconds": 300.0,
               "cpu_seconds": 500.0, "fit_check": {
                   "benchmark_images_per_second": 880.0, "fit_images_per_second": 1000.0, "ratio": 0.88,
                   "tolerance": 0.1, "agrees": True, "basis": "cpu", "settings": "XLA on, float32, slice shift",
                   "steps_per_epoch": 10, "epochs": 3, "rounds": 2,
                   "per_cpu_second": {"benchmark": 495.0, "fit": 500.0, "ratio": 0.99, "agrees": True}}}
    check_only = {**checked, "variants": {}, "train": {}, "inference": {}}
    (tmp_path / "tensorflow_cpu.json").write_text(json.dumps([old, checked, check_only]))
    # benchmarks/pipeline.py's records share the folder and have another shape: not read here.
    (tmp_path / "pipeline_cpu.json").write_text(json.dumps([{"date": "2026-01-01", "rows": []}]))
    readme = tmp_path / "README.md"
    readme.write_text("# Benchmarks\n\nintro\n\n<!-- results:start -->\nold table\n<!-- results:end -->\n\nafter\n")
    bench.write_readme_tables(tmp_path, readme)  # the records' folder, with the README beside them
    text = readme.read_text()
    assert "old table" not in text and text.startswith("# Benchmarks\n\nintro") and text.endswith("after\n")
    assert text.count("| xla (XLA on, float32, slice shift) | 150 | 213.3 | 450 | 1.50x |") == 2
    assert "**2026-01-01**, backend `tensorflow`" in text and "4 timed steps in one fit" in text
    assert text.count("| per wall second | 880.0 | 1,000.0 | 0.880 | no |") == 2
    assert "3 epochs of 10 steps after a 3-step warm-up" in text
    assert "| per CPU second | 495.0 | 500.0 | 0.990 | yes |" in text and "verdict on the cpu basis" in text
    assert "| stage 1 (8, 8, 8, 24) | keras_io_shift | not run |" in text
    assert "| stage 1 (32, 12, 12, 96) | shift_channels | 500.0 |" in text


def test_agreement_check_fails_when_the_benchmark_is_off_by_more_than_ten_percent():
    # Planted: the benchmark's figure 11 % or 12 % off fit's, either way, must fail the check.
    figures = {1000.0: True, 1090.0: True, 910.0: True, 1110.0: False, 880.0: False}
    assert {figure: bench.check_agreement(figure, 1000.0)["agrees"] for figure in figures} == figures
    assert bench.check_agreement(1200.0, 1000.0)["ratio"] == 1.2
    with pytest.raises(ValueError, match="positive"):
        bench.check_agreement(0.0, 1000.0)


def _fake_measurements(monkeypatch, fit: list, benchmark: list) -> list[str]:
    """Stand-ins for the timed parts: each call of fit and of the benchmark takes the next (wall rates,
    CPU rates) per epoch from its list, in turn; returns the order of the calls."""
    calls, fits, benchmarks = [], itertools.cycle(fit), itertools.cycle(benchmark)

    def fake_fit(config, batch, steps, epochs):
        calls.append("fit")
        wall, cpu = next(fits)
        return {"images_per_second": float(np.median(wall[1:])), "epoch_images_per_second": wall,
                "epoch_images_per_cpu_second": cpu, "variant": dict(jit=False, precision=None,
                                                                     shift_implementation="slice")}

    def fake_training(config, variant, batch, steps, warmup, epochs=3):
        calls.append("benchmark")
        wall, cpu = next(benchmarks)
        return {"images_per_second": wall[1], "step_ms": 1000 * batch / wall[1], "epoch_images_per_second": wall,
                "epoch_images_per_cpu_second": cpu, "warmup_seconds": 0.0}

    monkeypatch.setattr(bench, "measure_fit", fake_fit)
    monkeypatch.setattr(bench, "measure_training", fake_training)
    monkeypatch.setattr(bench, "measure_shift_ops", lambda config, batch, repeats: [])
    return calls


FIT = [([10.0, 1000.0, 1000.0], [5.0, 500.0, 500.0])]  # fit at 1,000 images/s, 500 per CPU second


@pytest.mark.parametrize("wall, cpu, basis, status, printed", [
    (1000.0, 500.0, "wall", 0, "ratio 1.000"),
    (1150.0, 500.0, "wall", 1, "DISAGREE on the wall basis"),  # the benchmark 15 % fast
    (1150.0, 500.0, "cpu", 0, "ratio"),  # on the CPU basis the verdict reads the CPU-time figures: they agree
    (1000.0, 425.0, "cpu", 1, "DISAGREE on the cpu basis"),
])
def test_check_fit_exits_1_when_the_planted_benchmark_figure_is_off(monkeypatch, capsys, wall, cpu, basis,
                                                                    status, printed):
    _fake_measurements(monkeypatch, FIT, [([wall] * 3, [cpu] * 3)])
    assert bench.main(["--preset", "quick", "--batch-size", "8", "--steps", "2", "--epochs", "3", "--variants",
                       "--check-fit", "--no-save", "--check-basis", basis]) == status
    assert printed in capsys.readouterr().out


def test_fit_check_interleaves_the_runs_and_pools_their_epochs(monkeypatch):
    calls = _fake_measurements(monkeypatch, [([1.0, 100.0, 100.0],) * 2, ([1.0, 80.0, 80.0],) * 2],
                               [([95.0] * 3,) * 2, ([85.0] * 3,) * 2])
    result = bench.fit_check(sv.preset("quick"), 8, 2, 1, 3, rounds=2, basis="wall")
    assert calls == ["fit", "benchmark", "benchmark", "fit"]  # a drift in load weighs on both alike
    # fit: median of 100, 100, 80, 80 (each run's first epoch left out); benchmark: of 95 x2, 85 x2.
    assert result["fit_images_per_second"] == 90.0 and result["benchmark_images_per_second"] == 90.0
    assert result["agrees"] and result["settings"] == "XLA off, float32, slice shift"
    with pytest.raises(ValueError, match="basis"):
        bench.fit_check(sv.preset("quick"), 8, 2, 1, 3, basis="gpu")


def test_the_benchmark_figure_is_the_median_epoch_after_the_first_as_in_run_json():
    assert bench.steady_images_per_second([10.0, 300.0, 100.0, 200.0]) == 200.0
    assert bench.steady_images_per_second([10.0]) == 10.0
    assert bench.steady_images_per_second([]) is None
