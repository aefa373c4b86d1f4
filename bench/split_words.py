r"""Does z^1 reproduce its targets? z^1 and the rule it is trained towards, split by split.

An `--unsegmented` run of `examples/ptb_char.py` trains `z^1` towards a
rule on its own predictions (`BoundaryPlacement(form="bidirectional")`,
Eq. 4 of `hmkeras.cells.boundary_placement`). Its report scores both
against the gold words of the test lines; this script reads any files of
utterances (the training lines too, on which `z^1` was trained) and
scores, for each: the language model's bits per symbol, `z^1` against
the gold words, the targets (the rule at the model's `rise_fraction`)
against the gold words, and `z^1` against the targets, as if they were
the gold: how much of the rule the detector, which decides before the
next symbol is read, reproduces. Each file is read as one stream from
the zero state, as the run's test pass reads its test lines
(`hmkeras.analysis.word_discovery_report`).

    python examples/ptb_char.py --preset=brent --dataset=brent_text \
        --manual_dir=../shared/data/brent --nolstm_baseline --seed=0 \
        --output_dir=runs/letters_s0
    python bench/split_words.py --run_dir=runs/letters_s0 \
        --files=../shared/data/brent/text_tr.txt,../shared/data/brent/text_va.txt,../shared/data/brent/text_te.txt

Figures: `docs/results/word-discovery.md`, "Trained on, and the words of
the training lines".
"""

import json

from absl import app
from absl import flags
from keras import ops
import numpy as np

from hmkeras.analysis import word_discovery
from hmkeras.analysis import word_discovery_report as report
from hmkeras.data.text_file import read_text_file
from hmkeras.data.utterances import Utterances
from trained_run import load_model

FLAGS = flags.FLAGS
flags.DEFINE_string("run_dir", None, "An --unsegmented run of examples/ptb_char.py "
                    "(--boundary_placement=bidirectional, its default).")
flags.DEFINE_list("files", None, "Files of utterances, one per line, words separated by "
                  "spaces (e.g. the run's training, validation and test files).")
flags.mark_flags_as_required(["run_dir", "files"])

#: The comparisons of `split_scores`: (name, reference, segmentation).
COMPARISONS = (("z1 against the words", "gold", "z1"),
               ("targets against the words", "gold", "targets"),
               ("z1 against its targets", "targets", "z1"))


def segmentations(lm, vocab, utterances):
    """`(bits, {"gold", "z1", "targets"})` of `lm` reading `utterances`
    as one stream: its bits per symbol (every prediction of the next
    symbol, the line ends' included) and the three segmentations."""
    if lm.backward_language_model is None:
        raise ValueError(
            "The run's model has no backward language model: its z^1 was not trained "
            "towards both directions' rises (--boundary_placement=bidirectional).")
    ids = vocab.encode(utterances.text)
    outputs, log_probs = report.batch_one_pass(lm, ids)
    bits = report.signal_terms(log_probs, ids)[1].mean() / np.log(2.0)
    targets = report.bidirectional_targets(
        lm, utterances, *report.utterance_signals(lm, utterances, ids, log_probs))
    z1 = ops.convert_to_numpy(lm.boundaries(outputs))[:, 0]
    return float(bits), {"gold": list(utterances.segmented), "targets": targets,
                         "z1": report.stream_segmentation(utterances, z1)}


def split_scores(lm, vocab, utterances):
    """`{"bits": b, comparison: (boundary P, R, F1, token F1)}` over
    `utterances`, one entry per comparison of `COMPARISONS`."""
    bits, lines = segmentations(lm, vocab, utterances)
    scores = {"bits": bits}
    for name, reference, segmented in COMPARISONS:
        result = word_discovery.score_segmentation(lines[reference], lines[segmented])
        b = result.boundary
        scores[name] = (b.precision, b.recall, b.f1, result.token.f1)
    return scores


def main(_):
    lm, vocab = load_model(FLAGS.run_dir)
    results = {}
    for path in FLAGS.files:
        utterances = Utterances.from_text(read_text_file(path, "files"), "files")
        if not utterances.has_words:
            raise app.UsageError(f"--files: {path} has no spaces, so no gold words to score.")
        results[path] = split_scores(lm, vocab, utterances)
    print(f"{'file':28s} {'bits':>6s}  " + "   ".join(
        f"{name} (P / R / F1, token F1)" for name, _, _ in COMPARISONS))
    for path, scores in results.items():
        row = "   ".join("{:.3f} / {:.3f} / {:.3f} ({:.3f})".format(*scores[name])
                         for name, _, _ in COMPARISONS)
        print(f"{path[-28:]:28s} {scores['bits']:6.4f}  {row}")
    print(json.dumps(results))


if __name__ == "__main__":
    app.run(main)
