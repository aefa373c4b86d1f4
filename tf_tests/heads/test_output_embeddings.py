"""Tests for GatedOutputEmbedding (Chung Eq. 11-12) and SimpleOutputEmbedding."""

import os

import keras
import numpy as np
import pytest

from hmkeras.heads.gated_output_embedding import GatedOutputEmbedding
from hmkeras.heads.simple_output_embedding import SimpleOutputEmbedding

pytestmark = pytest.mark.every_backend

SIZES = [3, 4, 2]           # per-layer hidden sizes, L = 3
HIDDEN = sum(SIZES)         # 9
WITH_Z = HIDDEN + 2         # 11: HM cell layout [h^1 | h^2 | h^3 | z^1 z^2]


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _gated_reference(x, gate_kernel, kernel, sizes, gate_bias=None,
                     bias=None):
    """Eq. 11-12 written per layer with separate products."""
    x = np.asarray(x, np.float64)
    hidden = x[..., :sum(sizes)]
    logits = hidden @ gate_kernel
    if gate_bias is not None:
        logits = logits + gate_bias
    g = _sigmoid(logits)  # Eq. 11, (..., L)
    acc = 0.0
    offset = 0
    for l, size in enumerate(sizes):
        h_l = hidden[..., offset:offset + size]
        w_l = kernel[offset:offset + size]          # W^e_l
        acc = acc + g[..., l:l + 1] * (h_l @ w_l)   # g^l W^e_l h^l
        offset += size
    if bias is not None:
        acc = acc + bias
    return np.maximum(acc, 0.0)  # Eq. 12


def _random_inputs(shape, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape).astype("float32")
    # Boundary columns as a cell emits them: 0.0 / 1.0.
    if shape[-1] == WITH_Z:
        x[..., HIDDEN:] = rng.integers(0, 2, size=shape[:-1] + (2,))
    return x


@pytest.mark.parametrize("shape", [(5, WITH_Z), (2, 6, WITH_Z), (4, HIDDEN),
                                   (2, 3, HIDDEN)])
@pytest.mark.parametrize("use_bias", [False, True])
def test_gated_matches_numpy_reference(shape, use_bias):
    layer = GatedOutputEmbedding(
        7, layer_sizes=SIZES, use_bias=use_bias,
        bias_initializer="random_normal",
        gate_bias_initializer="random_normal",
    )
    x = _random_inputs(shape)
    y = keras.ops.convert_to_numpy(layer(x))
    assert y.shape == shape[:-1] + (7,)
    expected = _gated_reference(
        x, layer.gate_kernel.numpy(), layer.kernel.numpy(), SIZES,
        layer.gate_bias.numpy() if use_bias else None,
        layer.bias.numpy() if use_bias else None,
    )
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)
    assert (y > 0).any() and (y == 0).any()  # the ReLU is active both ways
    gates = keras.ops.convert_to_numpy(layer.compute_gates(x))
    assert gates.shape == shape[:-1] + (3,)
    assert np.all((gates > 0) & (gates < 1))


def test_gated_gates_scale_each_layer():
    """Forcing one gate to ~0 removes exactly that layer's contribution."""
    layer = GatedOutputEmbedding(5, layer_sizes=SIZES, use_bias=True)
    x = _random_inputs((4, HIDDEN))
    layer(x)
    layer.gate_kernel.assign(np.zeros((HIDDEN, 3), "float32"))
    layer.gate_bias.assign(np.array([50.0, -50.0, 50.0], "float32"))
    kernel = layer.kernel.numpy()
    masked = x.copy()
    masked[:, 3:7] = 0.0  # layer 2's hidden state
    expected = np.maximum(masked @ kernel, 0.0)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(layer(x)), expected,
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(5, WITH_Z), (2, 6, WITH_Z), (3, HIDDEN)])
def test_simple_matches_numpy_reference(shape):
    layer = SimpleOutputEmbedding(6, layer_sizes=SIZES, use_bias=True,
                                  bias_initializer="random_normal")
    x = _random_inputs(shape)
    y = keras.ops.convert_to_numpy(layer(x))
    hidden = x[..., :HIDDEN].astype(np.float64)
    expected = np.maximum(hidden @ layer.kernel.numpy() + layer.bias.numpy(),
                          0.0)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cls", [GatedOutputEmbedding, SimpleOutputEmbedding])
def test_boundary_columns_are_ignored(cls):
    layer = cls(8, layer_sizes=SIZES)
    x = _random_inputs((3, 5, WITH_Z))
    y = keras.ops.convert_to_numpy(layer(x))
    flipped = x.copy()
    flipped[..., HIDDEN:] = 1.0 - flipped[..., HIDDEN:]
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(layer(flipped)), y)
    # and the same weights on the hidden part alone give the same output
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(layer(x[..., :HIDDEN])), y, rtol=1e-6)
    # the hidden part does matter
    other = x.copy()
    other[..., 0] += 1.0
    assert not np.allclose(keras.ops.convert_to_numpy(layer(other)), y)


