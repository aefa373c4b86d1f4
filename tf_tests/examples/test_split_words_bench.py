"""`bench/split_words.py`: its z^1, targets and bits are those of the
library's evaluation and word-discovery report on the same lines, its
comparisons are the scorer's (z^1 against its targets the mirror of the
targets against z^1), a model without a backward language model is
refused, and the script reads a saved run's files."""

import json
import os

import numpy as np
import pytest
from example_modules import load_script

from hmkeras.analysis import word_discovery
from hmkeras.analysis.evaluation import evaluate_char_model
from hmkeras.analysis.word_discovery_report import stream_segmentation
from hmkeras.analysis.word_discovery_report import word_discovery_results
from hmkeras.data import CharVocabulary
from hmkeras.data.utterances import Utterances
from hmkeras.models.char_language_model import CharLanguageModel

BENCH = load_script("bench", "split_words")
TEXT = "yu want tu\nsi D6 bUk\nhi\nlUk &t DIs\nwAts D&t\n" * 2


def tiny_model(vocab, placement="bidirectional"):
    return CharLanguageModel(vocab_size=len(vocab), units=8, num_layers=3, embedding_dim=4,
                             output_units=8, seed=0, boundary_placement=placement,
                             cell_options={"boundary_bias": 0.5})


@pytest.fixture(scope="module")
def model_and_lines():
    utterances = Utterances.from_text(TEXT)
    vocab = CharVocabulary.from_text(utterances.text)
    return tiny_model(vocab), vocab, utterances


@pytest.fixture(scope="module")
def split_scores(model_and_lines):
    return BENCH.split_scores(*model_and_lines)


def test_the_segmentations_and_bits_are_the_librarys(model_and_lines):
    lm, vocab, utterances = model_and_lines
    bits, lines = BENCH.segmentations(lm, vocab, utterances)
    evaluation = evaluate_char_model(lm, vocab.encode(utterances.text), keep_boundaries=True,
                                     verbose=0)
    assert bits == pytest.approx(evaluation.bpc, rel=1e-5)
    assert lines["z1"] == stream_segmentation(utterances, evaluation.boundaries[:, 0])
    _, reported = word_discovery_results(lm, vocab, {"test": utterances, "train": utterances})
    assert lines["targets"] == reported["bidirectional"]
    assert lines["gold"] == list(utterances.segmented)
    for segmented in lines.values():  # every segmentation spells the utterances
        assert [line.replace(" ", "") for line in segmented] == [
            line.replace(" ", "") for line in utterances.segmented]


def test_z1_against_its_targets_mirrors_the_targets_against_z1(model_and_lines,
                                                              split_scores):
    scores = split_scores
    _, lines = BENCH.segmentations(*model_and_lines)
    mirrored = word_discovery.score_segmentation(lines["z1"], lines["targets"]).boundary
    precision, recall, f1, _ = scores["z1 against its targets"]
    assert (precision, recall) == pytest.approx((mirrored.recall, mirrored.precision))
    assert f1 == pytest.approx(mirrored.f1)
    gold = word_discovery.score_segmentation(lines["gold"], lines["z1"])
    assert scores["z1 against the words"] == pytest.approx(
        (gold.boundary.precision, gold.boundary.recall, gold.boundary.f1, gold.token.f1))
    # The gold has words and z^1 is neither empty nor everywhere here.
    assert 0.0 < scores["z1 against the words"][2] < 1.0


def test_a_model_without_a_backward_model_is_refused():
    utterances = Utterances.from_text(TEXT)
    vocab = CharVocabulary.from_text(utterances.text)
    with pytest.raises(ValueError, match="no backward language model"):
        BENCH.segmentations(tiny_model(vocab, placement="surprisal"), vocab, utterances)


def test_the_script_reads_a_saved_run(tmp_path, model_and_lines, split_scores, capsys):
    lm, vocab, _ = model_and_lines
    os.makedirs(tmp_path / "run" / "checkpoints")
    (tmp_path / "run" / "model_config.json").write_text(lm.config.to_json())
    (tmp_path / "run" / "vocabulary.json").write_text(vocab.to_json())
    lm.network.save_weights(str(tmp_path / "run" / "checkpoints" / "best.weights.h5"))
    lines = tmp_path / "lines.txt"
    lines.write_text(TEXT)
    BENCH.FLAGS(["split_words", f"--run_dir={tmp_path / 'run'}", f"--files={lines}"])
    try:
        BENCH.main([])
    finally:
        BENCH.FLAGS.unparse_flags()
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    expected = split_scores
    assert printed[str(lines)]["bits"] == pytest.approx(expected["bits"])
    assert np.allclose(printed[str(lines)]["z1 against its targets"],
                       expected["z1 against its targets"])
