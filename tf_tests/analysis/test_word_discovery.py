"""Tests for hmkeras.analysis.word_discovery: utterance boundaries, boundary /
token / lexicon scores of a segmentation, and the random, transitional-
probability and entropy baselines."""

import collections
import itertools
import json
import math
import pathlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from hmkeras.analysis.boundary_metrics import boundary_scores
from hmkeras.analysis.boundary_metrics import token_scores
from hmkeras.analysis.word_discovery import WordDiscoveryScores
from hmkeras.analysis.word_discovery import bidirectional_rises
from hmkeras.analysis.word_discovery import bidirectional_segmentation
from hmkeras.analysis.word_discovery import boundary_rate
from hmkeras.analysis.word_discovery import entropy_segmentation
from hmkeras.analysis.word_discovery import random_segmentation
from hmkeras.analysis.word_discovery import score_segmentation
from hmkeras.analysis.word_discovery import segment_utterance
from hmkeras.analysis.word_discovery import transition_probability_segmentation
from hmkeras.analysis.word_discovery import utterance_boundaries


BRENT = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "data" / "brent"


# ------------------------------------------------- utterances <-> boundaries

def test_utterance_boundaries_hand_made():
    chars, b = utterance_boundaries("yu want tu si D6 bUk")
    assert chars == "yuwanttusiD6bUk"
    # words end after characters 1 (yu), 5 (want), 7 (tu), 9 (si), 11 (D6)
    # and 14 (bUk, the last character: always 1)
    assert b.dtype == np.int8
    assert np.flatnonzero(b).tolist() == [1, 5, 7, 9, 11, 14]
    chars, b = utterance_boundaries("a")
    assert (chars, b.tolist()) == ("a", [1])
    chars, b = utterance_boundaries("abc")
    assert (chars, b.tolist()) == ("abc", [0, 0, 1])


def test_segment_utterance_hand_made():
    assert segment_utterance("abcde", [0, 1, 1, 0, 0]) == "ab c de"
    # the last character's value adds no trailing space, whichever it is
    assert segment_utterance("abcde", [0, 1, 1, 0, 1]) == "ab c de"
    assert segment_utterance("abc", [True, True, True]) == "a b c"
    assert segment_utterance("abc", np.array([0.0, 1.0, 0.0])) == "ab c"
    assert segment_utterance("a", [0]) == "a"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="abD6&*'", min_size=1, max_size=6),
                min_size=1, max_size=8))
def test_round_trip_from_words(words):
    segmented = " ".join(words)
    chars, b = utterance_boundaries(segmented)
    assert chars == "".join(words)
    assert b[-1] == 1 and b.sum() == len(words)
    assert segment_utterance(chars, b) == segmented


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_round_trip_from_boundaries(data):
    chars = data.draw(st.text(alphabet="xyz01", min_size=1, max_size=20))
    b = data.draw(st.lists(st.integers(0, 1), min_size=len(chars),
                           max_size=len(chars)))
    back_chars, back_b = utterance_boundaries(segment_utterance(chars, b))
    expected = list(b)
    expected[-1] = 1  # the last character always ends a word
    assert back_chars == chars
    assert back_b.tolist() == expected


def test_utterance_boundaries_errors():
    for bad in ["a  b", " ab", "ab ", "", " ", "a\tb", "ab\n"]:
        with pytest.raises(ValueError, match="`segmented`"):
            utterance_boundaries(bad)
    with pytest.raises(ValueError, match="`segmented`"):
        utterance_boundaries(["a", "b"])


