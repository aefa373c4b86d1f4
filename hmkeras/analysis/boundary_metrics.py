"""Boundary statistics of hierarchical RNNs: z-rates, z-ratio, segmentation F1.

Pure NumPy; works on the boundary values a hierarchical cell emits (the last
L-1 columns of its per-step output `[h^1 | ... | h^L | z^1 ... z^{L-1}]`,
DESIGN.md), fetched with `model.predict` or `cell.split_outputs`.

z-rates and z-ratio (Kadar et al. 2018, Section 4.3 and Table 2). "The
frequencies of z^1_t and z^2_t [...] are reported in Table 2 [...] The ratio of
z^1_t to z^2_t frequencies is reported in the last column of Table 2." So

    rate(z^l) = mean over time steps of z^l_t
    z-ratio   = rate(z^1) / rate(z^2)

which matches every row of their Table 2 (e.g. row 4: 0.42 / 0.09 = 4.67;
row 12: 0.0 / 1.0 = 0.0). Values > 1 mean the lower layer segments more
finely than the upper one, the expected multiscale behaviour.

Alignment convention for segmentation scores. A boundary at index t means "a
segment ends at step t": z^1_t = 1 makes the first layer FLUSH at t + 1 and
hand its summary of steps ..t to the layer above (Chung et al. Eq. 2). Text
references mark words by their separators ("the cat" -> boundary at the
space, index 3) by default; `reference_boundaries(..., align=...)` also
offers the last character of each word ("before") or the first character of
the next word ("after"; Chung et al. observe z^1 "turned on when it sees a
space or after it sees a space"). Predicted and reference boundaries are
matched one-to-one within `tolerance` steps (0: exact positions).

A trained model may settle on either alignment: z^1 on the separator or on
the last letter of each word are both correct segmentations, but each scores
near zero against the other's reference. `aligned_boundary_scores` scores one
layer against the same segmentation in several alignments (e.g.
`{"separator": ..., "last_char": ...}`) and names the best one, so a report
can headline it and say which; `layer_boundary_scores` does so for every
layer.

Word tokens. `token_scores` scores whole segments instead of boundaries, as
the word-segmentation literature does: a predicted word counts as correct
only when both its ends are right, i.e. its span equals a reference word's.
Against a text, separators do not count (a segment "the " or "the" is the
word "the"), so the score says which words were found, whichever side of
the separator the boundaries sit on; the alignment scores above say where.
"""

import collections

import numpy as np


BoundaryScores = collections.namedtuple(
    "BoundaryScores",
    ["precision", "recall", "f1", "true_positives", "num_predicted",
     "num_reference"],
)
BoundaryScores.__doc__ = """Boundary precision, recall and F1 with their counts.

`boundary_scores` counts boundaries; `token_scores` counts word tokens
(segments) in the same fields.

Fields:
    precision: `true_positives / num_predicted` (0.0 when nothing predicted).
    recall: `true_positives / num_reference` (0.0 when no reference
        boundary or token).
    f1: Harmonic mean of precision and recall (0.0 when both are 0).
    true_positives: Number of predicted boundaries matched to a reference one
        (of predicted tokens equal to a reference token).
    num_predicted: Number of predicted boundaries (tokens).
    num_reference: Number of reference boundaries (tokens).
"""


