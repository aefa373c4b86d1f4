"""Utterances: what the model reads has no space, the gold words are the
runs between spaces, bad lines are refused naming the source and line,
and split_utterances cuts between lines."""

import pytest

from hmkeras.data.utterances import Utterances
from hmkeras.data.utterances import split_utterances


def test_the_model_never_reads_a_space_and_the_gold_words_are_kept():
    u = Utterances.from_text("yu want tu\r\nsi  D6\tbUk\nhi")
    assert u.segmented == ("yu want tu", "si D6 bUk", "hi")
    assert u.text == "yuwanttu\nsiD6bUk\nhi\n"
    assert " " not in u.text and "\t" not in u.text
    assert u.has_words and len(u) == 3
    # Removing the spaces of the gold lines gives back the lines read.
    assert [line.replace(" ", "") for line in u.segmented] == u.text.split("\n")[:-1]


def test_a_text_without_spaces_has_no_gold_words():
    u = Utterances.from_text("abc\nde\n")
    assert not u.has_words and u.text == "abc\nde\n"


@pytest.mark.parametrize("text,match", [
    ("", "`corpus` holds no line"),
    ("a b\n\nc\n", "`corpus` line 2 is empty"),
    ("a b\n  \nc\n", "`corpus` line 2 is blank"),
    ("\n", "`corpus` line 1 is empty"),
])
def test_lines_without_a_symbol_are_refused(text, match):
    with pytest.raises(ValueError, match=match):
        Utterances.from_text(text, name="corpus")


def test_split_by_lines_in_order():
    u = Utterances.from_text("".join(f"w{i} x\n" for i in range(20)))
    train, valid, test = split_utterances(u, valid_fraction=0.1, test_fraction=0.25)
    assert (len(train), len(valid), len(test)) == (13, 2, 5)
    assert train.segmented + valid.segmented + test.segmented == u.segmented
    with pytest.raises(ValueError, match=r"The test part of `text_file` is empty: "
                                         r"`test_fraction`=0.01 of 20 lines"):
        split_utterances(u, test_fraction=0.01)
    with pytest.raises(ValueError, match="`valid_fraction` must be in"):
        split_utterances(u, valid_fraction=1.5)