def test_segment_utterance_errors():
    with pytest.raises(ValueError, match="`boundaries`.*shape \\(3,\\)"):
        segment_utterance("abc", [0, 1])
    with pytest.raises(ValueError, match="`boundaries`"):
        segment_utterance("abc", [[0, 1, 0]])
    with pytest.raises(ValueError, match="`boundaries` must hold only 0 and 1"):
        segment_utterance("abc", [0, 2, 1])
    with pytest.raises(ValueError, match="`boundaries` must hold only 0 and 1"):
        segment_utterance("abc", [0, 0.5, 1])
    with pytest.raises(ValueError, match="`boundaries` must hold only 0 and 1"):
        segment_utterance("abc", ["0", "1", "0"])
    with pytest.raises(ValueError, match="`chars`"):
        segment_utterance("a c", [0, 0, 1])
    with pytest.raises(ValueError, match="`chars`"):
        segment_utterance("", [])


# ------------------------------------------------------------------ scores

def _counts(scores):
    return (scores.true_positives, scores.num_predicted, scores.num_reference)


def test_scores_one_utterance_all_wrong():
    s = score_segmentation(["ab c"], ["a bc"])
    # internal boundaries: gold {2} (ab|c), predicted {1} (a|bc) -> tp 0
    assert _counts(s.boundary) == (0, 1, 1)
    # token spans: gold (0,2) (2,3), predicted (0,1) (1,3) -> none shared
    assert _counts(s.token) == (0, 2, 2)
    # types: gold {ab, c}, predicted {a, bc} -> none shared
    assert _counts(s.lexicon) == (0, 2, 2)
    for part in (s.boundary, s.token, s.lexicon):
        assert (part.precision, part.recall, part.f1) == (0.0, 0.0, 0.0)
    assert s.num_utterances == 1


def test_scores_hand_counted_corpus():
    gold = ["the dog", "a cat sat", "hi"]
    predicted = ["the dog", "ac at sat", "h i"]
    s = score_segmentation(gold, predicted)
    # Boundaries (internal cuts, as positions in the unspaced utterance):
    #   "thedog":  gold {3},    predicted {3}    -> tp 1
    #   "acatsat": gold {1, 4}, predicted {2, 4} -> tp 1 (4)
    #   "hi":      gold {},     predicted {1}    -> tp 0
    # tp = 2, predicted = 1 + 2 + 1 = 4, reference = 1 + 2 + 0 = 3
    assert _counts(s.boundary) == (2, 4, 3)
    assert s.boundary.precision == 0.5
    assert s.boundary.recall == pytest.approx(2 / 3)
    assert s.boundary.f1 == pytest.approx(4 / 7)  # (2/3) / (7/6)
    # Tokens (spans):
    #   "thedog":  (0,3) (3,6) both right              -> 2 of 2, gold 2
    #   "acatsat": ac (0,2), at (2,4) wrong, sat right -> 1 of 3, gold 3
    #   "hi":      h (0,1), i (1,2) wrong              -> 0 of 2, gold 1
    # tp = 3, predicted = 7, reference = 6
    assert _counts(s.token) == (3, 7, 6)
    assert s.token.precision == pytest.approx(3 / 7)
    assert s.token.recall == 0.5
    assert s.token.f1 == pytest.approx(6 / 13)  # (3/7) / (13/14)
    # Lexicon: gold {the, dog, a, cat, sat, hi} (6), predicted {the, dog,
    # ac, at, sat, h, i} (7), common {the, dog, sat} (3)
    assert _counts(s.lexicon) == (3, 7, 6)
    assert s.lexicon.f1 == pytest.approx(6 / 13)


def test_lexicon_counts_types_not_tokens():
    gold = ["ab ab", "ab c"]
    predicted = ["abab", "ab c"]
    s = score_segmentation(gold, predicted)
    # Lexicon: gold types {ab, c} (2), predicted {abab, ab, c} (3), common
    # {ab, c} (2): P = 2/3, R = 1, F1 = 2 (2/3) / (5/3) = 0.8
    assert _counts(s.lexicon) == (2, 3, 2)
    assert s.lexicon.precision == pytest.approx(2 / 3)
    assert s.lexicon.recall == 1.0
    assert s.lexicon.f1 == pytest.approx(0.8)
    # Tokens differ: "abab" as one token is wrong (gold (0,2) (2,4)), "ab c"
    # right: tp 2 of 3 predicted, 4 gold; F1 = (2/3)/(7/6) = 4/7
    assert _counts(s.token) == (2, 3, 4)
    assert s.token.f1 == pytest.approx(4 / 7)


