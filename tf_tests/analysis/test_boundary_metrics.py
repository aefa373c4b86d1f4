"""Tests for hmkeras.analysis.boundary_metrics: z-rates, z-ratio, boundary P/R/F1."""

import math

import numpy as np
import pytest

from hmkeras.analysis.boundary_metrics import aligned_boundary_scores
from hmkeras.analysis.boundary_metrics import boundary_scores
from hmkeras.analysis.boundary_metrics import layer_boundary_scores
from hmkeras.analysis.boundary_metrics import reference_boundaries
from hmkeras.analysis.boundary_metrics import split_hierarchical_outputs
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
