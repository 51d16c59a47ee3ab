"""The code a GPU runs, run on the CPU: mixed precision, XLA and two-device data parallel.

``tests/project/test_gpu_path.py`` runs this file in a fresh Python process per backend
(``KERAS_BACKEND``, and for JAX ``XLA_FLAGS``, must be set before Keras loads: this file sets
``XLA_FLAGS`` itself) and reads the one JSON line it prints. Each check returns plain numbers;
the tests judge them.

    PYTHONPATH=. KERAS_BACKEND=jax python tests/project/gpu_path_checks.py
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=2")  # two JAX CPU devices
# JAX compiles each model's step anew; two models of one graph (the data-parallel check's two
# one-device runs) share one compilation through this cache, in a folder removed at exit.
_compiled = tempfile.TemporaryDirectory()
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", _compiled.name)
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
BACKEND = os.environ.get("KERAS_BACKEND", "tensorflow")
if BACKEND == "tensorflow":
    # Two logical CPUs stand in for two GPUs; this must happen before TensorFlow starts.
    import tensorflow as tf

    _cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(_cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402
import numpy as np  # noqa: E402

import shiftvit_lib as sv  # noqa: E402
from shiftvit_lib.recipe import compile_for_training  # noqa: E402
from shiftvit_lib.tools.devices import precision_policy  # noqa: E402

BATCH = 32
# No random layers: one device and two must compute the same function of the same batches.
DETERMINISTIC = dict(augment=False, mlp_dropout=0.0, drop_path_rate=0.0, batch_size=BATCH)


def _batches(count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, (count * BATCH, 32, 32, 3)).astype("float32"),
            rng.integers(0, 10, count * BATCH))


def _model(precision: str | None = None, jit_compile: bool | str = "auto", steps: int = 20) -> keras.Model:
    """The quick preset as ``sv.train`` compiles it (XLA "auto", as a GPU run would use)."""
    config = sv.preset("quick", **DETERMINISTIC)
    keras.utils.set_random_seed(0)
    with precision_policy(precision):
        model = sv.build_shiftvit(config, seed=0)
        compile_for_training(model, config, steps_per_epoch=steps, epochs=1, jit_compile=jit_compile)
    return model


def _step_loss(model: keras.Model, x: np.ndarray, y: np.ndarray) -> float:
    """One training step on ``(x, y)`` and the loss of that step alone.

    ``train_on_batch`` reports the loss tracker's mean, and Keras before 3.15 (Colab's 3.13.2
    among them) never resets it between calls: the n-th call returned the mean of the first n
    steps' losses, so a loss that fell fast looked as if it barely moved (keras-team/keras#22617
    added the reset in 3.15). Resetting first gives each step's own loss on every version.
    """
    model.reset_metrics()
    return float(model.train_on_batch(x, y, return_dict=True)["loss"])


def _losses(model: keras.Model, steps: int) -> list[float]:
    """The loss of each of ``steps`` training steps on the same batch (the model learns it)."""
    images, labels = _batches(1)
    return [_step_loss(model, images, labels) for _ in range(steps)]


def step_loss() -> dict:
    """What ``_step_loss`` reports for a second batch, and that batch's loss computed directly.

    The direct loss is the compiled loss of the model's training-mode logits before the step
    (the configuration has no random layers); a running mean of two steps would differ from it.
    """
    images, labels = _batches(2)
    model = _model(steps=2)
    first = _step_loss(model, images[:BATCH], labels[:BATCH])
    x, y = images[BATCH:], labels[BATCH:]
    direct = float(keras.ops.convert_to_numpy(model.loss(y, model(x, training=True))))
    return {"first": first, "direct": direct, "reported": _step_loss(model, x, y)}


def mixed_precision(policy: str, steps: int = 12) -> dict:
    """A few steps under ``policy``: the optimizer Keras chose, its loss scale, the dtypes, the losses."""
    model = _model(policy, steps=steps)
    losses = _losses(model, steps)
    scale = getattr(model.optimizer, "dynamic_scale", None)
    layer, logits = model.get_layer("stage_1"), model(_batches(1)[0][:2])
    return {
        "optimizer": type(model.optimizer).__name__,
        "loss_scale": float(keras.ops.convert_to_numpy(scale)) if scale is not None else None,
        # a block's computations and variables, and the logits (float32 under a mixed policy too)
        "dtypes": [layer.compute_dtype, layer.variable_dtype, keras.backend.standardize_dtype(logits.dtype)],
        "losses": losses,
    }


def xla(steps: int = 5) -> dict:
    """The same steps compiled with XLA and without: the compiled flag and both loss curves."""
    compiled, plain = _model(jit_compile=True, steps=steps), _model(jit_compile=False, steps=steps)
    return {"jit_compile": bool(compiled.jit_compile), "plain_jit_compile": bool(plain.jit_compile),
            "xla_losses": _losses(compiled, steps), "plain_losses": _losses(plain, steps)}


@contextlib.contextmanager
def _on_two_devices():
    """Data parallelism as a lesson writes it, with the backends' own APIs: the replica count."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        strategy = tf.distribute.MirroredStrategy(devices=["/cpu:0", "/cpu:1"])
        with strategy.scope():
            yield strategy.num_replicas_in_sync
        return
    previous = keras.distribution.distribution()
    keras.distribution.set_distribution(keras.distribution.DataParallel())
    try:
        yield keras.distribution.distribution().device_mesh.devices.size
    finally:
        keras.distribution.set_distribution(previous)


def _weights(model: keras.Model) -> list[np.ndarray]:
    return [np.asarray(w, dtype="float64") for w in model.get_weights()]


def _fit_weights(two_devices: bool, images: np.ndarray, labels: np.ndarray) -> tuple[list, list, int]:
    """The weights before and after a ``fit`` on ``images``, and the replica count."""
    with _on_two_devices() if two_devices else contextlib.nullcontext(1) as replicas:
        model = _model(steps=len(labels) // BATCH)
        start = _weights(model)
        model.fit(images, labels, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    return start, _weights(model), int(replicas)


def data_parallel(steps: int = 3) -> dict:
    """Weights after ``steps`` steps on one device, on two, and on one with other batches.

    Returned as distances, relative to how far one device's weights moved from the start.
    """
    images, labels = _batches(steps)
    start, one, _ = _fit_weights(False, images, labels)
    _, two, replicas = _fit_weights(True, images, labels)
    _, other, _ = _fit_weights(False, *_batches(steps, seed=1))  # the deliberately different run

    def largest(a, b):
        return max(float(np.abs(x - y).max()) for x, y in zip(a, b))

    return {"replicas": replicas, "moved": largest(one, start), "two_vs_one": largest(two, one),
            "other_vs_one": largest(other, one)}


def main() -> None:
    report = {
        "backend": keras.backend.backend(),
        "keras": keras.__version__,
        "devices": len(keras.distribution.list_devices()),
        "step_loss": step_loss(),
        "mixed_float16": mixed_precision("mixed_float16"),
        "mixed_bfloat16": mixed_precision("mixed_bfloat16"),
        "xla": xla(),
        "data_parallel": data_parallel(),
    }
    print("REPORT " + json.dumps(report))


if __name__ == "__main__":
    main()