def test_utterance_edges_are_not_boundaries():
    gold = ["ab c", "de", "f g h"]
    whole = ["abc", "de", "fgh"]  # no internal boundary at all
    s = score_segmentation(gold, whole)
    # nothing predicted: precision 0; gold has 1 + 0 + 2 = 3 internal
    # boundaries, none found: recall 0 (the edges count for nothing)
    assert _counts(s.boundary) == (0, 0, 3)
    assert (s.boundary.precision, s.boundary.recall, s.boundary.f1) == (0, 0, 0)
    # tokens: only the one-word gold utterance "de" is right. Precision =
    # one-word utterances / utterances = 1/3; recall = 1 / gold tokens
    # (2 + 1 + 3 = 6)
    assert _counts(s.token) == (1, 3, 6)
    assert s.token.precision == pytest.approx(1 / 3)
    assert s.token.recall == pytest.approx(1 / 6)
    # predicting the gold edges only scores 1.0 on one-word utterances alone
    one_word = score_segmentation(["abc", "d"], ["abc", "d"])
    assert _counts(one_word.boundary) == (0, 0, 0)
    assert one_word.boundary.f1 == 0.0
    assert one_word.token.f1 == 1.0


def test_perfect_segmentation_scores_one():
    gold = ["yu want tu si D6 bUk", "lUk D*z 6 b7 wIT hIz h&t", "&nd 6 dOgi",
            "6"]
    s = score_segmentation(gold, gold)
    for part in (s.boundary, s.token, s.lexicon):
        assert (part.precision, part.recall, part.f1) == (1.0, 1.0, 1.0)
    # internal boundaries: 5 + 6 + 2 + 0; tokens 6 + 7 + 3 + 1;
    # types: 17 tokens, "6" three times -> 15 distinct words
    assert _counts(s.boundary) == (13, 13, 13)
    assert _counts(s.token) == (17, 17, 17)
    assert _counts(s.lexicon) == (15, 15, 15)
    assert s.num_utterances == 4


def test_scores_as_dict_is_json_ready():
    s = score_segmentation(["ab c", "de"], ["a bc", "de"])
    assert isinstance(s, WordDiscoveryScores)
    d = s.as_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["num_utterances"] == 2
    assert d["boundary"] == s.boundary._asdict()
    assert set(d["token"]) == {"precision", "recall", "f1", "true_positives",
                               "num_predicted", "num_reference"}
    assert type(d["lexicon"]["f1"]) is float
    assert type(d["lexicon"]["true_positives"]) is int


def _random_corpus(rng, num_utterances):
    """Gold and predicted segmentations of the same random utterances."""
    gold, predicted = [], []
    for _ in range(num_utterances):
        n = int(rng.integers(1, 12))
        chars = "".join(rng.choice(list("abcd"), n))
        gold.append(segment_utterance(chars, rng.random(n) < 0.4))
        predicted.append(segment_utterance(chars, rng.random(n) < 0.4))
    return gold, predicted


@pytest.mark.parametrize("seed", range(5))
def test_scores_agree_with_boundary_metrics(seed):
    """An independent count: `boundary_metrics` on the concatenated arrays."""
    gold, predicted = _random_corpus(np.random.default_rng(seed), 40)
    g = [utterance_boundaries(u)[1] for u in gold]
    p = [utterance_boundaries(u)[1] for u in predicted]
    s = score_segmentation(gold, predicted)
    # boundaries: the internal values only, utterance after utterance
    ref = boundary_scores(np.concatenate([b[:-1] for b in p]),
                          np.concatenate([b[:-1] for b in g]))
    assert tuple(s.boundary) == pytest.approx(tuple(ref))
    # tokens: every utterance's last value is 1 on both sides, so cutting the
    # concatenation gives the utterances' tokens
    ref = token_scores(np.concatenate(p), np.concatenate(g), align="before")
    assert tuple(s.token) == pytest.approx(tuple(ref))
    # lexicon: sets of strings
    g_types = {w for u in gold for w in u.split()}
    p_types = {w for u in predicted for w in u.split()}
    assert _counts(s.lexicon) == (len(g_types & p_types), len(p_types),
                                  len(g_types))


