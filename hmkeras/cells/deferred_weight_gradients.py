"""Weight gradients of a time loop's matrix products, taken after the loop.

Automatic differentiation of a time loop computes the gradient of every
kernel `K` that a step multiplies (`s_t = x_t K + ...`) inside the loop:
at every step of the backward loop one `x_t^T g_t` product (with
`g_t = dL/ds_t`) and one addition of a whole `(rows, columns)` matrix to
the running sum.  At 3 x 256 units those additions move more memory than
the step's own products.  A sequence layer can do what fused RNN kernels
do instead: record the `x_t` of every step and compute

    dL/dK = sum_t x_t^T g_t = X^T G

as one matrix product of the whole sequence after the loop.

The gradients `g_t` come from a zero "probe": the step adds `e_t` (a step
of an all-zero `(batch, time, columns)` tensor, fed to the loop like an
input) to its product, so `dL/de_t = g_t`, while the loop itself sees the
kernel through `tf.stop_gradient`.  The probe is made by
`weight_gradient_probe` from the kernels, and its gradient function turns
`G` (the gradient of the probe) and the recorded `X` into the kernels'
gradients.  The values are unchanged (the probe is zero); the gradients
equal the per-step ones up to the order of the summation.

Example:

>>> import tensorflow as tf
>>> kernel = tf.constant([[1.0, 2.0], [3.0, 4.0]])
>>> x = tf.constant([[[1.0, 0.0], [0.0, 1.0]]])  # (batch 1, time 2, rows 2)
>>> recorded = {}
>>> with tf.GradientTape() as tape:
...     tape.watch(kernel)
...     probe = weight_gradient_probe([kernel], 1, 2, recorded)
...     s = tf.einsum("btr,rc->btc", x, tf.stop_gradient(kernel)) + probe
...     recorded["inputs"] = x
...     loss = tf.reduce_sum(s * tf.constant([1.0, 10.0]))
>>> tape.gradient(loss, kernel).numpy().tolist()  # x^T g: one row per input
[[1.0, 10.0], [1.0, 10.0]]
"""

import tensorflow as tf


def weight_gradient_probe(kernels, batch_size, time_steps, recorded):
    """An all-zero `(batch, time, columns)` tensor carrying the kernels' gradients.

    Args:
        kernels: the kernels `K_1, ..., K_n` of one product `[x^1 ... x^n]
            [K_1; ...; K_n]` (same column count), as tensors.
        batch_size, time_steps: the probe's leading dimensions.
        recorded: a dict; before the gradient is taken, `recorded["inputs"]`
            must hold the `(batch, time, rows_1 + ... + rows_n)` inputs
            `[x^1_t ... x^n_t]` of every step, in the probe's time order,
            without a gradient of their own (`tf.stop_gradient`).

    Returns:
        The probe: add its step `t` to the product of step `t`, which uses
        the kernels through `tf.stop_gradient`.
    """
    rows = [int(kernel.shape[0]) for kernel in kernels]
    columns = int(kernels[0].shape[1])

    @tf.custom_gradient
    def probe(*kernels):
        zeros = tf.zeros(tf.stack([batch_size, time_steps, columns]), kernels[0].dtype)

        def grad(upstream):
            inputs = tf.reshape(recorded["inputs"], [-1, sum(rows)])
            upstream = tf.reshape(tf.cast(upstream, inputs.dtype), [-1, columns])
            total = tf.matmul(inputs, upstream, transpose_a=True)  # X^T G
            return tf.split(total, rows, axis=0)

        return zeros, grad

    return probe(*kernels)
