"""Word discovery: unsupervised word segmentation scored as in the literature.

A learner reads utterances with the spaces between words removed (child-
directed speech in a phonemic transcription, the Brent corpus: Brent 1999;
Bernstein-Ratner 1987) and must put the word boundaries back. A
segmentation of an utterance is written as the utterance with its words
separated by single spaces: gold `"yu want tu si D6 bUk"`, a learner's
`"yuwant tu si D6bUk"`; both spell the same characters `"yuwanttusiD6bUk"`.

Scores follow Goldwater, Griffiths & Johnson (2009, "A Bayesian framework
for word segmentation", Cognition 112, Section 3.1) and the tables of
Kawakami, Dyer & Blunsom (2019, "Learning to discover, ground and use words
with segmental neural language models", ACL), summed over the whole corpus
(micro averages), each as precision, recall and F1 = 2PR / (P + R):

* Boundaries. Only utterance-internal boundaries count: a cut between two
  characters of the same utterance. The utterance edges are not boundaries
  (every segmentation has them, so they would inflate every score); a
  segmentation with no internal cut has boundary precision and recall 0.
* Tokens. A predicted word token is correct when its span (start, end) in
  its utterance is that of a gold word: both of its ends are right (the
  utterance edges count as right ends here, so a one-word utterance left
  whole is a correct token).
* Lexicon. The set of distinct predicted word strings (types) against the
  set of distinct gold ones: precision = |common types| / |predicted types|,
  recall = |common types| / |gold types|.

Boundaries as arrays. `utterance_boundaries` turns a segmented utterance
into its characters and one 0/1 value per character, 1 where a word ends
after that character (the alignment "a segment ends at t" of
`boundary_metrics`); the last character always ends a word, so its value
is always 1 and is no boundary for the scores. `segment_utterance` is the
inverse.

Baselines, which every learner should beat: `random_segmentation` (cuts at
a given rate, e.g. the gold `boundary_rate`),
`transition_probability_segmentation` (Saffran, Aslin & Newport 1996:
cut where the forward transitional probability dips) and
`entropy_segmentation` (cut where a language model's uncertainty about the
next symbol peaks or rises: Harris 1955; Elman 1990).

Examples:

    >>> gold = ["yu want tu si D6 bUk"]
    >>> predicted = ["yuwant tu si D6bUk"]
    >>> scores = score_segmentation(gold, predicted)
    >>> scores.boundary.true_positives, scores.boundary.num_predicted
    (3, 3)
    >>> scores.boundary.precision, scores.boundary.recall, round(scores.boundary.f1, 4)
    (1.0, 0.6, 0.75)
    >>> tuple(scores.token)[3:]  # true_positives, num_predicted, num_reference
    (2, 4, 6)
    >>> round(scores.token.f1, 4), round(scores.lexicon.f1, 4)
    (0.4, 0.4)
"""

import collections

import numpy as np

from hmkeras import argument_checks
from hmkeras.analysis.boundary_metrics import BoundaryScores


# ------------------------------------------------------------ the scores


class WordDiscoveryScores(
    collections.namedtuple(
        "WordDiscoveryScores", ["boundary", "token", "lexicon", "num_utterances"]
    )
):
    """Boundary, token and lexicon scores of a segmented corpus.

    Fields:
        boundary: `BoundaryScores(precision, recall, f1, true_positives,
            num_predicted, num_reference)` counting utterance-internal
            boundaries.
        token: `BoundaryScores` counting word tokens (a predicted token is
            a true positive when its span is a gold word's).
        lexicon: `BoundaryScores` counting word types (distinct strings):
            `true_positives` is the number of types in both lexicons.
        num_utterances: Number of utterances scored.
    """

    __slots__ = ()

    def as_dict(self):
        """JSON-ready nested dict: `{"boundary": {precision, recall, f1,
        true_positives, num_predicted, num_reference}, "token": {...},
        "lexicon": {...}, "num_utterances": int}`."""
        return {
            "boundary": dict(self.boundary._asdict()),
            "token": dict(self.token._asdict()),
            "lexicon": dict(self.lexicon._asdict()),
            "num_utterances": int(self.num_utterances),
        }


