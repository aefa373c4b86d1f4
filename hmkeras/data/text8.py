"""TFDS builder `text8`: Matt Mahoney's text8 (first 10^8 characters of
cleaned English Wikipedia, letters a-z and space).

Source: ``text8.zip`` from http://mattmahoney.net/dc/text8.zip (31,344,016
bytes), holding ``text8``: 100,000,000 bytes of a-z and space, SHA-256
``6e890197...dca7`` (the published checksum, checked on every prepare).
Split as in Mikolov et al. (2012) and Chung et al. (2017): the first 90M
characters train, the next 5M validate, the last 5M test; 27 symbols.

Put ``text8.zip`` or the extracted ``text8`` in the manual dir (or the
data_dir); offline, nothing is downloaded (see `hmkeras.data.sources`).

Examples:

        import tensorflow_datasets as tfds
        from hmkeras.data import Text8, read_split
        builder = Text8(allow_download=False)
        builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
            manual_dir="/path/to/dir/with/text8.zip"))
        test = read_split(builder, "test").decode("ascii")
        assert len(test) == 5_000_000

    Tests use a tiny custom config, e.g.
    ``Text8(config=FixedSplitConfig(name="tiny", total_size=1000, valid_size=50,
    test_size=50, checksum=None))``; the default config ("full") checks the
    published size and checksum.
"""

from __future__ import annotations

from hmkeras.data import char_stream_builder
from hmkeras.data import sources

__all__ = ["Text8", "TEXT8_SHA256", "TEXT8_SIZE", "TEXT8_ZIP_SIZE"]

TEXT8_SIZE = 100_000_000
TEXT8_ZIP_SIZE = 31_344_016
TEXT8_SHA256 = "6e890197040d37d85beb962ae1f041ff1d9a9ca8d20c7d99c85027eebf51dca7"
_ALPHABET = b" abcdefghijklmnopqrstuvwxyz"


class Text8(char_stream_builder.FixedSplitBuilder):
    """text8: 100M characters of a-z and space; 90M / 5M / 5M split.

    Examples:

        >>> import pathlib, tempfile
        >>> import tensorflow_datasets as tfds
        >>> from hmkeras.data import FixedSplitConfig, Text8, read_split
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "text8").write_bytes(b" the cat sat on the mat" * 10)
        >>> config = FixedSplitConfig(name="tiny", total_size=230, valid_size=23, test_size=23)
        >>> builder = Text8(config=config, data_dir=str(folder / "tfds"), allow_download=False)
        >>> builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        ...     manual_dir=str(folder)))
        Downloading and preparing dataset ...
        Dataset text8 downloaded and prepared to ...
        >>> read_split(builder, "test")
        b' the cat sat on the mat'
    """

    name = "text8"
    RAW_FILES = sources.RawFiles.from_archive(
        "text8", "http://mattmahoney.net/dc/text8.zip", {"text8": "text8"}
    )
    SYMBOLS = "chars"
    CHECKSUM_ALGORITHM = "sha256"
    BUILDER_CONFIGS = [
        char_stream_builder.FixedSplitConfig(
            name="full",
            description="The published text8, split 90M / 5M / 5M.",
            total_size=TEXT8_SIZE,  # valid_size, test_size: 5M (defaults)
            checksum=TEXT8_SHA256,
            archive_size=TEXT8_ZIP_SIZE,
        )
    ]
    DESCRIPTION = (
        "text8 (Matt Mahoney): the first 10^8 characters of a cleaned "
        "English Wikipedia dump, lowercase letters and spaces only. One "
        "character stream per split, stored in chunks."
    )
    HOMEPAGE = "http://mattmahoney.net/dc/textdata.html"
    CITATION = """@misc{mahoney2011text8,
  author = {Matt Mahoney},
  title = {Large Text Compression Benchmark},
  year = {2011},
  howpublished = {\\url{http://mattmahoney.net/dc/text.html}}
}"""

    def _check_symbols(self, data):
        bad = sorted(set(self._byte_values(data)) - set(_ALPHABET))
        if bad:
            raise sources.DatasetVerificationError(
                f"text8: the file text8 holds bytes outside a-z and space: "
                f"{[bytes([b]) for b in bad[:10]]}; it is not text8."
            )
        return {}
