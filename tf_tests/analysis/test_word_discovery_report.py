"""The word-discovery section of a char LM's results: per-symbol
boundaries cut back into utterances (and the written file read back to
the same boundaries), the entropies of a chunked batch-1 pass equal to one
pass over the whole stream, and every segmenter scored on the same lines."""

import dataclasses

import backend_support
import numpy as np
import pytest

from hmkeras.analysis import word_discovery
from hmkeras.analysis import word_discovery_report as report
from hmkeras.data import CharVocabulary
from hmkeras.data.utterances import Utterances
from hmkeras.models.char_language_model import CharLanguageModel

GOLD = "yu want tu\nsi D6 bUk\nhi\nlUk\n"


def test_stream_boundaries_become_the_lines_and_the_file_reads_back(tmp_path):
    test = Utterances.from_text(GOLD)
    rng = np.random.default_rng(0)
    stream = (rng.random(len(test.text) - 1) < 0.4).astype("float32")
    lines = report.stream_segmentation(test, stream)
    path = report.write_segmented(str(tmp_path / "test_segmented.txt"), lines)
    read = open(path, encoding="utf-8").read().split("\n")[:-1]
    assert read == lines
    # Each line's boundaries are the stream's values on its symbols (the
    # last symbol ends a word anyway; line ends are not read).
    start = 0
    for line, gold in zip(read, test.segmented):
        chars, cuts = word_discovery.utterance_boundaries(line)
        assert chars == gold.replace(" ", "")
        expected = stream[start: start + len(chars)].astype(np.int8)
        expected[-1] = 1
        np.testing.assert_array_equal(cuts, expected)
        start += len(chars) + 1
    # Boundaries exactly on the gold word ends give the gold lines.
    gold_stream = np.concatenate(
        [np.append(word_discovery.utterance_boundaries(g)[1], 0) for g in test.segmented])
    assert report.stream_segmentation(test, gold_stream) == list(test.segmented)
    with pytest.raises(ValueError, match="`boundaries` must hold one value per input symbol"):
        report.stream_segmentation(test, stream[:5])


def test_utterance_values_skip_the_line_ends():
    test = Utterances.from_text("ab c\nd\n")  # stream "abc\nd\n"
    pieces = report.utterance_values(test, np.arange(5.0))
    assert [p.tolist() for p in pieces] == [[0.0, 1.0, 2.0], [4.0]]


@pytest.fixture(scope="module")
def tiny_lm():
    utterances = Utterances.from_text(GOLD * 3)
    vocab = CharVocabulary.from_text(utterances.text)
    lm = CharLanguageModel(vocab_size=len(vocab), cell="hmlstm", units=8, num_layers=3,
                           embedding_dim=4, output_units=8, seed=0,
                           boundary_placement="bidirectional", segment_lengths=[None, 15])
    return lm, vocab, utterances


def test_chunked_entropies_equal_one_pass(tiny_lm):
    lm, vocab, utterances = tiny_lm
    ids = vocab.encode(utterances.text)
    whole = report.predictive_entropies(lm, ids, chunk=len(ids))
    chunked = report.predictive_entropies(lm, ids, chunk=7)
    assert whole.shape == (len(ids) - 1,)
    np.testing.assert_allclose(chunked, whole, rtol=1e-5, atol=1e-6)
    assert np.all(whole > 0) and np.all(whole <= np.log(len(vocab)) + 1e-6)
    # A pass over every symbol gives the same entropies (the last is extra).
    log_probs = report.batch_one_pass(lm, ids, chunk=7)[1]
    np.testing.assert_allclose(report.entropies_of(log_probs)[:-1], chunked, rtol=1e-12)


