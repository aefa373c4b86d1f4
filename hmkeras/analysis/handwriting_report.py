"""The report of a trained handwriting model: boundary agreement and summary.

What a finished run of `examples/iam_ondb.py` adds to its `results.json`
beyond the log-likelihoods, and how it prints them:

* `boundary_agreement`: the boundary rates of every layer and how well its
  boundaries agree with reference units (pen-ups, glyph ends), with the
  reference on the unit's last point and on the point before it.
* `summary_lines`: the results as the lines of a printed summary.

Examples:

    >>> print("\\n".join(summary_lines({
    ...     "cell": "lstm", "parameters": 1234, "epochs": 2, "wall_seconds": 3.2,
    ...     "test_log_likelihood_per_sequence": -41.5, "test_sequences": 4,
    ...     "test_mean_length": 30.0, "fig5_png": "f.png", "samples_png": "s.png",
    ...     "step_model": "step_model"})))
    <BLANKLINE>
    === results ===
    lstm, 1,234 parameters, 2 epochs, 3 s
    average log-likelihood per test sequence: -41.50 nats (4 lines, mean length 30)
    wrote f.png, s.png and step_model
"""

import numpy as np

from hmkeras.analysis import boundary_metrics

ALIGNMENTS = ("on_end", "before_end")


def boundary_agreement(boundaries, references):
    """Boundary rates and agreement of a model's boundaries with references.

    The boundaries of all sequences are concatenated; each reference
    unit's ends are placed on the unit's last point (`"on_end"`, e.g. the
    pen-up point) and on the point before it (`"before_end"`), and every
    boundary layer is scored against both (`aligned_boundary_scores`, the
    better alignment as the headline) with tolerance 0 and 1.

    Args:
        boundaries: Per sequence, the `(T, L - 1)` boundaries of a
            hierarchical model read from the zero state
            (`HandwritingModel.boundaries(model.read(sequence)[1])`).
        references: `{unit: [0/1 array (T,) per sequence]}`, 1 on each
            unit's last point (e.g. `{"strokes": pen-ups}`).

    Returns:
        `{"z_rates": [rate per layer], "z<l>_vs_<unit>": scores,
        "z<l>_vs_<unit>_tolerance_1": scores}`, the scores as
        `AlignedBoundaryScores.as_dict()`.

    Examples:

        >>> z = [np.array([[0, 0], [1, 0], [0, 1]]), np.array([[1, 0], [0, 1]])]
        >>> pen_ups = [np.array([0, 0, 1]), np.array([0, 1])]
        >>> out = boundary_agreement(z, {"strokes": pen_ups})
        >>> out["z_rates"]
        [0.4, 0.4]
        >>> [(out[f"z{l}_vs_strokes"]["alignment"], out[f"z{l}_vs_strokes"]["f1"]) for l in (1, 2)]
        [('before_end', 1.0), ('on_end', 1.0)]
    """
    z = np.concatenate(boundaries)
    out = {"z_rates": z.mean(axis=0).tolist()}
    for unit, ends in references.items():
        on_end = np.concatenate(ends).astype(np.float32)
        aligned = dict(zip(ALIGNMENTS, (on_end, np.append(on_end[1:], 0.0))))
        for layer in range(z.shape[1]):
            for tolerance in (0, 1):
                scores = boundary_metrics.aligned_boundary_scores(
                    z[:, layer], aligned, tolerance)
                key = f"z{layer + 1}_vs_{unit}" + ("_tolerance_1" if tolerance else "")
                out[key] = scores.as_dict()
    return out


def summary_lines(r):
    """The printed summary of a results dict (`results.json`), as lines."""
    lines = ["\n=== results ===",
             f"{r['cell']}, {r['parameters']:,} parameters, {r['epochs']} epochs, "
             f"{r['wall_seconds']:.0f} s",
             f"average log-likelihood per test sequence: "
             f"{r['test_log_likelihood_per_sequence']:.2f} nats "
             f"({r['test_sequences']} lines, mean length {r['test_mean_length']:.0f})"]
    b = r.get("boundaries")
    if b:
        prior = r.get("boundary_prior")  # absent from results of older runs
        if prior is not None:
            lines.append("boundary prior: " + (
                "none (the papers' model)" if prior == "none" else
                f"{prior}, segment lengths "
                f"{', '.join('free' if v is None else f'{v:g}' for v in r['segment_lengths'])}"))
        lines.append("z rates " + ", ".join(f"z^{i + 1} {v:.3f}"
                                            for i, v in enumerate(b["z_rates"])))
        for key, scores in b.items():
            if key != "z_rates" and not key.endswith("tolerance_1"):
                loose = b.get(key + "_tolerance_1")
                lines.append(f"{key}: P {scores['precision']:.3f} R {scores['recall']:.3f} "
                             f"F1 {scores['f1']:.3f} ({scores['alignment']}; tolerance 1: "
                             f"F1 {loose['f1']:.3f})")
    if r.get("step_model"):
        lines.append(f"wrote {r['fig5_png']}, {r['samples_png']} and {r['step_model']}")
    else:  # no export on a backend other than TensorFlow
        lines.append(f"wrote {r['fig5_png']} and {r['samples_png']}")
    return lines
