"""Tests for hmkeras.analysis.segment_marks: a text with its segments marked."""

import numpy as np
import pytest

import hmkeras
from hmkeras.analysis.segment_marks import mark_segments


def _z(length, *layers):
    """`(length, len(layers))` 0/1 boundaries firing at the given steps."""
    z = np.zeros((length, len(layers)), int)
    for column, steps in enumerate(layers):
        z[list(steps), column] = 1
    return z


def test_marker_after_the_character_whose_step_fired():
    text = "the cat sat"
    assert mark_segments(text, _z(11, [3, 7], [])) == "the |cat |sat"
    assert mark_segments(text, _z(11, [2, 6], [])) == "the| cat| sat"
    # The first and the last step.
    assert mark_segments(text, _z(11, [0, 10], [])) == "t|he cat sat|"
    # No boundary: the text unchanged.
    assert mark_segments(text, _z(11, [], [])) == text


def test_the_highest_layer_that_fired_gives_the_marker():
    text = "ab cd ef"
    z = _z(8, [2, 5, 7], [5], [7])
    assert mark_segments(text, z, markers=("1", "2", "3")) == "ab 1cd 2ef3"
    # z^2 alone (z^1 silent) is marked too.
    assert mark_segments(text, _z(8, [], [2]), markers=("1", "2")) == "ab 2cd ef"
    # Default markers; longer markers.
    assert mark_segments(text, _z(8, [2], [5])) == "ab |cd \u2016ef"
    assert mark_segments(text, _z(8, [2], [5]), markers=[" / ", " // "]) == (
        "ab  / cd  // ef")


def test_one_boundary_layer_and_inputs_accepted():
    text = "ab cd"
    assert mark_segments(text, [0, 0, 1, 0, 0]) == "ab |cd"
    assert mark_segments(text, np.array([0, 0, 1, 0, 0], bool)) == "ab |cd"
    assert mark_segments(list(text), [0.0, 0.0, 1.0, 0.0, 0.0], markers=["/"]) == "ab /cd"
    assert mark_segments("", np.zeros((0, 2))) == ""
    assert hmkeras.mark_segments is hmkeras.analysis.mark_segments is mark_segments


def test_bad_inputs_are_refused_naming_the_argument():
    with pytest.raises(ValueError, match=r"`boundaries` must have shape \(T, L-1\).*T = len\(text\) = 3"):
        mark_segments("abc", np.zeros((4, 2)))
    with pytest.raises(ValueError, match="`boundaries` must have shape"):
        mark_segments("abc", np.zeros((3, 2, 1)))
    with pytest.raises(ValueError, match="`boundaries` must have shape"):
        mark_segments("abc", np.zeros((3, 0)))
    with pytest.raises(ValueError, match=r"`boundaries` must hold only 0 and 1.*0\.7"):
        mark_segments("abc", [0.0, 0.7, 1.0])
    with pytest.raises(ValueError, match="`boundaries` must hold only 0 and 1"):
        mark_segments("abc", [0.0, float("nan"), 1.0])
    with pytest.raises(ValueError, match="`boundaries` must hold 0/1"):
        mark_segments("abc", ["0", "1", "0"])
    with pytest.raises(ValueError, match="`markers` must be a sequence of at least 2"):
        mark_segments("abc", np.zeros((3, 2)), markers=("|",))
    with pytest.raises(ValueError, match="`markers`"):
        mark_segments("abc", np.zeros((3, 1)), markers=("",))
    with pytest.raises(ValueError, match="`markers` must be a sequence of strings"):
        mark_segments("abc", np.zeros((3, 2)), markers="|/")
    with pytest.raises(ValueError, match="`text`"):
        mark_segments(["ab", "c"], np.zeros((2, 1)))