def split_hierarchical_outputs(outputs, layer_sizes):
    """Splits hierarchical cell outputs into hidden states and boundaries.

    NumPy counterpart of `cell.split_outputs` for the layout
    `[h^1 | ... | h^L | z^1 ... z^{L-1}]` of DESIGN.md.

    Args:
        outputs: Array of shape `(..., sum(layer_sizes) + L - 1)`.
        layer_sizes: List of L positive integers, the hidden size of each
            layer, bottom first (e.g. `cell.units`).

    Returns:
        `(hiddens, boundaries)`: a list of L arrays `(..., layer_sizes[l])`
        and one array `(..., L - 1)`.

    Examples:

        >>> import numpy as np
        >>> y = np.arange(8.0)  # units [3, 2, 1]: 6 hidden + 2 boundary columns
        >>> hiddens, z = split_hierarchical_outputs(y, [3, 2, 1])
        >>> [h.tolist() for h in hiddens], z.tolist()
        ([[0.0, 1.0, 2.0], [3.0, 4.0], [5.0]], [6.0, 7.0])
    """
    sizes = [int(s) for s in layer_sizes]
    if not sizes or any(s <= 0 for s in sizes):
        raise ValueError(
            "`layer_sizes` must be a non-empty list of positive integers. "
            f"Received: {layer_sizes!r}"
        )
    outputs = np.asarray(outputs)
    expected = sum(sizes) + len(sizes) - 1
    if outputs.ndim < 1 or outputs.shape[-1] != expected:
        raise ValueError(
            f"With layer_sizes={sizes} the last dimension of `outputs` must "
            f"be sum(layer_sizes)+L-1={expected}. Received shape "
            f"{outputs.shape}."
        )
    offsets = np.cumsum([0] + sizes)
    hiddens = [outputs[..., offsets[i]:offsets[i + 1]]
               for i in range(len(sizes))]
    return hiddens, outputs[..., offsets[-1]:]


def z_rates(boundaries, mask=None):
    """Frequency of boundaries per layer (Kadar et al. Table 2, z^1, z^2).

    Args:
        boundaries: Array `(T, L-1)` or `(batch, T, L-1)` of boundary values
            z^l_t (0/1; soft values are averaged as they are).
        mask: Optional array of the same shape without the last axis; steps
            where it is 0/False are left out (e.g. padding).

    Returns:
        Array `(L-1,)`: the mean of z^l over all (valid) steps, per layer.

    Examples:

        >>> z = [[1, 0], [1, 1], [0, 0], [1, 0]]
        >>> z_rates(z).tolist()
        [0.75, 0.25]
    """
    z = np.asarray(boundaries, dtype=np.float64)
    if z.ndim < 2:
        raise ValueError(
            "`boundaries` must have shape (T, L-1) or (batch, T, L-1). "
            f"Received shape {z.shape}."
        )
    flat = z.reshape(-1, z.shape[-1])
    if mask is None:
        if flat.shape[0] == 0:
            raise ValueError("`boundaries` has no time steps.")
        return flat.mean(axis=0)
    m = np.asarray(mask)
    if m.shape != z.shape[:-1]:
        raise ValueError(
            f"`mask` must have shape {z.shape[:-1]} (boundaries without the "
            f"last axis). Received shape {m.shape}."
        )
    m = m.reshape(-1).astype(bool)
    if not m.any():
        raise ValueError("`mask` leaves no valid time step.")
    return flat[m].mean(axis=0)


def z_ratio(boundaries, mask=None, lower=0, upper=1):
    """Kadar et al.'s z-ratio: rate(z^{lower+1}) / rate(z^{upper+1}).

    With the defaults this is "the ratio of z^1_t to z^2_t frequencies" of
    Kadar et al. (2018), Table 2, last column. A value above 1 means the lower
    layer fires more often than the upper one.

    Args:
        boundaries: Array `(T, L-1)` or `(batch, T, L-1)`, L-1 >= 2 for the
            default layers.
        mask: Optional validity mask, as in `z_rates`.
        lower: 0-based index of the numerator boundary layer (0 is z^1).
        upper: 0-based index of the denominator boundary layer (1 is z^2).

    Returns:
        A Python float. `inf` when the upper rate is 0 and the lower one is
        not, `nan` when both are 0.

    Examples:

        >>> z = [[1, 0], [1, 1], [0, 0], [1, 0]]
        >>> z_ratio(z)
        3.0
    """
    rates = z_rates(boundaries, mask)
    for name, index in (("lower", lower), ("upper", upper)):
        if not 0 <= index < rates.shape[0]:
            raise ValueError(
                f"`{name}`={index} is out of range for {rates.shape[0]} "
                "boundary layer(s)."
            )
    num, den = float(rates[lower]), float(rates[upper])
    if den == 0.0:
        return float("nan") if num == 0.0 else float("inf")
    return num / den


