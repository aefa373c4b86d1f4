"""`bench/detector_probe.py`: the per-step gold stream of segmented lines
and the logistic probe, on hand-made cases."""

import numpy as np
from example_modules import load_script

BENCH = load_script("bench", "detector_probe")


def test_stream_boundaries_mark_each_words_last_symbol():
    # "ab c" + line end + "d ef": symbols a b c \n d e f; the stream's last
    # symbol (f) is not an input step.
    np.testing.assert_array_equal(
        BENCH.stream_boundaries(["ab c", "d ef"], 6), [0, 1, 1, 0, 1, 0])


def test_probe_learns_a_linear_rule_and_nothing_else():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 5))
    y = (x[:, 1] - 0.5 * x[:, 3] > 0.2).astype(float)
    decide = BENCH.fit_probe(x[:1000], y[:1000], l2=0.0)
    assert np.mean(decide(x[1000:]) == y[1000:]) > 0.97
    noise = BENCH.fit_probe(x[:1000], rng.integers(0, 2, 1000).astype(float), l2=1e-3)
    assert np.mean(noise(x[1000:]) == y[1000:]) < 0.7
