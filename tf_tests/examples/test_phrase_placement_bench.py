"""`bench/phrase_placement.py` on hand-made boundaries and entropies, and
`bench/trained_run.py`'s pass over a text against one call of the network, the
backward language model's terms against its reading of each suffix, and the
script on a saved bidirectional run."""

import json
import os

import numpy as np
import pytest
from example_modules import load_script

from hmkeras.analysis.corpus_references import synthetic_references
from hmkeras.analysis.word_discovery_report import batch_one_pass
from hmkeras.analysis.word_discovery_report import entropies_of
from hmkeras.cells.boundary_placement import predictive_entropy
from hmkeras.data import CharVocabulary
from hmkeras.data.char_splits import word_separators
from hmkeras.data.synthetic_corpus import SyntheticHierarchicalCorpus
from hmkeras.models.char_language_model import CharLanguageModel
from hmkeras.models.char_language_model import CharLanguageModelConfig

BENCH = load_script("bench", "phrase_placement")
TRAINED_RUN = load_script("bench", "trained_run")


def test_step_kinds_take_a_units_end_in_any_alignment():
    # "ab cd, ef": words end at b, d, f; the phrase at d. Two alignments each.
    words = {"last_char": np.array([0, 1, 0, 0, 1, 0, 0, 0, 1]),
             "separator": np.array([0, 0, 1, 0, 0, 1, 0, 0, 0])}
    phrases = {"last_char": np.array([0, 0, 0, 0, 1, 0, 0, 0, 0]),
               "separator": np.array([0, 0, 0, 0, 0, 1, 0, 0, 0])}
    np.testing.assert_array_equal(BENCH.step_kinds(words, phrases),
                                  [2, 1, 1, 2, 0, 0, 2, 2, 1])


def test_placement_targets_are_the_deciding_steps_above_their_mean_entropy():
    z = np.array([[1, 0], [0, 1], [0, 0], [1, 0], [0, 0]])
    # z^2 decides where z^1 fires (steps 0 and 3) or z^2 fired before (step 2).
    entropy = np.array([3.0, 9.0, 1.0, 2.0, 9.0])  # mean over A^2: 2
    targets, deciding = BENCH.placement_targets(entropy, z)
    np.testing.assert_array_equal(deciding, [1, 0, 1, 1, 0])
    np.testing.assert_array_equal(targets, [1, 0, 0, 0, 0])


