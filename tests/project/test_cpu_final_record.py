"""scripts/cpu_final_record.py: the test split read once, for the run the validation split chose."""

import dataclasses
import json

import pytest
from fakes import load_script, tiny_splits

from shiftvit_lib import build_shiftvit, preset
from shiftvit_lib.recipe import evaluate

final_script = load_script("scripts/cpu_final_record.py")


def test_main_reads_the_test_split_once_for_a_finished_run_and_records_it(tmp_path, capsys, monkeypatch):
    # A model right on every test image and wrong on every validation image: a record that took its
    # figures from the validation split (the search's 'test') would show 0.
    model = build_shiftvit(preset("quick"))
    data = tiny_splits(n_val=20, n_test=20)
    guess = lambda x: model.predict(x, verbose=0).argmax(-1)  # noqa: E731
    data = dataclasses.replace(data, y_test=guess(data.x_test), y_val=(guess(data.x_val) + 1) % 10)
    run, log = tmp_path / "run", tmp_path / "reads.jsonl"
    run.mkdir()
    search_record = '{"best_val_accuracy": 0.5, "train_seconds": 12.0, "test": {"accuracy": 0.5}}'
    (run / "run.json").write_text(search_record)
    with pytest.raises(SystemExit):
        final_script.main([str(run), "--data", "x", "--out", str(tmp_path / "final")], log=log)
    assert "not a finished run (no history.csv, best.keras)" in capsys.readouterr().err
    (run / "history.csv").write_text("epoch\n0\n")
    model.save(run / "best.keras")
    monkeypatch.setattr(final_script, "load_cifar10", lambda *args, **kwargs: data)
    out = tmp_path / "final"  # a record there already: the test set was read for it
    out.mkdir()
    (out / "run.json").write_text("{}")
    with pytest.raises(SystemExit):
        final_script.main([str(run), "--data", "x", "--out", str(out)], log=log)
    assert "the test set was read for it already" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["run.json"] and (out / "run.json").read_text() == "{}"
    assert final_script.main([str(run), "--data", "x", "--out", str(tmp_path / "first")], log=log) == 0
    record = json.loads((tmp_path / "first" / "run.json").read_text())
    assert (record["test"]["accuracy"], record["test"]["images"]) == (1.0, 20), "the test split's, not validation's"
    flipped = evaluate(model, data, "test", tta=True)  # beside the plain figure
    assert record["test_flip_tta"]["accuracy"] == pytest.approx(flipped["accuracy"])
    assert record["best_val_accuracy"] == 0.5 and record["train_seconds"] == 12.0  # the search's, kept
    assert "chosen on the validation split" in record["data_source"]
    assert (run / "run.json").read_text() == search_record, "the search record itself must stay as it was"
    (entry,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert entry["test_top1"] == 1.0 and entry["script"] == "scripts/cpu_final_record.py"
    assert entry["model_sha256"] == final_script.guard_test_split.model_sha256(run / "best.keras")
    assert {"time", "commit", "model"} <= set(entry)
    with pytest.raises(SystemExit, match="read for this model already"):  # another --out: still refused
        final_script.main([str(run), "--data", "x", "--out", str(tmp_path / "second")], log=log)
    assert not (tmp_path / "second").exists() and len(log.read_text().splitlines()) == 1
    reads = final_script.guard_test_split.reads()  # the repository's own log of the reads so far
    assert reads and all({"time", "commit", "script", "model", "test_top1"} <= set(read) for read in reads)
