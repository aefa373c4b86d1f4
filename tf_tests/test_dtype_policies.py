"""Every public layer under the dtypes and dtype policies of Keras.

Over the registry of `hardening_cases` (the recurrent layers and the
per-position heads):

* `dtype="float64"`: float64 variables and outputs, equal to the float32
  layer with the same weights up to float32 rounding;
* the `mixed_float16` and `mixed_bfloat16` global policies: float32
  variables, outputs and states in the compute dtype (the mixture-density
  head returns float32 by design), finite, and close to the float32 layer.

The global policy is restored after each test.
"""

import functools

import keras
import numpy as np
import pytest

from hardening_cases import HEAD_FEATURES
from hardening_cases import HEADS
from hardening_cases import RECURRENT

# Float32 against float64: the rounding of a few steps of float32.
FLOAT64_TOLERANCE = dict(rtol=1e-4, atol=1e-5)
# Mixed precision against float32: largest absolute difference allowed.
MIXED_TOLERANCE = {"mixed_float16": 0.02, "mixed_bfloat16": 0.1}


@pytest.fixture
def policy(request):
    keras.config.set_dtype_policy(request.param)
    yield request.param
    keras.config.set_dtype_policy("float32")


def _numpy(tensors):
    if not isinstance(tensors, (list, tuple)):
        tensors = [tensors]
    return [keras.ops.convert_to_numpy(t) for t in tensors]


def _dtypes(tensors):
    if not isinstance(tensors, (list, tuple)):
        tensors = [tensors]
    return {keras.backend.standardize_dtype(t.dtype) for t in tensors}


def _recurrent_pair(name, dtype, x):
    """A float32 layer and a `dtype` one with its weights, both built on `x`."""
    keras.utils.set_random_seed(0)
    kwargs = dict(return_sequences=True, return_state=True)
    reference = RECURRENT[name].make(**kwargs)
    expected = _numpy(reference(x))
    layer = RECURRENT[name].make(dtype=dtype, **kwargs)
    layer.build(x.shape)  # building, not calling: the test calls it once
    layer.set_weights(reference.get_weights())
    return layer, expected


def _head_pair(name, dtype, x):
    make = HEADS[name][0]
    reference = make(None)
    expected = _numpy(reference(x))
    layer = make(dtype)
    layer(x)
    layer.set_weights(reference.get_weights())
    return layer, expected


@pytest.mark.parametrize("name", sorted(RECURRENT))
def test_recurrent_float64(name):
    x = RECURRENT[name].inputs(np.random.default_rng(0), 2, 6)
    layer, expected = _recurrent_pair(name, "float64", x)
    assert {w.dtype for w in layer.weights} == {"float64"}
    result = layer(x.astype("float64"))
    assert _dtypes(result) == {"float64"}
    for got, want in zip(_numpy(result), expected):
        np.testing.assert_allclose(got, want, **FLOAT64_TOLERANCE)


@pytest.mark.parametrize("name", sorted(HEADS))
def test_head_float64(name):
    x = np.random.default_rng(1).normal(size=(2, 3, HEAD_FEATURES)).astype("float32")
    layer, expected = _head_pair(name, "float64", x)
    assert {w.dtype for w in layer.weights} == {"float64"}
    result = layer(x.astype("float64"))
    # The mixture-density parameters are float32 whatever the policy.
    want_dtype = "float32" if name == "MixtureDensityOutput" else "float64"
    assert _dtypes(result) == {want_dtype}
    np.testing.assert_allclose(_numpy(result)[0], expected[0], **FLOAT64_TOLERANCE)


@functools.cache
def _float32_reference(name):
    """`(x, weights, outputs)` of the float32 layer, shared by the policies
    (computed once per layer: the same for every policy)."""
    x = RECURRENT[name].inputs(np.random.default_rng(2), 2, 6)
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("float32")
    try:
        keras.utils.set_random_seed(0)
        reference = RECURRENT[name].make(return_sequences=True, return_state=True)
        expected = _numpy(reference(x))
        return x, reference.get_weights(), expected
    finally:
        keras.config.set_dtype_policy(previous)


@pytest.mark.parametrize("policy", sorted(MIXED_TOLERANCE), indirect=True)
@pytest.mark.parametrize("name", sorted(RECURRENT))
def test_recurrent_mixed_policy(name, policy):
    x, weights, expected = _float32_reference(name)
    keras.config.set_dtype_policy(policy)
    layer = RECURRENT[name].make(return_sequences=True, return_state=True)
    layer.build(x.shape)
    layer.set_weights(weights)
    compute = layer.dtype_policy.compute_dtype
    assert compute == policy.split("_")[1]
    assert {w.dtype for w in layer.weights} == {"float32"}
    result = layer(x)
    assert _dtypes(result) == {compute}
    for got, want in zip(_numpy(result), expected):
        got = got.astype("float32")
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(got, want, rtol=0, atol=MIXED_TOLERANCE[policy])


@pytest.mark.parametrize("policy", sorted(MIXED_TOLERANCE), indirect=True)
@pytest.mark.parametrize("name", sorted(HEADS))
def test_head_mixed_policy(name, policy):
    x = np.random.default_rng(3).normal(size=(2, 3, HEAD_FEATURES)).astype("float32")
    keras.config.set_dtype_policy("float32")
    reference = HEADS[name][0](None)
    expected = _numpy(reference(x))[0]
    keras.config.set_dtype_policy(policy)
    layer = HEADS[name][0](None)
    layer(x)
    layer.set_weights(reference.get_weights())
    assert {w.dtype for w in layer.weights} == {"float32"}
    result = layer(x)
    want_dtype = "float32" if name == "MixtureDensityOutput" else policy.split("_")[1]
    assert _dtypes(result) == {want_dtype}
    got = _numpy(result)[0].astype("float32")
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, expected, rtol=0, atol=MIXED_TOLERANCE[policy])
