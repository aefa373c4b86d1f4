"""`CharVocabulary`: a deterministic symbol <-> id map for character LMs.

A vocabulary is built from a training text, either a `str` (symbols are
Unicode characters, e.g. PTB char, text8, the synthetic corpus) or `bytes`
(symbols are byte values 0-255, e.g. enwik8 and WikiText-2 at the byte
level as in Krause et al., "Multiplicative LSTM for sequence modelling").
Symbols are sorted (code point or byte value), so ids do not depend on the
order of the text. Unknown symbols are never mapped silently: `encode`
raises a `ValueError` that lists them, unless the vocabulary was built with
an explicit `unknown_symbol`.

Examples:

    >>> vocab = CharVocabulary.from_text("hello world")
    >>> vocab.symbols
    ' dehlorw'
    >>> ids = vocab.encode("hold")
    >>> ids.tolist()
    [3, 5, 4, 1]
    >>> vocab.decode(ids)
    'hold'
    >>> CharVocabulary.from_json(vocab.to_json()) == vocab
    True
    >>> vocab.encode("help!")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: Text has 2 symbol(s) not in the vocabulary: ['!', 'p']...
"""

from __future__ import annotations

import json
from typing import Iterable, Union

import numpy as np

__all__ = ["CharVocabulary"]

_FORMAT = "hmkeras.CharVocabulary"
_KINDS = ("chars", "bytes")

Text = Union[str, bytes, bytearray]


def _codes(text: Text) -> np.ndarray:
    """Code points of a str, or byte values of bytes, as an int64 array."""
    if isinstance(text, str):
        return np.frombuffer(text.encode("utf-32-le"), dtype="<u4").astype(
            np.int64
        )
    if isinstance(text, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(text), dtype=np.uint8).astype(np.int64)
    raise ValueError(
        f"`text` must be str or bytes, got {type(text).__name__}."
    )


