"""The models' `sequence_layer` option: sequence layers by default, the
`hmkeras.RNN(cell)` build on request.

The reference of every comparison is the `RNN(cell)` model (the per-step
cell run by `hmkeras.RNN`, Keras' own RNN layer that opens the cell's
sequence) given the same weights.
"""


import keras
import numpy as np
import pytest

import hmkeras
from hmkeras.analysis.evaluation import evaluate_char_model
from hmkeras.cells.hm_lstm import HMLSTM
from hmkeras.cells.hm_rnn import HMRNN
from hmkeras.cells.multiplicative_lstm import MultiplicativeLSTM
from hmkeras.data.vocabulary import CharVocabulary
from hmkeras.models.char_language_model import CharLanguageModel
from hmkeras.models.char_language_model import CharLanguageModelConfig
from hmkeras.models.handwriting_model import HandwritingModel
from hmkeras.models.handwriting_model import HandwritingModelConfig
from hmkeras.models.word_language_model import WordLanguageModel
from hmkeras.models.word_language_model import WordLanguageModelConfig
from hmkeras.training.stateful_training import TruncatedBPTTModel
from hmkeras.training.step_export import export_step_model

SEQUENCE_LAYERS = {
    "hmlstm": HMLSTM, "hmrnn": HMRNN, "mlstm": MultiplicativeLSTM,
    "lstm": keras.layers.LSTM,
}
SMALL = dict(vocab_size=7, units=6, num_layers=3, embedding_dim=4, output_units=5, seed=3)


def _recurrent(network):
    return [layer for layer in network.layers if isinstance(layer, keras.layers.RNN)]


def _pair(model_class, **fields):
    """A sequence-layer model and an `RNN(cell)` model with its weights."""
    new = model_class(sequence_layer=True, **fields)
    old = model_class(sequence_layer=False, **fields)
    assert [tuple(w.shape) for w in new.network.weights] == [
        tuple(w.shape) for w in old.network.weights]
    old.network.set_weights(new.network.get_weights())
    return new, old


def _random_state(model, batch, rng):
    return [rng.normal(size=(batch, size)).astype("float32") * 0.5
            for size in model.state_sizes]


def _close(a, b, atol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=atol)


@pytest.mark.parametrize("cell", sorted(SEQUENCE_LAYERS))
def test_char_model_builds_sequence_layers_equal_to_rnn_of_cell(cell):
    fields = dict(SMALL, cell=cell, num_layers=1 if cell == "mlstm" else 3)
    new, old = _pair(CharLanguageModel, **fields)
    assert new.config.sequence_layer and not old.config.sequence_layer
    assert all(isinstance(layer, SEQUENCE_LAYERS[cell]) for layer in _recurrent(new.network))
    assert all(type(layer) is hmkeras.RNN for layer in _recurrent(old.network))
    assert len(_recurrent(new.network)) == (3 if cell == "lstm" else 1)
    if cell in ("hmlstm", "hmrnn"):
        assert new.hierarchical_cell is _recurrent(new.network)[0].cell
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 7, size=(2, 9)).astype("int32")
    state = _random_state(new, 2, rng)
    got = new.network([tokens, *state])
    want = old.network([tokens, *state])
    assert len(got) == len(want) == 2 + len(new.state_sizes)
    for a, b in zip(got, want):
        _close(a, b)
    if new.is_hierarchical:  # the boundaries are the reference's exactly
        np.testing.assert_array_equal(new.boundaries(got[1]), old.boundaries(want[1]))
        new.set_slope(2.5)
        assert float(_recurrent(new.network)[0].cell.slope.numpy()) == 2.5


@pytest.mark.slow
def test_char_model_gradients_and_training_step_match():
    new, old = _pair(CharLanguageModel, **dict(SMALL, cell="hmlstm", cell_options=dict(boundary_mode="soft")))
    rng = np.random.default_rng(1)
    tokens = rng.integers(0, 7, size=(2, 8)).astype("int32")
    import tensorflow as tf

    def grads(model):
        with tf.GradientTape() as tape:
            logits = model.network([tokens, *model.zero_state(2)])[0]
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                tokens, logits))
        return [tf.convert_to_tensor(g) for g in
                tape.gradient(loss, model.network.trainable_weights)]

    for a, b in zip(grads(new), grads(old)):
        _close(a, b)
    # One truncated-BPTT step with the state carried: the same loss, state
    # and new weights.
    results = []
    for model in (new, old):
        trainer = TruncatedBPTTModel(model, batch_size=2)
        trainer.compile(keras.optimizers.SGD(0.1), loss=trainer.loss_function())
        history = trainer.fit(tokens, tokens, batch_size=2, epochs=2, verbose=0,
                              shuffle=False)
        results.append((history.history["loss"],
                        [v.numpy() for v in trainer.carried_state],
                        model.network.get_weights()))
    _close(results[0][0], results[1][0])
    for a, b in zip(results[0][1] + results[0][2], results[1][1] + results[1][2]):
        _close(a, b, atol=1e-4)


@pytest.mark.slow
def test_batch1_evaluation_dense_and_sparse_match_the_rnn_model():
    new, old = _pair(CharLanguageModel, **dict(SMALL, cell="hmlstm", cell_options=dict(boundary_bias=-1.0)))
    ids = np.random.default_rng(2).integers(0, 7, size=60)
    dense = evaluate_char_model(new, ids, seq_len=20, keep_boundaries=True, verbose=0)
    sparse = evaluate_char_model(new, ids, seq_len=20, keep_boundaries=True, verbose=0,
                                 sparse_updates=True)
    reference = evaluate_char_model(old, ids, seq_len=20, keep_boundaries=True, verbose=0)
    assert dense.bpc == pytest.approx(reference.bpc, rel=1e-5)
    np.testing.assert_array_equal(dense.boundaries, reference.boundaries)
    assert sparse.bpc == dense.bpc  # the sparse path is bit-identical
    np.testing.assert_array_equal(sparse.boundaries, dense.boundaries)
    assert sparse.update_statistics is not None


