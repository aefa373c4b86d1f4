"""`CharStreamBuilder`: the TFDS builder base of the character corpora.

A character-level language model reads each split as **one long stream**.
TFDS stores examples, and shuffles their order on disk by the hash of their
key, so a `CharStreamBuilder` stores a split as consecutive chunks of at most
`CHUNK_SIZE` (100,000) symbols, each example
``{"index": int64, "chunk": bytes}``; `read_split` sorts the chunks by index
and joins them back into the exact stream. Per-split facts (number of
symbols, and for WikiText-2 the number of words) are saved in
``info.metadata``.

Subclasses (one module per dataset: `ptb_char`, `text8`, `enwik8`,
`wikitext2_raw`) declare their `RAW_FILES` (`hmkeras.data.sources.RawFiles`),
from which their `MANUAL_DOWNLOAD_INSTRUCTIONS` follow, and implement
`_prepare_streams(files)`, which checks the raw bytes and returns
``{split: stream bytes}`` plus metadata; `FixedSplitBuilder` does so for a
single file cut at fixed sizes (text8, enwik8). Finding the files (manual
dir / data_dir first, then a download guarded by a fast reachability probe)
is shared, see `hmkeras.data.sources`.

Extra constructor arguments (keyword-only, besides TFDS's own):
  allow_download: False to never try the network (files must be local).
  probe_timeout: seconds for the reachability probe before a download.

Example (with local files; nothing is downloaded):

    import tensorflow_datasets as tfds
    from hmkeras.data import Text8, read_split
    builder = Text8(data_dir="~/tensorflow_datasets", allow_download=False)
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        manual_dir="~/corpora"))          # holds text8.zip or text8
    text = read_split(builder, "test").decode("ascii")   # 5,000,000 chars
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import tensorflow_datasets as tfds

from hmkeras.data import sources

__all__ = [
    "CharStreamBuilder", "FixedSplitBuilder", "FixedSplitConfig", "read_split",
    "manual_download_instructions", "SPLIT_NAMES",
]

SPLIT_NAMES = ("train", "validation", "test")


def manual_download_instructions(raw: sources.RawFiles) -> str:
    """Text for a builder's `MANUAL_DOWNLOAD_INSTRUCTIONS`."""
    files = "\n".join(f"  {paths[0]}" for paths in raw.extracted.values())
    return (
        f"Download {raw.archive} from {raw.url} and put it, or the extracted "
        f"files below, in the manual dir (by default "
        f"<data_dir>/downloads/manual) or in <data_dir>:\n{files}\n"
        "Offline, the embedded synthetic corpus needs no files: "
        "hmkeras.data.load_char_corpus('synthetic', split)."
    )


@dataclasses.dataclass(eq=False)
class FixedSplitConfig(tfds.core.BuilderConfig):
    """Config of a corpus that is one file cut at fixed sizes (text8, enwik8).

    The split is the one of Mikolov et al. (2012) and Graves (2013): the first
    ``total_size - valid_size - test_size`` symbols train, the next
    `valid_size` validate, the last `test_size` test. The published files are
    checked strictly (size, checksum, archive size); a config with other
    values (e.g. a tiny file in tests) is a custom config, prepared in its
    own directory ``<data_dir>/<dataset>/<config name>/``.

    Attributes:
      total_size: size in bytes of the unzipped file.
      valid_size, test_size: sizes of the validation and test splits.
      checksum: published hex digest of the unzipped file (algorithm given by
        the builder's `CHECKSUM_ALGORITHM`), or None to skip the check.
      archive_size: published size of the zip archive, or None.
      num_distinct_bytes: number of distinct byte values, or None.

    Examples:

        >>> from hmkeras.data import FixedSplitConfig
        >>> config = FixedSplitConfig(name="tiny", total_size=1000, valid_size=50, test_size=50)
        >>> config.total_size - config.valid_size - config.test_size  # training symbols
        900
        >>> config.checksum is None  # not checked
        True
    """

    total_size: int = 100_000_000
    valid_size: int = 5_000_000
    test_size: int = 5_000_000
    checksum: str | None = None
    archive_size: int | None = None
    num_distinct_bytes: int | None = None

    def __post_init__(self):
        for field in ("total_size", "valid_size", "test_size"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"`{field}` must be a positive integer, got {value!r}."
                )
        if self.valid_size + self.test_size >= self.total_size:
            raise ValueError(
                f"`valid_size` + `test_size` ({self.valid_size} + "
                f"{self.test_size}) must be smaller than `total_size` "
                f"({self.total_size})."
            )

    def split(self, data: bytes) -> dict:
        """``{split: bytes}`` of `data` (whose size was checked)."""
        train_end = self.total_size - self.valid_size - self.test_size
        valid_end = train_end + self.valid_size
        return {
            "train": data[:train_end],
            "validation": data[train_end:valid_end],
            "test": data[valid_end:],
        }