def test_signal_terms_by_hand():
    # Three steps over two symbols: p = (1/2, 1/2), (1, 0) up to rounding, (1/4, 3/4).
    p = np.array([[0.5, 0.5], [1.0 - 1e-12, 1e-12], [0.25, 0.75]])
    h, s, h_next = report.signal_terms(np.log(p), [0, 1, 0])
    entropy = -(p * np.log(p)).sum(-1)
    # The entropies renormalize `log p` (as the placement's do): exact to 1e-15 nats.
    np.testing.assert_allclose(h, entropy[:2], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(h_next, entropy[1:], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(s, [np.log(2.0), -np.log(1.0 - 1e-12)])  # ids[1] = 1, ids[2] = 0
    np.testing.assert_allclose(report.surprisal_signal(np.log(p), [0, 1, 0]),
                               h + (s - h_next) / 2, rtol=1e-12, atol=1e-15)


def test_surprisal_signal_is_eq_3_of_the_placement(tiny_lm):
    # v_t = H_t + (S_t - H_{t+1}) / 2 from one pass of the network, in NumPy.
    lm, vocab, utterances = tiny_lm
    ids = np.asarray(vocab.encode(utterances.text))
    logits = backend_support.to_numpy(lm.network([ids[None], *lm.zero_state(1)])[0])[0]
    logits = logits.astype("float64")
    log_p = logits - logits.max(-1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(-1, keepdims=True))
    entropy = -(np.exp(log_p) * log_p).sum(-1)
    surprisal = -log_p[np.arange(len(ids) - 1), ids[1:]]
    expected = entropy[:-1] + (surprisal - entropy[1:]) / 2
    log_probs = report.batch_one_pass(lm, ids, chunk=7)[1]
    np.testing.assert_allclose(report.surprisal_signal(log_probs, ids), expected,
                               rtol=1e-4, atol=1e-5)


def test_backward_signal_is_eq_3_on_the_reversed_stream(tiny_lm):
    # The backward model's logits over the stream, read last symbol first,
    # and Eq. 3 on them in NumPy; the "bidirectional" segmenter is the rule
    # of word_discovery on those values cut into reversed utterances.
    lm, vocab, utterances = tiny_lm
    test = Utterances.from_text(GOLD)
    ids = np.asarray(vocab.encode(test.text))
    backward = lm.backward_language_model.get_layer("backward_logits")
    embedded = lm.backward_language_model.get_layer("backward_embedding")(ids[None, ::-1])
    logits = backward(_forward_lstm(lm)(embedded))
    logits = backend_support.to_numpy(logits)[0].astype("float64")
    log_p = logits - logits.max(-1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(-1, keepdims=True))
    entropy = -(np.exp(log_p) * log_p).sum(-1)
    reversed_ids = ids[::-1]
    surprisal = -log_p[np.arange(len(ids) - 1), reversed_ids[1:]]
    expected = np.append(entropy[:-1] + (surprisal - entropy[1:]) / 2, 0.0)
    signal = report.backward_signal(lm, ids)
    np.testing.assert_allclose(signal, expected, rtol=1e-4, atol=1e-5)
    # Utterance "hi" (stream symbols 17 and 18 of 24) reversed: the values
    # after reading "i" (reversed symbol 5) and then "h" (6).
    assert len(ids) == 24 and vocab.decode(ids[17:19]) == "hi"
    pieces = report.reversed_utterance_values(test, signal)
    np.testing.assert_array_equal(pieces[2], signal[5:7])
    results, segmentations = report.word_discovery_results(
        lm, vocab, {"train": utterances, "test": test})
    log_probs = report.batch_one_pass(lm, ids)[1]
    unspaced = [g.replace(" ", "") for g in test.segmented]
    forward = report.utterance_values(test, report.surprisal_signal(log_probs, ids))
    assert segmentations["bidirectional"] == word_discovery.bidirectional_segmentation(
        unspaced, forward, pieces)
    # At the threshold of the model's own placement (the same weights).
    config = dataclasses.replace(lm.config, rise_fraction=0.0)
    _, at_zero = report.word_discovery_results(
        CharLanguageModel(config), vocab, {"train": utterances, "test": test})
    assert at_zero["bidirectional"] == word_discovery.bidirectional_segmentation(
        unspaced, forward, pieces, rise_fraction=0.0)
    assert at_zero["bidirectional"] != segmentations["bidirectional"]
    # A model without a backward language model has no such segmenter.
    plain = CharLanguageModel(vocab_size=len(vocab), cell="hmlstm", units=8, num_layers=3,
                              embedding_dim=4, output_units=8, seed=0)
    assert report.backward_signal(plain, ids) is None


def _forward_lstm(lm):
    """A forward LSTM with the backward model's weights: it reads what it
    is given first to last."""
    import keras

    source = lm.backward_language_model.get_layer("backward_lstm")
    lstm = keras.layers.LSTM(source.units, return_sequences=True)
    lstm.build((None, None, source.input.shape[-1]))
    lstm.set_weights(source.get_weights())
    return lstm


def test_every_segmenter_is_scored_on_the_same_lines(tiny_lm):
    lm, vocab, utterances = tiny_lm
    test = Utterances.from_text(GOLD)
    z = np.zeros((len(test.text) - 1, 2), "float32")
    results, segmentations = report.word_discovery_results(
        lm, vocab, {"train": utterances, "test": test}, boundaries=z, seed=1)
    assert set(segmentations) == set(report.SEGMENTERS)
    assert results["primary"] == "z1" and results["scored"]
    assert results["gold_rate"] == pytest.approx(word_discovery.boundary_rate(test.segmented))
    for name, lines in segmentations.items():
        assert [line.replace(" ", "") for line in lines] == [
            g.replace(" ", "") for g in test.segmented]
        expected = word_discovery.score_segmentation(test.segmented, lines).as_dict()
        assert results[name]["boundary"] == expected["boundary"]
        assert results[name]["rate"] == word_discovery.boundary_rate(lines)
    # No boundary at all: one word per line, no boundary found.
    assert results["z1"]["rate"] == 0.0 and results["z1"]["boundary"]["num_predicted"] == 0
    assert results["z1"]["token"]["true_positives"] == 2  # "hi", "lUk"


def test_a_text_without_spaces_is_segmented_unscored(tiny_lm):
    lm, vocab, utterances = tiny_lm
    test = Utterances.from_text("yuwanttu\nlUk\n")
    results, segmentations = report.word_discovery_results(
        lm, vocab, {"train": utterances, "test": test})
    assert results["primary"] == "entropy" and results["scored"] is False
    assert "boundary" not in results["entropy"] and len(segmentations["entropy"]) == 2
