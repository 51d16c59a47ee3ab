"""Tests of the Manim animations in animations/.

* The NumPy shift that drives the ShiftOperation scene matches the official
  formula, and the receptive-field scene's numbers are the L1 balls it claims.
* Each scene renders headless at low quality to an MP4 with frames.
* Each scene's last frame, re-rendered and in the committed MP4, matches a stored
  control image (frames, not bytes, as the READMEs say), and that comparison
  is strict enough to fail when the shift goes the wrong way.
* The GIF conversion stays under 1 MB, and the committed GIFs/MP4s exist.

Rendering needs manim (``pip install "manim==0.22.0"``, the ``anim`` extra); those tests skip
only when manim is not installed.  Refresh the control images after an
intended visual change with ``python animations/render.py --write-controls``.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from fakes import REPO
from PIL import Image

CONTROLS = REPO / "tests" / "controls"
SCENES = {
    "ShiftOperation": "shift_operation",
    "ReceptiveField": "receptive_field",
    "ReceptiveFieldStages": "receptive_field_stages",
}
LOW_QUALITY_SIZE = (480, 854)  # (height, width) of Manim's -ql

# A frame "matches" its control when the pixels agree on average (mean absolute difference) and almost
# no pixel differs strongly (share of pixels whose largest channel difference is > CHANGED_LEVEL).
# Tolerances absorb anti-aliasing and font rasterisation differences between machines, not a changed
# picture: a shift in the wrong direction changes several percent of the pixels. The MP4 is lossy
# (yuv420p), so its decoded frame gets more slack.
LIMITS = {"frame": (2.0, 0.004), "mp4": (4.0, 0.02)}  # (mean difference, changed share)
CHANGED_LEVEL = 64


@pytest.fixture(scope="module")
def manim():
    """Import manim (and animations.render); skip the test only when manim is not installed at all.

    A manim that is installed but fails to import (e.g. a missing system
    library) raises, so CI fails loudly instead of silently skipping.
    """
    if importlib.util.find_spec("manim") is None:
        pytest.skip('manim is not installed: pip install "manim==0.22.0" (the anim extra)')
    from animations import render

    render.load_scene("ShiftOperation")  # imports manim as render.py does (pydub's ffmpeg warning hidden)


def frame_difference(frame: np.ndarray, control: np.ndarray) -> tuple[float, float]:
    """(mean absolute difference, fraction of strongly changed pixels) of two RGB images."""
    assert frame.shape == control.shape, f"frame {frame.shape} vs control {control.shape}"
    diff = np.abs(frame.astype(np.int16) - control.astype(np.int16))
    return float(diff.mean()), float((diff.max(axis=2) > CHANGED_LEVEL).mean())


CONTROL_NAME = "{stem}_last_frame.png"


def assert_matches(frame: np.ndarray, control: np.ndarray, limits: str = "frame") -> None:
    mean, changed = frame_difference(frame, control)
    assert mean < LIMITS[limits][0] and changed < LIMITS[limits][1], (mean, changed)


def load_control(stem: str) -> np.ndarray:
    path = CONTROLS / CONTROL_NAME.format(stem=stem)
    assert path.exists(), f"missing control image {path}; run: python animations/render.py --write-controls"
    return np.asarray(Image.open(path).convert("RGB"))


# ---------------------------------------------------------------- the maths shown


def test_the_scenes_shift_is_the_official_formula_moving_in_the_named_directions(manim):
    from reference import shift_nhwc

    from animations.shift_operation import NUM_DIV, cell_motion, example_feature_map, shift_feat

    rng = np.random.default_rng(0)
    for num_div, channels, shift_pixel in [(6, 6, 1), (12, 24, 1), (4, 10, 2), (5, 5, 1)]:
        x = rng.normal(size=(7, 6, channels))
        np.testing.assert_array_equal(shift_feat(x, num_div, shift_pixel), shift_nhwc(x[None], num_div, shift_pixel)[0])
    x = example_feature_map()
    y = shift_feat(x, NUM_DIV, 1)
    # The per-channel (d_row, d_col) the scene animates, read back from the output: left, right, up,
    # down, then the channels left in place.
    offsets = [cell_motion(x[:, :, ch], y[:, :, ch])[1] for ch in range(x.shape[2])]
    assert offsets == [(0, -1), (0, 1), (-1, 0), (1, 0), (0, 0), (0, 0)]


def test_the_receptive_field_is_the_l1_ball_of_radius_k_and_the_merges_widen_it(manim):
    from animations.receptive_field import BLOCKS, GRID, reach_by_block
    from animations.receptive_field_stages import DEPTHS, PATCH, POINT, reach_through_stages

    first = reach_by_block(GRID, BLOCKS)
    rows, cols = np.indices((GRID, GRID))
    distance = np.abs(rows - GRID // 2) + np.abs(cols - GRID // 2)
    for k in range(BLOCKS + 1):
        reached = (first >= 0) & (first <= k)
        np.testing.assert_array_equal(reached, distance <= k)
        assert reached.sum() == 2 * k * k + 2 * k + 1
    assert (first[distance > BLOCKS] == -1).all()
    # Through the stages, the followed token's field: its patch, a diamond of tokens, then the merges widen it.
    first = reach_through_stages()
    counts = [int(((first >= 0) & (first <= stage)).sum()) for stage in range(len(DEPTHS) + 1)]
    k = DEPTHS[0]
    assert counts[0] == PATCH * PATCH  # the patch embedding: the token's own 4x4 pixels
    assert counts[1] == (2 * k * k + 2 * k + 1) * PATCH * PATCH  # an L1 ball of tokens, in pixels
    assert counts == sorted(counts) and counts[-1] == 32 * 32  # nested, then the whole image
    assert first[POINT] == 0
    # The merge is what widens it: the same 4 blocks all at the first resolution reach less.
    flat = reach_through_stages(depths=(DEPTHS[0] + DEPTHS[1],))
    assert int((flat >= 0).sum()) < counts[2] * 0.7


@pytest.mark.parametrize("bad, words", [({"num_div": 7}, "num_div must be 1..channels"),
                                        ({"shift_pixel": 5}, "shift_pixel must be 1..size - 1"),
                                        ({"size": 12}, "size must be 2..9")])
def test_shift_scene_checks_its_parameters(manim, bad, words):
    from animations.shift_operation import ShiftOperation

    with pytest.raises(ValueError, match=words):
        ShiftOperation(**bad)


# ---------------------------------------------------------------- rendering


@pytest.fixture(scope="module")
def rendered(manim, tmp_path_factory):
    """Every scene rendered once at low quality: {name: render.Rendered (mp4, gif, last frame)}."""
    from animations import render

    out = tmp_path_factory.mktemp("rendered")
    return {
        name: render.render_scene(name, "low", mp4_path=out / f"{stem}.mp4", gif_path=out / f"{stem}.gif")
        for name, stem in SCENES.items()
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SCENES))
def test_each_scene_renders_an_mp4_and_a_small_looping_gif_that_end_on_its_control(rendered, name):
    from animations.render import GIF_MAX_BYTES, GIF_WIDTH, read_video

    mp4, control = rendered[name].mp4, load_control(SCENES[name])
    assert mp4.exists() and mp4.stat().st_size > 10_000
    frames, fps = read_video(mp4)
    assert fps == 15 and len(frames) >= 15 * 5, "-ql is 15 fps; scenes run for several seconds"
    assert frames[0].shape[:2] == LOW_QUALITY_SIZE
    # It is an animation, not a still: the picture changes a lot from start to end.
    assert frame_difference(frames[0], frames[-1])[1] > 0.05
    assert_matches(rendered[name].last_frame, control)
    assert_matches(frames[-1], control, "mp4")  # the video itself ends on that picture
    gif = rendered[name].gif
    assert 0 < gif.stat().st_size < GIF_MAX_BYTES
    with Image.open(gif) as image:
        assert image.format == "GIF" and image.is_animated and image.n_frames > 10
        assert image.info.get("loop") == 0  # loops forever
        assert image.size == (GIF_WIDTH, round(GIF_WIDTH * LOW_QUALITY_SIZE[0] / LOW_QUALITY_SIZE[1]))
        image.seek(image.n_frames - 1)
        final = np.asarray(image.convert("RGB"))
    # The GIF's final picture is the scene's final frame (scaled, palette-reduced).
    expected = np.asarray(Image.fromarray(rendered[name].last_frame).resize(image.size, Image.Resampling.LANCZOS))
    assert frame_difference(final, expected)[0] < 6.0


@pytest.mark.slow
def test_the_shift_scene_draws_the_formulas_output_and_its_control_rejects_a_wrong_direction(rendered, monkeypatch):
    """ShiftOperation(size=..., channels=..., num_div=..., shift_pixel=...) draws that shift; with left and
    right swapped in the formula, the scene draws the broken shift and its last frame fails the control."""
    from animations import render, shift_operation
    from animations.shift_operation import NUM_DIV, SHIFT_PIXEL, example_feature_map, shift_feat

    np.testing.assert_array_equal(rendered["ShiftOperation"].scene.shown,
                                  shift_feat(example_feature_map(), NUM_DIV, SHIFT_PIXEL))
    other = render.render_scene("ShiftOperation", "low", size=6, channels=8, num_div=4, shift_pixel=2)
    np.testing.assert_array_equal(other.scene.shown, shift_feat(example_feature_map(6, 8), 4, 2))

    def swapped_left_right(x, num_div, shift_pixel=1):
        g = x.shape[-1] // num_div
        order = np.r_[g : 2 * g, 0:g, 2 * g : x.shape[-1]]  # feed channel group 1 to the "left" slot
        return shift_feat(x[..., order], num_div, shift_pixel)[..., order]

    monkeypatch.setattr(shift_operation, "shift_feat", swapped_left_right)
    broken = render.render_scene("ShiftOperation", quality="low")  # last frame only: fast
    np.testing.assert_array_equal(broken.scene.shown, swapped_left_right(example_feature_map(), NUM_DIV))
    mean, changed = frame_difference(broken.last_frame, load_control("shift_operation"))
    assert changed > 2 * LIMITS["frame"][1], (mean, changed)  # rejected by a wide margin


@pytest.mark.parametrize("stem", sorted(SCENES.values()))
def test_committed_renders_are_small_and_end_on_their_control(stem):
    """The committed MP4 (medium quality) ends on the picture a re-render ends on: frames, not bytes."""
    gif = REPO / "shiftvit_lib" / "assets" / "animations" / f"{stem}.gif"
    mp4 = REPO / "animations" / "rendered" / f"{stem}.mp4"
    assert gif.exists() and mp4.exists(), "run: python animations/render.py"
    assert gif.stat().st_size < 1_000_000 and mp4.stat().st_size < 3_000_000
    with Image.open(gif) as image:
        assert image.is_animated
    av = pytest.importorskip("av")
    with av.open(str(mp4)) as container:
        container.seek(container.duration)  # to the last key frame: a few frames to decode
        *_, last = container.decode(video=0)
    frame = last.to_image().resize(LOW_QUALITY_SIZE[::-1], Image.Resampling.LANCZOS)
    assert_matches(np.asarray(frame), load_control(stem), "mp4")


@pytest.mark.parametrize("readme", ["README.md", "animations/README.md"])
def test_the_readmes_say_frames_not_bytes_are_compared(readme):
    # What each README says a re-render is compared on: what this module compares, with the controls it reads.
    compared = f"each scene's last frame, re-rendered and in the committed MP4, against `{CONTROLS.relative_to(REPO).as_posix()}/{CONTROL_NAME.format(stem='<scene>')}`"
    text = " ".join((REPO / readme).read_text(encoding="utf-8").split())
    assert "the same frames, not always the same bytes" in text and compared in text
    assert "byte-identical" not in text and not {"hashlib", "filecmp"} & set(globals())
