"""scripts/cpu_final_record.py: the test split read once, for the run the validation split chose."""

import dataclasses
import json

import pytest
from fakes import load_script, tiny_splits

from shiftvit_lib import build_shiftvit, preset
from shiftvit_lib.recipe import evaluate

final_script = load_script("scripts/cpu_final_record.py")


@pytest.fixture(scope="module")
def model_and_data():
    """A model that is right on every test image and wrong on every validation image.

    A record that took its figures from the validation split (the search's 'test') would show 0.
    """
    model = build_shiftvit(preset("quick"))
    data = tiny_splits(n_val=20, n_test=20)
    guess = lambda x: model.predict(x, verbose=0).argmax(-1)  # noqa: E731
    return model, dataclasses.replace(data, y_test=guess(data.x_test), y_val=(guess(data.x_val) + 1) % 10)


def test_final_record_reads_the_test_split_plain_and_with_tta_beside_it(model_and_data):
    model, data = model_and_data
    search_record = {"best_val_accuracy": 0.5, "train_seconds": 12.0, "test": {"accuracy": 0.5}}
    record = final_script.final_record(search_record, model, data)
    assert record["test"]["accuracy"] == 1.0, "the 'test' figure must come from the test split, not validation"
    assert record["test"]["images"] == 20
    flipped = evaluate(model, data, "test", tta=True)
    assert record["test_flip_tta"]["accuracy"] == pytest.approx(flipped["accuracy"])
    assert record["best_val_accuracy"] == 0.5 and record["train_seconds"] == 12.0  # the search's, kept
    assert "chosen on the validation split" in record["data_source"]
    assert search_record["test"] == {"accuracy": 0.5}, "the search record itself must stay as it was"
    reads = final_script.guard_test_split.reads()  # the repository's log of the reads so far
    assert reads and all({"time", "commit", "script", "model", "test_top1"} <= set(read) for read in reads)


def test_main_refuses_an_unfinished_run_and_any_second_look_at_the_test_set_and_logs_the_read(
        tmp_path, capsys, monkeypatch, model_and_data):
    model, data = model_and_data
    run, log = tmp_path / "run", tmp_path / "reads.jsonl"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"best_val_accuracy": 0.5, "train_seconds": 1.0}))
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
    (entry,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert entry["test_top1"] == 1.0 and entry["script"] == "scripts/cpu_final_record.py"
    assert entry["model_sha256"] == final_script.guard_test_split.model_sha256(run / "best.keras")
    assert {"time", "commit", "model"} <= set(entry)
    with pytest.raises(SystemExit, match="read for this model already"):  # another --out: still refused
        final_script.main([str(run), "--data", "x", "--out", str(tmp_path / "second")], log=log)
    assert not (tmp_path / "second").exists() and len(log.read_text().splitlines()) == 1
