"""The hierarchical cells as Keras citizens: saving, export, XLA, state."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import pytest
import tensorflow as tf

import hmkeras
from one_trace import compile_built

CELLS = {
    "hmlstm": lambda **kw: hmkeras.HMLSTMCell([6, 5, 4], **kw),
    "hmrnn": lambda **kw: hmkeras.HMRNNCell([6, 5, 4], **kw),
}


def sequence_model(cell, steps=7, features=3, **rnn_kwargs):
    inputs = keras.Input((steps, features))
    outputs = keras.layers.RNN(cell, return_sequences=True, **rnn_kwargs)(inputs)
    outputs = keras.layers.Dense(2)(outputs)
    return keras.Model(inputs, outputs)


def data(batch=4, steps=7, features=3, seed=0):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=(batch, steps, features)).astype("float32"),
        rng.normal(size=(batch, steps, 2)).astype("float32"),
    )


@pytest.mark.parametrize("name", CELLS)
def test_keras_file_round_trip(name, tmp_path):
    keras.utils.set_random_seed(0)
    model = sequence_model(CELLS[name](layer_norm=True, slope=1.5))
    x, _ = data()
    expected = model.predict(x, verbose=0)
    cell = model.layers[1].cell
    cell.slope.assign(2.75)
    expected = model.predict(x, verbose=0)
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    loaded_cell = loaded.layers[1].cell
    assert type(loaded_cell) is type(cell)
    assert loaded_cell.get_config() == cell.get_config()
    assert float(loaded_cell.slope.numpy()) == 2.75
    np.testing.assert_allclose(loaded.predict(x, verbose=0), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("name", CELLS)
def test_saved_model_export_round_trip(name, tmp_path):
    keras.utils.set_random_seed(1)
    model = sequence_model(CELLS[name]())
    x, _ = data()
    expected = model.predict(x, verbose=0)
    path = str(tmp_path / "exported")
    model.export(path, verbose=False)
    reloaded = tf.saved_model.load(path)
    np.testing.assert_allclose(reloaded.serve(tf.constant(x)).numpy(), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.slow
# Each cell in one boundary mode, each mode in one cell (CI's 30 minutes;
# every layer's one XLA train step: `test_layer_battery.py`).
@pytest.mark.parametrize("name, mode", [("hmlstm", "sample"), ("hmrnn", "step")])
def test_jit_compiled_fit_trains(name, mode):
    keras.utils.set_random_seed(2)
    model = sequence_model(CELLS[name](boundary_mode=mode))
    compile_built(model, keras.optimizers.Adam(0.01), "mse", jit_compile=True)
    x, y = data(batch=8)
    before = [w.numpy().copy() for w in model.trainable_weights]
    history = model.fit(x, y, epochs=3, batch_size=4, verbose=0)
    losses = history.history["loss"]
    assert np.all(np.isfinite(losses))
    assert losses[-1] < losses[0]
    changed = [not np.array_equal(b, w.numpy()) for b, w in zip(before, model.trainable_weights)]
    assert all(changed[:3])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["hmlstm"])  # the HMRNN shares its hierarchy
def test_mixed_bfloat16_runs(name):
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        model = sequence_model(CELLS[name](layer_norm=True))
        model.compile("adam", "mse")
        x, y = data()
        history = model.fit(x, y, epochs=1, verbose=0)
        assert np.isfinite(history.history["loss"][0])
        assert model.layers[1].cell.compute_dtype == "bfloat16"
        assert model.layers[1].cell.slope.dtype == "float32"
    finally:
        keras.mixed_precision.set_global_policy("float32")


@pytest.mark.parametrize("name", CELLS)
def test_stateful_carries_state_and_boundaries(name):
    keras.utils.set_random_seed(3)
    x, _ = data(batch=2, steps=10)
    full = keras.layers.RNN(CELLS[name](), return_sequences=True)
    expected = full(x).numpy()
    stateful = keras.layers.RNN(CELLS[name](), return_sequences=True, stateful=True)
    stateful.build((2, 5, 3))
    stateful.set_weights(full.get_weights())
    first = stateful(x[:, :5]).numpy()
    second = stateful(x[:, 5:]).numpy()
    np.testing.assert_allclose(np.concatenate([first, second], 1), expected, rtol=1e-5, atol=1e-6)
    # The boundaries of the last step are part of the carried state.
    z_state = stateful.states[-1].numpy()
    np.testing.assert_array_equal(z_state, expected[:, -1, -2:])
    stateful.reset_state()
    np.testing.assert_allclose(stateful(x[:, :5]).numpy(), first, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", CELLS)
def test_initial_state_and_return_state(name):
    keras.utils.set_random_seed(4)
    x, _ = data(batch=2, steps=8)
    rnn = keras.layers.RNN(CELLS[name](), return_sequences=True, return_state=True)
    full, *_ = rnn(x)
    first, *states = rnn(x[:, :4])
    assert len(states) == len(rnn.cell.state_size)
    second, *_ = rnn(x[:, 4:], initial_state=states)
    np.testing.assert_allclose(np.concatenate([first, second], 1), full, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", CELLS)
def test_masked_steps_keep_the_state(name):
    keras.utils.set_random_seed(5)
    x, _ = data(batch=2, steps=6)
    mask = np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]], bool)
    rnn = keras.layers.RNN(CELLS[name](), return_sequences=True, return_state=True)
    outputs, *states = rnn(x, mask=mask)
    short, *short_states = rnn(x[1:, :3])
    for state, expected in zip(states, short_states):
        np.testing.assert_allclose(state.numpy()[1], expected.numpy()[0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(outputs.numpy()[1, :3], short.numpy()[0], rtol=1e-6, atol=1e-6)


def test_units_int_works_as_written():
    rnn = keras.layers.RNN(hmkeras.HMLSTMCell(16))
    y = rnn(np.zeros((2, 3, 5), "float32"))
    assert tuple(y.shape) == (2, 16 * 3 + 2)
