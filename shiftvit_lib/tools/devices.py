"""Devices and precision: what the machine offers and how training uses it.

Lesson 05 and :func:`shiftvit_lib.tools.runs.train` ask: is there a GPU or TPU
(:func:`accelerator_platform`), which mixed precision suits it (:func:`recommended_mixed_precision`),
and how to build a model under a dtype policy (:func:`precision_policy`). Training on several
devices needs no code here: set ``keras.distribution.DataParallel`` (lesson 05 shows how).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import platform
from collections.abc import Iterator
from typing import Any

import keras

# The packages that run each backend. A result depends on them as much as on Keras (a compiler
# bug in one JAX release changes what a CPU computes), so every record names their versions.
BACKEND_PACKAGES = {"jax": ("jax", "jaxlib"), "tensorflow": ("tensorflow",), "torch": ("torch",)}
GPU_PLATFORMS = {"gpu", "cuda", "rocm"}  # what JAX and TensorFlow call a GPU


def _devices() -> list[tuple[str, str, Any]]:
    """``(platform, name, compute capability)`` of every physical device the current backend sees.

    One query per backend gives all three, by type rather than by parsing names (TensorFlow
    calls its CPU ``/device:CPU:0``, JAX ``TFRT_CPU_0``). The capability is what the backend
    reports for an NVIDIA GPU (``"7.5"`` or ``(7, 5)``), else ``None``. A backend that cannot
    list its devices gives one ``"unknown"`` device that says why: a description of the machine
    must never break training, and no usable runtime means no accelerator.
    ``keras.distribution.list_devices()`` gives only ``"gpu:0"``-style names, and not on PyTorch.
    """
    backend = keras.backend.backend()
    try:
        if backend == "jax":
            import jax

            return [
                (d.platform.lower(), f"{d.platform}:{d.device_kind}", getattr(d, "compute_capability", None))
                for d in jax.devices()
            ]
        if backend == "tensorflow":
            import tensorflow as tf

            details = tf.config.experimental.get_device_details  # {} for anything but a GPU
            return [
                (d.device_type.lower(), d.name, details(d).get("compute_capability"))
                for d in tf.config.list_physical_devices()
            ]
        if backend == "torch":
            import torch

            if torch.cuda.is_available():
                return [("gpu", torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))]
    except Exception as error:  # noqa: BLE001 - see the docstring
        return [("unknown", f"unknown ({error})", None)]
    return [("cpu", "cpu", None)]  # PyTorch without CUDA; a backend that runs on the CPU only (numpy)


def describe_machine() -> dict[str, Any]:
    """Backend, accelerator and CPU of this machine, stored with every result."""
    return {
        "backend": keras.backend.backend(),
        "keras": keras.__version__,
        "backend_versions": backend_versions(),
        "devices": [name for _, name, _ in _devices()],
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def backend_versions() -> dict[str, str]:
    """Versions of the packages that run the current backend (:data:`BACKEND_PACKAGES`)."""
    # Keras imported them already to run that backend (jaxlib with jax): nothing here can fail.
    packages = BACKEND_PACKAGES.get(keras.backend.backend(), ())
    return {name: importlib.import_module(name).__version__ for name in packages}


def accelerator_platform() -> str | None:
    """``"gpu"`` or ``"tpu"`` if the current backend sees one, else ``None`` (CPU only)."""
    platforms = {"gpu" if kind in GPU_PLATFORMS else kind for kind, _, _ in _devices()}
    return next((kind for kind in ("tpu", "gpu") if kind in platforms), None)  # a TPU before a GPU


def gpu_compute_capability() -> tuple[int, int] | None:
    """The first GPU's CUDA compute capability ``(major, minor)``, as the backend reports it.

    ``None`` when the backend does not say (no GPU, or a GPU that is not NVIDIA's).
    """
    capability = next((found for kind, _, found in _devices() if kind in GPU_PLATFORMS), None)
    if isinstance(capability, str):  # JAX says "7.5"
        capability = capability.split(".")
    return (int(capability[0]), int(capability[1])) if capability else None


def recommended_mixed_precision() -> str | None:
    """The dtype policy that speeds up training here, or ``None`` on a CPU.

    bfloat16 on TPUs and on GPUs of compute capability 8.0 or newer (A100, L4, H100,
    RTX 30xx and later); float16 (Keras adds loss scaling) on older GPUs such as the T4
    (7.5), which have no fast bfloat16, and on a GPU whose capability the backend does not
    report (float16 runs on every GPU). On a CPU, keep float32.
    """
    platform_kind = accelerator_platform()
    if platform_kind == "gpu" and (gpu_compute_capability() or (0, 0)) < (8, 0):
        return "mixed_float16"
    return None if platform_kind is None else "mixed_bfloat16"


@contextlib.contextmanager
def precision_policy(name: str | None) -> Iterator[None]:
    """Temporarily set Keras' dtype policy (e.g. ``"mixed_bfloat16"``) while building; ``None`` keeps it."""
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(name or previous)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)
