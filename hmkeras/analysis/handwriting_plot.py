"""Handwriting pictures: sampled lines, and Chung et al. Fig. 5.

Chung et al. (2017, Section 4.2, Fig. 5) let the HM-LSTM read a validation
line and colour it by segments twice: once by the segments that the pen
lifts delimit (strokes), once by the segments that the second boundary
detector z^2 delimits. `plot_segments` draws such panels side by side;
`plot_handwriting` draws lines (e.g. samples) one under the other. Both
take `(T, 3)` `(dx, dy, pen_up)` sequences, draw with the Agg canvas (no
pyplot state) and write a PNG.

A segment ends on a step whose boundary value is 1; consecutive segments
get different colours from a qualitative colour cycle. The pen is never
drawn across a pen-up.

Examples:

    >>> import numpy as np, os, tempfile
    >>> seq = np.array([[0, 0, 0], [1, 1, 0], [1, 0, 1], [1, -1, 0], [0, 1, 1]], float)
    >>> path = os.path.join(tempfile.mkdtemp(), "fig5.png")
    >>> plot_segments(path, seq, {"pen-up": seq[:, 2], "z^2": [0, 1, 0, 0, 1]})
    ... # doctest: +ELLIPSIS
    '...fig5.png'
    >>> segment_ids([0, 1, 0, 0, 1]).tolist()
    [0, 0, 1, 1, 1]
"""

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from hmkeras.data.stroke_offsets import offsets_to_strokes

_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
            "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")


def segment_ids(boundaries):
    """Segment index of every step: a segment ends where `boundaries` > 0.5."""
    ends = np.asarray(boundaries, dtype=np.float64) > 0.5
    return np.concatenate([[0], np.cumsum(ends)[:-1]]).astype(np.int64)


def _draw(axes, sequence, boundaries=None, title=None):
    sequence = np.asarray(sequence, dtype=np.float64)
    points = np.cumsum(sequence[:, :2], axis=0)
    pen_up = sequence[:, 2] > 0.5
    segments = segment_ids(boundaries) if boundaries is not None else np.zeros(len(points), int)
    for t in range(1, len(points)):
        if pen_up[t - 1]:
            continue  # the pen travels in the air
        colour = _COLOURS[segments[t] % len(_COLOURS)]
        axes.plot(points[t - 1 : t + 1, 0], points[t - 1 : t + 1, 1],
                  color=colour, linewidth=1.6, solid_capstyle="round")
    single = [s for s in offsets_to_strokes(sequence) if len(s) == 1]
    for dot in single:
        axes.plot(dot[:, 0], dot[:, 1], "k.", markersize=2)
    axes.set_aspect("equal", adjustable="datalim")
    axes.set_xticks([])
    axes.set_yticks([])
    if title:
        axes.set_title(title, fontsize=9)


def plot_handwriting(path, sequences, titles=None, width=10.0, row_height=1.6):
    """Draws each `(T, 3)` sequence on its own row; writes a PNG to `path`.

    Returns:
        `path`.
    """
    if not len(sequences):
        raise ValueError("`sequences` must hold at least one sequence.")
    figure = Figure(figsize=(width, row_height * len(sequences)))
    for row, sequence in enumerate(sequences):
        axes = figure.add_subplot(len(sequences), 1, row + 1)
        _draw(axes, sequence, title=titles[row] if titles else None)
    figure.tight_layout()
    FigureCanvasAgg(figure).print_png(path)
    return path


def plot_segments(path, sequence, segmentations, width=10.0, row_height=1.8):
    """Chung et al. Fig. 5: one line coloured by each segmentation.

    Args:
        path: PNG file to write.
        sequence: `(T, 3)` `(dx, dy, pen_up)`.
        segmentations: Dict `{title: (T,) boundaries}` (e.g. `"pen-up"`:
            `sequence[:, 2]`, `"z^2"`: the boundaries of the second layer),
            one panel each, in order.

    Returns:
        `path`.
    """
    if not segmentations:
        raise ValueError("`segmentations` must name at least one segmentation.")
    length = len(sequence)
    for title, values in segmentations.items():
        if len(values) != length:
            raise ValueError(
                f"segmentations[{title!r}] has {len(values)} steps; the sequence "
                f"has {length}."
            )
    figure = Figure(figsize=(width, row_height * len(segmentations)))
    for row, (title, values) in enumerate(segmentations.items()):
        axes = figure.add_subplot(len(segmentations), 1, row + 1)
        count = int(segment_ids(values)[-1]) + 1
        _draw(axes, sequence, values, f"segments by {title} ({count} segments)")
    figure.tight_layout()
    FigureCanvasAgg(figure).print_png(path)
    return path
