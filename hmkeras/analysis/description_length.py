"""Description length of a segmentation: a criterion that needs no gold words.

A segmentation of utterances into words is also a code for them: a
lexicon that spells each distinct word once, and the text written as a
sequence of lexicon entries.  Too few boundaries make a large lexicon of
long, rare strings; too many make a long text of short, frequent pieces.
The segmentation whose two parts are shortest together is the
minimum-description-length choice (Rissanen 1978), the criterion of
de Marcken (1996) and of Brent & Cartwright (1996) for word discovery.

With the segmentation's word types `w`, `n_w` the tokens of type `w`,
`N = sum_w n_w`, and `A` the number of distinct symbols of the utterances,
in bits:

    L = sum_w (|w| + 1) log2(A + 1)   +   sum_w -n_w log2(n_w / N)      (1)
        (the lexicon: each type spelled     (the text: each token coded by
         once, with an end-of-word mark)     its type's relative frequency)

Eq. (1) is the simplest two-part code (no cost for the counts
themselves); it is used to compare segmentations of the same utterances,
never across corpora.  `hmkeras.analysis.word_discovery` scores a
segmentation against gold words; this module says which of several
segmentations a learner without them would prefer.

Examples:

    Two tokens of one type against two types of one token each:

    >>> round(description_length(["ab ab"]), 4)  # 3 log2 3 + 2 * 0 bits
    4.7549
    >>> round(description_length(["abab"]), 4)   # 5 log2 3 + 0 bits
    7.9248
"""

import collections
import math

from hmkeras.analysis import word_discovery


def description_length(segmented_utterances, alphabet_size=None):
    """Eq. (1): the bits of the lexicon and of the text of a segmentation.

    Args:
        segmented_utterances: Sequence of utterances, words separated by
            single spaces (`"yu want tu"`).
        alphabet_size: `A` of Eq. (1); default: the number of distinct
            symbols (spaces excluded) in `segmented_utterances`. Give it
            when comparing segmentations of other symbols.

    Returns:
        The description length in bits, a float.

    Raises:
        ValueError: naming `segmented_utterances` for anything but
            utterances of words separated by single spaces, or
            `alphabet_size` for anything but an integer >= 1.

    Examples:

        Two types of one symbol (2 x 2 log2 3 bits), three tokens
        (-2 log2(2/3) - log2(1/3) bits):

        >>> round(description_length(["a b", "a"]), 4)
        9.0947
    """
    _, per_utterance = word_discovery.segmented_words(
        segmented_utterances, "segmented_utterances")
    words = [word for utterance in per_utterance for word in utterance]
    if alphabet_size is None:
        alphabet_size = len({symbol for word in words for symbol in word})
    if isinstance(alphabet_size, bool) or not isinstance(alphabet_size, int) or alphabet_size < 1:
        raise ValueError(f"`alphabet_size` must be an integer >= 1. Received: {alphabet_size!r}.")
    counts = collections.Counter(words)
    tokens = sum(counts.values())
    lexicon = sum((len(word) + 1) * math.log2(alphabet_size + 1) for word in counts)
    text = -sum(n * math.log2(n / tokens) for n in counts.values())
    return lexicon + text


def shortest_description(segmentations):
    """The key of the segmentation with the shortest description (Eq. 1).

    Args:
        segmentations: A non-empty mapping from a name (e.g. the threshold
            that made it) to a segmentation of the same utterances.

    Returns:
        The key of the shortest; of equal ones, the first.

    Raises:
        ValueError: naming `segmentations` when it is empty or its
            segmentations spell different utterances.

    Examples:

        >>> shortest_description({"none": ["abab", "ab"], "cut": ["ab ab", "ab"]})
        'cut'
    """
    if not segmentations:
        raise ValueError("`segmentations` must hold at least one segmentation. Received: {}.")
    spelled = {name: [line.replace(" ", "") for line in lines]
               for name, lines in segmentations.items()}
    first = next(iter(spelled.values()))
    for name, lines in spelled.items():
        if lines != first:
            raise ValueError(
                "`segmentations` must segment the same utterances: "
                f"{name!r} spells others than {next(iter(spelled))!r}.")
    alphabet = len({symbol for line in first for symbol in line})
    lengths = {name: description_length(lines, alphabet) for name, lines in segmentations.items()}
    return min(lengths, key=lengths.get)
