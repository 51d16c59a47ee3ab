"""Small fake data shared by the core and tooling tests."""

import numpy as np

from shiftvit_lib.data import DataSplits


def tiny_splits(n_train=96, n_val=32, n_test=32, seed=0) -> DataSplits:
    """Random images keep a test fast; labels balanced over 10 classes."""
    rng = np.random.default_rng(seed)

    def part(n):
        return rng.integers(0, 256, (n, 32, 32, 3)).astype("uint8"), np.arange(n) % 10

    (xt, yt), (xv, yv), (xs, ys) = part(n_train), part(n_val), part(n_test)
    names = tuple(f"class_{i}" for i in range(10))
    return DataSplits(xt, yt, xv, yv, xs, ys, names, source="random test images")
