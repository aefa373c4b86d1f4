"""`load_char_corpus`: one entry point for every character-level corpus.

==================  ===========  ============================================
name                returns      source
==================  ===========  ============================================
``synthetic``       str          `SyntheticHierarchicalCorpus` (embedded,
                                 offline, known entropy rate)
``ptb_char``        str          `PtbChar` (Mikolov et al. 2012)
``text8``           str          `Text8` (Mahoney)
``enwik8``          bytes        `Enwik8` (Hutter Prize)
``wikitext2_raw``   bytes        `Wikitext2Raw` (Merity et al.), byte level
``brent_phonemes``  str          `Brent`, config "phonemes" (Brent 1999;
                                 Kawakami et al. 2019 splits), words
                                 separated by spaces
``brent_text``      str          `Brent`, config "text" (orthographic)
==================  ===========  ============================================

The TFDS corpora are prepared on first use in `data_dir` (TFDS's default,
``~/tensorflow_datasets``, when None) from the raw files found in
`manual_dir` / `data_dir`, downloading them only when allowed and the server
answers (see `hmkeras.data.sources`).

Examples:

    >>> text = load_char_corpus("synthetic", "validation")
    >>> text[:3].isalpha()
    True
    >>> load_char_corpus("ptb", "train")
    Traceback (most recent call last):
    ...
    ValueError: `name` must be one of ['brent_phonemes', 'brent_text', 'enwik8', 'ptb_char', 'synthetic', 'text8', 'wikitext2_raw'], got 'ptb'.
"""

from __future__ import annotations

import os

import tensorflow_datasets as tfds

from hmkeras.data import char_stream_builder
from hmkeras.data import exclusive_preparation
from hmkeras.data.brent import Brent
from hmkeras.data.enwik8 import Enwik8
from hmkeras.data.ptb_char import PtbChar
from hmkeras.data.synthetic_corpus import SyntheticHierarchicalCorpus
from hmkeras.data.text8 import Text8
from hmkeras.data.wikitext2_raw import Wikitext2Raw

__all__ = ["load_char_corpus", "CORPUS_NAMES", "char_corpus_builder"]

# name -> (builder class, its config name or None for the default).
_BUILDERS = {
    "ptb_char": (PtbChar, None),
    "text8": (Text8, None),
    "enwik8": (Enwik8, None),
    "wikitext2_raw": (Wikitext2Raw, None),
    "brent_phonemes": (Brent, "phonemes"),
    "brent_text": (Brent, "text"),
}
CORPUS_NAMES = tuple(sorted(("synthetic",) + tuple(_BUILDERS)))


def _check_name(name: str) -> str:
    if name not in CORPUS_NAMES:
        raise ValueError(
            f"`name` must be one of {list(CORPUS_NAMES)}, got {name!r}."
        )
    return name


def char_corpus_builder(
    name: str,
    data_dir=None,
    manual_dir=None,
    allow_download: bool = True,
    config=None,
) -> char_stream_builder.CharStreamBuilder:
    """The prepared TFDS builder of corpus `name` (not "synthetic").

    Args:
      name: "ptb_char", "text8", "enwik8", "wikitext2_raw",
        "brent_phonemes" or "brent_text".
      data_dir: TFDS data dir (None: TFDS's default).
      manual_dir: directory holding the raw files (None: the TFDS default,
        ``<data_dir>/downloads/manual``; `data_dir` itself is searched too).
      allow_download: False never touches the network.
      config: a builder config (name or object); None for the one `name`
        stands for (the builder's default, or for "brent_phonemes" /
        "brent_text" the `Brent` config "phonemes" / "text").

    Examples:

        >>> import pathlib, tempfile
        >>> from hmkeras.data import char_corpus_builder, read_split
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> for split in ("train", "valid", "test"):
        ...     _ = (folder / f"ptb.char.{split}.txt").write_text(" a _ c a t\\n")
        >>> builder = char_corpus_builder("ptb_char", data_dir=folder / "tfds",
        ...                               manual_dir=folder, allow_download=False)
        Downloading and preparing dataset ...
        Dataset ptb_char downloaded and prepared to ...
        >>> read_split(builder, "train")
        b'a_cat\\n'
    """
    _check_name(name)
    if name == "synthetic":
        raise ValueError(
            "`name` 'synthetic' has no TFDS builder; use "
            "SyntheticHierarchicalCorpus or load_char_corpus('synthetic', ...)."
        )
    kwargs = {"allow_download": allow_download}
    if data_dir is not None:
        kwargs["data_dir"] = os.path.expanduser(os.fspath(data_dir))
    builder_cls, default_config = _BUILDERS[name]
    if config is None:
        config = default_config
    if config is not None:
        kwargs["config"] = config
    download_config = tfds.download.DownloadConfig(
        manual_dir=(
            os.path.expanduser(os.fspath(manual_dir)) if manual_dir else None
        ),
        try_download_gcs=False,
    )
    # One process at a time prepares it; the others find it ready.
    return exclusive_preparation.prepared(lambda: builder_cls(**kwargs), download_config)


def load_char_corpus(
    name: str,
    split: str,
    data_dir=None,
    manual_dir=None,
    allow_download: bool = True,
    seed: int = 0,
    synthetic_sizes=None,
):
    """The text of one split of a character-level corpus.

    Args:
      name: one of `CORPUS_NAMES`: "synthetic", "ptb_char", "text8",
        "enwik8", "wikitext2_raw", "brent_phonemes", "brent_text".
      split: "train", "validation" or "test".
      data_dir, manual_dir, allow_download: see `char_corpus_builder`
        (ignored for "synthetic").
      seed: seed of the synthetic corpus (ignored otherwise).
      synthetic_sizes: optional dict of `train_chars`, `valid_chars`,
        `test_chars` for the synthetic corpus (ignored otherwise).

    Returns:
      A str for "synthetic", "ptb_char", "text8", "brent_phonemes" and
      "brent_text" (whose words stay separated by spaces, the gold
      segmentation); bytes for the byte-level "enwik8" and "wikitext2_raw".

    Raises:
      ValueError: unknown `name` or `split` (the message lists the allowed
        values).
      hmkeras.data.DatasetFilesNotFoundError: raw files missing and no
        download possible; the message says where to put them.
      hmkeras.data.DatasetVerificationError: files of the wrong size,
        checksum or format.

    Examples:

        >>> from hmkeras.data import load_char_corpus
        >>> text = load_char_corpus("synthetic", "test", synthetic_sizes={"test_chars": 500})
        >>> isinstance(text, str), len(text) >= 500
        (True, True)
    """
    _check_name(name)
    if split not in char_stream_builder.SPLIT_NAMES:
        raise ValueError(
            f"`split` must be one of {list(char_stream_builder.SPLIT_NAMES)}, "
            f"got {split!r}."
        )
    if name == "synthetic":
        return SyntheticHierarchicalCorpus(seed=seed, **(synthetic_sizes or {})).text(split)
    builder = char_corpus_builder(
        name, data_dir=data_dir, manual_dir=manual_dir,
        allow_download=allow_download,
    )
    stream = char_stream_builder.read_split(builder, split)
    if builder.SYMBOLS == "chars":
        return stream.decode("utf-8")
    return stream