def reference_boundaries(text, separators=" \t\n", align="separator"):
    """Reference word boundaries of a text, one 0/1 value per character.

    Use `separators="_"` for the character-level Penn Treebank of Mikolov et
    al., where `_` marks the word boundaries; `" \\t\\n"` (default) for plain
    text such as Text8 or enwik8.

    Args:
        text: A string (or any sequence of single characters).
        separators: The characters that separate words.
        align: Where a boundary is placed:
            `"separator"` (default): at every separator character, so a
            segment is a word together with the separator that ends it;
            `"before"`: at the last character of each word that is followed
            by a separator;
            `"after"`: at the first character of each word that follows a
            separator.
            Text edges do not create boundaries: a word that ends the text
            without a separator gets none.

    Returns:
        An int array `(len(text),)` of 0/1.

    Examples:

        >>> reference_boundaries("the cat").tolist()
        [0, 0, 0, 1, 0, 0, 0]
        >>> reference_boundaries("the cat", align="before").tolist()
        [0, 0, 1, 0, 0, 0, 0]
        >>> reference_boundaries("a_b", separators="_", align="after").tolist()
        [0, 0, 1]
    """
    _check_align(align)
    is_sep = _separator_mask(text, separators)
    out = np.zeros(is_sep.shape, dtype=np.int64)
    if align == "separator":
        out[is_sep] = 1
    elif align == "before":
        # word character followed by a separator
        out[:-1] = (~is_sep[:-1] & is_sep[1:])
    else:
        # word character preceded by a separator
        out[1:] = (~is_sep[1:] & is_sep[:-1])
    return out


_ALIGNMENTS = ("separator", "before", "after")


def before_next_unit(last_characters, text, separators=" \t\n"):
    """Unit ends moved to the last separator before the next unit.

    A boundary on a unit's last character (a word's, a phrase's) moves to
    the last character of the run of separators that follows it, the step
    just before the next unit starts; a unit with no separator after it
    keeps no boundary. This is the third side a causal detector can mark
    where units are separated by several characters (`", "`, `".\n"`):
    after the unit, after the whole separator.

    Args:
        last_characters: 0/1 `(len(text),)`: 1 on the last character of
            every unit.
        text: The text (a string or a sequence of single characters).
        separators: The characters between units.

    Returns:
        An int array `(len(text),)` of 0/1.

    Examples:

        >>> before_next_unit([0, 1, 0, 0, 1, 0, 1], "ab, c d", " ,").tolist()
        [0, 0, 0, 1, 0, 1, 0]
    """
    last_characters = np.asarray(last_characters)
    if last_characters.shape != (len(text),):
        raise ValueError(
            "`last_characters` must have one 0/1 value per character of `text`: "
            f"shape ({len(text)},). Received shape {last_characters.shape}"
        )
    is_sep = _separator_mask(text, separators)
    out = np.zeros(len(text), dtype=np.int64)
    for end in np.flatnonzero(last_characters):
        step = end + 1
        while step < len(text) and is_sep[step]:
            step += 1
        if step - 1 > end:
            out[step - 1] = 1
    return out


def _check_align(align):
    if align not in _ALIGNMENTS:
        raise ValueError(
            "`align` must be 'separator', 'before' or 'after'. "
            f"Received: {align!r}"
        )


def _separator_mask(text, separators):
    """Bool array `(len(text),)`: True where a character is a separator."""
    if not separators:
        raise ValueError("`separators` must name at least one character.")
    return np.array([c in separators for c in text], dtype=bool)


