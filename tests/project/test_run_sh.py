"""run.sh's set-up, run with fake apt-get, python and pip on PATH: `main` installs what it uses
(no Chromium), `test` adds Chromium, apt's and pip's output stays in build/setup.log (named when a
step fails), the venv sees no host package, and `main` says first what it will do."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from fakes import REPO, write_tree

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the fake apt-get runs without sudo only as root")

FAKE_APT = """#!/bin/bash
echo "apt-get $*" >> "$CALLS"
for i in $(seq 200); do echo "Unpacking libexample$i ..."; done
"""
# Python and the venv's python: `-c` answers set-up's questions, `-m venv` makes a fake venv,
# `-m pip` prints what pip prints (and fails when FAIL_PIP is set), scripts are only recorded.
FAKE_PYTHON = """#!/bin/bash
echo "python $*" >> "$CALLS"
case "$1" in
  -c) case "$2" in *sysconfig*) echo "$INCLUDE";; *torch*) exit 1;; esac;;
  -m) case "$2" in
        venv) mkdir -p "$3/bin"; cp "$0" "$3/bin/python";;
        pip) for i in $(seq 80); do echo "Collecting package$i"; done
             echo "ERROR: pip's dependency resolver does not currently take into account ..." >&2
             [ -z "$FAIL_PIP" ];;
      esac;;
esac
"""


@pytest.fixture()
def run_sh(tmp_path: Path):
    """`bash run.sh JOB` in a copy of run.sh beside fake tools; Pango, Cairo, gcc, fonts, Chromium all "missing"."""
    tools = {"apt-get": FAKE_APT, "python": FAKE_PYTHON, "pkg-config": "#!/bin/bash\nexit 1\n",
             "fc-list": "#!/bin/bash\nexit 0\n"}
    write_tree(tmp_path, {"include/Python.h": b"", "repo/run.sh": (REPO / "run.sh").read_bytes(),
                          **{f"bin/{name}": text.encode() for name, text in tools.items()}})
    for tool in (tmp_path / "bin").iterdir():
        tool.chmod(0o755)
    # Only the fakes and the shell's own tools: no real chromium, gcc or sudo can be found.
    (tmp_path / "system").mkdir()
    for tool in ("bash", "env", "mkdir", "cp", "seq", "tail", "sed", "grep", "dirname", "rm", "cat", "id"):
        if shutil.which(tool):
            (tmp_path / "system" / tool).symlink_to(shutil.which(tool))
    env = {"PATH": f"{tmp_path}/bin:{tmp_path}/system", "PYTHON": f"{tmp_path}/bin/python",
           "CALLS": f"{tmp_path}/calls", "INCLUDE": f"{tmp_path}/include", "HOME": str(tmp_path)}

    def run(job: str, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "run.sh", job], cwd=tmp_path / "repo", env={**env, **extra},
                              capture_output=True, text=True, timeout=60, check=False)

    return run


def test_main_installs_what_it_uses_quietly_says_what_it_will_do_and_names_a_failing_steps_log(run_sh, tmp_path):
    done = run_sh("main")
    assert done.returncode == 0, done.stdout + done.stderr
    calls = (tmp_path / "calls").read_text()
    install = next(line for line in calls.splitlines() if line.startswith("apt-get install"))
    assert "libpango1.0-dev" in install and "libcairo2-dev" in install and "chromium" not in install
    assert "python -m venv .venv" in calls and "--system-site-packages" not in calls
    lines = done.stdout.splitlines()
    assert lines[0].startswith("run.sh main: ") and " min" in lines[0]
    assert "Unpacking" not in done.stdout and "Collecting" not in done.stdout and "ERROR" not in done.stdout
    assert "ERROR" not in done.stderr and len(lines) < 25
    assert "Unpacking libexample200" in (tmp_path / "repo" / "build" / "setup.log").read_text()
    assert "build/site/index.html" in done.stdout and "committed" in done.stdout
    run_sh("setup")  # the tests' set-up adds Chromium
    install = [line for line in (tmp_path / "calls").read_text().splitlines() if line.startswith("apt-get install")]
    assert "chromium" not in install[0] and "chromium" in install[-1]
    done = run_sh("main", FAIL_PIP="1")  # a failing step names its log and shows its last lines
    assert done.returncode == 1
    assert "error: pip install failed" in done.stderr and "build/setup.log" in done.stderr
    assert "Collecting package80" in done.stderr and "Collecting package1\n" not in done.stderr
