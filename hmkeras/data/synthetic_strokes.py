"""An embedded handwriting-like stroke set with known stroke boundaries.

IAM-OnDB needs a registration (`hmkeras.data.iam_ondb`); this generator is
the offline default of `examples/iam_ondb.py`. A "line" is a row of glyphs
drawn from a small alphabet (`GLYPHS`: o, l, c, t, x, i, v, n), each made
of one or two strokes (polylines in a unit box), every instance randomly
scaled, slanted and jittered, its strokes resampled to a number of points
that grows with their length. Lines become `(dx, dy, pen_up)` sequences
(`hmkeras.data.stroke_offsets`), so the data have a three-level structure
the HM-LSTM can find -- points, strokes (ending at `pen_up = 1`) and glyphs
-- and both boundaries are known per point:

* `stroke_ends(split)`: 1 on the last point of every stroke (= `pen_up`);
* `glyph_ends(split)`: 1 on the last point of every glyph.

The splits are generated from independent seeds derived from `seed`;
`normalized(split)` applies the training set's offset mean and standard
deviation (`mean`, `std`), as the IAM-OnDB builder does.

Examples:

    >>> strokes = SyntheticStrokes(seed=0, num_train=20, num_valid=4, num_test=4)
    >>> seq = strokes.sequences("train")[0]
    >>> seq.shape[1], bool((strokes.stroke_ends("train")[0] == seq[:, 2]).all())
    (3, True)
    >>> ends = strokes.glyph_ends("train")[0]
    >>> bool(ends[-1] == 1 and set(ends.tolist()) <= {0, 1})
    True
"""

import numpy as np

from hmkeras import argument_checks
from hmkeras.data.stroke_offsets import normalize_offsets
from hmkeras.data.stroke_offsets import offset_statistics
from hmkeras.data.stroke_offsets import strokes_to_offsets

SPLITS = ("train", "validation", "test")


def _arc(start_deg, end_deg, center=(0.3, 0.3), radius=0.3, count=9):
    angles = np.deg2rad(np.linspace(start_deg, end_deg, count))
    return np.stack([center[0] + radius * np.cos(angles),
                     center[1] + radius * np.sin(angles)], axis=1)


#: The alphabet: glyph name -> list of strokes (polylines, unit box, y up).
GLYPHS = {
    "o": [_arc(90, 450)],
    "l": [np.array([[0.0, 0.0], [0.0, 1.0]])],
    "c": [_arc(45, 315)],
    "t": [np.array([[0.3, 1.0], [0.3, 0.0]]), np.array([[0.0, 0.7], [0.6, 0.7]])],
    "x": [np.array([[0.0, 0.0], [0.6, 0.6]]), np.array([[0.0, 0.6], [0.6, 0.0]])],
    "i": [np.array([[0.0, 0.5], [0.0, 0.0]]), np.array([[0.0, 0.75], [0.0, 0.8]])],
    "v": [np.array([[0.0, 0.6], [0.3, 0.0], [0.6, 0.6]])],
    "n": [np.array([[0.0, 0.0], [0.0, 0.5], [0.15, 0.6], [0.45, 0.6],
                    [0.6, 0.5], [0.6, 0.0]])],
}
#: Points per unit of stroke length (at least 2 points per stroke).
POINTS_PER_UNIT = 10


def _resample(polyline, count):
    """`count` points evenly spaced along the polyline's length."""
    steps = np.linalg.norm(np.diff(polyline, axis=0), axis=1)
    where = np.concatenate([[0.0], np.cumsum(steps)])
    targets = np.linspace(0.0, where[-1], count)
    return np.stack([np.interp(targets, where, polyline[:, k]) for k in (0, 1)], axis=1)


