"""Render the tutorial's Manim scenes to MP4 and to small looping GIFs.

Usage (from the repository root)::

    python animations/render.py                      # all scenes, medium quality (720p30)
    python animations/render.py --quality low        # quick draft (480p15)
    python animations/render.py --scene ShiftOperation
    python animations/render.py --write-controls     # refresh tests/controls/*.png

Outputs:

* ``animations/rendered/<name>.mp4`` - the video,
* ``shiftvit_lib/assets/animations/<name>.gif`` - a palette GIF under 1 MB that
  the notebooks display through the installed package (works on Colab too).

How:

* Manim renders headless (Cairo) into a temporary ``media_dir`` that is
  deleted afterwards, so nothing lands in ``media/``; caching is off.
* Manim's MP4 is re-encoded once with x264 at CRF 30 through PyAV, which
  roughly halves it.  No system ``ffmpeg`` binary is needed anywhere: Manim
  >= 0.19 and this script encode through PyAV's bundled libraries.
* The GIF is built from the very frames Manim renders (sampled at 10 fps and
  scaled to 640 px while the render runs), not from the decoded MP4: video
  compression noise changes pixels in every frame, which would make the GIF
  larger and leave faint ghosts of faded-out text.  One adaptive palette is
  shared by all frames and Pillow stores only the pixels that changed.

Everything is deterministic: the same code and package versions give the
same frames, palette and files.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from project_files import files  # noqa: E402 - files.py without Keras: every write is atomic

REPO_ROOT = Path(__file__).resolve().parents[1]
MP4_DIR = REPO_ROOT / "animations" / "rendered"
GIF_DIR = REPO_ROOT / "shiftvit_lib" / "assets" / "animations"
CONTROL_DIR = REPO_ROOT / "tests" / "controls"

# Scene class name -> module in animations/ (also the stem of the output files).
SCENES = {
    "ShiftOperation": "shift_operation",
    "ReceptiveField": "receptive_field",
    "ReceptiveFieldStages": "receptive_field_stages",
}
QUALITIES = {"low": "low_quality", "medium": "medium_quality", "high": "high_quality"}

MP4_CRF = 30  # x264 quality of the MP4s (Manim uses 23; higher is smaller; 30 keeps the digits crisp)
# GIF settings chosen to stay under 1 MB: 10 fps, 640 px wide, 96 colours (fewer turn blue teal),
# no dithering (dither noise defeats GIF's frame-difference compression).
GIF_FPS = 10
GIF_WIDTH = 640
GIF_COLORS = 96
GIF_HOLD_LAST_S = 2.0  # pause on the final picture before the loop restarts
GIF_MAX_BYTES = 1_000_000

if str(REPO_ROOT) not in sys.path:  # so `animations.*` imports work when run as a script
    sys.path.insert(0, str(REPO_ROOT))


@dataclass
class Rendered:
    """What :func:`render_scene` produced."""

    last_frame: np.ndarray  # (H, W, 3) uint8, lossless, straight from the renderer
    mp4: Path | None = None
    gif: Path | None = None
    scene: object = None  # the rendered manim Scene, to inspect what it showed


def _import_manim():
    """Import manim, hiding pydub's warning about a missing ffmpeg (Manim does not use it)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Couldn't find ffmpeg", category=RuntimeWarning)
        import manim
    return manim


def load_scene(name: str):
    """The Manim ``Scene`` subclass called ``name``."""
    if name not in SCENES:
        raise KeyError(f"unknown scene {name!r}; choose from {sorted(SCENES)}")
    _import_manim()
    module = importlib.import_module(f"animations.{SCENES[name]}")
    return getattr(module, name)


