"""Tests of the TFDS builder `brent` (hmkeras.data.brent), on small files in
the real format written by the tests (no network: downloads are forbidden),
and on the real files of ../shared/data/brent when they are there."""

import os
import subprocess
import sys
import time
import zipfile

import pytest
import tensorflow_datasets as tfds

from hmkeras import data
from hmkeras.data import brent
from hmkeras.data import sources

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REAL_DIR = os.path.join(os.path.dirname(ROOT), "shared", "data", "brent")

SPLITS = ("train", "validation", "test")
PHONO = {"train": "phono_tr.txt", "validation": "phono_va.txt",
         "test": "phono_te.txt"}
TEXT = {"train": "text_tr.txt", "validation": "text_va.txt",
        "test": "text_te.txt"}
# Lines in the real format (the first utterances of the real files).
LINES = {
    "train": ["yu want tu si D6 bUk", "lUk D*z 6 b7 wIT hIz h&t", "&nd 6 dOgi"],
    "validation": ["lEts put D6 bUk In D6 tub", "oke"],
    "test": ["yu lAk It"],
}


# Every test of this file runs offline (conftest.py's `no_network`).
pytestmark = pytest.mark.usefixtures("no_network")


def _config(name="tiny", files=PHONO, **kwargs):
    return data.BrentConfig(name=name, files=dict(files), **kwargs)


def _prepare(tmp_path, manual, config="phonemes"):
    builder = data.Brent(data_dir=str(tmp_path / "data"), allow_download=False,
                         config=config)
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        manual_dir=str(manual), try_download_gcs=False))
    return builder


def _write(directory, lines=LINES, files=PHONO):
    directory.mkdir(parents=True, exist_ok=True)
    for split, name in files.items():
        (directory / name).write_bytes(
            "".join(line + "\n" for line in lines[split]).encode("utf-8"))
    return directory


def _stream(lines):
    return "".join(line + "\n" for line in lines)


