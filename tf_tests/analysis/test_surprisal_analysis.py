"""Tests for hmkeras.analysis.surprisal_analysis (Krause et al. Fig. 3) and hmkeras.analysis.bits."""

import math

import matplotlib.image
import numpy as np
import pytest

from hmkeras.analysis import bits
from hmkeras.analysis.surprisal_analysis import plot_surprisal_recovery
from hmkeras.analysis.surprisal_analysis import surprisal_recovery


def _constructed_losses():
    """40 characters, 4 candidate surprises; fraction 0.05 takes 2 of them.

    t=3:  A 10,  B 0.1  (A's surprise; mean 5.05)
    t=12: A 6,   B 6    (joint; mean 6)
    t=22: A 5.5, B 5.5  (joint; mean 5.5)
    t=32: A 0.1, B 10   (B's surprise; mean 5.05)
    """
    a = np.full(40, 0.5)
    b = np.full(40, 0.5)
    a[3], b[3] = 10.0, 0.1
    a[12], b[12] = 6.0, 6.0
    a[22], b[22] = 5.5, 5.5
    a[32], b[32] = 0.1, 10.0
    a[13:17], b[13:17] = [4, 3, 2, 1], [5, 4, 3, 2]
    a[23:27], b[23:27] = [2, 1, 1, 1], [3, 3, 2, 2]
    return a, b


def test_mean_reference_follows_krause():
    a, b = _constructed_losses()
    r = surprisal_recovery(a, b, fraction=0.05)
    assert r.positions[:, 0].tolist() == [12, 22]
    np.testing.assert_array_equal(r.offsets, [0, 1, 2, 3, 4])
    np.testing.assert_allclose(r.loss_a, [5.75, 3.0, 2.0, 1.5, 1.0])
    np.testing.assert_allclose(r.loss_b, [5.75, 4.0, 3.5, 2.5, 2.0])
    np.testing.assert_array_equal(r.counts, [2, 2, 2, 2, 2])
    assert r.overall_a == pytest.approx(a.mean())
    assert r.overall_b == pytest.approx(b.mean())


def test_reference_model_is_selectable():
    a, b = _constructed_losses()
    by_a = surprisal_recovery(a, b, fraction=0.05, reference="a")
    assert by_a.positions[:, 0].tolist() == [3, 12]
    np.testing.assert_allclose(by_a.loss_a, [8.0, 2.25, 1.75, 1.25, 0.75])
    by_b = surprisal_recovery(a, b, fraction=0.05, reference="b")
    assert by_b.positions[:, 0].tolist() == [12, 32]
    np.testing.assert_allclose(by_b.loss_b, [8.0, 2.75, 2.25, 1.75, 1.25])
    custom = np.zeros(40)
    custom[[5, 30]] = 1.0
    r = surprisal_recovery(a, b, fraction=0.05, reference=custom)
    assert r.positions[:, 0].tolist() == [5, 30]
    with pytest.raises(ValueError, match="reference"):
        surprisal_recovery(a, b, reference="c")
    with pytest.raises(ValueError, match="reference"):
        surprisal_recovery(a, b, reference=np.zeros(39))


def test_nats_are_converted_to_bits():
    a, b = _constructed_losses()
    in_bits = surprisal_recovery(a, b, fraction=0.05)
    in_nats = surprisal_recovery(a * math.log(2), b * math.log(2),
                                 fraction=0.05, unit="nats")
    np.testing.assert_allclose(in_nats.loss_a, in_bits.loss_a)
    np.testing.assert_allclose(in_nats.loss_b, in_bits.loss_b)
    assert in_nats.overall_a == pytest.approx(in_bits.overall_a)
    with pytest.raises(ValueError, match="unit"):
        surprisal_recovery(a, b, unit="bans")


