"""Unit conversions for language-model losses: nats, bits, BPC, word perplexity.

Keras' `sparse_categorical_crossentropy` reports natural-log losses (nats);
character-level results are quoted in bits per character (BPC), and Krause et
al. (2017, Section 4.4) compare byte-level models with word-level ones by

    bits/word = bits/symbol * symbols/file / words/file          (Eq. 23)
    word perplexity = 2 ** (bits/word)

e.g. WikiText-2 test: 1.2649 bits/byte * 1,256,449 bytes / 245,569 words =
6.472 bits/word, a word perplexity of 88.8.
"""

import math

import numpy as np

# The WikiText-2 test set's size (Krause et al. 2017, Section 4.4), defined
# with its dataset and re-exported here for Eq. (23).
from hmkeras.data.wikitext2_raw import WIKITEXT2_TEST_BYTES  # noqa: F401
from hmkeras.data.wikitext2_raw import WIKITEXT2_TEST_WORDS  # noqa: F401

LN2 = math.log(2.0)


def nats_to_bits(nats):
    """Converts a loss (or array of losses) from nats to bits: x / ln 2.

    Examples:

        >>> round(nats_to_bits(math.log(2.0)), 12)
        1.0
    """
    out = np.asarray(nats, dtype=np.float64) / LN2
    return float(out) if out.ndim == 0 else out


def bits_to_nats(bits):
    """Converts a loss (or array of losses) from bits to nats: x * ln 2.

    Examples:

        >>> round(bits_to_nats(1.0), 6)
        0.693147
    """
    out = np.asarray(bits, dtype=np.float64) * LN2
    return float(out) if out.ndim == 0 else out


def _to_bits(values, unit):
    if unit == "bits":
        return np.asarray(values, dtype=np.float64)
    if unit == "nats":
        return np.asarray(values, dtype=np.float64) / LN2
    raise ValueError(f"`unit` must be 'bits' or 'nats'. Received: {unit!r}")


def bits_per_character(losses, unit="nats"):
    """Bits per character: the mean per-character loss, in bits.

    Args:
        losses: Per-character negative log-likelihoods, any shape (e.g. the
            unreduced output of `sparse_categorical_crossentropy`), or a
            scalar mean loss.
        unit: `"nats"` (default, natural log as in Keras losses) or `"bits"`.

    Returns:
        A Python float.

    Examples:

        >>> round(bits_per_character([math.log(2.0), 3 * math.log(2.0)]), 12)
        2.0
    """
    values = _to_bits(losses, unit)
    if values.size == 0:
        raise ValueError("`losses` is empty.")
    return float(values.mean())


def bits_per_word(bits_per_symbol, num_symbols, num_words):
    """Bits per word from bits per symbol, Krause et al. Eq. (23).

    Args:
        bits_per_symbol: Mean loss per character/byte in bits (BPC).
        num_symbols: Number of symbols (characters or UTF-8 bytes) in the
            evaluated text, the same symbols the BPC was averaged over.
        num_words: Number of words in the same text.

    Returns:
        A Python float, `bits_per_symbol * num_symbols / num_words`.

    Examples:

        >>> round(bits_per_word(1.2649, WIKITEXT2_TEST_BYTES,
        ...                     WIKITEXT2_TEST_WORDS), 4)
        6.4718
    """
    if num_symbols <= 0 or num_words <= 0:
        raise ValueError(
            "`num_symbols` and `num_words` must be positive. Received "
            f"num_symbols={num_symbols!r}, num_words={num_words!r}."
        )
    # Krause et al. Eq. (23): bits/word = bits/symbol * symbols/words
    return float(bits_per_symbol) * float(num_symbols) / float(num_words)


def word_perplexity(bits_per_symbol, num_symbols, num_words):
    """Word-level perplexity of a character/byte model, 2 ** (bits/word).

    The bound of Krause et al. (2017, Section 4.4): Eq. (23) followed by
    exponentiation.

    Examples:

        >>> round(word_perplexity(1.2649, WIKITEXT2_TEST_BYTES,
        ...                       WIKITEXT2_TEST_WORDS), 1)
        88.8
    """
    return float(2.0 ** bits_per_word(bits_per_symbol, num_symbols, num_words))


def perplexity_to_bits(perplexity):
    """Bits per token of a perplexity: log2(perplexity).

    Examples:

        >>> perplexity_to_bits(8.0)
        3.0
    """
    if perplexity <= 0:
        raise ValueError(
            f"`perplexity` must be positive. Received: {perplexity!r}"
        )
    return float(math.log2(perplexity))
