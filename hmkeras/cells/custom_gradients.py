"""What the cells' custom gradients need on every backend.

`keras.ops.custom_gradient` is `tf.custom_gradient` on TensorFlow,
`jax.custom_gradient` on JAX and a `torch.autograd.Function` on PyTorch.
Its function takes tensors (`tensor_value` reads a variable once), and its
gradient function receives the output's gradient positionally on
TensorFlow and JAX and as the keyword `upstream` on PyTorch
(`upstream_gradient` takes either).

Examples:

    >>> import keras
    >>> from keras import ops
    >>> @ops.custom_gradient
    ... def doubled_gradient(x):
    ...     def gradient(*args, upstream=None):
    ...         return 2.0 * upstream_gradient(args, upstream)
    ...     return x, gradient
    >>> float(ops.convert_to_numpy(doubled_gradient(tensor_value(keras.Variable(3.0)))))
    3.0
"""

from keras import ops


def tensor_value(value):
    """`value` as a tensor: a variable's value read once (a custom gradient
    takes tensors, and `ops.convert_to_tensor` would keep a variable on
    TensorFlow), anything else converted."""
    if hasattr(value, "assign"):
        value = ops.copy(value)
    return ops.convert_to_tensor(value)


def upstream_gradient(args, upstream):
    """The gradient of the output, however the backend hands it to the
    gradient function (TensorFlow and JAX: positionally; PyTorch: as the
    keyword `upstream`)."""
    if upstream is None:
        (upstream,) = args
    return upstream
