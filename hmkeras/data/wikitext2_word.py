"""TFDS builder `wikitext2_word`: WikiText-2 (tokenised) at the word level.

Source: the WikiText release of Merity et al. ("Pointer Sentinel Mixture
Models", 2017), tokenised variant: ``wikitext-2-v1.zip`` from
https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-v1.zip,
files ``wikitext-2/wiki.{train,valid,test}.tokens``: Wikipedia articles,
one paragraph or heading per line, rare words already replaced by
``<unk>`` (a vocabulary of 33,278 types counting ``<eos>``, as Salton &
Kelleher use, Section 6.3). About 2.09M / 217k / 245k tokens, counting one
``<eos>`` per line (the published counts; the test count is
`hmkeras.data.WIKITEXT2_TEST_WORDS`).

Every line is one "sentence" of the word pipeline, empty lines included in
the stream and in ``info.metadata["num_tokens"]``; the sentence pipeline
leaves the empty ones out by default. The files are checked for format
(UTF-8, all three present, and the tokenised release: the raw release
``wiki.*.raw`` has no ``<unk>``).

Examples:

        import tensorflow_datasets as tfds
        from hmkeras.data import Wikitext2Word, read_sentences
        builder = Wikitext2Word(allow_download=False)
        builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
            manual_dir="/path/to/dir/with/wikitext-2-v1.zip"))
        sentences = read_sentences(builder, "test")
"""

from __future__ import annotations

from hmkeras.data import sources
from hmkeras.data import wikitext2_raw
from hmkeras.data import word_stream_builder

__all__ = ["Wikitext2Word"]

_FILES = {
    "train": "wiki.train.tokens",
    "validation": "wiki.valid.tokens",
    "test": "wiki.test.tokens",
}


class Wikitext2Word(word_stream_builder.WordStreamBuilder):
    """WikiText-2, tokenised release, one line per sentence.

    Examples:

        >>> import pathlib, tempfile
        >>> import tensorflow_datasets as tfds
        >>> from hmkeras.data import Wikitext2Word, read_sentences
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> for split in ("train", "valid", "test"):
        ...     _ = (folder / f"wiki.{split}.tokens").write_text(" = <unk> = \\n\\n The layer .\\n")
        >>> builder = Wikitext2Word(data_dir=str(folder / "tfds"), allow_download=False)
        >>> builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        ...     manual_dir=str(folder)))
        Downloading and preparing dataset ...
        Dataset wikitext2_word downloaded and prepared to ...
        >>> read_sentences(builder, "test")  # one line per sentence, empty ones too
        [['=', '<unk>', '='], [], ['The', 'layer', '.']]
    """

    name = "wikitext2_word"
    FILES = _FILES
    RAW_FILES = sources.RawFiles.from_archive(
        "wikitext2_word",
        "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-v1.zip",
        _FILES,
        folder="wikitext-2",
    )
    DESCRIPTION = (
        "WikiText-2 (tokenised) by Merity et al.: Wikipedia Good and Featured "
        "articles with <unk>; one normalised text stream per split, a line "
        "per paragraph or heading."
    )
    # The same corpus as the raw release: its page and citation.
    HOMEPAGE = wikitext2_raw.Wikitext2Raw.HOMEPAGE
    CITATION = wikitext2_raw.Wikitext2Raw.CITATION

    def _check_tokens(self, text, file_name):
        if file_name == _FILES["train"] and "<unk>" not in text.split():
            raise sources.DatasetVerificationError(
                f"wikitext2_word: {file_name} has no <unk> token: this is not "
                "the tokenised release (wikitext-2-v1.zip); the raw release "
                "is read at the byte level by Wikitext2Raw."
            )
