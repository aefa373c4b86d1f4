"""IAM-OnDB builder on small XML files in the real format, the stroke
conversion, and the embedded synthetic stroke set."""

import os
import tarfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import pytest
import tensorflow_datasets as tfds

from hmkeras.data import iam_ondb
from hmkeras.data import stroke_offsets
from hmkeras.data.sources import DatasetFilesNotFoundError
from hmkeras.data.sources import DatasetVerificationError
from hmkeras.data.synthetic_strokes import SyntheticStrokes


def _xml(strokes):
    """A lineStrokes file as the database writes it."""
    parts = ['<?xml version="1.0" encoding="ISO-8859-1"?>\n<WhiteboardCaptureSession>',
             '<WhiteboardDescription><SensorLocation corner="top_left"/>'
             '</WhiteboardDescription>', "<StrokeSet>"]
    t = 0.0
    for stroke in strokes:
        parts.append(f'<Stroke colour="black" start_time="{t:.2f}" end_time="{t + 1:.2f}">')
        for x, y in stroke:
            parts.append(f'<Point x="{int(x)}" y="{int(y)}" time="{t:.2f}"/>')
            t += 0.01
        parts.append("</Stroke>")
    parts.append("</StrokeSet></WhiteboardCaptureSession>")
    return "\n".join(parts).encode("latin-1")


def _line(rng, points):
    """Random strokes with `points` points in total (integer coordinates)."""
    sizes, left = [], points
    while left:
        sizes.append(min(left, int(rng.integers(3, 12))))
        left -= sizes[-1]
    start = rng.integers(500, 2000, 2)
    strokes = []
    for size in sizes:
        walk = start + np.cumsum(rng.integers(-9, 10, (size, 2)), axis=0)
        strokes.append(walk)
        start = walk[-1] + rng.integers(5, 40, 2)
    return strokes


def _write_tree(root, lengths, seed=0):
    """lineStrokes/a01/a01-000/a01-000u-NN.xml files; returns {name: strokes}."""
    rng = np.random.default_rng(seed)
    lines = {}
    for index, length in enumerate(lengths):
        folder = os.path.join(root, "lineStrokes", f"a{index % 3:02d}", f"a{index % 3:02d}-000")
        os.makedirs(folder, exist_ok=True)
        name = os.path.join(folder, f"a{index % 3:02d}-000u-{index:02d}.xml")
        lines[name] = _line(rng, length)
        with open(name, "wb") as f:
            f.write(_xml(lines[name]))
    return lines


def _prepare(tmp_path, manual, min_length, name):
    config = (name if name == "default"
              else iam_ondb.IamOnDbConfig(name=name, min_length=min_length))
    builder = iam_ondb.IamOnDb(config=config, data_dir=str(tmp_path / "tfds"))
    builder.download_and_prepare(
        download_config=tfds.download.DownloadConfig(manual_dir=str(manual)))
    return builder


def test_parse_reads_points_and_negates_y():
    strokes = [np.array([[10, 20], [13, 24]]), np.array([[30, 5]])]
    parsed = iam_ondb.parse_line_strokes(_xml(strokes))
    assert [p.tolist() for p in parsed] == [[[10, -20], [13, -24]], [[30, -5]]]
    seq = stroke_offsets.strokes_to_offsets(parsed)
    np.testing.assert_array_equal(seq, [[0, 0, 0], [3, -4, 1], [17, 19, 1]])
    with pytest.raises(DatasetVerificationError, match="StrokeSet"):
        iam_ondb.parse_line_strokes(b"<Other/>")
    with pytest.raises(DatasetVerificationError, match="XML"):
        iam_ondb.parse_line_strokes(b"not xml")


