"""`load_word_corpus`: one entry point for every word-level corpus.

==================  ==============================================
name                source
==================  ==============================================
``embedded``        `SyntheticWordCorpus` (generated, offline,
                    exact entropy rate per token)
``ptb_word``        `PtbWord` (Mikolov et al. 2010)
``wikitext2_word``  `Wikitext2Word` (Merity et al. 2017, tokens)
==================  ==============================================

Each returns a split as a list of sentences, a sentence a list of tokens
(without ``<eos>``). The TFDS corpora are prepared on first use in
`data_dir` from the raw files found in `manual_dir` / `data_dir`, downloading
only when allowed and the server answers (`hmkeras.data.sources`).

Examples:

    >>> sentences = load_word_corpus("embedded", "validation",
    ...                              embedded_sizes={"valid_tokens": 300})
    >>> all(isinstance(word, str) for word in sentences[0])
    True
    >>> load_word_corpus("ptb", "train")
    Traceback (most recent call last):
    ...
    ValueError: `name` must be one of ['embedded', 'ptb_word', 'wikitext2_word'], got 'ptb'.
"""

from __future__ import annotations

import os

import tensorflow_datasets as tfds

from hmkeras.data import char_stream_builder
from hmkeras.data import exclusive_preparation
from hmkeras.data import word_stream_builder
from hmkeras.data.ptb_word import PtbWord
from hmkeras.data.synthetic_word_corpus import SyntheticWordCorpus
from hmkeras.data.wikitext2_word import Wikitext2Word

__all__ = ["load_word_corpus", "word_corpus_builder", "WORD_CORPUS_NAMES"]

_BUILDERS = {"ptb_word": PtbWord, "wikitext2_word": Wikitext2Word}
WORD_CORPUS_NAMES = tuple(sorted(("embedded",) + tuple(_BUILDERS)))


def _check_name(name):
    if name not in WORD_CORPUS_NAMES:
        raise ValueError(
            f"`name` must be one of {list(WORD_CORPUS_NAMES)}, got {name!r}."
        )


def word_corpus_builder(name, data_dir=None, manual_dir=None,
                        allow_download=True) -> word_stream_builder.WordStreamBuilder:
    """The prepared TFDS builder of "ptb_word" or "wikitext2_word".

    Args: as `hmkeras.data.char_corpus_builder`.

    Examples:

        >>> import pathlib, tempfile
        >>> from hmkeras.data import read_sentences, word_corpus_builder
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> for split in ("train", "valid", "test"):
        ...     _ = (folder / f"ptb.{split}.txt").write_text(" the end\\n")
        >>> builder = word_corpus_builder("ptb_word", data_dir=folder / "tfds",
        ...                               manual_dir=folder, allow_download=False)
        Downloading and preparing dataset ...
        Dataset ptb_word downloaded and prepared to ...
        >>> read_sentences(builder, "validation")
        [['the', 'end']]
    """
    _check_name(name)
    if name == "embedded":
        raise ValueError(
            "`name` 'embedded' has no TFDS builder; use SyntheticWordCorpus or "
            "load_word_corpus('embedded', ...)."
        )
    kwargs = {"allow_download": allow_download}
    if data_dir is not None:
        kwargs["data_dir"] = os.path.expanduser(os.fspath(data_dir))
    # One process at a time prepares it; the others find it ready.
    return exclusive_preparation.prepared(lambda: _BUILDERS[name](**kwargs),
                                          tfds.download.DownloadConfig(
        manual_dir=os.path.expanduser(os.fspath(manual_dir)) if manual_dir else None,
        try_download_gcs=False,
    ))


def load_word_corpus(name, split, data_dir=None, manual_dir=None,
                     allow_download=True, seed=0, embedded_sizes=None) -> list:
    """One split of a word-level corpus as a list of token lists.

    Args:
      name: one of `WORD_CORPUS_NAMES`.
      split: "train", "validation" or "test".
      data_dir, manual_dir, allow_download: see `word_corpus_builder`
        (ignored for "embedded").
      seed: seed of the embedded corpus.
      embedded_sizes: optional dict of `train_tokens`, `valid_tokens`,
        `test_tokens` for the embedded corpus.

    Raises:
      ValueError: unknown `name` or `split`.
      hmkeras.data.DatasetFilesNotFoundError: raw files missing and no
        download possible; the message says where to put them.
      hmkeras.data.DatasetVerificationError: files of the wrong format.

    Examples:

        >>> from hmkeras.data import load_word_corpus
        >>> sentences = load_word_corpus("embedded", "validation", embedded_sizes={
        ...     "train_tokens": 500, "valid_tokens": 100, "test_tokens": 100})
        >>> isinstance(sentences, list), all(isinstance(s, list) for s in sentences)
        (True, True)
    """
    _check_name(name)
    if split not in char_stream_builder.SPLIT_NAMES:
        raise ValueError(
            f"`split` must be one of {list(char_stream_builder.SPLIT_NAMES)}, "
            f"got {split!r}."
        )
    if name == "embedded":
        return SyntheticWordCorpus(seed=seed, **(embedded_sizes or {})).sentences(split)
    builder = word_corpus_builder(name, data_dir=data_dir, manual_dir=manual_dir,
                                  allow_download=allow_download)
    return word_stream_builder.read_sentences(builder, split)
