"""Kernels prepared once per sequence for the products of every time step.

A recurrent cell multiplies the same kernel `M` at every step, `y = x M`,
and its backward pass computes `dx = dy M^T` at every step.  TensorFlow's
gradient of `tf.matmul` does that as a matmul with `transpose_b=True`,
which oneDNN runs at about half the speed of a plain matmul on the shapes
of an LSTM layer (the timings: `docs/results/speed.md`, "Speed: train-step
time against Keras' own cells").  A `SequenceKernel` holds `M` and `M^T`,
the transpose made once per sequence (with the other per-sequence
constants of the cell), and `product` multiplies with a gradient that
reads `M^T`.

Only the backward pass reads `M^T`, so a compiled inference function
(`predict`, generation, a SavedModel's serving function) prunes the
transpose.  The weight gradient is `x^T dy`, as in `tf.matmul`'s own
gradient.

Examples:

    >>> import tensorflow as tf
    >>> kernel = sequence_kernel(tf.constant([[1.0, 2.0], [3.0, 4.0]]))
    >>> x = tf.constant([[1.0, 1.0]])
    >>> with tf.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = product(x, kernel)
    >>> y.numpy().tolist(), tape.gradient(y, x).numpy().tolist()
    ([[4.0, 6.0]], [[3.0, 7.0]])
"""

import collections

import tensorflow as tf

SequenceKernel = collections.namedtuple("SequenceKernel", ["kernel", "transposed"])
SequenceKernel.__doc__ = """A kernel `(rows, columns)` and its transpose.

Build it with `sequence_kernel`; multiply with `product`.  (What a
COPYing layer of a sparse update multiplies, the boundary column and its
statistics, is made once per sequence by `sparse_update.boundary_term`.)
"""


def sequence_kernel(kernel):
    """A `SequenceKernel` of `kernel` (a tensor or a variable)."""
    kernel = tf.convert_to_tensor(kernel)
    return SequenceKernel(kernel, tf.transpose(kernel))


def product(x, kernel):
    """`x @ kernel.kernel`, its input gradient from `kernel.transposed`.

    Args:
        x: `(batch, rows)`.
        kernel: A `SequenceKernel`, `(rows, columns)`.

    Returns:
        `(batch, columns)`, equal to `tf.matmul(x, kernel.kernel)`; the
        gradients with respect to `x` and to `kernel.kernel` are those of
        `tf.matmul` (up to the summation order of the input gradient).
    """
    transposed = kernel.transposed

    @tf.custom_gradient
    def multiply(x, matrix):
        def gradient(upstream):
            return (
                tf.matmul(upstream, transposed),
                tf.matmul(x, upstream, transpose_a=True),
            )

        return tf.matmul(x, matrix), gradient

    return multiply(x, kernel.kernel)