def test_ranked_boundaries_pick_the_extreme_candidates_only():
    score = np.array([5.0, 1.0, 4.0, 9.0, 2.0, 3.0])
    candidates = np.array([1, 1, 1, 0, 1, 1])  # step 3, the highest, is no candidate
    np.testing.assert_array_equal(BENCH.ranked_boundaries(score, candidates, 2),
                                  [1, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(BENCH.ranked_boundaries(score, candidates, 2, lowest=True),
                                  [0, 1, 0, 0, 1, 0])


def test_read_steps_in_chunks_equals_one_pass_with_the_state_carried(monkeypatch):
    lm = CharLanguageModel(CharLanguageModelConfig(
        vocab_size=7, units=4, embedding_dim=3, output_units=5, seed=0))
    ids = np.random.default_rng(0).integers(0, 7, 11)
    monkeypatch.setattr(TRAINED_RUN, "CHUNK", 4)  # three chunks, the last one padded
    outputs, entropy, embedding = TRAINED_RUN.read_steps(lm, ids)
    logits, rnn_outputs, *_ = lm.network([ids[None].astype("int32"), *lm.zero_state(1)])
    np.testing.assert_allclose(outputs, np.asarray(rnn_outputs)[0], atol=1e-5)
    np.testing.assert_allclose(entropy, np.asarray(predictive_entropy(logits[0])), atol=1e-5)
    assert embedding.shape == (11, 3)


def test_word_end_signals_read_the_steps_at_and_before_each_z1_step():
    entropy = np.array([0.5, 2.0, 0.1, 0.3, 1.5, 0.2, 0.4])
    surprisal = np.array([0.6, 2.5, 0.2, 0.1, 1.0, 0.3, 0.0])
    z1 = np.array([1, 0, 0, 1, 0, 0, 1])  # step 0 has no two steps before it
    steps, signals = BENCH.word_end_signals(entropy, surprisal, z1)
    np.testing.assert_array_equal(steps, [3, 6])
    np.testing.assert_allclose(signals["H_t"], [0.3, 0.4])
    np.testing.assert_allclose(signals["H_{t-1}"], [0.1, 0.2])
    np.testing.assert_allclose(signals["H_{t-2}"], [2.0, 1.5])
    np.testing.assert_allclose(signals["S_{t-1} (of the symbol read at t)"], [0.2, 0.3])
    np.testing.assert_allclose(signals["S_{t-2}"], [2.5, 1.0])
    np.testing.assert_allclose(signals["max(H_{t-1}, H_{t-2})"], [2.0, 1.5])
    np.testing.assert_allclose(signals["H_{t-1} + H_{t-2}"], [2.1, 1.7])
    # The segments: steps 0-3 (the first z^1 step, 0, is dropped) and 4-6.
    np.testing.assert_allclose(signals["segment length"], [4, 3])
    np.testing.assert_allclose(signals["segment's largest H before t"], [2.0, 1.5])


def test_best_threshold_finds_the_signal_that_separates_the_phrase_ends():
    # z^1 steps 1, 3, 5, 7; phrase ends at 3 and 7, where the signal is low.
    steps = np.array([1, 3, 5, 7])
    phrases = {"last_char": np.array([0, 0, 0, 1, 0, 0, 0, 1])}
    best = BENCH.best_threshold(np.array([5.0, 1.0, 4.0, 2.0]), steps, phrases, 8)
    assert best["direction"] == "below"
    assert best["precision"] == best["recall"] == best["f1"] == 1.0
    assert best["rate"] == 0.25
    # A signal that does not separate them scores below 1.
    mixed = BENCH.best_threshold(np.array([1.0, 2.0, 3.0, 4.0]), steps, phrases, 8)
    assert mixed["f1"] < 1.0


def test_mean_threshold_keeps_the_steps_above_the_mean_of_the_signal():
    # z^1 steps 1, 3, 5, 7 (signal mean 3); phrase ends at 3 and 5.
    steps = np.array([1, 3, 5, 7])
    phrases = {"last_char": np.array([0, 0, 0, 1, 0, 1, 0, 0])}
    # Above the mean: steps 3 and 7 -> one of two right, one of two found.
    scores = BENCH.mean_threshold(np.array([1.0, 4.0, 2.0, 5.0]), steps, phrases, 8)
    assert scores["rate"] == 0.25
    assert scores["precision"] == scores["recall"] == scores["f1"] == 0.5
    exact = BENCH.mean_threshold(np.array([1.0, 5.0, 5.0, 1.0]), steps, phrases, 8)
    assert exact["precision"] == exact["recall"] == 1.0


def test_state_read_out_is_fitted_on_the_first_half_and_set_on_the_second():
    rng = np.random.default_rng(0)
    steps = np.arange(0, 200, 2)
    is_phrase_end = rng.random(len(steps)) < 0.3
    states = rng.normal(size=(200, 3))
    states[steps, 0] = np.where(is_phrase_end, 2.0, -2.0)  # one feature holds the answer
    boundaries, first = BENCH.state_read_out(states, steps, is_phrase_end, 200)
    assert first == steps[50]
    assert boundaries[:first].sum() == 0
    np.testing.assert_array_equal(boundaries[steps[50:]], is_phrase_end[50:].astype(int))


def test_one_step_earlier_moves_each_firing_back_one_step():
    np.testing.assert_array_equal(BENCH.one_step_earlier(np.array([1, 0, 1, 1, 0])),
                                  [0, 1, 1, 0, 0])


def test_firing_places_split_z2_by_where_z1_fired():
    # z^2 fires at steps 1 (with z^1), 2 and 4 (z^1 fired the step before,
    # not at the step) and 6 (elsewhere).
    z1 = np.array([0, 1, 0, 1, 0, 0, 0])
    z2 = np.array([0, 1, 1, 0, 1, 0, 1])
    places = BENCH.firing_places(np.stack([z1, z2], axis=1))
    assert places == {"at a z^1 step": 0.25, "the step after a z^1 step": 0.5,
                      "elsewhere": 0.25}
    assert set(BENCH.firing_places(np.zeros((3, 2), int)).values()) == {0.0}


def test_backward_terms_predict_each_symbol_from_the_symbols_after_it():
    # Reference: the backward model run on the suffix ids[j + 1:] alone
    # (it reads it last symbol first); its last output predicts symbol j.
    lm = CharLanguageModel(CharLanguageModelConfig(
        vocab_size=6, cell="hmlstm", units=4, num_layers=3, embedding_dim=3,
        output_units=5, seed=0, boundary_placement="bidirectional"))
    ids = np.random.default_rng(1).integers(0, 6, 9).astype("int32")
    entropy, surprisal = BENCH.backward_terms(lm, ids)
    assert np.isnan(entropy[-1]) and np.isnan(surprisal[-1])
    for j in range(len(ids) - 1):
        logits = np.asarray(lm.backward_language_model(ids[None, j + 1:]))[0, -1]
        log_p = logits.astype("float64") - np.logaddexp.reduce(logits.astype("float64"))
        np.testing.assert_allclose(entropy[j], -(np.exp(log_p) * log_p).sum(), rtol=1e-5)
        np.testing.assert_allclose(surprisal[j], -log_p[ids[j]], rtol=1e-5)


def test_backward_signals_read_the_steps_around_each_z1_step():
    entropy = np.arange(8.0)
    backward_entropy = 10.0 + np.arange(8.0)
    backward_surprisal = 20.0 + np.arange(8.0)
    signals = BENCH.backward_signals(entropy, backward_entropy, backward_surprisal,
                                     np.array([2, 5]))
    np.testing.assert_array_equal(signals["Hb_{t+1} (backwards)"], [13.0, 16.0])
    np.testing.assert_array_equal(signals["Hb_{t-2} (backwards)"], [10.0, 13.0])
    np.testing.assert_array_equal(signals["Sb_{t-1} (backwards)"], [21.0, 24.0])
    np.testing.assert_array_equal(signals["H_{t-2} + Hb_{t-1}"], [0.0 + 11.0, 3.0 + 14.0])


def test_the_script_reads_the_backward_signals_at_the_word_ends(tmp_path, capsys):
    # A saved (untrained) bidirectional run on a small embedded corpus: the
    # script's backward rows, read at the gold word ends, are the scores of
    # backward_terms at those steps above their mean.
    settings = {"seed": 0, "synthetic_train_chars": 600, "synthetic_valid_chars": 200,
                "synthetic_test_chars": 400}
    corpus = SyntheticHierarchicalCorpus(seed=0, train_chars=600, valid_chars=200,
                                         test_chars=400)
    text = corpus.text("test")
    vocab = CharVocabulary.from_text(corpus.text("train") + corpus.text("validation") + text)
    lm = CharLanguageModel(CharLanguageModelConfig(
        vocab_size=len(vocab), cell="hmlstm", units=8, num_layers=3, embedding_dim=4,
        output_units=8, seed=0, boundary_placement="bidirectional"))
    run = tmp_path / "run"
    os.makedirs(run / "checkpoints")
    (run / "settings.json").write_text(json.dumps(settings))
    (run / "model_config.json").write_text(lm.config.to_json())
    (run / "vocabulary.json").write_text(vocab.to_json())
    lm.network.save_weights(str(run / "checkpoints" / "best.weights.h5"))
    BENCH.FLAGS(["phrase_placement", f"--run_dir={run}", "--signal_steps=words"])
    try:
        BENCH.main([])
    finally:
        BENCH.FLAGS.unparse_flags()
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    ids = np.asarray(vocab.encode(text), np.int32)
    references = synthetic_references(corpus, "test", text, word_separators("synthetic"))
    phrases = {name: values[: len(ids)] for name, values in references["phrases"].items()}
    steps = np.flatnonzero(references["words"]["last_separator"][: len(ids)])
    steps = steps[(steps >= 2) & (steps < len(ids) - 2)]
    backward_entropy, _ = BENCH.backward_terms(lm, ids)
    values = backward_entropy[steps]
    expected = BENCH.chosen_scores(values > values.mean(), steps, phrases, len(ids))
    assert printed["above its mean: Hb_t (backwards)"] == pytest.approx(expected)
    entropy = entropies_of(batch_one_pass(lm, ids)[1])[steps]  # the forward rows, same steps
    assert printed["above its mean: H_t"] == pytest.approx(
        BENCH.chosen_scores(entropy > entropy.mean(), steps, phrases, len(ids)))
    assert len(steps) > 10
