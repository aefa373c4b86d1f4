"""The weights of one layer of a hierarchical cell.

`HierarchicalCell.build` makes, for each layer `l` (paper numbering `n =
l`), a dict of weights (`add_products`, then the subclass adds its bias
with `add_bias` and any normalization of its own with `add_layer_norm`):

* `kernel_{n}` (W, bottom-up), `recurrent_kernel_{n}` (U) and, below the
  top when `top_down`, `top_down_kernel_{n}` (V) (Chung et al. Eq. 5-7),
  each with `C * units` gate columns plus, below the top, the boundary
  detector's column;
* with `layer_norm`, the gain and bias of each product's normalization
  (Ba et al. 2016, Eq. 20);
* `bias_{n}`, with the boundary column's entry set to `boundary_bias`.

With `boundary_input="updated"` the products have no boundary column;
each layer below the top has its detector's own `detector_kernel_{n}`
(`units x 1`, reading `h^l_t`) and `detector_bias_{n}` instead
(`add_updated_detector`).

Every random matrix and every boundary column is a draw of its own
(`independent_draw`), reproducible from the cell's `seed`.
"""

import keras

from hmkeras.cells.independent_initializers import independent_draw


def add_products(cell, index, input_size, units, above_units):
    """The weights of a layer's three products (Chung Eq. 5-7).

    Args:
        cell: The `HierarchicalCell` being built.
        index: 0-based layer index.
        input_size, units, above_units: The sizes of the layer below (or of
            the input), of this layer and of the layer above (`None` for the
            top layer, which has no boundary detector).

    Returns:
        The layer's weight dict, for the subclass to complete.
    """
    n = index + 1  # paper numbering of the layers
    has_column = above_units is not None and cell.has_detector_columns
    weights = {
        "kernel": _add_matrix(
            cell, f"kernel_{n}", input_size, units, has_column,
            cell.kernel_initializer, cell.kernel_regularizer, cell.kernel_constraint,
        ),
        "recurrent_kernel": _add_matrix(
            cell, f"recurrent_kernel_{n}", units, units, has_column,
            cell.recurrent_initializer, cell.recurrent_regularizer,
            cell.recurrent_constraint,
        ),
    }
    if above_units is not None and cell.top_down:
        weights["top_down_kernel"] = _add_matrix(
            cell, f"top_down_kernel_{n}", above_units, units, has_column,
            cell.recurrent_initializer, cell.recurrent_regularizer,
            cell.recurrent_constraint,
        )
    if cell.layer_norm:
        columns = cell._columns_per_unit * units + int(has_column)
        for name in ("bottom_up", "recurrent", "top_down"):
            if name != "top_down" or "top_down_kernel" in weights:
                weights[f"norm_{name}"] = add_layer_norm(
                    cell, f"norm_{name}_{n}", columns, gain=cell.layer_norm_gain
                )
    return weights


def add_layer_norm(cell, name, size, gain=1.0):
    """Gain and bias of one layer normalization (Ba et al. 2016)."""
    gain = cell.add_weight(
        name=f"{name}_gain", shape=(size,),
        initializer=keras.initializers.Constant(gain),
    )
    bias = cell.add_weight(name=f"{name}_beta", shape=(size,), initializer="zeros")
    return gain, bias


def add_bias(cell, index, units, has_boundary, gate_shift=None):
    """`b_l`, with the boundary column's entry set to `boundary_bias`
    (a layer below the top, `has_boundary`, whose detector reads the
    products).

    `gate_shift(shape, dtype)`, when given, is added to the gate part
    (the HM-LSTM's forget bias).
    """
    gate_columns = cell._columns_per_unit * units
    has_boundary = has_boundary and cell.has_detector_columns

    def initializer(shape, dtype=None):
        bias = cell.bias_initializer(shape, dtype=dtype)
        shift = keras.ops.zeros((gate_columns,), dtype=dtype)
        if gate_shift is not None:
            shift = gate_shift((gate_columns,), dtype)
        if has_boundary:
            column = keras.ops.full((1,), cell.boundary_bias, dtype=dtype)
            shift = keras.ops.concatenate([shift, column])
        return bias + shift

    return cell.add_weight(
        name=f"bias_{index + 1}",
        shape=(gate_columns + int(has_boundary),),
        initializer=initializer,
        regularizer=cell.bias_regularizer,
        constraint=cell.bias_constraint,
    )


def add_updated_detector(cell, index, units):
    """The weights of a detector that reads the updated state `h^l_t`
    (`boundary_input="updated"`): `{"detector_kernel": (units, 1),
    "detector_bias": (1,)}`, the kernel a draw of `boundary_initializer`
    of its own with the recurrent regularizer and constraint (it reads the
    layer's own state, as `U` does), the bias `bias_initializer` plus
    `boundary_bias` with the bias regularizer and constraint."""
    n = index + 1
    draw = independent_draw(cell.boundary_initializer, cell._draws, cell.seed)
    cell._draws += 1

    def bias_initializer(shape, dtype=None):
        return cell.bias_initializer(shape, dtype=dtype) + keras.ops.full(
            shape, cell.boundary_bias, dtype=dtype)

    return {
        "detector_kernel": cell.add_weight(
            name=f"detector_kernel_{n}", shape=(units, 1), initializer=draw,
            regularizer=cell.recurrent_regularizer, constraint=cell.recurrent_constraint,
        ),
        "detector_bias": cell.add_weight(
            name=f"detector_bias_{n}", shape=(1,), initializer=bias_initializer,
            regularizer=cell.bias_regularizer, constraint=cell.bias_constraint,
        ),
    }


def _add_matrix(cell, name, rows, units, has_boundary, initializer, regularizer,
                constraint):
    columns = cell._columns_per_unit * units + int(has_boundary)
    return cell.add_weight(
        name=name,
        shape=(rows, columns),
        initializer=_gate_initializer(cell, initializer, units, has_boundary),
        regularizer=regularizer,
        constraint=constraint,
    )


def _gate_initializer(cell, gates_initializer, units, has_boundary):
    """Initializer of a `(rows, C * units [+ 1])` matrix.

    The gate columns come from `gates_initializer`, the boundary column
    (the last one, when the layer has a detector) from the cell's
    `boundary_initializer` (Kadar et al. Sec. 3.1: orthogonal gates,
    Glorot uniform for the z column).  Every matrix and every boundary
    column is a draw of its own (`independent_draw`), reproducible from
    `seed` when it is given: Keras initializer objects return the same
    values at every call, which would start equal-sized layers equal.
    """
    gate_columns = cell._columns_per_unit * units
    gates_draw = independent_draw(gates_initializer, cell._draws, cell.seed)
    column_draw = independent_draw(cell.boundary_initializer, cell._draws + 1, cell.seed)
    cell._draws += 2

    def initializer(shape, dtype=None):
        rows = shape[0]
        gates = gates_draw((rows, gate_columns), dtype=dtype)
        if not has_boundary:
            return gates
        column = column_draw((rows, 1), dtype=dtype)
        return keras.ops.concatenate([gates, column], axis=1)

    return initializer
