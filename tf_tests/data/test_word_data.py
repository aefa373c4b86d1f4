"""Tests of the word-level data: TFDS builders over real small files, the
offline error, the embedded word corpus and its entropy rate, the word
vocabulary and the sentence pipeline (no network: downloads are forbidden)."""

import io
import re
import tarfile
import zipfile

import numpy as np
import pytest
import tensorflow_datasets as tfds

from hmkeras import data
from hmkeras.data import sources
from hmkeras.data import synthetic_word_corpus


# Every test of this file runs offline (conftest.py's `no_network`).
pytestmark = pytest.mark.usefixtures("no_network")


def _prepare(builder_cls, tmp_path, manual):
    builder = builder_cls(data_dir=str(tmp_path / "data"), allow_download=False)
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        manual_dir=str(manual), try_download_gcs=False))
    return builder


# ------------------------------------------------------------------ builders
_PTB = {
    "train": b" aer banknote berlitz calloway \n pierre <unk> N years old \n",
    "validation": b" consumers may want to move \n",
    "test": b" no it was n't black monday \n but while \n",
}
_PTB_FILES = {"train": "ptb.train.txt", "validation": "ptb.valid.txt",
              "test": "ptb.test.txt"}


def test_ptb_word_from_tgz_in_many_chunks(tmp_path, monkeypatch):
    manual = tmp_path / "manual"
    manual.mkdir()
    with tarfile.open(manual / "simple-examples.tgz", "w:gz") as tar:
        for split, name in _PTB_FILES.items():
            info = tarfile.TarInfo(f"./simple-examples/data/{name}")
            info.size = len(_PTB[split])
            tar.addfile(info, io.BytesIO(_PTB[split]))
    monkeypatch.setattr(data.PtbWord, "CHUNK_SIZE", 9)  # many chunks
    builder = _prepare(data.PtbWord, tmp_path, manual)
    for split, raw in _PTB.items():
        expected = [line.split() for line in raw.decode().split("\n")[:-1]]
        assert data.read_sentences(builder, split) == expected
        words = sum(len(s) for s in expected)
        assert builder.info.metadata["num_words"][split] == words
        assert builder.info.metadata["num_tokens"][split] == words + len(expected)
    assert builder.info.metadata["num_sentences"]["test"] == 2


def test_ptb_word_extracted_files_and_refuses_char_files(tmp_path):
    manual = tmp_path / "manual"
    manual.mkdir()
    for split, name in _PTB_FILES.items():
        (manual / name).write_bytes(_PTB[split])
    sentences = data.load_word_corpus("ptb_word", "validation",
                                      data_dir=tmp_path / "data", manual_dir=manual,
                                      allow_download=False)
    assert sentences == [["consumers", "may", "want", "to", "move"]]
    bad = tmp_path / "bad"
    bad.mkdir()
    for split, name in _PTB_FILES.items():
        (bad / name).write_bytes(b" a e r _ b a n k\n")
    with pytest.raises(data.DatasetVerificationError, match="ptb.char"):
        _prepare(data.PtbWord, tmp_path / "other", bad)


def test_wikitext2_word_from_zip_keeps_empty_lines(tmp_path):
    manual = tmp_path / "manual"
    manual.mkdir()
    files = {
        "wiki.train.tokens": b" \n = Title = \n \n The <unk> sat . \n",
        "wiki.valid.tokens": b" \n A b c \n",
        "wiki.test.tokens": b" = T = \n \n x y \n",
    }
    with zipfile.ZipFile(manual / "wikitext-2-v1.zip", "w") as z:
        for name, content in files.items():
            z.writestr(f"wikitext-2/{name}", content)
    builder = _prepare(data.Wikitext2Word, tmp_path, manual)
    assert data.read_sentences(builder, "train") == [
        [], ["=", "Title", "="], [], ["The", "<unk>", "sat", "."]]
    # Tokens counted as data.count_words does (Merity et al.'s counts).
    for split, name in (("train", "wiki.train.tokens"), ("test", "wiki.test.tokens")):
        assert builder.info.metadata["num_tokens"][split] == data.count_words(files[name])


def test_wikitext2_word_refuses_raw_release(tmp_path):
    manual = tmp_path / "manual"
    manual.mkdir()
    for name in ("wiki.train.tokens", "wiki.valid.tokens", "wiki.test.tokens"):
        (manual / name).write_bytes(b" Plain raw text without unknowns . \n")
    with pytest.raises(data.DatasetVerificationError, match="tokenised release"):
        _prepare(data.Wikitext2Word, tmp_path, manual)