def _binary(name, values, threshold):
    values = np.asarray(values)
    if values.ndim not in (1, 2):
        raise ValueError(
            f"`{name}` must have shape (T,) or (batch, T). Received shape "
            f"{values.shape}."
        )
    if values.dtype == bool:
        return values
    return values.astype(np.float64) > threshold


def _match_count(pred_pos, ref_pos, tolerance):
    """Largest one-to-one matching with |p - r| <= tolerance.

    Both position lists are sorted; taking, for each predicted boundary in
    order, the earliest still unmatched reference boundary in its window is
    optimal for intervals of equal width on a line.
    """
    if tolerance == 0:
        return int(np.intersect1d(pred_pos, ref_pos).size)
    matched, j = 0, 0
    for p in pred_pos:
        while j < len(ref_pos) and ref_pos[j] < p - tolerance:
            j += 1
        if j < len(ref_pos) and ref_pos[j] <= p + tolerance:
            matched += 1
            j += 1
    return matched


def boundary_scores(predicted, reference, tolerance=0, threshold=0.5):
    """Precision, recall and F1 of predicted boundaries against a reference.

    Both sequences follow the same alignment (see the module docstring): a 1
    at index t marks a segment ending at step t. Build the reference with
    `reference_boundaries` using the alignment you compare to; e.g. z^1 of an
    HM-LSTM reading text against `reference_boundaries(text)`.

    Args:
        predicted: Array `(T,)` or `(batch, T)` of predicted boundary values,
            e.g. `z[:, 0]` for the first layer. Values above `threshold` are
            boundaries (booleans are taken as they are).
        reference: Array of the same shape, reference boundaries (0/1).
        tolerance: Non-negative integer. A predicted boundary counts as
            correct if an unmatched reference boundary lies within
            `tolerance` steps of it (one-to-one matching, within each row).
            0 (default) requires the exact position.
        threshold: Values above it are boundaries. Default: 0.5.

    Returns:
        A `BoundaryScores` namedtuple `(precision, recall, f1,
        true_positives, num_predicted, num_reference)`.

    Examples:

        >>> ref = reference_boundaries("ab cd ef")   # boundaries at 2 and 5
        >>> pred = [0, 0, 1, 0, 1, 0, 0, 1]          # 2 hit, 4 and 7 missed
        >>> s = boundary_scores(pred, ref)
        >>> round(s.precision, 4), s.recall, s.f1
        (0.3333, 0.5, 0.4)
        >>> boundary_scores(pred, ref, tolerance=1).recall
        1.0
    """
    if isinstance(tolerance, bool) or int(tolerance) != tolerance or (
        tolerance < 0
    ):
        raise ValueError(
            "`tolerance` must be a non-negative integer. "
            f"Received: {tolerance!r}"
        )
    tolerance = int(tolerance)
    pred = _binary("predicted", predicted, threshold)
    ref = _binary("reference", reference, threshold)
    if pred.shape != ref.shape:
        raise ValueError(
            "`predicted` and `reference` must have the same shape. Received "
            f"{pred.shape} and {ref.shape}."
        )
    pred, ref = np.atleast_2d(pred), np.atleast_2d(ref)
    tp = sum(
        _match_count(np.flatnonzero(p), np.flatnonzero(r), tolerance)
        for p, r in zip(pred, ref)
    )
    n_pred, n_ref = int(pred.sum()), int(ref.sum())
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_ref if n_ref else 0.0
    f1 = (2 * precision * recall / (precision + recall)
          if precision + recall > 0 else 0.0)
    return BoundaryScores(float(precision), float(recall), float(f1), int(tp),
                          n_pred, n_ref)


