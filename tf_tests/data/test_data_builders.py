"""Tests for the TFDS builders of hmkeras.data, on tiny files in the real
formats written by the tests (no network: downloads are forbidden)."""

import hashlib
import io
import tarfile
import time
import zipfile

import numpy as np
import pytest
import tensorflow_datasets as tfds

from hmkeras import data
from hmkeras.data import sources


# Every test of this file runs offline (conftest.py's `no_network`).
pytestmark = pytest.mark.usefixtures("no_network")


def _prepare(builder_cls, tmp_path, manual, **kwargs):
    builder = builder_cls(data_dir=str(tmp_path / "data"), allow_download=False,
                          **kwargs)
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        manual_dir=str(manual), try_download_gcs=False))
    return builder


def _write_tar(path, members):
    with tarfile.open(path, "w:gz") as tar:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))


def _write_zip(path, members):
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, content in members.items():
            z.writestr(name, content)


# ------------------------------------------------------------------ PTB char

_PTB = {
    "train": b" a e r _ b a n k n o t e _ b e r l i t z\n t h e _ < u n k > _ N\n"
             b" i t _ w a s _ $ _ N _ m i l l i o n _ .\n",
    "validation": b" c o n s u m e r s _ m a y\n",
    "test": b" n o _ i t _ w a s n ' t\n a\n",
}
_PTB_FILES = {"train": "ptb.char.train.txt", "validation": "ptb.char.valid.txt",
              "test": "ptb.char.test.txt"}


def _expected_ptb(raw):
    lines = raw.decode().split("\n")[:-1]
    return "".join(line.replace(" ", "") + "\n" for line in lines)


