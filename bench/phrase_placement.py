r"""Where the main job's z^2 lands, and what the placement asks of it.

The main job's `BoundaryPlacement` trains `z^2`, at the steps where it
decides (`A^2`: where `z^1` fires or `z^2` fired the step before), towards
the steps whose next symbol is more uncertain than at the average deciding
step (Eq. 1 of `hmkeras.cells.boundary_placement`). This script asks
whether that criterion, or any rule that ranks the word ends by the model's
uncertainty, can put `z^2` on the phrase ends of the embedded corpus. It
reads a main-job run's best weights, passes the run's test text through
the network once (batch 1, state carried, as the test pass does) and
prints:

* `z^2` and its placement targets, scored against the phrase ends (best
  alignment, exact placement, as the run's summary scores them), and
  `z^2` read one step earlier (`one_step_earlier`);
* where `z^2` fires (`firing_places`): the share of its firings at a step
  where `z^1` fires, at the step after one (where the layer below is
  flushed and layer 2 copied: it hands the layer above the summary it
  made one step before), or elsewhere;
* the predictive entropy `H_t` (nats) at the deciding steps of `z^2`, by
  kind of step: a phrase end, another word end, a step inside a word;
* boundaries at the prior's rate of `z^2` (one per `--segment_length`
  steps) put on the `z^1` steps of highest and of lowest `H_t`, against
  the phrase ends: the best a rule that ranks by uncertainty can do;
* for each of several signals of the model's uncertainty around a `z^1`
  step (`word_end_signals`: the entropy and the surprisal at the step and
  the two before it, the larger and the sum of the entropies at the two
  steps before it, the length of the `z^1` segment, its largest
  entropy), `z^2` put on the `z^1` steps where the signal is above (or
  below) a threshold, at the threshold that scores best against the
  phrase ends (`best_threshold`): a bound on any target rule that reads
  that signal alone, chosen with the labels; and beside it `z^2` where
  the signal is above its mean over the `z^1` steps (`mean_threshold`),
  the label-free rule that Eq. (1) would apply to that signal;
* with a run of `--boundary_placement=bidirectional`, which trains a
  backward language model beside the hierarchy, the same for its signals
  (`backward_signals`: its entropy and surprisal at the symbols at and
  before the boundary, given what follows); with `--signal_steps=words`
  every signal is read at the gold word ends instead of the `z^1` steps
  (how well the signal alone tells a phrase end from another word end);
* a linear read-out of the states `[h^1 | .. | h^L]` at the `z^1` steps,
  fitted by least squares to the phrase ends of the first half of the
  text and scored on the second (`state_read_out`): whether what a
  detector reads holds the phrase ends at all. Both use the labels: they
  are diagnostics, not segmenters.

No label is used by the model; the phrase ends score, and choose only
the diagnostics' thresholds and read-out.

    python examples/ptb_char.py --preset=quick --output_dir=runs/quick_hmlstm
    python bench/phrase_placement.py --run_dir=runs/quick_hmlstm
    python examples/ptb_char.py --preset=quick --boundary_placement=bidirectional \
        --output_dir=runs/quick_bidirectional
    python bench/phrase_placement.py --run_dir=runs/quick_bidirectional --signal_steps=words

Figures: `docs/results/char-lm.md`, "Why z^2 does not mark the phrases".
"""

import json
import os

from absl import app
from absl import flags
from keras import ops
import numpy as np

from hmkeras.analysis import boundary_metrics
from hmkeras.analysis.corpus_references import synthetic_references
from hmkeras.analysis.word_discovery_report import backward_log_probs
from hmkeras.analysis.word_discovery_report import batch_one_pass
from hmkeras.analysis.word_discovery_report import entropies_of
from hmkeras.analysis.word_discovery_report import signal_terms
from hmkeras.data.char_splits import word_separators
from hmkeras.data.synthetic_corpus import SyntheticHierarchicalCorpus

from trained_run import load_model

FLAGS = flags.FLAGS
flags.DEFINE_string("run_dir", None, "A --dataset=synthetic hmlstm run of examples/ptb_char.py.")
flags.DEFINE_integer("segment_length", 15, "The prior's segment length of z^2 (the main job's).",
                     lower_bound=1)
flags.DEFINE_enum("signal_steps", "z1", ["z1", "words"],
                  "Where the signals are read: at the steps where z^1 fires, or at the "
                  "gold word ends (last-separator alignment): the signals' own "
                  "separation of the phrase ends, wherever z^1 lands.")
