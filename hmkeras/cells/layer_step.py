"""One layer of a hierarchical cell at one step: its operation and inputs.

Each layer `l` of `HMLSTMCell` and `HMRNNCell` does one of three
operations per step (Chung et al. 2017, Eq. 2-3), chosen per row by
arithmetic masks (Kadar et al. 2018, Appendix A, Eq. 10-12), with
`z_t^0 = 1` (the input is never skipped) and no boundary on the top layer:

    flush  = z_{t-1}^l
    update = (1 - z_{t-1}^l) * z_t^{l-1}
    copy   = (1 - z_{t-1}^l) * (1 - z_t^{l-1})

In the discrete modes COPY keeps the state bit for bit (`1 * prev + 0 *
new`, `blend_copy`), and gradients reach `z` through the masks as well as
through the gated inputs.  A `LayerStep` is what the cell's update of one
layer reads; a `StepContext` what every layer of one step shares.

Examples:

    Rows: FLUSH, UPDATE, COPY.

    >>> import tensorflow as tf
    >>> ops = layer_operations(z_previous=tf.constant([[1.0], [0.0], [0.0]]),
    ...                        z_below=tf.constant([[0.0], [1.0], [0.0]]))
    >>> [m.numpy().ravel().tolist() for m in (ops.flush, ops.update, ops.copy)]
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
"""

import collections
import dataclasses
from typing import Any

from hmkeras.cells.layer_products import LayerProducts
from hmkeras.cells.layer_products import ProductInputs

LayerOperations = collections.namedtuple(
    "LayerOperations", ["flush", "update", "copy"]
)
LayerOperations.__doc__ = """Masks of shape `(batch, 1)` choosing the operation of one layer.

`None` stands for a mask that is identically zero: the bottom layer never
COPYs (`copy is None`) and the top layer never FLUSHes (`flush is None`).
`update` is never `None`.
"""


def blend_copy(copy, previous, candidate):
    """`copy * previous + (1 - copy) * candidate` (Kadar Eq. 11-12).

    Exact in the discrete modes: with `copy == 1` it returns `previous` bit
    for bit, with `copy == 0` it returns `candidate`.  `copy=None` means no
    COPY is possible and returns `candidate` unchanged.
    """
    if copy is None:
        return candidate
    return copy * previous + (1.0 - copy) * candidate


def layer_operations(z_previous, z_below):
    """UPDATE / COPY / FLUSH masks of one layer (Chung et al. Eq. 2).

    Args:
        z_previous: `z_{t-1}^l`, shape `(batch, 1)`, or `None` for the top
            layer, which has no boundary detector.
        z_below: `z_t^{l-1}`, shape `(batch, 1)`, or `None` for the bottom
            layer (`z_t^0 = 1`).

    Returns:
        A `LayerOperations`.
    """
    if z_previous is None and z_below is None:
        raise ValueError("A layer needs a boundary below or above it.")
    if z_previous is None:  # top layer: UPDATE when the layer below ends
        return LayerOperations(flush=None, update=z_below, copy=1.0 - z_below)
    if z_below is None:  # bottom layer: FLUSH or UPDATE, never COPY
        return LayerOperations(flush=z_previous, update=1.0 - z_previous, copy=None)
    not_flush = 1.0 - z_previous
    return LayerOperations(
        flush=z_previous,
        update=not_flush * z_below,
        copy=not_flush * (1.0 - z_below),
    )


@dataclasses.dataclass(frozen=True)
class LayerStep:
    """What one layer reads at one step (the argument of `_layer_step`).

    `index`: 0-based layer index.  `state`: the layer's previous state
    list, `h^l_{t-1}` first.  `inputs`: the `ProductInputs` of its
    products.  `z_below`: `z^{l-1}_t`, `(batch, 1)`, or `None` at the
    bottom.  `z_previous`: `z^l_{t-1}`, or `None` for the top layer.
    `ops`: the layer's `LayerOperations`.  `products`: its
    `LayerProducts` for the sequence.
    """

    index: int
    state: list
    inputs: ProductInputs
    z_below: Any
    z_previous: Any
    ops: LayerOperations
    products: LayerProducts

    @property
    def is_top(self):
        return self.z_previous is None


@dataclasses.dataclass(frozen=True)
class StepContext:
    """What every layer of one step shares (`HierarchicalCell._step`).

    `z_previous`: `z^l_{t-1}` of the layers below the top; `recurrent`:
    every `h^l_{t-1}` as it enters the products (with its recurrent dropout
    mask); `products`: the `LayerProducts` of every layer; `sparse`:
    whether COPYing layers are skipped (`sparse_update`).
    """

    training: bool
    sparse: bool
    slope: Any
    z_previous: list
    recurrent: list
    products: tuple
