"""`layer_normalization`: Eq. (1) and its gradient in closed form, Eq. (2)-(4).

References: a NumPy computation of Eq. (1) and of `layer_normalize`, and
the finite differences of those NumPy functions for every input (the
output's weights drawn at random, a constant row and a zero gate
included); eager and compiled modes; float16 inputs with float32
statistics against the same references.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import backend_support
import numpy as np
import pytest
from backend_support import MODES, in_mode, traced_gradients
from finite_differences import assert_gradients_match
import keras
from keras import ops

from hmkeras.cells import layer_normalization

pytestmark = pytest.mark.every_backend

EPS = layer_normalization.LAYER_NORM_EPSILON
RNG = np.random.default_rng(0)
KERNEL = RNG.normal(size=(4, 6))
CENTRED = KERNEL - KERNEL.mean(axis=1, keepdims=True)
# Rows of `y = h M_c`: the last row of `h` is zero, so its `y` is constant.
H = np.concatenate([RNG.normal(size=(3, 4)), np.zeros((1, 4))])
GAIN = RNG.normal(size=6)
FACTOR = np.array([[1.0], [0.5], [0.0], [1.0]])  # a zero gate too
BIAS = RNG.normal(size=6)
WEIGHTS = RNG.normal(size=(4, 6))  # the loss: sum(out * WEIGHTS)
EXACT = dict(rtol=1e-10, atol=1e-12) if backend_support.HAS_FLOAT64 else dict(
    rtol=2e-5, atol=2e-5)


def numpy_normalize_centred(y, gain, factor):
    """Eq. (1) in float64: `y * factor / sqrt(mean(y^2) + eps) * gain`, 0 for a constant row."""
    variance = np.mean(y ** 2, axis=-1, keepdims=True)
    inverse = np.where(variance > 0, 1.0 / np.sqrt(variance + EPS), 0.0)
    scale = inverse if factor is None else inverse * factor
    return y * scale * gain


def numpy_layer_normalize(x, gain, bias):
    """Ba et al. Eq. (20)-(22): `(x - mean) / sqrt(var + eps) * gain + bias`."""
    centred = x - x.mean(axis=-1, keepdims=True)
    return numpy_normalize_centred(centred, gain, None) + bias


def _run(function, mode, *arrays):
    def loss(*tensors):
        out = function(*tensors)
        dtype = keras.backend.standardize_dtype(out.dtype)
        dtype = "float32" if dtype == "float16" else dtype
        return ops.sum(ops.cast(out, dtype) * ops.cast(WEIGHTS, dtype)), out

    out, gradients = in_mode(lambda *t: traced_gradients(loss, *t), mode)(*arrays)
    return backend_support.to_numpy(out), [backend_support.to_numpy(g) for g in gradients]


def _finite_differences(reference, values, gradients, rows=4):
    """Checks `gradients` against the finite differences of the loss on
    the first `rows` rows (a constant row's gradient is 0 by design, not
    the limit of its neighbours')."""
    def first_rows(name, array):
        return array[:rows] if name in ("y", "factor", "x") else array

    values = {k: first_rows(k, v) for k, v in values.items()}
    gradients = {k: first_rows(k, g) for k, g in gradients.items()}
    largest = assert_gradients_match(
        lambda v: float(np.sum(reference(**v) * WEIGHTS[:rows])), values, gradients,
        entries=6, rtol=1e-6 if backend_support.HAS_FLOAT64 else 3e-3,
        atol=1e-9 if backend_support.HAS_FLOAT64 else 3e-3)
    assert largest > 0.1  # the checked entries are not all zeros


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("gated", [True, False])
def test_normalize_centred_and_its_gradient(mode, gated):
    y = H @ CENTRED
    if gated:
        def function(y, gain, factor):
            return layer_normalization.normalize_centred(y, gain, factor, "float64")
        arrays, names = (y, GAIN, FACTOR), ("y", "gain", "factor")
    else:
        def function(y, gain):
            return layer_normalization.normalize_centred(y, gain, None, "float64")
        arrays, names = (y, GAIN), ("y", "gain")
    out, gradients = _run(function, mode, *arrays)
    values = dict(zip(names, arrays))
    reference = lambda y, gain, factor=None: numpy_normalize_centred(y, gain, factor)
    np.testing.assert_allclose(out, reference(**values), **EXACT)
    # The constant row adds nothing to the loss for any gain: the gain's
    # gradient is checked with the other rows' differences.
    _finite_differences(reference, values, dict(zip(names, gradients)), rows=3)
    # A constant row (`h = 0`) and a zero gate have no gradient (`inverse_deviation`).
    assert np.all(gradients[0][3] == 0.0)
    if gated:
        assert np.all(gradients[0][2] == 0.0) and gradients[2][3, 0] == 0.0


@pytest.mark.parametrize("mode", MODES)
def test_layer_normalize_and_its_gradient(mode):
    x = RNG.normal(size=(4, 6)) * [[1.0], [3.0], [0.1], [1.0]] + [[0.0], [2.0], [0.0], [-5.0]]

    class Options:
        statistics_dtype = compute_dtype = "float64"

    def function(x, gain, bias):
        return layer_normalization.layer_normalize(x, (gain, bias), Options)

    out, gradients = _run(function, mode, x, GAIN, BIAS)
    values = {"x": x, "gain": GAIN, "bias": BIAS}
    np.testing.assert_allclose(out, numpy_layer_normalize(**values), **EXACT)
    _finite_differences(numpy_layer_normalize, values, dict(zip(values, gradients)))


def test_float16_inputs_take_float32_statistics():
    # y = 300 * ...: mean(y^2) is past float16's range (65504); the float32 statistics hold it.
    y = (300.0 * H @ CENTRED).astype("float16")
    gain = GAIN.astype("float16")
    factor = FACTOR.astype("float16")

    def function(y, gain, factor):
        return layer_normalization.normalize_centred(y, gain, factor, "float32")

    out, gradients = _run(function, "eager", y, gain, factor)
    assert out.dtype == np.float16 and [g.dtype for g in gradients] == [np.float16] * 3
    values = {"y": y.astype(np.float64), "gain": GAIN, "factor": FACTOR}
    reference = numpy_normalize_centred(**values)
    np.testing.assert_allclose(out, reference, rtol=2e-3, atol=2e-3)
    _, expected = _run(lambda *t: layer_normalization.normalize_centred(*t, "float32"), "eager",
                       *(v.astype("float32") for v in values.values()))
    for got, want in zip(gradients, expected):
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-2,
                                   atol=1e-2 * np.max(np.abs(want)))