def _scores(true_positives, num_predicted, num_reference):
    """`BoundaryScores` from counts; 0.0 for a ratio with a zero denominator."""
    precision = true_positives / num_predicted if num_predicted else 0.0
    recall = true_positives / num_reference if num_reference else 0.0
    f1 = (2 * precision * recall / (precision + recall)
          if precision + recall > 0 else 0.0)
    return BoundaryScores(float(precision), float(recall), float(f1),
                          int(true_positives), int(num_predicted),
                          int(num_reference))


# ------------------------------------------------ utterances and boundaries


def _words(segmented, name):
    """The words of a segmented utterance; `name` is used in the errors."""
    if not isinstance(segmented, str):
        raise ValueError(
            f"`{name}` must be a string (a segmented utterance). Received a "
            f"{type(segmented).__name__}: {segmented!r}"
        )
    if not segmented:
        raise ValueError(f"`{name}` must not be empty. Received: ''")
    if any(c.isspace() and c != " " for c in segmented):
        raise ValueError(
            f"`{name}` must separate words by single spaces only, with no "
            f"tab, newline or other whitespace. Received: {segmented!r}"
        )
    words = segmented.split(" ")
    if "" in words:
        raise ValueError(
            f"`{name}` must separate words by single spaces, with no leading, "
            f"trailing or double space. Received: {segmented!r}"
        )
    return words


def _word_ends(words):
    """End positions (exclusive) of the words in the unspaced utterance."""
    return np.cumsum([len(w) for w in words])


def utterance_boundaries(segmented):
    """Characters and word-end boundaries of a segmented utterance.

    Args:
        segmented: A non-empty string of words separated by single spaces
            (no leading, trailing or double space, no other whitespace).

    Returns:
        `(chars, boundaries)`: `chars` the utterance without its spaces;
        `boundaries` an int8 array `(len(chars),)` with
        `boundaries[t] = 1` iff a word ends after character t. The last
        character always ends a word, so `boundaries[-1]` is always 1; it is
        an utterance edge, not a boundary for `score_segmentation`.

    Examples:

        >>> chars, b = utterance_boundaries("yu want tu")
        >>> chars, b.tolist()
        ('yuwanttu', [0, 1, 0, 0, 0, 1, 0, 1])
    """
    words = _words(segmented, "segmented")
    chars = "".join(words)
    boundaries = np.zeros(len(chars), dtype=np.int8)
    boundaries[_word_ends(words) - 1] = 1
    return chars, boundaries


def _check_chars(chars, name):
    """An unsegmented utterance: a non-empty string without whitespace."""
    if not isinstance(chars, str):
        raise ValueError(
            f"`{name}` must be a string (an unsegmented utterance). Received "
            f"a {type(chars).__name__}: {chars!r}"
        )
    if not chars:
        raise ValueError(f"`{name}` must not be empty. Received: ''")
    if any(c.isspace() for c in chars):
        raise ValueError(
            f"`{name}` must be an unsegmented utterance, without spaces or "
            f"other whitespace (`utterance_boundaries(s)[0]` removes the "
            f"spaces of a segmented one). Received: {chars!r}"
        )


def segment_utterance(chars, boundaries):
    """Writes an utterance with a space after every word end.

    The inverse of `utterance_boundaries`.

    Args:
        chars: The unsegmented utterance, a non-empty string without
            whitespace.
        boundaries: 0/1 values (ints, floats or bools), one per character:
            1 where a word ends after that character. The value of the last
            character may be 0 or 1: it adds no trailing space.

    Returns:
        The segmented utterance: words separated by single spaces.

    Examples:

        >>> segment_utterance("yuwanttu", [0, 1, 0, 0, 0, 1, 0, 1])
        'yu want tu'
        >>> segment_utterance("yuwanttu", [0, 0, 0, 0, 0, 0, 0, 0])
        'yuwanttu'
    """
    _check_chars(chars, "chars")
    b = np.asarray(boundaries)
    if b.shape != (len(chars),):
        raise ValueError(
            "`boundaries` must have one 0/1 value per character of `chars`: "
            f"shape ({len(chars)},). Received shape {b.shape}."
        )
    if b.dtype.kind not in "biuf" or not np.all((b == 0) | (b == 1)):
        raise ValueError(
            "`boundaries` must hold only 0 and 1 (or False and True). "
            f"Received: {b.tolist()!r}"
        )
    pieces = []
    for t, c in enumerate(chars):
        pieces.append(c)
        if b[t] and t < len(chars) - 1:
            pieces.append(" ")
    return "".join(pieces)


