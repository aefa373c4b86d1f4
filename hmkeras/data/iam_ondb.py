"""TFDS builder `iam_ondb`: IAM On-Line Handwriting Database pen strokes.

IAM-OnDB (Liwicki & Bunke, ICDAR 2005) needs a (free) registration, so
nothing is downloaded: register at
https://fki.tic.heia-fr.ch/databases/iam-on-line-handwriting-database,
download ``lineStrokes-all.tar.gz`` and put the archive, or its extracted
``lineStrokes/`` folder, in the manual dir (by default
``<data_dir>/downloads/manual``; `examples/iam_ondb.py --manual_dir=DIR`).

Each XML file of ``lineStrokes`` is one text line::

    <WhiteboardCaptureSession>
      <StrokeSet>
        <Stroke colour="black" start_time="..." end_time="...">
          <Point x="1073" y="1058" time="..."/> ...
        </Stroke> ...

It becomes a `(T, 3)` sequence `(dx, dy, pen_up)`
(`hmkeras.data.stroke_offsets.strokes_to_offsets`; `pen_up` = 1 on the last
point of every stroke; `y` is negated so that up is positive). Following
Chung et al. (2017, Section 4.2): sequences shorter than `min_length` (300)
points are dropped, the rest are split at random -- reproducibly, the
files sorted by path and shuffled with `split_seed` -- into 581 validation,
582 test and the remaining (10,465 with the full 11,628 filtered lines)
training lines. With fewer files the validation and test sizes are
proportional (`round(n * 581 / 11628)`, at least 1 each when n >= 3). The
offsets are normalized with the training set's per-coordinate mean and
standard deviation, kept in ``info.metadata["offset_mean"]`` and
``["offset_std"]`` (undo with `hmkeras.data.stroke_offsets.denormalize_offsets`).

`load_iam_ondb` prepares the builder (another `min_length` is a config of
its own) and reads its three splits and statistics.

Example (with the files in ``~/iam``; nothing is downloaded):

    import tensorflow_datasets as tfds
    from hmkeras.data.iam_ondb import IamOnDb, load_iam_ondb, read_stroke_split
    builder = IamOnDb(data_dir="~/tensorflow_datasets")
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        manual_dir="~/iam"))
    test = read_stroke_split(builder, "test")   # list of (T, 3) float32
    splits, (mean, std), info = load_iam_ondb("~/iam")   # all three splits
"""

from __future__ import annotations

import dataclasses
import os
import tarfile
import xml.etree.ElementTree as ElementTree

import numpy as np
import tensorflow_datasets as tfds

from hmkeras.data import sources
from hmkeras.data.stroke_offsets import normalize_offsets
from hmkeras.data.stroke_offsets import offset_statistics
from hmkeras.data.stroke_offsets import strokes_to_offsets

__all__ = ["IamOnDb", "IamOnDbConfig", "load_iam_ondb", "parse_line_strokes",
           "read_stroke_split", "split_sizes"]

REGISTRATION_URL = (
    "https://fki.tic.heia-fr.ch/databases/iam-on-line-handwriting-database"
)
ARCHIVE = "lineStrokes-all.tar.gz"
#: Chung et al. Section 4.2: sizes after the length filter.
PAPER_SPLIT_SIZES = {"train": 10_465, "validation": 581, "test": 582}
PAPER_TOTAL = sum(PAPER_SPLIT_SIZES.values())

MANUAL_DOWNLOAD_INSTRUCTIONS = (
    f"IAM-OnDB needs a registration: register at {REGISTRATION_URL}, "
    f"download {ARCHIVE} and put it, or its extracted lineStrokes/ folder "
    "(the .xml files), in the manual dir (by default "
    "<data_dir>/downloads/manual; examples/iam_ondb.py --manual_dir=DIR). "
    "Offline, the embedded stroke set needs no files: "
    "hmkeras.data.synthetic_strokes.SyntheticStrokes "
    "(examples/iam_ondb.py --dataset=embedded)."
)


def parse_line_strokes(data: bytes, file_name: str = "lineStrokes file"):
    """The strokes of one ``lineStrokes`` XML file.

    Args:
      data: The file content.
      file_name: Named in error messages.

    Returns:
      A list of `(n, 2)` float64 arrays of `(x, -y)` points, one per
      ``<Stroke>`` (empty strokes dropped).

    Raises:
      sources.DatasetVerificationError: not XML, or no ``StrokeSet``.

    Examples:

        >>> xml = (b'<WhiteboardCaptureSession><StrokeSet>'
        ...        b'<Stroke colour="black" start_time="0" end_time="1">'
        ...        b'<Point x="10" y="20" time="0"/><Point x="12" y="21" time="1"/>'
        ...        b'</Stroke></StrokeSet></WhiteboardCaptureSession>')
        >>> parse_line_strokes(xml)[0].tolist()
        [[10.0, -20.0], [12.0, -21.0]]
    """
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError as err:
        raise sources.DatasetVerificationError(
            f"iam_ondb: {file_name} is not an XML file ({err})."
        ) from err
    stroke_set = root if root.tag == "StrokeSet" else root.find(".//StrokeSet")
    if stroke_set is None:
        raise sources.DatasetVerificationError(
            f"iam_ondb: {file_name} has no <StrokeSet>; not a lineStrokes file."
        )
    strokes = []
    for stroke in stroke_set.iter("Stroke"):
        try:
            points = [(float(p.get("x")), -float(p.get("y")))
                      for p in stroke.iter("Point")]
        except (TypeError, ValueError) as err:
            raise sources.DatasetVerificationError(
                f"iam_ondb: {file_name}: a <Point> without numeric x and y ({err})."
            ) from err
        if points:
            strokes.append(np.array(points, dtype=np.float64))
    return strokes


