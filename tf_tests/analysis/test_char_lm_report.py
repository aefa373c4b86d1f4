"""Tests of hmkeras.analysis.char_lm_report (what a char-LM run reports)."""

import os

import numpy as np
import pytest

from hmkeras.analysis import bits
from hmkeras.analysis import char_lm_report
from hmkeras.analysis import corpus_references
from hmkeras.analysis.evaluation import EvaluationResult
from hmkeras.data import CharVocabulary
from hmkeras.data import wikitext2_raw
from hmkeras.models.char_language_model import CharLanguageModel
from hmkeras.models.char_language_model import CharLanguageModelConfig


def test_word_level_report_of_wikitext2():
    # The published counts: Krause et al. Section 4.4 (1.2649 bits/byte).
    full = EvaluationResult(bpc=1.2649, num_targets=wikitext2_raw.WIKITEXT2_TEST_BYTES - 1)
    report = char_lm_report.word_level_results(
        full, b"x" * wikitext2_raw.WIKITEXT2_TEST_BYTES)
    assert report["num_words"] == bits.WIKITEXT2_TEST_WORDS
    assert report["num_words_source"].startswith("published")
    assert report["bits_per_word"] == pytest.approx(6.4718, abs=1e-4)
    assert report["word_perplexity"] == pytest.approx(88.8, abs=0.05)
    # Any other text: its own words (tokens + one per line, count_words).
    text = b" = Title = \n \n Some text .\n"
    part = EvaluationResult(bpc=2.0, num_targets=len(text) - 1)
    report = char_lm_report.word_level_results(part, text)
    assert report["num_words"] == 9 and "count_words" in report["num_words_source"]
    assert report["bits_per_word"] == pytest.approx(2.0 * len(text) / 9)
    assert np.isclose(report["word_perplexity"], 2 ** report["bits_per_word"])


def test_segment_figures_score_z1_against_word_tokens():
    text = "ab cd ef"
    z1 = np.array([0, 1, 0, 0, 1, 0, 0, 1])  # every word's last character
    figures = char_lm_report.segment_figures(
        np.stack([z1, np.zeros(8)], axis=1), text + "xyz", " ", excerpt_chars=5)
    assert figures["token_scores"]["f1"] == 1.0
    assert figures["segment_excerpt"] == "ab| cd|"


def test_more_boundary_scores_with_phrases():
    words = {"last_char": np.array([0, 1, 0, 1, 0, 1]), "separator": np.zeros(6, int)}
    phrases = {"last_char": np.array([0, 0, 0, 1, 0, 0]), "separator": np.zeros(6, int)}
    boundaries = np.stack([words["last_char"], phrases["last_char"]], axis=1)[:5]
    out = char_lm_report.more_boundary_scores(boundaries, {"words": words,
                                                           "phrases": phrases})
    assert len(out["boundary_scores_tolerance_1"]) == 2
    assert out["phrase_boundary_scores"]["layer"] == 2
    assert out["phrase_boundary_scores"]["f1"] == 1.0
    assert out["phrase_boundary_scores"]["alignment"] == "last_char"
    only_words = char_lm_report.more_boundary_scores(boundaries, {"words": words})
    assert set(only_words) == {"boundary_scores_tolerance_1"}


def test_summary_lines_name_every_figure():
    scores = {"precision": 0.5, "recall": 0.25, "f1": 0.333, "alignment": "separator",
              "by_alignment": {"separator": {"f1": 0.333}}}
    lines = char_lm_report.summary_lines({
        "cell": "hmlstm", "parameters": 10, "epochs": 1, "wall_seconds": 2.0,
        "test_bpc": 1.0, "test_symbols": 50, "z_rates": [0.5, 0.25], "z_ratio": 2.0,
        "boundary_scores": [scores, scores], "token_scores": scores,
        "unknown_symbols": {"test": {"count": 3, "symbols": ["x"]}},
        "segment_excerpt": "ab|", "segmentation_png": "s.png", "step_model": "m"})
    text = "\n".join(lines)
    assert "3 of the 50 test symbols are unknown" in text
    assert "z rates z^1 0.500, z^2 0.250; z-ratio 2.000" in text
    assert "z^2 vs words: P 0.500 R 0.250 F1 0.333 (aligned on: separator)" in text
    assert lines[-1] == "wrote s.png and m"


@pytest.mark.slow
def test_validation_logs_and_excerpt_plot(tmp_path):
    vocab = CharVocabulary.from_text("abc d")
    lm = CharLanguageModel(CharLanguageModelConfig(
        vocab_size=len(vocab), cell="hmlstm", units=4, embedding_dim=3, output="none"))
    ids = vocab.encode("abc d" * 8)
    logs = char_lm_report.validation_logs(lm, ids, seq_len=5, batch_size=2, zrate_chars=20)
    assert np.isfinite(logs["val_bpc"]) and 0 <= logs["val_z_rate_1"] <= 1
    path = char_lm_report.plot_excerpt(lm, vocab, "abc d ab", str(tmp_path / "s.png"),
                                       "hmlstm")
    assert os.path.getsize(path) > 0


def test_corpus_references_of_the_synthetic_corpus():
    from hmkeras.data import SyntheticHierarchicalCorpus

    corpus = SyntheticHierarchicalCorpus(seed=0, train_chars=200, valid_chars=200,
                                         test_chars=200)
    text = corpus.text("test")
    refs = corpus_references.synthetic_references(corpus, "test", text, " ,.\n")
    words = refs["words"]
    assert set(refs) == {"words", "phrases"}
    assert set(words) == {"separator", "last_char", "last_separator"}
    # The separator alignment is the last-character one, one step later.
    np.testing.assert_array_equal(words["separator"][1:], words["last_char"][:-1])
    assert all(text[i] in " ,.\n" for i in np.flatnonzero(words["last_separator"]))