def test_score_segmentation_errors():
    with pytest.raises(ValueError, match="Line 2 \\(index 1\\).*'de'.*'df'"):
        score_segmentation(["ab c", "de", "x"], ["abc", "df", "y"])
    with pytest.raises(ValueError, match="as many utterances.*2 and 1"):
        score_segmentation(["ab c", "de"], ["abc"])
    with pytest.raises(ValueError, match="`gold` must hold at least one"):
        score_segmentation([], [])
    with pytest.raises(ValueError, match="`predicted` must hold at least one"):
        score_segmentation(["a"], [])
    with pytest.raises(ValueError, match="`gold` must be a sequence.*single string"):
        score_segmentation("ab c", "abc")
    with pytest.raises(ValueError, match="`predicted\\[1\\]`.*double space"):
        score_segmentation(["a b", "cd"], ["a b", "c  d"])
    with pytest.raises(ValueError, match="`gold\\[0\\]`"):
        score_segmentation([" ab"], ["ab"])


# ------------------------------------------------------------ boundary rate

def test_boundary_rate():
    # positions a|b, b|c, d|e: one boundary (b|c) of 3
    assert boundary_rate(["ab c", "de"]) == pytest.approx(1 / 3)
    # single-character utterances have no position: 2 boundaries of 2
    assert boundary_rate(["a", "b c", "d e"]) == 1.0
    assert boundary_rate(("abc",)) == 0.0
    with pytest.raises(ValueError, match="`segmented_utterances`.*no utterance-internal"):
        boundary_rate(["a", "b"])
    with pytest.raises(ValueError, match="`segmented_utterances`"):
        boundary_rate([])
    with pytest.raises(ValueError, match="`segmented_utterances\\[0\\]`"):
        boundary_rate(["a  b"])


# ---------------------------------------------------------------- baselines

def test_random_segmentation_rate_and_extremes():
    rng = np.random.default_rng(123)
    corpus = ["".join(rng.choice(list("abcdef"), 50)) for _ in range(2000)]
    segmented = random_segmentation(corpus, 0.3, seed=7)
    # 2000 * 49 = 98,000 positions: the standard error of the rate is 0.0015
    assert boundary_rate(segmented) == pytest.approx(0.3, abs=0.01)
    assert [s.replace(" ", "") for s in segmented] == corpus
    assert random_segmentation(corpus, 0.3, seed=7) == segmented  # seeded
    assert random_segmentation(corpus, 0.3, seed=8) != segmented
    assert random_segmentation(corpus[:50], 0.0) == corpus[:50]
    assert random_segmentation(corpus[:50], 1.0) == [" ".join(u) for u in corpus[:50]]
    assert random_segmentation(["a", "bc"], 1) == ["a", "b c"]
    assert random_segmentation([], 0.5) == []


def test_random_segmentation_errors():
    for rate in (-0.1, 1.5, float("nan"), "0.5", None, True):
        with pytest.raises(ValueError, match="`rate` must be a number in \\[0, 1\\]"):
            random_segmentation(["abc"], rate)
    with pytest.raises(ValueError, match="`utterances\\[1\\]`.*spaces"):
        random_segmentation(["abc", "a b"], 0.5)
    with pytest.raises(ValueError, match="`utterances\\[0\\]`.*empty"):
        random_segmentation([""], 0.5)
    with pytest.raises(ValueError, match="`utterances`.*single string"):
        random_segmentation("abc", 0.5)


