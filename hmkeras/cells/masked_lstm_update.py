"""The HM-LSTM's pointwise update with its UPDATE / COPY / FLUSH masks.

Chung et al. Eq. (2)-(4) in the masked form of Kadar et al. Eq. (10)-(12):

    f, i, o = sigm(s_fio);  g = tanh(s_g)
    c = copy * c_{t-1} + (1 - copy) * i * g + update * f * c_{t-1}
    h = copy * h_{t-1} + (1 - copy) * o * tanh(c)

with per-row masks `copy`, `update` of shape `(batch, 1)` (FLUSH is the
case where both are 0: `c = i * g`).  The bottom layer never COPYs
(`copy=None`); Kadar's CopyLast top layer recomputes `h = o * tanh(c)` even
when it COPYs (`copy_hidden=False`).

The operations are combined arithmetically, so the gradient reaches the
masks and flows on to the boundary detectors through the straight-through
estimator.  The gradient is the backend's automatic one: a step's time goes
to the matrix products and the per-step accumulation of their weight
gradients, not to this function.

Examples:

    >>> from keras import ops
    >>> s = ops.zeros((2, 6)); g = ops.zeros((2, 2)); c = ops.ones((2, 2)); h = ops.ones((2, 2))
    >>> copy = ops.convert_to_tensor([[1.0], [0.0]]); update = ops.convert_to_tensor([[0.0], [1.0]])
    >>> h_new, c_new = masked_lstm_update(s, g, c, h, update, copy)
    >>> ops.convert_to_numpy(c_new).tolist()  # row 0 copies, row 1 updates: 0.5 * 1 + 0.5 * 0
    [[1.0, 1.0], [0.5, 0.5]]
"""

from keras import ops


def masked_lstm_update(
    s_fio, s_g, c_previous, h_previous, update, copy, copy_hidden=True, cell_output=None
):
    """One layer's LSTM update under the HM masks (Kadar et al. Eq. 12).

    Args:
        s_fio: pre-activations of the forget, input and output gates,
            `(batch, 3 * units)`.
        s_g: pre-activation of the cell proposal, `(batch, units)`.
        c_previous, h_previous: `(batch, units)`.
        update: UPDATE mask `(batch, 1)` (the factor of `f * c_{t-1}`).
        copy: COPY mask `(batch, 1)`, or `None` when the layer never COPYs.
        copy_hidden: whether COPY also keeps `h` (False: CopyLast top layer).
        cell_output: optional function applied to `c` before the output
            tanh (layer normalization, Ba et al. Eq. 22).

    Returns:
        `(h, c)`.
    """
    f, i, o = ops.split(ops.sigmoid(s_fio), 3, axis=-1)  # Chung Eq. (4): three equal parts
    g = ops.tanh(s_g)
    candidate = i * g
    forgotten = update * (f * c_previous)
    if copy is None:
        c = candidate + forgotten  # FLUSH or UPDATE
    else:
        keep = 1.0 - copy
        c = copy * c_previous + keep * candidate + forgotten  # Kadar Eq. (12)
    h = o * ops.tanh(c if cell_output is None else cell_output(c))  # Chung Eq. (3)
    if copy is not None and copy_hidden:
        h = copy * h_previous + keep * h  # COPY keeps h bit for bit
    return h, c