class SyntheticStrokes:
    """Generated lines of glyph strokes, with stroke and glyph boundaries.

    Args:
        seed: Int, seed of the whole set.
        num_train, num_valid, num_test: Number of lines per split.
        min_glyphs, max_glyphs: Glyphs per line (inclusive range).
        jitter: Standard deviation of the per-point noise (unit box).

    Attributes:
        mean, std: `(2,)` offset statistics of the training split.

    Examples:

        >>> from hmkeras.data import SyntheticStrokes
        >>> strokes = SyntheticStrokes(seed=0, num_train=4, num_valid=1, num_test=1)
        >>> line = strokes.sequences("train")[0]
        >>> line.shape[1], int(line[-1, 2])  # (dx, dy, pen_up); the pen lifts at the end
        (3, 1)
        >>> bool((strokes.stroke_ends("train")[0] == line[:, 2]).all())
        True
        >>> bool(strokes.glyph_ends("train")[0].sum() <= line[:, 2].sum())  # glyphs end strokes
        True
    """

    def __init__(self, seed=0, num_train=400, num_valid=50, num_test=50,
                 min_glyphs=4, max_glyphs=8, jitter=0.01):
        checks = argument_checks
        self.seed = checks.check_int("seed", seed, minimum=0)
        sizes = {
            "train": checks.check_positive_int("num_train", num_train),
            "validation": checks.check_positive_int("num_valid", num_valid),
            "test": checks.check_positive_int("num_test", num_test),
        }
        self.min_glyphs = checks.check_positive_int("min_glyphs", min_glyphs)
        self.max_glyphs = checks.check_int("max_glyphs", max_glyphs, minimum=self.min_glyphs)
        self.jitter = checks.check_float("jitter", jitter, minimum=0)
        self._lines = {}
        for index, split in enumerate(SPLITS):
            rng = np.random.default_rng([self.seed, index])
            self._lines[split] = [self._line(rng) for _ in range(sizes[split])]
        self.mean, self.std = offset_statistics(self.sequences("train"))

    def _line(self, rng):
        """`(sequence, glyph_ends)` of one generated line."""
        names = sorted(GLYPHS)
        strokes, glyph_sizes, cursor = [], [], 0.0
        for _ in range(rng.integers(self.min_glyphs, self.max_glyphs + 1)):
            scale = rng.uniform(0.8, 1.2)
            slant = rng.uniform(-0.25, 0.25)
            lift = rng.normal(0.0, 0.03)
            size = 0
            glyph = GLYPHS[names[rng.integers(len(names))]]
            for polyline in glyph:
                length = np.linalg.norm(np.diff(polyline, axis=0), axis=1).sum()
                count = max(2, int(round(length * POINTS_PER_UNIT * scale)))
                points = _resample(polyline, count) * scale
                points[:, 0] += slant * points[:, 1] + cursor
                points[:, 1] += lift
                points += rng.normal(0.0, self.jitter, points.shape)
                strokes.append(points)
                size += count
            width = max(np.ptp(np.concatenate(glyph)[:, 0]), 0.05) * scale
            cursor += width + rng.uniform(0.2, 0.4)
            glyph_sizes.append(size)
        sequence = strokes_to_offsets(strokes)
        glyph_ends = np.zeros(len(sequence), np.int32)
        glyph_ends[np.cumsum(glyph_sizes) - 1] = 1
        return sequence, glyph_ends

    def _check(self, split):
        return argument_checks.check_choice("split", split, SPLITS)

    def sequences(self, split):
        """Raw `(T, 3)` float32 `(dx, dy, pen_up)` lines of `split`."""
        return [seq for seq, _ in self._lines[self._check(split)]]

    def normalized(self, split):
        """`sequences(split)` normalized with the training statistics."""
        return [normalize_offsets(s, self.mean, self.std) for s in self.sequences(split)]

    def stroke_ends(self, split):
        """Per line, `(T,)` int32: 1 on the last point of every stroke."""
        return [seq[:, 2].astype(np.int32) for seq in self.sequences(split)]

    def glyph_ends(self, split):
        """Per line, `(T,)` int32: 1 on the last point of every glyph."""
        return [ends for _, ends in self._lines[self._check(split)]]