def split_sizes(count):
    """`{split: size}` of `count` filtered lines (the paper's sizes at 11,628)."""
    if count == PAPER_TOTAL:
        return dict(PAPER_SPLIT_SIZES)
    small = count >= 3
    valid = max(int(small), round(count * PAPER_SPLIT_SIZES["validation"] / PAPER_TOTAL))
    test = max(int(small), round(count * PAPER_SPLIT_SIZES["test"] / PAPER_TOTAL))
    return {"train": count - valid - test, "validation": valid, "test": test}


@dataclasses.dataclass(eq=False)
class IamOnDbConfig(tfds.core.BuilderConfig):
    """Options of the `iam_ondb` builder.

    Attributes:
      min_length: Lines with fewer points are dropped (300 in Chung et al.).
      split_seed: Seed of the random split.

    Examples:

        >>> from hmkeras.data import IamOnDbConfig
        >>> config = IamOnDbConfig(name="min_length_100", min_length=100)
        >>> config.min_length, config.split_seed
        (100, 0)
    """

    min_length: int = 300
    split_seed: int = 0


def _xml_files(directory):
    """`{relative path: bytes}` of the lineStrokes XML files under `directory`
    (extracted files first, else the archive), or None."""
    found = {}
    for root, _, names in os.walk(directory):
        for name in names:
            if name.lower().endswith(".xml"):
                path = os.path.join(root, name)
                with open(path, "rb") as f:
                    found[os.path.relpath(path, directory)] = f.read()
    if found:
        return found
    archive = os.path.join(directory, ARCHIVE)
    if os.path.isfile(archive):
        with tarfile.open(archive, "r:*") as tar:
            for member in tar.getmembers():
                if member.isfile() and member.name.lower().endswith(".xml"):
                    found[member.name] = tar.extractfile(member).read()
    return found or None


class IamOnDb(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """IAM-OnDB lines as normalized `(dx, dy, pen_up)` sequences.

    Examples:

        >>> import pathlib, tempfile
        >>> import tensorflow_datasets as tfds
        >>> from hmkeras.data import IamOnDb, IamOnDbConfig, read_stroke_split
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> for line in range(3):
        ...     points = "".join(f'<Point x="{10 * i + line}" y="{i % 3}" time="{i}"/>'
        ...                      for i in range(6))
        ...     _ = (folder / f"line{line}.xml").write_text(
        ...         f"<WhiteboardCaptureSession><StrokeSet><Stroke>{points}</Stroke>"
        ...         "</StrokeSet></WhiteboardCaptureSession>")
        >>> config = IamOnDbConfig(name="tiny", min_length=5)
        >>> builder = IamOnDb(config=config, data_dir=str(folder / "tfds"))
        >>> builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        ...     manual_dir=str(folder)))
        Downloading and preparing dataset ...
        Dataset iam_ondb downloaded and prepared to ...
        >>> [len(read_stroke_split(builder, split))
        ...  for split in ("train", "validation", "test")]
        [1, 1, 1]
        >>> read_stroke_split(builder, "test")[0].shape  # (dx, dy, pen_up) per point
        (6, 3)
    """

    name = "iam_ondb"
    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "Initial release."}
    BUILDER_CONFIGS = [IamOnDbConfig(name="default")]
    MANUAL_DOWNLOAD_INSTRUCTIONS = MANUAL_DOWNLOAD_INSTRUCTIONS

    def _info(self) -> tfds.core.DatasetInfo:
        return self.dataset_info_from_configs(
            description=(
                "IAM On-Line Handwriting Database text lines as pen offsets "
                "(dx, dy, pen_up), normalized with the training set's mean "
                "and standard deviation (Chung et al. 2017, Section 4.2)."
            ),
            features=tfds.features.FeaturesDict({
                "id": tfds.features.Text(),
                "strokes": tfds.features.Tensor(shape=(None, 3), dtype=np.float32),
            }),
            homepage=REGISTRATION_URL,
            citation="""@inproceedings{liwicki2005iamondb,
  author = {Marcus Liwicki and Horst Bunke},
  title = {{IAM-OnDB} - an On-Line {E}nglish Sentence Database Acquired
           from Handwritten Text on a Whiteboard},
  booktitle = {ICDAR}, pages = {956--961}, year = {2005}
}""",
            metadata=tfds.core.MetadataDict(),
        )

    def _search_dirs(self, dl_manager):
        manual = getattr(dl_manager, "_manual_dir", None)
        dirs = ([manual] if manual else []) + [self.data_dir_root]
        return [os.path.abspath(os.path.expanduser(os.fspath(d))) for d in dirs]

    def _read_lines(self, dl_manager):
        searched = self._search_dirs(dl_manager)
        for directory in searched:
            if os.path.isdir(directory):
                files = _xml_files(directory)
                if files:
                    return files, directory
        raise sources.DatasetFilesNotFoundError(
            "iam_ondb: no lineStrokes .xml files (nor " + ARCHIVE + ") in "
            + ", ".join(searched) + ". " + MANUAL_DOWNLOAD_INSTRUCTIONS
        )

    def _split_generators(self, dl_manager):
        config = self.builder_config
        files, origin = self._read_lines(dl_manager)
        lines = {}
        for path in sorted(files):
            strokes = parse_line_strokes(files[path], path)
            if strokes:
                sequence = strokes_to_offsets(strokes)
                if len(sequence) >= config.min_length:
                    lines[path] = sequence
        if not lines:
            raise sources.DatasetVerificationError(
                f"iam_ondb: none of the {len(files)} lines in {origin} has "
                f"{config.min_length} points or more."
            )
        names = sorted(lines)
        order = np.random.default_rng(config.split_seed).permutation(len(names))
        sizes = split_sizes(len(names))
        cut = {"validation": order[: sizes["validation"]],
               "test": order[sizes["validation"] : sizes["validation"] + sizes["test"]],
               "train": order[sizes["validation"] + sizes["test"] :]}
        split_names = {split: sorted(names[i] for i in index) for split, index in cut.items()}
        mean, std = offset_statistics([lines[n] for n in split_names["train"]])
        self.info.metadata.update({
            "offset_mean": mean.tolist(),
            "offset_std": std.tolist(),
            "num_lines": {split: len(v) for split, v in split_names.items()},
            "num_files": len(files),
            "min_length": config.min_length,
            "source": origin,
        })
        return {
            split: self._generate_examples(
                {n: normalize_offsets(lines[n], mean, std) for n in chosen}
            )
            for split, chosen in split_names.items()
        }

    def _generate_examples(self, lines):
        for name, sequence in lines.items():
            yield name, {"id": name, "strokes": sequence}


