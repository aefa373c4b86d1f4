"""`SyntheticWordCorpus`: the embedded corpus as words, with its entropy rate.

The word-level view of `SyntheticHierarchicalCorpus` (same generator, same
seed, same text): every sentence becomes a list of tokens, its words and a
``","`` token between phrases; the sentence's final ``"."`` is its
end-of-sentence token ``<eos>``, which the sentence pipeline adds as the
last target. So the token stream of a sentence is its text with the
separators turned into tokens::

    "qi helo, zu xesuzu, mo qi wezhe.\\n"
    -> ["qi", "helo", ",", "zu", "xesuzu", ",", "mo", "qi", "wezhe"] + <eos>

There are 80 words, ``","`` and ``<eos>``: 82 token types.

Exact entropy rate per token
----------------------------
The token sequence of a sentence and its text determine each other, so a
sentence carries the same information, ``E[H(sentence)]`` bits
(`SyntheticHierarchicalCorpus.mean_sentence_bits`, derived there without
sampling). A phrase of type ``t`` has ``E[words_t] = sum over its slots of
E[count]`` words and is followed by one token (``","`` or ``<eos>``); with
``n_t`` the expected number of phrases of type ``t`` in a sentence
(``n = s (I - Q)^-1``, the fundamental matrix of the absorbing phrase-type
chain),

    E[tokens per sentence] = sum_t n_t (E[words_t] + 1),

and since sentences are i.i.d. and ``<eos>`` ends each one, the entropy
rate of the token stream is (renewal-reward)

    H = E[H(sentence)] / E[tokens per sentence]   bits per token,

and no model's perplexity per token can be below ``2 ** H`` on average
(`entropy_rate_perplexity`). `true_bits_per_token(split)` is the exact code
length of a generated split under the generator itself.

Examples:

    >>> corpus = SyntheticWordCorpus(seed=0, train_tokens=2_000,
    ...                              valid_tokens=200, test_tokens=200)
    >>> corpus.sentences("train")[0][:3]
    ['qi', 'zilozu', 'tihurxo']
    >>> round(corpus.entropy_rate_bits_per_token, 4)
    2.9029
    >>> round(corpus.entropy_rate_perplexity, 2)
    7.48
"""

from __future__ import annotations

import math

import numpy as np

from hmkeras.data import synthetic_corpus

__all__ = ["SyntheticWordCorpus", "PHRASE_TOKEN"]

#: The token between two phrases of a sentence.
PHRASE_TOKEN = ","


def _check_size(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"`{name}` must be an integer >= 1, got {value!r}.")
    return int(value)


def expected_tokens_per_sentence(corpus) -> float:
    """``sum_t n_t (E[words_t] + 1)`` from the tables of `corpus` (a
    `SyntheticHierarchicalCorpus`): the module docstring's formula."""
    types = list(corpus.phrase_types)
    index = {t: i for i, t in enumerate(types)}
    q = np.zeros((len(types), len(types)))
    for t, row in corpus.transition_probs.items():
        for nxt, p in row.items():
            if nxt != corpus.END:
                q[index[t], index[nxt]] = p
    s = np.array([corpus.start_probs.get(t, 0.0) for t in types])
    visits = np.linalg.solve((np.eye(len(types)) - q).T, s)  # n = s (I - Q)^-1
    total = 0.0
    for t, slots in corpus.phrase_types.items():
        words = sum(
            sum(count * p for count, p in counts.items()) for _, counts in slots
        )
        total += visits[index[t]] * (words + 1.0)
    return float(total)


def sentence_tokens(line: str) -> list:
    """The tokens of one generated sentence (without its ``".\\n"``).

    Examples:

        >>> sentence_tokens("qi helo, zu xesuzu.")
        ['qi', 'helo', ',', 'zu', 'xesuzu']
    """
    if line.endswith("."):
        line = line[:-1]
    return line.replace(", ", f" {PHRASE_TOKEN} ").split(" ")


class SyntheticWordCorpus:
    """The embedded synthetic corpus as sentences of word tokens.

    Args:
      seed: seed of the splits (as `SyntheticHierarchicalCorpus`; the
        lexicon, grammar and entropy rate do not depend on it).
      train_tokens, valid_tokens, test_tokens: approximate number of tokens
        (``<eos>`` included) of each split; a split is made of whole
        sentences and at least this many characters' worth of them.

    Attributes:
      characters: the underlying `SyntheticHierarchicalCorpus`.
      mean_sentence_tokens: expected tokens per sentence (``<eos>``
        included), exact.
      entropy_rate_bits_per_token: exact entropy rate of the token stream.
      entropy_rate_perplexity: ``2 ** entropy_rate_bits_per_token``, the
        perplexity floor.

    Examples:

        >>> from hmkeras.data import SyntheticWordCorpus, WordVocabulary
        >>> corpus = SyntheticWordCorpus(seed=0, train_tokens=2000, valid_tokens=200,
        ...                              test_tokens=200)
        >>> sentences = corpus.sentences("train")
        >>> all(isinstance(word, str) for word in sentences[0])
        True
        >>> corpus.num_tokens("train") >= 2000, corpus.entropy_rate_perplexity > 1
        (True, True)
    """

    def __init__(self, seed: int = 0, train_tokens: int = 200_000,
                 valid_tokens: int = 20_000, test_tokens: int = 20_000):
        sizes = {
            "train": _check_size("train_tokens", train_tokens),
            "validation": _check_size("valid_tokens", valid_tokens),
            "test": _check_size("test_tokens", test_tokens),
        }
        probe = synthetic_corpus.SyntheticHierarchicalCorpus(seed=seed)
        self.mean_sentence_tokens = expected_tokens_per_sentence(probe)
        chars_per_token = probe.mean_sentence_chars / self.mean_sentence_tokens
        self.characters = synthetic_corpus.SyntheticHierarchicalCorpus(
            seed=seed,
            train_chars=max(1, math.ceil(sizes["train"] * chars_per_token)),
            valid_chars=max(1, math.ceil(sizes["validation"] * chars_per_token)),
            test_chars=max(1, math.ceil(sizes["test"] * chars_per_token)),
        )
        self.seed = self.characters.seed
        self.entropy_rate_bits_per_token = (
            self.characters.mean_sentence_bits / self.mean_sentence_tokens
        )
        self.entropy_rate_perplexity = 2.0 ** self.entropy_rate_bits_per_token
        self._cache = {}

    def sentences(self, split: str) -> list:
        """The sentences of `split` as lists of tokens (no ``<eos>``)."""
        if split not in self._cache:
            lines = self.characters.text(split).split("\n")[:-1]
            self._cache[split] = [sentence_tokens(line) for line in lines]
        return [list(s) for s in self._cache[split]]

    def num_tokens(self, split: str) -> int:
        """Tokens of `split`, one ``<eos>`` per sentence included."""
        return sum(len(s) + 1 for s in self.sentences(split))

    def true_bits_per_token(self, split: str) -> float:
        """Exact code length of `split` under the generator, bits per token."""
        chars = self.characters
        bits = chars.true_bits_per_char(split) * chars.num_chars(split)
        return bits / self.num_tokens(split)

    def true_perplexity(self, split: str) -> float:
        """``2 ** true_bits_per_token(split)``."""
        return 2.0 ** self.true_bits_per_token(split)

    def __repr__(self) -> str:
        return (
            f"SyntheticWordCorpus(seed={self.seed}; entropy rate "
            f"{self.entropy_rate_bits_per_token:.6f} bits/token, perplexity "
            f"floor {self.entropy_rate_perplexity:.4f})"
        )
