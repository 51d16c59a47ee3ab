"""A roofline model of one training epoch per preset on a T4, an A100, an H100 and an H200.

    python benchmarks/roofline.py            # prints the table, writes benchmarks/results/roofline.md

A MODEL, NOT A MEASUREMENT: lower bounds on the time of an epoch, from the arithmetic and
the memory traffic a training step needs and the peak figures of each GPU's data sheet.
Real steps are slower: no kernel reaches peak, and a small model is bound by per-step
overhead (kernel launches, Python), which a roofline leaves out. Lesson 05 measures the
learner's own device instead. The one GPU run this project has (an H200, 2026-11-26) is
set beside the model in the report (``MEASURED_H200``).

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
* **Which peak in float32.** TensorFlow and JAX run float32 matrix multiplications and
  convolutions on the TF32 tensor cores of an A100, H100 or H200 by default (TensorFlow:
  ``tf.config.experimental.enable_tensor_float_32_execution``, on unless switched off; JAX:
  ``jax_default_matmul_precision``, whose default uses TF32 on those GPUs), and the FLOPs
  counted here are all such matrix work, so the float32 columns use the TF32 peak where a
  GPU has one. A T4 (Turing) has no TF32: plain FP32 there. PyTorch keeps float32 matrix
  multiplications in full FP32 unless ``torch.backends.cuda.matmul.allow_tf32`` is set
  (``epoch_seconds(..., tf32=False)``).
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
    """Peak figures from a vendor data sheet (dense: sparsity figures halved)."""

    name: str
    sheet: str  # the data sheet's figures, as it states them
    address: str  # where the data sheet is
    float32_flops: float  # FP32 on the CUDA cores, FLOP/s
    tf32_flops: float | None  # TF32 tensor cores, dense; None where the GPU has none
    mixed_flops: float  # 16-bit tensor cores: FP16 on a T4, BF16 on an A100 / H100 / H200
    mixed_name: str
    bandwidth: float  # bytes/s of GPU memory

    def float32_peak(self, tf32: bool = True) -> float:
        """The peak for float32 matrix work: TF32 where the GPU has it and the framework uses it."""
        return self.tf32_flops if tf32 and self.tf32_flops else self.float32_flops


GPUS = (
    GPU("T4", "NVIDIA T4 Tensor Core GPU data sheet: 8.1 TFLOPS FP32 (no TF32), 65 TFLOPS FP16/FP32 mixed, "
        "320 GB/s GDDR6",
        "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf",
        8.1e12, None, 65e12, "FP16", 320e9),
    GPU("A100", "NVIDIA A100 Tensor Core GPU data sheet, A100 40GB SXM: 19.5 TFLOPS FP32, 156 TFLOPS TF32 "
        "tensor core (dense; 312 with sparsity), 312 TFLOPS BF16 tensor core (dense), 1,555 GB/s HBM2",
        "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
        "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf",
        19.5e12, 156e12, 312e12, "BF16", 1555e9),
    GPU("H100", "NVIDIA H100 Tensor Core GPU data sheet, H100 SXM: 67 TFLOPS FP32, 989 TFLOPS TF32 tensor core "
        "with sparsity = 494.5 dense, 1,979 TFLOPS BF16 tensor core with sparsity = 989.5 dense, 3.35 TB/s HBM3",
        "https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet",
        67e12, 494.5e12, 989.5e12, "BF16", 3.35e12),
    GPU("H200", "NVIDIA H200 Tensor Core GPU data sheet, H200 SXM: 67 TFLOPS FP32, 989 TFLOPS TF32 tensor core "
        "with sparsity = 494.5 dense, 1,979 TFLOPS BF16 tensor core with sparsity = 989.5 dense, 4.8 TB/s HBM3e",
        "https://nvdam.widen.net/s/nb5zzzsjdf/hpc-datasheet-sc23-h200-datasheet-3002446",
        67e12, 494.5e12, 989.5e12, "BF16", 4.8e12),
)

# What the project's own CLI measured on one H200 (the only GPU run so far): the records in
# ../shared/gpu-runs/2026-11-26-h200/ (README.md, seed_history.csv, strong_history.csv), JAX 0.11.2,
# Keras 3.15.1, mixed_bfloat16 and XLA (the CLI's defaults), full CIFAR-10 JPEG q75, batch 256.
# Per preset: the first epoch (compilation included), then the median and range of epochs 2-67.
# tests/project/test_roofline.py re-reads them from those files where that folder is present.
MEASURED_H200 = {
    "seed": dict(first_epoch=42.56, median_epoch=1.30, fastest_epoch=1.06, slowest_epoch=1.59,
                 median_images_per_second=33_588),
    "strong": dict(first_epoch=77.93, median_epoch=3.20, fastest_epoch=2.51, slowest_epoch=3.99,
                   median_images_per_second=12_922),
}
MEASURED_SOURCE = "../shared/gpu-runs/2026-11-26-h200/ (one NVIDIA H200, 2026-11-26, JAX 0.11.2, Keras 3.15.1)"


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


def epoch_seconds(cost: Cost, gpu: GPU, mixed: bool, images: int = TRAIN_IMAGES,
                  tf32: bool = True) -> tuple[float, str]:
    """Roofline seconds per epoch and the roof that binds (``"compute"`` or ``"memory"``).

    ``tf32``: float32 matrix work on TF32 tensor cores where the GPU has them (TensorFlow's and
    JAX's default); ``False`` for plain FP32 (PyTorch's default for matrix multiplications).
    """
    peak = gpu.mixed_flops if mixed else gpu.float32_peak(tf32)
    moved = cost.bytes_mixed if mixed else cost.bytes_float32
    compute, memory = cost.flops / peak, moved / gpu.bandwidth
    return images * max(compute, memory), "compute" if compute >= memory else "memory"


def _seconds(value: float) -> str:
    return f"{value:.2f} s" if value < 10 else f"{value:.0f} s"


def table(costs: list[Cost], gpus: tuple[GPU, ...] = GPUS) -> str:
    head = ["| preset | params | batch | GFLOP / image | MB / image (fp32, mixed) |"]
    rule = ["|---|---:|---:|---:|---:|"]
    for gpu in gpus:
        float32_name = "fp32 (TF32)" if gpu.tf32_flops else "fp32"
        head.append(f" {gpu.name} {float32_name} | {gpu.name} {gpu.mixed_name} |")
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


def measured_beside_model(costs: list[Cost]) -> str:
    """The H200's measured epochs (``MEASURED_H200``) beside the model's bound for the same preset."""
    h200 = next(gpu for gpu in GPUS if gpu.name == "H200")
    lines = ["| preset | model: H200 BF16 bound | measured: first epoch | measured: median epoch (range) | "
             "measured / model | measured images/s (median epoch) |", "|---|---:|---:|---:|---:|---:|"]
    for cost in costs:
        measured = MEASURED_H200.get(cost.preset)
        if measured is None:
            continue
        bound, roof = epoch_seconds(cost, h200, mixed=True)
        lines.append(f"| {cost.preset} | {_seconds(bound)} ({roof[0]}) | {measured['first_epoch']:.1f} s | "
                     f"{measured['median_epoch']:.2f} s ({measured['fastest_epoch']:.2f}-"
                     f"{measured['slowest_epoch']:.2f} s) | {measured['median_epoch'] / bound:.0f}x | "
                     f"{measured['median_images_per_second']:,} |")
    return "\n".join(lines)


def report(costs: list[Cost]) -> str:
    sheets = "\n".join(f"- **{gpu.name}**: {gpu.sheet}. <{gpu.address}>" for gpu in GPUS)
    beside = measured_beside_model(costs)
    return (
        f"# Roofline time per epoch: a model, not a measurement\n\n"
        f"Written by `python benchmarks/roofline.py` on {time.strftime('%Y-%m-%d')}. Seconds per epoch "
        f"of {TRAIN_IMAGES:,} training images at the data sheets' peaks; (c) compute-bound, (m) memory-bound. "
        f"Lower bounds: real steps also pay per-step overhead, which dominates small models. "
        f"Assumptions: FLOPs = 6 x MACs (`sv.count_macs`); every layer output makes {ACTIVATION_TRIPS} "
        f"unfused trips through memory; each weight {WEIGHT_TRIPS} per step (AdamW); see "
        f"`benchmarks/roofline.py`. The float32 columns use the TF32 tensor-core peak where the GPU has "
        f"one, as TensorFlow and JAX run float32 matrix work on it by default (PyTorch does not unless "
        f"told: its float32 bound is the FP32 one, 7-8 times lower in compute on these GPUs).\n\n"
        f"{table(costs)}\n\n"
        + (f"## Measured beside the model: one H200\n\nNot this script's output: the records of "
           f"{MEASURED_SOURCE}; `mixed_bfloat16` and XLA, batch 256, full CIFAR-10 JPEG q75, epochs 2-67 "
           f"for the median. The first epoch includes XLA's compilation. The `strong` recipe's "
           f"augmentation ran on the host and set its pace (the records' README).\n\n{beside}\n\n"
           if beside else "")
        + f"For scale, a report and not our measurement: the keras-io ShiftViT example's logs show 10-50 s "
        f"per epoch for the `seed` recipe on its GPUs, well above these bounds; per-step overhead and "
        f"kernels below peak make the difference.\n\nPeak figures (dense), with each data sheet's "
        f"address:\n\n{sheets}\n"
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
