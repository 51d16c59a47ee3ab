"""Tests for shiftvit_lib.vit: the vanilla ViT and its SPT + LSA variant (lesson 07).

Everything that runs a whole model uses the tiny ``vit_quick`` presets, except one
forward pass (and a parameter count) of each CIFAR preset's body. Numerical checks
compare against plain NumPy written independently of the implementation.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import pkgutil

import keras
import numpy as np
import pytest
from fakes import logits_of, run_on_backend
from hypothesis import given, settings
from hypothesis import strategies as st
from keras.ops import convert_to_numpy as numpy_of

import shiftvit_lib
from shiftvit_lib import vit
from shiftvit_lib.config import preset
from shiftvit_lib.vit import DIAGONAL_DIRECTIONS, TransformerBlock, build_vit

QUICK_PRESETS = ["vit_quick", "vit_spt_lsa_quick"]


# -------------------------------------------------------------------------------------
# NumPy references (deliberately written differently from the implementation)
# -------------------------------------------------------------------------------------
def np_diagonal_shifts(x: np.ndarray, s: int) -> dict[str, np.ndarray]:
    """Hand-written slicing with zero fill; out[i, j] = x[i + dy, j + dx]."""
    h, w = x.shape[1:3]
    out = {d: np.zeros_like(x) for d in DIAGONAL_DIRECTIONS}
    # content moves left and up: the top-left (h-s)x(w-s) block comes from x[s:, s:]
    out["left_up"][:, : h - s, : w - s] = x[:, s:, s:]
    # left and down: rows move down by s, columns left by s
    out["left_down"][:, s:, : w - s] = x[:, : h - s, s:]
    # right and up
    out["right_up"][:, : h - s, s:] = x[:, s:, : w - s]
    # right and down
    out["right_down"][:, s:, s:] = x[:, : h - s, : w - s]
    return out


def np_patches(x: np.ndarray, p: int) -> np.ndarray:
    """Loop over patch positions, row-major; flatten each patch (row, col, channel)."""
    b, h, w, _ = x.shape
    rows = []
    for i in range(0, h, p):
        for j in range(0, w, p):
            rows.append(x[:, i : i + p, j : j + p, :].reshape(b, -1))
    return np.stack(rows, axis=1)


def np_layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) * gamma + beta


def np_attention(x, w, num_heads, key_dim, temperature=None, mask_diagonal=False):
    """softmax(Q K^T / T) V per head, heads concatenated, then the output projection."""
    b, n, _ = x.shape
    outs, all_weights = [], []
    for h in range(num_heads):
        cols = slice(h * key_dim, (h + 1) * key_dim)
        q, k, v = (x @ w[key][:, cols] + w[f"b{key}"][cols] for key in "qkv")
        t = math.sqrt(key_dim) if temperature is None else temperature
        logits = np.einsum("bid,bjd->bij", q, k) / t
        if mask_diagonal:
            logits = logits + np.where(np.eye(n, dtype=bool), -np.inf, 0.0)
        e = np.exp(logits - logits.max(-1, keepdims=True))  # softmax over the keys
        all_weights.append(e / e.sum(-1, keepdims=True))
        outs.append(all_weights[-1] @ v)
    return np.concatenate(outs, axis=-1) @ w["o"] + w["bo"], np.stack(all_weights, axis=1)


def random_attention_weights(layer: vit.MultiHeadSelfAttention, seed: int = 0) -> dict:
    """Assign random weights to a built attention layer; return them as NumPy."""
    rng, w = np.random.default_rng(seed), {}
    for key, dense in zip("qkvo", (layer.query_dense, layer.key_dense, layer.value_dense, layer.output_dense)):
        for name, weight in ((key, dense.kernel), (f"b{key}", dense.bias)):
            w[name] = (0.5 * rng.normal(size=weight.shape)).astype("float32")
            weight.assign(w[name])
    return w


def tokens(b=2, n=7, d=12, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(b, n, d)).astype("float32")


def images(b=2, size=32, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(b, size, size, 3)).astype("uint8")


# -------------------------------------------------------------------------------------
# vit.diagonal_shifts, vit.extract_patches, the tokenizers and the position embedding
# -------------------------------------------------------------------------------------
@settings(max_examples=30, deadline=None)
@given(b=st.integers(1, 3), h=st.integers(1, 12), w=st.integers(1, 12), c=st.integers(1, 4), data=st.data())
def test_diagonal_shifts_match_numpy(b, h, w, c, data):
    shift = data.draw(st.integers(0, min(h, w) - 1))
    x = np.arange(b * h * w * c, dtype="float32").reshape(b, h, w, c) + 1.0
    got, want = vit.diagonal_shifts(x, shift), np_diagonal_shifts(x, shift)
    assert len(got) == 4
    for direction, g in zip(DIAGONAL_DIRECTIONS, got, strict=True):
        np.testing.assert_array_equal(numpy_of(g), want[direction], err_msg=direction)


@pytest.mark.parametrize("shape, p", [((2, 8, 8, 3), 4), ((1, 12, 6, 15), 3), ((2, 4, 4, 1), 1)])
def test_extract_patches_matches_numpy(shape, p):
    x = np.random.default_rng(2).normal(size=shape).astype("float32")
    np.testing.assert_array_equal(numpy_of(vit.extract_patches(x, p)), np_patches(x, p))


@pytest.mark.parametrize("shifted", [False, True], ids=["patch", "shifted_patch"])
def test_tokenizers_match_numpy(shifted):
    """PT: patches, then a projection. SPT: the image and its four half-patch diagonal shifts stacked
    (15 channels), patches, a LayerNorm (its gamma and beta made non-trivial), then the projection."""
    x = np.random.default_rng(4).uniform(size=(2, 16, 16, 3)).astype("float32")
    layer = vit.ShiftedPatchTokenizer(4, 10, layer_norm_epsilon=1e-6) if shifted else vit.PatchTokenizer(4, 10)
    layer(x)
    channels = 15 if shifted else 3
    patches = np_patches(x, 4)
    if shifted:
        assert layer.shift == 2  # half a patch by default
        rng = np.random.default_rng(5)
        for weight in (layer.norm.gamma, layer.norm.beta):
            weight.assign(rng.normal(size=weight.shape).astype("float32"))
        shifts = np_diagonal_shifts(x, 2)
        stacked = np.concatenate([x] + [shifts[d] for d in DIAGONAL_DIRECTIONS], axis=-1)
        patches = np_layer_norm(np_patches(stacked, 4), layer.norm.gamma.numpy(), layer.norm.beta.numpy(), 1e-6)
    want = patches @ layer.projection.kernel.numpy() + layer.projection.bias.numpy()
    np.testing.assert_allclose(numpy_of(layer(x)), want, rtol=1e-4, atol=1e-4)
    assert want.shape == (2, 16, 10) and layer.projection.kernel.shape == (4 * 4 * channels, 10)


def test_position_embedding_adds_one_learned_vector_per_position():
    layer = vit.PositionEmbedding()
    x = tokens(3, 5, 8)
    out = numpy_of(layer(x))
    assert layer.embedding.shape == (5, 8) and [w.name for w in layer.trainable_weights] == ["embedding"]
    np.testing.assert_allclose(out, x + layer.embedding.numpy()[None], rtol=1e-6)


# -------------------------------------------------------------------------------------
# Attention: vanilla and LSA
# -------------------------------------------------------------------------------------
@pytest.mark.parametrize("num_heads, key_dim, locality, temperature", [
    (1, 4, False, None), (2, 3, False, None), (4, 12, False, None), (2, 4, True, 0.7), (1, 3, True, 1e6)])
def test_attention_matches_numpy(num_heads, key_dim, locality, temperature):
    """Vanilla attention, and LSA: the diagonal masked, the *variable* temperature used (1e6: uniform).
    The outputs are compared as well as the returned weights: a mask applied to the weights it returns but
    not to the values it mixes would fail."""
    x = tokens(2, 7, 12, seed=7)
    layer = vit.MultiHeadSelfAttention(num_heads, key_dim, locality=locality)
    layer.build(x.shape)
    w = random_attention_weights(layer)
    if locality:
        np.testing.assert_allclose(layer.temperature.numpy(), math.sqrt(key_dim))  # initial value
        layer.temperature.assign(temperature)
    out, weights = layer(x, return_attention_scores=True)
    want, want_weights = np_attention(x.astype("float64"), w, num_heads, key_dim, temperature, mask_diagonal=locality)
    assert out.shape == x.shape and weights.shape == (2, num_heads, 7, 7)
    np.testing.assert_allclose(numpy_of(weights), want_weights, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(numpy_of(out), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("make, shape, params", [
    (lambda: vit.MultiHeadSelfAttention(2, 4, dropout=0.5), (3, 6, 8), 4 * (8 * 8 + 8)),
    (lambda: vit.classifier_head(preset("vit_quick", num_classes=7, head_units=(11, 5), head_dropout=0.5)),
     (3, 7), 2 * 8 + (48 * 11 + 11) + (11 * 5 + 5) + (5 * 7 + 7)),
], ids=["attention", "head"])
def test_shape_parameters_and_dropout_acting_only_in_training(make, shape, params):
    x, layer = tokens(3, 6, 8), make()
    inference = numpy_of(layer(x, training=False))
    assert inference.shape == shape and layer.count_params() == params
    np.testing.assert_array_equal(inference, numpy_of(layer(x, training=False)))
    assert not np.allclose(inference, numpy_of(layer(x, training=True)))


# -------------------------------------------------------------------------------------
# Block and head
# -------------------------------------------------------------------------------------
def block_params(d: int, inner: int, hidden: int, lsa: bool) -> int:
    """Two LayerNorms, q/k/v and the output projection, the MLP, LSA's temperature (one scalar)."""
    return 2 * 2 * d + 3 * (d * inner + inner) + inner * d + d + d * hidden + hidden + hidden * d + d + int(lsa)