def test_fraction_ties_and_sequence_end():
    losses = np.array([1.0, 5.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 5.0])
    # 10% of 10 = 1 character; the tie at 1 and 9 goes to the earlier one
    r = surprisal_recovery(losses, losses)
    assert r.positions[:, 0].tolist() == [1]
    # 20%: both; position 9 has no successor, so offsets >= 1 use only t=1
    r = surprisal_recovery(losses, 2 * losses, fraction=0.2, max_offset=2)
    np.testing.assert_array_equal(r.counts, [2, 1, 1])
    np.testing.assert_allclose(r.loss_a, [5.0, 1.0, 1.0])
    np.testing.assert_allclose(r.loss_b, [10.0, 2.0, 2.0])


def test_rows_are_independent_sequences():
    a = np.array([[0.0, 0.0, 0.0, 9.0], [1.0, 2.0, 3.0, 4.0]])
    r = surprisal_recovery(a, a, fraction=1 / 8, max_offset=1)
    assert r.positions.tolist() == [[0, 3]]
    assert r.counts.tolist() == [1, 0]  # row 1 is not "after" row 0
    assert r.loss_a[0] == 9.0 and math.isnan(r.loss_a[1])


def test_bad_inputs_raise():
    a = np.ones(10)
    with pytest.raises(ValueError, match="same shape"):
        surprisal_recovery(a, np.ones(9))
    with pytest.raises(ValueError, match="fraction"):
        surprisal_recovery(a, a, fraction=0.0)
    with pytest.raises(ValueError, match="max_offset"):
        surprisal_recovery(a, a, max_offset=-1)
    with pytest.raises(ValueError, match="shape"):
        surprisal_recovery(np.ones((2, 2, 2)), np.ones((2, 2, 2)))


def test_plot_writes_png(tmp_path):
    a, b = _constructed_losses()
    r = surprisal_recovery(a, b, fraction=0.05)
    path = plot_surprisal_recovery(str(tmp_path / "fig3.png"), r,
                                   labels=("mLSTM", "LSTM"), title="Fig. 3",
                                   dpi=100)
    image = matplotlib.image.imread(path)
    assert image.shape[:2] == (360, 500) and image.shape[2] in (3, 4)
    with pytest.raises(ValueError, match="labels"):
        plot_surprisal_recovery(str(tmp_path / "x.png"), r, labels=("a",))


# ------------------------------------------------------------------- bits.py

def test_unit_conversions():
    assert bits.nats_to_bits(math.log(2.0)) == pytest.approx(1.0)
    assert bits.bits_to_nats(1.0) == pytest.approx(math.log(2.0))
    np.testing.assert_allclose(bits.nats_to_bits(np.log([2.0, 4.0, 8.0])),
                               [1.0, 2.0, 3.0])
    assert bits.bits_per_character(np.log([2.0, 8.0])) == pytest.approx(2.0)
    assert bits.bits_per_character([1.0, 2.0], unit="bits") == 1.5
    assert bits.perplexity_to_bits(1024.0) == pytest.approx(10.0)
    with pytest.raises(ValueError, match="unit"):
        bits.bits_per_character([1.0], unit="bytes")


def test_krause_eq23_wikitext2():
    """1.2649 bits/byte on WikiText-2 test is a word perplexity of 88.8."""
    assert bits.WIKITEXT2_TEST_WORDS == 245_569
    assert bits.WIKITEXT2_TEST_BYTES == 1_256_449
    bpw = bits.bits_per_word(1.2649, bits.WIKITEXT2_TEST_BYTES,
                             bits.WIKITEXT2_TEST_WORDS)
    assert bpw == pytest.approx(1.2649 * 1_256_449 / 245_569)
    assert 1_256_449 / 245_569 == pytest.approx(5.1165, abs=1e-4)  # bytes/word
    ppl = bits.word_perplexity(1.2649, bits.WIKITEXT2_TEST_BYTES,
                               bits.WIKITEXT2_TEST_WORDS)
    assert round(ppl, 1) == 88.8
    # exact small case: 2 bits/char, 10 chars, 4 words -> 5 bits/word -> 32
    assert bits.bits_per_word(2.0, 10, 4) == 5.0
    assert bits.word_perplexity(2.0, 10, 4) == 32.0
    with pytest.raises(ValueError, match="num_words"):
        bits.bits_per_word(1.0, 10, 0)
