"""Straight-through estimators: values, gradients, graph and XLA modes."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import pytest
import tensorflow as tf

from hmkeras.cells import straight_through

X = np.array([-3.0, -0.9, -0.45, -0.1, 0.05, 0.3, 0.7, 2.3], np.float64)  # no kink points


def numpy_hard_sigmoid(x, slope):
    return np.clip((slope * x + 1.0) / 2.0, 0.0, 1.0)


def finite_difference(x, slope, eps=1e-6):
    return (numpy_hard_sigmoid(x + eps, slope) - numpy_hard_sigmoid(x - eps, slope)) / (2 * eps)


def run(fn, mode):
    if mode == "eager":
        return fn()
    return tf.function(fn, jit_compile=(mode == "xla"))()


@pytest.mark.parametrize("mode", ["eager", "graph", "xla"])
@pytest.mark.parametrize("slope", [1.0, 2.0, 5.0])
def test_step_forward_and_gradient(mode, slope):
    x = tf.Variable(X)

    def fn():
        with tf.GradientTape() as tape:
            z = straight_through.step_straight_through(x, tf.constant(slope))
            loss = tf.reduce_sum(z * tf.constant(np.arange(1.0, 9.0)))
        return z, tape.gradient(loss, x)

    z, grad = run(fn, mode)
    np.testing.assert_array_equal(z.numpy(), (numpy_hard_sigmoid(X, slope) > 0.5).astype(float))
    expected = finite_difference(X, slope) * np.arange(1.0, 9.0)
    np.testing.assert_allclose(grad.numpy(), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", ["eager", "graph", "xla"])
def test_bernoulli_forward_and_gradient(mode):
    slope = 1.5
    x = tf.Variable(X)
    noise = tf.constant(np.linspace(0.05, 0.95, len(X)))

    def fn():
        with tf.GradientTape() as tape:
            z = straight_through.bernoulli_straight_through(x, tf.constant(slope), noise)
            loss = tf.reduce_sum(3.0 * z)
        return z, tape.gradient(loss, x)

    z, grad = run(fn, mode)
    np.testing.assert_array_equal(
        z.numpy(), (noise.numpy() < numpy_hard_sigmoid(X, slope)).astype(float)
    )
    np.testing.assert_allclose(grad.numpy(), 3.0 * finite_difference(X, slope), rtol=1e-6, atol=1e-8)


def test_bernoulli_rate_matches_hard_sigmoid():
    x = tf.fill([200000], 0.2)
    noise = tf.random.stateless_uniform([200000], seed=[1, 2])
    z = straight_through.bernoulli_straight_through(x, tf.constant(1.0), noise)
    assert abs(float(tf.reduce_mean(z)) - 0.6) < 0.005


def test_hard_sigmoid_and_its_derivative():
    for slope in (0.5, 1.0, 3.0):
        np.testing.assert_allclose(
            straight_through.hard_sigmoid(tf.constant(X), slope).numpy(),
            numpy_hard_sigmoid(X, slope),
        )
        np.testing.assert_allclose(
            straight_through.hard_sigmoid_derivative(tf.constant(X), slope).numpy(),
            finite_difference(X, slope),
            atol=1e-8,
        )


def test_slope_is_an_argument_not_a_captured_variable():
    # A variable slope passed in (as the cells do) works under XLA, and a
    # new value is used without retracing.
    slope = tf.Variable(1.0, dtype=tf.float64, trainable=False)
    x = tf.Variable(X)

    @tf.function(jit_compile=True)
    def grad_fn():
        with tf.GradientTape() as tape:
            z = straight_through.step_straight_through(x, tf.convert_to_tensor(slope))
            loss = tf.reduce_sum(z)
        return tape.gradient(loss, x)

    g1 = grad_fn().numpy()
    slope.assign(4.0)
    g2 = grad_fn().numpy()
    np.testing.assert_allclose(g1, finite_difference(X, 1.0), atol=1e-8)
    np.testing.assert_allclose(g2, finite_difference(X, 4.0), atol=1e-8)
    assert grad_fn.experimental_get_tracing_count() == 1