WORDS = ("ba", "di", "ku")


def test_transition_probabilities_recover_words_exactly():
    # All 9 two-word utterances: every word is first 3 times and second 3
    # times. Within words TP = 1 (b, d, k are always followed by a, i, u).
    # Across words: "a" is the first of a pair only in baba, badi, baku,
    # followed by b, d, k once each: TP(a -> b) = 1/3, likewise for i, u.
    train = ["".join(pair) for pair in itertools.product(WORDS, repeat=2)]
    test = ["badiku", "kuba", "dididi", "ba", "aba", "bab"]
    # badiku: TPs [1, 1/3, 1, 1/3, 1] -> minima at pairs 1, 3
    # kuba:   [1, 1/3, 1] -> minimum at pair 1;  dididi: pairs 1, 3
    # ba:     one pair, no neighbour -> no boundary
    # aba:    [1/3, 1]: the first pair has no previous one and is lower
    #         than the next -> a boundary after "a"
    # bab:    [1, 1/3]: the last pair, lower than the previous -> "ba b"
    expected = ["ba di ku", "ku ba", "di di di", "ba", "a ba", "ba b"]
    assert transition_probability_segmentation(train, test) == expected


def test_transition_probabilities_random_order_corpus():
    rng = np.random.default_rng(0)
    train = ["".join(rng.choice(WORDS, int(rng.integers(1, 6))))
             for _ in range(300)]
    gold = [" ".join(rng.choice(WORDS, int(rng.integers(3, 7))))
            for _ in range(50)]
    test = [u.replace(" ", "") for u in gold]
    # within-word TPs are 1, across-word ones about 1/3: every word found
    assert transition_probability_segmentation(train, test) == gold
    assert score_segmentation(gold, transition_probability_segmentation(
        train, test)).token.f1 == 1.0


def test_transition_probabilities_unseen_pairs_and_plateaus():
    train = ["badi", "diba"]  # TP(b->a) = 1, TP(a->d) = 1, TP(i->b) = 1
    # "baxba": TPs [1, 0 (a->x unseen), 0 (x unseen), 1]: a flat dip of two
    # equal values -> no strict minimum, no boundary
    # "dixi": [1, 0 (i->x unseen), 0 (x unseen)]: the minima are equal -> none
    # "bxa": [0 (b->x unseen), 0 (x unseen)] -> none
    # "ab": one pair -> none
    assert transition_probability_segmentation(
        train, ["baxba", "dixi", "bxa", "ab"]) == ["baxba", "dixi", "bxa", "ab"]
    # one unseen pair between seen ones is a strict minimum: "baba": TPs
    # [1, 0 (a->b unseen; "a" is first of a pair only in badi), 1]
    # "badiba": every pair seen in training, all TPs 1 -> no minimum
    assert transition_probability_segmentation(
        train, ["baba", "badiba"]) == ["ba ba", "badiba"]


def _reference_tp_segmentation(train, utterance):
    """Plain-loop reference: TP from str counts, minima by direct comparison."""
    def tp(a, b):
        firsts = sum(u[:-1].count(a) for u in train)
        pairs = sum(1 for u in train for i in range(len(u) - 1)
                    if u[i] == a and u[i + 1] == b)
        return pairs / firsts if firsts else 0.0
    values = [tp(a, b) for a, b in zip(utterance, utterance[1:])]
    out = utterance[0]
    for i in range(len(values)):
        prev_ok = i == 0 or values[i] < values[i - 1]
        next_ok = i == len(values) - 1 or values[i] < values[i + 1]
        cut = len(values) >= 2 and prev_ok and next_ok
        out += (" " if cut else "") + utterance[i + 1]
    return out


