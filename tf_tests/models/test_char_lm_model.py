"""Tests of the character LM, its batch-1 evaluation, TBPTT state carry and
step export (hmkeras.models.char_language_model / evaluation / stateful_training /
step_export).  Tiny models, short texts."""

import math
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from hmkeras.analysis.boundary_metrics import boundary_scores
from hmkeras.analysis.boundary_metrics import reference_boundaries
from hmkeras.models.char_language_model import CharLanguageModel
from hmkeras.data import CharVocabulary
from hmkeras.analysis.evaluation import EvaluationResult
from hmkeras.analysis.evaluation import evaluate_char_model
from hmkeras.training.stateful_training import TruncatedBPTTModel
from hmkeras.training.step_export import export_step_model
from one_trace import compile_built

TEXT = "the cat sat on the mat, the dog sat on the log.\nthe end of it.\n" * 3


def _model(cell="hmlstm", vocab_size=20, **kwargs):
    # Non-normalized cells: the random weights below then make both z = 0
    # and z = 1 occur on every layer.
    options = dict(units=8, num_layers=3, embedding_dim=5, output_units=8, seed=3)
    if cell in ("hmlstm", "hmrnn"):
        options["cell_options"] = dict(layer_norm=False)
    options.update(kwargs)
    lm = CharLanguageModel(vocab_size=vocab_size, cell=cell, **options)
    if lm.is_hierarchical:
        # Large random boundary weights so that both z = 0 and z = 1 occur.
        for w in lm.hierarchical_cell.weights:
            if w.trainable:
                w.assign(np.random.default_rng(0).normal(0, 1.0, w.shape))
    return lm


def _direct_bits(lm, ids):
    """-log2 p of every target from ONE call over the whole text."""
    logits, rnn_outputs, *_ = lm.network([ids[None, :-1], *lm.zero_state(1)])
    log_p = tf.nn.log_softmax(tf.cast(logits, tf.float64))[0].numpy()
    return -log_p[np.arange(len(ids) - 1), ids[1:]] / math.log(2), rnn_outputs


@pytest.mark.slow
@pytest.mark.parametrize("cell", ["hmlstm", "lstm", "hmrnn", "mlstm"])
def test_batch1_bpc_equals_direct_computation(cell):
    vocab = CharVocabulary.from_text(TEXT)
    ids = vocab.encode(TEXT)
    lm = _model(cell, len(vocab))
    bits, rnn_outputs = _direct_bits(lm, ids)
    # Chunks of 7 with a padded, partial last chunk: the state is carried.
    result = evaluate_char_model(lm, ids, seq_len=7, verbose=0,
                                 keep_boundaries=True)
    assert result.num_targets == len(ids) - 1
    np.testing.assert_allclose(result.bpc, bits.mean(), rtol=1e-5)
    if cell in ("hmlstm", "hmrnn"):
        z = lm.boundaries(rnn_outputs)[0].numpy()
        np.testing.assert_array_equal(result.boundaries, z)
        np.testing.assert_allclose(result.z_rates, z.mean(axis=0))
        assert 0 < result.z_rates[0] < 1
    else:
        assert result.z_rates is None and result.z_ratio is None


def test_boundary_scores_against_reference():
    vocab = CharVocabulary.from_text(TEXT)
    ids = vocab.encode(TEXT)
    lm = _model("hmlstm", len(vocab))
    reference = np.array([c == " " for c in TEXT], int)
    result = evaluate_char_model(lm, ids, seq_len=10, reference=reference,
                                 keep_boundaries=True, verbose=0)
    z1 = result.boundaries[:, 0] > 0.5
    tp = int(np.sum(z1 & (reference[:-1] == 1)))
    assert result.boundary_scores[0]["true_positives"] == tp
    assert result.boundary_scores[0]["num_predicted"] == int(z1.sum())
    assert result.boundary_scores[0]["num_reference"] == int(reference[:-1].sum())
    rates = result.z_rates
    assert result.z_ratio == pytest.approx(rates[0] / rates[1])
    assert result.boundary_scores[0]["alignment"] == "reference"


