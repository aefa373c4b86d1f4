"""`hmkeras.analysis.description_length`: Eq. (1) against an independent
count, the choice it makes between segmentations, and its refusals."""

import math

import pytest

from hmkeras.analysis.description_length import description_length
from hmkeras.analysis.description_length import shortest_description


def reference_bits(lines, alphabet):
    """Eq. (1) written out from the tokens, without the module's helpers."""
    tokens = " ".join(lines).split()
    types = sorted(set(tokens))
    spelling = sum(len(t) + 1 for t in types) * math.log2(alphabet + 1)
    coding = sum(-math.log2(tokens.count(t) / len(tokens)) for t in tokens)
    return spelling + coding


def test_equation_1_against_a_count_by_hand():
    lines = ["yu want tu si D6 bUk", "yu want D6 bUk", "lUk"]
    alphabet = len(set("".join(lines).replace(" ", "")))
    assert description_length(lines) == pytest.approx(reference_bits(lines, alphabet), rel=1e-12)
    # A given alphabet replaces the counted one.
    assert description_length(lines, alphabet_size=40) == pytest.approx(
        reference_bits(lines, 40), rel=1e-12)


def test_the_words_of_a_repeated_vocabulary_describe_it_shortest():
    # Three words in every order: cutting at their ends is shorter than
    # leaving each utterance whole or cutting every symbol.
    words = ["bUk", "D6", "want"]
    utterances = [f"{a}{b}{c}" for a in words for b in words for c in words]
    gold = [" ".join(w for w in words_of(u, words)) for u in utterances]
    candidates = {
        "whole": utterances,
        "words": gold,
        "symbols": [" ".join(u) for u in utterances],
    }
    assert shortest_description(candidates) == "words"
    assert description_length(gold) < min(description_length(candidates[k])
                                          for k in ("whole", "symbols"))


def words_of(utterance, words):
    """The words of `utterance`, spelled from `words` (unambiguous here)."""
    out = []
    while utterance:
        word = next(w for w in words if utterance.startswith(w))
        out.append(word)
        utterance = utterance[len(word):]
    return out


def test_ties_go_to_the_first():
    assert shortest_description({"a": ["ab"], "b": ["ab"]}) == "a"


@pytest.mark.parametrize("lines, alphabet, match", [
    (["a  b"], None, "segmented_utterances"),
    ([], None, "segmented_utterances"),
    ("ab", None, "segmented_utterances"),
    (["ab"], 0, "alphabet_size"),
    (["ab"], 2.0, "alphabet_size"),
    (["ab"], True, "alphabet_size"),
])
def test_bad_input_names_the_argument(lines, alphabet, match):
    with pytest.raises(ValueError, match=match):
        description_length(lines, alphabet_size=alphabet)


def test_segmentations_of_other_utterances_are_refused():
    with pytest.raises(ValueError, match="segmentations"):
        shortest_description({})
    with pytest.raises(ValueError, match="same utterances"):
        shortest_description({"a": ["ab"], "b": ["a c"]})