@pytest.mark.parametrize("builder_cls,file_name", [
    (data.PtbWord, "ptb.train.txt"), (data.Wikitext2Word, "wiki.train.tokens")])
def test_offline_error_names_files_dirs_and_the_embedded_corpus(tmp_path, builder_cls,
                                                                file_name):
    manual = tmp_path / "empty_manual"
    manual.mkdir()
    with pytest.raises(data.DatasetFilesNotFoundError) as info:
        _prepare(builder_cls, tmp_path, manual)
    message = str(info.value)
    assert file_name in message
    assert str(manual) in message
    assert "allow_download=False" in message
    assert "load_word_corpus('embedded', split)" in message
    assert "load_char_corpus" not in message
    assert "load_word_corpus" in builder_cls.MANUAL_DOWNLOAD_INSTRUCTIONS


# ------------------------------------------------------- embedded word corpus
def test_embedded_sentences_are_the_character_text():
    corpus = data.SyntheticWordCorpus(seed=3, train_tokens=3_000)
    sentences = corpus.sentences("train")
    rebuilt = "".join(" ".join(s).replace(" , ", ", ") + ".\n" for s in sentences)
    assert rebuilt == corpus.characters.text("train")
    assert corpus.num_tokens("train") == sum(len(s) + 1 for s in sentences)


def test_embedded_entropy_rate_matches_a_large_sample():
    """The closed form against an empirical estimate: the generator's own
    code length of a large sample, per token, and the mean sentence length."""
    corpus = data.SyntheticWordCorpus(seed=5, train_tokens=400_000)
    sentences = corpus.sentences("train")
    lengths = np.array([len(s) + 1 for s in sentences], dtype=np.float64)
    stderr = lengths.std() / np.sqrt(lengths.size)
    assert abs(lengths.mean() - corpus.mean_sentence_tokens) < 4 * stderr
    empirical = corpus.true_bits_per_token("train")
    assert empirical == pytest.approx(corpus.entropy_rate_bits_per_token, rel=0.01)
    assert corpus.entropy_rate_perplexity == pytest.approx(
        2 ** corpus.entropy_rate_bits_per_token)


def test_expected_tokens_by_enumeration_of_sentence_shapes():
    """E[tokens per sentence] by summing over phrase-type paths (an
    independent computation: explicit enumeration, no matrix inverse)."""
    chars = data.SyntheticHierarchicalCorpus(seed=0, train_chars=10)

    def words(t):
        return sum(sum(c * p for c, p in q.items()) for _, q in chars.phrase_types[t])

    total = 0.0
    paths = [(p, t, words(t) + 1) for t, p in chars.start_probs.items()]
    for _ in range(200):  # paths of up to 200 phrases (the rest is < 1e-12)
        grown = []
        for prob, t, tokens in paths:
            for nxt, q in chars.transition_probs[t].items():
                if nxt == chars.END:
                    total += prob * q * tokens
                else:
                    grown.append((prob * q, nxt, tokens + words(nxt) + 1))
        merged = {}
        for prob, t, tokens in grown:  # merge by type: keep E[tokens | type]
            p0, m0 = merged.get(t, (0.0, 0.0))
            merged[t] = (p0 + prob, m0 + prob * tokens)
        paths = [(p, t, m / p) for t, (p, m) in merged.items()]
    assert synthetic_word_corpus.expected_tokens_per_sentence(chars) == pytest.approx(
        total, rel=1e-9)


def test_embedded_corpus_arguments():
    with pytest.raises(ValueError, match="train_tokens"):
        data.SyntheticWordCorpus(train_tokens=0)
    with pytest.raises(ValueError, match="`name` must be one of"):
        data.load_word_corpus("ptb", "train")
    with pytest.raises(ValueError, match="`split`"):
        data.load_word_corpus("embedded", "dev")


