"""Training through the wrappers: XLA with dropout in the wrapped cell; mixed precision."""

import keras
import numpy as np
import tensorflow as tf

import hmkeras
from hmkeras.wrappers import AttentionWrapper
from hmkeras.wrappers import AveragingWrapper

T, F = 12, 3


def test_jit_compiled_fit_with_dropout_in_the_wrapped_cell():
    keras.utils.set_random_seed(4)
    # Keras' LSTMCell caches its dropout masks per sequence: the wrapper must
    # forward keras.layers.RNN's per-sequence hooks, or the traced step
    # reuses a mask from another graph.
    cell = keras.layers.LSTMCell(4, dropout=0.3, recurrent_dropout=0.3)
    # Both wrappers in one compiled step (one XLA compilation): the hooks
    # go through the outer wrapper to the inner one and to the cell.
    wrapper = AveragingWrapper(AttentionWrapper(cell, 4, "combined"))
    model = keras.Sequential([
        keras.Input((T, F)), keras.layers.RNN(wrapper, return_sequences=True),
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


def test_mixed_precision_forward_and_gradients():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        keras.utils.set_random_seed(7)
        rnn = keras.layers.RNN(
            AttentionWrapper(hmkeras.HMRNNCell([4, 3]), 3, "combined",
                             return_attention=True), return_sequences=True)
        averaging = keras.layers.RNN(
            AveragingWrapper(keras.layers.LSTMCell(4)), return_sequences=True)
        x = tf.constant(np.random.default_rng(7).normal(size=(4, 6, F)), "float32")
        with tf.GradientTape() as tape:
            y = rnn(x, training=True)
            loss = tf.reduce_sum(tf.cast(averaging(y, training=True), "float32") ** 2)
        assert y.dtype == tf.float16
        variables = rnn.trainable_variables + averaging.trainable_variables
        grads = tape.gradient(loss, variables)
        assert all(np.all(np.isfinite(g.numpy())) for g in grads)
        weights = np.asarray(rnn.cell.split_outputs(y).attention, "float32")
        np.testing.assert_allclose(weights[:, 1:].sum(-1), 1.0, atol=1e-2)
        assert np.all(weights[:, 0] == 0.0)
    finally:
        keras.mixed_precision.set_global_policy("float32")