flags.mark_flags_as_required(["run_dir"])

KINDS = ("phrase end", "other word end", "inside a word")


def step_kinds(words, phrases):
    """Each step's kind (an index into `KINDS`): a phrase end, another word
    end, or neither, a unit's end in any of the references' alignments
    (`{alignment: 0/1 array}`, as `synthetic_references` gives them)."""
    ends = lambda references: np.max(np.stack(list(references.values())), axis=0) > 0
    phrase_end, word_end = ends(phrases), ends(words)
    return np.where(phrase_end, 0, np.where(word_end, 1, 2))


def one_step_earlier(boundaries):
    """`boundaries` moved one step back: a firing at step `t + 1` read as
    one at `t` (a firing at the first step is dropped)."""
    return np.concatenate([boundaries[1:], [0]]).astype(boundaries.dtype)


def firing_places(z):
    """The shares of `z^2`'s firings (`z[:, 1]`) at a step where `z^1`
    fires, at the step after one (`z^1` fired at `t - 1`, not at `t`) and
    elsewhere; zeros when `z^2` never fires."""
    fired = z[:, 1] > 0
    with_z1 = fired & (z[:, 0] > 0)
    after_z1 = fired & (z[:, 0] == 0) & np.concatenate([[False], z[:-1, 0] > 0])
    count = max(int(fired.sum()), 1)
    return {"at a z^1 step": float(with_z1.sum() / count),
            "the step after a z^1 step": float(after_z1.sum() / count),
            "elsewhere": float((fired & ~with_z1 & ~after_z1).sum() / count)}


def placement_targets(entropy, z):
    """Eq. (1)'s targets of `z^2`: 1 at its deciding steps `A^2` whose
    entropy is above the mean over `A^2`; 0 elsewhere. `z`: the `(T, 2)`
    0/1 boundaries."""
    previous = np.concatenate([[0], z[:-1, 1]])
    deciding = np.maximum(z[:, 0], previous) > 0
    return (deciding & (entropy > entropy[deciding].mean())).astype(int), deciding


def ranked_boundaries(score, candidates, count, lowest=False):
    """0/1 per step: `count` boundaries at the `candidates` (a 0/1 mask)
    of highest `score` (of lowest with `lowest`); ties by position."""
    where = np.flatnonzero(candidates)
    order = np.argsort(score[where] if lowest else -score[where], kind="stable")
    boundaries = np.zeros(len(score), int)
    boundaries[where[order[:count]]] = 1
    return boundaries


def word_end_signals(entropy, surprisal, z1):
    """`(steps, {name: values})`: the steps `t` at which `z^1` fires (a
    0/1 array) past the window's first two, and per such step the
    signals of the model's uncertainty around it. `entropy[t]` is `H_t`
    (nats) of the prediction of symbol `t + 1`, `surprisal[t]` the
    surprisal `S_t` of the symbol that does come. A `z^1` segment is the
    steps after the previous `z^1` step, up to `t`."""
    steps = np.flatnonzero(z1)
    steps = steps[steps >= 2]
    starts = np.concatenate([[-1], steps[:-1]]) + 1
    largest = np.array([entropy[a:b].max() if b > a else 0.0 for a, b in zip(starts, steps)])
    return steps, {
        "H_t": entropy[steps],
        "H_{t-1}": entropy[steps - 1],
        "H_{t-2}": entropy[steps - 2],
        "max(H_{t-1}, H_{t-2})": np.maximum(entropy[steps - 1], entropy[steps - 2]),
        "H_{t-1} + H_{t-2}": entropy[steps - 1] + entropy[steps - 2],
        "S_{t-1} (of the symbol read at t)": surprisal[steps - 1],
        "S_{t-2}": surprisal[steps - 2],
        "segment length": (steps - starts + 1).astype(float),
        "segment's largest H before t": largest,
    }


def backward_terms(lm, ids):
    """`(entropy, surprisal)` of the backward language model (a run with
    `--boundary_placement=bidirectional`) per symbol `j` of `ids`: the
    entropy (nats) of its prediction of symbol `j` from the symbols after
    it, read from the end of `ids` in one pass, and the surprisal of the
    symbol `ids[j]` under it; NaN at the last symbol, which it reads
    first and never predicts."""
    ids = np.asarray(ids)
    # Reversed back, row j + 1 predicts symbol j (the model's output after
    # the symbols j + 1 .. end, last first).
    log_probs = backward_log_probs(lm, ids)[::-1][1:]
    entropy = np.append(entropies_of(log_probs), np.nan)
    surprisal = np.append(-log_probs[np.arange(len(ids) - 1), ids[:-1]], np.nan)
    return entropy, surprisal


