"""`bench/rise_rules.py`: its rule at the placement's fraction is the
library's bidirectional segmentation, its peaks and Otsu's threshold by
hand, and every rule scored on real utterances of a tiny model, with the
segmentations among which the shortest description chooses."""

import numpy as np
from example_modules import load_script

from hmkeras.analysis.word_discovery import bidirectional_segmentation
from hmkeras.analysis.word_discovery import segment_utterance
from hmkeras.data import CharVocabulary
from hmkeras.data.utterances import Utterances
from hmkeras.models.char_language_model import CharLanguageModel

BENCH = load_script("bench", "rise_rules")


def test_the_placements_fraction_is_the_librarys_rule():
    rng = np.random.default_rng(0)
    utterances = ["abcdefg", "hij", "klmnopqr", "st"]
    forward = [rng.normal(size=len(u)) for u in utterances]
    backward = [rng.normal(size=len(u)) for u in utterances]
    cuts = BENCH.rule_cuts(utterances, forward, backward)["d = 0.5 x mean change"]
    lines = [segment_utterance(u, np.append(c, 1).astype(np.int8))
             for u, c in zip(utterances, cuts)]
    assert lines == bidirectional_segmentation(utterances, forward, backward)
    assert any(" " in line for line in lines)


def test_peaks_and_otsus_threshold_by_hand():
    summed = np.array([1.0, 3.0, 3.0, 2.0, 5.0, 0.5])
    # 3.0 at i = 1 ties its right neighbour; the plateau's last value and 5.0 are peaks.
    assert BENCH.local_peaks(summed).tolist() == [False, False, True, False, True, False]
    # Two clusters: the threshold falls between them.
    values = np.array([0.1, 0.2, 0.0, 0.3, 5.0, 5.2, 4.9])
    assert 0.3 < BENCH.otsu_threshold(values) < 4.9


def test_every_rule_is_scored_on_a_tiny_model():
    utterances = Utterances.from_text("yu want tu\nsi D6 bUk\nhi\nlUk\n" * 2)
    vocab = CharVocabulary.from_text(utterances.text)
    lm = CharLanguageModel(vocab_size=len(vocab), units=8, num_layers=3, embedding_dim=4,
                           output_units=8, seed=0, boundary_placement="bidirectional")
    scores, grid = BENCH.score_rules(lm, vocab, utterances)
    assert len(scores) == 2 * len(BENCH.FRACTIONS) + 1
    assert all(0.0 <= value <= 1.0 for row in scores.values() for value in row)
    # Each fraction's lines spell the utterances; a larger d never cuts more.
    assert sorted(grid) == sorted(BENCH.GRID)
    for lines in grid.values():
        assert [line.replace(" ", "") for line in lines] == [
            line.replace(" ", "") for line in utterances.segmented]
    cuts = [sum(line.count(" ") for line in grid[f]) for f in BENCH.GRID]
    assert cuts == sorted(cuts, reverse=True)
