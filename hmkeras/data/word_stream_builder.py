"""`WordStreamBuilder`: the TFDS builder base of the word-level corpora.

A word-level corpus (Penn Treebank words, WikiText-2 tokens) is stored the
way the character corpora are (`hmkeras.data.char_stream_builder`): one
UTF-8 stream per split, in chunks, found and fetched by the same machinery
(manual dir / data_dir first, a download only when allowed and the server
answers, `DatasetFilesNotFoundError` naming the files otherwise). The stream
of a split is the normalised text: **one sentence per line, tokens
separated by single spaces**, ``"\\n"`` after every line. `read_sentences`
turns a prepared split back into a list of token lists.

The end of a line is the end-of-sentence symbol ``<eos>`` of Mikolov et
al.; it is not written into the stream, the sentence pipeline
(`hmkeras.data.sentence_pipeline`) adds it as the last target of every
sentence. A line without tokens (WikiText-2 has empty lines between
paragraphs) is kept as an empty sentence, so the metadata's
``num_tokens`` (words + one ``<eos>`` per line) equals the published token
counts; the pipeline leaves empty sentences out by default.

Subclasses (`PtbWord`, `Wikitext2Word`) declare `RAW_FILES` and `FILES`
(``{split: file name}``) and may override `_check_tokens`.

Examples:

    >>> normalise_lines(b" the cat  sat \\n\\n a <unk> .\\n")
    'the cat sat\\n\\na <unk> .\\n'
"""

from __future__ import annotations

from hmkeras.data import char_stream_builder
from hmkeras.data import sources

__all__ = [
    "WordStreamBuilder", "normalise_lines", "read_sentences",
    "word_download_instructions", "OFFLINE_WORD_ALTERNATIVE",
]

#: What the not-found messages of the word builders offer instead.
OFFLINE_WORD_ALTERNATIVE = (
    "hmkeras.data.load_word_corpus('embedded', split) or "
    "hmkeras.data.SyntheticWordCorpus()"
)
# The char builders' offer, replaced in the word builders' messages.
_OFFLINE_CHAR_ALTERNATIVE = (
    "hmkeras.data.load_char_corpus('synthetic', split) or "
    "hmkeras.data.SyntheticHierarchicalCorpus()"
)


def word_download_instructions(raw: sources.RawFiles) -> str:
    """Text for a word builder's `MANUAL_DOWNLOAD_INSTRUCTIONS`."""
    text = char_stream_builder.manual_download_instructions(raw)
    return text.replace(
        "hmkeras.data.load_char_corpus('synthetic', split)",
        "hmkeras.data.load_word_corpus('embedded', split)",
    )


def normalise_lines(data: bytes, file_name: str = "file",
                    dataset: str = "words") -> str:
    """The text of a word-level file, one sentence per line.

    Tokens are the whitespace-separated strings of a line; they are joined
    by single spaces, every line (empty ones included) ends with ``"\\n"``.

    Raises:
      sources.DatasetVerificationError: not UTF-8, or empty.
    """
    lines = sources.text_lines(data, dataset, file_name)
    if not any(line.strip() for line in lines):
        raise sources.DatasetVerificationError(f"{dataset}: {file_name} is empty.")
    return "".join(" ".join(line.split()) + "\n" for line in lines)


class WordStreamBuilder(char_stream_builder.CharStreamBuilder,
                        skip_registration=True):
    """Base class: a word corpus, one normalised text stream per split."""

    SYMBOLS = "chars"
    #: ``{split: file name}`` of the three raw files.
    FILES: dict = None

    def __init_subclass__(cls, **kwargs):
        if cls.RAW_FILES is not None and (
            "MANUAL_DOWNLOAD_INSTRUCTIONS" not in vars(cls)
        ):
            cls.MANUAL_DOWNLOAD_INSTRUCTIONS = word_download_instructions(
                cls.RAW_FILES
            )
        super().__init_subclass__(**kwargs)

    def _split_generators(self, dl_manager):
        try:
            return super()._split_generators(dl_manager)
        except sources.DatasetFilesNotFoundError as err:
            # The shared message offers the embedded *character* corpus.
            message = str(err).replace(
                _OFFLINE_CHAR_ALTERNATIVE, OFFLINE_WORD_ALTERNATIVE
            ).replace("load_char_corpus(..., manual_dir=DIR)",
                      "load_word_corpus(..., manual_dir=DIR)")
            raise sources.DatasetFilesNotFoundError(message) from None

    def _check_tokens(self, text: str, file_name: str) -> None:
        """Checks the tokens of one normalised file (subclasses)."""

    def _prepare_streams(self, files):
        streams, sentences, tokens, words = {}, {}, {}, {}
        for split, file_name in self.FILES.items():
            text = normalise_lines(files[split], file_name, self.name)
            self._check_tokens(text, file_name)
            streams[split] = text.encode("utf-8")
            lines = text.count("\n")
            sentences[split] = lines
            words[split] = len(text.split())
            tokens[split] = words[split] + lines  # + one <eos> per line
        return streams, {"num_sentences": sentences, "num_tokens": tokens,
                         "num_words": words}


def read_sentences(builder: WordStreamBuilder, split: str) -> list:
    """The prepared `split` of a word builder as a list of token lists.

    Every line is one sentence (possibly empty); ``<eos>`` is not included.

    Examples:

        >>> import pathlib, tempfile
        >>> import tensorflow_datasets as tfds
        >>> from hmkeras.data import PtbWord, read_sentences
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> for split in ("train", "valid", "test"):
        ...     _ = (folder / f"ptb.{split}.txt").write_text(" a  b \\n c\\n")
        >>> builder = PtbWord(data_dir=str(folder / "tfds"), allow_download=False)
        >>> builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        ...     manual_dir=str(folder)))
        Downloading and preparing dataset ...
        Dataset ptb_word downloaded and prepared to ...
        >>> read_sentences(builder, "train")  # white space normalised
        [['a', 'b'], ['c']]
    """
    text = char_stream_builder.read_split(builder, split).decode("utf-8")
    return [line.split(" ") if line else [] for line in text.split("\n")[:-1]]
