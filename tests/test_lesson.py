"""Lesson set-up: the quick/full switch and the animation lookup."""

import pytest

from shiftvit_lib.lesson import animation_path, choose_mode, setup_lesson


def test_environment_variable_wins_over_hardware():
    assert choose_mode({"SHIFTVIT_QUICK": "1"}, accelerator=True) == (True, "SHIFTVIT_QUICK=1")
    assert choose_mode({"SHIFTVIT_QUICK": "0"}, accelerator=False) == (False, "SHIFTVIT_QUICK=0")


def test_default_depends_on_the_accelerator():
    assert choose_mode({}, accelerator=False)[0] is True
    assert choose_mode({}, accelerator=True)[0] is False


def test_bad_value_is_rejected():
    with pytest.raises(ValueError, match="SHIFTVIT_QUICK"):
        choose_mode({"SHIFTVIT_QUICK": "maybe"}, accelerator=False)


def test_setup_lesson_quick_uses_the_sample(monkeypatch):
    monkeypatch.setenv("SHIFTVIT_QUICK", "1")
    settings = setup_lesson(seed=3)
    assert settings.quick and settings.data_source == "sample" and settings.preset_name == "quick"
    assert "QUICK mode" in settings.describe()


def test_setup_lesson_full_reads_the_data_variable(monkeypatch):
    monkeypatch.setenv("SHIFTVIT_QUICK", "0")
    monkeypatch.setenv("SHIFTVIT_DATA", "/data/cifar10-jpeg.tar.gz")
    settings = setup_lesson()
    assert not settings.quick and settings.data_source == "/data/cifar10-jpeg.tar.gz"


def test_unknown_animation_lists_the_available_ones():
    with pytest.raises(FileNotFoundError, match="no animation named 'nope'"):
        animation_path("nope")
