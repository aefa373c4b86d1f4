"""Small float64 hierarchical cells and inputs shared by the cell tests."""

import keras
import numpy as np
from keras import ops

import backend_support
from backend_support import to_numpy
import finite_differences
import hm_reference
import hmkeras

UNITS = [5, 4, 3]
T = 24
B = 3
FEATURES = 4


def make_cell(cls=hmkeras.HMLSTMCell, units=UNITS, z_bias=0.0, seed=1, **kwargs):
    """A built float64 cell whose boundaries fire about half the time."""
    keras.utils.set_random_seed(seed)
    cell = cls(units, dtype="float64", **kwargs)
    cell.build((None, FEATURES))
    # Scale the boundary columns up so that z switches often, and shift the
    # detector bias so both values occur.
    columns_per_unit = cell._columns_per_unit
    for index, units_l in enumerate(cell.units[:-1]):
        n = index + 1
        if not cell.has_detector_columns:  # the detector reads h^l_t
            _scale_and_shift_detector(cell, n, z_bias)
            continue
        for name in ("kernel", "recurrent_kernel", "top_down_kernel"):
            variable = next((w for w in cell.weights if w.name == f"{name}_{n}"), None)
            if variable is None:
                continue
            value = ops.convert_to_numpy(variable)
            value[:, columns_per_unit * units_l] *= 4.0
            variable.assign(value)
        bias = next(w for w in cell.weights if w.name == f"bias_{n}")
        value = ops.convert_to_numpy(bias)
        value[columns_per_unit * units_l] = z_bias
        bias.assign(value)
    return cell


def _scale_and_shift_detector(cell, n, z_bias):
    """Layer `n`'s own detector (`boundary_input="updated"`): its kernel
    times 4, its bias `z_bias`."""
    kernel = next(w for w in cell.weights if w.name == f"detector_kernel_{n}")
    kernel.assign(4.0 * ops.convert_to_numpy(kernel))
    bias = next(w for w in cell.weights if w.name == f"detector_bias_{n}")
    bias.assign(np.full((1,), z_bias))


# The tolerances of a float64 cell against the float64 NumPy reference;
# float32 ones where the backend computes float64 layers in float32 (JAX,
# `backend_support.HAS_FLOAT64`; the reference is then fed the float32
# weights): after 24 steps the outputs are off by up to 3e-4 of their size.
FLOAT64 = (dict(rtol=1e-9, atol=1e-10) if backend_support.HAS_FLOAT64
           else dict(rtol=1e-3, atol=1e-4))


def run_rnn(cell, x, training=False):
    rnn = keras.layers.RNN(cell, return_sequences=True, return_state=True, dtype="float64",
                           **backend_support.DRAWING_LOOP)
    result = rnn(x, training=training)
    return to_numpy(result[0]), [to_numpy(s) for s in result[1:]]


def inputs(seed=0):
    return np.random.default_rng(seed).normal(size=(B, T, FEATURES))


# The cell's float64 gradients against the finite differences; float32
# ones where the cell computes in float32 (JAX: its gradients, up to about
# 200 here, are off by up to 2e-4 of the largest after 12 float32 steps).
GRADIENT_TOLERANCES = (dict(loss=1e-10, rtol=1e-5, atol=1e-8) if backend_support.HAS_FLOAT64
                       else dict(loss=1e-5, rtol=1e-3, atol=1e-4))


def check_gradients_against_reference(cell, reference, x, training=False, entries=2, seed=0):
    """Gradients of a top-layer loss vs finite differences of `reference`.

    The loss is `sum(h_top ** 2)` over `x`, differentiated by the cell
    with respect to every weight (the slope included).  The finite
    differences are taken on the NumPy `reference` (`hm_reference.hmlstm`
    or `.hmrnn`) in float64.  In the discrete modes the reference runs the
    soft form with `z = z~ + (z0 - z~0)`, `z0` the cell's decisions: its
    value at the cell's weights is the discrete forward and its derivative
    the straight-through gradient (dz/dz~ = 1, the derivative of the cell's
    `boundary_gradient` surrogate below), so the check covers the estimator
    as documented.  Always
    checks the boundary column of every lower layer's matrices and bias
    (with `boundary_input="updated"`, the detectors' own weights).

    Returns:
        The cell's outputs, as a NumPy array.
    """
    weights = list(cell.weights)
    top = slice(sum(cell.units[:-1]), sum(cell.units))
    rnn = keras.layers.RNN(cell, return_sequences=True, dtype="float64")
    rnn.build(x.shape)

    def objective(outputs, losses):
        return ops.sum(ops.square(outputs[..., top]))

    y, _, grads = backend_support.variable_gradients(
        rnn, weights, objective, ops.convert_to_tensor(x), training=training)
    loss = float(objective(y, []))
    assert all(g is not None for g in grads), [w.name for w, g in zip(weights, grads) if g is None]
    gradients = {w.name: to_numpy(g) for w, g in zip(weights, grads)}
    values = hm_reference.cell_weights(cell)
    y = to_numpy(y)

    offsets = None
    nested = cell.nested_boundaries
    if cell.boundary_mode != "soft":
        z0 = y[..., -(cell.num_layers - 1):]
        if nested:
            # The offsets move each detector's own decision, before the
            # nesting multiplies it by the layer below's (step mode: the
            # reference's decisions are the cell's).
            discrete = reference(x, values, cell.units, mode="step",
                                 slope=float(values["slope"]), gradient=cell.boundary_gradient,
                                 boundary_input=cell.boundary_input, nested=True)
            np.testing.assert_array_equal(discrete["outputs"][..., -(cell.num_layers - 1):], z0)
            offsets = discrete["z_own"] - discrete["z_tilde"]
        else:
            discrete = reference(x, values, cell.units, mode="step",
                                 slope=float(values["slope"]), boundaries=z0,
                                 gradient=cell.boundary_gradient,
                                 boundary_input=cell.boundary_input)
            offsets = z0 - discrete["z_tilde"]

    def reference_loss(point):
        out = reference(x, point, cell.units, mode="soft", slope=float(point["slope"]),
                        z_offsets=offsets, gradient=cell.boundary_gradient,
                        boundary_input=cell.boundary_input, nested=nested)["outputs"]
        return np.sum(np.square(out[..., top]))

    np.testing.assert_allclose(reference_loss(values), loss, rtol=GRADIENT_TOLERANCES["loss"])
    required = {}
    for index, units in enumerate(cell.units[:-1]):
        if not cell.has_detector_columns:  # the detector's own weights
            rows = cell.units[index]
            required[f"detector_kernel_{index + 1}"] = [0, rows - 1]
            required[f"detector_bias_{index + 1}"] = [0]
            continue
        column = cell._columns_per_unit * units  # the boundary detector's
        for name in ("kernel", "recurrent_kernel", "top_down_kernel", "bias"):
            shape = values[f"{name}_{index + 1}"].shape
            rows = shape[0] if len(shape) == 2 else 1
            required[f"{name}_{index + 1}"] = [r * shape[-1] + column for r in {0, rows - 1}]
    largest = finite_differences.assert_gradients_match(
        reference_loss, values, gradients, entries=entries, rtol=GRADIENT_TOLERANCES["rtol"],
        atol=GRADIENT_TOLERANCES["atol"],
        seed=seed, required=required)
    assert largest > 1e-3
    return y
