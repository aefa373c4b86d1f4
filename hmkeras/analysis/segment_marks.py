"""A text excerpt with the segments of a hierarchical RNN marked in it.

The plain-text counterpart of `segmentation_plot`, for a log line or a
results summary: `mark_segments` writes the text with a marker after every
character at which a boundary detector fired.

Convention. A boundary z^l_t = 1 means "a segment of layer l ends at step
t" (`boundary_metrics`), so its marker goes right after character t, the
one read at the step that fired: a detector firing on the spaces of
"the cat" gives "the |cat", one firing on the last letters gives
"the| cat". Layer l has marker `markers[l - 1]`; where several layers fire
at the same step only the highest one's marker is written (a segment of
layer 2 ends a segment of layer 1 too).
"""

import numpy as np

_DEFAULT_MARKERS = ("|", "‖")  # z^1, z^2


def mark_segments(text, boundaries, markers=_DEFAULT_MARKERS):
    """The text with a marker after every character at which a layer fired.

    Args:
        text: The text read, one character per step: a string (or a
            sequence of single characters) of length T. Slice it (and
            `boundaries`) to the excerpt to show.
        boundaries: 0/1 array `(T, L-1)` of the boundaries z^1 ... z^{L-1}
            at each step (`(T,)` for a single boundary layer), e.g. the
            last L-1 columns of a hierarchical cell's output for one
            sequence. Booleans are accepted; soft values must be
            thresholded first (e.g. `z > 0.5`).
        markers: Sequence of at least L-1 non-empty strings: `markers[l-1]`
            is written after a character at which z^l fired and no layer
            above it did. Default `("|", "‖")`.

    Returns:
        A string: `text` with the markers inserted.

    Examples:

        >>> z = [[0, 0], [0, 0], [0, 0], [1, 0],      # "the "
        ...      [0, 0], [0, 0], [0, 0], [1, 1],      # "cat "
        ...      [0, 0], [0, 0], [1, 0]]              # "sat"
        >>> mark_segments("the cat sat", z)
        'the |cat ‖sat|'
        >>> mark_segments("the cat", [0, 0, 1, 0, 0, 0, 1], markers=["/"])
        'the/ cat/'
    """
    characters = list(text)
    if not all(isinstance(c, str) and len(c) == 1 for c in characters):
        raise ValueError(
            "`text` must be a string or a sequence of single characters."
        )
    length = len(characters)
    z = np.asarray(boundaries)
    if z.ndim == 1:
        z = z[:, None]
    if z.ndim != 2 or z.shape[0] != length or z.shape[1] == 0:
        raise ValueError(
            "`boundaries` must have shape (T, L-1) with T = len(text) = "
            f"{length} and L-1 >= 1, or (T,) for one boundary layer. "
            f"Received shape {np.shape(boundaries)}."
        )
    if z.dtype != bool:
        if not np.issubdtype(z.dtype, np.number):
            raise ValueError(
                "`boundaries` must hold 0/1 values. Received dtype "
                f"{z.dtype}."
            )
        binary = (z == 0) | (z == 1)
        if not binary.all():
            bad = z[~binary].flat[0]
            raise ValueError(
                "`boundaries` must hold only 0 and 1 (threshold soft values "
                f"first, e.g. z > 0.5). Received a value {bad!r}."
            )
    if isinstance(markers, str):
        raise ValueError(
            "`markers` must be a sequence of strings, one per boundary "
            f"layer, e.g. ('|', '‖'). Received: markers={markers!r}"
        )
    markers = list(markers)
    if len(markers) < z.shape[1] or not all(
            isinstance(m, str) and m for m in markers):
        raise ValueError(
            f"`markers` must be a sequence of at least {z.shape[1]} non-empty "
            f"strings, one per boundary layer. Received: markers={markers!r}"
        )
    fired = z.astype(bool)
    pieces = []
    for step, character in enumerate(characters):
        pieces.append(character)
        layers = np.flatnonzero(fired[step])
        if layers.size:
            pieces.append(markers[layers[-1]])  # the highest layer's marker
    return "".join(pieces)