def test_boundary_scores_in_two_alignments():
    """A dict reference: every layer scored in each alignment, best = headline."""
    vocab = CharVocabulary.from_text(TEXT)
    lm = _model("hmlstm", len(vocab))
    references = {"separator": reference_boundaries(TEXT),
                  "last_char": reference_boundaries(TEXT, align="before")}
    result = evaluate_char_model(lm, vocab.encode(TEXT), seq_len=10, verbose=0,
                                 reference=references, keep_boundaries=True)
    assert len(result.boundary_scores) == 2
    for layer, scores in enumerate(result.boundary_scores):
        expected = {name: boundary_scores(result.boundaries[:, layer], ref[:-1])._asdict()
                    for name, ref in references.items()}
        assert scores["by_alignment"] == expected
        best = max(expected, key=lambda name: expected[name]["f1"])
        assert scores["alignment"] == best and scores["f1"] == expected[best]["f1"]
    with pytest.raises(ValueError, match="one value per input id"):
        evaluate_char_model(lm, vocab.encode(TEXT), seq_len=10, verbose=0,
                            reference={"separator": references["separator"][:20]})


def test_unknown_test_symbols_raise():
    vocab = CharVocabulary.from_text("abc ")
    with pytest.raises(ValueError, match="not in the vocabulary"):
        evaluate_char_model(_model(vocab_size=len(vocab)), vocab.encode("abd a"))


@pytest.mark.slow
def test_tbptt_state_carry_equals_one_long_sequence():
    """Stateful TBPTT batches (lr 0) give the losses of one long call."""
    vocab = CharVocabulary.from_text(TEXT)
    ids = vocab.encode(TEXT)
    lm = _model("hmlstm", len(vocab))
    from hmkeras.data import TruncatedBPTTBatches

    batches = TruncatedBPTTBatches(ids, batch_size=2, seq_len=9)
    model = TruncatedBPTTModel(lm, batch_size=2)
    model.compile(keras.optimizers.SGD(0.0), loss=model.loss_function())
    per_batch = []
    callback = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda b, logs: per_batch.append(float(logs["batch_bpc"])))
    model.fit(batches.dataset(), callbacks=[callback], verbose=0, shuffle=False)
    # The same rows in one call, from the zero state.
    rows = batches._rows
    logits, *_ = lm.network([rows[:, :-1].astype("int32"), *lm.zero_state(2)])
    log_p = tf.nn.log_softmax(tf.cast(logits, tf.float64)).numpy()
    targets = rows[:, 1:]
    bits = -np.take_along_axis(log_p, targets[..., None], -1)[..., 0] / math.log(2)
    expected = [bits[:, k * 9:(k + 1) * 9].mean() for k in range(batches.num_batches)]
    np.testing.assert_allclose(per_batch, expected, rtol=1e-4)
    # And the batch-2 evaluation pass carries its state the same way.
    result = evaluate_char_model(lm, ids, seq_len=9, batch_size=2, verbose=0)
    np.testing.assert_allclose(result.bpc, bits.mean(), rtol=1e-5)


