"""The default hierarchical cells train: stable gradients, live boundaries."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import hmkeras
from hmkeras import data
from one_trace import compile_built


@pytest.mark.slow
@pytest.mark.parametrize("cls", [hmkeras.HMLSTMCell, hmkeras.HMRNNCell])
def test_default_gradients_do_not_explode_through_time(cls):
    # Layer normalization makes a product scale-free, so its Jacobian grows
    # as 1 / |h|: with gains initialised to 1 the backward pass of the
    # default HM-LSTM grew ~1.5x per step at initialization (1e11-1e14 over
    # these 100 steps, float32 overflow on real runs).  The default gain
    # keeps the growth of d loss / d x_0 over d loss / d x_99 small.
    ratios = []
    for seed in range(3):
        keras.utils.set_random_seed(seed)
        rnn = keras.layers.RNN(cls(32), return_sequences=True)
        x = tf.constant(np.random.default_rng(seed).uniform(-0.05, 0.05, (4, 100, 8)),
                        tf.float32)
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(rnn(x)[:, -1] ** 2)
        norms = tf.norm(tape.gradient(loss, x), axis=[0, 2]).numpy()
        assert np.all(np.isfinite(norms))
        ratios.append(norms[0] / norms[-1])
    assert max(ratios) < 1e3, ratios


@pytest.mark.slow
def test_default_cell_fit_keeps_boundaries_alive():
    """A plain fit of the default cell on the embedded corpus: the loss
    falls and neither boundary layer ends at rate 0 or 1."""
    keras.utils.set_random_seed(0)
    corpus = data.SyntheticHierarchicalCorpus(seed=0, train_chars=40_000)
    vocab = data.CharVocabulary.from_text(corpus.text("train"))
    ids = np.asarray(vocab.encode(corpus.text("train")), "int32")
    length = 50
    count = (len(ids) - 1) // length
    x = ids[: count * length].reshape(count, length)
    y = ids[1: count * length + 1].reshape(count, length)
    cell = hmkeras.HMLSTMCell(24)
    tokens = keras.Input((length,), dtype="int32")
    outputs = keras.layers.RNN(cell, return_sequences=True)(
        keras.layers.Embedding(len(vocab), 8)(tokens))
    model = keras.Model(tokens, keras.layers.Dense(len(vocab))(outputs))
    compile_built(model, keras.optimizers.Adam(3e-3, clipnorm=1.0),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    monitor = hmkeras.BoundaryMonitor(probe=x[:64], interval=40, verbose=0)
    history = model.fit(x, y, batch_size=16, epochs=2, callbacks=[monitor], verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < 0.75 * np.log(len(vocab))  # well below a uniform guess
    for name in ("z_rate_1", "z_rate_2"):
        assert 0.01 < history.history[name][-1] < 0.99, (name, history.history[name])
