"""TFDS builder `text8`: Matt Mahoney's text8 (first 10^8 characters of
cleaned English Wikipedia, letters a-z and space).

Source: ``text8.zip`` from http://mattmahoney.net/dc/text8.zip (31,344,016
bytes), holding ``text8``: 100,000,000 bytes of a-z and space, SHA-256
``6e890197...dca7`` (the published checksum, checked on every prepare).
Split as in Mikolov et al. (2012) and Chung et al. (2017): the first 90M
characters train, the next 5M validate, the last 5M test; 27 symbols.

Put ``text8.zip`` or the extracted ``text8`` in the manual dir (or the
data_dir); offline, nothing is downloaded (see `hmkeras.data.sources`).

Example:

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

import numpy as np

from hmkeras.data import char_stream_builder
from hmkeras.data import sources

__all__ = ["Text8", "TEXT8_SHA256", "TEXT8_SIZE", "TEXT8_ZIP_SIZE"]

TEXT8_SIZE = 100_000_000
TEXT8_ZIP_SIZE = 31_344_016
TEXT8_SHA256 = "6e890197040d37d85beb962ae1f041ff1d9a9ca8d20c7d99c85027eebf51dca7"
_ALPHABET = b" abcdefghijklmnopqrstuvwxyz"

_RAW = sources.RawFiles(
    dataset="text8",
    url="http://mattmahoney.net/dc/text8.zip",
    archive="text8.zip",
    members={"text8": "text8"},
    extracted={"text8": ("text8",)},
)


class Text8(char_stream_builder.CharStreamBuilder):
    """text8: 100M characters of a-z and space; 90M / 5M / 5M split."""

    name = "text8"
    RAW_FILES = _RAW
    SYMBOLS = "chars"
    CHECKSUM_ALGORITHM = "sha256"
    MANUAL_DOWNLOAD_INSTRUCTIONS = char_stream_builder.manual_download_instructions(_RAW)
    BUILDER_CONFIGS = [
        char_stream_builder.FixedSplitConfig(
            name="full",
            description="The published text8, split 90M / 5M / 5M.",
            total_size=TEXT8_SIZE,
            valid_size=5_000_000,
            test_size=5_000_000,
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

    def _prepare_streams(self, files):
        config = self.builder_config
        data = files["text8"]
        sources.check_size("text8", "the file text8", len(data), config.total_size)
        if config.checksum:
            sources.check_digest(
                "text8", "the file text8", data, self.CHECKSUM_ALGORITHM,
                config.checksum,
            )
        present = np.flatnonzero(np.bincount(
            np.frombuffer(data, dtype=np.uint8), minlength=256))
        bad = sorted(set(present.tolist()) - set(_ALPHABET))
        if bad:
            raise sources.DatasetVerificationError(
                f"text8: the file text8 holds bytes outside a-z and space: "
                f"{[bytes([b]) for b in bad[:10]]}; it is not text8."
            )
        return config.split(data), {}
