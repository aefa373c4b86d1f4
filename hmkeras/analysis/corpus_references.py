"""Reference boundaries of a corpus' text, to score learned boundaries against.

A model may learn to mark a unit (a word, a phrase) on its last character,
on the separator that follows it, or after the whole run of separators
before the next unit; the references give each alignment, and the scores
(`boundary_metrics.aligned_boundary_scores`) are headlined by the best.

Examples:

    >>> refs = word_references("ab cd ", " ")
    >>> refs["words"]["separator"].tolist(), refs["words"]["last_char"].tolist()
    ([0, 0, 1, 0, 0, 1], [0, 1, 0, 0, 1, 0])
"""

import numpy as np

from hmkeras.analysis import boundary_metrics


def word_references(text, separators):
    """`{"words": {"separator": 0/1 array, "last_char": 0/1 array}}` of a
    text (bytes read as Latin-1): a boundary at every separator, and one on
    the last character of every word."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("latin-1")
    return {"words": {
        "separator": boundary_metrics.reference_boundaries(text, separators),
        "last_char": boundary_metrics.reference_boundaries(text, separators, "before"),
    }}


def synthetic_references(corpus, split, text, separators):
    """The word and phrase references of a `SyntheticHierarchicalCorpus` split.

    The corpus marks the last letter of every unit; the separator alignment
    puts the boundary one step later, on the separator that follows, as for
    real text (spaces, PTB's `_`) and as Chung et al. observe their
    detectors fire ("after it sees a space"); `last_separator` moves it to
    the last separator before the next unit (after `", "`).

    Returns:
        `{unit: {alignment: 0/1 array}}` for the units `"words"` and
        `"phrases"`, alignments `"separator"`, `"last_char"` and
        `"last_separator"`.
    """
    references = {}
    for unit, marks in (("words", corpus.word_boundaries(split)),
                        ("phrases", corpus.phrase_boundaries(split))):
        last_char = marks.astype(int)
        references[unit] = {
            "separator": np.concatenate([[0], last_char[:-1]]),
            "last_char": last_char,
            "last_separator": boundary_metrics.before_next_unit(last_char, text, separators),
        }
    return references