class CharStreamBuilder(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """Base class: one long symbol stream per split, stored as chunks.

    Examples:

        >>> from hmkeras.data import CharStreamBuilder, PtbChar, Text8
        >>> issubclass(Text8, CharStreamBuilder), issubclass(PtbChar, CharStreamBuilder)
        (True, True)
        >>> CharStreamBuilder.CHUNK_SIZE
        100000
    """

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "Initial release."}
    CHUNK_SIZE = 100_000
    #: "chars": the stream is UTF-8 text, `load_char_corpus` returns str;
    #: "bytes": a byte stream, returned as bytes.
    SYMBOLS = "chars"
    RAW_FILES: sources.RawFiles = None
    DESCRIPTION = ""
    HOMEPAGE = ""
    CITATION = ""

    def __init_subclass__(cls, **kwargs):
        # Every builder's manual-download text derives from its RAW_FILES.
        if cls.RAW_FILES is not None and (
            "MANUAL_DOWNLOAD_INSTRUCTIONS" not in vars(cls)
        ):
            cls.MANUAL_DOWNLOAD_INSTRUCTIONS = manual_download_instructions(
                cls.RAW_FILES
            )
        super().__init_subclass__(**kwargs)

    def __init__(self, *, allow_download: bool = True,
                 probe_timeout: float = 5.0, **kwargs):
        if not isinstance(allow_download, bool):
            raise ValueError(
                f"`allow_download` must be True or False, got {allow_download!r}."
            )
        if not probe_timeout > 0:
            raise ValueError(
                f"`probe_timeout` must be a positive number of seconds, got "
                f"{probe_timeout!r}."
            )
        self._allow_download = allow_download
        self._probe_timeout = float(probe_timeout)
        super().__init__(**kwargs)

    def _info(self) -> tfds.core.DatasetInfo:
        return self.dataset_info_from_configs(
            description=self.DESCRIPTION,
            features=tfds.features.FeaturesDict({
                "index": tfds.features.Scalar(dtype=np.int64),
                "chunk": tfds.features.Tensor(shape=(), dtype=np.object_),
            }),
            homepage=self.HOMEPAGE,
            citation=self.CITATION,
            metadata=tfds.core.MetadataDict(),
        )

    def _search_dirs(self, dl_manager) -> list:
        """Manual dir, data_dir, data_dir/downloads (missing ones included,
        so that error messages name them)."""
        # The manual dir's path: `dl_manager.manual_dir` raises when the
        # directory is missing or empty, and we want to name it anyway.
        manual = getattr(dl_manager, "_manual_dir", None)
        dirs = [manual] if manual else []
        dirs += [self.data_dir_root, dl_manager.download_dir]
        unique = []
        for d in dirs:
            d = os.path.abspath(os.path.expanduser(os.fspath(d)))
            if d not in unique:
                unique.append(d)
        return unique

    def _split_generators(self, dl_manager):
        search_dirs = self._search_dirs(dl_manager)
        files, origin = sources.fetch(
            self.RAW_FILES,
            search_dirs,
            dl_manager=dl_manager,
            allow_download=self._allow_download,
            probe_timeout=self._probe_timeout,
            archive_size=getattr(self.builder_config, "archive_size", None),
        )
        streams, metadata = self._prepare_streams(files)
        self.info.metadata.update(metadata)
        self.info.metadata["source"] = os.fspath(origin)
        self.info.metadata["num_symbols"] = {
            split: len(stream) for split, stream in streams.items()
        }
        self.info.metadata["symbols"] = self.SYMBOLS
        return {
            split: self._generate_examples(stream)
            for split, stream in streams.items()
        }

    def _prepare_streams(self, files: dict) -> tuple[dict, dict]:
        """Checks the raw files; returns ``({split: bytes}, metadata)``."""
        raise NotImplementedError

    def _generate_examples(self, stream: bytes):
        size = self.CHUNK_SIZE
        for index, start in enumerate(range(0, len(stream), size)):
            yield index, {"index": index, "chunk": stream[start : start + size]}


