"""Lessons 05-07 on the learner's runtime (issue 23): what their sources must hold.

Their behaviour is tested in tests/notebook/test_learner_runs.py (runs root, model choice),
test_timing.py (estimates) and tests/tools/test_runs.py (re-running a training cell: reuse=True);
these checks run the lessons' own cells against stand-ins (what a learner sees, not how a cell spells it).
"""

import json
import re
import types
from pathlib import Path

from fakes import NOTEBOOKS, cells, printed


def _code(name):
    lesson = cells(NOTEBOOKS / f"{name}.ipynb")
    return ["".join(cell["source"]) for cell in lesson if cell["cell_type"] == "code"]


def test_lesson05_shows_timings_and_an_estimate_before_it_trains_and_says_where_runs_go():
    # What the learner sees in the executed lesson (scripts/run_lessons.py), not how the cells
    # spell it: the timing table, then the estimate, then the training log, whose cell first
    # says where the run goes (learner_runs.runs_root's note).
    shown = [printed(cell) for cell in cells(NOTEBOOKS / "05_training.ipynb") if cell["cell_type"] == "code"]

    def first(marker):
        return next(i for i, text in enumerate(shown) if marker in text)

    training = first("Epoch 1/")
    assert first("ms/step  images/s  speed-up") < first("estimate: ") < training
    assert shown[training].startswith("runs go to ")


def test_lesson07_reads_back_the_comparison_its_full_mode_saves(tmp_path, capsys):
    """Run the cell that saves the comparison (as full mode would, into run_root) and the cell that
    looks for a full-size record: the second finds what the first wrote, next to its runs."""
    code = _code("07_attention_vs_shift")
    saving = next(source for source in code if "comparison_record(" in source)
    reading = next(source for source in code if "full_record_path" in source)
    record = {"rows": [], "data_source": "test", "epochs": 1, "machine": {"backend": "jax", "devices": ["cpu"]}}
    ex = types.SimpleNamespace(comparison_record=lambda *a, **k: record, format_table=lambda rows: "table")
    settings = types.SimpleNamespace(quick=False, seed=0, mode="full")
    learner_runs = types.SimpleNamespace(runs_root=lambda **k: types.SimpleNamespace(path=tmp_path))
    namespace = {"json": json, "Path": Path, "ex": ex, "settings": settings, "learner_runs": learner_runs, "rows": [],
                 "configs": {}, "data": None, "EPOCHS": 1, "run_root": tmp_path / "07_attention_vs_shift_full"}
    namespace["run_root"].mkdir()
    exec(saving, namespace)
    exec(reading, namespace)
    assert f"record: {(namespace['run_root'] / 'comparison.json').as_posix()}" in capsys.readouterr().out


def _before_tensorflow_loads(name):
    """The lesson's code up to the first statement that imports keras, tensorflow or shiftvit_lib
    (which loads TensorFlow), with IPython's %magic lines left out."""
    import ast

    code = re.sub(r"(?m)^(\s*)%.*", r"\1pass", "\n".join(_code(name)))
    loads = ("keras", "tensorflow", "shiftvit_lib")
    kept = []
    for statement in ast.parse(code).body:
        modules = [alias.name for alias in getattr(statement, "names", [])] + [getattr(statement, "module", None)]
        if isinstance(statement, ast.Import | ast.ImportFrom) and any(
                str(module).split(".")[0] in loads for module in modules):
            break
        kept.append(statement)
    return ast.unparse(ast.Module(body=kept, type_ignores=[]))


def test_lesson05_shares_the_gpu_between_its_tensorflow_and_its_data_parallel_child(monkeypatch):
    """TensorFlow takes the whole GPU by default; lesson 05's DataParallel child needs some of it. The
    lesson sets TF_FORCE_GPU_ALLOW_GROWTH=true (read when TensorFlow first uses a GPU; ignored on a CPU
    and by the other backends) before anything loads TensorFlow, over a value set before (Colab may set one),
    and the child JAX process gets an environment in which it takes only the GPU memory it uses, on a GPU
    and on a CPU."""
    import os
    import subprocess
    import sys

    monkeypatch.setenv("TF_FORCE_GPU_ALLOW_GROWTH", "false")
    exec(_before_tensorflow_loads("05_training"), {"RECIPE": "quick"})
    assert os.environ["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"
    cell = next(source for source in _code("05_training") if "DATA_PARALLEL_DEMO" in source)
    for accelerator in (True, False):
        seen = {}
        monkeypatch.setattr(subprocess, "run", lambda *a, seen=seen, **k: seen.update(k) or types.SimpleNamespace(
            stdout="ok", stderr=""))
        exec(cell, {"os": os, "sys": sys, "settings": types.SimpleNamespace(accelerator=accelerator)})
        env = seen["env"]
        assert env["KERAS_BACKEND"] == "jax" and env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
        assert ("xla_force_host_platform_device_count=2" in env.get("XLA_FLAGS", "")) is not accelerator
