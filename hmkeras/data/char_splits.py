"""A character corpus' three splits as ids, with the training text's vocabulary.

* `encode_splits`: the vocabulary of the training text and the ids of every
  split; symbols of the validation or test text that the training text
  lacks either raise or map to an unknown-symbol entry, counted.
* `unknown_symbol_for`: a symbol absent from a text, for that entry.
* `word_separators`: the characters between the words of a corpus.

Examples:

    >>> vocab, ids, unknown = encode_splits(
    ...     {"train": "abab", "validation": "abc", "test": "ba"}, map_unknown=True)
    >>> len(vocab), ids["validation"].tolist(), unknown
    (3, [0, 1, 2], {'validation': {'count': 1, 'symbols': ['c']}})
"""

from hmkeras.data.vocabulary import CharVocabulary

SPLITS = ("train", "validation", "test")


def word_separators(dataset):
    """The characters between the words of `dataset`'s text (`_` in the
    character-level PTB; the embedded corpus also has `,` and `.`).

    Examples:

        >>> word_separators("ptb_char"), word_separators("text8")
        ('_', ' \\t\\n')
    """
    return {"ptb_char": "_", "synthetic": " ,.\n"}.get(dataset, " \t\n")


def unknown_symbol_for(text):
    """A symbol absent from `text` for the unknown-symbol entry: U+FFFD
    (the replacement character), or the first private-use character the
    text lacks.

    Examples:

        >>> unknown_symbol_for("abc") == "\\ufffd", unknown_symbol_for("a\\ufffd")
        (True, '\\ue000')
    """
    present = set(text)
    return next(c for c in map(chr, [0xFFFD, *range(0xE000, 0xF900)]) if c not in present)


def encode_splits(texts, map_unknown=False):
    """`(vocab, ids, unknown)`: the vocabulary of the training text, the ids
    of every split and `{split: {"count": n, "symbols": [...]}}` for the
    splits with symbols the training text lacks.

    Args:
        texts: `{"train": ..., "validation": ..., "test": ...}`, str or bytes.
        map_unknown: Give the vocabulary an unknown-symbol entry
            (`unknown_symbol_for`) those symbols map to; False: an unknown
            symbol raises (never mapped silently).
    """
    train = texts["train"]
    vocab = CharVocabulary.from_text(
        train, unknown_symbol=unknown_symbol_for(train) if map_unknown else None)
    ids = {split: vocab.encode(text) for split, text in texts.items()}
    known, unknown = set(train), {}
    for split in ("validation", "test"):
        missing = [c for c in texts[split] if c not in known] if map_unknown else []
        if missing:
            unknown[split] = {"count": len(missing), "symbols": sorted(set(missing))}
    return vocab, ids, unknown