@pytest.mark.parametrize("seed", range(3))
def test_transition_probabilities_agree_with_reference(seed):
    rng = np.random.default_rng(seed)
    train = ["".join(rng.choice(list("abcde"), int(rng.integers(1, 9))))
             for _ in range(30)]
    test = ["".join(rng.choice(list("abcdef"), int(rng.integers(1, 12))))
            for _ in range(30)]
    assert transition_probability_segmentation(train, test) == [
        _reference_tp_segmentation(train, u) for u in test]


def test_transition_probability_errors():
    with pytest.raises(ValueError, match="`train_utterances` holds no pair"):
        transition_probability_segmentation([], ["abc"])
    with pytest.raises(ValueError, match="`train_utterances` holds no pair"):
        transition_probability_segmentation(["a", "b"], ["abc"])
    with pytest.raises(ValueError, match="`train_utterances\\[0\\]`.*spaces"):
        transition_probability_segmentation(["ba di"], ["badi"])
    with pytest.raises(ValueError, match="`utterances\\[0\\]`"):
        transition_probability_segmentation(["badi"], ["ba di"])


def test_entropy_segmentation_peak():
    # internal values (the last one, 9.0, is the utterance end: never used)
    e = [2.0, 1.0, 1.0, 3.0, 0.0, 9.0]
    # i=0: no previous, 2 >= 1 -> peak; i=1, 2: not above the previous;
    # i=3: 3 > 1 and 3 >= 0 -> peak; i=4: the last internal, 0 < 3 -> no
    assert entropy_segmentation(["abcdef"], [e]) == ["a bcd ef"]
    # the last value does not matter
    e_low_end = e[:-1] + [-100.0]
    assert entropy_segmentation(["abcdef"], [e_low_end]) == ["a bcd ef"]
    # a plateau reached by a rise: its first value is the peak
    # [1, 3, 3, 2]: i=1 (3 > 1, 3 >= 3) -> peak; i=2 (3 > 3 fails) -> no
    assert entropy_segmentation(["abcde"], [[1, 3, 3, 2, 5]]) == ["ab cde"]
    # the last internal value is a peak when above the previous one
    assert entropy_segmentation(["abcd"], [[0.0, 1.0, 2.0, 0.0]]) == ["abc d"]
    # a plateau at the start was reached by no rise: no boundary, so a
    # constant signal marks none; a strict drop after the first value does
    assert entropy_segmentation(["abcd"], [[3, 3, 1, 0]]) == ["abcd"]
    assert entropy_segmentation(["abcd"], [[2.0] * 4]) == ["abcd"]
    assert entropy_segmentation(["abcd"], [[3, 2, 2, 0]]) == ["a bcd"]
    # one internal value (2 characters) has no neighbour: no boundary;
    # one character: no internal value
    assert entropy_segmentation(["ab", "a"], [[5.0, 0.0], [1.0]]) == ["ab", "a"]


def test_entropy_segmentation_rise():
    e = [2.0, 1.0, 1.0, 3.0, 0.0, 9.0]
    # changes -1, 0, 2, -3 (the end value 9.0 is not used): d = 6 / 4 / 2
    # = 0.75; i=1: -1 no; i=2: 0 no; i=3: 2 > 0.75 yes; i=4: -3 no
    assert entropy_segmentation(["abcdef"], [e], rule="rise") == ["abcd ef"]
    # A rise below d is none: changes 0.1, 0.4, 0.1, 1.4 -> d = 2.0 / 4 / 2
    # = 0.25; only i=2 (0.4) and i=4 (1.4) rise more.
    e = [1.0, 1.1, 1.5, 1.6, 3.0, 0.0]
    assert entropy_segmentation(["abcdef"], [e], rule="rise") == ["abc de f"]
    # d is the whole corpus': a second utterance with the change 1.0 gives
    # d = 3.0 / 5 / 2 = 0.3 (i=2 stays), one with 6.0 gives d = 8.0 / 5 / 2
    # = 0.8 (i=2 goes); their own rise is a boundary either way.
    assert entropy_segmentation(["abcdef", "xyz"], [e, [0.0, 1.0, 0.0]], rule="rise") == [
        "abc de f", "xy z"]
    assert entropy_segmentation(["abcdef", "xyz"], [e, [0.0, 6.0, 0.0]], rule="rise") == [
        "abcde f", "xy z"]
    # steady rise: a boundary after every character but the first and last
    assert entropy_segmentation(["abcde"], [np.arange(5.0)], rule="rise") == [
        "ab c d e"]
    assert entropy_segmentation(["ab"], [[0.0, 1.0]], rule="rise") == ["ab"]


