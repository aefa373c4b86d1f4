"""`bench/rise_signals.py`: its Eq. 3 signal equal to the word-discovery
report's, and every signal scored on real utterances of a tiny model."""

import numpy as np
from example_modules import load_script

from hmkeras.analysis import word_discovery_report as report
from hmkeras.data import CharVocabulary
from hmkeras.data.utterances import Utterances
from hmkeras.models.char_language_model import CharLanguageModel

BENCH = load_script("bench", "rise_signals")
EQ3 = "H_t + (S_t - H_{t+1}) / 2 (Eq. 3: form='surprisal')"


def test_eq3_signal_is_the_reports_and_every_signal_is_scored():
    utterances = Utterances.from_text("yu want tu\nsi D6 bUk\nhi\nlUk\n" * 2)
    vocab = CharVocabulary.from_text(utterances.text)
    lm = CharLanguageModel(vocab_size=len(vocab), units=8, num_layers=3, embedding_dim=4,
                           output_units=8, seed=0)
    ids = vocab.encode(utterances.text)
    log_probs = report.batch_one_pass(lm, ids)[1]
    np.testing.assert_allclose(BENCH.SIGNALS[EQ3](*report.signal_terms(log_probs, ids)),
                               report.surprisal_signal(log_probs, ids), rtol=1e-12)
    scores = BENCH.score_signals(lm, vocab, utterances)
    assert set(scores) == set(BENCH.SIGNALS)
    assert all(0.0 <= b <= 1.0 and 0.0 <= t <= 1.0 for b, t in scores.values())
