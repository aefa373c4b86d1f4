"""Weight normalization (Salimans & Kingma, 2016) of a kernel, per output unit.

A weight-normalized matrix is stored as a direction `v` and a gain `g` with one
entry per output unit (column):

    W[:, j] = g[j] * v[:, j] / ||v[:, j]||

Krause et al. apply it to the recurrent weights of the multiplicative LSTM
("mLSTM +emb +WN", Section 4.2): `MultiplicativeLSTMCell` normalizes those by
default, and its input kernel too with `weight_normalization_scope="all"`.
The gain is initialised to `||v||`
(`initializers`), so that `W == v` when training starts and turning weight
normalization on does not change the function the freshly initialised cell
computes.

Inside a recurrent cell the normalized matrix only depends on the weights, so
it is a *per-sequence constant*: `hmkeras.cells.variational_dropout` computes it once
before the time loop of `hmkeras.RNN` (or of a sequence layer such as
`MultiplicativeLSTM`) rather than at every step.

Examples:

    ```python
    import numpy as np
    from hmkeras.cells import weight_normalization

    v = np.random.normal(size=(3, 4)).astype("float32")
    g = weight_normalization.column_norm(v)          # what the gain starts at
    # In a layer's build: v_init, g_init = weight_normalization.initializers(...)
    w = weight_normalization.weight_normalize(v, g)  # == v
    np.testing.assert_allclose(w, v, rtol=1e-5)
    ```
"""

from keras import ops

# Added under the square root so that an all-zero column gives W = 0 rather
# than NaN; far below float32 resolution for any column of non-zero weights.
EPSILON = 1e-12


def column_norm(v, epsilon=EPSILON):
    """Euclidean norm of every column of `v` (over all axes but the last)."""
    v = ops.convert_to_tensor(v)
    axes = tuple(range(len(v.shape) - 1))
    return ops.sqrt(ops.sum(ops.square(v), axis=axes) + epsilon)


def weight_normalize(v, g, epsilon=EPSILON):
    """Returns `g * v / ||v||`, the norm taken per column (last axis of `v`).

    Args:
        v: direction tensor, shape `(..., units)`.
        g: gain tensor, shape `(units,)`.
        epsilon: small constant added to the squared norm.

    Returns:
        A tensor with the shape and dtype of `v`.
    """
    v = ops.convert_to_tensor(v)
    axes = tuple(range(len(v.shape) - 1))
    inverse_norm = ops.rsqrt(ops.sum(ops.square(v), axis=axes) + epsilon)
    return v * (ops.cast(g, v.dtype) * inverse_norm)


def initializers(initializer):
    """Initializers for a direction `v` and its gain `g`, with g = ||v||.

    Args:
        initializer: the initializer `v` would have without normalization.

    Returns:
        `(direction_initializer, gain_initializer)`. Create `v` with the first
        and then `g` (shape `(units,)`) with the second: the gain is the
        column norms of the value just drawn for `v`, so that
        `weight_normalize(v, g) == v` at initialisation. The gain does not
        read variable `v`, which would fail when a layer is first built
        inside a traced function such as a `tf.function` (its variables are
        initialised later).
    """
    drawn = {}

    def direction_initializer(shape, dtype=None):
        drawn["value"] = initializer(shape, dtype=dtype)
        return drawn["value"]

    def gain_initializer(shape, dtype=None):
        if "value" not in drawn:
            raise ValueError(
                "weight_normalization.initializers: create the direction "
                "before the gain."
            )
        norms = column_norm(drawn.pop("value"))
        if tuple(norms.shape) != tuple(shape):
            raise ValueError(
                f"The gain has shape {tuple(shape)} but the direction has "
                f"{tuple(norms.shape)} columns."
            )
        return ops.cast(norms, dtype or norms.dtype)

    return direction_initializer, gain_initializer
