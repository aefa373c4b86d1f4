"""The wrappers inside Keras: streaming with carried state, masking, .keras save/load, export."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import hmkeras
from hmkeras.wrappers import AttentionWrapper
from hmkeras.wrappers import AveragingWrapper

B, T, F = 2, 12, 3


def _wrappers(dtype="float64"):
    """One wrapper of each kind around a plain and a hierarchical cell."""
    return {
        "average_lstm": lambda: AveragingWrapper(
            keras.layers.LSTMCell(4, dtype=dtype), dtype=dtype),
        "average_hmlstm": lambda: AveragingWrapper(
            hmkeras.HMLSTMCell([4, 3], dtype=dtype), hierarchy_layers="top",
            return_cell_output=True, dtype=dtype),
        "attention_lstm": lambda: AttentionWrapper(
            keras.layers.LSTMCell(4, dtype=dtype), 3, "combined",
            return_attention=True, dtype=dtype),
        "attention_hmrnn": lambda: AttentionWrapper(
            hmkeras.HMRNNCell([4, 3], dtype=dtype), 5, "single", dtype=dtype),
    }


KINDS = sorted(_wrappers())


@pytest.mark.parametrize("kind", KINDS)
def test_streaming_chunks_equal_one_long_call(kind):
    keras.utils.set_random_seed(0)
    x = np.random.default_rng(0).normal(size=(B, T, F))
    wrapper = _wrappers()[kind]()
    whole = keras.layers.RNN(wrapper, return_sequences=True, dtype="float64")
    expected = np.asarray(whole(x))
    # The same cell in a stateful RNN, fed in chunks of 5, 4 and 3 steps.
    stateful = keras.layers.RNN(wrapper, return_sequences=True, stateful=True,
                                dtype="float64")
    chunks = [np.asarray(stateful(x[:, a:b])) for a, b in ((0, 5), (5, 9), (9, T))]
    np.testing.assert_allclose(np.concatenate(chunks, axis=1), expected, atol=1e-12)
    # And with the state passed explicitly.
    explicit = keras.layers.RNN(wrapper, return_sequences=True, return_state=True,
                                dtype="float64")
    first, *state = explicit(x[:, :7])
    second, *_ = explicit(x[:, 7:], initial_state=state)
    np.testing.assert_allclose(
        np.concatenate([first, second], axis=1), expected, atol=1e-12)
    # reset_state() empties the memory: the stream starts afresh.
    stateful.reset_state()
    np.testing.assert_allclose(np.asarray(stateful(x[:, :5])), expected[:, :5], atol=1e-12)


@pytest.mark.parametrize("kind", ["average_lstm", "attention_lstm"])
def test_masked_steps_carry_the_whole_state(kind):
    keras.utils.set_random_seed(1)
    x = np.random.default_rng(1).normal(size=(1, T, F))
    masked = x.copy()
    masked[0, 3] = masked[0, 7] = 0.0  # two masked steps in the middle
    keep = [t for t in range(T) if t not in (3, 7)]
    wrapper = _wrappers()[kind]()
    inputs = keras.Input((T, F), dtype="float64")
    hidden = keras.layers.Masking(0.0, dtype="float64")(inputs)
    outputs = keras.layers.RNN(wrapper, return_sequences=True, dtype="float64")(hidden)
    model = keras.Model(inputs, outputs)
    with_mask = np.asarray(model(masked))
    without = np.asarray(
        keras.layers.RNN(wrapper, return_sequences=True, dtype="float64")(x[:, keep]))
    # The masked steps are skipped: memory, count and pointer unchanged.
    np.testing.assert_allclose(with_mask[:, keep], without, atol=1e-12)


def _model(kind, dtype="float32"):
    keras.utils.set_random_seed(2)
    inputs = keras.Input((T, F))
    y = keras.layers.RNN(_wrappers(dtype)[kind](), return_sequences=True)(inputs)
    return keras.Model(inputs, keras.layers.Dense(2)(y))


@pytest.mark.parametrize("kind", KINDS)
def test_keras_save_and_load_round_trip(kind, tmp_path):
    model = _model(kind)
    x = np.random.default_rng(2).normal(size=(B, T, F)).astype("float32")
    path = os.path.join(tmp_path, "model.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(np.asarray(loaded(x)), np.asarray(model(x)), atol=1e-6)
    wrapper = loaded.layers[1].cell
    original = model.layers[1].cell
    assert type(wrapper) is type(original)
    assert type(wrapper.cell) is type(original.cell)
    # Equal configurations (build shapes come back as lists, not tuples).
    as_json = lambda layer: json.dumps(layer.get_config(), sort_keys=True)  # noqa: E731
    assert as_json(wrapper) == as_json(original)


@pytest.mark.parametrize("kind", ["average_hmlstm", "attention_lstm"])
def test_export_round_trip(kind, tmp_path):
    model = _model(kind)
    x = np.random.default_rng(3).normal(size=(B, T, F)).astype("float32")
    path = os.path.join(tmp_path, "exported")
    model.export(path, verbose=False)
    reloaded = tf.saved_model.load(path)  # kept alive while serving
    served = reloaded.serve(tf.constant(x))
    np.testing.assert_allclose(np.asarray(served), np.asarray(model(x)), atol=1e-5)
