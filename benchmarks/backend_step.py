"""One training step of a preset on the current Keras backend (lesson 00's backend comparison).

    for b in tensorflow jax torch; do KERAS_BACKEND=$b python benchmarks/backend_step.py; done

Keras' ``jit_compile="auto"`` decides XLA per backend (TensorFlow: off for this model,
JAX: on, PyTorch: eager). Random images; compilation is left out (warm-up steps).
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import keras  # noqa: E402

import shiftvit_lib as sv  # noqa: E402
from shiftvit_lib.notebook.timing import time_training_steps  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presets", nargs="*", default=["quick", "cpu"])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=8)
    args = parser.parse_args(argv)
    for name in args.presets:
        (timing,) = time_training_steps(sv.preset(name, batch_size=args.batch_size), xla=("auto",),
                                                steps=args.steps, warmup=2)
        print(f"{keras.backend.backend():10} {name:8} XLA {'on ' if timing.xla else 'off'} "
              f"{1000 * timing.step_seconds:8.1f} ms/step {timing.images_per_second:8,.0f} images/s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