def backward_signals(entropy, backward_entropy, backward_surprisal, steps):
    """`{name: values}` per `z^1` step of `steps` (each before the text's
    second-to-last step): the backward model's uncertainty about the
    symbols at and before the boundary after step `t`, given what follows
    (`backward_terms`), and two sums of a backward and a forward entropy
    (`entropy`, `H_t` of `word_end_signals`)."""
    return {
        "Hb_{t+1} (backwards)": backward_entropy[steps + 1],
        "Hb_t (backwards)": backward_entropy[steps],
        "Hb_{t-1} (backwards)": backward_entropy[steps - 1],
        "Hb_{t-2} (backwards)": backward_entropy[steps - 2],
        "Sb_t (backwards)": backward_surprisal[steps],
        "Sb_{t-1} (backwards)": backward_surprisal[steps - 1],
        "H_{t-2} + Hb_{t-1}": entropy[steps - 2] + backward_entropy[steps - 1],
        "H_t + Hb_t": entropy[steps] + backward_entropy[steps],
    }


def chosen_scores(chosen, steps, references, length):
    """`{"rate", "precision", "recall", "f1"}` against `references`
    (`{alignment: 0/1 array}`) of boundaries at the `steps` where
    `chosen` is true, in a text of `length` steps."""
    boundaries = np.zeros(length, int)
    boundaries[steps[chosen]] = 1
    s = boundary_metrics.aligned_boundary_scores(boundaries, references).headline
    return {"rate": float(boundaries.mean()), "precision": s.precision, "recall": s.recall,
            "f1": s.f1}


def best_threshold(values, steps, references, length):
    """The best boundary F1 against `references` (`{alignment: 0/1
    array}`) of boundaries at the `steps` whose `values` lie above a
    threshold, or below one, over the thresholds at the 1 %-99 %
    quantiles: `{"direction", "threshold", "rate", "precision",
    "recall", "f1"}`."""
    best = {"f1": -1.0}
    for threshold in np.unique(np.quantile(values, np.linspace(0.01, 0.99, 99))):
        for direction, chosen in (("above", values > threshold), ("below", values < threshold)):
            scores = chosen_scores(chosen, steps, references, length)
            if scores["f1"] > best["f1"]:
                best = {"direction": direction, "threshold": float(threshold), **scores}
    return best


def mean_threshold(values, steps, references, length):
    """`chosen_scores` of boundaries at the `steps` whose `values` lie
    above their mean over the `steps`: the rule of Eq. (1) applied to
    another signal, which needs no label."""
    return chosen_scores(values > values.mean(), steps, references, length)


def state_read_out(states, steps, is_phrase_end, length):
    """Boundaries from a linear read-out of `states` (`(T, features)`) at
    the `steps`, fitted by least squares to `is_phrase_end` (+1 / -1 per
    step of `steps`) on the first half of the steps; 0/1 per step of a
    text of `length`, set on the second half only, and the index of the
    first step of that half."""
    features = np.concatenate([states[steps], np.ones((len(steps), 1))], axis=1)
    half = len(steps) // 2
    weights = np.linalg.lstsq(features[:half], np.where(is_phrase_end[:half], 1.0, -1.0),
                              rcond=None)[0]
    boundaries = np.zeros(length, int)
    boundaries[steps[half:][features[half:] @ weights > 0]] = 1
    return boundaries, steps[half]