def test_builder_filters_normalizes_and_splits(tmp_path):
    manual = tmp_path / "manual"
    lengths = [40, 12, 25, 30, 8, 33, 27, 45, 21, 36, 50, 19, 26, 31]
    lines = _write_tree(str(manual), lengths)
    builder = _prepare(tmp_path, manual, min_length=20, name="min20")
    kept = {name: stroke_offsets.strokes_to_offsets(
        [np.column_stack([s[:, 0], -s[:, 1]]) for s in strokes])
        for name, strokes in lines.items()}
    kept = {os.path.relpath(n, manual): s for n, s in kept.items() if len(s) >= 20}
    splits = {split: iam_ondb.read_stroke_split(builder, split)
              for split in ("train", "validation", "test")}
    sizes = {split: len(v) for split, v in splits.items()}
    assert sizes == iam_ondb.split_sizes(len(kept)) == {"train": 9, "validation": 1, "test": 1}
    meta = builder.info.metadata
    assert meta["num_lines"] == sizes and meta["min_length"] == 20
    # The statistics are those of the raw training lines, and the stored
    # lines are those lines normalized with them.
    ds = builder.as_dataset(split="train")
    train_ids = sorted(ex["id"].decode() for ex in ds.as_numpy_iterator())
    mean, std = stroke_offsets.offset_statistics([kept[i] for i in train_ids])
    np.testing.assert_allclose(meta["offset_mean"], mean, rtol=1e-6)
    np.testing.assert_allclose(meta["offset_std"], std, rtol=1e-6)
    for stored, name in zip(splits["train"], train_ids):
        np.testing.assert_allclose(stored, stroke_offsets.normalize_offsets(
            kept[name], mean, std), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(stroke_offsets.denormalize_offsets(stored, mean, std),
                                   kept[name], atol=1e-3)
    every = np.concatenate(splits["train"])
    np.testing.assert_allclose(every[:, :2].mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(every[:, :2].std(0), 1, atol=1e-4)
    assert all(len(s) >= 20 for part in splits.values() for s in part)
    # Reproducible: the same files give the same split in a new data_dir.
    again = _prepare(tmp_path / "again", manual, min_length=20, name="min20")
    for split in ("validation", "test"):
        np.testing.assert_array_equal(iam_ondb.read_stroke_split(again, split)[0],
                                      splits[split][0])


def test_load_iam_ondb_reads_every_split_of_its_config(tmp_path):
    manual = tmp_path / "manual"
    _write_tree(str(manual), [40, 12, 25, 30, 8, 33, 27, 45, 21, 36, 50, 19, 26, 31])
    splits, (mean, std), info = iam_ondb.load_iam_ondb(
        str(manual), data_dir=str(tmp_path / "tfds"), min_length=20)
    builder = _prepare(tmp_path / "direct", manual, min_length=20, name="min20")
    for split in ("train", "validation", "test"):
        expected = iam_ondb.read_stroke_split(builder, split)
        assert len(splits[split]) == len(expected) == info["num_lines"][split]
        for found, line in zip(splits[split], expected):
            np.testing.assert_array_equal(found, line)
    np.testing.assert_allclose(mean, builder.info.metadata["offset_mean"])
    np.testing.assert_allclose(std, builder.info.metadata["offset_std"])
    assert os.path.isdir(tmp_path / "tfds" / "iam_ondb" / "min_length_20")
    with pytest.raises(DatasetFilesNotFoundError, match="register"):
        iam_ondb.load_iam_ondb(str(tmp_path / "tfds"), data_dir=str(tmp_path / "other"))


def test_default_threshold_is_300_and_archive_is_read(tmp_path):
    assert iam_ondb.IamOnDb.BUILDER_CONFIGS[0].min_length == 300
    tree = tmp_path / "tree"
    _write_tree(str(tree), [310, 299, 305, 420, 300], seed=1)
    manual = tmp_path / "manual"
    manual.mkdir()
    with tarfile.open(manual / iam_ondb.ARCHIVE, "w:gz") as tar:
        tar.add(tree / "lineStrokes", arcname="lineStrokes")
    builder = _prepare(tmp_path, manual, min_length=300, name="default")
    lines = [s for split in ("train", "validation", "test")
             for s in iam_ondb.read_stroke_split(builder, split)]
    assert sorted(len(s) for s in lines) == [300, 305, 310, 420]  # 299 dropped


def test_paper_split_sizes():
    assert iam_ondb.split_sizes(11_628) == {"train": 10_465, "validation": 581, "test": 582}
    sizes = iam_ondb.split_sizes(1_000)
    assert sizes == {"train": 900, "validation": 50, "test": 50}


def test_missing_files_error_names_registration_and_folder(tmp_path):
    manual = tmp_path / "empty"
    manual.mkdir()
    with pytest.raises(DatasetFilesNotFoundError) as error:
        _prepare(tmp_path, manual, min_length=300, name="default")
    message = str(error.value)
    assert iam_ondb.REGISTRATION_URL in message
    assert "lineStrokes-all.tar.gz" in message and str(manual) in message


def test_synthetic_strokes_are_reproducible_with_known_boundaries():
    a = SyntheticStrokes(seed=3, num_train=12, num_valid=3, num_test=3)
    b = SyntheticStrokes(seed=3, num_train=12, num_valid=3, num_test=3)
    for x, y in zip(a.sequences("test"), b.sequences("test")):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a.sequences("train")[0], a.sequences("test")[0])
    for seq, strokes, glyphs in zip(a.sequences("train"), a.stroke_ends("train"),
                                    a.glyph_ends("train")):
        assert strokes[-1] == 1 and glyphs[-1] == 1
        # Every glyph ends with a stroke; strokes are at least 2 points.
        assert np.all(strokes[glyphs == 1] == 1)
        assert np.all(np.diff(np.flatnonzero(strokes)) >= 2)
        # The offsets add up to the drawn points: no jump within a stroke
        # is larger than a glyph.
        within = np.abs(seq[1:, :2][strokes[:-1] == 0]).max()
        assert within < 0.5
    normalized = np.concatenate(a.normalized("train"))
    np.testing.assert_allclose(normalized[:, :2].mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(normalized[:, :2].std(0), 1, atol=1e-4)
