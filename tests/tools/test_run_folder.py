"""shiftvit_lib.tools.run_folder: a folder is claimed once (checked, then locked), and a claim
that fails before a run writes anything leaves the disk as it was. The folder's life with a
training in it (resume, backups, damaged files, the record) is tested through train in test_runs.py."""

from __future__ import annotations

import pytest
from fakes import tiny_splits

from shiftvit_lib import preset
from shiftvit_lib.tools import run_folder
from shiftvit_lib.tools.files import LOCK_FILE
from shiftvit_lib.tools.run_folder import Claim, RunFolderError, claim, open_run_folder, run_spec


def test_a_failed_claim_removes_only_the_folders_it_made(tmp_path):
    with pytest.raises(KeyError), claim(tmp_path / "runs" / "new"):  # e.g. data that would not load
        assert (tmp_path / "runs" / "new" / LOCK_FILE).exists()
        raise KeyError("the data would not load")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "kept").mkdir()
    with pytest.raises(KeyError), claim(tmp_path / "kept"):
        raise KeyError("again")
    assert [path.name for path in (tmp_path / "kept").iterdir()] == [LOCK_FILE]  # not made by the claim


def test_a_claim_checks_once_and_a_held_claim_is_not_checked_again(tmp_path, monkeypatch):
    checked = []
    check = run_folder.check_run_folder
    monkeypatch.setattr(run_folder, "check_run_folder", lambda out, **kw: checked.append(out) or check(out, **kw))
    with claim(tmp_path / "run") as held:
        assert held == Claim(tmp_path / "run", "new")
        with claim(held) as again:
            assert again is held
        config, data = preset("quick"), tiny_splits()
        folder = open_run_folder(held, run_spec(config, data, epochs=1), config)
    assert checked == [tmp_path / "run"] and folder.spec["epochs"] == 1
    with pytest.raises(RunFolderError, match="is a file"):
        claim(tmp_path / "run" / "run_spec.json" / "below").__enter__()