@pytest.mark.slow
def test_step_export_of_a_sequence_layer_model_matches_the_network(tmp_path):
    import tensorflow as tf

    lm = CharLanguageModel(**dict(SMALL, cell="hmlstm"))
    vocab = CharVocabulary.from_text("abcdefg")
    export_step_model(lm, vocab, str(tmp_path / "step"))
    loaded = tf.saved_model.load(str(tmp_path / "step"))
    tokens = np.array([1, 4, 2, 6, 0], "int32")
    logits = lm.network([tokens[None], *lm.zero_state(1)])[0][0]
    expected = tf.nn.softmax(logits).numpy()
    state = loaded.signatures["zero_state"](batch_size=tf.constant(1))
    for t, token in enumerate(tokens):
        out = loaded.signatures["step"](token_ids=tf.constant([token]), **state)
        state = {k: v for k, v in out.items() if k.startswith("state_")}
        _close(out["probabilities"][0], expected[t])


@pytest.mark.parametrize("config_class, extra", [
    (CharLanguageModelConfig, {"vocab_size": 7}),
    (HandwritingModelConfig, {"num_components": 2}),
])
def test_weight_normalization_scope_of_configurations(config_class, extra):
    """New configurations follow Krause et al. ("recurrent"); the scope is
    checked and round-trips through JSON."""
    config = config_class(cell="mlstm", units=4,
                          cell_options=dict(weight_normalization=True), **extra)
    assert "weight_normalization_scope" not in config.cell_options  # the cell's default
    lm_class = CharLanguageModel if config_class is CharLanguageModelConfig else HandwritingModel
    cell = lm_class(config).network.get_layer("rnn_1").cell
    assert cell.weight_normalization_scope == "recurrent"
    wide = config_class(cell="mlstm", units=4, cell_options=dict(
        weight_normalization=True, weight_normalization_scope="all"), **extra)
    again = config_class.from_json(wide.to_json())
    assert again.cell_options["weight_normalization_scope"] == "all"
    with pytest.raises(ValueError, match="weight_normalization_scope.*recurrent"):
        config_class(cell="mlstm", units=4,
                      cell_options=dict(weight_normalization_scope="input"), **extra)


def test_char_model_builds_its_mlstm_with_the_configured_scope():
    for scope, gains in (("recurrent", 2), ("all", 3)):
        lm = CharLanguageModel(vocab_size=7, cell="mlstm", units=4, embedding_dim=3,
                               cell_options=dict(weight_normalization=True,
                                                 weight_normalization_scope=scope))
        names = [w.name for w in lm.network.weights if w.name.endswith("_g")]
        assert len(names) == gains, names


@pytest.mark.parametrize("cell", ["hmlstm", "lstm"])
def test_handwriting_model_sequence_layers(cell):
    fields = dict(cell=cell, units=5, num_layers=2, output_units=4, num_components=2,
                  seed=4)
    new, old = _pair(HandwritingModel, **fields)
    assert all(isinstance(layer, SEQUENCE_LAYERS[cell]) for layer in _recurrent(new.network))
    rng = np.random.default_rng(3)
    strokes = rng.normal(size=(2, 7, 3)).astype("float32")
    state = _random_state(new, 2, rng)
    for a, b in zip(new.network([strokes, *state]), old.network([strokes, *state])):
        _close(a, b)
    sequences = [strokes[0], strokes[1, :4]]
    _close(new.sequence_log_likelihoods(sequences), old.sequence_log_likelihoods(sequences),
           atol=1e-4)


@pytest.mark.parametrize("cell,wrapper", [
    ("lstm", "none"), ("mlstm", "none"), ("hmlstm", "none"), ("lstm", "average"),
    ("hmlstm", "attention"),
])
def test_word_model_sequence_layers(cell, wrapper):
    fields = dict(vocab_size=11, cell=cell, units=6, num_layers=2, wrapper=wrapper,
                  memory_size=3, dropout=0.3, seed=5)
    new, old = _pair(WordLanguageModel, **fields)
    layers = _recurrent(new.network)
    unwrapped = layers[:-1] if wrapper != "none" else layers
    assert all(isinstance(layer, SEQUENCE_LAYERS[cell]) for layer in unwrapped)
    if wrapper != "none":  # a wrapper is a cell: the top layer is RNN(wrapper)
        assert type(layers[-1]) is hmkeras.RNN
        assert layers[-1].cell is new.wrapper
    # The tied embedding is still one variable, the softmax's too.
    assert sum("embeddings" in w.path for w in new.network.weights) == 1
    tokens = np.random.default_rng(4).integers(0, 11, size=(2, 6)).astype("int32")
    _close(new.network(tokens, training=False), old.network(tokens, training=False))
    # Dropout (training) changes the output; the layers still run.
    assert not np.allclose(new.network(tokens, training=True),
                           new.network(tokens, training=False))


def test_sequence_layer_is_checked():
    with pytest.raises(ValueError, match="sequence_layer"):
        CharLanguageModelConfig(vocab_size=3, sequence_layer="yes")
