"""tools/devices.py: the mixed precision it recommends per GPU, and the versions it records.

No GPU here: each backend's module is replaced by a fake whose device query reports one GPU
of a chosen compute capability, so the decision is tested for a T4 (7.5), an A100 (8.0) and
an H100 (9.0), through the one device query that everything else reads.
"""

import importlib
import sys
from types import SimpleNamespace

import keras
import pytest

from shiftvit_lib.tools import devices

T4, A100, H100 = (7, 5), (8, 0), (9, 0)


def _fake_torch(capability):
    cuda = SimpleNamespace(is_available=lambda: True, get_device_capability=lambda device=0: capability,
                           get_device_name=lambda device=0: "NVIDIA fake")
    return SimpleNamespace(cuda=cuda, __version__="0.0-fake")


def _fake_jax(capability):
    device = SimpleNamespace(platform="gpu", device_kind="NVIDIA fake", compute_capability=capability)
    return SimpleNamespace(devices=lambda: [device], __version__="0.0-fake")


def _fake_tensorflow(capability):
    cpu, gpu = (SimpleNamespace(device_type=kind, name=f"/physical_device:{kind}:0") for kind in ("CPU", "GPU"))
    details = {"compute_capability": capability, "device_name": "NVIDIA fake"}
    experimental = SimpleNamespace(get_device_details=lambda device: details if device is gpu else {})
    config = SimpleNamespace(list_physical_devices=lambda: [cpu, gpu], experimental=experimental)
    return SimpleNamespace(config=config, __version__="0.0-fake")


FAKES = {"torch": _fake_torch, "jax": _fake_jax, "tensorflow": _fake_tensorflow}


@pytest.mark.parametrize("backend, capability, read, expected", [
    ("torch", T4, T4, "mixed_float16"), ("torch", A100, A100, "mixed_bfloat16"), ("torch", H100, H100, "mixed_bfloat16"),
    ("torch", (7, 0), (7, 0), "mixed_float16"), ("jax", "7.5", (7, 5), "mixed_float16"),
    ("jax", "8.0", (8, 0), "mixed_bfloat16"), ("jax", "8.9", (8, 9), "mixed_bfloat16"),
    ("jax", "10.0", (10, 0), "mixed_bfloat16"), ("tensorflow", T4, T4, "mixed_float16"),
    ("tensorflow", H100, H100, "mixed_bfloat16"),
    ("jax", None, None, "mixed_float16"),  # a GPU that reports no capability (not NVIDIA's): float16
])
def test_each_backend_reads_the_compute_capability(monkeypatch, backend, capability, read, expected):
    monkeypatch.setattr(keras.backend, "backend", lambda: backend)
    monkeypatch.setitem(sys.modules, backend, FAKES[backend](capability))
    assert devices.accelerator_platform() == "gpu"
    assert devices.gpu_compute_capability() == read
    assert devices.recommended_mixed_precision() == expected
    if backend == "tensorflow":
        assert devices.describe_machine()["devices"] == ["/physical_device:CPU:0", "/physical_device:GPU:0"]
    if backend == "torch":  # each backend reports its own packages
        assert devices.backend_versions() == {"torch": "0.0-fake"}


def test_a_backend_that_cannot_list_its_devices_means_no_accelerator_and_a_tpu_gets_bfloat16(monkeypatch):
    def broken():
        raise RuntimeError("no runtime for the test")

    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    monkeypatch.setitem(sys.modules, "jax", SimpleNamespace(devices=broken, __version__="0.0-fake"))
    assert devices.accelerator_platform() is None and devices.recommended_mixed_precision() is None
    assert devices.describe_machine()["devices"] == ["unknown (no runtime for the test)"]
    monkeypatch.setattr(devices, "accelerator_platform", lambda: "tpu")
    assert devices.recommended_mixed_precision() == "mixed_bfloat16"


def test_the_machine_description_names_the_backends_version():
    machine, backend = devices.describe_machine(), keras.backend.backend()
    modules = {"jax": {"jax": "jax", "jaxlib": "jaxlib.version"}, "tensorflow": {"tensorflow": "tensorflow"},
               "torch": {"torch": "torch"}}[backend]
    assert machine["backend_versions"] == {name: importlib.import_module(module).__version__
                                           for name, module in modules.items()}
    assert machine["keras"] == keras.__version__
    # CPU-only machines (CI) are not mistaken for GPU machines: the lessons pick quick or full mode by it.
    if backend == "tensorflow":
        import tensorflow as tf

        accelerators = tf.config.list_physical_devices("GPU") + tf.config.list_physical_devices("TPU")
        assert (devices.accelerator_platform() is not None) == bool(accelerators)
        assert accelerators or devices.recommended_mixed_precision() is None