def _utterance_list(utterances, name):
    """A list of strings from a sequence of them (not a single string)."""
    if isinstance(utterances, (str, bytes)):
        raise ValueError(
            f"`{name}` must be a sequence of utterances (strings), not a "
            f"single string. Received: {utterances!r}"
        )
    try:
        utterances = list(utterances)
    except TypeError:
        raise ValueError(
            f"`{name}` must be a sequence of utterances (strings). Received "
            f"a {type(utterances).__name__}."
        ) from None
    return utterances


def _unsegmented_list(utterances, name):
    """Checked list of unsegmented utterances (non-empty, no whitespace)."""
    utterances = _utterance_list(utterances, name)
    for k, utterance in enumerate(utterances):
        _check_chars(utterance, f"{name}[{k}]")
    return utterances


def segmented_words(utterances, name="utterances"):
    """The checked utterances and the words of each, from a non-empty
    sequence of utterances whose words are separated by single spaces.

    Raises:
        ValueError: naming `name` (an argument of the caller) for anything
            else.

    Examples:

        >>> segmented_words(["yu want", "bUk"])
        (['yu want', 'bUk'], [['yu', 'want'], ['bUk']])
    """
    utterances = _utterance_list(utterances, name)
    if not utterances:
        raise ValueError(f"`{name}` must hold at least one utterance. "
                         "Received an empty sequence.")
    return utterances, [_words(u, f"{name}[{k}]")
                        for k, u in enumerate(utterances)]


# ----------------------------------------------------------------- scoring


def score_segmentation(gold, predicted):
    """Boundary, token and lexicon precision / recall / F1 of a segmentation.

    The conventions of the module docstring (Goldwater et al. 2009):
    utterance-internal boundaries only; a token is right when its span is a
    gold word's; the lexicon is compared as sets of word types. Counts are
    summed over all utterances before the ratios are taken.

    Args:
        gold: Sequence of gold segmented utterances (words separated by
            single spaces).
        predicted: Sequence of predicted segmented utterances, as many as
            `gold`, each spelling the same characters as its gold line once
            the spaces are removed.

    Returns:
        A `WordDiscoveryScores(boundary, token, lexicon, num_utterances)`.

    Examples:

        >>> gold = ["ab c", "de"]
        >>> s = score_segmentation(gold, ["a bc", "de"])
        >>> tuple(s.boundary)[3:]  # true_positives, num_predicted, num_reference
        (0, 1, 1)
        >>> tuple(s.token)[3:]     # "de" right; "a", "bc" wrong
        (1, 3, 3)
        >>> sorted(s.as_dict()), s.lexicon.f1 == s.token.f1
        (['boundary', 'lexicon', 'num_utterances', 'token'], True)
        >>> score_segmentation(gold, gold).as_dict()["token"]["f1"]
        1.0
    """
    gold, gold_words = segmented_words(gold, "gold")
    predicted, predicted_words = segmented_words(predicted, "predicted")
    if len(gold) != len(predicted):
        raise ValueError(
            "`gold` and `predicted` must hold as many utterances. Received "
            f"{len(gold)} and {len(predicted)}."
        )
    b_tp = b_pred = b_ref = 0
    t_tp = t_pred = t_ref = 0
    gold_types, predicted_types = set(), set()
    for k, (g_words, p_words) in enumerate(zip(gold_words, predicted_words)):
        if "".join(g_words) != "".join(p_words):
            raise ValueError(
                f"`gold` and `predicted` must spell the same characters line "
                f"by line once the spaces are removed. Line {k + 1} (index "
                f"{k}) differs: gold {gold[k]!r}, predicted {predicted[k]!r}."
            )
        g_ends, p_ends = _word_ends(g_words), _word_ends(p_words)
        # Boundaries: the word ends inside the utterance (the last end is the
        # utterance edge).
        g_cuts, p_cuts = set(g_ends[:-1].tolist()), set(p_ends[:-1].tolist())
        b_tp += len(g_cuts & p_cuts)
        b_pred += len(p_cuts)
        b_ref += len(g_cuts)
        # Tokens: spans (start, end), both ends right.
        g_spans = set(zip([0] + g_ends[:-1].tolist(), g_ends.tolist()))
        p_spans = set(zip([0] + p_ends[:-1].tolist(), p_ends.tolist()))
        t_tp += len(g_spans & p_spans)
        t_pred += len(p_spans)
        t_ref += len(g_spans)
        gold_types.update(g_words)
        predicted_types.update(p_words)
    return WordDiscoveryScores(
        boundary=_scores(b_tp, b_pred, b_ref),
        token=_scores(t_tp, t_pred, t_ref),
        lexicon=_scores(len(gold_types & predicted_types),
                        len(predicted_types), len(gold_types)),
        num_utterances=len(gold),
    )


