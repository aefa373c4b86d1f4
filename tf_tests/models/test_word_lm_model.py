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
from one_trace import compile_built

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


@pytest.mark.parametrize("wrapper", [
    "none", "average", pytest.param("attention", marks=pytest.mark.every_backend)])
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


def _padded_sentences():
    """Sentence rows as `SentenceBatches` makes them: `<eos>` first, then
    words, then padding (id 0, weight 0)."""
    x = np.array([[1, 5, 6, 7, 8, 9, 4, 3], [1, 4, 0, 0, 0, 0, 0, 0],
                  [1, 7, 3, 0, 0, 0, 0, 0]], "int32")
    y = np.where(x > 0, np.roll(x, -1, axis=1), 0).astype("int32")
    y[:, -1] = np.where(x[:, -1] > 0, 1, 0)
    return x, y, (x > 0).astype("float32")


def _training_loss(lm, x, y, w):
    """The loss of Keras' `fit` on one batch (ptb_word.py's compile), no update."""
    compile_built(lm.network, keras.optimizers.SGD(0.0),
                  loss=keras.losses.SparseCategoricalCrossentropy(
                      from_logits=True, reduction="mean_with_sample_weight"))
    return lm.network.train_on_batch(x, y, sample_weight=w, return_dict=True)["loss"]


@pytest.mark.parametrize("wrapper,sequence_layer,form", [
    ("none", True, "rate"), ("none", False, "binomial"), ("average", True, "rate"),
    ("attention", False, "rate")])
def test_hmlstm_training_loss_adds_the_masked_prior(wrapper, sequence_layer, form):
    x, y, w = _padded_sentences()
    kwargs = dict(vocab_size=VOCAB, cell="hmlstm", units=6, wrapper=wrapper, memory_size=4,
                  dropout=0.0, seed=3, sequence_layer=sequence_layer)
    papers = WordLanguageModel(boundary_prior=None, **kwargs)
    lm = WordLanguageModel(boundary_prior=form, segment_lengths=[3.0], **kwargs)
    assert papers.boundary_prior is None and lm.boundary_prior.form == form
    # The prior adds no weight and changes no output: the same model.
    assert [v.shape for v in lm.network.weights] == [v.shape for v in papers.network.weights]
    lm.network.set_weights(papers.network.get_weights())
    np.testing.assert_array_equal(np.asarray(lm.network(x)), np.asarray(papers.network(x)))
    # Without the prior the training loss is the weighted cross entropy alone.
    logits = np.asarray(papers.network(x, training=True), np.float64)
    nll = -np.take_along_axis(_log_softmax(logits), y[..., None], axis=-1)[..., 0]
    assert _training_loss(papers, x, y, w) == pytest.approx((nll * w).sum() / w.sum(),
                                                            rel=1e-5)
    # With it, the loss grows by the prior on the real tokens' boundaries.
    z = np.asarray(lm.boundary_network(x), np.float64)[..., 0] * w
    counts, steps = z.sum(axis=1), w.sum(axis=1)
    if form == "rate":  # Eq. (1), weight 5
        prior = 5.0 * (counts.sum() / steps.sum() - 1 / 3) ** 2
        unmasked = 5.0 * (np.asarray(lm.boundary_network(x)).mean() - 1 / 3) ** 2
        assert abs(prior - unmasked) > 1e-3  # the padding matters here
    else:  # Eq. (2), weight 1
        prior = -sum(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                     + k * math.log(1 / 3) + (n - k) * math.log(2 / 3)
                     for k, n in zip(counts, steps)) / steps.sum()
    assert prior > 1e-3
    difference = _training_loss(lm, x, y, w) - _training_loss(papers, x, y, w)
    assert difference == pytest.approx(prior, rel=1e-4, abs=1e-6)
    # Only while training: inference and evaluation leave it out.
    lm.network(x)
    assert sentence_perplexity(lm, _Batches(x, y, w))["nll_per_token"] == pytest.approx(
        sentence_perplexity(papers, _Batches(x, y, w))["nll_per_token"], rel=1e-6)


class _Batches:
    """One batch, as `sentence_perplexity` reads a `SentenceBatches`."""

    def __init__(self, x, y, w):
        self.batch, self.num_targets = (x, y, w), float(w.sum())

    def dataset(self):
        return [self.batch]


@pytest.mark.every_backend
def test_boundary_rates_count_the_real_tokens():
    from hmkeras.models.word_language_model import sentence_boundary_rates

    x, y, w = _padded_sentences()
    lm = WordLanguageModel(vocab_size=VOCAB, cell="hmlstm", units=6, dropout=0.0, seed=3)
    z = np.asarray(lm.boundary_network(x))[..., 0]
    assert sentence_boundary_rates(lm, _Batches(x, y, w)) == pytest.approx(
        [(z * w).sum() / w.sum()])
    with pytest.raises(ValueError, match="cell='hmlstm'"):
        sentence_boundary_rates(WordLanguageModel(vocab_size=VOCAB, units=4),
                                _Batches(x, y, w))


def test_prior_fields_are_checked_and_saved():
    # The papers' HM-LSTM by default (the prior collapses it under SGD).
    assert WordLanguageModelConfig(vocab_size=VOCAB, cell="hmlstm").boundary_prior is None
    config = WordLanguageModelConfig(vocab_size=VOCAB, cell="hmlstm", boundary_prior="rate",
                                     segment_lengths=[4])
    assert (config.boundary_prior, config.segment_lengths) == ("rate", [4.0])
    assert WordLanguageModelConfig.from_json(config.to_json()) == config
    papers = WordLanguageModelConfig(vocab_size=VOCAB, cell="hmlstm", boundary_prior=None)
    assert WordLanguageModelConfig.from_json(papers.to_json()) == papers
    assert WordLanguageModel(vocab_size=VOCAB, units=4).boundary_prior is None
    assert WordLanguageModel(papers, ).boundary_prior is None
    for kwargs, match in (
            (dict(cell="hmlstm", boundary_prior="poisson"), "boundary_prior"),
            (dict(cell="hmlstm", boundary_prior="rate", segment_lengths=[5, 15]),
             "segment_lengths"),
            (dict(cell="hmlstm", boundary_prior="rate", segment_lengths=[0.5]),
             "segment_lengths"),
            (dict(cell="hmlstm", segment_lengths=[5]), "segment_lengths.*boundary_prior=None"),
            (dict(cell="hmlstm", boundary_prior=None, segment_lengths=[5]),
             "segment_lengths.*boundary_prior=None"),
            (dict(cell="lstm", segment_lengths=[5]), "segment_lengths.*cell='lstm'"),
            (dict(cell="mlstm", boundary_prior="poisson"), "boundary_prior")):
        with pytest.raises(ValueError, match=match):
            WordLanguageModelConfig(vocab_size=VOCAB, **kwargs)


def test_hmlstm_network_with_the_prior_saves_and_loads(tmp_path):
    x, _, _ = _padded_sentences()
    lm = WordLanguageModel(vocab_size=VOCAB, cell="hmlstm", units=6, wrapper="average",
                           dropout=0.0, seed=3, boundary_prior="rate",
                           segment_lengths=[3.0])
    path = str(tmp_path / "word_lm.keras")
    lm.network.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(np.asarray(loaded(x)), np.asarray(lm.network(x)), atol=1e-6)
    lm.network(x, training=True)
    loaded(x, training=True)
    assert len(loaded.losses) == len(lm.network.losses) == 1
    assert float(loaded.losses[0]) == pytest.approx(float(lm.network.losses[0]))