def test_ptb_char_from_tgz_in_many_chunks(tmp_path, monkeypatch):
    manual = tmp_path / "manual"
    manual.mkdir()
    members = {f"./simple-examples/data/{f}": _PTB[s] for s, f in _PTB_FILES.items()}
    members["./simple-examples/data/ptb.train.txt"] = b" aer banknote\n"
    _write_tar(manual / "simple-examples.tgz", members)
    monkeypatch.setattr(data.PtbChar, "CHUNK_SIZE", 7)  # many chunks, reordered
    builder = _prepare(data.PtbChar, tmp_path, manual)
    for split in ("train", "validation", "test"):
        stream = data.read_split(builder, split).decode()
        assert stream == _expected_ptb(_PTB[split])
        assert builder.info.splits[split].num_examples == -(-len(stream) // 7)
    assert data.read_split(builder, "train").startswith(b"aer_banknote_berlitz\nthe_<unk>_N\n")
    assert builder.info.metadata["num_sentences"] == {
        "train": 3, "validation": 1, "test": 2}
    assert builder.info.metadata["num_symbols"]["test"] == len(_expected_ptb(_PTB["test"]))
    # Read again from disk by a fresh builder (metadata restored).
    again = data.PtbChar(data_dir=str(tmp_path / "data"))
    assert data.read_split(again, "validation") == b"consumers_may\n"


def test_ptb_char_extracted_files_and_load_char_corpus(tmp_path):
    manual = tmp_path / "manual"
    (manual / "simple-examples" / "data").mkdir(parents=True)
    for split, name in _PTB_FILES.items():
        (manual / "simple-examples" / "data" / name).write_bytes(_PTB[split])
    text = data.load_char_corpus("ptb_char", "test", data_dir=tmp_path / "data",
                                 manual_dir=manual, allow_download=False)
    assert isinstance(text, str) and text == "no_it_wasn't\na\n"


def test_ptb_char_rejects_word_level_file(tmp_path):
    manual = tmp_path / "manual"
    manual.mkdir()
    for split, name in _PTB_FILES.items():
        (manual / name).write_bytes(_PTB[split])
    (manual / "ptb.char.valid.txt").write_bytes(b" consumers may\n")
    with pytest.raises(data.DatasetVerificationError, match="line 1.*single char"):
        _prepare(data.PtbChar, tmp_path, manual)


# --------------------------------------------------------------------- text8

def _text8_bytes(n, seed=0):
    rng = np.random.default_rng(seed)
    return bytes(rng.choice(list(b" abcdefghijklmnopqrstuvwxyz"), n).astype(np.uint8))


def _tiny_text8_config(raw, name="tiny", checksum="auto"):
    if checksum == "auto":
        checksum = hashlib.sha256(raw).hexdigest()
    return data.FixedSplitConfig(name=name, total_size=len(raw), valid_size=60,
                                 test_size=40, checksum=checksum)


@pytest.mark.parametrize("as_zip", [True, False])
def test_text8_splits_round_trip(tmp_path, as_zip):
    raw = _text8_bytes(1000)
    manual = tmp_path / "manual"
    manual.mkdir()
    if as_zip:
        _write_zip(manual / "text8.zip", {"text8": raw})
    else:
        (manual / "text8").write_bytes(raw)
    builder = _prepare(data.Text8, tmp_path, manual, config=_tiny_text8_config(raw))
    assert data.read_split(builder, "train") == raw[:900]
    assert data.read_split(builder, "validation") == raw[900:960]
    assert data.read_split(builder, "test") == raw[960:]


def test_text8_wrong_checksum_raises(tmp_path):
    raw = _text8_bytes(1000)
    manual = tmp_path / "manual"
    manual.mkdir()
    (manual / "text8").write_bytes(raw)
    config = _tiny_text8_config(raw, checksum="0" * 64)
    with pytest.raises(data.DatasetVerificationError, match="SHA256.*published checksum"):
        _prepare(data.Text8, tmp_path, manual, config=config)


def test_text8_real_name_wrong_size_raises(tmp_path):
    manual = tmp_path / "manual"
    manual.mkdir()
    (manual / "text8").write_bytes(_text8_bytes(1000))
    with pytest.raises(data.DatasetVerificationError, match="100,000,000"):
        _prepare(data.Text8, tmp_path, manual)  # default config: the real file
    (manual / "text8").unlink()
    _write_zip(manual / "text8.zip", {"text8": _text8_bytes(1000)})
    with pytest.raises(data.DatasetVerificationError, match="31,344,016"):
        _prepare(data.Text8, tmp_path, manual)


def test_text8_rejects_other_symbols(tmp_path):
    raw = _text8_bytes(999) + b"A"
    manual = tmp_path / "manual"
    manual.mkdir()
    (manual / "text8").write_bytes(raw)
    with pytest.raises(data.DatasetVerificationError, match="a-z and space"):
        _prepare(data.Text8, tmp_path, manual, config=_tiny_text8_config(raw))


def test_text8_default_config_checks_the_published_facts():
    config = data.Text8.BUILDER_CONFIGS[0]
    assert (config.total_size, config.valid_size, config.test_size) == (
        100_000_000, 5_000_000, 5_000_000)
    assert config.checksum == (
        "6e890197040d37d85beb962ae1f041ff1d9a9ca8d20c7d99c85027eebf51dca7")
    assert config.archive_size == 31_344_016
    with pytest.raises(ValueError, match="total_size"):
        data.FixedSplitConfig(name="x", total_size=10, valid_size=5, test_size=5)


# -------------------------------------------------------------------- enwik8

def test_enwik8_bytes_round_trip_and_checks(tmp_path):
    raw = bytes(np.random.default_rng(1).integers(0, 256, 3000).astype(np.uint8))
    distinct = len(set(raw))
    manual = tmp_path / "manual"
    manual.mkdir()
    _write_zip(manual / "enwik8.zip", {"enwik8": raw})
    config = data.FixedSplitConfig(
        name="tiny", total_size=3000, valid_size=200, test_size=100,
        checksum=hashlib.sha1(raw).hexdigest(), num_distinct_bytes=distinct)
    builder = _prepare(data.Enwik8, tmp_path, manual, config=config)
    assert data.read_split(builder, "train") == raw[:2700]
    assert data.read_split(builder, "validation") == raw[2700:2900]
    assert data.read_split(builder, "test") == raw[2900:]
    assert builder.info.metadata["num_distinct_bytes"] == distinct
    bad = data.FixedSplitConfig(
        name="tiny2", total_size=3000, valid_size=200, test_size=100,
        checksum=hashlib.sha1(raw).hexdigest(), num_distinct_bytes=205)
    with pytest.raises(data.DatasetVerificationError, match="205"):
        _prepare(data.Enwik8, tmp_path, manual, config=bad)
    with pytest.raises(data.DatasetVerificationError, match="100,000,000"):
        _prepare(data.Enwik8, tmp_path, manual)
    full = data.Enwik8.BUILDER_CONFIGS[0]
    assert full.checksum == "57b8363b814821dc9d47aa4d41f58733519076b2"
    assert full.num_distinct_bytes == 205


# ------------------------------------------------------------- WikiText-2 raw

_WIKI = {
    "train": " \n = Valkyria Chronicles III = \n \n Senjō no Valkyria 3 : it is .\n",
    "validation": " \n = Homarus gammarus = \n",
    "test": " \n = Robert Boulter = \n \n Robert Boulter is an English actor .\n",
}


def test_wikitext2_raw_bytes_and_word_counts(tmp_path):
    manual = tmp_path / "manual"
    manual.mkdir()
    files = {s: t.encode("utf-8") for s, t in _WIKI.items()}
    names = {"train": "wiki.train.raw", "validation": "wiki.valid.raw",
             "test": "wiki.test.raw"}
    _write_zip(manual / "wikitext-2-raw-v1.zip",
               {f"wikitext-2-raw/{names[s]}": b for s, b in files.items()})
    config = data.Wikitext2RawConfig(name="tiny", test_bytes=len(files["test"]),
                                     test_words=None)
    builder = _prepare(data.Wikitext2Raw, tmp_path, manual, config=config)
    for split in names:
        assert data.read_split(builder, split) == files[split]
    # Words: whitespace tokens plus one end-of-line token per line.
    assert builder.info.metadata["num_words"] == {
        "train": (0 + 1) + (5 + 1) + (0 + 1) + (8 + 1),
        "validation": (0 + 1) + (4 + 1),
        "test": (0 + 1) + (4 + 1) + (0 + 1) + (7 + 1)}
    with pytest.raises(data.DatasetVerificationError, match="1,256,449"):
        _prepare(data.Wikitext2Raw, tmp_path, manual)  # published test size


# ------------------------------------------------------------ missing files

@pytest.mark.parametrize("name, files", [
    ("ptb_char", ["simple-examples.tgz", "ptb.char.train.txt"]),
    ("text8", ["text8.zip", "text8"]),
    ("enwik8", ["enwik8.zip", "enwik8"]),
    ("wikitext2_raw", ["wikitext-2-raw-v1.zip", "wiki.test.raw"]),
])
@pytest.mark.parametrize("allow_download", [False, True])
def test_missing_files_fail_fast_with_instructions(tmp_path, name, files,
                                                   allow_download):
    manual = tmp_path / "manual"
    start = time.monotonic()
    with pytest.raises(data.DatasetFilesNotFoundError) as info:
        data.load_char_corpus(name, "train", data_dir=tmp_path / "data",
                              manual_dir=manual, allow_download=allow_download)
    assert time.monotonic() - start < 10
    message = str(info.value)
    for f in files:
        assert f in message
    assert str(manual) in message and "synthetic" in message
    assert ("HMKERAS_OFFLINE" in message) == allow_download
    # Nothing half-prepared is left behind.
    assert not list((tmp_path / "data").glob("**/dataset_info.json"))
    assert not list((tmp_path / "data").glob("**/incomplete*"))


def test_unreachable_server_fails_fast(tmp_path, monkeypatch):
    monkeypatch.delenv(sources.OFFLINE_ENV_VAR)
    monkeypatch.setattr(sources, "network_reachable", lambda url, timeout: False)
    with pytest.raises(data.DatasetFilesNotFoundError, match="cannot be reached"):
        data.load_char_corpus("text8", "train", data_dir=tmp_path / "data",
                              manual_dir=tmp_path / "manual")


def test_network_probe_has_a_hard_timeout(monkeypatch):
    import socket
    import threading

    monkeypatch.undo()  # the real probe, with a connect that hangs
    release = threading.Event()

    def _hang(*args, **kwargs):
        # Hangs like a connect on a dead network until the test is done,
        # then fails as a real connect would.
        release.wait(30)
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", _hang)
    start = time.monotonic()
    try:
        assert sources.network_reachable(
            "http://example.invalid/x.zip", timeout=0.5) is False
        assert time.monotonic() - start < 2
    finally:
        release.set()
    # The probe thread was still hanging; released, it ends: none is left.
    for thread in threading.enumerate():
        if thread.name == sources.PROBE_THREAD_NAME:
            thread.join(5)
            assert not thread.is_alive()


def test_network_probe_unencodable_host_is_unreachable(monkeypatch):
    monkeypatch.undo()  # the real probe; it fails before any network access:
    # a DNS label over 63 characters makes the IDNA codec raise UnicodeError.
    url = "http://" + "a" * 64 + ".invalid/x.zip"
    assert sources.network_reachable(url, timeout=0.5) is False


def test_load_char_corpus_validates_arguments():
    with pytest.raises(ValueError, match=r"\['brent_phonemes', 'brent_text', 'enwik8', "
                                         r"'ptb_char', 'synthetic', 'text8', 'wikitext2_raw'\]"):
        data.load_char_corpus("ptb", "train")
    with pytest.raises(ValueError, match="split"):
        data.load_char_corpus("synthetic", "valid")
    text = data.load_char_corpus("synthetic", "validation", seed=2)
    assert text == data.SyntheticHierarchicalCorpus(seed=2).text("validation")


@pytest.mark.parametrize("builder_cls", [data.PtbChar, data.Text8, data.Enwik8,
                                         data.Wikitext2Raw])
def test_manual_download_instructions_name_the_raw_files(builder_cls):
    raw = builder_cls.RAW_FILES
    text = builder_cls.MANUAL_DOWNLOAD_INSTRUCTIONS
    assert raw.archive in text and raw.url in text
    assert raw.url.endswith("/" + raw.archive)
    for key, member in raw.members.items():
        assert raw.extracted[key][0] == member and member in text