def expected_params(cfg) -> int:
    """Closed-form parameter count, so lesson 07 can explain where they live."""
    p, c, d, n = cfg.patch_size, cfg.input_shape[-1], cfg.projection_dim, cfg.num_tokens
    patch_dim = p * p * c * (5 if cfg.use_spt else 1)
    tokenizer = patch_dim * d + d + (2 * patch_dim if cfg.use_spt else 0)
    inner, hidden = cfg.num_heads * cfg.head_key_dim, int(cfg.mlp_ratio * d)
    head, width = 2 * d, n * d
    for units in (*cfg.head_units, cfg.num_classes):
        head += width * units + units
        width = units
    return tokenizer + n * d + cfg.depth * block_params(d, inner, hidden, cfg.use_lsa) + head


@pytest.mark.parametrize("locality", [False, True])
def test_transformer_block_shape_params_and_residual(locality):
    """With its two branch outputs zeroed the block must be the identity (pre-norm)."""
    x = tokens(2, 9, 16)
    block = TransformerBlock(num_heads=4, key_dim=8, mlp_ratio=2.0, dropout=0.1, locality=locality)
    assert block(x).shape == (2, 9, 16)
    assert block.count_params() == block_params(16, 4 * 8, 32, locality)
    assert (block.attention.temperature is None) is not locality
    for dense in (block.attention.output_dense, block.mlp.project):
        for weight in (dense.kernel, dense.bias):
            weight.assign(np.zeros(weight.shape, "float32"))
    np.testing.assert_allclose(numpy_of(block(x)), x, atol=1e-6)


