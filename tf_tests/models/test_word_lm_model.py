"""Tests of hmkeras.models.word_language_model (tiny models)."""

import math

import keras
import numpy as np
import pytest

from hmkeras import data
from hmkeras.models.tied_embedding import TiedEmbedding
from hmkeras.models.word_language_model import WordLanguageModel
from hmkeras.models.word_language_model import WordLanguageModelConfig
from hmkeras.models.word_language_model import sentence_perplexity

VOCAB = 13


def _tokens(batch=3, time=6, seed=0):
    return np.random.default_rng(seed).integers(0, VOCAB, size=(batch, time)).astype("int32")


def _log_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


@pytest.mark.parametrize("embedding_dim", [0, 6])
def test_tied_embedding_is_one_variable_used_in_and_out(embedding_dim):
    lm = WordLanguageModel(vocab_size=VOCAB, units=8, embedding_dim=embedding_dim,
                           dropout=0.0, seed=2)
    dim = embedding_dim or 8
    matrices = [w for w in lm.network.trainable_weights
                if tuple(w.shape) in ((VOCAB, dim), (dim, VOCAB))]
    assert len(matrices) == 1 and matrices[0] is lm.embedding.embeddings
    has_projection = any(layer.name == "projection" for layer in lm.network.layers)
    assert has_projection == (embedding_dim not in (0, 8))
    x = _tokens()
    E = np.asarray(lm.embedding.embeddings)
    b = np.asarray(lm.embedding.bias)
    h = np.asarray(lm.features(x))
    assert h.shape[-1] == dim
    # Softmax weight = E^T (Salton & Kelleher Eq. 12, tied).
    np.testing.assert_allclose(np.asarray(lm.network(x)), h @ E.T + b, atol=1e-5)
    # Changing E changes the input lookup and the softmax alike.
    lm.embedding.embeddings.assign(E * 2.0)
    np.testing.assert_allclose(np.asarray(lm.embedding(x)), 2.0 * E[x], atol=1e-6)
    h2 = np.asarray(lm.features(x))
    np.testing.assert_allclose(np.asarray(lm.network(x)), h2 @ (2.0 * E).T + b, atol=1e-5)


def test_tied_embedding_gradient_collects_both_uses():
    tied = TiedEmbedding(5, 3)
    ids = keras.Input((None,), dtype="int32")
    model = keras.Model(ids, tied(tied(ids), reverse=True))
    assert len(model.trainable_weights) == 2
    import tensorflow as tf

    x = np.array([[1, 2]], "int32")
    with tf.GradientTape() as tape:
        out = tf.reduce_sum(model(x) * tf.constant(np.arange(5.0), tf.float32))
    grad = np.asarray(tape.gradient(out, tied.embeddings))
    E = np.asarray(tied.embeddings)
    # d/dE of sum_{t,v} c_v (E[x_t] . E[v]): output use + input use.
    c = np.arange(5.0)
    expected = np.zeros_like(E)
    for t in x[0]:
        expected += np.outer(c, E[t])          # through the softmax matrix
        expected[t] += c @ E                    # through the lookup
    np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("wrapper", ["none", "average", "attention"])
def test_perplexity_is_exp_of_mean_nll_over_real_tokens(wrapper):
    lm = WordLanguageModel(vocab_size=VOCAB, units=8, wrapper=wrapper, memory_size=4,
                           dropout=0.3, seed=1)
    rng = np.random.default_rng(4)
    sentences = [rng.integers(2, VOCAB, size=n) for n in (3, 0, 9, 1, 5, 12)]
    batches = data.SentenceBatches(sentences, seq_len=7, batch_size=2, overflow="split")
    result = sentence_perplexity(lm, batches)
    x, y, w = batches.arrays()
    logp = _log_softmax(np.asarray(lm.network(x, training=False), dtype=np.float64))
    nll = -np.take_along_axis(logp, y[..., None], axis=-1)[..., 0]
    expected = math.exp((nll * w).sum() / w.sum())
    assert w.sum() == result["num_targets"] == sum(len(s) + 1 for s in sentences if len(s))
    assert result["perplexity"] == pytest.approx(expected, rel=1e-5)
    # Padding never counts: changing padded targets changes nothing.
    y_changed = np.where(w == 0, 5, y)
    nll2 = -np.take_along_axis(logp, y_changed[..., None], axis=-1)[..., 0]
    assert math.exp((nll2 * w).sum() / w.sum()) == pytest.approx(expected)


def test_dropout_only_in_training():
    lm = WordLanguageModel(vocab_size=VOCAB, units=8, dropout=0.5, seed=3)
    x = _tokens()
    a, b = lm.network(x, training=False), lm.network(x, training=False)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not np.allclose(np.asarray(lm.network(x, training=True)), np.asarray(a))


@pytest.mark.parametrize("cell", ["lstm", "hmlstm", "mlstm"])
def test_cells_and_wrappers_build(cell):
    for wrapper in ("none", "average"):
        lm = WordLanguageModel(vocab_size=VOCAB, units=6, cell=cell, wrapper=wrapper,
                               dropout=0.0, seed=0)
        assert lm.network(_tokens(2, 4)).shape == (2, 4, VOCAB)
        assert (lm.wrapper is None) == (wrapper == "none")


def test_attention_weights_are_a_distribution_over_the_past():
    lm = WordLanguageModel(vocab_size=VOCAB, units=6, wrapper="attention",
                           memory_size=3, dropout=0.0, seed=0)
    weights = np.asarray(lm.attention_network(_tokens(2, 6)))
    assert weights.shape == (2, 6, 3)
    np.testing.assert_allclose(weights[:, 1:].sum(-1), 1.0, atol=1e-5)
    # Step t (0-based) has t past states: slots older than that stay empty.
    for t in range(3):
        assert np.all(weights[:, t, : 3 - t] == 0.0)


def test_config_errors_name_the_field():
    for kwargs, name in (({"cell": "gru"}, "cell"), ({"wrapper": "cache"}, "wrapper"),
                         ({"dropout": 1.0}, "dropout"), ({"memory_size": 0}, "memory_size"),
                         ({"attention_score": "dot"}, "attention_score"),
                         ({"cell": "hmlstm", "num_layers": 1}, "num_layers")):
        with pytest.raises(ValueError, match=name):
            WordLanguageModelConfig(vocab_size=VOCAB, **kwargs)
    config = WordLanguageModelConfig(vocab_size=VOCAB, wrapper="average")
    assert WordLanguageModelConfig.from_json(config.to_json()) == config
    with pytest.raises(ValueError, match="either"):
        WordLanguageModel(config, units=4)