@pytest.mark.slow
def test_exported_step_reproduces_keras_probabilities(tmp_path):
    vocab = CharVocabulary.from_text(TEXT)
    ids = vocab.encode(TEXT[:40])
    lm = _model("hmlstm", len(vocab))
    logits, *_ = lm.network([ids[None], *lm.zero_state(1)])
    expected = tf.nn.softmax(logits)[0].numpy()
    path = export_step_model(lm, vocab, str(tmp_path / "step"))
    # Reloaded in a fresh process: only TensorFlow, no hmkeras classes.
    script = textwrap.dedent(f"""
        import numpy as np, tensorflow as tf
        m = tf.saved_model.load({path!r})
        state = m.signatures["zero_state"](batch_size=tf.constant(1))
        probs = []
        for t in {ids.tolist()!r}:
            out = m.signatures["step"](token_ids=tf.constant([t]), **state)
            state = {{k: v for k, v in out.items() if k.startswith("state_")}}
            probs.append(out["probabilities"].numpy()[0])
        np.save({str(tmp_path / "p.npy")!r}, np.array(probs))
        print(m.signatures["info"]()["vocabulary_json"].numpy().decode())
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True,
                         text=True, check=True)
    assert CharVocabulary.from_json(out.stdout.strip().splitlines()[-1]) == vocab
    np.testing.assert_allclose(np.load(tmp_path / "p.npy"), expected, atol=1e-5)


def test_bad_model_options_name_the_argument():
    with pytest.raises(ValueError, match=r"`cell` must be one of .*'hmlstm'"):
        CharLanguageModel(vocab_size=5, cell="gru")
    with pytest.raises(ValueError, match=r"`output` must be one of .*'gated'"):
        CharLanguageModel(vocab_size=5, output="fancy")


@pytest.mark.slow
@pytest.mark.parametrize("cell", ["hmlstm", "lstm"])
def test_per_character_losses_of_the_batch1_pass(cell):
    """`return_losses`: one loss per target, aligned with ids[1:], in bits;
    their mean is the BPC, their sum the total bits."""
    vocab = CharVocabulary.from_text(TEXT)
    ids = vocab.encode(TEXT)
    lm = _model(cell, len(vocab))
    direct, _ = _direct_bits(lm, ids)
    result = evaluate_char_model(lm, ids, seq_len=7, verbose=0, return_losses=True)
    assert result.losses.shape == (len(ids) - 1,) == (result.num_targets,)
    np.testing.assert_allclose(result.losses, direct, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(result.losses.mean(), result.bpc, rtol=1e-6)
    np.testing.assert_allclose(result.losses.sum(), result.bpc * result.num_targets,
                               rtol=1e-6)
    assert result.num_symbols == len(ids)
    assert "losses" not in result.as_dict() and "boundaries" not in result.as_dict()
    assert evaluate_char_model(lm, ids, seq_len=7, verbose=0).losses is None
    with pytest.raises(ValueError, match="`return_losses=True` needs batch_size=1"):
        evaluate_char_model(lm, ids, batch_size=2, seq_len=7, verbose=0,
                            return_losses=True)


def test_word_level_figures_follow_krause_eq_23():
    from hmkeras.analysis import bits

    # Krause et al. Section 4.4: 1.2649 bits/byte on WikiText-2 test.
    result = EvaluationResult(bpc=1.2649, num_targets=bits.WIKITEXT2_TEST_BYTES - 1,
                              num_symbols=bits.WIKITEXT2_TEST_BYTES)
    words = result.word_level(bits.WIKITEXT2_TEST_WORDS)
    assert words.bits_per_word == pytest.approx(6.4718, abs=1e-4)
    assert words.word_perplexity == pytest.approx(88.8, abs=0.05)
    # Eq. (23) by hand: bits/word = bits/byte * bytes / words; ppl = 2^(bits/word).
    by_hand = 1.2649 * bits.WIKITEXT2_TEST_BYTES / bits.WIKITEXT2_TEST_WORDS
    assert words.bits_per_word == pytest.approx(by_hand, rel=1e-12)
    assert words.word_perplexity == pytest.approx(2.0 ** by_hand, rel=1e-12)
    assert (words.num_symbols, words.num_words, words.bits_per_char) == (
        bits.WIKITEXT2_TEST_BYTES, bits.WIKITEXT2_TEST_WORDS, 1.2649)
    # An explicit symbol count wins; without any the call says what is missing.
    assert result.word_level(10, num_symbols=40).bits_per_word == pytest.approx(
        1.2649 * 4)
    with pytest.raises(ValueError, match="`num_symbols` is required"):
        EvaluationResult(bpc=1.0, num_targets=5).word_level(3)
    with pytest.raises(ValueError, match="`num_symbols` and `num_words` must be positive"):
        result.word_level(0)


@pytest.mark.parametrize("sequence_layer", [True, False])
def test_network_adds_the_prior_and_the_placement_while_training(sequence_layer):
    # The network's own losses in training are the prior and Eq. (1) of the
    # batch, computed here from its outputs; in inference it adds none.
    lm = CharLanguageModel(vocab_size=7, units=8, num_layers=3, embedding_dim=4,
                           output_units=8, seed=1, sequence_layer=sequence_layer)
    tokens = np.random.default_rng(5).integers(0, 7, size=(4, 12)).astype("int32")
    logits, rnn_outputs, *_ = lm.network([tokens, *lm.zero_state(4)], training=True)
    expected = [float(lm.boundary_prior(rnn_outputs)),
                float(lm.boundary_placement(lm.boundaries(rnn_outputs), logits))]
    assert expected[0] > 0 and expected[1] > 0
    np.testing.assert_allclose([float(v) for v in lm.network.losses], expected, rtol=1e-6)
    lm.network([tokens, *lm.zero_state(4)], training=False)
    assert lm.network.losses == []
    papers = CharLanguageModel(vocab_size=7, units=8, num_layers=3, embedding_dim=4,
                               output_units=8, seed=1, boundary_prior=None)
    papers.network([tokens, *papers.zero_state(4)], training=True)
    assert papers.network.losses == []


def test_bidirectional_placement_trains_a_backward_model_of_its_own():
    # The network's losses in training: the prior, Eq. (4) on the backward
    # LSTM's predictions of the reversed window, and that model's own cross
    # entropy; the backward model's weights get gradient from its loss
    # only, and the hierarchy none from it.
    from hmkeras.cells.boundary_placement import backward_cross_entropy

    lm = CharLanguageModel(vocab_size=7, units=8, num_layers=3, embedding_dim=4,
                           output_units=8, seed=1, boundary_placement="bidirectional",
                           segment_lengths=[None, 15])
    tokens = np.random.default_rng(5).integers(0, 7, size=(4, 12)).astype("int32")
    backward = lm.backward_language_model
    backward_logits = backward(tokens)
    reversed_lstm = keras.Sequential([backward.get_layer("backward_embedding"),
                                      backward.get_layer("backward_lstm")])
    reread = keras.layers.LSTM(8, return_sequences=True)
    reread.build((4, 12, 4))
    reread.set_weights(backward.get_layer("backward_lstm").get_weights())
    np.testing.assert_allclose(  # it reads the window last symbol first
        np.asarray(reversed_lstm(tokens)),
        np.asarray(reread(backward.get_layer("backward_embedding")(tokens[:, ::-1]))),
        atol=1e-6)
    with tf.GradientTape(persistent=True) as tape:
        logits, rnn_outputs, *_ = lm.network([tokens, *lm.zero_state(4)], training=True)
        prior, placement, own = lm.network.losses
    assert float(prior) == pytest.approx(float(lm.boundary_prior(rnn_outputs)), rel=1e-6)
    assert float(placement) == pytest.approx(float(lm.boundary_placement(
        lm.boundaries(rnn_outputs), logits, tokens=tokens,
        backward_logits=backward_logits)), rel=1e-6)
    assert float(own) == pytest.approx(
        float(backward_cross_entropy(backward_logits, tokens)), rel=1e-6)
    backward_weights = [w for w in lm.network.trainable_weights if "backward" in w.path]
    others = [w for w in lm.network.trainable_weights if "backward" not in w.path]
    assert len(backward_weights) == 6
    assert all(g is not None for g in tape.gradient(own, backward_weights))
    assert all(g is None for g in tape.gradient(own, others))
    assert all(g is None for g in tape.gradient(placement, backward_weights))


def test_the_backward_model_runs_in_training_passes_only():
    # Inference passes never read the backward model: with its weights
    # NaN the predictions are those of before, finite; a training pass
    # runs it (its loss is NaN then).
    lm = CharLanguageModel(vocab_size=7, units=8, num_layers=3, embedding_dim=4,
                           output_units=8, seed=1, boundary_placement="bidirectional")
    tokens = np.random.default_rng(6).integers(0, 7, size=(2, 9)).astype("int32")
    inputs = [tokens, *lm.zero_state(2)]
    before = np.asarray(lm.network.predict_on_batch(inputs)[0])
    assert not any("backward" in layer.name for layer in lm.network.layers)
    backward = lm.backward_language_model
    backward.set_weights([np.full(w.shape, np.nan, "float32") for w in backward.weights])
    after = np.asarray(lm.network.predict_on_batch(inputs)[0])
    np.testing.assert_array_equal(after, before)
    assert np.isfinite(after).all()
    lm.network(inputs, training=True)
    assert np.isnan(float(lm.network.losses[-1]))


def test_fit_on_the_network_is_the_training_of_the_main_job():
    # Keras' own compile and fit on the network's predictions (from the
    # zero state) take the step the trainer takes: the same weights after.
    tokens = np.random.default_rng(5).integers(0, 7, size=(4, 12)).astype("int32")
    cross_entropy = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def language_model():
        return CharLanguageModel(vocab_size=7, units=8, num_layers=3, embedding_dim=4,
                                 output_units=8, seed=1)

    own = language_model()
    predictor = keras.Model(own.network.inputs, own.network.outputs[0])
    compile_built(predictor, keras.optimizers.SGD(0.5), loss=cross_entropy)
    predictor.fit([tokens, *own.zero_state(4)], tokens, batch_size=4, verbose=0,
                  shuffle=False)
    assert len(predictor.losses) == 2  # the prior and the placement
    trained = language_model()
    trainer = TruncatedBPTTModel(trained, batch_size=4, carry_state=False)
    trainer.compile(keras.optimizers.SGD(0.5), loss=cross_entropy)
    trainer.fit(tokens, tokens, batch_size=4, verbose=0, shuffle=False)
    initial = language_model()
    for a, b in zip(own.network.weights, trained.network.weights):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-6)
    assert any(not np.allclose(np.asarray(a), np.asarray(s))
               for a, s in zip(own.network.weights, initial.network.weights))
