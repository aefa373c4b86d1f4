"""Pen strokes as offset sequences `(dx, dy, pen_up)` and their normalization.

The representation of Graves (2013, Section 4.1) and Chung et al. (2017,
Section 4.2): a handwritten line is a list of strokes (pen-down traces),
each a `(n, 2)` array of absolute points. It becomes one `(T, 3)` sequence
with one row per point:

* `dx, dy`: the offset from the previous point (the first row: 0, 0), so
  the first point of a stroke carries the jump from the previous stroke;
* `pen_up`: 1 on the last point of every stroke (the pen lifts after it),
  else 0.

`offset_statistics` gives the per-coordinate mean and standard deviation
of the offsets of a set of sequences (the training set), and
`normalize_offsets` / `denormalize_offsets` apply them to `dx` and `dy`
(`pen_up` untouched), as in Chung et al. ("We normalize the range of the
(x, y) coordinates separately with the mean and standard deviation
obtained from the training set").

Examples:

    >>> import numpy as np
    >>> seq = strokes_to_offsets([np.array([[0., 0.], [1., 0.]]),
    ...                           np.array([[3., 1.]])])
    >>> seq.tolist()
    [[0.0, 0.0, 0.0], [1.0, 0.0, 1.0], [2.0, 1.0, 1.0]]
    >>> [s.tolist() for s in offsets_to_strokes(seq)]
    [[[0.0, 0.0], [1.0, 0.0]], [[3.0, 1.0]]]
"""

import numpy as np


def strokes_to_offsets(strokes):
    """`(T, 3)` float32 `(dx, dy, pen_up)` of a list of `(n_i, 2)` strokes.

    Empty strokes are skipped; a line without points raises `ValueError`.
    """
    strokes = [np.asarray(s, dtype=np.float64).reshape(-1, 2) for s in strokes]
    strokes = [s for s in strokes if len(s)]
    if not strokes:
        raise ValueError("`strokes` must hold at least one point.")
    points = np.concatenate(strokes, axis=0)
    pen = np.zeros(len(points))
    pen[np.cumsum([len(s) for s in strokes]) - 1] = 1.0
    offsets = np.diff(points, axis=0, prepend=points[:1])
    return np.concatenate([offsets, pen[:, None]], axis=1).astype(np.float32)


def offsets_to_strokes(sequence):
    """The inverse of `strokes_to_offsets` (the line starts at the origin).

    A final stroke without a pen-up is kept.
    """
    sequence = np.asarray(sequence, dtype=np.float64)
    points = np.cumsum(sequence[:, :2], axis=0)
    ends = np.flatnonzero(sequence[:, 2] > 0.5) + 1
    return [part for part in np.split(points, ends) if len(part)]


def offset_statistics(sequences):
    """`(mean, std)`: two `(2,)` float64 arrays over every row of `sequences`.

    A zero standard deviation is replaced by 1 (nothing to scale).
    """
    rows = np.concatenate([np.asarray(s)[:, :2] for s in sequences], axis=0)
    mean = rows.astype(np.float64).mean(axis=0)
    std = rows.astype(np.float64).std(axis=0)
    std[std == 0] = 1.0
    return mean, std


def normalize_offsets(sequence, mean, std):
    """`(dx - mean) / std` per coordinate; `pen_up` unchanged (float32)."""
    out = np.array(sequence, dtype=np.float32, copy=True)
    out[:, :2] = (out[:, :2] - np.asarray(mean)) / np.asarray(std)
    return out


def denormalize_offsets(sequence, mean, std):
    """The inverse of `normalize_offsets`."""
    out = np.array(sequence, dtype=np.float32, copy=True)
    out[:, :2] = out[:, :2] * np.asarray(std) + np.asarray(mean)
    return out
