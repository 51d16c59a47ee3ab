"""The practice copies (notebooks/practice/) are the lessons with their outputs cleared (issue 36)."""

import pytest
from fakes import cells, load_script

make_practice = load_script("scripts/make_practice.py")
LESSONS = make_practice.lessons()


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_a_practice_copy_is_the_lesson_without_outputs(lesson):
    original = cells(lesson)
    practice = cells(make_practice.PRACTICE / lesson.name)
    code = [c for c in practice if c["cell_type"] == "code"]
    assert code and all(c["outputs"] == [] and c["execution_count"] is None for c in code)
    assert [c["source"] for c in code] == [c["source"] for c in original if c["cell_type"] == "code"]
    assert f"/blob/main/notebooks/practice/{lesson.name})" in "".join(practice[0]["source"])  # its badge opens it
    # the lesson links its practice copy, with its own Colab badge
    assert f"/blob/main/notebooks/practice/{lesson.name}" in "".join(original[0]["source"])


def test_every_lesson_has_an_up_to_date_practice_copy_and_a_stale_one_is_reported(tmp_path, monkeypatch, capsys):
    assert len(LESSONS) == 9 and make_practice.main(["--check"]) == 0, capsys.readouterr().out
    monkeypatch.setattr(make_practice, "PRACTICE", tmp_path)
    assert make_practice.main(["--check"]) == 1
    assert "missing or out of date" in capsys.readouterr().out
    assert make_practice.main([]) == 0 and make_practice.main(["--check"]) == 0
    (tmp_path / "00_overview.ipynb").write_text("{}")
    assert make_practice.main(["--check"]) == 1
