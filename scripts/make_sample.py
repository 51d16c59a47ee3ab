"""Build the CIFAR-10 sample and demo images bundled in ``shiftvit_lib/assets``.

The sample lets every notebook run offline: ``load_cifar10("sample")`` (and
``load_cifar10("auto")`` on a machine without internet) reads it.

Input: the full CIFAR-10 as JPEG (quality 75) in class folders,
``train/<class>/NNNN.jpg`` and ``test/<class>/NNNN.jpg``, packed as a
``.tar.gz`` (default: /work/shared/data/cifar10-jpeg.tar.gz).

Output (both reproducible byte for byte from the same input archive):

* ``shiftvit_lib/assets/cifar10_sample.zip``: 200 train + 50 test images per
  class (2,000 + 500) in the same class-folder layout. The JPEG bytes are
  copied verbatim (no re-encoding, so no extra compression loss).
* ``shiftvit_lib/assets/demo_images/``: six images to try
  ``shiftvit_lib.tools.inference.predict_folder`` on: three CIFAR-10 test JPEGs at
  their real 32x32 size, one upscaled to 256x256, one grayscale PNG and one
  non-square RGBA PNG with a transparent margin.

Usage::

    python scripts/make_sample.py [--archive PATH] [--assets-dir DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import sys
import tarfile
import zipfile
from pathlib import Path

from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
import project_files  # noqa: E402 - files.py without Keras

CLASSES = (
    "airplane", "automobile", "bird", "cat", "deer",
    "dog", "frog", "horse", "ship", "truck",
)
PER_CLASS = {"train": 200, "test": 50}
# Changing the seed changes which images are picked (and the archive bytes).
SELECTION_SEED = "shiftvit-sample-v1"
# A fixed timestamp keeps the zip byte-identical between runs.
ZIP_DATE_TIME = (2022, 1, 26, 0, 0, 0)

DEFAULT_ARCHIVE = Path("/work/shared/data/cifar10-jpeg.tar.gz")
DEFAULT_ASSETS_DIR = Path(__file__).resolve().parents[1] / "shiftvit_lib" / "assets"

# Hand-picked test images that are easy to recognise at 32x32. They are kept
# out of the sample so the demo images are also unseen by sample-trained models.
DEMO_SOURCES = {
    "cat": "test/cat/0012.jpg",
    "ship": "test/ship/0005.jpg",
    "airplane": "test/airplane/0022.jpg",
    "frog": "test/frog/0002.jpg",
    "horse": "test/horse/0003.jpg",
    "truck": "test/truck/0002.jpg",
}


def read_class_folder_archive(archive: Path) -> dict[str, bytes]:
    """Return ``{"train/cat/0001.jpg": jpeg_bytes, ...}`` for every image file."""
    files: dict[str, bytes] = {}
    with tarfile.open(archive, "r:*") as tar:
        for member in tar:
            parts = member.name.removeprefix("./").split("/")
            if not member.isfile() or len(parts) != 3:
                continue
            split, class_name, _ = parts
            if split in PER_CLASS and class_name in CLASSES:
                extracted = tar.extractfile(member)
                assert extracted is not None  # regular files always extract
                files["/".join(parts)] = extracted.read()
    return files


def selection_key(name: str) -> str:
    """A stable pseudo-random rank: independent of library versions and OS."""
    return hashlib.sha256(f"{SELECTION_SEED}:{name}".encode()).hexdigest()


def choose_sample(files: dict[str, bytes]) -> list[str]:
    """Pick PER_CLASS[split] files per (split, class), skipping the demo images."""
    chosen: list[str] = []
    excluded = set(DEMO_SOURCES.values())
    for split, count in PER_CLASS.items():
        for class_name in CLASSES:
            prefix = f"{split}/{class_name}/"
            candidates = [n for n in files if n.startswith(prefix) and n not in excluded]
            if len(candidates) < count:
                raise SystemExit(f"{prefix} has only {len(candidates)} images; need {count}")
            picked = sorted(candidates, key=selection_key)[:count]
            chosen.extend(sorted(picked))
    return chosen


def write_sample_zip(files: dict[str, bytes], names: list[str], out_path: Path) -> None:
    """Write the chosen JPEGs verbatim into a deterministic zip archive."""
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with project_files.files.atomic_output(out_path) as partial, zipfile.ZipFile(partial, "w") as archive:
        for name in names:
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE_TIME)
            info.external_attr = 0o644 << 16
            # Deflate still saves ~20% on JPEGs this small (their Huffman and
            # quantisation tables are repetitive); the image data is unchanged.
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, files[name], compresslevel=9)


def write_demo_images(files: dict[str, bytes], out_dir: Path) -> list[Path]:
    """Write six demo images that exercise the different paths of load_image."""
    out_dir.mkdir(parents=True, exist_ok=True)

    def open_rgb(class_name: str) -> Image.Image:
        return Image.open(io.BytesIO(files[DEMO_SOURCES[class_name]])).convert("RGB")

    written: list[Path] = []
    # Real CIFAR-10 test images, bytes copied verbatim.
    for class_name in ("cat", "ship", "airplane"):
        path = out_dir / f"{class_name}_32x32.jpg"
        project_files.files.atomic_write_text(path, files[DEMO_SOURCES[class_name]])
        written.append(path)

    # Bigger than the model input: predict_folder must shrink it back to 32x32.
    path = out_dir / "frog_upscaled_256x256.jpg"
    with project_files.files.atomic_output(path) as partial:
        open_rgb("frog").resize((256, 256), Image.Resampling.BICUBIC).save(partial, quality=90)
    written.append(path)

    # One channel only: must be expanded to RGB.
    path = out_dir / "horse_grayscale_32x32.png"
    with project_files.files.atomic_output(path) as partial:
        open_rgb("horse").convert("L").save(partial, optimize=True)
    written.append(path)

    # Alpha channel and a non-square canvas: the transparent side margins are
    # composited onto white and then cropped away by the centre square crop.
    truck = open_rgb("truck").resize((64, 64), Image.Resampling.BICUBIC).convert("RGBA")
    canvas = Image.new("RGBA", (96, 64), (0, 0, 0, 0))
    canvas.paste(truck, (16, 0))
    path = out_dir / "truck_transparent_96x64.png"
    with project_files.files.atomic_output(path) as partial:
        canvas.save(partial, optimize=True)
    written.append(path)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archive", type=Path, default=DEFAULT_ARCHIVE,
                        help="CIFAR-10 JPEG class-folder .tar.gz (default: %(default)s)")
    parser.add_argument("--assets-dir", type=Path, default=DEFAULT_ASSETS_DIR,
                        help="where to write the outputs (default: %(default)s)")
    args = parser.parse_args()

    files = read_class_folder_archive(args.archive)
    names = choose_sample(files)
    sample_path = args.assets_dir / "cifar10_sample.zip"
    write_sample_zip(files, names, sample_path)
    demo_paths = write_demo_images(files, args.assets_dir / "demo_images")

    digest = hashlib.sha256(sample_path.read_bytes()).hexdigest()
    print(f"read {len(files):,} images from {args.archive}")
    print(f"wrote {sample_path} ({len(names):,} images, "
          f"{sample_path.stat().st_size:,} bytes, sha256 {digest})")
    for path in demo_paths:
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
