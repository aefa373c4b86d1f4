"""SlopeAnnealing and BoundaryMonitor find a hierarchical cell inside wrappers."""

import keras
import numpy as np
from backend_support import to_numpy
import pytest

import hmkeras
from hmkeras.training import BoundaryMonitor
from hmkeras.training import SlopeAnnealing
from hmkeras.wrappers import AttentionWrapper
from hmkeras.wrappers import AveragingWrapper

pytestmark = pytest.mark.every_backend

T = 8


def _hm_model(return_cell_output):
    keras.utils.set_random_seed(5)
    cell = hmkeras.HMLSTMCell([4, 3, 3])
    wrapper = AveragingWrapper(AttentionWrapper(cell, 3, return_cell_output=True),
                               return_cell_output=return_cell_output)
    model = keras.Sequential([
        keras.Input((T,), dtype="int32"), keras.layers.Embedding(6, 3),
        keras.layers.RNN(wrapper, return_sequences=True), keras.layers.Dense(6)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model, cell


def test_callbacks_find_the_hierarchical_cell_inside_wrappers():
    model, cell = _hm_model(return_cell_output=True)
    x = np.random.default_rng(5).integers(0, 6, (8, T))
    assert hmkeras.cells.hierarchical_cell.find_hierarchical_cells(model) == [cell]
    annealing = SlopeAnnealing(schedule=lambda epoch: 2.0 + epoch)
    monitor = BoundaryMonitor(probe=x[:4], interval=1, verbose=0)
    # The callbacks' hooks, as `fit` calls them (no training needed).
    logs = {}
    for callback in (annealing, monitor):
        callback.set_model(model)
        callback.on_train_begin()
    annealing.on_epoch_begin(1)
    monitor.on_train_batch_end(0, logs)
    assert float(cell.slope.numpy()) == 3.0
    # The monitor's rates are those of the cell's own boundaries.
    rnn = model.layers[1]
    probe = keras.Model(model.inputs[0], rnn.output)(x[:4])
    inner = rnn.cell.cell_outputs(probe)
    _, boundaries = cell.split_outputs(rnn.cell.cell.cell_outputs(inner))
    rates = to_numpy(boundaries).reshape(-1, 2).mean(axis=0)
    assert 0.0 < rates.max() and rates.min() < 1.0
    assert logs["z_rate_1"] == pytest.approx(rates[0])
    assert logs["z_rate_2"] == pytest.approx(rates[1])


def test_boundary_monitor_needs_the_cell_output():
    model, _ = _hm_model(return_cell_output=False)
    x = np.random.default_rng(6).integers(0, 6, (4, T))
    monitor = BoundaryMonitor(probe=x, interval=1, verbose=0)
    monitor.set_model(model)
    monitor.on_train_begin()
    with pytest.raises(ValueError, match="return_cell_output=True"):
        monitor.on_train_batch_end(0, {})
