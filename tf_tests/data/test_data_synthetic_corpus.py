"""Tests for hmkeras.data.synthetic_corpus.SyntheticHierarchicalCorpus."""

import math

import numpy as np
import pytest

from hmkeras.data.synthetic_corpus import SyntheticHierarchicalCorpus

SMALL = dict(train_chars=20_000, valid_chars=3_000, test_chars=3_000)


@pytest.fixture(scope="module")
def default_corpus():
    return SyntheticHierarchicalCorpus(seed=0)


def test_deterministic_for_a_seed():
    a = SyntheticHierarchicalCorpus(seed=3, **SMALL)
    b = SyntheticHierarchicalCorpus(seed=3, **SMALL)
    c = SyntheticHierarchicalCorpus(seed=4, **SMALL)
    for split in ("train", "validation", "test"):
        assert a.text(split) == b.text(split)
        assert a.text(split) != c.text(split)
        np.testing.assert_array_equal(
            a.word_boundaries(split), b.word_boundaries(split))
    # The three splits come from independent streams.
    assert a.text("validation")[:200] != a.text("test")[:200]
    assert a.text("train")[:200] != a.text("validation")[:200]
    # The definition (lexicon, entropy rate) does not depend on the seed.
    assert a.lexicon == c.lexicon
    assert a.entropy_rate_bits_per_char == c.entropy_rate_bits_per_char


def test_sizes_symbols_and_default_splits(default_corpus):
    for split, target in default_corpus.split_chars.items():
        text = default_corpus.text(split)
        assert target <= len(text) < target + 2000
        assert text.endswith(".\n")
    assert default_corpus.split_chars == {
        "train": 1_000_000, "validation": 50_000, "test": 50_000}
    symbols = set(default_corpus.text("train"))
    assert symbols <= set(default_corpus.symbols)
    assert len(default_corpus.symbols) == 30
    assert len(symbols) == 30


def _parse_boundaries(text):
    """Boundaries re-derived from the text alone (last letter of a unit)."""
    n = len(text)
    is_letter = np.array([c.isalpha() for c in text])
    nxt = np.array(list(text[1:]) + ["\n"])
    word = is_letter & ~np.array([c.isalpha() for c in nxt])
    phrase = is_letter & np.isin(nxt, [",", "."])
    sentence = is_letter & (nxt == ".")
    assert word.shape == (n,)
    return word, phrase, sentence


def test_boundaries_consistent_with_text():
    corpus = SyntheticHierarchicalCorpus(seed=5, **SMALL)
    for split in ("train", "test"):
        text = corpus.text(split)
        word, phrase, sentence = _parse_boundaries(text)
        np.testing.assert_array_equal(corpus.word_boundaries(split), word)
        np.testing.assert_array_equal(corpus.phrase_boundaries(split), phrase)
        np.testing.assert_array_equal(corpus.sentence_boundaries(split), sentence)
        assert word.sum() == len(text.replace(",", " ").replace(".", " ").split())
        # Nesting: sentence => phrase => word.
        assert not np.any(sentence & ~phrase) and not np.any(phrase & ~word)
        # Every word is a lexicon word.
        words = text.replace(",", " ").replace(".", " ").split()
        for w in set(words):
            corpus.word_class(w)


def _sentence_information(corpus, sentence):
    """-log2 P(sentence) from the text and the generator's public tables.

    Independent of the generator code: parse phrases and words, recover the
    phrase types and slot counts, and multiply the probabilities.
    """
    class_of = {w: c for c, ws in corpus.lexicon.items() for w in ws}
    word_prob = {}
    for c, ws in corpus.lexicon.items():
        z = sum(1.0 / (k + 1) for k in range(len(ws)))
        for k, w in enumerate(ws):
            word_prob[w] = (1.0 / (k + 1)) / z
    first_class = {slots[0][0]: t for t, slots in corpus.phrase_types.items()}
    assert sentence.endswith(".")
    bits = 0.0
    previous = None
    for phrase in sentence[:-1].split(", "):
        words = phrase.split(" ")
        ptype = first_class[class_of[words[0]]]
        p_type = (corpus.start_probs if previous is None
                  else corpus.transition_probs[previous])[ptype]
        bits -= math.log2(p_type)
        i = 0
        for cls, counts in corpus.phrase_types[ptype]:
            n = 0
            while i < len(words) and class_of[words[i]] == cls:
                bits -= math.log2(word_prob[words[i]])
                i += 1
                n += 1
            bits -= math.log2(counts[n])
        assert i == len(words), phrase
        previous = ptype
    bits -= math.log2(corpus.transition_probs[previous][corpus.END])
    return bits


def test_entropy_rate_matches_exact_log_probability(default_corpus):
    """Empirical -log2 P(text) / len(text) over 1.1M chars vs the formula.

    The tolerance is 5 standard errors of the ratio estimator (about 0.01
    bits/char); dropping the separators from the length, or one term of the
    entropy, moves the formula by more than 0.03 bits/char.
    """
    corpus = default_corpus
    infos, lengths = [], []
    for split in ("train", "validation", "test"):
        text = corpus.text(split)
        sentences = text.split("\n")[:-1]
        split_bits = 0.0
        for s in sentences:
            infos.append(_sentence_information(corpus, s))
            lengths.append(len(s) + 1)
            split_bits += infos[-1]
        assert sum(lengths[-len(sentences):]) == len(text)
        # The generator's own bookkeeping agrees with the independent parse.
        assert corpus.true_bits_per_char(split) == pytest.approx(
            split_bits / len(text), rel=1e-9)
    infos, lengths = np.array(infos), np.array(lengths, dtype=float)
    estimate = infos.sum() / lengths.sum()
    residual = infos - estimate * lengths
    stderr = residual.std() / (lengths.mean() * math.sqrt(len(lengths)))
    rate = corpus.entropy_rate_bits_per_char
    assert abs(estimate - rate) < 5 * stderr, (estimate, rate, stderr)
    assert 5 * stderr < 0.02
    # The renewal-reward terms separately.
    assert lengths.mean() == pytest.approx(corpus.mean_sentence_chars, rel=0.02)
    assert infos.mean() == pytest.approx(corpus.mean_sentence_bits, rel=0.02)


def test_entropy_rate_value(default_corpus):
    assert default_corpus.entropy_rate_bits_per_char == pytest.approx(
        0.768153, abs=1e-6)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(seed=-1), "seed"),
        (dict(seed=1.5), "seed"),
        (dict(train_chars=0), "train_chars"),
        (dict(valid_chars="10"), "valid_chars"),
        (dict(test_chars=True), "test_chars"),
    ],
)
def test_invalid_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SyntheticHierarchicalCorpus(**kwargs)


def test_invalid_split():
    corpus = SyntheticHierarchicalCorpus(**SMALL)
    with pytest.raises(ValueError, match="'train', 'validation', 'test'"):
        corpus.text("valid")
