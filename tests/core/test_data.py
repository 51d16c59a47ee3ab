"""shiftvit_lib.data: the split of a source's arrays, the input pipeline, MixUp/CutMix and one-hot targets."""

from __future__ import annotations

import numpy as np
import pytest

from shiftvit_lib.data import (
    CIFAR10_CLASSES,
    DataSplits,
    NumpyBatches,
    RawData,
    iterate_batches,
    make_dataset,
    make_splits,
    mix_batch,
    one_hot,
)


def sorted_pool(train_per_class: int = 200, test_per_class: int = 50) -> RawData:
    """A source's arrays as class folders give them: sorted by class, every image distinct."""

    def part(per_class: int) -> tuple[np.ndarray, np.ndarray]:
        labels = np.repeat(np.arange(10), per_class).astype(np.int64)
        images = np.zeros((len(labels), 32, 32, 3), np.uint8)
        images[:, 0, 0, 0], images[:, 0, 0, 1] = np.divmod(np.arange(len(labels)), 256)
        return images, labels

    return RawData(*part(train_per_class), *part(test_per_class), description="a sorted test pool")


def split(seed: int = 42, pool: RawData | None = None, **options: float) -> DataSplits:
    return make_splits(pool or sorted_pool(), np.random.default_rng(seed), **options)


def test_the_split_has_the_documented_sizes_class_balance_summary_and_mixed_order() -> None:
    splits = split()
    assert splits.split_sizes() == {"train": 1600, "val": 400, "test": 500}
    counts = splits.class_counts()
    assert counts["train"].tolist() == [160] * 10 and counts["val"].tolist() == [40] * 10
    assert counts["test"].tolist() == [50] * 10
    assert splits.x_train.shape == (1600, 32, 32, 3) and splits.x_train.dtype == np.uint8
    assert splits.class_names == CIFAR10_CLASSES and splits.source == "a sorted test pool"
    text = splits.summary()
    assert text.splitlines()[0] == splits.source and str(splits) == text and "train=1,600" in repr(splits)
    for line in ("1,600 images (160 per class)", "400 images (40 per class)", "500 images (50 per class)"):
        assert line in text
    # Class folders list images class by class; the first images of a plot must still mix
    # classes, or a lesson's "first eight test images" would all be airplanes.
    assert len(set(splits.y_train[:50].tolist())) > 5 and len(set(splits.y_test[:20].tolist())) >= 5


def test_train_and_val_partition_the_training_pool_reproducibly_by_the_seed() -> None:
    pool = sorted_pool(20, 10)
    full, parted, again, other = split(pool=pool, val_fraction=0.0), split(pool=pool), split(pool=pool), split(7, pool)

    def rows(x: np.ndarray) -> list[bytes]:
        return sorted(image.tobytes() for image in x)

    assert len(full.y_val) == 0
    assert rows(np.concatenate([parted.x_train, parted.x_val])) == rows(full.x_train)
    assert not set(rows(parted.x_train)) & set(rows(parted.x_val))
    np.testing.assert_array_equal(parted.x_val, again.x_val)
    np.testing.assert_array_equal(parted.y_train, again.y_train)
    assert not np.array_equal(parted.x_val, other.x_val)


X4, Y4 = np.zeros((4, 32, 32, 3), np.uint8), np.zeros(4, np.int64)
SPLITS4 = dict(x_train=X4, y_train=Y4, x_val=X4, y_val=Y4, x_test=X4, y_test=Y4, class_names=CIFAR10_CLASSES,
               source="test")


@pytest.mark.parametrize(("call", "message"), [
    (lambda: split(val_fraction=1.0), r"val_fraction must be in \[0, 1\)"),
    (lambda: split(val_fraction=-0.1), r"val_fraction must be in \[0, 1\)"),
    (lambda: split(pool=sorted_pool(1, 1)), "too few"),
    (lambda: DataSplits(**{**SPLITS4, "x_val": X4.astype(np.float32)}), "uint8"),
    (lambda: DataSplits(**{**SPLITS4, "y_test": Y4[:3]}), "4 images but 3 labels"),
    (lambda: DataSplits(**{**SPLITS4, "y_train": Y4 + 10}), r"labels must lie in \[0, 9\]"),
    (lambda: make_dataset(X4, Y4, 0, shuffle=False), "batch_size"),
    (lambda: make_dataset(X4, Y4[:3], 2, shuffle=False), "4 items but y has 3"),
    (lambda: make_dataset(X4, Y4, 4, shuffle=False, mixup_alpha=0.5), "pass num_classes"),
    (lambda: NumpyBatches(X4, Y4, 8, shuffle=False, drop_remainder=True), "leaves no batch"),
    (lambda: mix_batch(X4.astype("float32"), Y4, np.random.default_rng(0), mixup_alpha=1.0), "one-hot targets"),
    (lambda: one_hot(np.array([0, 10]), 10), r"labels must lie in \[0, 10\)"),
])
def test_bad_input_is_refused_naming_what_is_wrong(call, message) -> None:
    DataSplits(**SPLITS4)  # the arrays the bad cases change are a valid split
    with pytest.raises(ValueError, match=message):
        call()


# --------------------------------------------------------------------------
# make_dataset
# --------------------------------------------------------------------------


