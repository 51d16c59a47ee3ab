"""scripts/gpu_runs.sh, the one-call GPU run of issue 39, exercised on the CPU (tiny profile)."""

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COMMAND = ["bash", str(REPO / "scripts" / "gpu_runs.sh"), "--profile", "tiny"]


def _run(tmp_path: Path, budget_s: int) -> tuple[str, list[str]]:
    """The script run with ``budget_s``: its log and the names in its archive, the two files it returns."""
    out = tmp_path / "out"
    env = {**os.environ, "OUT": str(out), "GPU_RUNS_NO_INSTALL": "1",
           "PYTHON": sys.executable, "GPU_RUNS_ROOT": str(tmp_path / "root"), "GPU_BUDGET_S": str(budget_s),
           "KERAS_BACKEND": "jax"}
    result = subprocess.run(COMMAND, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert sorted(os.listdir(out)) == ["gpu_log.txt", "records.tar.gz"]  # two files come back
    with tarfile.open(out / "records.tar.gz") as archive:
        return (out / "gpu_log.txt").read_text(), archive.getnames()


@pytest.mark.slow
def test_gpu_runs_script_skips_what_its_budget_cannot_hold_and_still_returns_its_records(tmp_path):
    # A budget that leaves nothing after the reserve: every stage is skipped, and says so.
    log, names = _run(tmp_path, budget_s=15)
    for stage in ("bench", "seed", "strong", "cpu", "seed_profile", "strong_profile"):
        assert f"SKIPPED {stage}" in log
        assert f"gpu_cpu_tiny/{stage}_skipped.txt" in names
    assert "gpu_cpu_tiny/machine.txt" in names and "START" not in log


@pytest.mark.slow
def test_gpu_runs_script_runs_every_stage_and_packs_the_records(tmp_path):
    log, names = _run(tmp_path, budget_s=1500)
    assert "SKIPPED" not in log
    # On a busy 2-core CPU the tiny benchmark may outlast its 90 s guard; either way it ran.
    assert "END bench: exit status 0" in log or "STOPPED bench by the time guard" in log
    for profile in ("seed_profile", "strong_profile"):
        assert f"END {profile}: exit status 0" in log, log
    for stage in ("seed", "strong", "cpu"):
        assert f"END {stage}: exit status 0" in log, log
        assert {f"gpu_cpu_tiny/{stage}_run.json", f"gpu_cpu_tiny/{stage}_history.csv",
                f"gpu_cpu_tiny/{stage}_train.log"} <= set(names)
        assert stage == "cpu" or f"gpu_cpu_tiny/{stage}_profile/summary.json" in names  # one epoch profiled
    assert "test top-1" in log