class AlignedBoundaryScores(
    collections.namedtuple("AlignedBoundaryScores", ["best", "scores"])
):
    """Boundary scores of one layer under several reference alignments.

    Fields:
        best: Name of the alignment with the highest F1 (the first one, in
            the order given, among equals).
        scores: Dict `{alignment name: BoundaryScores}`, in the order given.
    """

    __slots__ = ()

    @property
    def headline(self):
        """The `BoundaryScores` of the best alignment."""
        return self.scores[self.best]

    def as_dict(self):
        """JSON-able dict: the headline fields, `alignment` (the best) and
        `by_alignment` (`{name: fields}` for every alignment)."""
        return {
            **self.headline._asdict(),
            "alignment": self.best,
            "by_alignment": {name: s._asdict() for name, s in self.scores.items()},
        }


def aligned_boundary_scores(predicted, references, tolerance=0, threshold=0.5):
    """Scores one layer against every alignment of a reference; names the best.

    Args:
        predicted: Array `(T,)` or `(batch, T)` of predicted boundary values
            of one layer, as in `boundary_scores`.
        references: Non-empty dict `{alignment name: reference array}`, each
            of the shape of `predicted`: the same segmentation placed
            differently, e.g. `{"separator": reference_boundaries(text),
            "last_char": reference_boundaries(text, align="before")}`.
        tolerance: Matching tolerance in steps, as in `boundary_scores`.
        threshold: Values above it are boundaries.

    Returns:
        An `AlignedBoundaryScores(best, scores)`.

    Examples:

        >>> text = "ab cd ef"
        >>> refs = {"separator": reference_boundaries(text),
        ...         "last_char": reference_boundaries(text, align="before")}
        >>> pred = [0, 1, 0, 0, 1, 0, 0, 0]   # on the last letters of ab, cd
        >>> aligned = aligned_boundary_scores(pred, refs)
        >>> aligned.best, aligned.headline.f1, aligned.scores["separator"].f1
        ('last_char', 1.0, 0.0)
    """
    if not isinstance(references, dict) or not references:
        received = (repr(references) if isinstance(references, dict)
                    else f"a {type(references).__name__}")
        raise ValueError(
            "`references` must be a non-empty dict {alignment name: reference "
            f"array}}. Received: {received}"
        )
    shape = np.shape(predicted)
    for name, reference in references.items():
        if np.shape(reference) != shape:
            raise ValueError(
                f"Every array of `references` must have the shape of "
                f"`predicted`, {shape}. Received: references[{name!r}] of "
                f"shape {np.shape(reference)}."
            )
    scores = {
        name: boundary_scores(predicted, reference, tolerance, threshold)
        for name, reference in references.items()
    }
    best = max(scores, key=lambda name: scores[name].f1)  # first among equals
    return AlignedBoundaryScores(best, scores)


def layer_boundary_scores(boundaries, references, tolerance=0, threshold=0.5):
    """`aligned_boundary_scores` of every boundary layer.

    Args:
        boundaries: Array `(T, L-1)` of boundaries z^1 ... z^{L-1}.
        references: Dict `{alignment name: (T,) reference array}`.
        tolerance: Matching tolerance in steps.
        threshold: Values above it are boundaries.

    Returns:
        A list of L-1 `AlignedBoundaryScores`, bottom layer first.

    Examples:

        >>> refs = {"separator": [0, 0, 1, 0], "last_char": [0, 1, 0, 0]}
        >>> z = [[0, 0], [0, 0], [1, 1], [0, 0]]
        >>> [s.best for s in layer_boundary_scores(z, refs)]
        ['separator', 'separator']
    """
    z = np.asarray(boundaries)
    if z.ndim != 2:
        raise ValueError(
            f"`boundaries` must have shape (T, L-1). Received shape {z.shape}."
        )
    return [
        aligned_boundary_scores(z[:, layer], references, tolerance, threshold)
        for layer in range(z.shape[1])
    ]