def boundary_rate(segmented_utterances):
    """Fraction of utterance-internal positions that hold a word boundary.

    A position lies between two characters of the same utterance; an
    utterance of n characters has n - 1. The rate of a gold segmentation is
    the natural `rate` of `random_segmentation`.

    Args:
        segmented_utterances: Non-empty sequence of segmented utterances.

    Returns:
        A Python float in [0, 1].

    Examples:

        >>> boundary_rate(["ab c", "de"])  # a|b, b|c, d|e: one boundary of 3
        0.3333333333333333
    """
    _, all_words = segmented_words(segmented_utterances, "segmented_utterances")
    boundaries = sum(len(words) - 1 for words in all_words)
    positions = sum(len("".join(words)) - 1 for words in all_words)
    if positions == 0:
        raise ValueError(
            "`segmented_utterances` has no utterance-internal position: every "
            "utterance is a single character."
        )
    return boundaries / positions


# --------------------------------------------------------------- baselines


def random_segmentation(utterances, rate, seed=0):
    """Random baseline: an independent boundary at each internal position.

    Each position between two characters of an utterance holds a boundary
    with probability `rate`, drawn with `numpy.random.default_rng(seed)`,
    utterance after utterance (`len(u) - 1` uniform draws each).

    Args:
        utterances: Sequence of unsegmented utterances (non-empty strings
            without whitespace).
        rate: Probability of a boundary, in [0, 1]; e.g. the gold
            `boundary_rate` of the training split.
        seed: Seed of the random generator.

    Returns:
        A list of segmented utterances, one per utterance.

    Examples:

        >>> random_segmentation(["abc", "de"], 1.0)
        ['a b c', 'd e']
        >>> random_segmentation(["abc", "de"], 0.0)
        ['abc', 'de']
    """
    if isinstance(rate, bool) or not isinstance(rate, (int, float, np.number)) or not (
        0.0 <= rate <= 1.0
    ):
        raise ValueError(
            f"`rate` must be a number in [0, 1]. Received: {rate!r}"
        )
    utterances = _unsegmented_list(utterances, "utterances")
    rng = np.random.default_rng(seed)
    out = []
    for utterance in utterances:
        boundaries = np.zeros(len(utterance), dtype=np.int8)
        boundaries[:-1] = rng.random(len(utterance) - 1) < rate
        out.append(segment_utterance(utterance, boundaries))
    return out


def _transition_probabilities(train_utterances):
    """Forward TP(a -> b) = count(ab) / count(a first of a pair), as a dict."""
    pairs = collections.Counter()
    firsts = collections.Counter()
    for utterance in train_utterances:
        pairs.update(zip(utterance, utterance[1:]))
        firsts.update(utterance[:-1])
    return {pair: count / firsts[pair[0]] for pair, count in pairs.items()}


