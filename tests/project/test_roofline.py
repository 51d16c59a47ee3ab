"""benchmarks/roofline.py: its arithmetic on a toy case, and that the script runs (a model, not timings)."""

import csv
import statistics
from types import SimpleNamespace

import pytest
from fakes import REPO, load_script

from shiftvit_lib import preset

roofline = load_script("benchmarks/roofline.py")


def test_toy_cost_and_roofline_arithmetic_with_tf32_where_the_gpu_has_it():
    # 1 MMAC, 1,000 activation numbers, 100 weights, batch 10.
    cost = roofline.training_cost("toy", macs=1_000_000, activations=1_000, parameters=100, batch=10)
    assert cost.flops == 6_000_000  # 2 FLOPs per MAC, x3 for forward + backward
    assert cost.bytes_float32 == 5 * 4 * 1_000 + 10 * 4 * 100 / 10 == 20_400
    assert cost.bytes_mixed == 5 * 2 * 1_000 + 400 == 10_400
    gpu = roofline.GPU("toy", "a toy sheet", "https://example.org/toy", float32_flops=1e9, tf32_flops=None,
                       mixed_flops=1e10, mixed_name="BF16", bandwidth=1e6)
    # float32: compute 6e6 / 1e9 = 6 ms, memory 20,400 / 1e6 = 20.4 ms per image: memory-bound.
    assert roofline.epoch_seconds(cost, gpu, mixed=False, images=1_000) == (pytest.approx(20.4), "memory")
    fast_memory = roofline.GPU("toy", "", "", 1e9, None, 1e10, "BF16", bandwidth=1e9)
    assert roofline.epoch_seconds(cost, fast_memory, mixed=True, images=1_000) == (pytest.approx(0.6), "compute")
    with_tf32 = roofline.GPU("toy", "", "", 1e9, 4e9, 1e10, "BF16", bandwidth=1e12)  # compute-bound
    assert roofline.epoch_seconds(cost, with_tf32, mixed=False, images=1_000)[0] == pytest.approx(1.5)  # 6e9 / 4e9
    # PyTorch's default (no TF32 for matrix multiplications), and a GPU without TF32 (a T4): plain FP32.
    assert roofline.epoch_seconds(cost, with_tf32, mixed=False, images=1_000, tf32=False)[0] == pytest.approx(6.0)
    without = roofline.GPU("toy", "", "", 1e9, None, 1e10, "BF16", bandwidth=1e12)
    assert roofline.epoch_seconds(cost, without, mixed=False, images=1_000)[0] == pytest.approx(6.0)


def test_the_data_sheet_peaks():
    gpus = {gpu.name: gpu for gpu in roofline.GPUS}
    assert gpus["T4"].tf32_flops is None  # Turing: no TF32
    assert gpus["A100"].float32_peak() == 156e12 and gpus["A100"].float32_peak(tf32=False) == 19.5e12
    assert gpus["H100"].tf32_flops == gpus["H200"].tf32_flops == 494.5e12  # 989 with sparsity, halved
    assert gpus["H200"].bandwidth == 4.8e12 and gpus["H200"].mixed_flops == 989.5e12
    assert all(gpu.address.startswith("https://") for gpu in gpus.values())


# The H200 runs' histories, as the repository keeps them (the same files as the lent machine wrote).
@pytest.mark.parametrize("name, history", [("seed", "history.csv"), ("strong", "strong_history.csv")])
def test_the_measured_h200_figures_are_the_records(name, history):
    rows = list(csv.DictReader((REPO / "results" / "gpu_h200_2026-11-26" / history).open()))
    later = [float(row["epoch_seconds"]) for row in rows[1:]]
    measured = roofline.MEASURED_H200[name]
    assert measured["first_epoch"] == pytest.approx(float(rows[0]["epoch_seconds"]), abs=0.01)
    assert measured["median_epoch"] == pytest.approx(statistics.median(later), abs=0.01)
    assert (measured["fastest_epoch"], measured["slowest_epoch"]) == pytest.approx((min(later), max(later)), abs=0.01)
    rate = statistics.median(float(row["images_per_second"]) for row in rows[1:])
    assert measured["median_images_per_second"] == pytest.approx(rate, abs=1)


def test_activation_count_of_a_two_stage_toy():
    # 8x8 RGB image; stage 1: a 2x2 map of 4 channels, one block; stage 2: 1x1 of 8 channels, one block.
    toy = SimpleNamespace(image_size=8, input_shape=(8, 8, 3), stage_resolutions=(2, 1), stage_dims=(4, 8),
                          depths=(1, 1), mlp_ratio=2.0, num_classes=10)
    image, projection = 8 * 8 * 3, 2 * 2 * 4
    block_1 = 4 * (2 * 2 * 4) + 2 * (2 * 2 * 8)  # shift, norm, fc2, residual sum; fc1 and GELU are wider
    merging = 2 * 2 * 4 + 1 * 1 * 8  # its norm, then its convolution
    block_2 = 4 * 8 + 2 * 16
    head = 8 + 10  # pooled vector, logits
    assert roofline.activation_elements(toy) == image + projection + block_1 + merging + block_2 + head
    # A convolutional stem adds three 4x4 maps (convolution, BatchNorm, GELU) of its channels.
    with_stem = SimpleNamespace(**vars(toy), stem_channels=5)
    assert roofline.activation_elements(with_stem) == roofline.activation_elements(toy) + 3 * 4 * 4 * 5
    # The real presets follow the same count: the seed model's per-stage maps are 12, 6, 3 and 2 pixels.
    assert roofline.activation_elements(preset("seed")) > roofline.activation_elements(preset("quick"))


@pytest.mark.slow  # builds the seed model (about 8 s each time); the arithmetic tests above stay fast
def test_the_script_writes_its_table_labelled_as_a_model(tmp_path):
    # The estimate: the seed epoch on an A100 in float32 is about 0.45 s with TF32, not 1.28 s.
    seed, a100 = roofline.preset_costs(["seed"])[0], next(gpu for gpu in roofline.GPUS if gpu.name == "A100")
    assert roofline.epoch_seconds(seed, a100, mixed=False)[0] == pytest.approx(0.44, abs=0.01)
    assert roofline.epoch_seconds(seed, a100, mixed=False, tf32=False)[0] == pytest.approx(1.28, abs=0.01)
    out = tmp_path / "roofline.md"
    assert roofline.main(["--presets", "quick", "seed", "--out", str(out)]) == 0
    text = out.read_text()
    assert "a model, not a measurement" in text
    assert "| seed | 11.7 M | 256 | 0.623 |" in text  # 6 x 104 MMACs per image
    for sheet in ("NVIDIA T4 Tensor Core GPU data sheet", "NVIDIA A100", "NVIDIA H100", "NVIDIA H200"):
        assert sheet in text
    assert "A100 fp32 (TF32)" in text and "| T4 fp32 |" in text  # TF32 named where it is used
    # The H200 records beside the model, with their source.
    assert "## Measured beside the model: one H200" in text and "gpu-runs/2026-11-26-h200" in text
    assert "| seed | 0.08 s (m) | 42.6 s | 1.30 s (1.06-1.59 s) |" in text
