"""TFDS builder `wikitext2_raw`: WikiText-2 (raw) at the byte level.

Source: the WikiText release of Merity et al. ("Pointer Sentinel Mixture
Models", 2017), raw variant: ``wikitext-2-raw-v1.zip`` from
https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-raw-v1.zip,
files ``wikitext-2-raw/wiki.{train,valid,test}.raw``. Each split is the file's
bytes unchanged (UTF-8 text), modelled byte by byte as in Krause et al.
("Multiplicative LSTM for sequence modelling", Section 4.4).

Krause et al. convert bits per byte to bits per word with
``bits/word = bits/byte * bytes / words`` and state that the test set is
245,569 words and 1,256,449 bytes long. The builder checks the test file's
size against 1,256,449 bytes (the default config; a custom config may set
`test_bytes=None`) and records in ``info.metadata["num_words"]`` the word
count of every split, counted as in Merity et al.'s token counts: the
whitespace-separated tokens of every line plus one end-of-line token per
line (`count_words`). No checksum is published for the archive; the files are
checked for format (UTF-8, all three present).

Examples:

        import tensorflow_datasets as tfds
        from hmkeras.data import Wikitext2Raw, read_split
        builder = Wikitext2Raw(allow_download=False)
        builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
            manual_dir="/path/to/dir/with/wikitext-2-raw-v1.zip"))
        test = read_split(builder, "test")                    # bytes
        words = builder.info.metadata["num_words"]["test"]
"""

from __future__ import annotations

import dataclasses

from absl import logging
import tensorflow_datasets as tfds

from hmkeras.data import char_stream_builder
from hmkeras.data import sources

__all__ = [
    "Wikitext2Raw", "Wikitext2RawConfig", "count_words",
    "WIKITEXT2_TEST_BYTES", "WIKITEXT2_TEST_WORDS",
]

#: UTF-8 bytes in the WikiText-2 test set (Krause et al. 2017, Section 4.4);
#: also `hmkeras.analysis.bits.WIKITEXT2_TEST_BYTES`.
WIKITEXT2_TEST_BYTES = 1_256_449
#: Words in the WikiText-2 test set (Krause et al. 2017, Section 4.4, after
#: Merity et al.); also `hmkeras.analysis.bits.WIKITEXT2_TEST_WORDS`.
WIKITEXT2_TEST_WORDS = 245_569

_FILES = {
    "train": "wiki.train.raw",
    "validation": "wiki.valid.raw",
    "test": "wiki.test.raw",
}

_RAW = sources.RawFiles.from_archive(
    "wikitext2_raw",
    "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-2-raw-v1.zip",
    _FILES,
    folder="wikitext-2-raw",
)


def count_words(data: bytes) -> int:
    """Words of a WikiText file: whitespace tokens + one per line.

    Every line, empty ones included, counts one end-of-line token, as in the
    token counts of Merity et al.

    Examples:

        >>> count_words(b" = Title = \\n \\n Some text .\\n")
        9
    """
    text = data.decode("utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return sum(len(line.split()) + 1 for line in lines)


@dataclasses.dataclass(eq=False)
class Wikitext2RawConfig(tfds.core.BuilderConfig):
    """Checks of the WikiText-2 raw builder.

    Attributes:
      test_bytes: expected size of ``wiki.test.raw`` in bytes (published by
        Krause et al.), or None to skip the check.
      test_words: expected word count of the test split; a mismatch is
        logged as a warning (the count depends on the counting convention).

    Examples:

        >>> from hmkeras.data import WIKITEXT2_TEST_BYTES, Wikitext2RawConfig
        >>> Wikitext2RawConfig(name="bytes").test_bytes == WIKITEXT2_TEST_BYTES
        True
        >>> Wikitext2RawConfig(name="mine", test_bytes=None).test_bytes is None  # unchecked
        True
    """

    test_bytes: int | None = WIKITEXT2_TEST_BYTES
    test_words: int | None = WIKITEXT2_TEST_WORDS

    def __post_init__(self):
        for field in ("test_bytes", "test_words"):
            value = getattr(self, field)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ValueError(
                    f"`{field}` must be None or a positive integer, got {value!r}."
                )


class Wikitext2Raw(char_stream_builder.CharStreamBuilder):
    """WikiText-2 raw, one byte stream per split, with word counts.

    Examples:

        >>> import pathlib, tempfile
        >>> import tensorflow_datasets as tfds
        >>> from hmkeras.data import Wikitext2Raw, Wikitext2RawConfig, read_split
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> for split in ("train", "valid", "test"):
        ...     _ = (folder / f"wiki.{split}.raw").write_text(" = Keras = \\n The layer .\\n")
        >>> config = Wikitext2RawConfig(name="tiny", test_bytes=None, test_words=None)
        >>> builder = Wikitext2Raw(config=config, data_dir=str(folder / "tfds"),
        ...                        allow_download=False)
        >>> builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        ...     manual_dir=str(folder)))
        Downloading and preparing dataset ...
        Dataset wikitext2_raw downloaded and prepared to ...
        >>> read_split(builder, "test"), builder.info.metadata["num_words"]["test"]
        (b' = Keras = \\n The layer .\\n', 8)
    """

    name = "wikitext2_raw"
    RAW_FILES = _RAW
    SYMBOLS = "bytes"
    BUILDER_CONFIGS = [
        Wikitext2RawConfig(
            name="bytes",
            description="WikiText-2 raw v1, UTF-8 bytes, published test size.",
        )
    ]
    DESCRIPTION = (
        "WikiText-2 (raw) by Merity et al.: Wikipedia Good and Featured "
        "articles, as UTF-8 bytes; one byte stream per split, in chunks; "
        "metadata num_words per split for bits/char -> bits/word."
    )
    HOMEPAGE = (
        "https://www.salesforce.com/blog/the-wikitext-long-term-dependency-"
        "language-modeling-dataset/"
    )
    CITATION = """@inproceedings{merity2017pointer,
  author = {Stephen Merity and Caiming Xiong and James Bradbury and
            Richard Socher},
  title = {Pointer Sentinel Mixture Models},
  booktitle = {International Conference on Learning Representations},
  year = {2017}
}"""

    def _prepare_streams(self, files):
        config = self.builder_config
        words = {}
        for split, file_name in _FILES.items():
            data = files[split]
            if not data:
                raise sources.DatasetVerificationError(
                    f"wikitext2_raw: {file_name} is empty."
                )
            try:
                words[split] = count_words(data)
            except UnicodeDecodeError as err:
                raise sources.DatasetVerificationError(
                    f"wikitext2_raw: {file_name} is not UTF-8 text ({err}); "
                    "expected the raw WikiText-2 release."
                ) from err
        if config.test_bytes is not None:
            sources.check_size(
                "wikitext2_raw", "wiki.test.raw", len(files["test"]),
                config.test_bytes,
                hint=(
                    "Use the raw release (wikitext-2-raw-v1.zip), not the "
                    "tokenized one."
                ),
            )
        if config.test_words is not None and words["test"] != config.test_words:
            logging.warning(
                "wikitext2_raw: the test split has %d words by our count, the "
                "published count is %d; use the published count for "
                "bits/word conversions.", words["test"], config.test_words,
            )
        streams = {split: files[split] for split in _FILES}
        return streams, {"num_words": words}
