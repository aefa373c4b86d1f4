"""`sequence_kernel.product`: `x @ M` whose input gradient reads `M^T`.

References: NumPy's products (`dy M^T`, `x^T dy`) and, through a time
loop, TensorFlow's own `tf.matmul` gradient; eager, graph and XLA modes.
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import pytest
import tensorflow as tf

from hmkeras.cells import sequence_kernel

RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 4))
M = RNG.normal(size=(4, 5))
DY = RNG.normal(size=(3, 5))  # the weights of the loss: dL/dy


def run(fn, mode):
    if mode == "eager":
        return fn()
    return tf.function(fn, jit_compile=(mode == "xla"))()


@pytest.mark.parametrize("mode", ["eager", "graph", "xla"])
def test_product_and_gradients_equal_numpy(mode):
    x, matrix = tf.Variable(X), tf.Variable(M)

    def fn():
        with tf.GradientTape() as tape:
            y = sequence_kernel.product(x, sequence_kernel.sequence_kernel(matrix))
            loss = tf.reduce_sum(y * DY)
        return (y, *tape.gradient(loss, [x, matrix]))

    y, dx, dm = run(fn, mode)
    np.testing.assert_allclose(y.numpy(), X @ M, rtol=1e-12)
    np.testing.assert_allclose(dx.numpy(), DY @ M.T, rtol=1e-12)
    np.testing.assert_allclose(dm.numpy(), X.T @ DY, rtol=1e-12)


def test_input_gradient_reads_the_transposed_kernel():
    """The backward pass uses `transposed`, not a transpose of its own: a
    kernel whose `transposed` is `2 M^T` gets twice the input gradient
    (and the weight gradient of `M`)."""
    x = tf.constant(X)
    kernel = sequence_kernel.SequenceKernel(tf.constant(M), tf.constant(2.0 * M.T))
    with tf.GradientTape() as tape:
        tape.watch(x)
        tape.watch(kernel.kernel)
        y = sequence_kernel.product(x, kernel)
        loss = tf.reduce_sum(y * DY)
    dx, dm = tape.gradient(loss, [x, kernel.kernel])
    np.testing.assert_allclose(dx.numpy(), 2.0 * DY @ M.T, rtol=1e-12)
    np.testing.assert_allclose(dm.numpy(), X.T @ DY, rtol=1e-12)


@pytest.mark.parametrize("mode", ["graph", "xla"])
def test_time_loop_gradients_equal_matmul(mode):
    """A recurrence `h_t = tanh(x_t W + h_{t-1} U)` whose kernels are made
    once, outside the `tf.while_loop` (as a cell's per-sequence
    constants), has the gradients of the same recurrence with `tf.matmul`."""
    steps, batch, units = 6, 3, 4
    xs = tf.constant(RNG.normal(size=(steps, batch, 2)))
    w = tf.Variable(RNG.normal(size=(2, units)) * 0.5)
    u = tf.Variable(RNG.normal(size=(units, units)) * 0.5)

    def recurrence(multiply, w_kernel, u_kernel):
        def body(t, h):
            return t + 1, tf.tanh(multiply(xs[t], w_kernel) + multiply(h, u_kernel))

        _, h = tf.while_loop(
            lambda t, h: t < steps, body,
            (tf.constant(0), tf.zeros((batch, units), tf.float64)),
            maximum_iterations=steps,  # XLA needs the bound
        )
        return tf.reduce_sum(tf.square(h))

    def fn():
        with tf.GradientTape(persistent=True) as tape:
            ours = recurrence(
                sequence_kernel.product,
                sequence_kernel.sequence_kernel(w),
                sequence_kernel.sequence_kernel(u),
            )
            reference = recurrence(tf.matmul, w.read_value(), u.read_value())
        return (ours, reference, *tape.gradient(ours, [w, u]),
                *tape.gradient(reference, [w, u]))

    ours, reference, dw, du, dw_ref, du_ref = run(fn, mode)
    np.testing.assert_allclose(ours.numpy(), reference.numpy(), rtol=1e-12)
    np.testing.assert_allclose(dw.numpy(), dw_ref.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(du.numpy(), du_ref.numpy(), rtol=1e-10, atol=1e-12)
