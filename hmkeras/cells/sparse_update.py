"""Sparse-update inference for the hierarchical multiscale cells.

A layer `l` of an HM cell COPYs at step `t` when `z^l_{t-1} = 0` and
`z^{l-1}_t = 0` (Chung et al. Eq. 2): its state is kept bit for bit, so its
update is wasted work.  With `sparse_updates=True` (an argument of
`HMLSTMCell`, `HMRNNCell` and of the sequence layers `HMLSTM`, `HMRNN`), a
layer whose operation is COPY in every row of the batch skips its update
(a `keras.ops.cond` per layer and step); at batch 1, the streaming case of
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

`count_updates` counts, per layer, the updates a sparse run executes and
skips, from the boundaries the cell returns (a layer skips a step when
every row COPYs, which `z` alone decides); `sparse_updates` switches a
whole model for a block of code.

Examples:

    >>> import numpy as np
    >>> from hmkeras.cells import HMLSTM, sparse_update
    >>> layer = HMLSTM(4, num_layers=3, boundary_bias=-5.0, sparse_updates=True,
    ...                return_sequences=True)
    >>> _, boundaries = layer.split_outputs(layer(np.ones((1, 6, 3), "float32")))
    >>> stats = sparse_update.count_updates(boundaries)
    >>> stats["executed"] + stats["skipped"], stats["skipped"]  # top layer COPYs
    (18, 12)
"""

import collections
import contextlib

import keras
import numpy as np
from keras import ops

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
        gram = ops.matmul(kernel, ops.transpose(kernel)) / columns
        return BoundaryTerm(product, ops.concatenate([gram, column * gain], 1), "gram")
    scaled = kernel / ops.sqrt(ops.cast(columns, kernel.dtype))
    return BoundaryTerm(product, ops.concatenate([scaled, column * gain], 1), "squares")


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
            total = total + ops.matmul(x, term.kernel)  # Chung Eq. (5)-(7), one column
            continue
        x = ops.cast(x, term.kernel.dtype)  # float32 statistics under mixed precision
        width = term.kernel.shape[1] - 1
        spread, column = ops.split(ops.matmul(x, term.kernel), [width], axis=-1)
        if term.statistics == "gram":
            variance = ops.sum(spread * x, axis=-1, keepdims=True)
            variance = ops.maximum(variance, 0.0)
        else:
            variance = ops.sum(ops.square(spread), axis=-1, keepdims=True)
        term_value = column * ops.rsqrt(variance + copy_boundary.epsilon)
        total = total + ops.cast(term_value, total.dtype)  # Ba et al. Eq. (20)-(21)
    return total


def skip_copying_layer(layer_step, step):
    """`layer_step(step)`, skipped when every row of the batch COPYs.

    A COPY keeps the layer's state bit for bit (Chung Eq. 2-3), so the
    skipped branch returns the state unchanged and computes only what the
    step still needs: the boundary detector's pre-activation, from the
    per-sequence `CopyBoundary` of the layer's products
    (`LayerProducts.copy_boundary_preactivation`), none at all for the top
    layer.  The bottom layer never COPYs.

    Args:
        layer_step: The cell's update of one layer, `step -> (new_state,
            boundary_preactivation)`.
        step: The layer's `LayerStep` (`layer_step`).
    """
    if step.ops.copy is None:  # the bottom layer
        return layer_step(step)
    # A detector that reads the products (Chung Eq. 5-7) needs its column
    # while the layer COPYs; one that reads the kept `h^l` (the cell's
    # `boundary_input="updated"`) has no column and is computed after.
    has_boundary = step.products.copy_boundary is not None

    def dense():
        new_state, preactivation = layer_step(step)
        return (new_state, preactivation) if has_boundary else new_state

    def skipped():
        if not has_boundary:
            return list(step.state)
        # Chung Eq. (5)-(7), the boundary column of a COPY
        preactivation = step.products.copy_boundary_preactivation(step.inputs)
        return list(step.state), preactivation

    every_row_copies = ops.all(ops.equal(step.ops.copy, 1.0))
    result = ops.cond(every_row_copies, skipped, dense)
    if has_boundary:
        return list(result[0]), result[1]
    return list(result), None


