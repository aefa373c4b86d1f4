"""`sequence_kernel.product`: `x @ M` whose input gradient reads `M^T`.

References: NumPy's products (`dy M^T`, `x^T dy`) and, through a time
loop, the backend's own `matmul` gradient; eager and compiled modes (graph
and XLA on TensorFlow, `jax.jit` on JAX).
"""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import backend_support
import numpy as np
import pytest
from backend_support import MODES, in_mode, traced_gradients
from keras import ops

from hmkeras.cells import sequence_kernel

pytestmark = pytest.mark.every_backend

RNG = np.random.default_rng(0)
X = RNG.normal(size=(3, 4))
M = RNG.normal(size=(4, 5))
DY = RNG.normal(size=(3, 5))  # the weights of the loss: dL/dy

# float64 products; float32 ones where float64 arrays are float32 (JAX).
EXACT = dict(rtol=1e-12) if backend_support.HAS_FLOAT64 else dict(rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_product_and_gradients_equal_numpy(mode):
    def fn(x, matrix):
        def loss(x, matrix):
            y = sequence_kernel.product(x, sequence_kernel.sequence_kernel(matrix))
            return ops.sum(y * ops.convert_to_tensor(DY)), y

        y, grads = traced_gradients(loss, x, matrix)
        return (y, *grads)

    y, dx, dm = in_mode(fn, mode)(ops.convert_to_tensor(X), ops.convert_to_tensor(M))
    np.testing.assert_allclose(ops.convert_to_numpy(y), X @ M, **EXACT)
    np.testing.assert_allclose(ops.convert_to_numpy(dx), DY @ M.T, **EXACT)
    np.testing.assert_allclose(ops.convert_to_numpy(dm), X.T @ DY, **EXACT)


def test_input_gradient_reads_the_transposed_kernel():
    """The backward pass uses `transposed`, not a transpose of its own: a
    kernel whose `transposed` is `2 M^T` gets twice the input gradient
    (and the weight gradient of `M`)."""
    twice_transposed = ops.convert_to_tensor(2.0 * M.T)

    def loss(x, matrix):
        kernel = sequence_kernel.SequenceKernel(matrix, twice_transposed)
        y = sequence_kernel.product(x, kernel)
        return ops.sum(y * ops.convert_to_tensor(DY)), ()

    _, (dx, dm) = traced_gradients(loss, X, M)
    np.testing.assert_allclose(ops.convert_to_numpy(dx), 2.0 * DY @ M.T, **EXACT)
    np.testing.assert_allclose(ops.convert_to_numpy(dm), X.T @ DY, **EXACT)


def _loop(steps, body, initial):
    """`steps` iterations of `h = body(t, h)`, as a compiled loop: a
    `tf.while_loop` with its bound (XLA needs it) on TensorFlow, else
    `keras.ops.fori_loop`."""
    if backend_support.BACKEND == "tensorflow":
        import tensorflow as tf

        return tf.while_loop(
            lambda t, h: t < steps, lambda t, h: (t + 1, body(t, h)),
            (tf.constant(0), initial), maximum_iterations=steps,
        )[1]
    return ops.fori_loop(0, steps, body, initial)


@pytest.mark.parametrize("mode", [mode for mode in MODES if mode != "eager"])
def test_time_loop_gradients_equal_matmul(mode):
    """A recurrence `h_t = tanh(x_t W + h_{t-1} U)` whose kernels are made
    once, outside the compiled time loop (as a cell's per-sequence
    constants), has the gradients of the same recurrence with `matmul`."""
    steps, batch, units = 6, 3, 4
    xs = ops.convert_to_tensor(RNG.normal(size=(steps, batch, 2)))
    w0 = RNG.normal(size=(2, units)) * 0.5
    u0 = RNG.normal(size=(units, units)) * 0.5

    def recurrence(multiply, w_kernel, u_kernel):
        def body(t, h):
            return ops.tanh(multiply(xs[t], w_kernel) + multiply(h, u_kernel))

        h = _loop(steps, body, ops.zeros((batch, units), xs.dtype))
        return ops.sum(ops.square(h))

    def ours(w, u):
        value = recurrence(sequence_kernel.product, sequence_kernel.sequence_kernel(w),
                           sequence_kernel.sequence_kernel(u))
        return value, value

    def reference(w, u):
        value = recurrence(ops.matmul, w, u)
        return value, value

    def fn(w, u):
        ours_value, ours_grads = traced_gradients(ours, w, u)
        reference_value, reference_grads = traced_gradients(reference, w, u)
        return (ours_value, reference_value, *ours_grads, *reference_grads)

    ours_value, reference_value, dw, du, dw_ref, du_ref = [
        ops.convert_to_numpy(t)
        for t in in_mode(fn, mode)(ops.convert_to_tensor(w0), ops.convert_to_tensor(u0))]
    loop = (dict(rtol=1e-10, atol=1e-12) if backend_support.HAS_FLOAT64
            else dict(rtol=1e-5, atol=1e-6))
    np.testing.assert_allclose(ours_value, reference_value, **EXACT)
    np.testing.assert_allclose(dw, dw_ref, **loop)
    np.testing.assert_allclose(du, du_ref, **loop)
