"""A roofline model of one training epoch per preset on a T4, an A100 and an H100.

    python benchmarks/roofline.py            # prints the table, writes benchmarks/results/roofline.md

A MODEL, NOT A MEASUREMENT. No GPU has been lent to this project; these are lower bounds
on the time of an epoch, from the arithmetic and the memory traffic a training step needs
and the peak figures of each GPU's data sheet. Real steps are slower: no kernel reaches
peak, and a small model is bound by per-step overhead (kernel launches, Python), which a
roofline leaves out. Lesson 05 measures the learner's own device instead.

The model's assumptions, per training image:

* **FLOPs** = 6 x MACs. ``sv.count_macs`` counts the multiply-accumulates of the
  convolutions and dense layers of one forward pass; a MAC is 2 FLOPs, and the backward
  pass costs about twice the forward (gradients for the activations and for the weights).
  Norms, GELU, the shift and the additions are left out of the FLOPs (they are counted
  in the bytes).
* **Bytes** = activation traffic + weight traffic. Every tensor a layer outputs
  (:func:`activation_elements`) goes through memory ``ACTIVATION_TRIPS`` = 5 times
  (forward: written, read by the next layer; backward: read again, its gradient written
  and read), unfused, at 4 bytes (float32) or 2 bytes (mixed precision). Per step, each
  weight moves ``WEIGHT_TRIPS`` = 10 times at 4 bytes (read forward and backward, gradient
  written, AdamW reads weight, gradient and two moments and writes three), shared by the
  ``batch`` images of the step.
* **Time per image** = max(FLOPs / peak FLOP/s, bytes / peak bandwidth): whichever roof
  is lower. An epoch is the recipe's 40,000 training images (validation left out).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "roofline.md"
TRAIN_IMAGES = 40_000  # the recipe's training split of CIFAR-10
ACTIVATION_TRIPS = 5
WEIGHT_TRIPS = 10


@dataclass(frozen=True)
class GPU:
    """Peak figures from a vendor data sheet (dense: no structured-sparsity figures)."""

    name: str
    sheet: str
    float32_flops: float  # FP32 (CUDA cores), FLOP/s
    mixed_flops: float  # 16-bit tensor cores: FP16 on a T4, BF16 on an A100 / H100
    mixed_name: str
    bandwidth: float  # bytes/s of GPU memory


GPUS = (
    GPU("T4", "NVIDIA T4 Tensor Core GPU data sheet: 8.1 TFLOPS FP32, 65 TFLOPS FP16/FP32 mixed, "
        "320 GB/s GDDR6", 8.1e12, 65e12, "FP16", 320e9),
    GPU("A100", "NVIDIA A100 Tensor Core GPU data sheet, A100 40GB SXM: 19.5 TFLOPS FP32, 312 TFLOPS "
        "BF16 tensor core (dense), 1,555 GB/s HBM2", 19.5e12, 312e12, "BF16", 1555e9),
    GPU("H100", "NVIDIA H100 Tensor Core GPU data sheet, H100 SXM: 67 TFLOPS FP32, 1,979 TFLOPS BF16 "
        "tensor core with sparsity = 989.5 dense, 3.35 TB/s HBM3", 67e12, 989.5e12, "BF16", 3.35e12),
)


def activation_elements(config: Any) -> int:
    """Numbers in the tensors the layers of one forward pass output, for one image.

    Preprocessing: the resized image (``image_size``² x 3). A convolutional stem, if any:
    its convolution, BatchNorm and GELU, each a half-size map of ``stem_channels``. Patch
    projection: one map of the first stage. Each block at side s with C channels and an MLP of H = ratio x C:
    the shift, the norm, the first dense, GELU, the second dense and the residual sum
    (4 s²C + 2 s²H). Each patch merging: its norm (s²C) and its convolution
    ((s/2)² x 2C). The head: pooled vector and logits.
    """
    total = config.image_size**2 * config.input_shape[-1]
    stem_channels = getattr(config, "stem_channels", 0)
    if stem_channels:
        total += 3 * (-(-config.image_size // 2)) ** 2 * stem_channels
    sides, dims = config.stage_resolutions, config.stage_dims
    total += sides[0] ** 2 * dims[0]
    for index, depth in enumerate(config.depths):
        side, channels = sides[index], dims[index]
        hidden = int(channels * config.mlp_ratio)
        total += depth * (4 * side * side * channels + 2 * side * side * hidden)
        if index + 1 < len(config.depths):
            total += side * side * channels + sides[index + 1] ** 2 * dims[index + 1]
    return total + dims[-1] + config.num_classes


@dataclass(frozen=True)
class Cost:
    """What one training image costs: FLOPs and bytes, in float32 and in mixed precision."""

    preset: str
    parameters: int
    batch: int
    flops: float
    bytes_float32: float
    bytes_mixed: float


def training_cost(name: str, macs: int, activations: int, parameters: int, batch: int) -> Cost:
    """FLOPs and bytes moved per training image (see the module doc for the assumptions)."""
    weights = WEIGHT_TRIPS * 4 * parameters / batch
    return Cost(name, parameters, batch, flops=6.0 * macs,
                bytes_float32=ACTIVATION_TRIPS * 4 * activations + weights,
                bytes_mixed=ACTIVATION_TRIPS * 2 * activations + weights)


def epoch_seconds(cost: Cost, gpu: GPU, mixed: bool, images: int = TRAIN_IMAGES) -> tuple[float, str]:
    """Roofline seconds per epoch and the roof that binds (``"compute"`` or ``"memory"``)."""
    peak = gpu.mixed_flops if mixed else gpu.float32_flops
    moved = cost.bytes_mixed if mixed else cost.bytes_float32
    compute, memory = cost.flops / peak, moved / gpu.bandwidth
    return images * max(compute, memory), "compute" if compute >= memory else "memory"


def _seconds(value: float) -> str:
    return f"{value:.2f} s" if value < 10 else f"{value:.0f} s"


def table(costs: list[Cost], gpus: tuple[GPU, ...] = GPUS) -> str:
    head = ["| preset | params | batch | GFLOP / image | MB / image (fp32, mixed) |"]
    rule = ["|---|---:|---:|---:|---:|"]
    for gpu in gpus:
        head.append(f" {gpu.name} fp32 | {gpu.name} {gpu.mixed_name} |")
        rule.append("---:|---:|")
    lines = ["".join(head), "".join(rule)]
    for cost in costs:
        row = (f"| {cost.preset} | {cost.parameters / 1e6:.1f} M | {cost.batch} | {cost.flops / 1e9:.3g} | "
               f"{cost.bytes_float32 / 1e6:.1f}, {cost.bytes_mixed / 1e6:.1f} |")
        for gpu in gpus:
            for mixed in (False, True):
                seconds, roof = epoch_seconds(cost, gpu, mixed)
                row += f" {_seconds(seconds)} ({roof[0]}) |"
        lines.append(row)
    return "\n".join(lines)


def report(costs: list[Cost]) -> str:
    sheets = "\n".join(f"- **{gpu.name}**: {gpu.sheet}" for gpu in GPUS)
    return (
        f"# Roofline time per epoch: a model, not a measurement\n\n"
        f"Written by `python benchmarks/roofline.py` on {time.strftime('%Y-%m-%d')}. Seconds per epoch "
        f"of {TRAIN_IMAGES:,} training images at the data sheets' peaks; (c) compute-bound, (m) memory-bound. "
        f"Lower bounds: real steps also pay per-step overhead, which dominates small models. "
        f"Assumptions: FLOPs = 6 x MACs (`sv.count_macs`); every layer output makes {ACTIVATION_TRIPS} "
        f"unfused trips through memory; each weight {WEIGHT_TRIPS} per step (AdamW); see "
        f"`benchmarks/roofline.py`.\n\n{table(costs)}\n\n"
        f"For scale, a report and not our measurement: the keras-io ShiftViT example's logs show 10-50 s "
        f"per epoch for the `seed` recipe on its GPUs, well above these bounds; per-step overhead and "
        f"kernels below peak make the difference.\n\nPeak figures:\n\n{sheets}\n"
    )


def preset_costs(names: list[str] | None = None) -> list[Cost]:
    import shiftvit_lib as sv

    costs = []
    for name in names or sv.list_presets():
        config = sv.preset(name)
        parameters = sv.build_shiftvit(config).count_params()
        costs.append(training_cost(name, sv.count_macs(config)["total"], activation_elements(config),
                                   parameters, config.batch_size))
    return costs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presets", nargs="*", default=None, help="default: every preset")
    parser.add_argument("--out", type=Path, default=RESULTS, help="the Markdown file to write ('-': none)")
    args = parser.parse_args(argv)
    text = report(preset_costs(args.presets))
    print(text)
    if str(args.out) != "-":
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
