"""Straight-through estimators: values, gradients, eager and compiled modes
(graph and XLA on TensorFlow, `jax.jit` on JAX)."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import backend_support
import keras
import numpy as np
import pytest
from backend_support import MODES, in_mode, traced_gradients
from keras import ops

from hmkeras.cells import straight_through

pytestmark = pytest.mark.every_backend

X = np.array([-3.0, -0.9, -0.45, -0.1, 0.05, 0.3, 0.7, 2.3], np.float64)  # no kink points
# Where float64 tensors are float32 (JAX): the hard sigmoid of the rounded X.
HARD_SIGMOID = dict(rtol=1e-7) if backend_support.HAS_FLOAT64 else dict(rtol=1e-6, atol=1e-7)


def numpy_hard_sigmoid(x, slope):
    return np.clip((slope * x + 1.0) / 2.0, 0.0, 1.0)


def finite_difference(x, slope, eps=1e-6):
    return (numpy_hard_sigmoid(x + eps, slope) - numpy_hard_sigmoid(x - eps, slope)) / (2 * eps)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("slope", [1.0, 2.0, 5.0])
def test_step_forward_and_gradient(mode, slope):
    weights = ops.convert_to_tensor(np.arange(1.0, 9.0))

    def fn(x):
        def loss(x):
            z = straight_through.step_straight_through(x, ops.convert_to_tensor(slope))
            return ops.sum(z * weights), z

        z, (grad,) = traced_gradients(loss, x)
        return z, grad

    z, grad = in_mode(fn, mode)(ops.convert_to_tensor(X))
    np.testing.assert_array_equal(ops.convert_to_numpy(z),
                                  (numpy_hard_sigmoid(X, slope) > 0.5).astype(float))
    expected = finite_difference(X, slope) * np.arange(1.0, 9.0)
    np.testing.assert_allclose(ops.convert_to_numpy(grad), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", MODES)
def test_bernoulli_forward_and_gradient(mode):
    slope = 1.5
    noise = np.linspace(0.05, 0.95, len(X))

    def fn(x, noise):
        def loss(x):
            z = straight_through.bernoulli_straight_through(
                x, ops.convert_to_tensor(slope), noise)
            return ops.sum(3.0 * z), z

        z, (grad,) = traced_gradients(loss, x)
        return z, grad

    z, grad = in_mode(fn, mode)(ops.convert_to_tensor(X), ops.convert_to_tensor(noise))
    np.testing.assert_array_equal(
        ops.convert_to_numpy(z), (noise < numpy_hard_sigmoid(X, slope)).astype(float)
    )
    np.testing.assert_allclose(ops.convert_to_numpy(grad), 3.0 * finite_difference(X, slope),
                               rtol=1e-6, atol=1e-8)


def test_bernoulli_rate_matches_hard_sigmoid():
    x = np.full([200000], 0.2, "float32")
    noise = np.random.default_rng(1).random(200000).astype("float32")
    z = straight_through.bernoulli_straight_through(x, ops.convert_to_tensor(1.0), noise)
    assert abs(float(ops.mean(z)) - 0.6) < 0.005


def test_hard_sigmoid_and_its_derivative():
    for slope in (0.5, 1.0, 3.0):
        np.testing.assert_allclose(
            ops.convert_to_numpy(straight_through.hard_sigmoid(ops.convert_to_tensor(X), slope)),
            numpy_hard_sigmoid(X, slope),
            **HARD_SIGMOID,
        )
        np.testing.assert_allclose(
            ops.convert_to_numpy(
                straight_through.hard_sigmoid_derivative(ops.convert_to_tensor(X), slope)),
            finite_difference(X, slope),
            atol=1e-8,
        )


@pytest.mark.skipif(backend_support.BACKEND == "torch",
                    reason="PyTorch runs eagerly: there is no trace to reuse")
def test_slope_is_an_argument_not_a_captured_variable():
    # A variable slope passed in (as the cells do) works compiled (XLA), and
    # a new value is used without retracing.  On TensorFlow the compiled
    # function reads the variable it captures (as a cell's call does); on
    # JAX it takes the variable's value as an argument (as `stateless_call`
    # does).  A trace runs the Python body: `traces` counts them.
    slope = keras.Variable(1.0, dtype="float64", trainable=False)
    x = ops.convert_to_tensor(X)
    traces = []

    def grad_fn(slope_value):
        traces.append(1)
        _, (grad,) = traced_gradients(
            lambda x: (ops.sum(straight_through.step_straight_through(x, slope_value)), ()), x)
        return grad

    if backend_support.BACKEND == "tensorflow":
        compiled = in_mode(lambda: grad_fn(ops.convert_to_tensor(slope)), "xla")
        run = compiled
    else:
        compiled = in_mode(grad_fn, "jit")
        run = lambda: compiled(slope.value)

    g1 = ops.convert_to_numpy(run())
    slope.assign(4.0)
    g2 = ops.convert_to_numpy(run())
    np.testing.assert_allclose(g1, finite_difference(X, 1.0), atol=1e-8)
    np.testing.assert_allclose(g2, finite_difference(X, 4.0), atol=1e-8)
    assert len(traces) == 1
    if backend_support.BACKEND == "tensorflow":
        assert compiled.experimental_get_tracing_count() == 1


def numpy_sigmoid(x, slope):
    return 1.0 / (1.0 + np.exp(-slope * x))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("estimator", ["step", "bernoulli"])
def test_sigmoid_gradient_is_the_logistic_sigmoids(mode, estimator):
    """`gradient="sigmoid"`: the same forward pass, and the finite-difference
    derivatives of `sigm(a x)` with respect to `x` and to the slope `a`,
    nonzero where the hard sigmoid's are 0 (`|a x| >= 1`)."""
    slope, eps = 2.0, 1e-6
    weights = np.arange(1.0, 9.0)
    noise = np.linspace(0.05, 0.95, len(X))

    def boundary(x, a, gradient):
        if estimator == "step":
            return straight_through.step_straight_through(x, a, gradient)
        return straight_through.bernoulli_straight_through(x, a, noise, gradient)

    def fn(x, a):
        def loss(x, a):
            z = boundary(x, a, "sigmoid")
            return ops.sum(z * ops.convert_to_tensor(weights)), z

        z, (grad_x, grad_a) = traced_gradients(loss, x, a)
        return z, grad_x, grad_a

    z, grad_x, grad_a = in_mode(fn, mode)(ops.convert_to_tensor(X),
                                          ops.convert_to_tensor(slope))
    hard = boundary(ops.convert_to_tensor(X), ops.convert_to_tensor(slope), "hard_sigmoid")
    np.testing.assert_array_equal(ops.convert_to_numpy(z), ops.convert_to_numpy(hard))
    d_x = (numpy_sigmoid(X + eps, slope) - numpy_sigmoid(X - eps, slope)) / (2 * eps)
    d_a = (numpy_sigmoid(X, slope + eps) - numpy_sigmoid(X, slope - eps)) / (2 * eps)
    np.testing.assert_allclose(ops.convert_to_numpy(grad_x), weights * d_x, rtol=1e-5)
    np.testing.assert_allclose(float(ops.convert_to_numpy(grad_a)), np.sum(weights * d_a),
                               rtol=1e-5)
    saturated = np.abs(slope * X) >= 1
    assert saturated.sum() >= 3 and np.all(ops.convert_to_numpy(grad_x)[saturated] > 0)


def test_unknown_gradient_is_refused():
    for estimator in (lambda g: straight_through.step_straight_through(X, 1.0, g),
                      lambda g: straight_through.bernoulli_straight_through(X, 1.0, X, g)):
        with pytest.raises(ValueError, match=r"`gradient` must be one of \['hard_sigmoid', "
                                             r"'sigmoid'\]. Received: gradient='tanh'"):
            estimator("tanh")