def test_round_trip_in_many_chunks_with_metadata(tmp_path, monkeypatch):
    manual = _write(tmp_path / "manual")
    monkeypatch.setattr(data.Brent, "CHUNK_SIZE", 5)  # many chunks, reordered
    builder = _prepare(tmp_path, manual, _config())
    for split in SPLITS:
        stream = data.read_split(builder, split).decode("utf-8")
        assert stream == _stream(LINES[split])  # spaces (the gold words) kept
        assert stream.split("\n")[:-1] == LINES[split]
        assert builder.info.splits[split].num_examples == -(-len(stream.encode()) // 5)
    assert builder.info.metadata["num_utterances"] == {
        "train": 3, "validation": 2, "test": 1}
    assert builder.info.metadata["num_words"] == {
        "train": 6 + 7 + 3, "validation": 7 + 1, "test": 3}
    symbols = set("".join(line for s in SPLITS for line in LINES[s])) - {" "}
    assert builder.info.metadata["alphabet"] == "".join(sorted(symbols))
    # Read again from disk by a fresh builder (metadata restored).
    again = data.Brent(data_dir=str(tmp_path / "data"), config=_config())
    assert data.read_split(again, "test") == b"yu lAk It\n"


def test_last_line_without_newline_and_non_ascii(tmp_path):
    lines = {"train": ["ça va", "the dog's"], "validation": ["a b"],
             "test": ["yes"]}
    manual = _write(tmp_path / "manual", lines, TEXT)
    (manual / "text_te.txt").write_bytes(b"yes")  # no final newline
    builder = _prepare(tmp_path, manual, _config(files=TEXT))
    assert data.read_split(builder, "train").decode("utf-8") == "ça va\nthe dog's\n"
    assert data.read_split(builder, "test") == b"yes\n"
    assert builder.info.metadata["alphabet"] == "'abdeghostvyç"


@pytest.mark.parametrize("folder", ["", "br", "Data/SNLM_sets/br",
                                    "SegmentalLMs-main/Data/SNLM_sets/br"])
def test_extracted_files_in_the_accepted_folders(tmp_path, folder):
    manual = tmp_path / "manual"
    _write(manual / folder if folder else manual)
    builder = _prepare(tmp_path, manual, _config())
    assert data.read_split(builder, "validation").decode() == _stream(LINES["validation"])


def test_archive_as_published(tmp_path):
    manual = tmp_path / "manual"
    manual.mkdir()
    with zipfile.ZipFile(manual / "SegmentalLMs-main.zip", "w") as z:
        for split in SPLITS:
            for files in (PHONO, TEXT):
                z.writestr(f"SegmentalLMs-main/Data/SNLM_sets/br/{files[split]}",
                           _stream(LINES[split]).upper() if files is TEXT
                           else _stream(LINES[split]))
        z.writestr("SegmentalLMs-main/README.md", "# SegmentalLMs\n")
    builder = _prepare(tmp_path, manual, _config())
    assert data.read_split(builder, "train").decode() == _stream(LINES["train"])
    text = _prepare(tmp_path, manual, _config(name="tiny_text", files=TEXT))
    assert data.read_split(text, "train").decode() == _stream(LINES["train"]).upper()
    assert builder.info.metadata["source"].endswith("SegmentalLMs-main.zip")


def test_archive_missing_a_member_is_a_verification_error(tmp_path):
    manual = tmp_path / "manual"
    manual.mkdir()
    with zipfile.ZipFile(manual / "SegmentalLMs-main.zip", "w") as z:
        for split in ("train", "validation"):
            z.writestr(f"SegmentalLMs-main/Data/SNLM_sets/br/{PHONO[split]}",
                       _stream(LINES[split]))
    with pytest.raises(data.DatasetVerificationError, match="phono_te.txt"):
        _prepare(tmp_path, manual, _config())


@pytest.mark.parametrize("split, content, match", [
    ("validation", b"lEts put\n\noke\n", r"phono_va.txt line 2: an empty line"),
    ("train", b"yu want\nyu  want\n", r"phono_tr.txt line 2: a double space"),
    ("train", b" yu want\n", r"phono_tr.txt line 1: a leading or trailing space"),
    ("test", b"yu lAk It \n", r"phono_te.txt line 1: a leading or trailing space"),
    ("test", b"yu\tlAk\n", r"phono_te.txt line 1: whitespace other than the space"),
    ("train", b"yu want\r\noke\r\n", r"phono_tr.txt line 1: .*CRLF"),
    ("train", b"yu \xff\n", r"phono_tr.txt is not UTF-8"),
    ("validation", b"", r"phono_va.txt is empty"),
    ("validation", b"\n", r"phono_va.txt line 1: an empty line"),
])
def test_format_errors_name_the_file_and_line(tmp_path, split, content, match):
    manual = _write(tmp_path / "manual")
    (manual / PHONO[split]).write_bytes(content)
    with pytest.raises(data.DatasetVerificationError, match=match):
        _prepare(tmp_path, manual, _config())
    assert not list((tmp_path / "data").glob("**/dataset_info.json"))


def test_missing_file_among_the_three(tmp_path):
    manual = _write(tmp_path / "manual")
    (manual / "phono_va.txt").unlink()
    with pytest.raises(data.DatasetFilesNotFoundError) as info:
        _prepare(tmp_path, manual, _config())
    message = str(info.value)
    for name in PHONO.values():
        assert name in message
    assert str(manual) in message


def test_published_config_checks_the_utterance_counts(tmp_path):
    manual = _write(tmp_path / "manual")  # the real names, tiny files
    with pytest.raises(data.DatasetVerificationError,
                       match=r"brent/phonemes: phono_tr.txt has 3 utterances "
                             r"\(lines\), expected 7,832"):
        _prepare(tmp_path, manual, "phonemes")
    _write(manual, files=TEXT)
    with pytest.raises(data.DatasetVerificationError,
                       match=r"text_tr.txt has 3 utterances.*expected 7,832"):
        data.load_char_corpus("brent_text", "train", data_dir=tmp_path / "data",
                              manual_dir=manual, allow_download=False)


def test_custom_config_checks_the_counts_it_is_given(tmp_path):
    manual = _write(tmp_path / "manual")
    config = _config(num_utterances={"train": 3, "validation": 3, "test": 1})
    with pytest.raises(data.DatasetVerificationError,
                       match=r"phono_va.txt has 2 utterances \(lines\), expected 3"):
        _prepare(tmp_path, manual, config)
    config = _config(name="tiny2", num_distinct_symbols=5)
    with pytest.raises(data.DatasetVerificationError,
                       match=r"phono_tr.txt, phono_va.txt, phono_te.txt hold \d+ "
                             r"distinct symbols besides the space, expected 5"):
        _prepare(tmp_path, manual, config)
    symbols = len(set("".join(line for s in SPLITS for line in LINES[s])) - {" "})
    config = _config(name="tiny3", num_distinct_symbols=symbols,
                     num_utterances={"train": 3, "validation": 2, "test": 1})
    assert data.read_split(_prepare(tmp_path, manual, config), "test") == b"yu lAk It\n"


def _published_shape(alphabet, counts):
    """Lines with the published utterance counts that use every symbol of
    `alphabet`."""
    lines, k = {}, 0
    for split in SPLITS:
        lines[split] = []
        for _ in range(counts[split]):
            word_a = alphabet[k % len(alphabet)] + alphabet[(k + 1) % len(alphabet)]
            lines[split].append(f"{word_a} {alphabet[(k + 2) % len(alphabet)]}")
            k += 1
    return lines


@pytest.mark.parametrize("name, files, counts, alphabet", [
    ("brent_phonemes", PHONO, {"train": 7832, "validation": 978, "test": 978},
     "#%&()*3679ADEGILMNOQRSTUWabcdefghiklmnoprstuvwyz~"),
    ("brent_text", TEXT, {"train": 7832, "validation": 979, "test": 979},
     "'@abcdefghijklmnopqrstuvwxyz"),
])
def test_load_char_corpus_on_files_of_the_published_shape(tmp_path, name, files,
                                                          counts, alphabet):
    lines = _published_shape(alphabet, counts)
    manual = _write(tmp_path / "manual", lines, files)
    for split in SPLITS:
        text = data.load_char_corpus(name, split, data_dir=tmp_path / "data",
                                     manual_dir=manual, allow_download=False)
        assert isinstance(text, str) and text == _stream(lines[split])
    builder = data.char_corpus_builder(name, data_dir=tmp_path / "data",
                                       manual_dir=manual, allow_download=False)
    assert builder.builder_config.name == name[len("brent_"):]
    assert builder.info.metadata["num_utterances"] == counts
    assert builder.info.metadata["alphabet"] == "".join(sorted(alphabet))
    # One symbol fewer than published: refused.
    (manual / files["test"]).write_text(_stream(
        [line.replace(alphabet[0], alphabet[1]) for line in lines["test"]]))
    for split in ("train", "validation"):
        (manual / files[split]).write_text(_stream(
            [line.replace(alphabet[0], alphabet[1]) for line in lines[split]]))
    with pytest.raises(data.DatasetVerificationError,
                       match=rf"{len(alphabet) - 1} distinct symbols besides the "
                             rf"space, expected {len(alphabet)}"):
        data.load_char_corpus(name, "train", data_dir=tmp_path / "data2",
                              manual_dir=manual, allow_download=False)


@pytest.mark.parametrize("name, files", [("brent_phonemes", PHONO),
                                         ("brent_text", TEXT)])
@pytest.mark.parametrize("make_dir", [False, True])
@pytest.mark.parametrize("allow_download", [False, True])
def test_missing_manual_dir_fails_fast_with_instructions(tmp_path, name, files,
                                                         make_dir, allow_download):
    manual = tmp_path / "empty"
    if make_dir:
        manual.mkdir()
    start = time.monotonic()
    with pytest.raises(data.DatasetFilesNotFoundError) as info:
        data.load_char_corpus(name, "train", data_dir=tmp_path / "data",
                              manual_dir=manual, allow_download=allow_download)
    assert time.monotonic() - start < 10
    message = str(info.value)
    for f in (*files.values(), "SegmentalLMs-main.zip", brent.BRENT_URL):
        assert f in message
    assert f"brent/{name[len('brent_'):]}" in message
    assert str(manual) in message and "manual_dir=DIR" in message
    assert ("HMKERAS_OFFLINE" in message) == allow_download
    other = TEXT if files is PHONO else PHONO
    assert not any(f in message for f in other.values())
    assert not list((tmp_path / "data").glob("**/dataset_info.json"))
    assert not list((tmp_path / "data").glob("**/incomplete*"))


def test_configs_and_their_validation(tmp_path):
    configs = {c.name: c for c in data.Brent.BUILDER_CONFIGS}
    assert sorted(configs) == ["phonemes", "text"]
    assert dict(configs["phonemes"].files) == PHONO
    assert dict(configs["text"].files) == TEXT
    assert dict(configs["phonemes"].num_utterances) == {
        "train": 7832, "validation": 978, "test": 978}
    assert dict(configs["text"].num_utterances) == {
        "train": 7832, "validation": 979, "test": 979}
    assert (configs["phonemes"].num_distinct_symbols,
            configs["text"].num_distinct_symbols) == (49, 28)
    data_dir = str(tmp_path / "data")
    assert data.Brent(data_dir=data_dir).builder_config.name == "phonemes"
    assert data.Brent(data_dir=data_dir, config="text").RAW_FILES.members["test"] == (
        "SegmentalLMs-main/Data/SNLM_sets/br/text_te.txt")
    with pytest.raises(ValueError, match="`files`"):
        data.BrentConfig(name="x")
    with pytest.raises(ValueError, match="`files`"):
        data.BrentConfig(name="x", files={"train": "a", "test": "b"})
    with pytest.raises(ValueError, match="`num_utterances`"):
        _config(num_utterances={"train": 1, "validation": 0, "test": 1})
    with pytest.raises(ValueError, match="`num_distinct_symbols`"):
        _config(num_distinct_symbols=True)
    with pytest.raises(ValueError, match="same as an available"):
        data.Brent(data_dir=data_dir, config=_config(name="phonemes"))
    assert {"brent_phonemes", "brent_text"} <= set(data.CORPUS_NAMES)


def test_manual_download_instructions_name_the_source_and_files():
    text = data.Brent.MANUAL_DOWNLOAD_INSTRUCTIONS
    assert brent.BRENT_URL in text and "SegmentalLMs-main.zip" in text
    for name in (*PHONO.values(), *TEXT.values()):
        assert name in text
    assert "MIT" in brent.__doc__ and "cmdowney88/SegmentalLMs" in brent.__doc__
    for key in ("brent1999", "bernsteinratner1987", "kawakami2019"):
        assert key in data.Brent.CITATION


@pytest.mark.skipif(not os.path.isdir(REAL_DIR), reason=f"{REAL_DIR} is absent")
def test_real_files_through_the_published_configs(tmp_path):
    counts = {"phonemes": ({"train": 7832, "validation": 978, "test": 978}, 49),
              "text": ({"train": 7832, "validation": 979, "test": 979}, 28)}
    files = {"phonemes": PHONO, "text": TEXT}
    for config, (utterances, symbols) in counts.items():
        builder = _prepare(tmp_path, REAL_DIR, config)
        metadata = builder.info.metadata
        assert metadata["num_utterances"] == utterances
        assert len(metadata["alphabet"]) == symbols
        for split in SPLITS:
            with open(os.path.join(REAL_DIR, files[config][split]), "rb") as f:
                raw = f.read()
            stream = data.read_split(builder, split)
            assert stream == raw  # the files end with "\n": the stream is the file
            assert stream.count(b"\n") == utterances[split]
            assert metadata["num_words"][split] == len(raw.split())
    # The README's training-split figures (words, symbols without spaces).
    phonemes = data.load_char_corpus("brent_phonemes", "train",
                                     data_dir=tmp_path / "data",
                                     manual_dir=REAL_DIR, allow_download=False)
    assert len(phonemes.split()) == 26_835
    assert len(phonemes.replace(" ", "").replace("\n", "")) == 76_790
    text = data.load_char_corpus("brent_text", "train", data_dir=tmp_path / "data",
                                 manual_dir=REAL_DIR, allow_download=False)
    assert len(text.split()) == 26_815
    assert len(text.replace(" ", "").replace("\n", "")) == 102_544


@pytest.mark.slow
def test_three_processes_prepare_one_dataset_at_once(tmp_path):
    # Three runs started together on a fresh data directory (three seeds of
    # an example): each gets the dataset, none fails on TFDS' rename.
    lines = _published_shape("#%&()*3679ADEGILMNOQRSTUWabcdefghiklmnoprstuvwyz~",
                             {"train": 7832, "validation": 978, "test": 978})
    manual = _write(tmp_path / "manual", lines, PHONO)
    child = ("import sys\n"
             "from hmkeras import data\n"
             "text = data.load_char_corpus('brent_phonemes', 'test', data_dir=sys.argv[1],\n"
             "                             manual_dir=sys.argv[2], allow_download=False)\n"
             "print(len(text))\n")
    env = dict(os.environ, HMKERAS_OFFLINE="1")
    runs = [subprocess.Popen([sys.executable, "-c", child, str(tmp_path / "data"), str(manual)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            for _ in range(3)]
    results = [run.communicate(timeout=600) for run in runs]
    for run, (out, err) in zip(runs, results):
        assert run.returncode == 0, err[-2000:]
        assert int(out.split()[-1]) == len(_stream(lines["test"]))
