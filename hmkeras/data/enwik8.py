"""TFDS builder `enwik8`: the Hutter Prize Wikipedia data set.

Source: ``enwik8.zip`` from http://mattmahoney.net/dc/enwik8.zip, holding
``enwik8``: the first 100,000,000 bytes of an English Wikipedia XML dump,
SHA-1 ``57b8363b814821dc9d47aa4d41f58733519076b2`` (published checksum,
checked on every prepare), 205 distinct byte values. Split as in Graves
(2013) and Chung et al. (2017): the first 90M bytes train, the next 5M
validate, the last 5M test. The stream is modelled at the byte level.

Put ``enwik8.zip`` or the extracted ``enwik8`` in the manual dir (or the
data_dir); offline, nothing is downloaded (see `hmkeras.data.sources`).

Examples:

        import tensorflow_datasets as tfds
        from hmkeras.data import Enwik8, read_split
        builder = Enwik8(allow_download=False)
        builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
            manual_dir="/path/to/dir/with/enwik8.zip"))
        test = read_split(builder, "test")          # bytes
        assert len(test) == 5_000_000
"""

from __future__ import annotations

from hmkeras.data import char_stream_builder
from hmkeras.data import sources

__all__ = ["Enwik8", "ENWIK8_SHA1", "ENWIK8_SIZE", "ENWIK8_NUM_SYMBOLS"]

ENWIK8_SIZE = 100_000_000
ENWIK8_SHA1 = "57b8363b814821dc9d47aa4d41f58733519076b2"
ENWIK8_NUM_SYMBOLS = 205


class Enwik8(char_stream_builder.FixedSplitBuilder):
    """enwik8: 100M bytes of Wikipedia XML; 90M / 5M / 5M split.

    Examples:

        >>> import pathlib, tempfile
        >>> import tensorflow_datasets as tfds
        >>> from hmkeras.data import Enwik8, FixedSplitConfig, read_split
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "enwik8").write_bytes(b"<page><title>Keras</title></page>\\n" * 10)
        >>> config = FixedSplitConfig(name="tiny", total_size=340, valid_size=34, test_size=34)
        >>> builder = Enwik8(config=config, data_dir=str(folder / "tfds"), allow_download=False)
        >>> builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        ...     manual_dir=str(folder)))
        Downloading and preparing dataset ...
        Dataset enwik8 downloaded and prepared to ...
        >>> read_split(builder, "test")
        b'<page><title>Keras</title></page>\\n'
    """

    name = "enwik8"
    RAW_FILES = sources.RawFiles.from_archive(
        "enwik8", "http://mattmahoney.net/dc/enwik8.zip", {"enwik8": "enwik8"}
    )
    SYMBOLS = "bytes"
    CHECKSUM_ALGORITHM = "sha1"
    BUILDER_CONFIGS = [
        char_stream_builder.FixedSplitConfig(
            name="full",
            description="The published enwik8, split 90M / 5M / 5M bytes.",
            total_size=ENWIK8_SIZE,  # valid_size, test_size: 5M (defaults)
            checksum=ENWIK8_SHA1,
            num_distinct_bytes=ENWIK8_NUM_SYMBOLS,
        )
    ]
    DESCRIPTION = (
        "enwik8 (Hutter Prize): the first 10^8 bytes of an English Wikipedia "
        "XML dump, modelled as bytes. One byte stream per split, in chunks."
    )
    HOMEPAGE = "http://prize.hutter1.net/"
    CITATION = """@misc{hutter2006enwik8,
  author = {Marcus Hutter},
  title = {The Human Knowledge Compression Contest},
  year = {2006},
  howpublished = {\\url{http://prize.hutter1.net/}}
}"""

    def _check_symbols(self, data):
        config = self.builder_config
        distinct = len(self._byte_values(data))
        if config.num_distinct_bytes is not None and (
            distinct != config.num_distinct_bytes
        ):
            raise sources.DatasetVerificationError(
                f"enwik8: the file enwik8 has {distinct} distinct byte values, "
                f"expected {config.num_distinct_bytes}; it is not enwik8."
            )
        return {"num_distinct_bytes": distinct}
