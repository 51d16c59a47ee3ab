"""The benchmark script's bookkeeping (not its timings: those belong in benchmarks/, not in tests)."""

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _load_benchmark_module():
    spec = importlib.util.spec_from_file_location("benchmark_script", REPO / "benchmarks" / "benchmark.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_all_variant_keeps_only_the_speedups_that_helped():
    bench = _load_benchmark_module()
    speeds = {"plain": 100.0, "xla": 150.0, "mixed": 60.0, "roll": 110.0}
    train = {name: {"images_per_second": value} for name, value in speeds.items()}
    assert bench.combine_measured_speedups(train) == dict(
        jit=True, precision=None, shift_implementation="roll"
    )
    train["roll"]["images_per_second"] = 101.0  # within noise of plain: not a speed-up
    assert bench.combine_measured_speedups(train)["shift_implementation"] == "slice"
    train["mixed"]["images_per_second"] = 300.0
    train["roll"]["images_per_second"] = 90.0
    assert bench.combine_measured_speedups(train) == dict(
        jit=True, precision="mixed_bfloat16", shift_implementation="slice"
    )


def test_readme_tables_are_rebuilt_from_the_stored_records(tmp_path):
    bench = _load_benchmark_module()
    record = {
        "date": "2026-01-01",
        "machine": {"backend": "tensorflow", "keras": "3.0", "devices": ["/device:CPU:0"], "cpu_count": 2},
        "preset": "seed",
        "batch_size": 32,
        "steps": 4,
        "variants": {"plain": "XLA off, float32, slice shift", "xla": "XLA on, float32, slice shift"},
        "train": {"plain": {"images_per_second": 100.0, "step_ms": 320.0},
                  "xla": {"images_per_second": 150.0, "step_ms": 213.3}},
        "inference": {"plain": {"images_per_second": 300.0}, "xla": {"images_per_second": 450.0}},
        "shift_ops": [{"stage": 1, "shape": [32, 12, 12, 96], "function": "shift_channels (slice)",
                       "microseconds": 500.0}],
    }
    results = tmp_path / "results"
    results.mkdir()
    (results / "tensorflow_cpu.json").write_text(json.dumps([record]))
    # benchmarks/pipeline.py's records share the folder and have another shape: not read here.
    (results / "pipeline_cpu.json").write_text(json.dumps([{"date": "2026-01-01", "rows": []}]))
    readme = tmp_path / "README.md"
    readme.write_text("# Benchmarks\n\nintro\n\n<!-- results:start -->\nold table\n<!-- results:end -->\n\nafter\n")
    bench.write_readme_tables(results, readme)
    text = readme.read_text()
    assert "old table" not in text and text.startswith("# Benchmarks\n\nintro") and text.endswith("after\n")
    assert "| xla (XLA on, float32, slice shift) | 150 | 213.3 | 450 | 1.50x |" in text
    assert "**2026-01-01**, backend `tensorflow`" in text
