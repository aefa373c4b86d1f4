"""Small float64 hierarchical cells and inputs shared by the cell tests."""

import keras
import numpy as np

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
        for name in ("kernel", "recurrent_kernel", "top_down_kernel"):
            variable = next((w for w in cell.weights if w.name == f"{name}_{n}"), None)
            if variable is None:
                continue
            value = variable.numpy()
            value[:, columns_per_unit * units_l] *= 4.0
            variable.assign(value)
        bias = next(w for w in cell.weights if w.name == f"bias_{n}")
        value = bias.numpy()
        value[columns_per_unit * units_l] = z_bias
        bias.assign(value)
    return cell


def run_rnn(cell, x, training=False):
    rnn = keras.layers.RNN(cell, return_sequences=True, return_state=True, dtype="float64")
    result = rnn(x, training=training)
    return np.asarray(result[0]), [np.asarray(s) for s in result[1:]]


def inputs(seed=0):
    return np.random.default_rng(seed).normal(size=(B, T, FEATURES))
