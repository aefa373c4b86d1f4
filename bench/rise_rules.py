r"""Which rule on the two directions' rises marks the words? Read-outs of a trained run.

`BoundaryPlacement(form="bidirectional")` trains `z^1` towards a boundary
wherever the forward and the backward rise sum to more than 0 (Eq. 4 of
`hmkeras.cells.boundary_placement`). This script reads a trained
`--unsegmented` run's forward and backward signals on its validation and
test utterances once (`word_discovery_report.surprisal_signal` and
`backward_signal`), and scores candidate rules on them against the gold
words: the threshold `d` of each direction's rise as a fraction of its
mean absolute change, whether a boundary must also be a local peak of
the summed rise (no boundary beside a larger rise), and a threshold on
the summed change set by the data alone (Otsu's, between the two classes
of largest between-class variance); and `d`'s fraction chosen without
gold words, as the one of `GRID` whose segmentation of the validation
utterances has the shortest description (Eq. 1 of
`hmkeras.analysis.description_length`), applied to the test utterances. Without `--valid_file` and
`--test_file` it reads the run's own splits of its `--text_file`.

    python examples/ptb_char.py --preset=brent --dataset=brent_text \
        --manual_dir=../shared/data/brent --nolstm_baseline --seed=0 \
        --output_dir=runs/letters_s0
    python bench/rise_rules.py --run_dir=runs/letters_s0 \
        --valid_file=../shared/data/brent/text_va.txt \
        --test_file=../shared/data/brent/text_te.txt
    python examples/ptb_char.py --preset=quick --dataset=text_file \
        --text_file=fortunes_prose.txt --unsegmented --nolstm_baseline \
        --seed=0 --output_dir=runs/prose_s0
    python bench/rise_rules.py --run_dir=runs/prose_s0

Figures: `docs/results/word-discovery.md`, "Other rules on the two directions' rises".
"""

import json
import os

from absl import app
from absl import flags
import numpy as np

from hmkeras.analysis import word_discovery
from hmkeras.analysis import word_discovery_report as report
from hmkeras.analysis.description_length import description_length
from hmkeras.analysis.description_length import shortest_description
from hmkeras.analysis.word_discovery import bidirectional_rises
from hmkeras.data.text_file import read_text_file
from hmkeras.data.utterances import Utterances
from hmkeras.data.utterances import split_utterances
from trained_run import load_model

FLAGS = flags.FLAGS
flags.DEFINE_string("run_dir", None, "An --unsegmented run of examples/ptb_char.py.")
flags.DEFINE_string("valid_file", None, "The validation utterances (words separated by "
                    "spaces); default: the run's own validation split of its --text_file.")
flags.DEFINE_string("test_file", None, "The test utterances; default: the run's own test split.")
flags.mark_flags_as_required(["run_dir"])

#: `d` as a fraction of each direction's mean absolute change (the
#: placement's is 0.5: `hmkeras.cells.boundary_placement.RISE_FRACTION`).
FRACTIONS = (0.5, 0.75, 1.0)
#: The fractions among which the shortest description chooses.
GRID = (0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0)
SHORTEST = "d chosen by the shortest description"


def local_peaks(summed):
    """1 where `summed` is at least its left and more than its right neighbour."""
    peak = np.ones(summed.size, bool)
    peak[1:] &= summed[1:] >= summed[:-1]
    peak[:-1] &= summed[:-1] > summed[1:]
    return peak


def otsu_threshold(values):
    """The threshold between the two classes of `values` of the largest
    between-class variance (Otsu 1979), midway between their nearest values."""
    v = np.sort(values)
    n = np.arange(1, v.size)
    below = np.cumsum(v)[:-1]
    between = n * (v.size - n) * (below / n - (v.sum() - below) / (v.size - n)) ** 2
    k = int(np.argmax(between))
    return (v[k] + v[k + 1]) / 2


def rule_cuts(unspaced, forward, backward):
    """`{rule: per-utterance 0/1 cuts}`: the summed rise above 0 for each
    fraction of `FRACTIONS`, with and without the peak condition, and the
    summed change (no `d`) above Otsu's threshold over all cuts."""
    out = {}
    for fraction in FRACTIONS:
        summed = bidirectional_rises(unspaced, forward, backward, rise_fraction=fraction)
        out[f"d = {fraction} x mean change"] = [s > 0 for s in summed]
        out[f"d = {fraction} x mean change, peaks only"] = [
            (s > 0) & local_peaks(s) for s in summed]
    changes = bidirectional_rises(unspaced, forward, backward, rise_fraction=0.0)
    threshold = otsu_threshold(np.concatenate([c[1:] for c in changes]))
    out["summed change above Otsu's threshold"] = [
        np.concatenate([[False], c[1:] > threshold]) for c in changes]
    return out


