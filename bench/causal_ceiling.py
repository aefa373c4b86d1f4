r"""How many words could a detector find that decides before the next symbol?

`z^1_t` of an HM-LSTM is computed once `x_t` is read and before
`x_{t+1}` is: whether a word ends after `x_t` has to be told from what
came before. This script measures what that costs on a corpus, with no
model of the library and with the answers given: a table of counts from
the gold words of the training utterances, `P(boundary after x_t |
context)`, where the context is the last `k` symbols of the utterance (its
start included as a symbol of its own) and, for comparison, the next `r`
symbols as well. A position takes the longest context of at most `k`
symbols seen at least `--min_count` times in training (back-off to
shorter ones) and gets a boundary where that probability exceeds a
threshold. `k` (1-12) and the threshold (0.3-0.7) are chosen on the
validation utterances' boundary F1, and the test utterances are scored
in the field's conventions (`hmkeras.analysis.word_discovery`).

It is a supervised segmenter, told the words of the training text: not a
competitor of the unsupervised ones, but a measure of how far the words
of a corpus are decided by what precedes them. `r = 0` is what a causal
detector could learn from the counts alone, `r = 1` and `r = 2` what one
or two symbols of look-ahead add (the bidirectional targets of
`BoundaryPlacement(form="bidirectional")` read the whole utterance).

    python bench/causal_ceiling.py --train_file=../shared/data/brent/text_tr.txt \
        --valid_file=../shared/data/brent/text_va.txt \
        --test_file=../shared/data/brent/text_te.txt
    python bench/causal_ceiling.py --text_file=fortunes_prose.txt  # the example's splits

Figures: `docs/results/word-discovery.md`, "What a detector that decides first could reach".
"""

import collections
import json

from absl import app
from absl import flags
import numpy as np

from hmkeras.analysis import word_discovery
from hmkeras.data.text_file import read_text_file
from hmkeras.data.utterances import Utterances
from hmkeras.data.utterances import split_utterances

FLAGS = flags.FLAGS
flags.DEFINE_string("train_file", None, "The training utterances (words separated by spaces).")
flags.DEFINE_string("valid_file", None, "The validation utterances.")
flags.DEFINE_string("test_file", None, "The test utterances.")
flags.DEFINE_string("text_file", None, "One file, split as `examples/ptb_char.py "
                    "--dataset=text_file --unsegmented` splits it (the last 5 %% of the "
                    "lines for test, the 5 %% before for validation), instead of the three.")
flags.DEFINE_list("lookahead", ["0", "1", "2"], "Symbols after x_t the context may read.")
flags.DEFINE_string("segmented", None, "A run's test_segmented.txt (the same test lines): "
                    "where its boundaries fall against the look-ahead-0 table's.")
flags.DEFINE_bool("tagger", False, "Also train a 2 x 128 LSTM tagger on the gold cuts of "
                  "the training lines for each look-ahead (a few minutes on 2 cores).")
flags.DEFINE_integer("min_count", 3, "Training occurrences a context needs to be used.",
                     lower_bound=1)

MAX_CONTEXT = 12
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7)
START = "\x02"


def unspaced_with_cuts(line):
    """`(symbols, cuts)`: the utterance without spaces and 0/1 per
    utterance-internal position (1 where a word ends after that symbol)."""
    symbols, boundaries = word_discovery.utterance_boundaries(line)
    return symbols, boundaries[:-1]


def contexts(symbols, t, k, lookahead):
    """The key of position `t` with `k` symbols of history and `lookahead` after."""
    left = (START + symbols[: t + 1])[-k:] if k else ""
    return left + "|" + symbols[t + 1 : t + 1 + lookahead]


def count_table(lines, lookahead):
    """`{key: [boundaries, occurrences]}` over every context length."""
    table = collections.defaultdict(lambda: [0, 0])
    for line in lines:
        symbols, cuts = unspaced_with_cuts(line)
        for t, cut in enumerate(cuts):
            for k in range(min(MAX_CONTEXT, t + 2) + 1):  # t + 2: the start marker too
                entry = table[contexts(symbols, t, k, lookahead)]
                entry[0] += int(cut)
                entry[1] += 1
    return table


def probabilities(table, lines, k, lookahead, min_count):
    """Per line, the boundary probability of each internal position."""
    out = []
    for line in lines:
        symbols, cuts = unspaced_with_cuts(line)
        p = np.zeros(cuts.size)
        for t in range(cuts.size):
            for j in range(k, -1, -1):
                b, n = table.get(contexts(symbols, t, j, lookahead), (0, 0))
                if n >= min_count or j == 0:
                    p[t] = b / max(n, 1)
                    break
        out.append((symbols, p))
    return out