# ------------------------------------------------------------ vocabulary
def test_word_vocabulary_layout_and_unknown_words(tmp_path):
    sentences = [["b", "a", "c", "a"], ["c", "a", "<unk>"]]
    vocab = data.WordVocabulary.from_sentences(sentences)
    assert vocab.words == ["<pad>", "<eos>", "<unk>", "a", "c", "b"]
    assert (vocab.pad_id, vocab.eos_id, vocab.unknown_id) == (0, 1, 2)
    assert vocab.encode(["a", "zzz"]).tolist() == [3, 2]
    path = tmp_path / "vocab.json"
    vocab.save(path)
    assert data.WordVocabulary.load(path) == vocab
    closed = data.WordVocabulary.from_sentences([["x", "y"]])
    assert closed.unknown_token is None
    with pytest.raises(ValueError, match=re.escape("['q']")):
        closed.encode(["x", "q"])
    capped = data.WordVocabulary.from_sentences([["x", "y", "x", "z", "x", "y", "w"]],
                                                max_size=5)
    assert capped.words == ["<pad>", "<eos>", "<unk>", "x", "y"]
    with pytest.raises(ValueError, match="unknown_token"):
        data.WordVocabulary.from_sentences([["x", "y"]], max_size=3, unknown_token=None)
    with pytest.raises(ValueError, match="max_size"):
        data.WordVocabulary.from_sentences([["x"]], max_size=2)



def test_vocabulary_from_splits_adds_unk_only_when_another_split_needs_it():
    train = [["a", "b", "a"], ["c", "a"]]
    closed = data.WordVocabulary.from_splits(train, [[["b", "c"]], [["a"]]])
    assert closed == data.WordVocabulary.from_sentences(train)
    assert closed.unknown_token is None
    opened = data.WordVocabulary.from_splits(train, [[["b"]], [["a", "q"]]])
    assert opened.words == ["<pad>", "<eos>", "<unk>", "a", "b", "c"]
    assert opened.encode(["q", "c"]).tolist() == [2, 5]
    # Within max_size: the unknown token takes the rarest word's place.
    capped = data.WordVocabulary.from_splits(train, [[["q"]]], max_size=5)
    assert capped.words == ["<pad>", "<eos>", "<unk>", "a", "b"]
    # A training split that holds <unk> (PTB) needs nothing added.
    ptb = data.WordVocabulary.from_splits([["a", "<unk>"]], [[["q"]]])
    assert ptb.words == ["<pad>", "<eos>", "<unk>", "a"]

# ------------------------------------------------------- sentence pipeline
def _reference_rows(sentences, seq_len, overflow, eos=1):
    rows = []
    for s in sentences:
        if not len(s):
            continue
        x = [eos] + list(s)
        y = list(s) + [eos]
        starts = [0] if overflow == "truncate" else range(0, len(y), seq_len)
        for start in starts:
            xs, ys = x[start:start + seq_len], y[start:start + seq_len]
            pad = seq_len - len(ys)
            rows.append((xs + [0] * pad, ys + [0] * pad, [1.0] * len(ys) + [0.0] * pad))
    return rows


@pytest.mark.parametrize("overflow", ["truncate", "split"])
def test_sentence_batches_against_a_reference(overflow):
    rng = np.random.default_rng(0)
    sentences = [rng.integers(2, 30, size=n) for n in rng.integers(0, 20, size=40)]
    batches = data.SentenceBatches(sentences, seq_len=7, batch_size=5, overflow=overflow)
    rows = _reference_rows(sentences, 7, overflow)
    x, y, w = batches.arrays()
    assert x.tolist() == [r[0] for r in rows]
    assert y.tolist() == [r[1] for r in rows]
    assert w.tolist() == [r[2] for r in rows]
    assert batches.num_targets == sum(sum(r[2]) for r in rows)
    kept = sum(len(s) + 1 for s in sentences if len(s))
    if overflow == "split":
        assert batches.num_targets == kept
    else:
        assert batches.num_targets + batches.num_dropped_targets == kept
    streamed = [t.numpy() for b in batches.dataset() for t in b[:1]]
    assert np.array_equal(np.concatenate(streamed), x)
    assert len(streamed) == batches.num_batches == -(-len(rows) // 5)
    assert batches.dataset().options().autotune.enabled is False  # a fit per epoch


def test_sentence_batches_arguments():
    with pytest.raises(ValueError, match="overflow"):
        data.SentenceBatches([[3]], overflow="wrap")
    with pytest.raises(ValueError, match="seq_len"):
        data.SentenceBatches([[3]], seq_len=0)
    with pytest.raises(ValueError, match="no sentence"):
        data.SentenceBatches([[]])