# -------------------------------------------------------------------------------------
# get_config round trips of every layer, and the registry
# -------------------------------------------------------------------------------------
LAYER_CASES = [
    (lambda: vit.PatchTokenizer(4, 8, name="pt"), (2, 8, 8, 3)),
    (lambda: vit.ShiftedPatchTokenizer(4, 8, shift=1, layer_norm_epsilon=1e-5, name="spt"), (2, 8, 8, 3)),
    (lambda: vit.PositionEmbedding(initializer_stddev=0.1, name="pos"), (2, 4, 8)),
    (lambda: vit.MultiHeadSelfAttention(2, 3, locality=True, dropout=0.1, name="lsa"), (2, 4, 8)),
    (lambda: vit.MultiHeadSelfAttention(2, 3, name="mhsa"), (2, 4, 8)),
    (lambda: TransformerBlock(2, 4, mlp_ratio=1.5, dropout=0.2, locality=True, name="blk"), (2, 4, 8)),
]


@pytest.fixture(scope="module")
def every_module_imported():
    """Another module registering a class of the same name would hijack loading."""
    for info in pkgutil.iter_modules(shiftvit_lib.__path__):
        with contextlib.suppress(ImportError):  # optional dependencies (plots, manim...) are not our concern
            importlib.import_module(f"shiftvit_lib.{info.name}")


