"""Tests for hmkeras.data.text_file: your own text as train / valid / test."""

import pytest

from hmkeras import data
from hmkeras.data.text_file import read_text_file
from hmkeras.data.text_file import read_text_splits
from hmkeras.data.text_file import split_text

TEXT = "Ünïcode words, line one.\nAnd line two\twith a tab.\n" * 4  # 200 chars


def _write(tmp_path, name, content):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return str(path)


def test_one_file_is_cut_train_valid_test_in_order(tmp_path):
    path = _write(tmp_path, "book.txt", TEXT)
    train, valid, test = read_text_splits(path)
    assert (len(train), len(valid), len(test)) == (180, 10, 10)
    assert train + valid + test == TEXT
    train, valid, test = read_text_splits(path, valid_fraction=0.25, test_fraction=0.1)
    assert (len(train), len(valid), len(test)) == (130, 50, 20)
    assert train + valid + test == TEXT
    assert data.read_text_splits is read_text_splits


def test_separate_files(tmp_path):
    path = _write(tmp_path, "train.txt", TEXT)
    valid_path = _write(tmp_path, "valid.txt", "valid text\n")
    test_path = _write(tmp_path, "test.txt", "test text\n")
    assert read_text_splits(path, valid_path, test_path) == (TEXT, "valid text\n", "test text\n")
    # Only a test file: the validation part is cut from the end of text_file.
    train, valid, test = read_text_splits(path, test_file=test_path, valid_fraction=0.1)
    assert (train, valid, test) == (TEXT[:180], TEXT[180:], "test text\n")
    train, valid, test = read_text_splits(path, valid_file=valid_path)
    assert (train, valid, test) == (TEXT[:190], "valid text\n", TEXT[190:])


def test_max_chars_uses_the_start_of_the_file(tmp_path):
    path = _write(tmp_path, "book.txt", TEXT)
    train, valid, test = read_text_splits(path, max_chars=100)
    assert (train, valid, test) == (TEXT[:90], TEXT[90:95], TEXT[95:100])
    assert "".join(read_text_splits(path, max_chars=10_000)) == TEXT
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="`max_chars` must be None or an int >= 1"):
            read_text_splits(path, max_chars=bad)


def test_utf8_byte_order_mark_dropped_line_ends_kept(tmp_path):
    path = _write(tmp_path, "bom.txt", b"\xef\xbb\xbfab\r\ncd")
    assert read_text_file(path) == "ab\r\ncd"


@pytest.mark.parametrize("content,error,match", [
    (None, FileNotFoundError, r"`text_file` not found: '.*missing.txt' does not exist"),
    ("dir", ValueError, r"`text_file` must be a file; '.*' is a directory"),
    (b"", ValueError, r"`text_file` '.*' is empty"),
    (b"ab\xffcd", ValueError, r"`text_file` must be UTF-8 text; .* b'\\xff' at byte offset 2"),
], ids=["missing", "directory", "empty", "not_utf8"])
def test_bad_files_name_the_argument(tmp_path, content, error, match):
    if content is None:
        path = str(tmp_path / "missing.txt")
    elif content == "dir":
        path = str(tmp_path)
    else:
        path = _write(tmp_path, "bad.txt", content)
    with pytest.raises(error, match=match):
        read_text_splits(path)
    good = _write(tmp_path, "good.txt", TEXT)
    with pytest.raises(error, match=match.replace("text_file", "test_file")):
        read_text_splits(good, test_file=path)


@pytest.mark.parametrize("valid_fraction,test_fraction,match", [
    (0.0, 0.05, r"`valid_fraction` must be in \(0, 1\). Received: 0.0"),
    (0.05, 1.0, r"`test_fraction` must be in \(0, 1\). Received: 1.0"),
    (-0.1, 0.05, r"`valid_fraction` must be in \(0, 1\)"),
    (0.6, 0.4, r"`valid_fraction` \+ `test_fraction` must be below 1"),
    (0.001, 0.05, r"The validation part of `text_file` is empty: `valid_fraction`=0.001 "
                  r"of 200 characters"),
], ids=["zero", "one", "negative", "sum", "empty_valid"])
def test_bad_fractions_name_the_argument(tmp_path, valid_fraction, test_fraction, match):
    path = _write(tmp_path, "book.txt", TEXT)
    with pytest.raises(ValueError, match=match):
        read_text_splits(path, valid_fraction=valid_fraction, test_fraction=test_fraction)


def test_split_text_empty_training_part():
    with pytest.raises(ValueError, match="The training part of `text_file` is empty"):
        split_text("abc", valid_fraction=0.5, test_fraction=0.49)
    assert split_text("abcd", valid_fraction=None, test_fraction=None) == ("abcd", None, None)