class GifFrameSampler:
    """Collects every ``step``-th frame Manim writes, scaled down, for the GIF.

    Wraps the scene's ``file_writer.write_frame`` (Manim calls it once per
    frame, or once with ``repeat=n`` for a still stretch during a wait).
    Only the sampled frames are kept, so memory stays small at any quality.
    """

    def __init__(self, file_writer, src_fps: float, fps: int = GIF_FPS, width: int = GIF_WIDTH):
        self.step = max(1, round(src_fps / fps))
        self.frame_ms = round(1000 * self.step / src_fps)
        self.width = width
        self.frames: list[Image.Image] = []
        self._count = 0
        self._last: np.ndarray | None = None
        self._write_frame = file_writer.write_frame
        file_writer.write_frame = self._sample

    def _scaled(self, frame: np.ndarray) -> Image.Image:
        image = Image.fromarray(np.ascontiguousarray(frame[:, :, :3]))
        height = round(image.height * self.width / image.width)
        return image.resize((self.width, height), Image.Resampling.LANCZOS)

    def _sample(self, pixels, *, repeat: int = 1) -> None:
        num_frames = repeat
        frame = np.asarray(pixels)  # read before handing over: the writer owns it afterwards
        picks = sum(1 for i in range(self._count, self._count + num_frames) if i % self.step == 0)
        if picks:
            scaled = self._scaled(frame)
            self.frames.extend([scaled] * picks)
        self._count += num_frames
        self._last = frame.copy()
        self._write_frame(pixels, repeat=repeat)  # the MP4 still gets every frame

    def finish(self) -> list[Image.Image]:
        """The sampled frames, always ending on the scene's final frame."""
        if self._last is not None and (self._count - 1) % self.step != 0:
            self.frames.append(self._scaled(self._last))
        return self.frames