def test_single_layer_defaults():
    """layer_sizes=None: the input is one hidden state (L = 1, one gate)."""
    x = _random_inputs((4, 6))
    gated = GatedOutputEmbedding(3)
    y = keras.ops.convert_to_numpy(gated(x))
    assert gated.gate_kernel.shape == (6, 1)
    expected = _gated_reference(x, gated.gate_kernel.numpy(),
                                gated.kernel.numpy(), [6])
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)
    simple = SimpleOutputEmbedding(3)
    assert keras.ops.convert_to_numpy(simple(x)).shape == (4, 3)
    assert not gated.weights[0].name.startswith("bias")
    assert len(simple.weights) == 1  # no bias by default (Kadar's formula)


@pytest.mark.parametrize("cls", [GatedOutputEmbedding, SimpleOutputEmbedding])
@pytest.mark.parametrize("width", [HIDDEN - 1, HIDDEN + 1, WITH_Z + 1])
def test_wrong_width_raises(cls, width):
    layer = cls(4, layer_sizes=SIZES)
    with pytest.raises(ValueError, match=r"9.*11"):
        layer(np.zeros((2, width), "float32"))


@pytest.mark.parametrize("cls", [GatedOutputEmbedding, SimpleOutputEmbedding])
def test_wrong_width_after_build_raises(cls):
    layer = cls(4, layer_sizes=SIZES)
    layer(np.zeros((2, WITH_Z), "float32"))
    with pytest.raises(ValueError, match="layer_sizes"):
        layer(np.zeros((2, WITH_Z + 3), "float32"))


@pytest.mark.parametrize("cls", [GatedOutputEmbedding, SimpleOutputEmbedding])
@pytest.mark.parametrize(
    "kwargs, name",
    [({"units": 0}, "units"), ({"units": -3}, "units"),
     ({"units": 2.5}, "units"),
     ({"units": 4, "layer_sizes": []}, "layer_sizes"),
     ({"units": 4, "layer_sizes": [3, 0]}, "layer_sizes"),
     ({"units": 4, "layer_sizes": [3, -1]}, "layer_sizes"),
     ({"units": 4, "layer_sizes": 5}, "layer_sizes")],
)
def test_bad_arguments_raise(cls, kwargs, name):
    with pytest.raises(ValueError, match=name):
        cls(**kwargs)


@pytest.mark.parametrize("cls", [GatedOutputEmbedding, SimpleOutputEmbedding])
def test_keras_save_load_round_trip(cls, tmp_path):
    inputs = keras.Input((None, WITH_Z))
    embedded = cls(5, layer_sizes=SIZES, use_bias=True,
                   kernel_regularizer="l2", name="embed")(inputs)
    outputs = keras.layers.Dense(7)(embedded)
    model = keras.Model(inputs, outputs)
    x = _random_inputs((2, 4, WITH_Z))
    before = keras.ops.convert_to_numpy(model(x))
    path = os.path.join(tmp_path, "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    layer = loaded.get_layer("embed")
    assert isinstance(layer, cls)
    assert layer.layer_sizes == tuple(SIZES) and layer.use_bias
    np.testing.assert_allclose(keras.ops.convert_to_numpy(loaded(x)), before,
                               rtol=1e-6, atol=1e-6)
    # config round trip
    clone = cls.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()


def test_trains_in_a_model_and_honours_dtype_policy():
    layer = GatedOutputEmbedding(4, layer_sizes=SIZES, dtype="mixed_float16")
    y = layer(_random_inputs((2, WITH_Z)))
    assert keras.backend.standardize_dtype(y.dtype) == "float16"
    assert layer.kernel.dtype == "float32"
    gates = layer.compute_gates(_random_inputs((2, WITH_Z)))
    assert keras.backend.standardize_dtype(gates.dtype) == "float16"

    model = keras.Sequential([
        keras.Input((3, WITH_Z)),
        GatedOutputEmbedding(8, layer_sizes=SIZES),
        keras.layers.Dense(5),
    ])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(
        from_logits=True))
    x = _random_inputs((16, 3, WITH_Z))
    t = np.random.default_rng(1).integers(0, 5, size=(16, 3))
    gate_before = model.layers[0].gate_kernel.numpy().copy()
    model.fit(x, t, epochs=1, batch_size=8, verbose=0)
    assert not np.allclose(model.layers[0].gate_kernel.numpy(), gate_before)