def transition_probability_segmentation(train_utterances, utterances):
    """Transitional-probability baseline: cut where TP has a local minimum.

    Saffran, Aslin & Newport (1996, "Statistical learning by 8-month-old
    infants", Science 274) showed that infants can find words from the
    forward transitional probability between syllables,

        TP(a -> b) = count(ab) / count(a followed by any symbol),

    high inside words and low across word boundaries. Here the symbols are
    characters (phonemes on Brent), counted over the pairs inside each
    training utterance (no pair spans two utterances, no utterance-edge
    symbol). An unseen pair, or a pair whose first character is unseen, has
    TP 0.

    Rule: in an utterance x_0 ... x_{n-1}, a boundary falls between x_i and
    x_{i+1} when TP(x_i -> x_{i+1}) is a strict local minimum among the
    utterance's n - 1 pair TPs: lower than the previous pair's TP, if there
    is one, and lower than the next pair's, if there is one. So the first
    and the last pair are compared with their one neighbour only, a pair
    with no neighbour (a two-character utterance) gets no boundary, and a
    flat dip (two equal lowest TPs side by side) gets none either.

    Args:
        train_utterances: Sequence of unsegmented utterances (non-empty
            strings without whitespace) to count the pairs in; may be
            `utterances` themselves (the learner is unsupervised).
        utterances: Sequence of unsegmented utterances to segment.

    Returns:
        A list of segmented utterances, one per utterance.

    Examples:

        >>> train = ["badi", "diba", "baku", "kuba", "diku", "kudi"]
        >>> # TP(b->a) = TP(d->i) = TP(k->u) = 1; across words 1/2
        >>> transition_probability_segmentation(train, ["badiku", "kuba", "ba"])
        ['ba di ku', 'ku ba', 'ba']
    """
    train_utterances = _unsegmented_list(train_utterances, "train_utterances")
    utterances = _unsegmented_list(utterances, "utterances")
    tps = _transition_probabilities(train_utterances)
    if not tps:
        raise ValueError(
            "`train_utterances` holds no pair of characters to count: it "
            "is empty or every utterance is a single character."
        )
    out = []
    for utterance in utterances:
        tp = np.array([tps.get(pair, 0.0)
                       for pair in zip(utterance, utterance[1:])])
        boundaries = np.zeros(len(utterance), dtype=np.int8)
        if tp.size >= 2:
            minimum = np.ones(tp.size, dtype=bool)
            minimum[1:] &= tp[1:] < tp[:-1]    # lower than the previous pair
            minimum[:-1] &= tp[:-1] < tp[1:]   # lower than the next pair
            boundaries[:-1] = minimum          # pair i cuts after x_i
        out.append(segment_utterance(utterance, boundaries))
    return out


_ENTROPY_RULES = ("peak", "rise")


