"""TFDS builder `brent`: the Brent word-discovery benchmark (child-directed speech).

The Bernstein-Ratner corpus of English child-directed speech (Bernstein-Ratner
1987) as transcribed by Brent (1999), in the train / validation / test splits
of Kawakami, Dyer & Blunsom (2019): the standard benchmark of unsupervised
word discovery. Two builder configs:

==========  =========================================  =================  =======
config      files (train, validation, test)            utterances         symbols
==========  =========================================  =================  =======
phonemes    phono_tr.txt, phono_va.txt, phono_te.txt   7,832 / 978 / 978  49
            (Brent's phonemic transcription, one
            ASCII symbol per phoneme; the default)
text        text_tr.txt, text_va.txt, text_te.txt      7,832 / 979 / 979  28
            (orthographic: a-z, ``'`` and ``@``)
==========  =========================================  =================  =======

Source: the copies of Kawakami et al.'s splits in the public GitHub repository
``cmdowney88/SegmentalLMs``, folder ``Data/SNLM_sets/br/`` (MIT licence,
copyright C.M. Downey 2021): the archive of its main branch,
https://github.com/cmdowney88/SegmentalLMs/archive/refs/heads/main.zip, holds
them under ``SegmentalLMs-main/Data/SNLM_sets/br/``. A browser (or
``curl -LOJ``) saves that archive as ``SegmentalLMs-main.zip``, the name the
builder looks for (``wget`` saves it as ``main.zip``: rename it). No checksum
is published, so what is read is checked for format and, for the published
configs, for the published utterance counts and symbol inventory.

Format: one utterance per line, its words (the gold segmentation) separated
by single spaces. The stream of a split is the file's utterances, the spaces
**kept**, each followed by ``"\\n"``::

    "yu want tu si D6 bUk\\n"  ->  "yu want tu si D6 bUk\\n"

A word-discovery model removes the spaces itself (they are the answer it is
scored against). What is checked: UTF-8; no empty line; no leading,
trailing or double space, and no whitespace other than the single space;
for the published configs, the number of utterances of every split and the
number of distinct symbols (the space not counted) over the three files.
``info.metadata`` records ``num_utterances`` and ``num_words`` per split and
the ``alphabet`` (the distinct symbols besides the space, sorted).

Put ``SegmentalLMs-main.zip``, or the extracted files (directly, as
``phono_tr.txt`` ..., or under ``br/``, ``Data/SNLM_sets/br/`` or
``SegmentalLMs-main/Data/SNLM_sets/br/``) in the manual dir or the data_dir.
A config needs only its own three files.

Examples:

        import tensorflow_datasets as tfds
        from hmkeras.data import Brent, read_split
        builder = Brent(config="phonemes", allow_download=False)
        builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
            manual_dir="/path/to/dir/with/phono_tr.txt"))
        test = read_split(builder, "test").decode("utf-8")   # 978 lines
        unsegmented = test.replace(" ", "")                  # the model's input
        words = builder.info.metadata["num_words"]["test"]

    Tests use a custom config, e.g. ``Brent(config=BrentConfig(name="tiny",
    files={"train": "a.txt", "validation": "b.txt", "test": "c.txt"}))``: it
    checks the format but no counts (or the counts it is given).
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

import tensorflow_datasets as tfds

from hmkeras.data import char_stream_builder
from hmkeras.data import sources

__all__ = [
    "Brent", "BrentConfig", "parse_brent", "BRENT_URL", "BRENT_ARCHIVE",
    "BRENT_FOLDER",
]

#: Archive of the main branch of cmdowney88/SegmentalLMs (MIT licence).
BRENT_URL = "https://github.com/cmdowney88/SegmentalLMs/archive/refs/heads/main.zip"
#: The name under which a browser (or ``curl -LOJ``) saves `BRENT_URL`.
BRENT_ARCHIVE = "SegmentalLMs-main.zip"
#: The folder of the files inside the archive.
BRENT_FOLDER = "SegmentalLMs-main/Data/SNLM_sets/br"
# Further folders in which extracted files are accepted, after the search
# directory itself.
_OTHER_FOLDERS = ("br", "Data/SNLM_sets/br", BRENT_FOLDER)


def _raw_files(dataset: str, files: Mapping[str, str]) -> sources.RawFiles:
    """The `RawFiles` of three files of the Brent folder (bare names first,
    so that messages name the files as a user has them)."""
    return sources.RawFiles(
        dataset=dataset,
        url=BRENT_URL,
        archive=BRENT_ARCHIVE,
        members={split: f"{BRENT_FOLDER}/{name}" for split, name in files.items()},
        extracted={
            split: (name,) + tuple(f"{folder}/{name}" for folder in _OTHER_FOLDERS)
            for split, name in files.items()
        },
    )


def parse_brent(data: bytes, file_name: str = "Brent file",
                dataset: str = "brent") -> list:
    """The utterances of a Brent file, checked.

    Args:
      data: the raw file content.
      file_name: named in error messages.
      dataset: named in error messages.

    Returns:
      The lines (utterances) as a list of str, words separated by single
      spaces; a final line without ``"\\n"`` counts as a line.

    Raises:
      sources.DatasetVerificationError: not UTF-8, no line, an empty line, a
        leading, trailing or double space, or whitespace other than the
        space (a tab, a carriage return of CRLF line ends); the message
        names the file and the line.

    Examples:

        >>> parse_brent(b"yu want tu si D6 bUk\\nlUk\\n")
        ['yu want tu si D6 bUk', 'lUk']
        >>> parse_brent(b"yu  want\\n", "phono_tr.txt")
        Traceback (most recent call last):
        ...
        hmkeras.data.sources.DatasetVerificationError: brent: phono_tr.txt line 1: a double space (words must be separated by single spaces): 'yu  want'
    """
    lines = sources.text_lines(data, dataset, file_name)
    if not lines:
        raise sources.DatasetVerificationError(f"{dataset}: {file_name} is empty.")
    for number, line in enumerate(lines, start=1):
        problem = None
        if not line:
            problem = "an empty line (one utterance per line)"
        elif any(c.isspace() and c != " " for c in line):
            other = sorted({c for c in line if c.isspace() and c != " "})
            problem = (
                f"whitespace other than the space {other} (only single spaces "
                "separate words; CRLF line ends?)"
            )
        elif line[0] == " " or line[-1] == " ":
            problem = "a leading or trailing space"
        elif "  " in line:
            problem = "a double space (words must be separated by single spaces)"
        if problem:
            raise sources.DatasetVerificationError(
                f"{dataset}: {file_name} line {number}: {problem}: {line[:60]!r}"
            )
    return lines


def _check_counts(field: str, value):
    """`value` is None or ``{split: positive int}`` over the three splits."""
    if value is None:
        return
    if not isinstance(value, Mapping) or set(value) != set(
        char_stream_builder.SPLIT_NAMES
    ) or any(
        isinstance(v, bool) or not isinstance(v, int) or v < 1
        for v in value.values()
    ):
        raise ValueError(
            f"`{field}` must be None or a dict of a positive integer per split "
            f"{list(char_stream_builder.SPLIT_NAMES)}, got {value!r}."
        )


@dataclasses.dataclass(eq=False)
class BrentConfig(tfds.core.BuilderConfig):
    """Files and expected facts of a `Brent` config.

    The published configs ("phonemes", "text") check Kawakami et al.'s
    utterance counts and the symbol inventory; a config with another name is
    a custom config (e.g. tiny files in tests), prepared in its own directory
    ``<data_dir>/brent/<config name>/``, that checks the counts it is given
    (None: not checked). The format is always checked (`parse_brent`).

    Attributes:
      files: ``{"train": name, "validation": name, "test": name}``: the file
        names in the Brent folder (``Data/SNLM_sets/br/`` of the source).
      num_utterances: expected lines per split (``{split: int}``), or None.
      num_distinct_symbols: expected number of distinct symbols over the
        three files, the space not counted, or None.

    Examples:

        >>> from hmkeras.data import BrentConfig
        >>> config = BrentConfig(name="mine", files={"train": "a.txt",
        ...     "validation": "b.txt", "test": "c.txt"}, num_distinct_symbols=26)
        >>> config.num_utterances is None  # counts not checked
        True
        >>> BrentConfig(name="bad", files={"train": "a.txt"})
        Traceback (most recent call last):
        ...
        ValueError: `files` must map each split [...] to a file name, got {'train': 'a.txt'}.
    """

    files: Mapping[str, str] | None = None
    num_utterances: Mapping[str, int] | None = None
    num_distinct_symbols: int | None = None

    def __post_init__(self):
        files = self.files
        if not isinstance(files, Mapping) or set(files) != set(
            char_stream_builder.SPLIT_NAMES
        ) or not all(isinstance(f, str) and f for f in files.values()):
            raise ValueError(
                f"`files` must map each split "
                f"{list(char_stream_builder.SPLIT_NAMES)} to a file name, got "
                f"{files!r}."
            )
        _check_counts("num_utterances", self.num_utterances)
        value = self.num_distinct_symbols
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ValueError(
                f"`num_distinct_symbols` must be None or a positive integer, "
                f"got {value!r}."
            )


_PHONEMES = BrentConfig(
    name="phonemes",
    description=(
        "Brent (1999) phonemic transcription, Kawakami et al. (2019) splits; "
        "49 symbols, words separated by spaces."
    ),
    files={"train": "phono_tr.txt", "validation": "phono_va.txt",
           "test": "phono_te.txt"},
    num_utterances={"train": 7_832, "validation": 978, "test": 978},
    num_distinct_symbols=49,
)
_TEXT = BrentConfig(
    name="text",
    description=(
        "The Brent corpus, orthographic, Kawakami et al. (2019) splits; 28 "
        "symbols (a-z, the apostrophe and '@'), words separated by spaces."
    ),
    files={"train": "text_tr.txt", "validation": "text_va.txt",
           "test": "text_te.txt"},
    num_utterances={"train": 7_832, "validation": 979, "test": 979},
    num_distinct_symbols=28,
)

class Brent(char_stream_builder.CharStreamBuilder):
    """Brent / Bernstein-Ratner child-directed speech, Kawakami et al.'s splits.

    One character stream per split: the file's utterances, words separated
    by single spaces (the gold segmentation, kept: a word-discovery model
    removes the spaces itself), ``"\\n"`` after each. Configs (`BrentConfig`):
    "phonemes" (the default; ``phono_{tr,va,te}.txt``, 7,832 / 978 / 978
    utterances, 49 symbols besides the space) and "text" (orthographic;
    ``text_{tr,va,te}.txt``, 7,832 / 979 / 979 utterances, 28 symbols).

    Source: ``Data/SNLM_sets/br/`` of the public GitHub repository
    ``cmdowney88/SegmentalLMs`` (MIT licence, C.M. Downey 2021), copies of
    Kawakami et al. (2019)'s splits; the archive `BRENT_URL`, saved as
    ``SegmentalLMs-main.zip``, or the extracted files go in the manual dir.
    Each file is checked (UTF-8; no empty line; no leading, trailing or
    double space; error messages name the file and line), and for the
    published configs the utterance counts and the number of distinct
    symbols. ``info.metadata``: ``num_utterances``, ``num_words`` (per
    split), ``alphabet``.

    Args:
      allow_download: False to never try the network (files must be local).
      probe_timeout: seconds for the reachability probe before a download.
      **kwargs: TFDS's builder arguments: ``config`` ("phonemes", "text" or
        a custom `BrentConfig`), ``data_dir``, ...

    With the published files in a folder (nothing is downloaded):

        import tensorflow_datasets as tfds
        from hmkeras.data import Brent, read_split
        builder = Brent(config="text", allow_download=False)
        builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
            manual_dir="/path/to/dir/with/text_tr.txt"))
        lines = read_split(builder, "test").decode("utf-8").splitlines()
        assert len(lines) == 979

    Examples:

        >>> import pathlib, tempfile
        >>> import tensorflow_datasets as tfds
        >>> from hmkeras.data import Brent, BrentConfig, read_split
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> for name in ("tr", "va", "te"):
        ...     _ = (folder / f"text_{name}.txt").write_text("you want to see the book\\nlook\\n")
        >>> config = BrentConfig(name="tiny", files={"train": "text_tr.txt",
        ...     "validation": "text_va.txt", "test": "text_te.txt"})
        >>> builder = Brent(config=config, data_dir=str(folder / "tfds"), allow_download=False)
        >>> builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        ...     manual_dir=str(folder)))
        Downloading and preparing dataset ...
        Dataset brent downloaded and prepared to ...
        >>> read_split(builder, "test").decode("utf-8").splitlines()
        ['you want to see the book', 'look']
    """

    name = "brent"
    # The default config's files; an instance reads its own config's files.
    RAW_FILES = _raw_files("brent", _PHONEMES.files)
    MANUAL_DOWNLOAD_INSTRUCTIONS = (
        f"Download {BRENT_URL} (saved as {BRENT_ARCHIVE}) and put it, or the "
        "files of its folder Data/SNLM_sets/br/, in the manual dir (by "
        "default <data_dir>/downloads/manual) or in <data_dir>:\n"
        "  config 'phonemes': phono_tr.txt, phono_va.txt, phono_te.txt\n"
        "  config 'text': text_tr.txt, text_va.txt, text_te.txt\n"
        "Offline, the embedded synthetic corpus needs no files: "
        "hmkeras.data.load_char_corpus('synthetic', split)."
    )
    SYMBOLS = "chars"
    BUILDER_CONFIGS = [_PHONEMES, _TEXT]
    DESCRIPTION = (
        "The Brent corpus of English child-directed speech (Bernstein-Ratner "
        "1987; Brent 1999) in Kawakami et al. (2019)'s splits, as copied in "
        "cmdowney88/SegmentalLMs (MIT licence): one utterance per line, gold "
        "words separated by single spaces. One character stream per split, "
        "spaces kept, '\\n' after each utterance."
    )
    HOMEPAGE = "https://github.com/cmdowney88/SegmentalLMs"
    CITATION = """@article{brent1999efficient,
  author = {Michael R. Brent},
  title = {An Efficient, Probabilistically Sound Algorithm for Segmentation
           and Word Discovery},
  journal = {Machine Learning},
  volume = {34}, pages = {71--105}, year = {1999}
}
@incollection{bernsteinratner1987phonology,
  author = {Nan Bernstein-Ratner},
  title = {The Phonology of Parent-Child Speech},
  booktitle = {Children's Language},
  editor = {Keith E. Nelson and Anne van Kleeck},
  volume = {6}, pages = {159--174},
  publisher = {Erlbaum}, address = {Hillsdale, NJ}, year = {1987}
}
@inproceedings{kawakami2019learning,
  author = {Kazuya Kawakami and Chris Dyer and Phil Blunsom},
  title = {Learning to Discover, Ground and Use Words with Segmental Neural
           Language Models},
  booktitle = {Proceedings of the 57th Annual Meeting of the Association for
               Computational Linguistics},
  pages = {6429--6441}, year = {2019}
}"""

    def __init__(self, *, allow_download: bool = True,
                 probe_timeout: float = 5.0, **kwargs):
        super().__init__(allow_download=allow_download,
                         probe_timeout=probe_timeout, **kwargs)
        config = self.builder_config
        # The files of this config (shadows the class attribute).
        self.RAW_FILES = _raw_files(f"brent/{config.name}", config.files)

    def _prepare_streams(self, files):
        config = self.builder_config
        dataset = f"brent/{config.name}"
        published = config.name in {c.name for c in self.BUILDER_CONFIGS}
        where = (
            "Kawakami et al.'s split as copied in cmdowney88/SegmentalLMs"
            if published else "the config's count"
        )
        streams, utterances, words, alphabet = {}, {}, {}, set()
        for split in char_stream_builder.SPLIT_NAMES:
            file_name = config.files[split]
            lines = parse_brent(files[split], file_name, dataset)
            expected = (config.num_utterances or {}).get(split)
            if expected is not None and len(lines) != expected:
                raise sources.DatasetVerificationError(
                    f"{dataset}: {file_name} has {len(lines):,} utterances "
                    f"(lines), expected {expected:,} ({where}); it is not the "
                    f"{split} file of this config."
                )
            utterances[split] = len(lines)
            words[split] = sum(line.count(" ") + 1 for line in lines)
            for line in lines:
                alphabet.update(line)
            streams[split] = ("\n".join(lines) + "\n").encode("utf-8")
        alphabet.discard(" ")
        expected = config.num_distinct_symbols
        if expected is not None and len(alphabet) != expected:
            names = ", ".join(config.files[s] for s in char_stream_builder.SPLIT_NAMES)
            raise sources.DatasetVerificationError(
                f"{dataset}: {names} hold {len(alphabet)} distinct symbols "
                f"besides the space, expected {expected} (found: "
                f"{''.join(sorted(alphabet))!r})."
            )
        return streams, {
            "num_utterances": utterances,
            "num_words": words,
            "alphabet": "".join(sorted(alphabet)),
        }