class FixedSplitBuilder(CharStreamBuilder, skip_registration=True):
    """Base class of a corpus that is one file cut at fixed sizes.

    text8 and enwik8: `RAW_FILES` names a single file, the
    `BUILDER_CONFIGS` are `FixedSplitConfig`s. `_prepare_streams` checks the
    file's size and, when the config has one, its checksum (algorithm
    `CHECKSUM_ALGORITHM`), then calls `_check_symbols(data)`, which
    subclasses implement, and splits the file with `FixedSplitConfig.split`.
    """

    CHECKSUM_ALGORITHM = "sha256"

    def _prepare_streams(self, files):
        config = self.builder_config
        (key,) = self.RAW_FILES.members
        data = files[key]
        what = f"the file {key}"
        sources.check_size(self.name, what, len(data), config.total_size)
        if config.checksum:
            sources.check_digest(
                self.name, what, data, self.CHECKSUM_ALGORITHM, config.checksum
            )
        return config.split(data), self._check_symbols(data)

    def _check_symbols(self, data: bytes) -> dict:
        """Checks the symbols of the file; returns extra metadata."""
        raise NotImplementedError

    @staticmethod
    def _byte_values(data: bytes) -> list:
        """The distinct byte values in `data`, ascending."""
        counts = np.bincount(np.frombuffer(data, dtype=np.uint8), minlength=256)
        return np.flatnonzero(counts).tolist()


def read_split(builder: CharStreamBuilder, split: str) -> bytes:
    """The prepared `split` of `builder` as one bytes stream.

    Args:
      builder: a `CharStreamBuilder` on which `download_and_prepare` ran.
      split: "train", "validation" or "test".

    Raises:
      ValueError: unknown split, or chunks missing from the prepared data.

    Examples:

        >>> import pathlib, tempfile
        >>> import tensorflow_datasets as tfds
        >>> from hmkeras.data import PtbChar, read_split
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> for split in ("train", "valid", "test"):
        ...     _ = (folder / f"ptb.char.{split}.txt").write_text(" h i\\n")
        >>> builder = PtbChar(data_dir=str(folder / "tfds"), allow_download=False)
        >>> builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        ...     manual_dir=str(folder)))
        Downloading and preparing dataset ...
        Dataset ptb_char downloaded and prepared to ...
        >>> read_split(builder, "test")  # the chunks joined back in order
        b'hi\\n'
    """
    if split not in SPLIT_NAMES:
        raise ValueError(
            f"`split` must be one of {list(SPLIT_NAMES)}, got {split!r}."
        )
    ds = builder.as_dataset(split=split, shuffle_files=False)
    chunks = {}
    for example in ds.as_numpy_iterator():
        chunks[int(example["index"])] = example["chunk"]
    if sorted(chunks) != list(range(len(chunks))):
        raise ValueError(
            f"{builder.name}/{split}: the prepared chunks are not 0..n-1; the "
            f"prepared data in {builder.data_dir} is damaged: delete it and "
            "prepare again."
        )
    stream = b"".join(chunks[i] for i in range(len(chunks)))
    expected = builder.info.metadata.get("num_symbols", {}).get(split)
    if expected is not None and expected != len(stream):
        raise ValueError(
            f"{builder.name}/{split}: read {len(stream)} symbols, the metadata "
            f"says {expected}; delete {builder.data_dir} and prepare again."
        )
    return stream

