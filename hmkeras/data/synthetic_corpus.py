"""An embedded synthetic hierarchical text corpus with a known entropy rate.

`SyntheticHierarchicalCorpus` generates, from a seed and without any
download, English-like text with three levels of structure:

* **words** spelled with the letters a-z from a fixed lexicon of 80 words (generated once from a fixed seed) in
  six word classes (determiners, adjectives, nouns, verbs, adverbs,
  prepositions); inside a class, word ``k`` (0-based) has probability
  proportional to ``1 / (k + 1)`` (Zipf's law);
* **phrases** built from a template of word-class slots (noun, verb and
  prepositional phrases, some slots optional or repeated), words separated by
  a single space;
* **sentences**: a first-order Markov chain over phrase types that stops at a
  random point; phrases are separated by ``", "`` and a sentence ends with
  ``".\\n"``.

A sample::

    qi helo, zu xesuzu, mo qi wezhe.
    xe zilozu kehe, cab yitbu.

The symbols are the 26 letters, space, comma, full stop and newline (30 in
all; the vocabulary of a split holds those that occur in it).

Ground truth boundaries
-----------------------
For every character position the corpus returns whether a word, a phrase or a
sentence **ends there**; the convention is *the boundary sits on the last
letter of the unit* (for ``"ab cd, ef.\\n"`` the word boundaries are at
``b``, ``d`` and ``f``, the phrase boundaries at ``d`` and ``f``, the
sentence boundary at ``f``). Separators carry no boundary. A phrase boundary
is always a word boundary and a sentence boundary always a phrase boundary.
This is the structure that the boundary detectors of a hierarchical
multiscale RNN (Chung, Ahn and Bengio, "Hierarchical Multiscale Recurrent
Neural Networks", ICLR 2017) are meant to discover.

Exact entropy rate
------------------
``entropy_rate_bits_per_char`` is computed from the generator's tables, with
no sampling:

1. *Unique decodability.* Every word string of the lexicon is unique and made
   of letters only; separators are not letters; inside a phrase template no
   two slots share a word class, so the run lengths of the slots can be read
   back from the word classes; the first slot of every phrase type is
   mandatory and has a class that starts no other phrase type. Hence the map
   from the generator's random choices of one sentence (phrase types, slot
   counts, words) to its text is injective, so ``H(sentence text) =
   H(choices)``; and because ``"\\n"`` occurs only at the end of a sentence,
   the sentence code is prefix-free.
2. *Entropy of one sentence (chain rule).* With ``s`` the start distribution
   over phrase types, ``Q`` the sub-stochastic type-to-type transition matrix
   and ``T_t`` the full next-step distribution of type ``t`` (types and
   END), the expected number of phrases of type ``t`` in a sentence is
   ``n = s (I - Q)^-1`` (fundamental matrix of the absorbing chain), and

       E[H(sentence)] = H(s) + sum_t n_t [H(T_t) + H_t],
       H_t = sum over slots (c, q) of [H(q) + E_q[count] * H_c],

   where ``H_c`` is the entropy of the word distribution of class ``c`` and
   ``q`` the distribution of the slot's word count.
3. *Expected length.* With ``l_c`` the expected spelling length of class
   ``c``, a phrase of type ``t`` has ``E[letters] = sum E_q[count] l_c`` and
   ``E[words] - 1`` spaces (a phrase always has at least one word); each
   phrase also carries two separator characters (``", "`` or ``".\\n"``):

       E[L] = sum_t n_t (E[letters_t] + E[words_t] - 1 + 2).

4. *Renewal-reward.* Sentences are i.i.d. and form a prefix-free code, so the
   entropy rate of the character stream is ``E[H(sentence)] / E[L]`` bits
   per character.

No model can do better on average than this rate; the per-split value
``true_bits_per_char(split)`` is the exact code length of the generated split
under the generator itself (it tends to the entropy rate as the split grows).

Examples:

    >>> corpus = SyntheticHierarchicalCorpus(seed=0, train_chars=20_000,
    ...                                      valid_chars=2_000, test_chars=2_000)
    >>> text = corpus.text("train")
    >>> len(text) == len(corpus.word_boundaries("train"))
    True
    >>> round(corpus.entropy_rate_bits_per_char, 4)
    0.7682
"""

from __future__ import annotations

import bisect
import math
from typing import Mapping, Sequence

import numpy as np

__all__ = ["SyntheticHierarchicalCorpus", "SPLITS"]

SPLITS = ("train", "validation", "test")