def read_stroke_split(builder, split):
    """The prepared `split` of `builder`: a list of `(T, 3)` float32 arrays,
    ordered by line id.

    Examples:

        >>> import pathlib, tempfile
        >>> import tensorflow_datasets as tfds
        >>> from hmkeras.data import IamOnDb, IamOnDbConfig, read_stroke_split
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> for line in range(3):
        ...     points = "".join(f'<Point x="{i * i + line}" y="{i}" time="{i}"/>'
        ...                      for i in range(5))
        ...     _ = (folder / f"line{line}.xml").write_text(
        ...         f"<WhiteboardCaptureSession><StrokeSet><Stroke>{points}</Stroke>"
        ...         "</StrokeSet></WhiteboardCaptureSession>")
        >>> builder = IamOnDb(config=IamOnDbConfig(name="tiny", min_length=5),
        ...                   data_dir=str(folder / "tfds"))
        >>> builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        ...     manual_dir=str(folder)))
        Downloading and preparing dataset ...
        Dataset iam_ondb downloaded and prepared to ...
        >>> lines = read_stroke_split(builder, "train")
        >>> len(lines), lines[0].dtype.name, lines[0].shape
        (1, 'float32', (5, 3))
    """
    ds = builder.as_dataset(split=split, shuffle_files=False)
    lines = {example["id"]: example["strokes"] for example in ds.as_numpy_iterator()}
    return [lines[key] for key in sorted(lines)]



def load_iam_ondb(manual_dir, data_dir=None, min_length=300):
    """IAM-OnDB from the files in `manual_dir`, prepared on first use.

    Args:
      manual_dir: The folder with ``lineStrokes-all.tar.gz`` or the
        extracted ``lineStrokes/``.
      data_dir: The TFDS data directory (None: TFDS' default).
      min_length: Lines with fewer points are dropped; 300 (Chung et al.)
        is the default config, any other value a config of its own
        (``min_length_<n>``), prepared in its own directory.

    Returns:
      `(splits, (mean, std), info)`: `{split: [normalized (T, 3) float32]}`
      ordered by line id, the training set's offset statistics and
      `{"source", "num_lines"}` of the builder's metadata.

    Raises:
      hmkeras.data.DatasetFilesNotFoundError: no lineStrokes files in
        `manual_dir`; the message says where to register and put them.
    """
    config = ("default" if min_length == 300 else IamOnDbConfig(
        name=f"min_length_{min_length}", min_length=min_length))
    builder = IamOnDb(config=config, data_dir=data_dir)
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        manual_dir=os.path.expanduser(os.fspath(manual_dir))))
    splits = {name: read_stroke_split(builder, name)
              for name in ("train", "validation", "test")}
    meta = builder.info.metadata
    stats = (np.asarray(meta["offset_mean"]), np.asarray(meta["offset_std"]))
    return splits, stats, {"source": meta.get("source"), "num_lines": meta.get("num_lines")}
