"""SlopeAnnealing: schedules, discovery of cells, compiled functions, saving."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import pytest

import hmkeras
from hmkeras.training.slope_annealing import chung_ptb_schedule

pytestmark = pytest.mark.every_backend


def soft_model(cell_cls=hmkeras.HMLSTMCell):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((6, 3))
    cell = cell_cls([4, 4], boundary_mode="soft")
    # Count the Python executions of `call` (i.e. traces in graph mode).
    cell.traces = 0
    call = cell.call

    def counting_call(*args, **kwargs):
        cell.traces += 1
        return call(*args, **kwargs)

    cell.call = counting_call
    rnn = keras.layers.RNN(cell, return_sequences=True)
    outputs = keras.layers.Dense(1)(rnn(inputs))
    return keras.Model(inputs, outputs)


def test_chung_schedule():
    assert chung_ptb_schedule(0) == 1.0
    assert chung_ptb_schedule(25) == pytest.approx(2.0)
    assert chung_ptb_schedule(1000) == 5.0


@pytest.mark.slow
@pytest.mark.parametrize("cell_cls", [hmkeras.HMLSTMCell, hmkeras.HMRNNCell])
def test_jit_compiled_fit_sees_new_slope_without_retracing(cell_cls, tmp_path):
    model = soft_model(cell_cls)
    model.compile(keras.optimizers.SGD(0.0), "mse", jit_compile=True)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 6, 3)).astype("float32")
    y = rng.normal(size=(4, 6, 1)).astype("float32")
    schedule = lambda epoch: [1.0, 3.0, 0.5][epoch]
    cell = model.layers[1].cell
    traces = []
    record = keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: traces.append(cell.traces))
    history = model.fit(
        x, y, epochs=3, batch_size=4, verbose=0,
        callbacks=[hmkeras.SlopeAnnealing(schedule), record],
    )
    # Traced in the first epoch only: later slopes reach the compiled step.
    assert traces[0] > 0 and traces == [traces[0]] * 3
    # With a zero learning rate the loss of each epoch is a function of the
    # slope alone: recompute it eagerly for each slope.
    expected = []
    for slope in (1.0, 3.0, 0.5):
        cell.slope.assign(slope)
        expected.append(float(np.mean((keras.ops.convert_to_numpy(model(x)) - y) ** 2)))
    assert len(set(np.round(expected, 6))) == 3  # the slope matters here
    np.testing.assert_allclose(history.history["loss"], expected, rtol=1e-5)
    np.testing.assert_allclose(history.history["slope"], [1.0, 3.0, 0.5])
    # The annealed value is a weight: it survives .keras save/load.
    cell.slope.assign(0.5)
    path = str(tmp_path / "annealed.keras")
    model.save(path)
    assert float(keras.ops.convert_to_numpy(keras.models.load_model(path).layers[1].cell.slope)) == 0.5


@pytest.mark.slow
def test_per_step_schedule_uses_global_step():
    model = soft_model()
    model.compile("sgd", "mse")
    seen = []

    def schedule(step):
        seen.append(step)
        return 1.0 + step

    x = np.zeros((8, 6, 3), "float32")
    y = np.zeros((8, 6, 1), "float32")
    model.fit(x, y, epochs=2, batch_size=4, verbose=0, callbacks=[hmkeras.SlopeAnnealing(schedule, unit="step")])
    assert seen == [0, 1, 2, 3]
    assert float(keras.ops.convert_to_numpy(model.layers[1].cell.slope)) == 4.0


def test_finds_cells_in_nested_structures():
    cells = [hmkeras.HMLSTMCell([3, 3]), hmkeras.HMRNNCell([3, 3]), hmkeras.HMLSTMCell([2, 2])]
    inputs = keras.Input((5, 2))
    a = keras.layers.RNN(keras.layers.StackedRNNCells([cells[0], keras.layers.LSTMCell(3)]))(inputs)
    b = keras.layers.Bidirectional(keras.layers.RNN(cells[1]))(inputs)
    inner = keras.Sequential([keras.Input((5, 2)), keras.layers.RNN(cells[2])])
    c = inner(inputs)
    model = keras.Model(inputs, keras.layers.Concatenate()([a, b, c]))
    callback = hmkeras.SlopeAnnealing(lambda epoch: 2.0)
    callback.set_model(model)
    found = callback.cells
    # Bidirectional copies its layer: one original cell becomes two.
    assert cells[0] in found and cells[2] in found
    assert sum(isinstance(c, hmkeras.HMRNNCell) for c in found) == 2
    callback._set_slope(0)
    assert all(float(keras.ops.convert_to_numpy(c.slope)) == 2.0 for c in found)


def test_bad_arguments():
    with pytest.raises(ValueError, match="schedule"):
        hmkeras.SlopeAnnealing(schedule=3.0)
    with pytest.raises(ValueError, match="unit"):
        hmkeras.SlopeAnnealing(unit="batch")
    model = soft_model()
    callback = hmkeras.SlopeAnnealing(lambda epoch: -1.0)
    callback.set_model(model)
    with pytest.raises(ValueError, match="schedule"):
        callback._set_slope(0)
    plain = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    plain.compile("sgd", "mse")
    with pytest.raises(ValueError, match="no HMLSTMCell"):
        plain.fit(np.zeros((2, 3)), np.zeros((2, 1)), verbose=0, callbacks=[hmkeras.SlopeAnnealing()])