_END = "<end>"
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_CONSONANTS = "bcdfghjklmnpqrstvwxyz"
_VOWELS = "aeiou"
_WORD_SEPARATOR = " "
_PHRASE_SEPARATOR = ", "
_SENTENCE_END = ".\n"

# Word classes: (name, number of words, syllable-count distribution).
_WORD_CLASSES = (
    ("det", 4, {1: 1.0}),
    ("prep", 6, {1: 0.6, 2: 0.4}),
    ("adv", 8, {2: 0.7, 3: 0.3}),
    ("adj", 14, {1: 0.3, 2: 0.5, 3: 0.2}),
    ("verb", 18, {1: 0.4, 2: 0.4, 3: 0.2}),
    ("noun", 30, {1: 0.3, 2: 0.5, 3: 0.2}),
)

# Phrase templates: a sequence of (word class, {count: probability}) slots.
_PHRASE_TYPES = {
    "noun_phrase": (
        ("det", {1: 1.0}),
        ("adj", {0: 0.5, 1: 0.35, 2: 0.15}),
        ("noun", {1: 1.0}),
    ),
    "verb_phrase": (
        ("verb", {1: 1.0}),
        ("adv", {0: 0.6, 1: 0.4}),
    ),
    "prep_phrase": (
        ("prep", {1: 1.0}),
        ("det", {1: 1.0}),
        ("adj", {0: 0.7, 1: 0.3}),
        ("noun", {1: 1.0}),
    ),
}

# Sentence grammar: a Markov chain over phrase types, absorbed in _END.
_START = {"noun_phrase": 0.75, "prep_phrase": 0.25}
_TRANSITIONS = {
    "noun_phrase": {"verb_phrase": 0.7, "prep_phrase": 0.15, _END: 0.15},
    "verb_phrase": {"noun_phrase": 0.55, "prep_phrase": 0.2, _END: 0.25},
    "prep_phrase": {"noun_phrase": 0.5, "verb_phrase": 0.2, _END: 0.3},
}

_LEXICON_SEED = 20170101  # fixed: the lexicon is part of the corpus definition
_SPLIT_STREAM = {"train": 0, "validation": 1, "test": 2}


class _Uniforms:
    """Uniform draws in [0, 1) from PCG64's raw 64-bit stream.

    NumPy guarantees the raw stream of a BitGenerator to be stable across
    releases (unlike `Generator` methods), so a seed gives the same corpus on
    every NumPy version.
    """

    def __init__(self, seed_words: Sequence[int], block: int = 1 << 16):
        self._bits = np.random.PCG64(np.random.SeedSequence(list(seed_words)))
        self._block = block
        self._buffer: list[float] = []
        self._pos = 0

    def __call__(self) -> float:
        if self._pos == len(self._buffer):
            raw = self._bits.random_raw(self._block)
            self._buffer = ((raw >> np.uint64(11)) * (2.0**-53)).tolist()
            self._pos = 0
        u = self._buffer[self._pos]
        self._pos += 1
        return u


class _Categorical:
    """A finite distribution sampled by inverse CDF, with exact log2-probs."""

    def __init__(self, outcomes: Sequence, probs: Sequence[float]):
        probs = np.asarray(probs, dtype=np.float64)
        if np.any(probs <= 0) or abs(probs.sum() - 1.0) > 1e-12:
            raise ValueError(f"bad distribution {dict(zip(outcomes, probs))}")
        self.outcomes = tuple(outcomes)
        self.probs = probs
        self.log2_probs = np.log2(probs).tolist()
        self._cdf = np.cumsum(probs).tolist()
        self._cdf[-1] = 1.0

    def sample(self, u: float) -> int:
        """Index of the outcome drawn with the uniform `u`."""
        return min(bisect.bisect_right(self._cdf, u), len(self._cdf) - 1)

    @property
    def entropy(self) -> float:
        return float(-np.sum(self.probs * np.log2(self.probs)))

    def mean(self, values: Sequence[float]) -> float:
        return float(np.dot(self.probs, np.asarray(values, dtype=np.float64)))


def _build_lexicon() -> dict[str, tuple[str, ...]]:
    """Spells the words of every class: unique strings of CV(C) syllables."""
    draw = _Uniforms([_LEXICON_SEED])
    seen: set[str] = set()
    lexicon = {}
    for name, size, syllables in _WORD_CLASSES:
        counts = _Categorical(list(syllables), list(syllables.values()))
        words = []
        while len(words) < size:
            n = counts.outcomes[counts.sample(draw())]
            word = ""
            for _ in range(n):
                word += _CONSONANTS[int(draw() * len(_CONSONANTS))]
                word += _VOWELS[int(draw() * len(_VOWELS))]
                if draw() < 0.25:
                    word += _CONSONANTS[int(draw() * len(_CONSONANTS))]
            if word not in seen:
                seen.add(word)
                words.append(word)
        lexicon[name] = tuple(words)
    return lexicon