def score(lines, probs, threshold):
    """The word-discovery scores of the cuts where `probs` exceed `threshold`."""
    predicted = [word_discovery.segment_utterance(
        s, np.append(p > threshold, 1).astype(np.int8)) for s, p in probs]
    return word_discovery.score_segmentation(lines, predicted)


def tagger_inputs(lines, vocab, lookahead):
    """Padded ids (a start id, then the symbols) and 0/1 labels with their
    weights: the label of input step `i` is the cut after symbol
    `i - 1 - lookahead`, so the tagger has read `lookahead` symbols past it."""
    utterances = [unspaced_with_cuts(line) for line in lines]
    width = max(len(symbols) for symbols, _ in utterances) + 1
    ids = np.zeros((len(lines), width), np.int32)
    labels = np.zeros((len(lines), width), np.float32)
    weights = np.zeros((len(lines), width), np.float32)
    for row, (symbols, cuts) in enumerate(utterances):
        ids[row, : len(symbols) + 1] = [1] + [vocab.get(c, 2) for c in symbols]
        steps = np.arange(cuts.size) + 1 + lookahead
        labels[row, steps], weights[row, steps] = cuts, 1.0
    return ids, labels, weights


def length_batches(lines, vocab, lookahead, batch_size=32):
    """`tagger_inputs` of batches of lines of about the same length (the
    lines sorted by length), each padded to its own longest."""
    order = np.argsort([len(line) for line in lines], kind="stable")
    return [tagger_inputs([lines[i] for i in order[k : k + batch_size]], vocab, lookahead)
            for k in range(0, len(lines), batch_size)], order


def tagger_probabilities(train, valid, test, lookahead, epochs=8, seed=0):
    """Per validation and test line `(symbols, p)`: a 2 x 128 LSTM tagger
    trained on the gold cuts of the training lines, its boundary
    probabilities after reading `lookahead` symbols past each position
    (the epoch of the lowest validation loss kept)."""
    import keras

    keras.utils.set_random_seed(seed)
    symbols = sorted({c for line in train for c in line if c != " "})
    vocab = {c: i + 3 for i, c in enumerate(symbols)}  # 0 padding, 1 start, 2 unseen
    model = keras.Sequential([
        keras.Input((None,), dtype="int32"),
        keras.layers.Embedding(len(vocab) + 3, 64),
        keras.layers.LSTM(128, return_sequences=True),
        keras.layers.LSTM(128, return_sequences=True),
        keras.layers.Dense(1, activation="sigmoid"),
    ])
    model.compile(optimizer=keras.optimizers.Adam(2e-3), loss="binary_crossentropy")
    batches = {name: length_batches(lines, vocab, lookahead)[0]
               for name, lines in (("train", train), ("valid", valid))}
    rng = np.random.default_rng(seed)
    best = (np.inf, model.get_weights())
    for _ in range(epochs):
        for k in rng.permutation(len(batches["train"])):
            x, y, w = batches["train"][k]
            model.train_on_batch(x, y[..., None], sample_weight=w)
        loss = sum(model.test_on_batch(x, y[..., None], sample_weight=w) * w.sum()
                   for x, y, w in batches["valid"])
        if loss < best[0]:
            best = (loss, model.get_weights())
    model.set_weights(best[1])
    out = []
    for lines in (valid, test):
        batched, order = length_batches(lines, vocab, lookahead)
        p = [row for x, _, _ in batched for row in model.predict_on_batch(x)[..., 0]]
        rows = [None] * len(lines)
        for row, i in zip(p, order):
            symbols_, cuts = unspaced_with_cuts(lines[i])
            rows[i] = (symbols_, row[np.arange(cuts.size) + 1 + lookahead])
        out.append(rows)
    return out


def tagger_ceiling(train, valid, test, lookahead):
    """`(threshold, validation F1, test scores)` of the LSTM tagger."""
    valid_probs, test_probs = tagger_probabilities(train, valid, test, lookahead)
    f1, threshold = max((score(valid, valid_probs, t).boundary.f1, t) for t in THRESHOLDS)
    return threshold, f1, score(test, test_probs, threshold)


