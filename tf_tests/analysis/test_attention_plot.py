"""Tests of hmkeras.analysis.attention_plot."""

import numpy as np
import pytest

from hmkeras.analysis.attention_plot import averaging_matrix
from hmkeras.analysis.attention_plot import memory_to_matrix
from hmkeras.analysis.attention_plot import plot_attention
from hmkeras.analysis.attention_plot import plot_word_lm_attention
from hmkeras.models.word_language_model import WordLanguageModel


def test_memory_to_matrix_places_slots_on_earlier_steps():
    rng = np.random.default_rng(0)
    steps, size = 7, 3
    slots = rng.random((steps, size))
    matrix = memory_to_matrix(slots)
    for i in range(steps):
        for j in range(steps):
            lag = i - j
            expected = slots[i, size - lag] if 1 <= lag <= size else 0.0
            assert matrix[i, j] == expected


def test_averaging_matrix_is_the_mean_with_a_zero_h0():
    matrix = averaging_matrix(5)
    # Row i: i earlier states at 1/(i+1) each, h_0 takes the last 1/(i+1).
    np.testing.assert_allclose(matrix.sum(1), [i / (i + 1) for i in range(5)])
    assert np.all(np.triu(matrix) == 0)


def test_plot_writes_a_png_and_checks_shapes(tmp_path):
    path = str(tmp_path / "a.png")
    assert plot_attention(path, ["<eos>", "a", "b"], averaging_matrix(3), title="t") == path
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="square"):
        plot_attention(path, ["a"], np.zeros((1, 2)))
    with pytest.raises(ValueError, match="tokens"):
        plot_attention(path, ["a"], np.zeros((2, 2)))
    with pytest.raises(ValueError, match="slot_weights"):
        memory_to_matrix(np.zeros(3))


def test_plot_of_a_word_lm_reads_its_wrapper(tmp_path):
    tokens, ids = ["<eos>", "a", "b", "c"], [1, 3, 4, 5]
    for wrapper in ("average", "attention"):
        lm = WordLanguageModel(vocab_size=6, units=4, num_layers=1, wrapper=wrapper,
                               memory_size=2)
        path = str(tmp_path / f"{wrapper}.png")
        assert plot_word_lm_attention(path, lm, tokens, ids) == path
        with open(path, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="wrapper='none'"):
        plot_word_lm_attention(str(tmp_path / "none.png"),
                               WordLanguageModel(vocab_size=6, units=4, num_layers=1),
                               tokens, ids)