@pytest.mark.parametrize("make, shape", LAYER_CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_every_layer_round_trips_through_get_config(every_module_imported, make, shape):
    layer = make()
    x = np.random.default_rng(0).uniform(size=shape).astype("float32")
    y = numpy_of(layer(x))
    config = layer.get_config()
    # Through the registry ("shiftvit_lib>Name"), as a .keras file does it.
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(clone) is type(layer) and clone.get_config() == config
    assert clone.built  # by the serialized build_config, as a .keras file rebuilds it
    # and the plain from_config path
    assert type(layer).from_config(config).get_config() == config
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(numpy_of(clone(x)), y, rtol=1e-6, atol=1e-6)


# -------------------------------------------------------------------------------------
# Presets
# -------------------------------------------------------------------------------------
KERAS_IO_VIT = dict(  # the keras-io ViT example's sizes, on ShiftViT's input pipeline and recipe
    input_shape=(32, 32, 3), num_classes=10, resize_to=52, image_size=48, augment=True, flip=True, patch_size=4,
    num_tokens=144, projection_dim=64, num_heads=4, head_key_dim=64, depth=8, mlp_ratio=2.0, dropout=0.1,
    head_units=(2048, 1024), head_dropout=0.5, layer_norm_epsilon=1e-6, batch_size=256, lr_max=1e-3,
    weight_decay=1e-4)
SEED_RECIPE = ("input_shape num_classes augment resize_to image_size flip random_erasing patch_size batch_size epochs "
               "lr_start lr_max warmup_fraction weight_decay label_smoothing early_stopping_patience").split()


@pytest.mark.parametrize("name, spt_lsa", [("vit_cifar", False), ("vit_spt_lsa_cifar", True)])
def test_cifar_presets_follow_keras_io_and_the_seed_recipe_and_their_models_run(name, spt_lsa):
    """The CIFAR preset (144 tokens, the keras-io head) runs and counts as the closed form says, built
    with one of its eight identical blocks: building the functional graph of each block is most of the
    time, and the closed form's count per block is checked on the quick models."""
    cfg, seed = preset(name), preset("seed")
    assert {field: getattr(cfg, field) for field in KERAS_IO_VIT} == KERAS_IO_VIT
    assert {key: getattr(cfg, key) for key in SEED_RECIPE} == {key: getattr(seed, key) for key in SEED_RECIPE}
    assert (cfg.use_spt, cfg.use_lsa, cfg.model_name) == (spt_lsa, spt_lsa, name.removesuffix("_cifar"))
    one_block = cfg.replace(depth=1)
    model = build_vit(one_block)
    assert model.count_params() == expected_params(one_block)
    assert logits_of(model, images(2)).shape == (2, 10)
    assert 20_000_000 < expected_params(cfg) < 23_000_000  # keras-io's ~21.6 M, mostly the head


# -------------------------------------------------------------------------------------
# Whole models
# -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def quick_models():
    keras.utils.set_random_seed(0)
    return {name: build_vit(preset(name)) for name in QUICK_PRESETS}


@pytest.mark.parametrize("name", QUICK_PRESETS)
def test_quick_model_forward_parameters_and_save_load(quick_models, name, tmp_path):
    model, cfg = quick_models[name], preset(name)
    assert model.name == cfg.model_name
    assert model.input_shape == (None, 32, 32, 3) and model.output_shape == (None, 10)
    assert model.count_params() == expected_params(cfg) < 30_000
    x = images(3)
    logits = logits_of(model, x)
    assert logits.shape == (3, 10) and np.all(np.isfinite(logits))
    # uint8 and float pixels give the same logits
    np.testing.assert_allclose(logits_of(model, x.astype("float32")), logits, rtol=1e-5, atol=1e-5)
    # training mode (random crop + flip) runs and keeps the shape
    assert model(x, training=True).shape == (3, 10)
    assert model.get_layer("preprocessing").crop_size == cfg.image_size
    # the right layers are in the graph
    tokenizers = {type(layer) for layer in model.layers} & {vit.ShiftedPatchTokenizer, vit.PatchTokenizer}
    assert tokenizers == {vit.ShiftedPatchTokenizer if cfg.use_spt else vit.PatchTokenizer}
    blocks = [layer for layer in model.layers if isinstance(layer, TransformerBlock)]
    assert len(blocks) == cfg.depth and all(b.attention.locality == cfg.use_lsa for b in blocks)
    model.save(tmp_path / f"{name}.keras")
    loaded = keras.saving.load_model(tmp_path / f"{name}.keras", safe_mode=True)
    np.testing.assert_array_equal(logits_of(loaded, x), logits)
    assert loaded.name == model.name and loaded.count_params() == model.count_params()


def test_mixed_precision_keeps_float32_logits(dtype_policy):
    dtype_policy("mixed_float16")
    logits = build_vit(preset("vit_spt_lsa_quick"))(images(2), training=False)
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"
    assert np.isfinite(numpy_of(logits)).all()


def test_quick_model_trains_one_step_and_its_lsa_temperatures_learn():
    keras.utils.set_random_seed(0)
    model = build_vit(preset("vit_spt_lsa_quick"))
    model.compile(optimizer=keras.optimizers.AdamW(1e-3, weight_decay=1e-4), run_eagerly=True,  # one step: no graph
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    blocks = [layer for layer in model.layers if isinstance(layer, TransformerBlock)]
    temperatures = [b.attention.temperature.numpy().item() for b in blocks]
    assert np.isfinite(model.train_on_batch(images(8), np.arange(8) % 10))
    assert all(b.attention.temperature.numpy().item() != t for b, t in zip(blocks, temperatures, strict=True))


def test_count_vit_macs():
    macs = vit.count_vit_macs(preset("vit_cifar"))
    # 144 tokens: one block's Q K^T is 4 heads * 144 * 144 * 64.
    assert macs["attention_matmuls"] == 8 * 2 * 4 * 144 * 144 * 64
    assert macs["patch_projection"] == 144 * 48 * 64
    assert macs["classifier"] == 144 * 64 * 2048 + 2048 * 1024 + 1024 * 10
    assert macs["total"] == sum(v for k, v in macs.items() if k != "total")
    spt = vit.count_vit_macs(preset("vit_spt_lsa_cifar"))
    assert spt["patch_projection"] == 5 * macs["patch_projection"]
    assert spt["total"] - macs["total"] == 4 * macs["patch_projection"]


def test_the_vit_is_built_and_trained_with_the_whole_recipe(quick_models):
    strong = build_vit(preset("vit_quick", rand_augment_ops=2, random_erasing=0.25, init="spach"), seed=1)
    plain = quick_models["vit_quick"]
    assert plain.get_layer("preprocessing").rand_augment is None
    preprocessing = strong.get_layer("preprocessing")
    assert preprocessing.rand_augment is not None and preprocessing.eraser is not None
    # SPACH's initialisation: kernels from N(0, 0.02^2), biases zero (Glorot would give ~0.2 here).
    kernel, bias = (np.asarray(v) for v in strong.get_layer("block_0").attention.query_dense.weights)
    assert abs(kernel.std() - 0.02) < 0.004 and not bias.any()
    assert abs(np.asarray(plain.get_layer("block_0").attention.query_dense.kernel).std() - 0.02) > 0.05


# -------------------------------------------------------------------------------------
# Other backends (in a subprocess: the backend is fixed at import time)
# -------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_forward_pass_on_other_backends(backend):
    assert run_on_backend(backend, """
        import numpy as np, keras
        from shiftvit_lib import preset
        from shiftvit_lib.vit import build_vit
        model = build_vit(preset("vit_spt_lsa_quick"))
        x = np.random.default_rng(0).integers(0, 256, (2, 32, 32, 3)).astype("uint8")
        y = keras.ops.convert_to_numpy(model(x, training=False))
        assert y.shape == (2, 10) and np.isfinite(y).all(), y
        assert model(x, training=True).shape == (2, 10)
        print("OK", keras.backend.backend())
        """).endswith(f"OK {backend}\n")


def test_module_is_documented_for_the_lesson():
    """The lesson shows this module with inspect.getsource: every public piece teaches."""
    for name, obj in vars(vit).items():
        if not name.startswith("_") and callable(obj) and getattr(obj, "__module__", None) == vit.__name__:
            assert obj.__doc__ and len(obj.__doc__.strip()) > 30, name


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda: vit.diagonal_shifts(np.zeros((8, 8, 3), "float32"), 1), ValueError, "4-D"),
    (lambda: vit.diagonal_shifts(np.zeros((1, 8, 8, 3), "float32"), -1), ValueError, "shift"),
    # the tokenizers' too
    (lambda: vit.extract_patches(np.zeros((1, 10, 10, 3), "float32"), 4), ValueError, "multiple"),
    (lambda: build_vit(preset("quick")), TypeError, "ViTConfig"),
    (lambda: preset("vit_quick", patch_size=5), ValueError, "multiple of patch_size"),
])
def test_bad_input_is_refused_naming_what_is_wrong(call, error, words):
    with pytest.raises(error) as refused:
        call()
    assert words in str(refused.value)