def epoch_order(dataset: object) -> list[int]:
    return [int(v) for _, labels in iterate_batches(dataset) for v in labels]


def _distinct_images(n: int, side: int = 8, step: float = 10.0) -> np.ndarray:
    """Image i is filled with the value step * i, so every pixel says where it came from."""
    return np.broadcast_to((step * np.arange(n))[:, None, None, None], (n, side, side, 3)).astype("float32")


def test_batches_keep_uint8_and_pairing_and_reshuffle_reproducibly_each_epoch() -> None:
    x, y = _distinct_images(50, 32, step=1).astype(np.uint8), np.arange(50)  # pixels equal the label
    batches, again = make_dataset(x, y, 8, shuffle=True, seed=7), NumpyBatches(x, y, 8, shuffle=True, seed=7)
    assert [len(labels) for _, labels in iterate_batches(batches)] == [8] * 6 + [2] and len(batches) == 7
    images, labels = batches[0]
    assert images.shape == (8, 32, 32, 3) and images.dtype == np.uint8
    np.testing.assert_array_equal(images[:, 0, 0, 0], labels)  # each image kept its label
    epoch1 = epoch_order(batches)
    assert epoch1 == epoch_order(again) and sorted(epoch1) == list(range(50)) and epoch1 != list(range(50))
    batches.on_epoch_end()  # as Keras does after every epoch
    assert epoch_order(batches) != epoch1  # a new order every epoch
    assert epoch_order(make_dataset(x, y, 8, shuffle=True, seed=8)) != epoch1
    assert epoch_order(make_dataset(x, y, 8, shuffle=False)) == list(range(50))
    assert len(NumpyBatches(x, y, 8, shuffle=False, drop_remainder=True)) == 6
    with pytest.raises(IndexError):
        batches[7]
    images, targets = make_dataset(x[:10], y[:10], 5, shuffle=False, num_classes=10)[0]  # one-hot, not mixed
    assert images.dtype == np.uint8 and targets.argmax(axis=1).tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("alphas, kind", [({"mixup_alpha": 0.8}, "mixup"), ({}, "none")])
def test_mixup_blends_images_and_targets_with_one_weight_and_zero_alphas_change_nothing(alphas, kind):
    images, targets = _distinct_images(6), one_hot(np.arange(6), 10)
    mixed, mixed_targets, info = mix_batch(images, targets, np.random.default_rng(0), **alphas)
    lam, partner = info["lam"], info["partner"]
    assert info["kind"] == kind and sorted(partner) == list(range(6)) and (0.0 < lam < 1.0) is (kind == "mixup")
    np.testing.assert_allclose(mixed, lam * images + (1 - lam) * images[partner], rtol=1e-6)
    np.testing.assert_allclose(mixed_targets, lam * targets + (1 - lam) * targets[partner], rtol=1e-6)
    np.testing.assert_allclose(mixed_targets.sum(axis=1), 1.0, rtol=1e-6)


def test_cutmix_pastes_a_box_and_weights_targets_by_its_exact_area_and_both_alphas_pick_each_kind():
    images, labels = _distinct_images(8, side=16), np.arange(8)
    targets = one_hot(labels, 10)
    kinds = set()
    for seed in range(30):
        mixed, mixed_targets, info = mix_batch(images, targets, np.random.default_rng(seed), mixup_alpha=0.8,
                                               cutmix_alpha=1.0)
        kinds.add(info["kind"])
        if info["kind"] == "mixup":  # (checked above)
            continue
        top, bottom, left, right = info["box"]
        inside = np.zeros((16, 16), bool)
        inside[top:bottom, left:right] = True
        partner = info["partner"]
        own_share = (~inside).mean()
        np.testing.assert_array_equal(mixed[:, inside], images[partner][:, inside])
        np.testing.assert_array_equal(mixed[:, ~inside], images[:, ~inside])
        # the target's weight on each label is that label's share of pixels
        expected = own_share * targets + (1 - own_share) * targets[partner]
        np.testing.assert_allclose(mixed_targets, expected, rtol=1e-6)
        assert info["lam"] == pytest.approx(own_share)
    assert kinds == {"mixup", "cutmix"}


def test_mixed_batches_are_reproducible_whatever_order_they_are_loaded_in():
    x, y = np.random.default_rng(0).integers(0, 256, (40, 8, 8, 3)).astype("uint8"), np.arange(40) % 10
    kwargs = dict(shuffle=True, seed=5, num_classes=10, mixup_alpha=0.8, cutmix_alpha=1.0, drop_remainder=True)
    first, second = NumpyBatches(x, y, 16, **kwargs), NumpyBatches(x, y, 16, **kwargs)
    forward = [first[i] for i in range(len(first))]
    backward = [second[i] for i in reversed(range(len(second)))][::-1]
    assert len(forward) == 2  # 40 // 16: the last, smaller batch is dropped
    np.testing.assert_equal(forward, backward)  # the same images and targets, batch by batch
    for images, targets in forward:
        assert images.dtype == np.float32 and targets.shape == (16, 10)
        np.testing.assert_allclose(targets.sum(axis=1), 1.0, rtol=1e-6)
    first.on_epoch_end()
    assert not np.array_equal(first[0][0], forward[0][0])  # a new epoch mixes differently