def agreement(test, causal, segmented):
    """How a segmentation's boundaries fall against the causal count table's.

    Args:
        test: The gold test lines.
        causal: Per line, 0/1 per internal position: the look-ahead-0 table's
            boundaries.
        segmented: The segmenter's test lines (a run's `test_segmented.txt`).

    Returns:
        A dict of fractions: of the gold boundaries the table finds, those
        the segmenter finds too (`decided_recall`); of those the table
        misses, those the segmenter finds (`undecided_recall`); the share of
        the gold boundaries the table misses (`undecided_share`); of the
        table's false boundaries, those the segmenter places too
        (`false_shared`); of the segmenter's false boundaries, those the
        table places too (`false_explained`); of the segmenter's misses,
        those the table misses too (`misses_explained`).
    """
    counts = collections.Counter()
    for gold_line, table_cuts, line in zip(test, causal, segmented):
        _, gold = unspaced_with_cuts(gold_line)
        _, found = unspaced_with_cuts(line)
        for g, c, f in zip(gold.astype(bool), np.asarray(table_cuts, bool), found.astype(bool)):
            counts[g, c, f] += 1

    def fraction(numerator, denominator):
        num = sum(counts[key] for key in numerator)
        return num / max(sum(counts[key] for key in denominator), 1)

    both = (True, False)
    return {
        "decided_recall": fraction([(True, True, True)], [(True, True, f) for f in both]),
        "undecided_recall": fraction([(True, False, True)], [(True, False, f) for f in both]),
        "undecided_share": fraction([(True, False, f) for f in both],
                                    [(True, c, f) for c in both for f in both]),
        "false_shared": fraction([(False, True, True)], [(False, True, f) for f in both]),
        "false_explained": fraction([(False, True, True)], [(False, c, True) for c in both]),
        "misses_explained": fraction([(True, False, False)], [(True, c, False) for c in both]),
    }


def splits():
    """`(train, valid, test)` lists of gold lines (`Utterances.segmented`)."""
    if FLAGS.text_file:
        text = read_text_file(FLAGS.text_file, "text_file")
        return [list(part.segmented) for part in
                split_utterances(Utterances.from_text(text, "text_file"))]
    names = ("train_file", "valid_file", "test_file")
    if not all(FLAGS[name].value for name in names):
        raise app.UsageError("Give --train_file, --valid_file and --test_file, or --text_file.")
    return [list(Utterances.from_text(read_text_file(FLAGS[name].value, name), name).segmented)
            for name in names]


def ceiling(train, valid, test, lookahead, min_count=3):
    """`(k, threshold, validation F1, test scores, test cuts)` of the count
    table that reads `lookahead` symbols after `x_t`, `k` and the threshold
    chosen on the validation lines' boundary F1; the cuts are 0/1 per
    internal position of each test line."""
    table = count_table(train, lookahead)
    best = None
    for k in range(1, MAX_CONTEXT + 1):
        probs = probabilities(table, valid, k, lookahead, min_count)
        for threshold in THRESHOLDS:
            f1 = score(valid, probs, threshold).boundary.f1
            if best is None or f1 > best[0]:
                best = (f1, k, threshold)
    f1_valid, k, threshold = best
    probs = probabilities(table, test, k, lookahead, min_count)
    return k, threshold, f1_valid, score(test, probs, threshold), [p > threshold for _, p in probs]


def report(name, entry):
    """One line of a result: its choices, then the test scores."""
    b, t = entry["boundary"], entry["token"]
    chosen = ", ".join(f"{key}={entry[key]}" for key in ("k", "threshold") if key in entry)
    print(f"{name} ({chosen}; validation F1 {entry['valid_boundary_f1']:.3f}): test boundary "
          f"P {b['precision']:.3f} R {b['recall']:.3f} F1 {b['f1']:.3f}, token F1 "
          f"{t['f1']:.3f}, lexicon F1 {entry['lexicon']['f1']:.3f}")


def main(_):
    if not all(r.isdigit() for r in FLAGS.lookahead):
        raise app.UsageError("--lookahead must list integers >= 0 (symbols after x_t). "
                             f"Received: {','.join(FLAGS.lookahead)}.")
    train, valid, test = splits()
    results = {}
    for lookahead in (int(r) for r in FLAGS.lookahead):
        k, threshold, f1_valid, scores, cuts = ceiling(train, valid, test, lookahead,
                                                       FLAGS.min_count)
        results[f"table_{lookahead}"] = {"k": k, "threshold": threshold,
                                         "valid_boundary_f1": f1_valid, **scores.as_dict()}
        report(f"count table, look-ahead {lookahead}", results[f"table_{lookahead}"])
        if lookahead == 0 and FLAGS.segmented:
            with open(FLAGS.segmented, encoding="utf-8") as f:
                segmented = f.read().splitlines()
            try:  # the same lines, spelled the same, or a clear error
                word_discovery.score_segmentation(test, segmented)
            except ValueError as error:
                raise app.UsageError(f"--segmented={FLAGS.segmented}: {error}") from None
            results["segmented"] = agreement(test, cuts, segmented)
            print("the segmentation against the look-ahead-0 table:", results["segmented"])
        if FLAGS.tagger:
            threshold, f1_valid, scores = tagger_ceiling(train, valid, test, lookahead)
            results[f"tagger_{lookahead}"] = {"threshold": threshold,
                                              "valid_boundary_f1": f1_valid, **scores.as_dict()}
            report(f"LSTM tagger, look-ahead {lookahead}", results[f"tagger_{lookahead}"])
    print(json.dumps(results))


if __name__ == "__main__":
    app.run(main)
