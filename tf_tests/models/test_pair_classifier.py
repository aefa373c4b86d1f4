"""Tests of hmkeras.models.PairClassifier (logical inference)."""

import keras
import numpy as np
import pytest

from hmkeras.cells.recurrent_recursive_cell import RECUR
from hmkeras.data import logic
from hmkeras.models.pair_classifier import ENCODERS
from hmkeras.models.pair_classifier import PairClassifier

pytestmark = pytest.mark.every_backend


def _side(sentences, width):
    tokens = np.zeros((len(sentences), width), np.int32)
    operations = np.full((len(sentences), width), RECUR, np.int32)
    for row, sentence in enumerate(sentences):
        ids = logic.encode_sentence(sentence)
        tokens[row, : len(ids)] = ids
        operations[row, : len(ids)] = logic.sentence_operations(sentence)
    return tokens, operations


def _inputs(pairs, left_width=None, right_width=None):
    left, right = [p.left for p in pairs], [p.right for p in pairs]
    lt, lo = _side(left, left_width or max(len(s.split()) for s in left))
    rt, ro = _side(right, right_width or max(len(s.split()) for s in right))
    return {"left_tokens": lt, "left_operations": lo,
            "right_tokens": rt, "right_operations": ro}


def _pairs(count=3):
    return list(logic.generate_pairs(3, "train", count, seed=2))


def _numpy_head(model, u, v):
    """Reference of the comparison: [u; v; u - v; u * v] -> tanh -> dense."""
    features = np.concatenate([u, v, u - v, u * v], axis=-1)
    w1, b1 = (np.asarray(w) for w in model.comparison.weights)
    w2, b2 = (np.asarray(w) for w in model.readout.weights)
    return np.tanh(features @ w1 + b1) @ w2 + b2


@pytest.mark.parametrize("encoder", ENCODERS)
def test_shared_encoder_and_comparison(encoder):
    pairs = _pairs()
    model = PairClassifier(encoder, units=6, embedding_dim=4, hidden_units=5, seed=0)
    inputs = _inputs(pairs)
    logits = np.asarray(model(inputs))
    assert logits.shape == (3, len(logic.RELATIONS))
    # Each sentence encoded alone, at other paddings, with the same weights.
    u = np.asarray(model.encode(*_side([p.left for p in pairs], 40)))
    v = np.asarray(model.encode(*_side([p.right for p in pairs], 31)))
    np.testing.assert_allclose(logits, _numpy_head(model, u, v), rtol=1e-4, atol=1e-5)
    # Extra padding of one side changes nothing.
    padded = np.asarray(model(_inputs(pairs, left_width=45)))
    np.testing.assert_allclose(padded, logits, rtol=1e-4, atol=1e-5)


def test_supervised_encoder_reads_the_ground_truth_tree():
    pairs = _pairs()
    model = PairClassifier("rrnet_supervised", units=6, embedding_dim=4, seed=1)
    tokens, operations = _side([p.left for p in pairs], 30)
    h = np.asarray(model.encode(tokens, operations))
    # The same cell run by hand on [embedding | operation] of each sentence
    # without its padding (no mask) gives the state.
    rnn = keras.layers.RNN(model.cell, return_state=True)
    for row, length in enumerate((tokens > 0).sum(axis=1)):
        embedded = model.embedding(tokens[row:row + 1, :length])
        _, expected, *_ = rnn(model.cell.pack_inputs(embedded, operations[row:row + 1, :length]))
        np.testing.assert_allclose(h[row:row + 1], np.asarray(expected), rtol=1e-5, atol=1e-6)
    # Another tree over the same tokens gives another encoding.
    all_recur = np.full_like(operations, RECUR)
    assert np.abs(np.asarray(model.encode(tokens, all_recur)) - h).max() > 1e-3


@pytest.mark.parametrize("encoder", ["lstm", "rrnet_random"])
def test_lstm_and_random_trees_ignore_the_given_operations(encoder):
    pairs = _pairs()
    model = PairClassifier(encoder, units=6, embedding_dim=4, seed=3)
    inputs = _inputs(pairs)
    changed = dict(inputs, left_operations=np.zeros_like(inputs["left_operations"]))
    np.testing.assert_allclose(np.asarray(model(changed)), np.asarray(model(inputs)),
                               rtol=1e-6)
    if encoder == "rrnet_random":
        # The random tree: one fixed operation per token id, from the seed.
        table = np.asarray(model.random_operations)
        tokens = inputs["left_tokens"]
        h = model.encode(tokens, None)
        supervised = PairClassifier("rrnet_supervised", units=6, embedding_dim=4, seed=3)
        supervised.set_weights(model.get_weights())
        np.testing.assert_allclose(np.asarray(supervised.encode(tokens, table[tokens])),
                                   np.asarray(h), rtol=1e-5, atol=1e-6)


def test_serialization_round_trip(tmp_path):
    pairs = _pairs()
    model = PairClassifier("rrnet_supervised", units=5, embedding_dim=3, hidden_units=4,
                           max_depth=6, seed=4)
    inputs = _inputs(pairs)
    expected = np.asarray(model(inputs))
    clone = PairClassifier.from_config(model.get_config())
    assert clone.get_config() == model.get_config()
    path = str(tmp_path / "pair.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, PairClassifier) and loaded.encoder_name == "rrnet_supervised"
    np.testing.assert_allclose(np.asarray(loaded(inputs)), expected, rtol=1e-5)


def test_fit_one_step():
    pairs = _pairs(8)
    model = PairClassifier("lstm", units=4, embedding_dim=3, hidden_units=4, seed=0)
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    labels = np.array([logic.RELATIONS.index(p.relation) for p in pairs])
    history = model.fit(_inputs(pairs), labels, batch_size=8, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


@pytest.mark.parametrize("kwargs, words", [
    ({"encoder": "gru"}, ["`encoder`", "lstm", "rrnet_supervised", "'gru'"]),
    ({"units": 0}, ["`units`", "0"]),
    ({"max_depth": -1}, ["`max_depth`"]),
    ({"hidden_units": 1.5}, ["`hidden_units`"]),
])
def test_bad_arguments(kwargs, words):
    with pytest.raises(ValueError) as error:
        PairClassifier(**kwargs)
    for word in words:
        assert word in str(error.value)


def test_missing_input_key():
    inputs = _inputs(_pairs())
    del inputs["right_operations"]
    with pytest.raises(ValueError, match="missing \\['right_operations'\\]"):
        PairClassifier(units=4)(inputs)