class CharVocabulary:
    """A sorted, deterministic character (or byte) vocabulary.

    Args:
      symbols: the symbols: a str / iterable of 1-character strings (kind
        "chars"), or bytes / iterable of ints in 0..255 (kind "bytes").
        Duplicates are removed and the symbols sorted; id ``i`` is the
        ``i``-th smallest symbol.
      unknown_symbol: `None` (default): `encode` raises on symbols outside
        the vocabulary. Otherwise a symbol of the same kind (a 1-character
        string, or an int byte value) that unknown symbols are mapped to; it
        is added to the vocabulary if missing. Decoding gives it back as is.

    Use `CharVocabulary.from_text(train_text)` to build one from a corpus.

    Examples:

        >>> from hmkeras.data import CharVocabulary
        >>> vocab = CharVocabulary.from_text("hello world")
        >>> len(vocab), vocab.symbols  # sorted, id i is the i-th symbol
        (8, ' dehlorw')
        >>> ids = vocab.encode("held")
        >>> ids.tolist(), vocab.decode(ids)
        ([3, 2, 4, 1], 'held')
        >>> lenient = CharVocabulary("abc", unknown_symbol="?")
        >>> lenient.decode(lenient.encode("abz"))
        'ab?'
    """

    def __init__(self, symbols: Iterable, unknown_symbol=None):
        if isinstance(symbols, (bytes, bytearray)):
            symbols = list(symbols)
        elif isinstance(symbols, str):
            symbols = list(symbols)
        else:
            symbols = list(symbols)
        if not symbols:
            raise ValueError("`symbols` must hold at least one symbol, got none.")
        if all(isinstance(s, str) for s in symbols):
            kind = "chars"
            if any(len(s) != 1 for s in symbols):
                bad = sorted({s for s in symbols if len(s) != 1})[:5]
                raise ValueError(
                    f"`symbols` must be single characters, got {bad}."
                )
        elif all(
            isinstance(s, (int, np.integer)) and not isinstance(s, bool)
            for s in symbols
        ):
            kind = "bytes"
            if any(not 0 <= s <= 255 for s in symbols):
                raise ValueError("`symbols` of kind 'bytes' must be in 0..255.")
        else:
            raise ValueError(
                "`symbols` must be all 1-character strings (kind 'chars') or "
                "all ints in 0..255 (kind 'bytes')."
            )
        symbols = [s if kind == "chars" else int(s) for s in symbols]
        if unknown_symbol is not None:
            ok = (
                isinstance(unknown_symbol, str) and len(unknown_symbol) == 1
                if kind == "chars"
                else isinstance(unknown_symbol, (int, np.integer))
                and not isinstance(unknown_symbol, bool)
                and 0 <= unknown_symbol <= 255
            )
            if not ok:
                allowed = (
                    "a 1-character string" if kind == "chars"
                    else "an int in 0..255"
                )
                raise ValueError(
                    f"`unknown_symbol` must be None or {allowed} for a "
                    f"vocabulary of kind {kind!r}, got {unknown_symbol!r}."
                )
            if kind == "bytes":
                unknown_symbol = int(unknown_symbol)
            symbols.append(unknown_symbol)
        self._kind = kind
        self._symbols = tuple(sorted(set(symbols)))
        self._unknown_symbol = unknown_symbol
        codes = [ord(s) if kind == "chars" else s for s in self._symbols]
        self._codes = np.asarray(codes, dtype=np.int64)
        self._index = {s: i for i, s in enumerate(self._symbols)}

    @classmethod
    def from_text(cls, text: Text, unknown_symbol=None) -> "CharVocabulary":
        """Builds the vocabulary of the distinct symbols of `text`."""
        codes = np.unique(_codes(text))
        if isinstance(text, str):
            symbols = [chr(c) for c in codes.tolist()]
        else:
            symbols = codes.tolist()
        return cls(symbols, unknown_symbol=unknown_symbol)

    # ------------------------------------------------------------- properties
    @property
    def kind(self) -> str:
        """'chars' (str symbols) or 'bytes' (byte values)."""
        return self._kind

    @property
    def symbols(self):
        """The sorted symbols: a str (kind 'chars') or bytes (kind 'bytes')."""
        if self._kind == "chars":
            return "".join(self._symbols)
        return bytes(self._symbols)

    @property
    def unknown_symbol(self):
        return self._unknown_symbol

    @property
    def unknown_id(self):
        """Id of the unknown symbol, or None when unknown symbols raise."""
        if self._unknown_symbol is None:
            return None
        return self._index[self._unknown_symbol]

    def __len__(self) -> int:
        return len(self._symbols)

    @property
    def size(self) -> int:
        return len(self._symbols)

    def id_of(self, symbol) -> int:
        """The id of one symbol (ValueError if unknown and no unknown symbol)."""
        if symbol in self._index:
            return self._index[symbol]
        if self._unknown_symbol is not None:
            return self._index[self._unknown_symbol]
        raise ValueError(f"Symbol {symbol!r} is not in the vocabulary.")

    def symbol_of(self, idx: int):
        return self._symbols[idx]

    # ---------------------------------------------------------- encode/decode
    def encode(self, text: Text) -> np.ndarray:
        """Maps `text` to an int32 array of ids.

        Raises:
          ValueError: `text` holds symbols outside the vocabulary (they are
            listed) and the vocabulary has no `unknown_symbol`; or `text` is
            of the wrong kind (str for a byte vocabulary or vice versa).
        """
        if self._kind == "chars" and not isinstance(text, str):
            raise ValueError(
                "`text` must be a str for a vocabulary of kind 'chars', got "
                f"{type(text).__name__}."
            )
        if self._kind == "bytes" and isinstance(text, str):
            raise ValueError(
                "`text` must be bytes for a vocabulary of kind 'bytes', got "
                "str (encode it, e.g. text.encode('utf-8'))."
            )
        codes = _codes(text)
        ids = np.searchsorted(self._codes, codes)
        ids = np.minimum(ids, len(self._codes) - 1)
        known = self._codes[ids] == codes
        if not known.all():
            if self._unknown_symbol is None:
                unknown = np.unique(codes[~known]).tolist()
                shown = [chr(c) if self._kind == "chars" else c for c in unknown]
                raise ValueError(
                    f"Text has {len(unknown)} symbol(s) not in the vocabulary: "
                    f"{shown[:50]}{' ...' if len(shown) > 50 else ''}. Build "
                    "the vocabulary from text that holds them, or pass an "
                    "explicit `unknown_symbol` to map them to."
                )
            ids = np.where(known, ids, self.unknown_id)
        return ids.astype(np.int32)

    def decode(self, ids) -> Text:
        """Maps ids back to a str (kind 'chars') or bytes (kind 'bytes')."""
        ids = np.asarray(ids)
        if ids.size and (
            not np.issubdtype(ids.dtype, np.integer)
            or ids.min() < 0
            or ids.max() >= len(self)
        ):
            raise ValueError(
                f"`ids` must be integers in [0, {len(self)}), got values in "
                f"[{ids.min()}, {ids.max()}]."
            )
        codes = self._codes[ids.reshape(-1).astype(np.int64)]
        if self._kind == "chars":
            return codes.astype("<u4").tobytes().decode("utf-32-le")
        return codes.astype(np.uint8).tobytes()

    # ----------------------------------------------------------- serialization
    def get_config(self) -> dict:
        """A JSON-compatible dict; `CharVocabulary.from_config` inverts it."""
        return {
            "format": _FORMAT,
            "version": 1,
            "kind": self._kind,
            "symbols": list(self._symbols),
            "unknown_symbol": self._unknown_symbol,
        }

    @classmethod
    def from_config(cls, config: dict) -> "CharVocabulary":
        if config.get("format") != _FORMAT:
            raise ValueError(
                f"Not a serialized CharVocabulary: `format` is "
                f"{config.get('format')!r}, expected {_FORMAT!r}."
            )
        if config.get("kind") not in _KINDS:
            raise ValueError(
                f"`kind` must be one of {list(_KINDS)}, got "
                f"{config.get('kind')!r}."
            )
        vocab = cls(config["symbols"], unknown_symbol=config["unknown_symbol"])
        if vocab.kind != config["kind"]:
            raise ValueError(
                f"`kind` is {config['kind']!r} but the symbols are of kind "
                f"{vocab.kind!r}."
            )
        return vocab

    def to_json(self) -> str:
        """Serializes to a JSON string (symbols as strings or byte values)."""
        return json.dumps(self.get_config(), ensure_ascii=True)

    @classmethod
    def from_json(cls, text: str) -> "CharVocabulary":
        return cls.from_config(json.loads(text))

    def save(self, path) -> None:
        """Writes the JSON serialization to `path`."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json())

    @classmethod
    def load(cls, path) -> "CharVocabulary":
        with open(path, encoding="utf-8") as f:
            return cls.from_json(f.read())

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, CharVocabulary)
            and self._kind == other._kind
            and self._symbols == other._symbols
            and self._unknown_symbol == other._unknown_symbol
        )

    def __hash__(self):
        return hash((self._kind, self._symbols, self._unknown_symbol))

    def __repr__(self) -> str:
        return (
            f"CharVocabulary(kind={self._kind!r}, size={len(self)}, "
            f"unknown_symbol={self._unknown_symbol!r})"
        )
