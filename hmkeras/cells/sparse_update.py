"""Sparse-update inference for the hierarchical multiscale cells.

A layer `l` of an HM cell COPYs at step `t` when `z^l_{t-1} = 0` and
`z^{l-1}_t = 0` (Chung et al. Eq. 2): its state is kept bit for bit, so its
update is wasted work.  With `sparse_updates=True` (an argument of
`HMLSTMCell`, `HMRNNCell` and of the sequence layers `HMLSTM`, `HMRNN`), a
layer whose operation is COPY in every row of the batch skips its update
(a `tf.cond` per layer and step); at batch 1, the streaming case of
evaluation and generation, that is every COPY.  The skipped branch still
computes the boundary detector's pre-activation, one column of the
layer's products (for the HM-LSTM `U h^l_{t-1}` alone, Eq. 5), since
`z^l_t` decides whether the next step FLUSHes; the top layer has no
detector and does no work at all.

What that column needs is prepared once per sequence (`CopyBoundary`,
made with the layer's `layer_products.LayerProducts`): the boundary column of
each kept product's kernel as a kernel of its own (all that is needed
without layer normalization) and, with layer normalization (Ba et al.
Eq. 20-21), what gives the product's variance without the product.  For a centred kernel `M_c` with `C` columns and
`n` rows, the variance of `y = x M_c` over its columns is `x G x^T` with
the Gram matrix `G = M_c M_c^T / C`; where `G` is smaller than the
kernel (`C > n + 1`: the HM-LSTM's four gates) the step multiplies `x`
by `[G | g M_c[:, -1:]]` (`g` the column's normalization gain), else
by `[M_c / sqrt(C) | g M_c[:, -1:]]` and takes the sum of squares.
Either way the skipped branch does one small matrix product per kept
product, a few `(batch, 1)` operations and one addition of a
per-sequence offset (the detector's bias plus the kept products'
normalization biases), and slices nothing per step
(`boundary_preactivation`).

The results equal the dense path's: `h` and `c` are the kept state in
both, and the boundaries are discrete (`"step"` mode, and `"sample"` at
inference), so the one-column product can only change `z` if the
pre-activation lies within rounding of the threshold.  Training ignores
the option (the dense path carries the straight-through gradients of the
masks), and `boundary_mode="soft"` refuses it: there COPY is not exact.

`UpdateCounter` counts, per layer, the updates executed and skipped by the
cells that run sparse; `update_statistics` reads them, `sparse_updates`
switches a whole model for a block of code.

Examples:

    >>> import numpy as np
    >>> from hmkeras.cells import HMLSTM, sparse_update
    >>> layer = HMLSTM(4, num_layers=3, boundary_bias=-5.0, sparse_updates=True)
    >>> _ = layer(np.ones((1, 6, 3), "float32"))
    >>> stats = sparse_update.update_statistics(layer)
    >>> stats["executed"] + stats["skipped"], stats["skipped"]  # top layer COPYs
    (18, 12)
"""

import collections
import contextlib

import numpy as np
import tensorflow as tf

from hmkeras.cells.layer_search import find_layers

BoundaryTerm = collections.namedtuple("BoundaryTerm", ["product", "kernel", "statistics"])
BoundaryTerm.__doc__ = """One kept product's share of a COPYing layer's boundary column.

`product`: which input multiplies it (0, 1, 2: `h^{l-1}_t`, `h^l_{t-1}`,
`h^{l+1}_{t-1}`, the order of Chung Eq. 5-7's W, U, V).  `kernel`: the
`(n, 1)` boundary column without layer normalization, else `(n, m + 1)`:
`m` columns giving the variance, then the boundary column times its
gain.  `statistics`: `None` (no normalization), `"gram"` (the variance
is `x . (x K[:, :n])`) or `"squares"` (the variance is the sum of the
squares of `x K[:, :m]`).
"""

CopyBoundary = collections.namedtuple("CopyBoundary", ["terms", "offset", "epsilon"])
CopyBoundary.__doc__ = """What a COPYing layer's boundary pre-activation needs, per sequence.

`terms`: a tuple of `BoundaryTerm`s; `offset`: the `(1,)` detector bias
plus the kept products' normalization biases, in the compute dtype;
`epsilon`: the layer normalization's.
"""


def check_sparse_updates(sparse_updates, boundary_mode):
    """Validates the `sparse_updates` argument of a hierarchical cell."""
    if not isinstance(sparse_updates, (bool, np.bool_)):
        raise ValueError(
            "`sparse_updates` must be True or False. "
            f"Received: sparse_updates={sparse_updates!r}"
        )
    if sparse_updates and boundary_mode == "soft":
        raise ValueError(
            "`sparse_updates=True` needs discrete boundaries: use "
            'boundary_mode="step" or "sample" (a "soft" COPY is not exact). '
            f"Received: boundary_mode={boundary_mode!r}"
        )
    return bool(sparse_updates)


