"""TFDS builder `ptb_word`: word-level Penn Treebank (Mikolov et al. 2010).

Source: ``simple-examples.tgz`` from Tomas Mikolov's RNNLM page,
http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz, files
``simple-examples/data/ptb.{train,valid,test}.txt``: one sentence per line,
words separated by spaces, a 10k vocabulary with rare words replaced by
``<unk>`` and numbers by ``N``. This is the PTB setup of Salton & Kelleher
(persistence averaging, Section 6.1): 887k / 70k / 78k words (929k / 73k /
82k tokens counting one ``<eos>`` per sentence).

The stream of a split is the file with its whitespace normalised (see
`hmkeras.data.word_stream_builder`); ``info.metadata`` holds
``num_sentences``, ``num_words`` and ``num_tokens`` per split. No checksum
is published, so the files are checked for format: UTF-8, all three
present, and not the character-level ``ptb.char.*.txt`` of the same
archive (which `PtbChar` reads).

Examples:

        import tensorflow_datasets as tfds
        from hmkeras.data import PtbWord, read_sentences
        builder = PtbWord(allow_download=False)
        builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
            manual_dir="/path/to/dir/with/simple-examples.tgz"))
        sentences = read_sentences(builder, "validation")   # lists of words
"""

from __future__ import annotations

from hmkeras.data import sources
from hmkeras.data import word_stream_builder

__all__ = ["PtbWord"]

_FILES = {
    "train": "ptb.train.txt",
    "validation": "ptb.valid.txt",
    "test": "ptb.test.txt",
}


class PtbWord(word_stream_builder.WordStreamBuilder):
    """Word-level Penn Treebank (Mikolov et al. 2010 processing).

    Examples:

        >>> import pathlib, tempfile
        >>> import tensorflow_datasets as tfds
        >>> from hmkeras.data import PtbWord, read_sentences
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> for split in ("train", "valid", "test"):
        ...     _ = (folder / f"ptb.{split}.txt").write_text(" the <unk> rose N %\\n it fell\\n")
        >>> builder = PtbWord(data_dir=str(folder / "tfds"), allow_download=False)
        >>> builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        ...     manual_dir=str(folder)))
        Downloading and preparing dataset ...
        Dataset ptb_word downloaded and prepared to ...
        >>> read_sentences(builder, "test")
        [['the', '<unk>', 'rose', 'N', '%'], ['it', 'fell']]
        >>> builder.info.metadata["num_tokens"]["test"]  # one <eos> per sentence
        9
    """

    name = "ptb_word"
    FILES = _FILES
    RAW_FILES = sources.RawFiles.from_archive(
        "ptb_word",
        "http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz",
        _FILES,
        folder="simple-examples/data",
        other_folders=("data",),
    )
    DESCRIPTION = (
        "Word-level Penn Treebank as distributed by Tomas Mikolov "
        "(simple-examples.tgz): one sentence per line, 10k vocabulary with "
        "<unk>. One normalised text stream per split."
    )
    HOMEPAGE = "http://www.fit.vutbr.cz/~imikolov/rnnlm/"
    CITATION = """@inproceedings{mikolov2010rnnlm,
  author = {Tomas Mikolov and Martin Karafiat and Lukas Burget and
            Jan Cernocky and Sanjeev Khudanpur},
  title = {Recurrent Neural Network Based Language Model},
  booktitle = {Interspeech},
  year = {2010}
}"""

    def _check_tokens(self, text, file_name):
        tokens = text.split()
        if tokens and all(len(t) == 1 for t in tokens) and "_" in tokens:
            raise sources.DatasetVerificationError(
                f"ptb_word: {file_name} holds single characters with '_' "
                "between words: it is a character-level ptb.char.*.txt file, "
                "not the word-level ptb.*.txt (use PtbChar for it)."
            )
