"""Finding, fetching and checking the raw files of the text corpora.

Our machines have no internet, users' machines may. The builders of
`hmkeras.data` therefore look for the raw files in this order and never wait
long on a network that is not there:

1. **Local files**, in each search directory (the TFDS manual dir, then the
   `data_dir`, then `data_dir/downloads`): first the extracted files (e.g.
   ``text8``, ``simple-examples/data/ptb.char.train.txt``), then the archive
   as published (e.g. ``text8.zip``, ``simple-examples.tgz``).
2. **Download**, only if allowed (`allow_download=True` and the environment
   variable ``HMKERAS_OFFLINE`` unset): a TCP probe of the server with a short
   timeout (a few seconds) comes first, so an offline machine fails at once
   instead of hanging on TFDS's download retries; then TFDS's download
   manager fetches the archive (and records its checksum when
   ``register_checksums`` is on).
3. Otherwise `DatasetFilesNotFoundError`, whose message names the files, the
   directories to put them in and the offline alternative (the embedded
   `SyntheticHierarchicalCorpus`, ``load_char_corpus("synthetic", ...)``).

Examples:

    >>> import tempfile
    >>> raw = RawFiles(dataset="demo", url="http://example.invalid/demo.zip",
    ...                archive="demo.zip", members={"a": "demo/a.txt"},
    ...                extracted={"a": ("a.txt", "demo/a.txt")})
    >>> locate(raw, [tempfile.mkdtemp()]) is None
    True
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import socket
import tarfile
import threading
import urllib.parse
import zipfile
from typing import Mapping, Sequence

__all__ = [
    "RawFiles",
    "DatasetFilesNotFoundError",
    "DatasetVerificationError",
    "OFFLINE_ENV_VAR",
    "PROBE_THREAD_NAME",
    "locate",
    "read_located",
    "fetch",
    "network_reachable",
    "check_size",
    "check_digest",
    "text_lines",
]

OFFLINE_ENV_VAR = "HMKERAS_OFFLINE"
#: Name of the thread of `network_reachable`'s probe.
PROBE_THREAD_NAME = "hmkeras-network-probe"


class DatasetFilesNotFoundError(FileNotFoundError):
    """The raw files of a dataset are not on disk and cannot be downloaded.

    Examples:

        >>> import tempfile
        >>> from hmkeras.data import DatasetFilesNotFoundError, load_char_corpus
        >>> try:
        ...     load_char_corpus("text8", "test", data_dir=tempfile.mkdtemp(),
        ...                      allow_download=False)
        ... except DatasetFilesNotFoundError as error:
        ...     print("text8.zip" in str(error))
        Downloading and preparing dataset ...
        True
    """


class DatasetVerificationError(ValueError):
    """A raw file is present but is not what was published (size, checksum,
    format).

    Examples:

        >>> from hmkeras.data import DatasetVerificationError
        >>> from hmkeras.data.ptb_char import parse_ptb_char
        >>> try:
        ...     parse_ptb_char(b"aer banknote\\n", "ptb.char.train.txt")  # word-level text
        ... except DatasetVerificationError as error:
        ...     print(str(error)[:43])
        ptb_char: ptb.char.train.txt line 1: tokens
    """


@dataclasses.dataclass(frozen=True)
class RawFiles:
    """Where the raw files of one dataset come from.

    Attributes:
      dataset: the dataset name, for messages.
      url: the published archive's URL.
      archive: the archive's file name as published (e.g. ``text8.zip``).
      members: ``{key: path inside the archive}``.
      extracted: ``{key: candidate paths}`` of the extracted files, relative
        to a search directory, tried in order.
    """

    dataset: str
    url: str
    archive: str
    members: Mapping[str, str]
    extracted: Mapping[str, Sequence[str]]

    @classmethod
    def from_archive(
        cls,
        dataset: str,
        url: str,
        files: Mapping[str, str],
        folder: str = "",
        other_folders: Sequence[str] = (),
    ) -> "RawFiles":
        """The `RawFiles` of an archive at `url` holding `files` in `folder`.

        The archive's name is the last part of `url`. Extracted, each file
        is accepted at ``folder/name``, then ``f/name`` for each folder `f`
        of `other_folders`, then ``name`` directly in a search directory.

        Args:
          dataset: the dataset name, for messages.
          url: the published archive's URL.
          files: ``{key: file name}`` of the files read from the archive.
          folder: the folder of the files inside the archive ("" for its
            root).
          other_folders: further folders in which extracted files are
            accepted.

        Examples:

            >>> raw = RawFiles.from_archive(
            ...     "demo", "http://example.invalid/demo.tgz", {"a": "a.txt"},
            ...     folder="demo/data", other_folders=("data",))
            >>> raw.archive, raw.members["a"], raw.extracted["a"]
            ('demo.tgz', 'demo/data/a.txt', ('demo/data/a.txt', 'data/a.txt', 'a.txt'))
        """
        folders = [f for f in (folder, *other_folders) if f] + [""]
        return cls(
            dataset=dataset,
            url=url,
            archive=urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1],
            members={key: _join(folder, name) for key, name in files.items()},
            extracted={
                key: tuple(_join(f, name) for f in folders)
                for key, name in files.items()
            },
        )

    def describe(self) -> str:
        """Human-readable list of the accepted file layouts."""
        names = ", ".join(f"`{paths[0]}`" for paths in self.extracted.values())
        return f"`{self.archive}` (as downloaded from {self.url}) or the extracted {names}"


@dataclasses.dataclass(frozen=True)
class Located:
    """Local files found for a dataset: an archive, or extracted files."""

    kind: str  # "archive" or "extracted"
    archive: str | None = None
    files: Mapping[str, str] | None = None

    def describe(self) -> str:
        if self.kind == "archive":
            return self.archive
        return ", ".join(sorted(self.files.values()))


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _normalise(member: str) -> str:
    while member.startswith("./"):
        member = member[2:]
    return member.lstrip("/")


def locate(raw: RawFiles, search_dirs: Sequence) -> Located | None:
    """Finds the raw files in `search_dirs`, extracted files first."""
    for directory in search_dirs:
        directory = os.fspath(directory)
        if not os.path.isdir(directory):
            continue
        found = {}
        for key, candidates in raw.extracted.items():
            for rel in candidates:
                path = os.path.join(directory, rel)
                if os.path.isfile(path):
                    found[key] = path
                    break
        if len(found) == len(raw.extracted):
            return Located(kind="extracted", files=found)
        archive = os.path.join(directory, raw.archive)
        if os.path.isfile(archive):
            return Located(kind="archive", archive=archive)
    return None


def _read_archive(raw: RawFiles, path: str) -> dict[str, bytes]:
    """Reads `raw.members` from a zip or tar archive at `path`."""
    wanted = {_normalise(m): key for key, m in raw.members.items()}
    out: dict[str, bytes] = {}
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                for info in archive.infolist():
                    key = wanted.get(_normalise(info.filename))
                    if key is not None:
                        out[key] = archive.read(info)
        elif tarfile.is_tarfile(path):
            with tarfile.open(path, mode="r:*") as archive:
                for info in archive:
                    key = wanted.get(_normalise(info.name))
                    if key is not None and info.isfile():
                        out[key] = archive.extractfile(info).read()
        else:
            raise DatasetVerificationError(
                f"{raw.dataset}: {path} is neither a zip nor a tar archive; "
                f"expected {raw.archive} as published at {raw.url}."
            )
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError) as err:
        raise DatasetVerificationError(
            f"{raw.dataset}: cannot read the archive {path} ({err}); it is "
            f"probably truncated. Delete it and download {raw.url} again."
        ) from err
    missing = sorted(raw.members[k] for k in raw.members if k not in out)
    if missing:
        raise DatasetVerificationError(
            f"{raw.dataset}: the archive {path} lacks {missing}; expected "
            f"{raw.archive} as published at {raw.url}."
        )
    return out


def read_located(
    raw: RawFiles, located: Located, archive_size: int | None = None
) -> dict[str, bytes]:
    """The bytes of every file of `raw`, from the archive or extracted files.

    `archive_size`, when given, is the published size of the archive, checked
    before reading it.
    """
    if located.kind == "archive":
        if archive_size is not None:
            check_size(
                raw.dataset, located.archive, os.path.getsize(located.archive),
                archive_size,
                hint=(
                    f"Download {raw.url} again, or put the extracted files "
                    "there instead of a re-packed archive."
                ),
            )
        return _read_archive(raw, located.archive)
    out = {}
    for key, path in located.files.items():
        with open(path, "rb") as f:
            out[key] = f.read()
    return out


def network_reachable(url: str, timeout: float = 5.0) -> bool:
    """Whether a TCP connection to `url`'s server opens within `timeout` s.

    Name resolution and connection run in a daemon thread (named
    `PROBE_THREAD_NAME`), so the call returns after at most `timeout` seconds
    even where DNS would hang; the thread ends by itself once the resolver
    or the connect (bounded by `timeout`) gives up. Any failure, including a
    host name that cannot be encoded (`UnicodeError`), means unreachable.
    """
    parts = urllib.parse.urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    result = []

    def _probe():
        try:
            with socket.create_connection((parts.hostname, port), timeout=timeout):
                result.append(True)
        except (OSError, ValueError):
            result.append(False)

    thread = threading.Thread(target=_probe, name=PROBE_THREAD_NAME, daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(result and result[0])


def _offline_env() -> bool:
    return os.environ.get(OFFLINE_ENV_VAR, "").strip().lower() not in (
        "", "0", "false", "no",
    )


def _not_found_message(raw: RawFiles, search_dirs, reason: str) -> str:
    dirs = "\n".join(f"    {os.fspath(d)}" for d in search_dirs)
    layouts = "\n".join(
        f"    {paths[0]}" for paths in raw.extracted.values()
    )
    return (
        f"Dataset '{raw.dataset}': raw files not found, and {reason}.\n"
        f"Put either the archive\n    {raw.archive}\n(download it from "
        f"{raw.url} on a machine with internet) or the extracted files\n"
        f"{layouts}\ninto one of these directories (the first is the TFDS "
        f"manual dir; choose it with load_char_corpus(..., manual_dir=DIR) "
        f"or tfds.download.DownloadConfig(manual_dir=DIR)):\n{dirs}\n"
        "No download is needed for the embedded synthetic corpus, which "
        "works offline: hmkeras.data.load_char_corpus('synthetic', split) or "
        "hmkeras.data.SyntheticHierarchicalCorpus()."
    )


def fetch(
    raw: RawFiles,
    search_dirs: Sequence,
    dl_manager=None,
    allow_download: bool = True,
    probe_timeout: float = 5.0,
    archive_size: int | None = None,
) -> tuple[dict[str, bytes], str]:
    """Returns ``({key: bytes}, origin)`` for `raw`, local files first.

    Args:
      raw: the dataset's `RawFiles`.
      search_dirs: directories searched for local files, in order.
      dl_manager: a `tfds.download.DownloadManager`, used only to download.
      allow_download: whether a download may be attempted (also disabled by
        the environment variable ``HMKERAS_OFFLINE=1``).
      probe_timeout: seconds allowed to the reachability probe.
      archive_size: published size of the archive in bytes, checked when
        the archive is read (None: not checked).

    Raises:
      DatasetFilesNotFoundError: no local files and no download possible.
      DatasetVerificationError: an archive is unreadable or incomplete.
    """
    located = locate(raw, search_dirs)
    if located is not None:
        return read_located(raw, located, archive_size), located.describe()
    if not allow_download or dl_manager is None:
        reason = "downloading is disabled (allow_download=False)"
        raise DatasetFilesNotFoundError(_not_found_message(raw, search_dirs, reason))
    if _offline_env():
        reason = f"downloading is disabled ({OFFLINE_ENV_VAR} is set)"
        raise DatasetFilesNotFoundError(_not_found_message(raw, search_dirs, reason))
    if not network_reachable(raw.url, timeout=probe_timeout):
        reason = (
            f"the server of {raw.url} cannot be reached (no connection within "
            f"{probe_timeout:g} s; this machine seems offline)"
        )
        raise DatasetFilesNotFoundError(_not_found_message(raw, search_dirs, reason))
    try:
        path = os.fspath(dl_manager.download(raw.url))
    except Exception as err:  # the download manager raises many kinds
        reason = f"the download of {raw.url} failed ({type(err).__name__}: {err})"
        raise DatasetFilesNotFoundError(
            _not_found_message(raw, search_dirs, reason)
        ) from err
    located = Located(kind="archive", archive=path)
    return read_located(raw, located, archive_size), raw.url


def text_lines(data: bytes, dataset: str, file_name: str) -> list:
    """The lines of a raw UTF-8 text file (a final line end adds no line).

    Raises:
      DatasetVerificationError: naming `dataset` and `file_name`, for bytes
        that are not UTF-8.

    Examples:

        >>> text_lines(b"a b\\n\\nc\\n", "demo", "a.txt")
        ['a b', '', 'c']
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DatasetVerificationError(
            f"{dataset}: {file_name} is not UTF-8 text ({err})."
        ) from err
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def check_size(dataset: str, what: str, size: int, expected: int, hint: str = ""):
    """Raises `DatasetVerificationError` unless ``size == expected``."""
    if size != expected:
        raise DatasetVerificationError(
            f"{dataset}: {what} has {size:,} bytes, expected {expected:,} "
            f"(the published size). The file is incomplete or not the "
            f"published one. {hint}".rstrip()
        )


def check_digest(
    dataset: str, what: str, data: bytes, algorithm: str, expected: str,
    hint: str = "",
):
    """Raises `DatasetVerificationError` unless the hex digest matches."""
    digest = hashlib.new(algorithm, data).hexdigest()
    if digest != expected.lower():
        raise DatasetVerificationError(
            f"{dataset}: {what} has {algorithm.upper()} {digest}, expected "
            f"{expected.lower()} (the published checksum). The file is "
            f"corrupted or not the published one. {hint}".rstrip()
        )
