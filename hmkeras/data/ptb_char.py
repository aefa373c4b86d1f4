"""TFDS builder `ptb_char`: character-level Penn Treebank (Mikolov et al.).

Source: ``simple-examples.tgz`` from Tomas Mikolov's RNNLM page,
http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz, files
``simple-examples/data/ptb.char.{train,valid,test}.txt``: the Penn Treebank
(Marcus et al., 1993) as processed by Mikolov et al. (2012), one sentence
per line, characters separated by single spaces, ``_`` marking a word
boundary. This is the PTB setup of Chung et al. (2017) and Kadar et al.
(2018).

The stream of a split is the characters of each line with the separating
spaces removed, ``_`` kept as the word-boundary symbol, and ``"\\n"`` after
every sentence (about 50 symbols)::

    "a e r _ b a n k n o t e\\n"  ->  "aer_banknote\\n"

No checksum is published for the archive, so what is read is checked for
format (ASCII/UTF-8 text, every token a single character, all three files
present); TFDS records the archive's checksum on a first download when
``register_checksums`` is on.

Put ``simple-examples.tgz`` (or the three extracted files, either as
``simple-examples/data/ptb.char.*.txt`` or directly as ``ptb.char.*.txt``)
in the manual dir or the data_dir.

Examples:

        import tensorflow_datasets as tfds
        from hmkeras.data import PtbChar, read_split
        builder = PtbChar(allow_download=False)
        builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
            manual_dir="/path/to/dir/with/simple-examples.tgz"))
        text = read_split(builder, "validation").decode("utf-8")
"""

from __future__ import annotations

from hmkeras.data import char_stream_builder
from hmkeras.data import sources

__all__ = ["PtbChar", "parse_ptb_char"]

_FILES = {
    "train": "ptb.char.train.txt",
    "validation": "ptb.char.valid.txt",
    "test": "ptb.char.test.txt",
}

_RAW = sources.RawFiles.from_archive(
    "ptb_char",
    "http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz",
    _FILES,
    folder="simple-examples/data",
    other_folders=("data",),
)


def parse_ptb_char(data: bytes, file_name: str = "ptb.char file") -> str:
    """Turns the content of a ``ptb.char.*.txt`` file into a text stream.

    Args:
      data: the raw file content.
      file_name: named in error messages.

    Returns:
      The sentences, spaces between characters removed, each followed by
      ``"\\n"``.

    Raises:
      sources.DatasetVerificationError: not UTF-8, or a token that is not a
        single character (e.g. the word-level ``ptb.train.txt`` given by
        mistake).

    Examples:

        >>> parse_ptb_char(b" a e r _ b a n k\\n t h e _ e n d \\n")
        'aer_bank\\nthe_end\\n'
    """
    lines = sources.text_lines(data, "ptb_char", file_name)
    if not lines:
        raise sources.DatasetVerificationError(f"ptb_char: {file_name} is empty.")
    sentences = []
    for number, line in enumerate(lines, start=1):
        stripped = line.strip(" ")
        tokens = stripped.split(" ") if stripped else []
        bad = [t for t in tokens if len(t) != 1]
        if bad:
            raise sources.DatasetVerificationError(
                f"ptb_char: {file_name} line {number}: tokens {bad[:3]} are not "
                "single characters separated by single spaces; this is not a "
                "ptb.char.*.txt file (the word-level ptb.*.txt?)."
            )
        sentences.append("".join(tokens))
    return "\n".join(sentences) + "\n"


class PtbChar(char_stream_builder.CharStreamBuilder):
    """Character-level Penn Treebank (Mikolov et al. 2012 processing).

    Examples:

        >>> import pathlib, tempfile
        >>> import tensorflow_datasets as tfds
        >>> from hmkeras.data import PtbChar, read_split
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> for split in ("train", "valid", "test"):
        ...     _ = (folder / f"ptb.char.{split}.txt").write_text(" a e r _ b a n k\\n n o\\n")
        >>> builder = PtbChar(data_dir=str(folder / "tfds"), allow_download=False)
        >>> builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        ...     manual_dir=str(folder)))
        Downloading and preparing dataset ...
        Dataset ptb_char downloaded and prepared to ...
        >>> read_split(builder, "validation")
        b'aer_bank\\nno\\n'
    """

    name = "ptb_char"
    RAW_FILES = _RAW
    SYMBOLS = "chars"
    DESCRIPTION = (
        "Character-level Penn Treebank as distributed by Tomas Mikolov "
        "(simple-examples.tgz): one sentence per line, '_' between words. "
        "One character stream per split, '\\n' after each sentence."
    )
    HOMEPAGE = "http://www.fit.vutbr.cz/~imikolov/rnnlm/"
    CITATION = """@inproceedings{mikolov2012subword,
  author = {Tomas Mikolov and Ilya Sutskever and Anoop Deoras and
            Hai-Son Le and Stefan Kombrink and Jan Cernocky},
  title = {Subword Language Modeling with Neural Networks},
  year = {2012},
  note = {preprint, http://www.fit.vutbr.cz/~imikolov/rnnlm/char.pdf}
}
@article{marcus1993ptb,
  author = {Mitchell P. Marcus and Mary Ann Marcinkiewicz and
            Beatrice Santorini},
  title = {Building a Large Annotated Corpus of {E}nglish: The {P}enn
           {T}reebank},
  journal = {Computational Linguistics},
  volume = {19}, number = {2}, pages = {313--330}, year = {1993}
}"""

    def _prepare_streams(self, files):
        streams, sentences = {}, {}
        for split, file_name in _FILES.items():
            text = parse_ptb_char(files[split], file_name)
            streams[split] = text.encode("utf-8")
            sentences[split] = text.count("\n")
        return streams, {"num_sentences": sentences}
