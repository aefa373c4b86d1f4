"""`WordVocabulary`: a deterministic word <-> id map for word-level LMs.

Ids are laid out as:

* ``0``: ``<pad>``, the padding of sentences shorter than the row length
  (weight 0 in the loss, never a target that counts);
* ``1``: ``<eos>``, the end of every sentence (the first input of a
  sentence and its last target, as in Mikolov et al.'s PTB stream);
* ``2``: ``<unk>`` when the vocabulary has an unknown token (PTB and
  WikiText-2 ship with ``<unk>`` in their text already; for your own text
  `from_sentences` adds it when words are left out by `max_size` or
  `min_count`);
* then the words, most frequent first (ties in alphabetical order), so the
  ids never depend on the order of the text.

Words outside the vocabulary map to ``<unk>``; a vocabulary without one
refuses them (`encode` raises a `ValueError` listing them) instead of
mapping them silently.

Examples:

    >>> vocab = WordVocabulary.from_sentences([["a", "b", "a"], ["c", "a"]])
    >>> vocab.words[:5]
    ['<pad>', '<eos>', 'a', 'b', 'c']
    >>> vocab.encode(["c", "a"]).tolist()
    [4, 2]
    >>> vocab.decode([4, 2, 1])
    ['c', 'a', '<eos>']
    >>> small = WordVocabulary.from_sentences([["a", "b", "a", "c"]], max_size=4)
    >>> small.words, small.encode(["a", "z"]).tolist()
    (['<pad>', '<eos>', '<unk>', 'a'], [3, 2])
    >>> vocab.encode(["d"])
    Traceback (most recent call last):
    ...
    ValueError: 1 word(s) not in the vocabulary and no unknown token: ['d']. Build the vocabulary with `unknown_token`, or from text that holds them.
"""

from __future__ import annotations

import collections
import json

import numpy as np

__all__ = ["WordVocabulary", "PAD", "EOS", "UNK"]

PAD = "<pad>"
EOS = "<eos>"
UNK = "<unk>"
_FORMAT = "hmkeras.WordVocabulary"


