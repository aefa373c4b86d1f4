r"""Which signal's rises mark the words? Read-outs of a trained run's predictions.

`BoundaryPlacement` trains `z^1` towards the rises of a signal of the
model's own predictions (`form="rise"`: the entropy; `form="surprisal"`,
the unsegmented default: Eq. 3 of `hmkeras.cells.boundary_placement`).
This script compares candidate signals as segmenters: it reads a trained
`--unsegmented` run's validation and test utterances once (batch 1, state
carried, as the test pass does), segments each split with the rise rule
(`entropy_segmentation(..., rule="rise")`: a boundary after symbol `t`
where the signal rises by more than half its mean absolute change) on
each signal, and scores boundary and token F1 against the gold words.

With `H_t` the entropy of the prediction of symbol `t + 1` and `S_t` the
surprisal of the symbol that does come (nats), the signals are those of
`SIGNALS`. The default's signal, `H_t + (S_t - H_{t+1}) / 2`, was chosen
on the validation split of two such runs (Brent phonemes and letters,
seed 0): a choice made on validation boundaries.

    python examples/ptb_char.py --preset=brent --manual_dir=../shared/data/brent \
        --seed=0 --boundary_placement=rise --nolstm_baseline --output_dir=runs/brent_rise_s0
    python bench/rise_signals.py --run_dir=runs/brent_rise_s0 \
        --valid_file=../shared/data/brent/phono_va.txt \
        --test_file=../shared/data/brent/phono_te.txt

Figures: `docs/results/word-discovery.md`, "Better targets: the surprisal
of the next symbol".
"""

import json

from absl import app
from absl import flags
import numpy as np

from trained_run import CHUNK
from trained_run import load_model

FLAGS = flags.FLAGS
flags.DEFINE_string("run_dir", None, "An --unsegmented run of examples/ptb_char.py.")
flags.DEFINE_string("valid_file", None, "The validation utterances (words separated by spaces).")
flags.DEFINE_string("test_file", None, "The test utterances.")
flags.mark_flags_as_required(["run_dir", "valid_file", "test_file"])

#: The candidate signals, from `H_t`, `S_t` and `H_{t+1}`
#: (`hmkeras.analysis.word_discovery_report.signal_terms`).
SIGNALS = {
    "H_t (the entropy: form='rise')": lambda h, s, h_next: h,
    "S_t": lambda h, s, h_next: s,
    "H_t + S_t / 2": lambda h, s, h_next: h + s / 2,
    "H_t + S_t": lambda h, s, h_next: h + s,
    "H_t + (S_t - H_{t+1}) / 2 (Eq. 3: form='surprisal')": lambda h, s, h_next: h + (s - h_next) / 2,
    "H_t + S_t - H_{t+1}": lambda h, s, h_next: h + s - h_next,
}


def score_signals(lm, vocab, utterances):
    """`{signal: (boundary F1, token F1)}` of the rise rule on each signal
    of `SIGNALS` over `utterances`."""
    from hmkeras.analysis import word_discovery
    from hmkeras.analysis.word_discovery_report import batch_one_pass
    from hmkeras.analysis.word_discovery_report import signal_terms
    from hmkeras.analysis.word_discovery_report import utterance_values

    ids = vocab.encode(utterances.text)
    terms = signal_terms(batch_one_pass(lm, ids, CHUNK)[1], ids)
    unspaced = utterances.unspaced
    scores = {}
    for name, signal in SIGNALS.items():
        lines = word_discovery.entropy_segmentation(
            unspaced, utterance_values(utterances, signal(*terms)), rule="rise")
        result = word_discovery.score_segmentation(utterances.segmented, lines)
        scores[name] = (result.boundary.f1, result.token.f1)
    return scores


def main(_):
    from hmkeras.data.utterances import Utterances

    lm, vocab = load_model(FLAGS.run_dir)
    splits = {}
    for name, path in (("validation", FLAGS.valid_file), ("test", FLAGS.test_file)):
        with open(path, encoding="utf-8") as f:
            splits[name] = score_signals(lm, vocab, Utterances.from_text(f.read()))
    print(f"{'signal (rise rule)':56s}  validation F1 (token)    test F1 (token)")
    for name in SIGNALS:
        (vb, vt), (tb, tt) = splits["validation"][name], splits["test"][name]
        print(f"{name:56s}  {vb:10.3f} ({vt:.3f})  {tb:10.3f} ({tt:.3f})")
    print(json.dumps(splits))


if __name__ == "__main__":
    app.run(main)
