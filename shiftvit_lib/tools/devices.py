"""Devices, precision and distribution: what the machine offers and how training uses it.

Lesson 05 and :func:`shiftvit_lib.tools.runs.train` ask: is there a GPU or TPU
(:func:`has_accelerator`), which mixed precision suits it (:func:`recommended_mixed_precision`),
and how to build a model under a dtype policy (:func:`precision_policy`) or over several
devices (:func:`distribution_scope`).
"""

from __future__ import annotations

import contextlib
import os
import platform
from collections.abc import Iterator, Sequence
from typing import Any

import keras


def _devices() -> list[tuple[str, str]]:
    """``(platform, name)`` of every physical device the current backend sees, e.g. ``("cpu", ...)``.

    Asks the backend for its devices by type, rather than parsing names (TensorFlow
    calls its CPU ``/device:CPU:0``, JAX ``TFRT_CPU_0``).
    """
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return [(d.platform.lower(), f"{d.platform}:{getattr(d, 'device_kind', d)}") for d in jax.devices()]
    if backend == "tensorflow":
        import tensorflow as tf

        return [(d.device_type.lower(), d.name) for d in tf.config.list_physical_devices()]
    if backend == "torch":
        import torch

        return [("gpu", torch.cuda.get_device_name(0))] if torch.cuda.is_available() else [("cpu", "cpu")]
    return []


def describe_machine() -> dict[str, Any]:
    """Backend, accelerator and CPU of this machine, stored with every result."""
    try:
        devices = [name for _, name in _devices()]
    except Exception as error:  # noqa: BLE001 - a description must never break training
        devices = [f"unknown ({error})"]
    return {"backend": keras.backend.backend(), "keras": keras.__version__, "backend_versions": backend_versions(),
            "devices": devices, "cpu_count": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version()}


def backend_versions() -> dict[str, str]:
    """Versions of the packages that run the current backend: JAX with jaxlib, TensorFlow or PyTorch.

    A result depends on them as much as on Keras (a compiler bug in one JAX release changes
    what a CPU computes), so every record names them.
    """
    backend = keras.backend.backend()
    try:
        if backend == "jax":
            import jax
            import jaxlib.version

            return {"jax": jax.__version__, "jaxlib": jaxlib.version.__version__}
        if backend == "tensorflow":
            import tensorflow as tf

            return {"tensorflow": tf.__version__}
        if backend == "torch":
            import torch

            return {"torch": torch.__version__}
    except Exception as error:  # noqa: BLE001 - a description must never break training
        return {backend: f"unknown ({error})"}
    return {}


def accelerator_platform() -> str | None:
    """``"gpu"`` or ``"tpu"`` if the current backend sees one, else ``None`` (CPU only)."""
    try:
        platforms = {kind for kind, _ in _devices()}
    except Exception:  # noqa: BLE001 - no usable runtime means no accelerator
        return None
    if "tpu" in platforms:
        return "tpu"
    if platforms & {"gpu", "cuda", "rocm"}:
        return "gpu"
    return None


def has_accelerator() -> bool:
    """True if the current backend sees a GPU or TPU."""
    return accelerator_platform() is not None


def gpu_compute_capability() -> tuple[int, int] | None:
    """The first GPU's CUDA compute capability ``(major, minor)``, as the backend reports it.

    ``None`` when the backend does not say (no GPU, or a GPU that is not NVIDIA's).
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        gpus = tf.config.list_physical_devices("GPU")
        capability = tf.config.experimental.get_device_details(gpus[0]).get("compute_capability") if gpus else None
    elif backend == "jax":
        import jax

        capability = getattr(jax.devices()[0], "compute_capability", None)  # a string, e.g. "7.5"
        capability = str(capability).split(".") if capability else None
    elif backend == "torch":
        import torch

        capability = torch.cuda.get_device_capability(0) if torch.cuda.is_available() else None
    else:
        capability = None
    return (int(capability[0]), int(capability[1])) if capability else None


def recommended_mixed_precision() -> str | None:
    """The dtype policy that speeds up training here, or ``None`` on a CPU.

    bfloat16 on TPUs and on GPUs of compute capability 8.0 or newer (A100, L4, H100,
    RTX 30xx and later); float16 (Keras adds loss scaling) on older GPUs such as the T4
    (7.5), which have no fast bfloat16, and on a GPU whose capability the backend does not
    report (float16 runs on every GPU). On a CPU, keep float32.
    """
    platform_kind = accelerator_platform()
    if platform_kind is None:
        return None
    if platform_kind == "gpu":
        capability = gpu_compute_capability()
        if capability is None or capability < (8, 0):
            return "mixed_float16"
    return "mixed_bfloat16"


@contextlib.contextmanager
def distribution_scope(kind: str | None, devices: Sequence[str] | None = None) -> Iterator[Any]:
    """Build and compile inside this scope to train on several devices.

    ``kind``: ``None`` (one device), ``"mirrored"`` (TensorFlow's
    ``MirroredStrategy``), or ``"data_parallel"`` (Keras' distribution API on JAX).
    """
    if kind is None:
        yield None
        return
    backend = keras.backend.backend()
    if kind == "mirrored":
        if backend != "tensorflow":
            raise ValueError("distribute='mirrored' needs the TensorFlow backend; on JAX use 'data_parallel'.")
        import tensorflow as tf

        strategy = tf.distribute.MirroredStrategy(devices=list(devices) if devices else None)
        with strategy.scope():
            yield strategy
        return
    if kind == "data_parallel":
        if backend != "jax":
            raise ValueError("distribute='data_parallel' needs the JAX backend; on TensorFlow use 'mirrored'.")
        previous = keras.distribution.distribution()
        keras.distribution.set_distribution(keras.distribution.DataParallel(devices=devices))
        try:
            yield keras.distribution.distribution()
        finally:
            keras.distribution.set_distribution(previous)
        return
    raise ValueError(f"Unknown distribute={kind!r}; use None, 'mirrored' or 'data_parallel'.")


@contextlib.contextmanager
def precision_policy(name: str | None) -> Iterator[None]:
    """Temporarily set Keras' dtype policy (e.g. ``"mixed_bfloat16"``) while building."""
    if name is None:
        yield
        return
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(name)
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def replica_count(strategy: Any) -> int:
    """How many copies of the model a :func:`distribution_scope` trains in parallel."""
    if strategy is None:
        return 1
    if hasattr(strategy, "num_replicas_in_sync"):  # tf.distribute
        return int(strategy.num_replicas_in_sync)
    return int(strategy.device_mesh.devices.size)  # keras.distribution.DataParallel

