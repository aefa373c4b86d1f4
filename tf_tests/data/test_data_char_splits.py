"""Tests of hmkeras.data.char_splits (a corpus' splits as ids)."""

import pytest

from hmkeras.data import char_splits


def test_unknown_symbols_are_counted_and_mapped():
    texts = {"train": "abcab", "validation": "abxx", "test": "cy"}
    vocab, ids, unknown = char_splits.encode_splits(texts, map_unknown=True)
    assert len(vocab) == 4  # a, b, c and the unknown symbol
    assert unknown == {"validation": {"count": 2, "symbols": ["x"]},
                       "test": {"count": 1, "symbols": ["y"]}}
    unk = vocab.encode("\ufffd")[0]
    assert ids["validation"].tolist()[2:] == [unk, unk]
    assert vocab.decode(ids["train"]) == "abcab"


def test_unknown_symbols_raise_without_mapping():
    with pytest.raises(Exception):
        char_splits.encode_splits({"train": "ab", "validation": "ax", "test": "a"})
    vocab, ids, unknown = char_splits.encode_splits(
        {"train": b"ab", "validation": b"ba", "test": b"a"})
    assert unknown == {} and ids["validation"].tolist() == [1, 0]


def test_unknown_symbol_is_absent_from_the_text():
    text = "\ufffd\ue000\ue001a"
    assert char_splits.unknown_symbol_for(text) == "\ue002"


def test_word_separators():
    assert char_splits.word_separators("ptb_char") == "_"
    assert set(" ,.\n") == set(char_splits.word_separators("synthetic"))
    assert char_splits.word_separators("enwik8") == " \t\n"
