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


def test_show_source_returns_the_library_code_itself():
    from shiftvit_lib.lesson import show_source
    from shiftvit_lib.shift import shift_channels

    shown = show_source(shift_channels)
    assert "def shift_channels(" in shown.data
    assert "ops.concatenate" in shown.data
    with pytest.raises(ValueError, match="at least one"):
        show_source()


def test_show_animation_embeds_the_gif_as_html_that_renders_everywhere():
    import base64
    import re

    from shiftvit_lib.lesson import animation_path, show_animation

    shown = show_animation("shift_operation", width=480)
    html = shown._repr_html_()
    match = re.fullmatch(r'<img src="data:image/gif;base64,([A-Za-z0-9+/=]+)" alt="[^"]+" width="480">', html)
    assert match, html[:120]
    assert base64.b64decode(match.group(1)) == animation_path("shift_operation").read_bytes()


def test_channel_grids_show_where_each_value_went():
    from shiftvit_lib.lesson import format_channels, numbered_feature_map
    from shiftvit_lib.shift import shift_channels

    x = numbered_feature_map(4, height=3, width=3)
    assert x.shape == (1, 3, 3, 4) and x[0, :, :, 2].tolist() == [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    text = format_channels(shift_channels(x, num_div=4), ["left", "right", "up", "down"])
    assert text.splitlines() == [
        " left    right      up      down ",
        " 2 3 0    0 1 2    4 5 6    0 0 0",
        " 5 6 0    0 4 5    7 8 9    1 2 3",
        " 8 9 0    0 7 8    0 0 0    4 5 6",
    ]
    with pytest.raises(ValueError, match="one title per channel"):
        format_channels(x, ["only one"])
    with pytest.raises(ValueError, match=r"\(1, H, W, C\)"):
        format_channels(x[0], ["a", "b", "c", "d"])