class UpdateCounter:
    """Per-layer counts of the layer updates executed and skipped.

    One count per layer and step (for the whole batch).  Keras' RNN loop
    runs the step once more, outside the loop, to learn the output shape;
    that step is not counted under a sequence layer, nor under
    `keras.layers.RNN(cell)` in a compiled function (it is when executing
    eagerly; and a compiled `RNN(cell, unroll=True)` counts nothing: use
    the sequence layers).  The variables are
    made on first use, outside any compiled function, and are not weights
    of the cell (checkpoints do not change); `reset` zeroes them.
    """

    __slots__ = ("num_layers", "paused", "in_sequence_layer", "_variables")

    def __init__(self, num_layers):
        self.num_layers = num_layers
        self.paused = False  # set while Keras' loop probes the output shape
        self.in_sequence_layer = False  # a sequence layer sets `paused` itself
        self._variables = None

    def _counts(self):
        if self._variables is None:
            with tf.init_scope():
                self._variables = tuple(
                    tf.Variable(tf.zeros((self.num_layers,), tf.int64),
                                trainable=False, name=name)
                    for name in ("executed_updates", "skipped_updates")
                )
        return self._variables

    @property
    def variables(self):
        """The `(executed, skipped)` count variables (made on first use)."""
        return self._counts()

    def count(self, index, skipped):
        """Adds one update of layer `index` (an op to depend on in graphs)."""
        if self.paused:
            return tf.no_op()
        variable = self._counts()[int(bool(skipped))]
        return variable.assign_add(tf.one_hot(index, self.num_layers, dtype=tf.int64))

    def reset(self):
        for variable in self._counts():
            variable.assign(tf.zeros_like(variable))

    def numpy(self):
        """`(executed, skipped)`: two int arrays, one entry per layer."""
        executed, skipped = self._counts()
        return executed.numpy(), skipped.numpy()


def boundary_term(product, kernel, gain=None):
    """The `BoundaryTerm` of one kept product (see the module docstring).

    Args:
        product: The product's input index (0, 1, 2: W, U, V).
        kernel: `(n, C)`, the product's kernel, centred over its columns
            when `gain` is given (layer normalization); its last column is
            the boundary detector's.
        gain: The normalization gain of the boundary column, a scalar in
            the kernel's dtype, or `None` without layer normalization.
    """
    column = kernel[:, -1:]
    if gain is None:
        return BoundaryTerm(product, column, None)
    rows, columns = kernel.shape
    if columns > rows + 1:  # Ba et al. Eq. (21): var(x M_c) = x G x^T
        gram = tf.matmul(kernel, kernel, transpose_b=True) / columns
        return BoundaryTerm(product, tf.concat([gram, column * gain], 1), "gram")
    scaled = kernel / tf.sqrt(tf.cast(columns, kernel.dtype))
    return BoundaryTerm(product, tf.concat([scaled, column * gain], 1), "squares")


def boundary_preactivation(copy_boundary, inputs):
    """A COPYing layer's boundary pre-activation, `(batch, 1)`.

    The last column of the layer's gated products plus its bias (Chung
    Eq. 5-7 with the COPY's factors), each normalized product's column
    scaled by `gain / sqrt(var + eps)` (Ba et al. Eq. 20-21).

    Args:
        copy_boundary: The layer's `CopyBoundary`.
        inputs: `(h^{l-1}_t, h^l_{t-1}, h^{l+1}_{t-1})`, `None` where unused.
    """
    total = copy_boundary.offset
    for term in copy_boundary.terms:
        x = inputs[term.product]
        if term.statistics is None:
            total = total + tf.matmul(x, term.kernel)  # Chung Eq. (5)-(7), one column
            continue
        x = tf.cast(x, term.kernel.dtype)  # float32 statistics under mixed precision
        width = term.kernel.shape[1] - 1
        spread, column = tf.split(tf.matmul(x, term.kernel), [width, 1], axis=-1)
        if term.statistics == "gram":
            variance = tf.reduce_sum(spread * x, axis=-1, keepdims=True)
            variance = tf.maximum(variance, 0.0)
        else:
            variance = tf.reduce_sum(tf.square(spread), axis=-1, keepdims=True)
        term_value = column * tf.math.rsqrt(variance + copy_boundary.epsilon)
        total = total + tf.cast(term_value, total.dtype)  # Ba et al. Eq. (20)-(21)
    return total