def grid_cuts(unspaced, forward, backward):
    """`{fraction: per-utterance 0/1 cuts}`: the summed rise above 0 with
    `d` each fraction of `GRID` of each direction's mean absolute change."""
    return {fraction: [s > 0 for s in bidirectional_rises(
        unspaced, forward, backward, rise_fraction=fraction)] for fraction in GRID}


def segmented_lines(unspaced, cuts):
    """The utterances with a space at each cut."""
    return [word_discovery.segment_utterance(u, np.append(c, 1).astype(np.int8))
            for u, c in zip(unspaced, cuts)]


def scores_of(gold, lines):
    """`(boundary P, R, F1, token F1, rate)` of `lines` against `gold`."""
    result = word_discovery.score_segmentation(gold, lines)
    b = result.boundary
    return (b.precision, b.recall, b.f1, result.token.f1, word_discovery.boundary_rate(lines))


def score_rules(lm, vocab, utterances):
    """`({rule: scores}, {fraction of GRID: lines})` over `utterances`:
    every rule's `scores_of`, and the segmentation of each fraction."""
    ids = vocab.encode(utterances.text)
    unspaced = utterances.unspaced
    signals = (unspaced, *report.utterance_signals(
        lm, utterances, ids, report.batch_one_pass(lm, ids)[1]))
    scores = {name: scores_of(utterances.segmented, segmented_lines(unspaced, cuts))
              for name, cuts in rule_cuts(*signals).items()}
    grid = {fraction: segmented_lines(unspaced, cuts)
            for fraction, cuts in grid_cuts(*signals).items()}
    return scores, grid


def split_texts(run_dir, valid_file, test_file):
    """`{"validation": text, "test": text}`: the files, or without them the
    run's own splits of its --text_file (its settings.json)."""
    if valid_file and test_file:
        texts = {}
        for name, path in (("validation", valid_file), ("test", test_file)):
            with open(path, encoding="utf-8") as f:
                texts[name] = f.read()
        return texts
    if valid_file or test_file:
        raise app.UsageError("Give both --valid_file and --test_file, or neither.")
    with open(os.path.join(run_dir, "settings.json")) as f:
        s = json.load(f)
    if s.get("dataset") != "text_file" or "," in s["text_file"] or not s.get("unsegmented"):
        raise app.UsageError(
            f"--run_dir={run_dir} is not an --unsegmented run of one --text_file: give "
            "--valid_file and --test_file.")
    text = read_text_file(s["text_file"], "text_file")[: s.get("text_chars") or None]
    _, valid, test = split_utterances(Utterances.from_text(text, "text_file"),
                                      valid_fraction=s["valid_fraction"],
                                      test_fraction=s["test_fraction"])
    return {"validation": "\n".join(valid.segmented) + "\n",
            "test": "\n".join(test.segmented) + "\n"}


def main(_):
    lm, vocab = load_model(FLAGS.run_dir)
    texts = split_texts(FLAGS.run_dir, FLAGS.valid_file, FLAGS.test_file)
    utterances = {name: Utterances.from_text(text) for name, text in texts.items()}
    splits, grids = {}, {}
    for name, u in utterances.items():
        splits[name], grids[name] = score_rules(lm, vocab, u)
    print("fraction  validation bits of Eq. (1), boundary F1 / rate    test F1 / rate")
    for fraction in GRID:
        valid, test = grids["validation"][fraction], grids["test"][fraction]
        print(f"{fraction:8.3f}  {description_length(valid):12.0f} "
              "{2:.3f} / {4:.3f}".format(*scores_of(utterances["validation"].segmented, valid))
              + "              {2:.3f} / {4:.3f}".format(
                  *scores_of(utterances["test"].segmented, test)))
    chosen = shortest_description(grids["validation"])
    for name in splits:
        splits[name][f"{SHORTEST} ({chosen})"] = scores_of(
            utterances[name].segmented, grids[name][chosen])
    print(f"{'rule':46s}  validation P / R / F1 (token F1) rate    test P / R / F1 (token F1) rate")
    for name in splits["validation"]:
        row = "   ".join("{:.3f} / {:.3f} / {:.3f} ({:.3f}) {:.3f}".format(*splits[split][name])
                         for split in ("validation", "test"))
        print(f"{name:46s}  {row}")
    print(json.dumps(splits))


if __name__ == "__main__":
    app.run(main)
