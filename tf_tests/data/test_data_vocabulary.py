"""Tests for hmkeras.data.vocabulary.CharVocabulary."""

import numpy as np
import pytest

from hmkeras.data.vocabulary import CharVocabulary


def test_sorted_deterministic_ids_and_round_trip():
    a = CharVocabulary.from_text("banana split\n")
    b = CharVocabulary.from_text("\ntilps ananab")
    assert a == b
    assert a.symbols == "\n abilnpst"
    assert len(a) == 10 and a.kind == "chars"
    ids = a.encode("last split")
    assert ids.dtype == np.int32
    assert ids.tolist() == [a.symbols.index(c) for c in "last split"]
    assert a.decode(ids) == "last split"
    assert a.id_of("t") == 9 and a.symbol_of(9) == "t"


def test_unknown_symbols_raise_listing_them():
    vocab = CharVocabulary.from_text("abc")
    with pytest.raises(ValueError, match=r"2 symbol\(s\).*\['d', 'z'\]"):
        vocab.encode("abzcdz")
    with pytest.raises(ValueError, match="not in the vocabulary"):
        vocab.id_of("q")


def test_explicit_unknown_symbol_maps_unknowns():
    vocab = CharVocabulary.from_text("abc", unknown_symbol="?")
    assert vocab.symbols == "?abc"
    assert vocab.unknown_id == 0
    assert vocab.decode(vocab.encode("axb")) == "a?b"
    with pytest.raises(ValueError, match="unknown_symbol"):
        CharVocabulary.from_text("abc", unknown_symbol="<unk>")


def test_byte_vocabulary():
    data = "naïve café\n".encode("utf-8")
    vocab = CharVocabulary.from_text(data)
    assert vocab.kind == "bytes"
    assert vocab.symbols == bytes(sorted(set(data)))
    assert vocab.decode(vocab.encode(data)) == data
    with pytest.raises(ValueError, match=r"\[120\]"):
        vocab.encode(b"x")
    with pytest.raises(ValueError, match="bytes"):
        vocab.encode("naive")
    with pytest.raises(ValueError, match="str"):
        CharVocabulary.from_text("abc").encode(b"abc")


@pytest.mark.parametrize("text, unk", [("héllo\t\n", None), ("abc", "_"),
                                       (b"\x00\xff\x10", None), (b"ab", 0)])
def test_json_round_trip(tmp_path, text, unk):
    vocab = CharVocabulary.from_text(text, unknown_symbol=unk)
    again = CharVocabulary.from_json(vocab.to_json())
    assert again == vocab and again.kind == vocab.kind
    assert again.encode(text).tolist() == vocab.encode(text).tolist()
    path = tmp_path / "vocab.json"
    vocab.save(path)
    assert CharVocabulary.load(path) == vocab


def test_invalid_arguments():
    with pytest.raises(ValueError, match="symbols"):
        CharVocabulary([])
    with pytest.raises(ValueError, match="single characters"):
        CharVocabulary(["ab", "c"])
    with pytest.raises(ValueError, match="0..255"):
        CharVocabulary([1, 300])
    with pytest.raises(ValueError, match="format"):
        CharVocabulary.from_json('{"symbols": ["a"]}')
    with pytest.raises(ValueError, match="ids"):
        CharVocabulary.from_text("ab").decode([0, 2])