def frames_to_gif(
    frames: list[Image.Image],
    gif_path: Path,
    frame_ms: int,
    colors: int = GIF_COLORS,
    hold_last_s: float = GIF_HOLD_LAST_S,
) -> Path:
    """Write RGB frames as a looping GIF with one shared adaptive palette.

    The palette (median cut over up to 12 evenly spaced frames) is the same
    for every frame, so colours never flicker and Pillow's optimiser can
    store each frame as just the pixels that changed (the rest transparent).
    Identical consecutive frames are merged by Pillow into longer ones.
    """
    if not frames:
        raise ValueError("no frames to write")
    width, height = frames[0].size
    sample = frames[:: max(1, len(frames) // 12)]
    sheet = Image.new("RGB", (width, height * len(sample)))
    for i, image in enumerate(sample):
        sheet.paste(image, (0, i * height))
    palette = sheet.quantize(colors=colors, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    indexed = [image.quantize(palette=palette, dither=Image.Dither.NONE) for image in frames]

    durations = [frame_ms] * len(indexed)
    durations[-1] = round(1000 * hold_last_s)
    gif_path = Path(gif_path)
    gif_path.parent.mkdir(parents=True, exist_ok=True)
    with files.atomic_output(gif_path) as partial:
        indexed[0].save(
            partial,
            save_all=True,
            append_images=indexed[1:],
            duration=durations,
            loop=0,  # loop forever
            optimize=True,  # unchanged pixels become transparent: far smaller frames
            disposal=1,  # draw each frame over the previous one
        )
    return gif_path


def compact_mp4(src: Path, dst: Path, crf: int = MP4_CRF) -> Path:
    """Re-encode Manim's MP4 as one H.264 stream at a higher CRF.

    Manim concatenates one partial movie per animation, each starting with a
    key frame, at CRF 23; one pass over the whole video at CRF 30 roughly
    halves the file with no visible loss on these flat-coloured frames.
    x264 is deterministic for the same input and settings.
    """
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    with files.atomic_output(dst) as tmp, av.open(str(src)) as source, av.open(str(tmp), mode="w") as target:
        video_in = source.streams.video[0]
        video_out = target.add_stream(
            "libx264", rate=video_in.average_rate, options={"crf": str(crf), "preset": "medium"}
        )
        video_out.width = video_in.codec_context.width
        video_out.height = video_in.codec_context.height
        video_out.pix_fmt = "yuv420p"
        # Number the frames 0, 1, 2, ... at the video's frame rate: x264's rate
        # control depends on the real frame timing.
        time_base = Fraction(1, int(video_in.average_rate))
        video_out.codec_context.time_base = time_base
        for index, frame in enumerate(source.decode(video_in)):
            frame.pts, frame.time_base = index, time_base
            target.mux(video_out.encode(frame))
        target.mux(video_out.encode())  # flush
    return dst


def render_scene(
    name: str,
    quality: str = "low",
    mp4_path: Path | None = None,
    gif_path: Path | None = None,
    **scene_args,
) -> Rendered:
    """Render one scene headless.

    With ``mp4_path`` and/or ``gif_path``, every frame is rendered and the
    files are written there.  With neither, Manim skips the in-between frames
    and draws only the last one (much faster), e.g. for the control images.
    ``scene_args`` go to the scene's constructor, e.g. ``channels=8`` for
    ``ShiftOperation`` (lesson 02's "render it yourself" section).
    """
    manim = _import_manim()
    scene_class = load_scene(name)
    animate = mp4_path is not None or gif_path is not None
    with tempfile.TemporaryDirectory(prefix="manim_media_") as media_dir:
        options = {
            "quality": QUALITIES[quality],
            "media_dir": media_dir,
            "disable_caching": True,  # hashing every mobject is slow and adds nothing here
            "format": "mp4",  # set before write_to_movie: setting the format turns writing on
            "write_to_movie": animate,
            "save_last_frame": not animate,
            "output_file": SCENES[name],
            "progress_bar": "none",
            "verbosity": "WARNING",
            "preview": False,
        }
        with manim.tempconfig(options):
            scene = scene_class(**scene_args)
            sampler = None
            if gif_path is not None:
                sampler = GifFrameSampler(scene.renderer.file_writer, manim.config.frame_rate)
            scene.render()
            result = Rendered(last_frame=np.array(scene.renderer.get_frame())[:, :, :3].copy(), scene=scene)
            if mp4_path is not None:
                result.mp4 = compact_mp4(scene.renderer.file_writer.movie_file_path, mp4_path)
            if sampler is not None:
                result.gif = frames_to_gif(sampler.finish(), gif_path, sampler.frame_ms)
    return result


def read_video(mp4_path: Path) -> tuple[list[np.ndarray], float]:
    """All frames of a video as RGB arrays, and its frame rate."""
    with av.open(str(mp4_path)) as container:
        stream = container.streams.video[0]
        fps = float(stream.average_rate)
        frames = [frame.to_ndarray(format="rgb24") for frame in container.decode(stream)]
    return frames, fps


def _size(path: Path) -> str:
    return f"{path.stat().st_size / 1024:.0f} KB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quality", choices=sorted(QUALITIES), default="medium")
    parser.add_argument(
        "--scene", action="append", choices=sorted(SCENES), help="scene to render (repeatable); default: all"
    )
    parser.add_argument("--mp4-dir", type=Path, default=MP4_DIR)
    parser.add_argument("--gif-dir", type=Path, default=GIF_DIR)
    parser.add_argument("--no-gif", action="store_true", help="only write the MP4s")
    parser.add_argument(
        "--write-controls",
        action="store_true",
        help="instead of videos, write the low-quality last frames the tests compare against",
    )
    args = parser.parse_args(argv)

    for name in args.scene or list(SCENES):
        stem = SCENES[name]
        start = time.perf_counter()
        if args.write_controls:
            control = CONTROL_DIR / f"{stem}_last_frame.png"
            control.parent.mkdir(parents=True, exist_ok=True)
            with files.atomic_output(control) as partial:
                Image.fromarray(render_scene(name, quality="low").last_frame).save(partial, optimize=True)
            print(f"{name}: {control} ({_size(control)}) in {time.perf_counter() - start:.1f} s")
            continue
        result = render_scene(
            name,
            quality=args.quality,
            mp4_path=args.mp4_dir / f"{stem}.mp4",
            gif_path=None if args.no_gif else args.gif_dir / f"{stem}.gif",
        )
        elapsed = time.perf_counter() - start
        frames, fps = read_video(result.mp4)
        height, width = frames[0].shape[:2]
        print(
            f"{name}: {result.mp4} ({_size(result.mp4)}, {len(frames)} frames, {width}x{height} @ {fps:g} fps)"
        )
        if result.gif is not None:
            too_big = "  WARNING: over 1 MB" if result.gif.stat().st_size >= GIF_MAX_BYTES else ""
            print(f"{name}: {result.gif} ({_size(result.gif)}){too_big}")
        print(f"{name}: rendered in {elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