class WordVocabulary:
    """A word vocabulary with ``<pad>`` = 0, ``<eos>`` = 1 and optional
    ``<unk>`` = 2.

    Args:
      words: the words, in id order (the special tokens are put first and
        not repeated).
      unknown_token: None (unknown words raise) or the token unknown words
        map to (usually ``"<unk>"``); it gets id 2.

    Examples:

        >>> from hmkeras.data import WordVocabulary
        >>> vocab = WordVocabulary(["the", "cat", "sat"], unknown_token="<unk>")
        >>> vocab.words[:5]
        ['<pad>', '<eos>', '<unk>', 'the', 'cat']
        >>> vocab.encode(["the", "dog", "sat"]).tolist()  # dog is unknown
        [3, 2, 5]
        >>> vocab.decode([3, 4, 1])
        ['the', 'cat', '<eos>']
    """

    def __init__(self, words, unknown_token=None):
        if isinstance(words, str):
            raise ValueError("`words` must be a sequence of strings, not one str.")
        words = list(words)
        bad = [w for w in words if not isinstance(w, str) or not w or " " in w]
        if bad:
            raise ValueError(
                f"`words` must be non-empty strings without spaces, got {bad[:5]!r}."
            )
        if unknown_token is not None and (
            not isinstance(unknown_token, str) or unknown_token in (PAD, EOS)
        ):
            raise ValueError(
                f"`unknown_token` must be None or a string other than {PAD} "
                f"and {EOS}, got {unknown_token!r}."
            )
        specials = [PAD, EOS] + ([unknown_token] if unknown_token else [])
        ordered = specials + [w for w in dict.fromkeys(words) if w not in specials]
        self._words = ordered
        self._ids = {w: i for i, w in enumerate(ordered)}
        self.unknown_token = unknown_token

    @classmethod
    def from_sentences(cls, sentences, max_size=None, min_count=1,
                       unknown_token=UNK):
        """The vocabulary of a training corpus.

        Args:
          sentences: iterable of token lists.
          max_size: largest vocabulary (special tokens included), or None.
          min_count: words seen fewer times are left out.
          unknown_token: the token for left-out and unseen words (kept in
            the vocabulary only when a word is left out or the corpus holds
            it, e.g. PTB's ``<unk>``); None: no unknown token, so
            `max_size` / `min_count` must leave nothing out.
        """
        counts = collections.Counter(w for s in sentences for w in s)
        for special in (PAD, EOS):
            counts.pop(special, None)
        if max_size is not None and (
            isinstance(max_size, bool) or not isinstance(max_size, (int, np.integer))
            or max_size < 3
        ):
            raise ValueError(f"`max_size` must be None or an integer >= 3, got {max_size!r}.")
        if isinstance(min_count, bool) or not isinstance(min_count, (int, np.integer)) \
                or min_count < 1:
            raise ValueError(f"`min_count` must be an integer >= 1, got {min_count!r}.")
        has_unk = unknown_token is not None and unknown_token in counts
        if unknown_token is not None:
            counts.pop(unknown_token, None)
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        kept = [w for w, c in ranked if c >= min_count]
        dropped = len(kept) < len(ranked)
        if max_size is not None:
            if has_unk or dropped or len(kept) > max_size - 2:
                dropped = dropped or len(kept) > max_size - 3
                kept = kept[: max_size - 3]
        if dropped and unknown_token is None:
            raise ValueError(
                "`max_size` / `min_count` leave words out but `unknown_token` "
                "is None: give an unknown token."
            )
        return cls(kept, unknown_token if (has_unk or dropped) else None)

    @classmethod
    def from_splits(cls, train, others=(), max_size=None):
        """The vocabulary of the `train` sentences that encodes `others` too.

        `from_sentences(train, max_size)`, with ``<unk>`` added when a
        sentence of `others` (the validation and test splits) holds a word
        the vocabulary lacks. PTB and WikiText-2 carry ``<unk>`` in their
        training text already; a generated corpus or your own text may not.

        Args:
          train: iterable of token lists, the training split.
          others: the other splits, each an iterable of token lists.
          max_size: largest vocabulary (special tokens included), or None.

        Examples:

            >>> vocab = WordVocabulary.from_splits([["a", "b"]], others=[[["a", "c"]]])
            >>> vocab.words, vocab.encode(["c"]).tolist()
            (['<pad>', '<eos>', '<unk>', 'a', 'b'], [2])
            >>> print(WordVocabulary.from_splits([["a", "b"]], [[["b"]]]).unknown_token)
            None
        """
        vocab = cls.from_sentences(train, max_size=max_size)
        if vocab.unknown_token is None and any(vocab.count_unknown(part) for part in others):
            words = vocab.words[2:]
            vocab = cls(words if max_size is None else words[: max_size - 3],
                        unknown_token=UNK)
        return vocab

    # ------------------------------------------------------------------ ids
    @property
    def words(self) -> list:
        return list(self._words)

    def __len__(self) -> int:
        return len(self._words)

    pad_id = 0
    eos_id = 1

    @property
    def unknown_id(self):
        """Id of the unknown token, or None."""
        return None if self.unknown_token is None else self._ids[self.unknown_token]

    def encode(self, words) -> np.ndarray:
        """int32 ids of a token list (unknown words -> ``<unk>`` or error)."""
        ids = [self._ids.get(w, -1) for w in words]
        if -1 in ids:
            if self.unknown_token is None:
                missing = sorted({w for w, i in zip(words, ids) if i < 0})
                raise ValueError(
                    f"{len(missing)} word(s) not in the vocabulary and no "
                    f"unknown token: {missing[:20]}"
                    f"{' ...' if len(missing) > 20 else ''}. Build the "
                    "vocabulary with `unknown_token`, or from text that holds them."
                )
            unk = self.unknown_id
            ids = [unk if i < 0 else i for i in ids]
        return np.asarray(ids, dtype=np.int32)

    def decode(self, ids) -> list:
        """The tokens of `ids`."""
        ids = np.asarray(ids).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= len(self)):
            raise ValueError(f"`ids` must be in [0, {len(self)}).")
        return [self._words[int(i)] for i in ids]

    def count_unknown(self, sentences) -> int:
        """How many tokens of `sentences` are not in the vocabulary."""
        return sum(1 for s in sentences for w in s if w not in self._ids)

    # -------------------------------------------------------- serialization
    def get_config(self) -> dict:
        specials = 3 if self.unknown_token else 2
        return {"format": _FORMAT, "version": 1,
                "words": self._words[specials:],
                "unknown_token": self.unknown_token}

    @classmethod
    def from_config(cls, config):
        if config.get("format") != _FORMAT:
            raise ValueError(
                f"Not a serialized WordVocabulary: `format` is "
                f"{config.get('format')!r}, expected {_FORMAT!r}."
            )
        return cls(config["words"], config["unknown_token"])

    def save(self, path) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.get_config(), f, ensure_ascii=False)

    @classmethod
    def load(cls, path) -> "WordVocabulary":
        with open(path, encoding="utf-8") as f:
            return cls.from_config(json.load(f))

    def __eq__(self, other):
        return (isinstance(other, WordVocabulary) and self._words == other._words
                and self.unknown_token == other.unknown_token)

    def __hash__(self):
        return hash((tuple(self._words), self.unknown_token))

    def __repr__(self):
        return (f"WordVocabulary(size={len(self)}, unknown_token="
                f"{self.unknown_token!r})")
