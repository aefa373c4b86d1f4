"""Tests for hmkeras.analysis.boundary_metrics: z-rates, z-ratio, boundary
P/R/F1, word-token P/R/F1."""

import math
import re

import numpy as np
import pytest

from hmkeras.analysis.boundary_metrics import aligned_boundary_scores
from hmkeras.analysis.boundary_metrics import before_next_unit
from hmkeras.analysis.boundary_metrics import boundary_scores
from hmkeras.analysis.boundary_metrics import layer_boundary_scores
from hmkeras.analysis.boundary_metrics import reference_boundaries
from hmkeras.analysis.boundary_metrics import split_hierarchical_outputs
from hmkeras.analysis.boundary_metrics import token_scores
from hmkeras.analysis.boundary_metrics import z_rates
from hmkeras.analysis.boundary_metrics import z_ratio


# ----------------------------------------------------------------- splitting

def test_split_hierarchical_outputs():
    y = np.arange(2 * 3 * 8, dtype=float).reshape(2, 3, 8)
    hiddens, z = split_hierarchical_outputs(y, [3, 2, 1])
    assert [h.shape for h in hiddens] == [(2, 3, 3), (2, 3, 2), (2, 3, 1)]
    assert z.shape == (2, 3, 2)
    np.testing.assert_array_equal(np.concatenate(hiddens + [z], -1), y)
    np.testing.assert_array_equal(z[0, 0], [6.0, 7.0])
    with pytest.raises(ValueError, match="8"):
        split_hierarchical_outputs(np.zeros((3, 7)), [3, 2, 1])
    with pytest.raises(ValueError, match="layer_sizes"):
        split_hierarchical_outputs(np.zeros((3, 7)), [])


# ------------------------------------------------------------ z-rates / ratio

def test_z_rates_hand_computed():
    z = np.array([[1, 0], [1, 1], [0, 0], [1, 0], [0, 0], [1, 1], [0, 0],
                  [1, 0]], dtype=float)  # z^1: 5 of 8, z^2: 2 of 8
    np.testing.assert_allclose(z_rates(z), [5 / 8, 2 / 8])
    assert z_ratio(z) == pytest.approx(2.5)
    # batched: rates over all steps of all sequences
    batched = np.stack([z, np.ones_like(z)])
    np.testing.assert_allclose(z_rates(batched), [13 / 16, 10 / 16])


def test_z_rates_with_mask():
    z = np.array([[[1, 1], [0, 0], [1, 1]]], dtype=float)
    mask = np.array([[True, True, False]])  # last step is padding
    np.testing.assert_allclose(z_rates(z, mask), [0.5, 0.5])
    with pytest.raises(ValueError, match="mask"):
        z_rates(z, mask[:, :2])
    with pytest.raises(ValueError, match="mask"):
        z_rates(z, np.zeros_like(mask))


def test_z_ratio_reproduces_kadar_table2():
    """z-ratio = rate(z^1) / rate(z^2): Kadar et al. Table 2, rows 4 and 12."""
    t = 100
    z = np.zeros((t, 2))
    z[:42, 0] = 1.0   # rate 0.42
    z[:9, 1] = 1.0    # rate 0.09
    assert round(z_ratio(z), 2) == 4.67
    z = np.zeros((t, 2))
    z[:, 1] = 1.0     # HMRNN row: z^1 = 0.0, z^2 = 1.0 -> 0.0
    assert z_ratio(z) == 0.0


def test_z_ratio_edge_cases_and_layers():
    z = np.array([[1, 0, 1], [1, 0, 0]], dtype=float)
    assert z_ratio(z) == math.inf
    assert math.isnan(z_ratio(np.zeros((3, 2))))
    assert z_ratio(z, lower=0, upper=2) == 2.0
    with pytest.raises(ValueError, match="upper"):
        z_ratio(np.zeros((3, 1)))
    with pytest.raises(ValueError, match="shape"):
        z_rates(np.zeros(5))


# ------------------------------------------------------ reference boundaries