def entropy_segmentation(utterances, entropies, rule="peak"):
    """Segmentation read from a language model's next-symbol uncertainty.

    Where a word ends, the next symbol is hard to predict (Harris 1955's
    successor variety; Elman 1990, "Finding structure in time", Fig. 6), so
    a peak or a rise of the model's predictive entropy (or of the surprisal
    of the next symbol) after character i marks a word ending at i.

    `entropies[k][i]` is the value for the symbol after character i of
    `utterances[k]`; the last value (the prediction of the utterance end)
    is never a boundary, so only the internal values e_0 ... e_{n-2} of an
    utterance of n characters are read:

    * `"peak"`: a boundary after character i when e_i is a local maximum:
      greater than e_{i-1} if i > 0, and greater than or equal to e_{i+1}
      if i < n - 2 (on a plateau reached by a rise, the first value is the
      peak). The first and the last internal value are compared with their
      one neighbour only, and the first must be strictly greater than the
      second (a plateau at the start of an utterance was reached by no
      rise: a constant signal marks no boundary). A lone internal value
      (n = 2) has no neighbour and gets no boundary, as in
      `transition_probability_segmentation`.
    * `"rise"`: a boundary after character i (1 <= i <= n - 2) when
      e_i - e_{i-1} > d, with d half the mean of |e_i - e_{i-1}| over every
      internal step of every utterance: a rise smaller than the typical
      change is no boundary (the rule `hmkeras.BoundaryPlacement(form="rise")`
      trains `z^1` towards).

    Args:
        utterances: Sequence of unsegmented utterances (non-empty strings
            without whitespace).
        entropies: Sequence of as many 1-D arrays of finite numbers,
            `entropies[k]` of length `len(utterances[k])`.
        rule: `"peak"` (default) or `"rise"`.

    Returns:
        A list of segmented utterances, one per utterance.

    Examples:

        >>> e = [[3.0, 1.0, 2.5, 0.5, 1.0, 0.7, 4.0]]  # the last value is unused
        >>> entropy_segmentation(["yuwantu"], e)        # peaks at 0, 2, 4
        ['y uw an tu']
        >>> entropy_segmentation(["yuwantu"], e, rule="rise")  # d = 0.63: only 2 rises more
        ['yuw antu']
        >>> entropy_segmentation(["abcd"], [[1.0, 1.1, 3.0, 0.0]], rule="rise")  # d = 0.5
        ['abc d']
    """
    if rule not in _ENTROPY_RULES:
        raise ValueError(
            f"`rule` must be 'peak' or 'rise'. Received: {rule!r}"
        )
    utterances = _unsegmented_list(utterances, "utterances")
    entropies = _utterance_list(entropies, "entropies")
    if len(entropies) != len(utterances):
        raise ValueError(
            "`entropies` must hold one array per utterance: "
            f"{len(utterances)}. Received {len(entropies)}."
        )
    checked = [_checked_entropies(k, utterance, values)
               for k, (utterance, values) in enumerate(zip(utterances, entropies))]
    if rule == "rise":
        typical = _typical_change(checked)
    out = []
    for utterance, e in zip(utterances, checked):
        internal = e[:-1]
        boundaries = np.zeros(len(utterance), dtype=np.int8)
        if rule == "peak":
            if internal.size >= 2:
                peak = np.ones(internal.size, dtype=bool)
                peak[1:] &= internal[1:] > internal[:-1]
                peak[:-1] &= internal[:-1] >= internal[1:]
                peak[0] = internal[0] > internal[1]  # no plateau at the start
                boundaries[:-1] = peak
        else:
            boundaries[1:-1] = internal[1:] - internal[:-1] > typical
        out.append(segment_utterance(utterance, boundaries))
    return out


def _typical_change(values, fraction=0.5):
    """`fraction` (half, by default) of the mean of |e_i - e_{i-1}| over the
    internal values of every utterance: the threshold `d` of the rule `"rise"`."""
    changes = [np.abs(np.diff(e[:-1])) for e in values]
    steps = sum(change.size for change in changes)
    return fraction * sum(change.sum() for change in changes) / max(steps, 1)


def _rises(values, fraction=0.5):
    """Per utterance of n characters, the rise beyond `d` of its internal
    values after character i, i = 0 .. n-2 (0 at i = 0, which has no
    earlier value)."""
    typical = _typical_change(values, fraction)
    out = []
    for e in values:
        rise = np.zeros(max(len(e) - 1, 0))
        rise[1:] = e[1:-1] - e[:-2] - typical
        out.append(rise)
    return out


