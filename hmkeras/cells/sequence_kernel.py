"""Kernels prepared once per sequence for the products of every time step.

A recurrent cell multiplies the same kernel `M` at every step, `y = x M`,
and its backward pass computes `dx = dy M^T` at every step.  TensorFlow's
gradient of `tf.matmul` (what `keras.ops.matmul` runs on TensorFlow) does
that as a matmul with `transpose_b=True`, which oneDNN runs at about half
the speed of a plain matmul on the shapes of an LSTM layer (the timings:
`docs/results/speed.md`, "Speed: train-step time against Keras' own
cells").  A `SequenceKernel` holds `M` and `M^T`, the transpose made once
per sequence (with the other per-sequence constants of the cell), and
`product` multiplies with a gradient that reads `M^T`.

Only the backward pass reads `M^T`, so a compiled inference function
(`predict`, generation, a SavedModel's serving function) prunes the
transpose.  The weight gradient is `x^T dy`, as in `tf.matmul`'s own
gradient.  The custom gradient is `keras.ops.custom_gradient`
(`tf.custom_gradient` on TensorFlow, `jax.custom_gradient` on JAX).

Examples:

    >>> import numpy as np
    >>> from keras import ops
    >>> kernel = sequence_kernel(np.array([[1.0, 2.0], [3.0, 4.0]], "float32"))
    >>> x = ops.convert_to_tensor([[1.0, 1.0]])
    >>> y = product(x, kernel)
    >>> dx = ops.matmul(ops.ones_like(y), kernel.transposed)  # what the gradient of sum(y) computes
    >>> ops.convert_to_numpy(y).tolist(), ops.convert_to_numpy(dx).tolist()
    ([[4.0, 6.0]], [[3.0, 7.0]])
"""

import collections

import keras
from keras import ops

from hmkeras.cells.custom_gradients import tensor_value
from hmkeras.cells.custom_gradients import upstream_gradient

SequenceKernel = collections.namedtuple("SequenceKernel", ["kernel", "transposed"])
SequenceKernel.__doc__ = """A kernel `(rows, columns)` and its transpose.

Build it with `sequence_kernel`; multiply with `product`.  (What a
COPYing layer of a sparse update multiplies, the boundary column and its
statistics, is made once per sequence by `sparse_update.boundary_term`.)
"""


def sequence_kernel(kernel):
    """A `SequenceKernel` of `kernel` (a tensor or a variable)."""
    kernel = tensor_value(kernel)
    return SequenceKernel(kernel, ops.transpose(kernel))


def product(x, kernel):
    """`x @ kernel.kernel`, its input gradient from `kernel.transposed`.

    Args:
        x: `(batch, rows)`.
        kernel: A `SequenceKernel`, `(rows, columns)`.

    Returns:
        `(batch, columns)`, equal to `ops.matmul(x, kernel.kernel)`; the
        gradients with respect to `x` and to `kernel.kernel` are those of
        `ops.matmul` (up to the summation order of the input gradient).
    """
    @ops.custom_gradient
    def multiply(x, matrix, *transposed):
        # `M^T`: the argument where one is given, else the closed-over one.
        transposed_matrix = transposed[0] if transposed else kernel.transposed

        def gradient(*args, upstream=None):
            upstream = upstream_gradient(args, upstream)
            grads = (ops.matmul(upstream, transposed_matrix), _transposed_product(x, upstream))
            return grads + (None,) * len(transposed)  # `M^T` has no gradient of its own

        return ops.matmul(x, matrix), gradient

    if keras.backend.backend() == "tensorflow":
        # Closed over: the forward pass does not depend on `M^T`, so that
        # a compiled inference function prunes the transpose.
        return multiply(x, kernel.kernel)
    # JAX's custom gradient cannot close over a traced `M^T` (one made
    # before a `lax.scan` over the steps): it is an argument.
    return multiply(x, kernel.kernel, kernel.transposed)


def _transposed_product(a, b):
    """`a^T b`, the weight gradient `x^T dy`.

    On TensorFlow it is `tf.matmul(a, b, transpose_a=True)`, what the
    gradient of `tf.matmul` computes: `keras.ops` has no transposed matmul,
    and neither `ops.matmul(ops.transpose(a), b)` nor `ops.einsum` gives
    its bits in every case on CPU (the first differs for a single column,
    the second in float16).  Elsewhere `ops.matmul(ops.transpose(a), b)`,
    whose transpose XLA folds into the product.
    """
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return tf.matmul(a, b, transpose_a=True)
    return ops.matmul(ops.transpose(a), b)
