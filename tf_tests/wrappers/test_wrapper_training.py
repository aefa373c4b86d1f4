"""Training through the wrappers: XLA with dropout in the wrapped cell; mixed precision."""

import pytest
import keras
import numpy as np
import tensorflow as tf

import hmkeras
from hmkeras.wrappers import AttentionWrapper
from hmkeras.wrappers import AveragingWrapper

T, F = 12, 3


@pytest.mark.slow
def test_jit_compiled_fit_with_dropout_in_the_wrapped_cell():
    keras.utils.set_random_seed(4)
    # Keras' LSTMCell caches its dropout masks per sequence: hmkeras.RNN
    # opens the wrapper's sequence, which the wrapper forwards, or the
    # traced step would reuse a mask from another graph.
    cell = keras.layers.LSTMCell(4, dropout=0.3, recurrent_dropout=0.3)
    # Both wrappers in one compiled step (one XLA compilation): the hooks
    # go through the outer wrapper to the inner one and to the cell.
    wrapper = AveragingWrapper(AttentionWrapper(cell, 4, "combined"))
    model = keras.Sequential([
        keras.Input((T, F)), hmkeras.RNN(wrapper, return_sequences=True),
        keras.layers.Dense(2)])
    model.compile(keras.optimizers.Adam(0.01), "mse", jit_compile=True)
    rng = np.random.default_rng(4)
    x = rng.normal(size=(8, T, F)).astype("float32")
    y = rng.normal(size=(8, T, 2)).astype("float32")
    before = [w.numpy().copy() for w in wrapper.trainable_weights]
    history = model.fit(x, y, batch_size=4, epochs=1, verbose=0)
    assert all(np.isfinite(history.history["loss"]))
    after = [w.numpy() for w in wrapper.trainable_weights]
    assert all(not np.array_equal(a, b) for a, b in zip(before, after))
    # Dropout acts in training only: inference is deterministic.
    np.testing.assert_array_equal(model(x[:2]), model(x[:2]))
    assert not np.array_equal(model(x[:2], training=True), model(x[:2], training=True))
    # Under Keras' own RNN the masks cannot be per sequence: refused.
    with pytest.raises(ValueError, match="no sequence is open"):
        keras.layers.RNN(wrapper)(x[:2], training=True)


def _attention_then_average(dtype=None):
    """The model of the mixed precision test; `dtype` None: the policy's."""
    rnn = keras.layers.RNN(
        AttentionWrapper(hmkeras.HMRNNCell([4, 3], dtype=dtype), 3, "combined",
                         return_attention=True, dtype=dtype),
        return_sequences=True, dtype=dtype)
    averaging = keras.layers.RNN(
        AveragingWrapper(keras.layers.LSTMCell(4, dtype=dtype), dtype=dtype),
        return_sequences=True, dtype=dtype)
    return rnn, averaging


def _loss_and_gradients(rnn, averaging, x):
    with tf.GradientTape() as tape:
        y = rnn(x, training=True)
        loss = tf.reduce_sum(tf.cast(averaging(y, training=True), "float32") ** 2)
    variables = rnn.trainable_variables + averaging.trainable_variables
    return y, [np.asarray(g, "float64") for g in tape.gradient(loss, variables)]


def test_mixed_precision_forward_and_gradients():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        keras.utils.set_random_seed(7)
        rnn, averaging = _attention_then_average()
        x = tf.constant(np.random.default_rng(7).normal(size=(4, 6, F)), "float32")
        y, grads = _loss_and_gradients(rnn, averaging, x)
        assert y.dtype == tf.float16
        assert all(np.all(np.isfinite(g)) for g in grads)
        weights = np.asarray(rnn.cell.split_outputs(y).attention, "float32")
        np.testing.assert_allclose(weights[:, 1:].sum(-1), 1.0, atol=1e-2)
        assert np.all(weights[:, 0] == 0.0)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    # The same weights in float64 (whose gradients the float64 finite
    # difference tests of the cells and wrappers vouch for): the float16
    # gradients are those, to float16 accuracy, not merely finite.
    rnn64, averaging64 = _attention_then_average("float64")
    rnn64.build(x.shape)
    averaging64.build(y.shape)
    for new, old in zip(rnn64.weights + averaging64.weights, rnn.weights + averaging.weights):
        new.assign(np.asarray(old, "float64"))
    y64, grads64 = _loss_and_gradients(rnn64, averaging64, tf.cast(x, "float64"))
    np.testing.assert_allclose(np.asarray(y, "float64"), y64, rtol=0.02, atol=0.02)
    for g, g64 in zip(grads, grads64):
        np.testing.assert_allclose(g, g64, rtol=0.05, atol=0.01 * np.abs(g64).max())