def test_bidirectional_segmentation_by_hand():
    # forward changes -1, 0, 2, -3 -> d = 0.75, rises after i = 1..4:
    # -1.75, -0.75, 1.25, -3.75. backward (reversed order) values 0, 0, 4,
    # 0, 1, (unused): changes 0, 4, -4, 1 -> d' = 1.125, rises at reversed
    # j = 1..4: -1.125, 2.875, -5.125, -0.125, i.e. after forward
    # i = 3, 2, 1, 0. Sums: i=0 -0.125 (forward none), i=1 -1.75 - 5.125,
    # i=2 -0.75 + 2.875 = 2.125 > 0, i=3 1.25 - 1.125 = 0.125 > 0, i=4
    # -3.75 (backward none).
    forward = [2.0, 1.0, 1.0, 3.0, 0.0, 9.0]
    backward = [0.0, 0.0, 4.0, 0.0, 1.0, 7.0]
    assert bidirectional_segmentation(["abcdef"], [forward], [backward]) == ["abc d ef"]
    # Each direction alone.
    assert bidirectional_segmentation(["abcdef"], [forward], [np.zeros(6)]) == ["abcd ef"]
    assert bidirectional_segmentation(["abcdef"], [np.zeros(6)], [backward]) == ["abc def"]
    # With d = 0 the raw changes' sums 1, -5, 4, 2, -3 (below) cut after i = 0, 2, 3.
    assert bidirectional_segmentation(["abcdef"], [forward], [backward],
                                      rise_fraction=0.0) == ["a bc d ef"]


def test_bidirectional_rises_by_hand_and_with_another_fraction():
    # The case above: sums -0.125, -6.875, 2.125, 0.125, -3.75.
    forward = [2.0, 1.0, 1.0, 3.0, 0.0, 9.0]
    backward = [0.0, 0.0, 4.0, 0.0, 1.0, 7.0]
    (summed,) = bidirectional_rises(["abcdef"], [forward], [backward])
    np.testing.assert_allclose(summed, [-0.125, -6.875, 2.125, 0.125, -3.75])
    # With d = 0 the sums are the raw changes: forward -1, 0, 2, -3 after
    # i = 1..4, backward 0, 4, -4, 1 at reversed j = 1..4 (i = 3, 2, 1, 0).
    (changes,) = bidirectional_rises(["abcdef"], [forward], [backward], rise_fraction=0.0)
    np.testing.assert_allclose(changes, [1.0, -5.0, 4.0, 2.0, -3.0])
    with pytest.raises(ValueError, match="`rise_fraction` must be a finite number >= 0"):
        bidirectional_rises(["abcdef"], [forward], [backward], rise_fraction=-0.5)
    with pytest.raises(ValueError, match="`rise_fraction` must be a finite number >= 0"):
        bidirectional_rises(["abcdef"], [forward], [backward], rise_fraction="half")


def test_bidirectional_segmentation_without_a_backward_rise_is_the_rise_rule():
    rng = np.random.default_rng(3)
    utterances = ["abcdefg", "hij", "klmnopqr", "s"]
    forward = [rng.normal(size=len(u)) for u in utterances]
    flat = [np.ones(len(u)) for u in utterances]
    assert bidirectional_segmentation(utterances, forward, flat) == entropy_segmentation(
        utterances, forward, rule="rise")
    # ... and the backward rule alone is the rise rule on the reversed text.
    mirrored = entropy_segmentation([u[::-1] for u in utterances], forward, rule="rise")
    assert bidirectional_segmentation(utterances, flat, forward) == [
        " ".join(word[::-1] for word in line.split()[::-1]) for line in mirrored]