def skip_copying_layer(layer_step, step, counter):
    """`layer_step(step)`, skipped when every row of the batch COPYs.

    A COPY keeps the layer's state bit for bit (Chung Eq. 2-3), so the
    skipped branch returns the state unchanged and computes only what the
    step still needs: the boundary detector's pre-activation, from the
    per-sequence `CopyBoundary` of the layer's products
    (`LayerProducts.copy_boundary_preactivation`), none at all for the top
    layer.  The bottom layer never COPYs.  Every executed and skipped
    update is counted on `counter`, an `UpdateCounter`.

    Args:
        layer_step: The cell's update of one layer, `step -> (new_state,
            boundary_preactivation)`.
        step: The layer's `LayerStep` (`layer_step`).
        counter: The cell's `UpdateCounter`.
    """
    if step.ops.copy is None:  # the bottom layer
        counter.count(step.index, skipped=False)
        return layer_step(step)
    has_boundary = step.z_previous is not None

    # The counts are stateful operations of their branch: compiled, each
    # branch runs its own (automatic control dependencies), so no output
    # waits on them.
    def dense():
        counter.count(step.index, skipped=False)
        new_state, preactivation = layer_step(step)
        return (new_state, preactivation) if has_boundary else new_state

    def skipped():
        counter.count(step.index, skipped=True)
        if not has_boundary:
            return list(step.state)
        # Chung Eq. (5)-(7), the boundary column of a COPY
        preactivation = step.products.copy_boundary_preactivation(step.inputs)
        return list(step.state), preactivation

    every_row_copies = tf.reduce_all(tf.equal(step.ops.copy, 1.0))
    result = tf.cond(every_row_copies, skipped, dense)
    if has_boundary:
        return list(result[0]), result[1]
    return list(result), None


def in_loop_step(sequence_graph):
    """Whether a step being built is one of Keras' loop steps.

    Compiled, `keras.layers.RNN` builds its shape-probing step directly in
    the graph where the cell's sequence was opened (`sequence_graph`), and
    its loop steps in a while-loop body nested in that graph. Eagerly (or
    with no open sequence) the two cannot be told apart: True.
    """
    if sequence_graph is None or tf.executing_eagerly():
        return True
    return tf.compat.v1.get_default_graph() is not sequence_graph


def _counting(layer):
    return isinstance(getattr(layer, "_sparse_counter", None), UpdateCounter)


def _cells(model_or_cell):
    """The cells inside that count their updates (the hierarchical cells)."""
    return find_layers(model_or_cell, _counting)


def update_statistics(model_or_cell):
    """Counts of the executed and skipped layer updates of sparse cells.

    Args:
        model_or_cell: A cell, sequence layer, RNN or model holding
            hierarchical cells; their counts are summed.

    Returns:
        A dict: `"executed"` and `"skipped"` (totals over layers and
        steps), `"per_layer_executed"` and `"per_layer_skipped"` (lists,
        bottom first, of the first cell's layer count), and
        `"skipped_fraction"` (`skipped / (executed + skipped)`, 0 when
        nothing ran).
    """
    executed, skipped = None, None
    for cell in _cells(model_or_cell):
        e, s = cell._sparse_counter.numpy()
        executed = e if executed is None else executed + e
        skipped = s if skipped is None else skipped + s
    if executed is None:
        raise ValueError(
            "`model_or_cell` holds no hierarchical cell (HMLSTMCell, HMRNNCell)."
        )
    total = int(executed.sum() + skipped.sum())
    return {
        "executed": int(executed.sum()),
        "skipped": int(skipped.sum()),
        "per_layer_executed": executed.tolist(),
        "per_layer_skipped": skipped.tolist(),
        "skipped_fraction": float(skipped.sum()) / total if total else 0.0,
    }


def reset_statistics(model_or_cell):
    """Zeroes the update counts of every hierarchical cell inside."""
    for cell in _cells(model_or_cell):
        cell._sparse_counter.reset()


@contextlib.contextmanager
def sparse_updates(model_or_cell, enabled=True):
    """Turns `sparse_updates` on (or off) for every hierarchical cell inside.

    The flag is read when a function is traced: build or trace the
    functions that should run sparse inside the block (the evaluation and
    step-export helpers take a `sparse_updates` argument that does it).
    The previous values come back on exit.
    """
    cells = _cells(model_or_cell)
    previous = [cell.sparse_updates for cell in cells]
    try:
        for cell in cells:
            cell.sparse_updates = check_sparse_updates(enabled, cell.boundary_mode)
        yield cells
    finally:
        for cell, value in zip(cells, previous):
            cell.sparse_updates = value