def _segment_cuts(boundaries, align):
    """Sorted unique cut positions `0..T` of one row of 0/1 boundaries.

    A cut at p falls between characters p - 1 and p. A boundary at t cuts
    after t for the "separator" and "before" alignments (it marks the last
    character of a segment) and before t for "after" (it marks the first
    character of the next one). The two ends of the row are cuts.
    """
    length = boundaries.shape[0]
    shift = 0 if align == "after" else 1
    cuts = np.flatnonzero(boundaries) + shift
    return np.unique(np.concatenate([[0, length], cuts]))


def _letter_cuts(is_sep, cuts):
    """Cuts moved into the text without its separators.

    Cut p becomes the number of non-separator characters before it, so
    every cut inside or at either edge of a run of separators lands on the
    same position.
    """
    letters_before = np.concatenate([[0], np.cumsum(~is_sep)])
    return np.unique(letters_before[cuts])


def _word_cuts(is_sep):
    """Cuts, without separators, of the words: maximal runs of letters."""
    starts = np.flatnonzero(~is_sep & np.concatenate([[True], is_sep[:-1]]))
    return _letter_cuts(is_sep, np.concatenate([[0, is_sep.shape[0]], starts]))


def _matched_tokens(predicted_cuts, reference_cuts):
    """Tokens (spans between consecutive cuts) equal in both cut lists."""
    if predicted_cuts.size < 2 or reference_cuts.size < 2:
        return 0
    starts, ends = predicted_cuts[:-1], predicted_cuts[1:]
    j = np.searchsorted(reference_cuts, starts)
    inside = j < reference_cuts.size - 1
    j, starts, ends = j[inside], starts[inside], ends[inside]
    return int(np.sum((reference_cuts[j] == starts) & (reference_cuts[j + 1] == ends)))


def _reference_texts(reference, shape):
    """The rows of `reference` as strings, or None if it is no text."""
    if isinstance(reference, str):
        rows = [reference]
    elif (isinstance(reference, (list, tuple)) and reference
          and all(isinstance(row, str) for row in reference)):
        # A list of rows (2-D `predicted`) or of single characters (1-D).
        rows = list(reference) if len(shape) == 2 else ["".join(reference)]
    else:
        return None
    if len(shape) == 1 and not isinstance(reference, str) and any(
            len(c) != 1 for c in reference):
        raise ValueError(
            "With `predicted` of shape (T,), a text `reference` must be a "
            "string or a sequence of single characters."
        )
    if len(shape) == 2 and len(rows) != shape[0]:
        raise ValueError(
            f"With `predicted` of shape (batch, T) = {shape}, a text "
            f"`reference` must be a sequence of {shape[0]} strings. Received "
            f"{len(rows)}."
        )
    lengths = sorted({len(row) for row in rows})
    if lengths != [shape[-1]]:
        raise ValueError(
            f"Every text of `reference` must have T = {shape[-1]} characters, "
            f"one per step of `predicted`. Received length(s) {lengths}."
        )
    return rows