def bidirectional_rises(utterances, forward, backward, rise_fraction=0.5):
    """Per utterance, the summed rise of both directions at each cut (the
    margin of `hmkeras.BoundaryPlacement(form="bidirectional")`'s Eq. 4).

    `forward[k][i]` is a forward model's value after character i of
    `utterances[k]` (as in `entropy_segmentation`); `backward[k][j]` a
    backward model's after reading the utterance's last j + 1 characters,
    last first (its value about the character before them). Each
    direction's rise beyond its own `d` (the rule `"rise"`, with `d` the
    `rise_fraction` of the direction's mean absolute change) is taken at
    the cut it reads, the backward rise at reversed j at the cut after
    character n-2-j; a rise a direction does not read counts 0 (the
    forward one at i = 0, the backward one at i = n-2).

    Args:
        utterances: Sequence of unsegmented utterances.
        forward: As many 1-D arrays, `forward[k]` of length `len(utterances[k])`.
        backward: Likewise, in each utterance's reversed order.
        rise_fraction: `d` as a fraction >= 0 of the mean absolute change;
            default 0.5, the placement's.

    Returns:
        A list of 1-D float64 arrays, one per utterance of n characters,
        of length n - 1: the summed rise at the cut after character i.

    Examples:

        >>> forward = [[0.0, 0.0, 0.0, 0.0, 0.0]]   # no forward rise
        >>> backward = [[0.0, 0.0, 0.0, 2.0, 0.0]]  # reversed j = 3: the cut after 0
        >>> bidirectional_rises(["abcde"], forward, backward)[0].round(3).tolist()
        [1.667, -0.333, -0.333, 0.0]
    """
    utterances = _unsegmented_list(utterances, "utterances")
    rise_fraction = argument_checks.check_float("rise_fraction", rise_fraction, minimum=0)
    checked = []
    for name, values in (("forward", forward), ("backward", backward)):
        values = _utterance_list(values, name)
        if len(values) != len(utterances):
            raise ValueError(
                f"`{name}` must hold one array per utterance: "
                f"{len(utterances)}. Received {len(values)}.")
        checked.append([_checked_entropies(k, utterance, v, name)
                        for k, (utterance, v) in enumerate(zip(utterances, values))])
    ahead, behind = (_rises(values, rise_fraction) for values in checked)
    return [a + b[::-1] for a, b in zip(ahead, behind)]


def bidirectional_segmentation(utterances, forward, backward, rise_fraction=0.5):
    """Segmentation by a rise read in both directions (the rule
    `hmkeras.BoundaryPlacement(form="bidirectional")` trains `z^1` towards,
    its Eq. 4): a boundary after character i (0 <= i <= n-2) where the
    two directions' rises sum to more than 0 (`bidirectional_rises`).

    Args:
        utterances: Sequence of unsegmented utterances.
        forward: As many 1-D arrays, `forward[k]` of length `len(utterances[k])`.
        backward: Likewise, in each utterance's reversed order.
        rise_fraction: Each direction's `d` as a fraction >= 0 of its mean
            absolute change (`bidirectional_rises`); default 0.5.

    Returns:
        A list of segmented utterances, one per utterance.

    Examples:

        >>> forward = [[0.0, 0.0, 0.0, 0.0, 0.0]]   # no forward rise
        >>> backward = [[0.0, 0.0, 0.0, 2.0, 0.0]]  # reversed j = 3: the cut after 0
        >>> bidirectional_segmentation(["abcde"], forward, backward)
        ['a bcde']
    """
    utterances = _unsegmented_list(utterances, "utterances")
    out = []
    summed_rises = bidirectional_rises(utterances, forward, backward, rise_fraction)
    for utterance, summed in zip(utterances, summed_rises):
        boundaries = np.zeros(len(utterance), dtype=np.int8)
        boundaries[:-1] = summed > 0
        out.append(segment_utterance(utterance, boundaries))
    return out


def _checked_entropies(k, utterance, values, name="entropies"):
    """`name[k]` (`entropies[k]`) as float64, checked against `utterances[k]`."""
    e = np.asarray(values)
    if e.shape != (len(utterance),) or e.dtype.kind not in "biuf":
        raise ValueError(
            f"`{name}[{k}]` must be a 1-D array of numbers with one "
            f"value per character of utterances[{k}] = {utterance!r}: "
            f"shape ({len(utterance)},). Received shape {e.shape}, "
            f"dtype {e.dtype}."
        )
    e = e.astype(np.float64)
    if not np.all(np.isfinite(e)):
        raise ValueError(
            f"`{name}[{k}]` must hold finite values. Received: "
            f"{e.tolist()!r}"
        )
    return e