def _check_int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(
            f"`{name}` must be an integer >= {minimum}, got {value!r}."
        )
    if value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}, got {value}.")
    return int(value)


def _check_split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(
            f"`split` must be one of {list(SPLITS)}, got {split!r}."
        )
    return split


class SyntheticHierarchicalCorpus:
    """Deterministic synthetic text with words, phrases, sentences.

    See the module docstring for the grammar, the boundary convention and the
    derivation of the exact entropy rate.

    Args:
      seed: non-negative int; the splits are drawn from independent streams
        of this seed (the lexicon and grammar do not depend on it, so neither
        does the entropy rate).
      train_chars, valid_chars, test_chars: minimum number of characters of
        each split. A split is made of whole sentences: generation stops at
        the end of the first sentence that reaches the size, so a split is at
        most one sentence longer than asked.

    Attributes:
      lexicon: ``{word class: tuple of words}``; word ``k`` of a class has
        probability proportional to ``1 / (k + 1)``.
      phrase_types: ``{phrase type: ((word class, {count: prob}), ...)}``.
      start_probs: ``{phrase type: prob}`` of the first phrase.
      transition_probs: ``{phrase type: {next type or END: prob}}``.
      END: the name of the absorbing "end of sentence" state.
      entropy_rate_bits_per_char: exact entropy rate of the character stream.
      mean_sentence_chars / mean_sentence_bits: the two renewal-reward terms.

    Examples:

        >>> corpus = SyntheticHierarchicalCorpus(seed=1, train_chars=5_000,
        ...                                      valid_chars=500, test_chars=500)
        >>> text = corpus.text("validation")
        >>> text.endswith(".\\n")
        True
        >>> bool(corpus.phrase_boundaries("validation")[text.index(",") - 1])
        True
    """

    END = _END

    def __init__(
        self,
        seed: int = 0,
        train_chars: int = 1_000_000,
        valid_chars: int = 50_000,
        test_chars: int = 50_000,
    ):
        self.seed = _check_int("seed", seed, 0)
        self.split_chars = {
            "train": _check_int("train_chars", train_chars, 1),
            "validation": _check_int("valid_chars", valid_chars, 1),
            "test": _check_int("test_chars", test_chars, 1),
        }
        self.lexicon = _build_lexicon()
        self.phrase_types = _PHRASE_TYPES
        self.start_probs = _START
        self.transition_probs = _TRANSITIONS
        self._compile_tables()
        self.mean_sentence_bits, self.mean_sentence_chars = self._exact_moments()
        self.entropy_rate_bits_per_char = (
            self.mean_sentence_bits / self.mean_sentence_chars
        )
        self._cache: dict[str, tuple] = {}

    # ------------------------------------------------------------------ tables
    def _compile_tables(self):
        self._word_dists = {}
        for name, words in self.lexicon.items():
            weights = 1.0 / np.arange(1, len(words) + 1)
            self._word_dists[name] = _Categorical(words, weights / weights.sum())
        self._slot_dists = {
            t: [(c, _Categorical(list(q), list(q.values()))) for c, q in slots]
            for t, slots in self.phrase_types.items()
        }
        types = list(self.phrase_types)
        self._types = types
        self._start = _Categorical(
            list(self.start_probs), list(self.start_probs.values())
        )
        self._next = {
            t: _Categorical(list(row), list(row.values()))
            for t, row in self.transition_probs.items()
        }

    def _exact_moments(self) -> tuple[float, float]:
        """(E[bits per sentence], E[chars per sentence]), module docstring."""
        h_class = {c: d.entropy for c, d in self._word_dists.items()}
        len_class = {
            c: d.mean([len(w) for w in d.outcomes])
            for c, d in self._word_dists.items()
        }
        types = self._types
        index = {t: i for i, t in enumerate(types)}
        q = np.zeros((len(types), len(types)))
        for t, row in self.transition_probs.items():
            for nxt, p in row.items():
                if nxt != _END:
                    q[index[t], index[nxt]] = p
        s = np.array([self.start_probs.get(t, 0.0) for t in types])
        # Expected visits of each phrase type: n = s (I - Q)^-1.
        visits = np.linalg.solve((np.eye(len(types)) - q).T, s)
        bits = self._start.entropy
        chars = 0.0
        for t in types:
            h_phrase, letters, words = 0.0, 0.0, 0.0
            for c, count in self._slot_dists[t]:
                mean_count = count.mean(count.outcomes)
                h_phrase += count.entropy + mean_count * h_class[c]
                letters += mean_count * len_class[c]
                words += mean_count
            separators = len(_PHRASE_SEPARATOR)  # == len(_SENTENCE_END) == 2
            bits += visits[index[t]] * (self._next[t].entropy + h_phrase)
            chars += visits[index[t]] * (letters + (words - 1.0) + separators)
        return float(bits), float(chars)

    # -------------------------------------------------------------- generation
    def _generate(self, split: str):
        draw = _Uniforms([self.seed, _SPLIT_STREAM[split], 0x5EED])
        target = self.split_chars[split]
        pieces: list[str] = []
        word_ends: list[int] = []
        phrase_ends: list[int] = []
        sentence_ends: list[int] = []
        pos = 0
        log2p = 0.0
        while pos < target:
            k = self._start.sample(draw())
            log2p += self._start.log2_probs[k]
            phrase = self._start.outcomes[k]
            while True:
                first = True
                for c, count in self._slot_dists[phrase]:
                    k = count.sample(draw())
                    log2p += count.log2_probs[k]
                    words = self._word_dists[c]
                    for _ in range(count.outcomes[k]):
                        j = words.sample(draw())
                        log2p += words.log2_probs[j]
                        if not first:
                            pieces.append(_WORD_SEPARATOR)
                            pos += 1
                        first = False
                        pieces.append(words.outcomes[j])
                        pos += len(words.outcomes[j])
                        word_ends.append(pos - 1)
                phrase_ends.append(pos - 1)
                nxt = self._next[phrase]
                k = nxt.sample(draw())
                log2p += nxt.log2_probs[k]
                phrase = nxt.outcomes[k]
                if phrase == _END:
                    sentence_ends.append(pos - 1)
                    pieces.append(_SENTENCE_END)
                    pos += len(_SENTENCE_END)
                    break
                pieces.append(_PHRASE_SEPARATOR)
                pos += len(_PHRASE_SEPARATOR)
        text = "".join(pieces)
        masks = []
        for ends in (word_ends, phrase_ends, sentence_ends):
            mask = np.zeros(len(text), dtype=bool)
            mask[np.asarray(ends, dtype=np.int64)] = True
            masks.append(mask)
        return text, masks[0], masks[1], masks[2], -log2p

    def _split(self, split: str):
        _check_split(split)
        if split not in self._cache:
            self._cache[split] = self._generate(split)
        return self._cache[split]

    # ------------------------------------------------------------- public API
    def text(self, split: str) -> str:
        """The text of `split` ('train', 'validation' or 'test')."""
        return self._split(split)[0]

    def word_boundaries(self, split: str) -> np.ndarray:
        """Bool array, True on the last letter of every word."""
        return self._split(split)[1].copy()

    def phrase_boundaries(self, split: str) -> np.ndarray:
        """Bool array, True on the last letter of every phrase."""
        return self._split(split)[2].copy()

    def sentence_boundaries(self, split: str) -> np.ndarray:
        """Bool array, True on the last letter of every sentence."""
        return self._split(split)[3].copy()

    def true_bits_per_char(self, split: str) -> float:
        """Exact code length of `split` under the generator, in bits/char.

        The best BPC any model can reach on this very sample; it approaches
        `entropy_rate_bits_per_char` as the split grows.
        """
        text, _, _, _, bits = self._split(split)
        return bits / len(text)

    def num_chars(self, split: str) -> int:
        """Length of `split` in characters."""
        return len(self.text(split))

    @property
    def symbols(self) -> str:
        """All symbols the generator can emit, sorted (30 characters)."""
        return "".join(sorted(set(_LETTERS + _WORD_SEPARATOR + _PHRASE_SEPARATOR
                                  + _SENTENCE_END)))

    def word_class(self, word: str) -> str:
        """The word class of a lexicon word (KeyError if not a word)."""
        if not hasattr(self, "_class_of"):
            self._class_of = {
                w: c for c, words in self.lexicon.items() for w in words
            }
        return self._class_of[word]

    def __repr__(self) -> str:
        return (
            f"SyntheticHierarchicalCorpus(seed={self.seed}, "
            f"train_chars={self.split_chars['train']}, "
            f"valid_chars={self.split_chars['validation']}, "
            f"test_chars={self.split_chars['test']}; entropy rate "
            f"{self.entropy_rate_bits_per_char:.6f} bits/char)"
        )