def token_scores(predicted, reference, separators=" \t\n", align="separator",
                 threshold=0.5):
    """Word-token precision, recall and F1: a word counts if both ends are right.

    The token measure of the word-segmentation literature: the predicted
    boundaries cut the sequence into segments, and a predicted segment is a
    correct token when its span is exactly that of a reference token (its
    start and its end are both right). Precision is the fraction of
    predicted tokens that are correct, recall the fraction of reference
    tokens found.

    Cuts. A boundary at step t marks the last character of a segment for
    `align="separator"` and `"before"` (a cut after t, the convention of
    `boundary_scores`: "a segment ends at t") and the first character of
    the next segment for `"after"` (a cut before t). The start and the end
    of each row are cuts too, so a row's first and last segments count.

    Against a text (`reference` a string), separators do not belong to any
    token. The reference tokens are the words, the maximal runs of
    non-separator characters. A predicted segment's token is the segment
    without the separators at its two ends: `"the "`, `" the"` and
    `"the"` all give the word "the", a segment of separators only gives no
    token, and a segment with a separator inside (`"the cat"`) spans two
    words and is wrong. Equivalently: delete the separators, move every cut
    to the same place among the remaining characters, and compare the
    spans. So a detector firing on the separator after each word and one
    firing on each word's last letter score the same here ("separator" and
    "before" give the same cuts); `aligned_boundary_scores` tells them
    apart.

    Against reference boundaries (`reference` an array of the shape of
    `predicted`, in the same alignment), both are cut the same way and
    every segment is a token, separators included: use it for units a text
    does not mark by separators (e.g. phrases).

    Args:
        predicted: Array `(T,)` or `(batch, T)` of predicted boundary values
            of one layer, e.g. `z[:, 0]`. Values above `threshold` are
            boundaries (booleans are taken as they are).
        reference: The text read, one character per step (a string, or a
            sequence of single characters; for `(batch, T)` a sequence of
            `batch` strings), or reference boundaries of the shape of
            `predicted` (0/1) in the alignment `align`.
        separators: The characters that separate words in a text
            `reference` (ignored for boundaries). Default: space, tab and
            newline; `"_"` for the character-level Penn Treebank.
        align: Where a predicted (and a reference) boundary sits:
            `"separator"` (default) or `"before"`: on the last character of
            a segment; `"after"`: on the first character of the next.
        threshold: Values above it are boundaries. Default: 0.5.

    Returns:
        A `BoundaryScores` namedtuple `(precision, recall, f1,
        true_positives, num_predicted, num_reference)` counting tokens,
        summed over the rows.

    Examples:

        >>> text = "the cat sat"
        >>> on_spaces = [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]      # "the |cat |sat"
        >>> token_scores(on_spaces, text).f1
        1.0
        >>> on_last_letters = [0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0]  # "the| cat| sat"
        >>> token_scores(on_last_letters, text).f1
        1.0
        >>> s = token_scores([0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0], text)  # "the |cat sat"
        >>> s.true_positives, s.num_predicted, s.num_reference
        (1, 2, 3)
        >>> s.precision, round(s.recall, 4), s.f1
        (0.5, 0.3333, 0.4)
        >>> token_scores(on_spaces, reference_boundaries(text)).f1  # boundaries
        1.0
    """
    _check_align(align)
    pred = _binary("predicted", predicted, threshold)
    texts = _reference_texts(reference, pred.shape)
    pred_rows = np.atleast_2d(pred)
    tp = n_pred = n_ref = 0
    if texts is not None:
        for row, text in zip(pred_rows, texts):
            is_sep = _separator_mask(text, separators)
            predicted_cuts = _letter_cuts(is_sep, _segment_cuts(row, align))
            reference_cuts = _word_cuts(is_sep)
            tp += _matched_tokens(predicted_cuts, reference_cuts)
            n_pred += predicted_cuts.size - 1
            n_ref += reference_cuts.size - 1
    else:
        ref = _binary("reference", reference, threshold)
        if ref.shape != pred.shape:
            raise ValueError(
                "`reference` must be a text of one character per step or "
                "boundaries of the shape of `predicted`, "
                f"{pred.shape}. Received boundaries of shape {ref.shape}."
            )
        for row, ref_row in zip(pred_rows, np.atleast_2d(ref)):
            predicted_cuts = _segment_cuts(row, align)
            reference_cuts = _segment_cuts(ref_row, align)
            tp += _matched_tokens(predicted_cuts, reference_cuts)
            n_pred += predicted_cuts.size - 1
            n_ref += reference_cuts.size - 1
    precision = tp / n_pred if n_pred else 0.0
    recall = tp / n_ref if n_ref else 0.0
    f1 = (2 * precision * recall / (precision + recall)
          if precision + recall > 0 else 0.0)
    return BoundaryScores(float(precision), float(recall), float(f1), int(tp),
                          int(n_pred), int(n_ref))