def test_reference_boundaries_alignments():
    text = "ab cd  e"
    np.testing.assert_array_equal(reference_boundaries(text),
                                  [0, 0, 1, 0, 0, 1, 1, 0])
    np.testing.assert_array_equal(reference_boundaries(text, align="before"),
                                  [0, 1, 0, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(reference_boundaries(text, align="after"),
                                  [0, 0, 0, 1, 0, 0, 0, 1])


def test_reference_boundaries_ptb_underscore():
    text = "the_cat_"
    np.testing.assert_array_equal(reference_boundaries(text, separators="_"),
                                  [0, 0, 0, 1, 0, 0, 0, 1])
    # with the default whitespace separators '_' is an ordinary character
    assert reference_boundaries(text).sum() == 0
    with pytest.raises(ValueError, match="align"):
        reference_boundaries(text, align="middle")


# --------------------------------------------------------- precision / recall

def test_boundary_scores_exact():
    ref = reference_boundaries("ab cd ef gh")  # boundaries at 2, 5, 8
    pred = np.zeros(11)
    pred[[2, 4, 8, 10]] = 1.0                  # hits 2 and 8
    s = boundary_scores(pred, ref)
    assert (s.true_positives, s.num_predicted, s.num_reference) == (2, 4, 3)
    assert s.precision == 0.5
    assert s.recall == pytest.approx(2 / 3)
    assert s.f1 == pytest.approx(4 / 7)  # 2PR/(P+R) = (2/3)/(7/6)


def test_boundary_scores_tolerance_is_one_to_one():
    ref = np.array([0, 0, 1, 0, 0, 0, 0, 0])
    pred = np.array([0, 1, 0, 1, 0, 0, 0, 1])
    assert boundary_scores(pred, ref).true_positives == 0
    s = boundary_scores(pred, ref, tolerance=1)
    # both 1 and 3 are within 1 of 2, but only one of them may claim it
    assert (s.true_positives, s.precision, s.recall) == (1, 1 / 3, 1.0)
    assert s.f1 == pytest.approx(0.5)
    # greedy matching still finds the maximum matching
    ref = np.array([1, 0, 1, 0, 0])
    pred = np.array([0, 1, 0, 1, 0])
    assert boundary_scores(pred, ref, tolerance=1).true_positives == 2


def test_boundary_scores_rows_and_threshold():
    ref = np.array([[0, 0, 1], [1, 0, 0]])
    pred = np.array([[0.1, 0.2, 0.9], [0.0, 0.7, 0.0]])  # soft values
    s = boundary_scores(pred, ref)
    assert (s.true_positives, s.num_predicted, s.num_reference) == (1, 2, 2)
    # tolerance never matches across rows: row 0's last step is next to
    # nothing in row 1
    s = boundary_scores(np.array([[0, 0, 0], [0, 0, 1]]),
                        np.array([[0, 0, 0], [1, 0, 0]]), tolerance=1)
    assert s.true_positives == 0


def test_boundary_scores_degenerate_and_errors():
    s = boundary_scores(np.zeros(4), np.zeros(4))
    assert (s.precision, s.recall, s.f1) == (0.0, 0.0, 0.0)
    perfect = boundary_scores([0, 1, 0, 1], [0, 1, 0, 1])
    assert (perfect.precision, perfect.recall, perfect.f1) == (1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="same shape"):
        boundary_scores(np.zeros(4), np.zeros(5))
    with pytest.raises(ValueError, match="tolerance"):
        boundary_scores(np.zeros(4), np.zeros(4), tolerance=-1)
    with pytest.raises(ValueError, match="shape"):
        boundary_scores(np.zeros((2, 2, 2)), np.zeros((2, 2, 2)))


# ------------------------------------------------------- aligned boundaries

TEXT = "the cat sat on a mat "   # 6 words, each followed by one space


def _word_references(text):
    return {"separator": reference_boundaries(text),
            "last_char": reference_boundaries(text, align="before")}


def test_aligned_scores_choose_last_char_segmentation():
    refs = _word_references(TEXT)
    pred = np.array([c != " " and n == " " for c, n in zip(TEXT, TEXT[1:] + "x")])
    aligned = aligned_boundary_scores(pred.astype(float), refs)
    assert aligned.best == "last_char"
    assert aligned.headline == aligned.scores["last_char"]
    assert (aligned.headline.f1, aligned.headline.num_reference) == (1.0, 6)
    assert aligned.scores["separator"].f1 == 0.0
    # one step off is forgiven by tolerance 1 under either alignment
    loose = aligned_boundary_scores(pred, refs, tolerance=1)
    assert loose.scores["separator"].f1 == loose.scores["last_char"].f1 == 1.0


def test_aligned_scores_choose_separator_segmentation():
    refs = _word_references(TEXT)
    pred = np.array([c == " " for c in TEXT], dtype=int)
    pred[3] = 0                          # miss the first word
    aligned = aligned_boundary_scores(pred, refs)
    assert aligned.best == "separator"
    assert (aligned.headline.precision, aligned.headline.recall) == (1.0, 5 / 6)
    assert aligned.scores["last_char"].true_positives == 0
    d = aligned.as_dict()
    assert d["alignment"] == "separator" and d["f1"] == aligned.headline.f1
    assert set(d["by_alignment"]) == {"separator", "last_char"}
    assert d["by_alignment"]["last_char"] == aligned.scores["last_char"]._asdict()


def test_aligned_scores_ties_keep_the_first_alignment():
    refs = {"b": np.array([0, 1, 0]), "a": np.array([0, 0, 1])}
    assert aligned_boundary_scores(np.zeros(3), refs).best == "b"


def test_aligned_scores_errors():
    with pytest.raises(ValueError, match="`references` must be a non-empty dict"):
        aligned_boundary_scores(np.zeros(4), {})
    with pytest.raises(ValueError, match="`references` must be a non-empty dict"):
        aligned_boundary_scores(np.zeros(4), np.zeros(4))
    with pytest.raises(ValueError, match=r"references\['last_char'\] of shape \(5,\)"):
        aligned_boundary_scores(np.zeros(4), {"separator": np.zeros(4),
                                              "last_char": np.zeros(5)})


def test_layer_boundary_scores():
    refs = _word_references(TEXT)
    z = np.stack([refs["last_char"], refs["separator"]], axis=-1)
    layers = layer_boundary_scores(z, refs)
    assert [s.best for s in layers] == ["last_char", "separator"]
    assert [s.headline.f1 for s in layers] == [1.0, 1.0]
    with pytest.raises(ValueError, match=r"\(T, L-1\)"):
        layer_boundary_scores(z[:, 0], refs)


# ------------------------------------------------------------- word tokens

def _boundaries(length, positions):
    z = np.zeros(length)
    z[list(positions)] = 1.0
    return z


def _counts(scores):
    return scores.true_positives, scores.num_predicted, scores.num_reference


WORDS = "ab cd ef"   # words [0, 2), [3, 5), [6, 8); spaces at 2 and 5


@pytest.mark.parametrize(
    "positions, align, counts, prf",
    [
        # perfect: on the separators, on the last letters, on the first
        # letters of the next words with align="after"
        ((2, 5), "separator", (3, 3, 3), (1.0, 1.0, 1.0)),
        ((1, 4), "separator", (3, 3, 3), (1.0, 1.0, 1.0)),
        ((1, 4), "before", (3, 3, 3), (1.0, 1.0, 1.0)),
        ((3, 6), "after", (3, 3, 3), (1.0, 1.0, 1.0)),
        # shifted by one: "ab c|d e|f" and "a|b c|d ef": no word right
        ((3, 6), "separator", (0, 3, 3), (0.0, 0.0, 0.0)),
        ((0, 3), "separator", (0, 3, 3), (0.0, 0.0, 0.0)),
        ((1, 4), "after", (0, 3, 3), (0.0, 0.0, 0.0)),
        # "after" on the separators cuts before them: "ab| cd| ef"
        ((2, 5), "after", (3, 3, 3), (1.0, 1.0, 1.0)),
        # over-segmented: "a|b |cd |ef": cd and ef right
        ((0, 2, 5), "separator", (2, 4, 3), (0.5, 2 / 3, 4 / 7)),
        # every character a boundary: single letters, no word right
        (range(8), "separator", (0, 6, 3), (0.0, 0.0, 0.0)),
        # both the last letter and the separator: "ab| |cd| |ef": the
        # separator-only segments are no tokens
        ((1, 2, 4, 5), "separator", (3, 3, 3), (1.0, 1.0, 1.0)),
        # under-segmented: "ab |cd ef"
        ((2,), "separator", (1, 2, 3), (0.5, 1 / 3, 0.4)),
        # no boundary: one token "ab cd ef", wrong
        ((), "separator", (0, 1, 3), (0.0, 0.0, 0.0)),
    ],
)
def test_token_scores_hand_computed(positions, align, counts, prf):
    s = token_scores(_boundaries(len(WORDS), positions), WORDS, align=align)
    assert _counts(s) == counts
    np.testing.assert_allclose((s.precision, s.recall, s.f1), prf)


def test_token_scores_separators_and_text_edges():
    # Runs of separators: a cut anywhere in (or at either edge of) the run
    # between two words gives the same two words.
    for position in (1, 2, 3):
        s = token_scores(_boundaries(6, [position]), "ab  cd")
        assert _counts(s) == (2, 2, 2), position
    # Separators at the edges of the text belong to no token.
    assert _counts(token_scores(np.zeros(4), " ab ")) == (1, 1, 1)
    # A word cut by the end of the text is a word.
    assert _counts(token_scores(_boundaries(5, [2]), "ab cd")) == (2, 2, 2)
    # PTB's "_".
    s = token_scores(_boundaries(7, [2, 4]), "ab_c_de", separators="_")
    assert _counts(s) == (3, 3, 3)
    assert _counts(token_scores(_boundaries(7, [2, 4]), "ab_c_de")) == (0, 3, 1)


def test_token_scores_empty_cases():
    for text in ("", "   "):
        s = token_scores(np.zeros(len(text)), text)
        assert tuple(s) == (0.0, 0.0, 0.0, 0, 0, 0)
    # one word and no boundary: right
    assert tuple(token_scores(np.zeros(3), "abc")) == (1.0, 1.0, 1.0, 1, 1, 1)


def test_token_scores_rows_threshold_and_character_lists():
    pred = np.array([[0.1, 0.2, 0.9, 0.0, 0.0],    # "ab |cd": both right
                     [0.0, 0.7, 0.0, 0.0, 0.0]])   # "xy| zw": both right
    s = token_scores(pred, ["ab cd", "xy zw"])
    assert _counts(s) == (4, 4, 4)
    s = token_scores(pred, ["ab cd", "xyzww"])     # second row: one word
    assert _counts(s) == (2, 4, 3)
    assert _counts(token_scores(pred, ["ab cd", "xyzww"], threshold=0.8)) == (3, 3, 3)
    assert token_scores([False, False, True, False, False], list("ab cd")).f1 == 1.0


def test_token_scores_against_reference_boundaries():
    # Phrases, which no separator marks: "abc|de|f" on the last letters.
    reference = _boundaries(6, [2, 4])
    assert _counts(token_scores(_boundaries(6, [2, 4]), reference)) == (3, 3, 3)
    assert _counts(token_scores(_boundaries(6, [2]), reference)) == (1, 2, 3)
    # Every character counts: on the separator is not on the last letter.
    text = "ab cd"
    by_separator = reference_boundaries(text)
    assert token_scores(_boundaries(5, [2]), by_separator).f1 == 1.0
    assert _counts(token_scores(_boundaries(5, [1]), by_separator)) == (0, 2, 2)
    # "after": the boundary starts a segment, "ab |cd" against "ab| cd".
    after = reference_boundaries(text, align="after")
    assert token_scores(after, after, align="after").f1 == 1.0
    assert _counts(token_scores(after, by_separator, align="after")) == (0, 2, 2)


def _brute_force_tokens(pred, text, separators, align):
    """Token counts by walking the characters: segments between the cuts,
    stripped of separators, compared as (start, end) spans."""
    cuts = [t if align == "after" else t + 1 for t, b in enumerate(pred) if b]
    edges = [0] + cuts + [len(text)]
    predicted = []
    for start, end in zip(edges[:-1], edges[1:]):
        while start < end and text[start] in separators:
            start += 1
        while end > start and text[end - 1] in separators:
            end -= 1
        if start < end:
            predicted.append((start, end))
    pattern = "[^" + re.escape(separators) + "]+"
    words = [(m.start(), m.end()) for m in re.finditer(pattern, text)]
    return sum(span in words for span in predicted), len(predicted), len(words)


def _brute_force_segments(pred, ref, align):
    def spans(z):
        cuts = [t if align == "after" else t + 1 for t, b in enumerate(z) if b]
        edges = sorted({0, len(z), *cuts})
        return list(zip(edges[:-1], edges[1:]))
    predicted, reference = spans(pred), spans(ref)
    return sum(s in reference for s in predicted), len(predicted), len(reference)


@pytest.mark.parametrize("align", ["separator", "before", "after"])
def test_token_scores_match_a_brute_force_count(align):
    rng = np.random.default_rng(7)
    for trial in range(300):
        length = int(rng.integers(0, 25))
        text = "".join(rng.choice(list("ab _."), size=length, p=[0.35, 0.35, 0.1, 0.1, 0.1]))
        separators = " _" if trial % 2 else " "
        pred = rng.random(length) < rng.choice([0.05, 0.2, 0.5, 0.9])
        expected = _brute_force_tokens(pred, text, separators, align)
        s = token_scores(pred, text, separators=separators, align=align)
        assert _counts(s) == expected, (text, pred.astype(int), align)
        tp, n_pred, n_ref = expected
        assert s.precision == (tp / n_pred if n_pred else 0.0)
        assert s.recall == (tp / n_ref if n_ref else 0.0)
        ref = rng.random(length) < 0.3
        assert _counts(token_scores(pred, ref, align=align)) == (
            _brute_force_segments(pred, ref, align))


def test_token_scores_errors():
    with pytest.raises(ValueError, match=r"`align` must be 'separator', 'before' or 'after'"):
        token_scores(np.zeros(3), "abc", align="last_char")
    with pytest.raises(ValueError, match=r"`reference`.*T = 4"):
        token_scores(np.zeros(4), "abc")
    with pytest.raises(ValueError, match=r"`reference`.*\(4,\)"):
        token_scores(np.zeros(4), np.zeros(3))
    with pytest.raises(ValueError, match="`predicted`"):
        token_scores(np.zeros((2, 2, 2)), "ab")
    with pytest.raises(ValueError, match="`separators`"):
        token_scores(np.zeros(3), "abc", separators="")
    with pytest.raises(ValueError, match=r"`reference`.*2 strings"):
        token_scores(np.zeros((2, 3)), ["abc"] * 3)
    with pytest.raises(ValueError, match="single characters"):
        token_scores(np.zeros(2), ["ab", "c"])


def test_before_next_unit_moves_ends_past_their_separators():
    text = "ab, cd e.\nf"
    last = [0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 1]
    moved = before_next_unit(last, text, " ,.\n")
    # "ab" -> the space of ", "; "cd" -> its space; "e" -> the newline;
    # "f" ends the text: nothing follows, no boundary.
    assert moved.tolist() == [0, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0]
    # With one separator character the last separator is the separator.
    words = "the cat sat"
    np.testing.assert_array_equal(
        before_next_unit(
            reference_boundaries(words, align="before"), words),
        reference_boundaries(words, align="separator"))
    with pytest.raises(ValueError, match="last_characters"):
        before_next_unit([0, 1], text)
