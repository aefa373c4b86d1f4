"""`bench/phrase_placement.py` on hand-made boundaries and entropies, and
`bench/trained_run.py`'s pass over a text against one call of the network."""

import numpy as np
from example_modules import load_script

from hmkeras.cells.boundary_placement import predictive_entropy
from hmkeras.models.char_language_model import CharLanguageModel
from hmkeras.models.char_language_model import CharLanguageModelConfig

BENCH = load_script("bench", "phrase_placement")
TRAINED_RUN = load_script("bench", "trained_run")


def test_step_kinds_take_a_units_end_in_any_alignment():
    # "ab cd, ef": words end at b, d, f; the phrase at d. Two alignments each.
    words = {"last_char": np.array([0, 1, 0, 0, 1, 0, 0, 0, 1]),
             "separator": np.array([0, 0, 1, 0, 0, 1, 0, 0, 0])}
    phrases = {"last_char": np.array([0, 0, 0, 0, 1, 0, 0, 0, 0]),
               "separator": np.array([0, 0, 0, 0, 0, 1, 0, 0, 0])}
    np.testing.assert_array_equal(BENCH.step_kinds(words, phrases),
                                  [2, 1, 1, 2, 0, 0, 2, 2, 1])


def test_placement_targets_are_the_deciding_steps_above_their_mean_entropy():
    z = np.array([[1, 0], [0, 1], [0, 0], [1, 0], [0, 0]])
    # z^2 decides where z^1 fires (steps 0 and 3) or z^2 fired before (step 2).
    entropy = np.array([3.0, 9.0, 1.0, 2.0, 9.0])  # mean over A^2: 2
    targets, deciding = BENCH.placement_targets(entropy, z)
    np.testing.assert_array_equal(deciding, [1, 0, 1, 1, 0])
    np.testing.assert_array_equal(targets, [1, 0, 0, 0, 0])


def test_ranked_boundaries_pick_the_extreme_candidates_only():
    score = np.array([5.0, 1.0, 4.0, 9.0, 2.0, 3.0])
    candidates = np.array([1, 1, 1, 0, 1, 1])  # step 3, the highest, is no candidate
    np.testing.assert_array_equal(BENCH.ranked_boundaries(score, candidates, 2),
                                  [1, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(BENCH.ranked_boundaries(score, candidates, 2, lowest=True),
                                  [0, 1, 0, 0, 1, 0])


def test_read_steps_in_chunks_equals_one_pass_with_the_state_carried(monkeypatch):
    lm = CharLanguageModel(CharLanguageModelConfig(
        vocab_size=7, units=4, embedding_dim=3, output_units=5, seed=0))
    ids = np.random.default_rng(0).integers(0, 7, 11)
    monkeypatch.setattr(TRAINED_RUN, "CHUNK", 4)  # three chunks, the last one padded
    outputs, entropy, embedding = TRAINED_RUN.read_steps(lm, ids)
    logits, rnn_outputs, *_ = lm.network([ids[None].astype("int32"), *lm.zero_state(1)])
    np.testing.assert_allclose(outputs, np.asarray(rnn_outputs)[0], atol=1e-5)
    np.testing.assert_allclose(entropy, np.asarray(predictive_entropy(logits[0])), atol=1e-5)
    assert embedding.shape == (11, 3)
