"""Issue 35, case 3: no crash leaves a run unrecoverable.

The crash test kills training runs (``kill -9``: no clean-up, no exception handling) at
random points of their writes: before a file is renamed into place, right after, or after a
torn file was renamed into place (what a non-atomic writer, a disk error or a copy cut short
leaves). Every resume must finish the run, or name the damaged file; either way it recovers
from the last readable epoch and the history holds each epoch once.

The kill points are not drawn at random: an uncut run lists the files it renames into
place, and the chain kills one run at each of them in turn (a torn file where the target
is a model or a backup, else before or after the rename, alternately), so every write is
cut once. SHIFTVIT_CRASH_ROUNDS=2 goes round twice, with the other of before/after.

To keep it affordable (each process imports TensorFlow, about 15 s on the 2-core machine),
the processes form a chain: each one first resumes the run the previous one left killed,
then starts the next run and is killed in it.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from shiftvit_lib.tools.run_folder import (
    BACKUP_DIR,
    BACKUP_METADATA,
    BEST_MODEL,
    HISTORY_CSV,
    RUN_RECORD,
    RUN_SPEC,
    file_problem,
    read_history_csv,
)

REPO = Path(__file__).resolve().parents[2]
EPOCHS = 3
ROUNDS = int(os.environ.get("SHIFTVIT_CRASH_ROUNDS", "1"))
ARGUMENTS = ["train", "--preset", "quick", "--data", "sample", "--limit", "6", "--batch-size", "8",
             "--epochs", str(EPOCHS), "--no-jit", "--verbose", "0", "--seed", "3"]

# One process of the chain: resume argv[1] (if given), then train in argv[2] and die at the
# CRASH_AT-th rename of a file (CRASH_AT=0: never; the count of renames is printed).
CHAIN_STEP = textwrap.dedent(
    """
    import os, signal, sys
    from shiftvit_lib.__main__ import main

    resume, out, crash_at, how = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    arguments = {arguments!r}
    if resume != "-":
        print("=== RESUME", file=sys.stderr, flush=True)
        code = main([*arguments, "--out", resume])
        print(f"=== RESUMED {{code}}", file=sys.stderr, flush=True)
    real_replace, renames = os.replace, 0

    def replace(source, target, *args, **kwargs):
        global renames
        renames += 1
        if crash_at == 0:
            print(f"RENAME {{renames}} {{os.path.basename(target)}}", flush=True)
        if renames == crash_at:
            if how == "torn" and str(target).endswith((".keras", ".weights.h5")):
                with open(source, "r+b") as handle:  # half the file reaches its place
                    handle.truncate(os.path.getsize(source) // 2)
                real_replace(source, target, *args, **kwargs)
            elif how == "after":
                real_replace(source, target, *args, **kwargs)
            os.kill(os.getpid(), signal.SIGKILL)
        return real_replace(source, target, *args, **kwargs)

    os.replace = replace
    if out != "-":
        code = main([*arguments, "--out", out])
        print(f"RENAMES {{renames}} CODE {{code}}", flush=True)
    """
)


def chain_step(script: Path, resume: Path | None, out: Path | None, crash_at: int = 0,
               how: str = "before") -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run(
        [sys.executable, str(script), str(resume or "-"), str(out or "-"), str(crash_at), how],
        env=env, capture_output=True, text=True, timeout=900)


def expected_resume(folder: Path) -> tuple[int | None, list[str]]:
    """Where a resume of ``folder`` must start (the last readable state; None: a fresh or a
    finished run) and the files it must name as damaged, judged here independently."""
    if (folder / RUN_RECORD).exists() or not (folder / RUN_SPEC).exists():
        return None, []
    spec = json.loads((folder / RUN_SPEC).read_text())
    best = folder / BEST_MODEL
    damaged = [BEST_MODEL] if best.exists() and file_problem(best) else []
    if spec.get("fit_finished_at") and best.exists() and not damaged:
        return len(read_history_csv(folder / HISTORY_CSV).get("epoch", [])), damaged
    backup = folder / BACKUP_DIR
    try:
        recorded = int(json.loads((backup / BACKUP_METADATA).read_text())["epoch"])
    except (OSError, ValueError, KeyError):
        recorded = None
    saved = sorted((int(m.group(1)), path) for path in backup.glob("epoch-*.weights.h5")
                   if (m := re.fullmatch(r"epoch-(\d+)\.weights\.h5", path.name)))
    for epoch, path in reversed(saved):
        if recorded is not None and epoch > recorded:
            continue  # not yet named by the metadata: that epoch is trained again
        if file_problem(path) is None:
            return epoch, damaged
        damaged.append(path.name)
    return 0, damaged


def check_resumed(folder: Path, expected_epoch: int | None, damaged: list[str], stderr: str) -> None:
    if "already holds a finished run" in stderr:  # killed after run.json landed: the run was done
        assert "=== RESUMED 2" in stderr and expected_epoch is None, stderr[-3000:]
        assert json.loads((folder / RUN_RECORD).read_text())["epochs_run"] == EPOCHS
        return
    assert "=== RESUMED 0" in stderr, stderr[-3000:]
    record = json.loads((folder / RUN_RECORD).read_text())
    history = read_history_csv(folder / HISTORY_CSV)
    assert history["epoch"] == list(range(EPOCHS)), history  # every epoch once, in order
    assert record["epochs_run"] == EPOCHS
    if expected_epoch is not None:
        assert record["resumed_from_epoch"] == expected_epoch, (record["resumed_from_epoch"], expected_epoch)
    for name in damaged:  # named, by path, on one line, and in the record
        assert re.search(rf"warning: \S*{re.escape(name)} is damaged", stderr), stderr[-3000:]
        assert any(name in line for line in record.get("recovered", [])), record.get("recovered")
    assert not (folder / BACKUP_DIR).exists()
    assert not [p.name for p in folder.iterdir() if ".partial" in p.name]  # killed writes cleaned up


@pytest.mark.slow
def test_runs_killed_at_each_of_their_writes_all_resume(tmp_path):
    script = tmp_path / "chain_step.py"
    script.write_text(CHAIN_STEP.format(arguments=ARGUMENTS))
    uncut = chain_step(script, None, tmp_path / "uncut")
    assert uncut.returncode == 0, uncut.stderr[-3000:]
    renames = int(re.search(r"RENAMES (\d+) CODE 0", uncut.stdout).group(1))
    assert renames >= 3 * EPOCHS  # spec, history, best, backup, metadata... each renamed into place

    targets = re.findall(r"RENAME (\d+) (\S+)", uncut.stdout)
    assert len(targets) == renames, uncut.stdout
    plan = []  # (rename to die at, how): each write cut once per round
    for round_ in range(ROUNDS):
        for number, target in targets:
            torn = target.endswith((".keras", ".weights.h5")) and round_ == 0
            plan.append((int(number), "torn" if torn else ["before", "after"][(int(number) + round_) % 2]))

    previous, killed_at, summary = None, None, []
    for trial, (crash_at, how) in enumerate([*plan, (0, "before")]):
        out = tmp_path / f"trial{trial:02d}" if trial < len(plan) else None
        expected, damaged = expected_resume(previous) if previous else (None, [])
        step = chain_step(script, previous, out, crash_at, how)
        if previous is not None:
            check_resumed(previous, expected, damaged, step.stderr)
            summary.append((*killed_at, expected, damaged))
        if out is not None:
            assert step.returncode == -9, step.stderr[-3000:]  # killed at its planned write
        previous, killed_at = out, (crash_at, how)
    print("\n".join(f"killed at rename {at} ({how}): resumed from {expected}, damaged {damaged}"
                    for at, how, expected, damaged in summary))
    # The cuts reached several states (fresh, mid-run, finished), torn files among them.
    assert len({expected for _, _, expected, _ in summary}) >= 3, summary
    assert any(damaged for *_, damaged in summary), summary


@pytest.mark.slow
def test_a_torn_backup_is_named_and_the_run_resumes_from_the_state_before(tmp_path, capsys):
    # Case 3: a backup torn by a crash (a kill during a non-atomic write, a disk error) made
    # every resume stop with "Unable to synchronously open file (bad object header version
    # number)", naming no file; the only way out was --overwrite, losing every epoch.
    import keras
    from fakes import tiny_splits

    from shiftvit_lib.config import preset
    from shiftvit_lib.tools.runs import train

    class Disconnect(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                raise ConnectionError("simulated disconnect after the second epoch's backup")

    config, data = preset("quick", batch_size=32, early_stopping_patience=None), tiny_splits()
    with pytest.raises(ConnectionError):
        train(config, data, tmp_path, epochs=3, extra_callbacks=[Disconnect()], verbose=0, jit_compile=False)
    newest = max((tmp_path / BACKUP_DIR).glob("*.h5"), key=lambda path: path.stat().st_mtime_ns)
    newest.write_bytes(newest.read_bytes()[:4096])  # torn: its first 4 kB reached the disk
    capsys.readouterr()
    run = train(config, data, tmp_path, epochs=3, verbose=0, jit_compile=False)
    err = capsys.readouterr().err
    assert re.search(rf"warning: {re.escape(str(newest))} is damaged \(.+\); it is kept as ", err), err
    assert run.record["resumed_from_epoch"] == 1  # the backup before the torn one
    assert run.history["epoch"] == [0, 1, 2] and run.record["recovered"]


# --------------------------------------------------------------------------- Ctrl-C (issue 48)
SIGINT_TRIES = int(os.environ.get("SHIFTVIT_SIGINT_TRIES", "20"))
# One process of the Ctrl-C chain: resume argv[1] (if given), then start a run in argv[2],
# which the test interrupts with SIGINT at a random moment.
SIGINT_STEP = textwrap.dedent(
    """
    import sys, time
    from shiftvit_lib.__main__ import main

    resume, out, arguments = sys.argv[1], sys.argv[2], {arguments!r}
    if resume != "-":
        print(f"=== RESUMED {{main([*arguments, '--out', resume])}}", file=sys.stderr, flush=True)
    if out != "-":
        print("=== START", file=sys.stderr, flush=True)
        started = time.perf_counter()
        code = main([*arguments, "--out", out])
        print(f"=== DONE {{code}} after {{time.perf_counter() - started:.2f}} s", file=sys.stderr, flush=True)
    """
)


def sigint_step(script: Path, resume: Path | None, out: Path | None, delay: float | None) -> tuple[int, str]:
    """Run a step; ``delay`` seconds after it starts its run, send SIGINT (None: never)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
    process = subprocess.Popen([sys.executable, str(script), str(resume or "-"), str(out or "-")],
                               env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    lines = []
    for line in process.stderr:  # until the run starts (the resume before it is never interrupted)
        lines.append(line)
        if line.startswith("=== START"):
            if delay is not None:
                time.sleep(delay)
                process.send_signal(signal.SIGINT)
            break
    lines.append(process.communicate(timeout=900)[1])
    return process.returncode, "".join(lines)


@pytest.mark.slow
def test_ctrl_c_at_random_moments_stops_with_the_resume_hint_and_every_resume_finishes(tmp_path):
    script = tmp_path / "sigint_step.py"
    script.write_text(SIGINT_STEP.format(arguments=ARGUMENTS))
    code, err = sigint_step(script, None, tmp_path / "uncut", None)
    assert code == 0, err[-3000:]
    length = float(re.search(r"=== DONE 0 after ([\d.]+) s", err).group(1))
    rng, previous, moments = random.Random(48), None, []
    for trial in range(SIGINT_TRIES + 1):
        out = tmp_path / f"try{trial:02d}" if trial < SIGINT_TRIES else None
        delay = rng.uniform(0, 0.9 * length) if out else None
        code, err = sigint_step(script, previous, out, delay)
        assert "Traceback" not in err and "SystemError" not in err, err[-3000:]
        if previous is not None:  # the run interrupted before resumes to the end
            assert "=== RESUMED 0" in err, err[-3000:]
            assert read_history_csv(previous / HISTORY_CSV)["epoch"] == list(range(EPOCHS))
            assert json.loads((previous / RUN_RECORD).read_text())["epochs_run"] == EPOCHS
        if out is not None:
            hint = f"stopped (Ctrl-C); run the same command again to resume {out} from its last finished epoch"
            assert "=== DONE 130" in err and hint in err, err[-3000:]
            moments.append(round(delay, 2))
        previous = out
    print(f"interrupted {len(moments)} runs of {length:.1f} s at {moments} s")