def main(_):
    with open(os.path.join(FLAGS.run_dir, "settings.json")) as f:
        settings = json.load(f)
    lm, vocab = load_model(FLAGS.run_dir)
    corpus = SyntheticHierarchicalCorpus(
        seed=settings["seed"], train_chars=settings["synthetic_train_chars"],
        valid_chars=settings["synthetic_valid_chars"],
        test_chars=settings["synthetic_test_chars"])
    text = corpus.text("test")
    ids = np.asarray(vocab.encode(text), np.int32)
    outputs, log_probs = batch_one_pass(lm, ids)
    entropy = entropies_of(log_probs)
    surprisal = np.append(signal_terms(log_probs, ids)[1], 0.0)  # S_t; none after the last
    z = (ops.convert_to_numpy(lm.boundaries(outputs))[:, :2] > 0.5).astype(int)
    references = synthetic_references(corpus, "test", text, word_separators("synthetic"))
    phrases = {name: values[: len(z)] for name, values in references["phrases"].items()}
    words = {name: values[: len(z)] for name, values in references["words"].items()}
    targets, deciding = placement_targets(entropy, z)
    kinds = step_kinds(words, phrases)
    count = round(len(z) / FLAGS.segment_length)
    rows = {
        "z^2 (the trained detector)": z[:, 1],
        "z^2 read one step earlier": one_step_earlier(z[:, 1]),
        "Eq. (1) targets of z^2 (H_t above the mean over A^2)": targets,
        f"the {count} z^1 steps of highest H_t (the prior's rate)":
            ranked_boundaries(entropy, z[:, 0], count),
        f"the {count} z^1 steps of lowest H_t": ranked_boundaries(entropy, z[:, 0], count, True),
        "z^1 where it meets a phrase end (an oracle)": z[:, 0] * (kinds == 0),
    }
    print(f"{'against the phrase ends':58s}  rate      P      R     F1")
    results = {}
    for name, boundaries in rows.items():
        s = boundary_metrics.aligned_boundary_scores(boundaries, phrases).headline
        results[name] = {"rate": float(boundaries.mean()), "precision": s.precision,
                         "recall": s.recall, "f1": s.f1}
        print(f"{name:58s} {boundaries.mean():5.3f} {s.precision:6.3f} {s.recall:6.3f} {s.f1:6.3f}")
    places = firing_places(z)
    results["z^2 fires"] = places
    print("z^2 fires " + ", ".join(f"{share:.3f} {where}" for where, share in places.items()))
    print(f"\n{'H_t (nats) at the deciding steps of z^2':40s}  steps    10%    50%    90%")
    for index, kind in enumerate(KINDS):
        values = entropy[deciding & (kinds == index)]
        quantiles = np.quantile(values, [0.1, 0.5, 0.9]) if len(values) else [np.nan] * 3
        results[f"H at deciding steps: {kind}"] = [float(q) for q in quantiles]
        print(f"{kind:40s} {len(values):6d} " + " ".join(f"{q:6.3f}" for q in quantiles))
    title = f"the best threshold on one signal at the {FLAGS.signal_steps} steps"
    print(f"\n{title:46s} direction  rate      P      R     F1"
          "   above its mean: rate      P      R     F1")
    ends = np.array(z[:, 0] if FLAGS.signal_steps == "z1" else words["last_separator"])
    if lm.backward_language_model is not None:
        ends[len(ends) - 2:] = 0  # the backward signals read the step after
    steps, signals = word_end_signals(entropy, surprisal, ends)
    if lm.backward_language_model is not None:
        signals.update(backward_signals(entropy, *backward_terms(lm, ids), steps))
    for name, values in signals.items():
        best = best_threshold(values, steps, phrases, len(z))
        above = mean_threshold(values, steps, phrases, len(z))
        results[f"best threshold: {name}"] = best
        results[f"above its mean: {name}"] = above
        print(f"{name:46s} {best['direction']:9s} {best['rate']:5.3f} {best['precision']:6.3f} "
              f"{best['recall']:6.3f} {best['f1']:6.3f}" + " " * 16
              + f"{above['rate']:5.3f} {above['precision']:6.3f} {above['recall']:6.3f} "
              f"{above['f1']:6.3f}")
    states = outputs[:, :sum(lm.hierarchical_cell.units)]
    is_phrase_end = kinds[steps] == 0
    boundaries, first = state_read_out(states, steps, is_phrase_end, len(z))
    second_half = {name: np.where(np.arange(len(z)) >= first, values, 0)
                   for name, values in phrases.items()}
    s = boundary_metrics.aligned_boundary_scores(boundaries, second_half).headline
    results["linear read-out of the states (second half)"] = {
        "precision": s.precision, "recall": s.recall, "f1": s.f1}
    print(f"{'linear read-out of [h^1..h^L], second half':46s} {'':9s} "
          f"{boundaries[first:].mean():5.3f} {s.precision:6.3f} {s.recall:6.3f} {s.f1:6.3f}")
    print(json.dumps(results))


if __name__ == "__main__":
    app.run(main)