def count_updates(boundaries, initial_boundaries=None):
    """The layer updates a sparse run executes and skips, from its `z`.

    Layer `l > 1` COPYs at step `t` when `z^l_{t-1} = 0` and
    `z^{l-1}_t = 0`, the top layer when `z^{L-1}_t = 0` (Chung Eq. 2); a
    sparse run skips a layer's update at a step where every row of the
    batch COPYs, and executes it otherwise (the bottom layer always).  So
    the counts follow from the boundaries alone, whichever backend, loop
    or compilation produced them.

    Args:
        boundaries: `(batch, time, L - 1)` or `(time, L - 1)` boundaries
            `z^1 .. z^{L-1}` (`split_outputs(y)[1]` of a sequence output).
        initial_boundaries: `(batch, L - 1)` or `(L - 1,)`: `z_0`, the
            boundaries of the step before the first (the carried state's
            last entry); default zeros, the zero state's.

    Returns:
        A dict: `"executed"` and `"skipped"` (totals over layers and
        steps), `"per_layer_executed"` and `"per_layer_skipped"` (lists,
        bottom first, one entry per layer), and `"skipped_fraction"`
        (`skipped / (executed + skipped)`, 0 for no steps).

    Examples:

        >>> import numpy as np
        >>> z = np.array([[1, 0], [0, 0], [0, 1], [0, 0]])  # (time, L - 1), L = 3
        >>> count_updates(z)["per_layer_skipped"]
        [0, 2, 3]
    """
    z = np.asarray(keras.ops.convert_to_numpy(boundaries)) > 0.5
    if z.ndim == 2:
        z = z[None]
    if z.ndim != 3:
        raise ValueError(
            "`boundaries` must be (batch, time, layers - 1) or (time, layers - 1). "
            f"Received shape: {z.shape}"
        )
    batch, steps, detectors = z.shape
    if initial_boundaries is None:
        first = np.zeros((batch, 1, detectors), bool)
    else:
        first = np.broadcast_to(
            np.asarray(keras.ops.convert_to_numpy(initial_boundaries)) > 0.5,
            (batch, detectors),
        )[:, None, :]
    previous = np.concatenate([first, z[:, :-1]], axis=1)
    skipped = np.sum(keras.ops.convert_to_numpy(skipped_layers(z, previous)), axis=0)
    return summarize_counts([steps - count for count in skipped], skipped)


def skipped_layers(boundaries, previous_boundaries):
    """Which layers a sparse step skips: those that COPY in every row.

    Args:
        boundaries: `(batch, ..., L - 1)`: `z_t`, as booleans or 0/1.
        previous_boundaries: The same shape: `z_{t-1}`.

    Returns:
        `(..., L)` booleans, bottom layer first (never skipped).
    """
    z = ops.cast(boundaries, "bool")
    previous = ops.cast(previous_boundaries, "bool")
    # Layer l+1 (index l) COPYs without z^l_t and, below the top, without
    # z^{l+1}_{t-1} (Chung Eq. 2); the top layer has no boundary of its own.
    keeps = ops.concatenate(
        [ops.logical_not(previous[..., 1:]), ops.ones_like(z[..., :1])], axis=-1
    )
    copies = ops.logical_and(ops.logical_not(z), keeps)
    every_row = ops.all(copies, axis=0)
    return ops.concatenate([ops.zeros_like(every_row[..., :1]), every_row], axis=-1)


def summarize_counts(per_layer_executed, per_layer_skipped):
    """The dict of `count_updates` from per-layer counts (e.g. summed
    over the chunks of a text)."""
    executed = [int(count) for count in per_layer_executed]
    skipped = [int(count) for count in per_layer_skipped]
    total = sum(executed) + sum(skipped)
    return {
        "executed": sum(executed),
        "skipped": sum(skipped),
        "per_layer_executed": executed,
        "per_layer_skipped": skipped,
        "skipped_fraction": sum(skipped) / total if total else 0.0,
    }


def _can_run_sparse(layer):
    """Whether `layer` is a hierarchical cell (the cells with a
    `sparse_updates` flag of their own, not a sequence layer's view)."""
    return isinstance(getattr(layer, "__dict__", {}).get("sparse_updates"), bool)


def _cells(model_or_cell):
    """The hierarchical cells inside (the cells that can run sparse)."""
    return find_layers(model_or_cell, _can_run_sparse)


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
