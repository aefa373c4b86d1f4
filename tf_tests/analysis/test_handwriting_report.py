"""Tests of hmkeras.analysis.handwriting_report (what a handwriting run
reports): the boundary agreement against counts made by hand and by set
intersection, and the printed summary."""

import numpy as np
import pytest

from hmkeras.analysis import handwriting_report


def _exact_scores(predicted, reference):
    """Precision, recall and F1 of exact positions (tolerance 0)."""
    hits = len(set(np.flatnonzero(predicted)) & set(np.flatnonzero(reference)))
    precision = hits / max(np.count_nonzero(predicted), 1)
    recall = hits / max(np.count_nonzero(reference), 1)
    f1 = 2 * precision * recall / (precision + recall) if hits else 0.0
    return precision, recall, f1


def test_boundary_agreement_against_exact_counts():
    rng = np.random.default_rng(3)
    lengths = (9, 4, 13)
    boundaries = [(rng.random((n, 2)) < 0.3).astype(np.float32) for n in lengths]
    pen_ups = [(rng.random(n) < 0.25).astype(np.int32) for n in lengths]
    glyphs = [np.eye(1, n, n - 1, dtype=np.int32)[0] for n in lengths]  # the last point
    out = handwriting_report.boundary_agreement(
        boundaries, {"strokes": pen_ups, "glyphs": glyphs})
    z = np.concatenate(boundaries)
    np.testing.assert_allclose(out["z_rates"], z.mean(axis=0))
    for unit, ends in (("strokes", pen_ups), ("glyphs", glyphs)):
        on_end = np.concatenate(ends)
        before_end = np.append(on_end[1:], 0)  # one point earlier
        for layer in (1, 2):
            scores = out[f"z{layer}_vs_{unit}"]
            expected = {name: _exact_scores(z[:, layer - 1], reference)
                        for name, reference in (("on_end", on_end),
                                                ("before_end", before_end))}
            for name, (precision, recall, f1) in expected.items():
                found = scores["by_alignment"][name]
                assert (found["precision"], found["recall"], found["f1"]) == pytest.approx(
                    (precision, recall, f1))
            best = max(expected, key=lambda name: expected[name][2])
            assert scores["f1"] == pytest.approx(expected[best][2])
            loose = out[f"z{layer}_vs_{unit}_tolerance_1"]
            assert loose["f1"] >= scores["f1"]  # a wider window matches no fewer


def test_boundary_agreement_with_one_step_of_tolerance_by_hand():
    # Pen-ups at 2, 5, 7; z^1 one point early (1, 4), z^2 on them and at 0.
    pen_ups = [np.array([0, 0, 1, 0, 0, 1, 0, 1])]
    z = [np.array([[0, 1], [1, 0], [0, 1], [0, 0], [1, 0], [0, 1], [0, 0], [0, 1]])]
    out = handwriting_report.boundary_agreement(z, {"strokes": pen_ups})
    exact, loose = out["z1_vs_strokes"], out["z1_vs_strokes_tolerance_1"]
    # Exact: none on the pen-ups, both on the points before them (2 of 3).
    assert exact["by_alignment"]["on_end"]["f1"] == 0.0
    assert exact["alignment"] == "before_end"
    assert exact["f1"] == pytest.approx(2 * 1.0 * (2 / 3) / (1.0 + 2 / 3))
    # Within one step, 1 -> 2 and 4 -> 5 match the pen-ups too.
    assert loose["by_alignment"]["on_end"]["true_positives"] == 2
    z2 = out["z2_vs_strokes"]
    assert z2["alignment"] == "on_end"
    assert (z2["precision"], z2["recall"]) == pytest.approx((3 / 4, 1.0))


def test_summary_lines_print_every_boundary_headline():
    scores = {"precision": 0.5, "recall": 0.25, "f1": 1 / 3, "alignment": "on_end"}
    results = {
        "cell": "hmlstm", "parameters": 12345, "epochs": 3, "wall_seconds": 61.4,
        "test_log_likelihood_per_sequence": 812.345, "test_sequences": 50,
        "test_mean_length": 301.6, "fig5_png": "a.png", "samples_png": "b.png",
        "step_model": "c",
        "boundaries": {"z_rates": [0.25, 0.0625], "z2_vs_strokes": scores,
                       "z2_vs_strokes_tolerance_1": dict(scores, f1=0.75)},
    }
    assert handwriting_report.summary_lines(results) == [
        "\n=== results ===",
        "hmlstm, 12,345 parameters, 3 epochs, 61 s",
        "average log-likelihood per test sequence: 812.35 nats (50 lines, mean length 302)",
        "z rates z^1 0.250, z^2 0.062",
        "z2_vs_strokes: P 0.500 R 0.250 F1 0.333 (on_end; tolerance 1: F1 0.750)",
        "wrote a.png, b.png and c",
    ]