def test_bidirectional_segmentation_names_the_bad_argument():
    with pytest.raises(ValueError, match="`backward` must hold one array per utterance"):
        bidirectional_segmentation(["ab", "cd"], [[0.0, 1.0], [0.0, 1.0]], [[0.0, 1.0]])
    with pytest.raises(ValueError, match=r"`backward\[0\]` must be a 1-D array"):
        bidirectional_segmentation(["abc"], [[0.0, 1.0, 2.0]], [[0.0, 1.0]])
    with pytest.raises(ValueError, match=r"`forward\[0\]` must hold finite values"):
        bidirectional_segmentation(["ab"], [[0.0, np.nan]], [[0.0, 1.0]])


def test_entropy_segmentation_recovers_oracle_peaks():
    # An oracle whose uncertainty is 1 after each word's end and 0 inside
    # recovers every word of two or more characters.
    gold = ["yu want tu si D6 bUk", "&nd D* dOgi"]
    chars, entropies = zip(*[utterance_boundaries(u) for u in gold])
    entropies = [b.astype(float) for b in entropies]
    assert entropy_segmentation(chars, entropies) == gold
    assert entropy_segmentation(chars, entropies, rule="rise") == gold


def test_entropy_segmentation_errors():
    with pytest.raises(ValueError, match="`rule` must be 'peak' or 'rise'.*'dip'"):
        entropy_segmentation(["ab"], [[0, 1]], rule="dip")
    with pytest.raises(ValueError, match="`entropies` must hold one array per utterance"):
        entropy_segmentation(["ab", "cd"], [[0, 1]])
    with pytest.raises(ValueError, match="`entropies\\[1\\]`.*shape \\(2,\\)"):
        entropy_segmentation(["ab", "cd"], [[0, 1], [0, 1, 2]])
    with pytest.raises(ValueError, match="`entropies\\[0\\]`"):
        entropy_segmentation(["ab"], [[[0, 1]]])
    with pytest.raises(ValueError, match="`entropies\\[0\\]` must hold finite"):
        entropy_segmentation(["abc"], [[0, math.nan, 1]])
    with pytest.raises(ValueError, match="`entropies\\[0\\]`"):
        entropy_segmentation(["ab"], [["x", "y"]])
    with pytest.raises(ValueError, match="`utterances\\[0\\]`"):
        entropy_segmentation(["a b"], [[0, 1, 2]])


# ------------------------------------------------------------ Brent corpus

def _read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


@pytest.mark.skipif(not BRENT.is_dir(), reason=f"no Brent corpus at {BRENT}")
def test_brent_phoneme_baselines():
    train = _read_lines(BRENT / "phono_tr.txt")
    gold = _read_lines(BRENT / "phono_te.txt")
    train_chars = [utterance_boundaries(u)[0] for u in train]
    test_chars = [utterance_boundaries(u)[0] for u in gold]
    tp = score_segmentation(
        gold, transition_probability_segmentation(train_chars, test_chars))
    rate = boundary_rate(train)  # the gold rate, from the training split
    rand = score_segmentation(gold, random_segmentation(test_chars, rate))
    print(f"Brent phonemes, test: TP {tp.as_dict()}; random at rate "
          f"{rate:.4f} {rand.as_dict()}")
    assert tp.num_utterances == len(gold) == 978
    assert 0.55 < tp.boundary.f1 < 0.70   # measured 0.615
    assert 0.2 < rand.boundary.f1 < 0.35  # measured 0.272 (~ the rate)
    assert tp.token.f1 > rand.token.f1
    assert tp.lexicon.f1 > rand.lexicon.f1
