"""The word-discovery section of a character language model's results.

A model trained on unsegmented utterances (`hmkeras.data.Utterances`: the
lines without their spaces, a line end after each) reads the test text
once at batch 1 from a zero state (Kadar et al.'s protocol); what it
marks is cut back into utterances and scored against the gold words in
the field's conventions (`hmkeras.analysis.word_discovery`), side by side
with baselines computed on the same test lines:

* `"z1"` (hierarchical cells): the bottom boundary layer's segmentation.
  `z^1_t = 1` ends a segment at step `t` (Chung et al. Eq. 2: the layer
  flushes at `t + 1`), so a word ends after the symbol it fires on; the
  alignment is fixed by that definition, not chosen on the test words.
  At an utterance's last symbol the line end ends the word anyway.
* `"z2"` (three layers or more): the same for `z^2`.
* `"entropy"`: the words read from the model's own predictions, a
  boundary after each symbol at which the predictive entropy of the next
  symbol rises (`entropy_segmentation`, rule `"rise"`; Elman 1990): for
  a model without boundaries (an LSTM) its segmentation.
* `"surprisal"`: the same rule on the signal `v_t = H_t + (S_t -
  H_{t+1}) / 2` that `hmkeras.BoundaryPlacement(form="surprisal")` trains
  `z^1` towards (Eq. 3: `S_t` the surprisal of the symbol that follows);
  it reads one symbol ahead, which `z^1` cannot.
* `"bidirectional"` (a model trained with `BoundaryPlacement(form=
  "bidirectional")`): the rule of its Eq. (4), the surprisal signal's rise
  read forwards on the model's predictions and backwards on its backward
  language model's (`word_discovery.bidirectional_segmentation`), at the
  threshold of the model's placement (its `rise_fraction`): what `z^1` is
  trained towards; it reads the whole utterance.
* `"random"`: a boundary at each position with the test text's gold
  boundary rate (the usual chance baseline; it is told that rate).
* `"transition_probability"`: Saffran et al. (1996), a boundary at each
  local minimum of the forward transitional probability of the training
  text's symbol pairs.

Examples:

    >>> from hmkeras.data.utterances import Utterances
    >>> test = Utterances.from_text("ab c\\nd ef\\n")
    >>> stream_segmentation(test, [0, 1, 1, 0, 1, 0, 0])  # one value per input symbol
    ['ab c', 'd ef']
"""

import numpy as np
import tensorflow as tf
from keras import ops

from hmkeras.analysis import word_discovery
from hmkeras.cells import boundary_placement

#: The segmenters of `word_discovery_results`, in the order of the summary.
SEGMENTERS = ("z1", "z2", "entropy", "surprisal", "bidirectional", "random",
              "transition_probability")


def _utterance_slices(utterances):
    """`(start, length)` in the stream `utterances.text` of every
    utterance's symbols (its line end follows at `start + length`)."""
    slices, start = [], 0
    for line in utterances.segmented:
        length = len(line) - line.count(" ")
        slices.append((start, length))
        start += length + 1
    return slices


def stream_segmentation(utterances, boundaries):
    """The segmented lines of a per-symbol boundary stream.

    Args:
        utterances: The `Utterances` read, as the stream
            `utterances.text`.
        boundaries: One value per input symbol of that stream (at least
            every symbol but the final line end); a value > 0.5 after
            symbol `t` ends a word there.

    Returns:
        A list of lines, the symbols of each utterance with a space after
        every word that ends inside it.
    """
    boundaries = np.asarray(boundaries) > 0.5
    needed = len(utterances.text) - 1
    if boundaries.ndim != 1 or boundaries.shape[0] < needed:
        raise ValueError(
            f"`boundaries` must hold one value per input symbol ({needed}). "
            f"Received shape {boundaries.shape}.")
    lines = []
    for line, (start, length) in zip(utterances.unspaced, _utterance_slices(utterances)):
        cuts = boundaries[start: start + length].astype(np.int8)
        cuts[-1] = 1  # the line end ends the last word
        lines.append(word_discovery.segment_utterance(line, cuts))
    return lines


def utterance_values(utterances, values):
    """A per-symbol stream of values (e.g. entropies) cut into one array per
    utterance (its line end's value left out)."""
    values = np.asarray(values)
    return [values[start: start + length] for start, length in _utterance_slices(utterances)]


def batch_one_pass(lm, ids, chunk=1000):
    """`(rnn_outputs, log_probs)` of `lm` reading the symbol ids `ids` at
    batch 1 from a zero state, the state carried between chunks of
    `chunk` steps: per step, the recurrent layer's outputs and the
    log-probabilities (nats, float64) of the prediction of the next
    symbol. One compiled function; the last chunk is padded, which changes
    no step before the padding."""
    ids = np.asarray(ids, np.int32)
    step = tf.function(lambda x, state: lm.network([x, *state], training=False))
    state, outputs, log_probs = [tf.constant(s) for s in lm.zero_state(1)], [], []
    for start in range(0, ids.shape[0], chunk):
        part = ids[start: start + chunk]
        logits, rnn_outputs, *state = step(
            tf.constant(np.pad(part, [0, chunk - len(part)])[None]), state)
        outputs.append(rnn_outputs[0, :len(part)].numpy())
        log_probs.append(tf.nn.log_softmax(tf.cast(logits[0, :len(part)], tf.float64)).numpy())
    return np.concatenate(outputs), np.concatenate(log_probs)


def entropies_of(log_probs):
    """`H_t = -sum_k p_k log p_k` (nats, float64) of each row of
    `log_probs` (`hmkeras.cells.boundary_placement.predictive_entropy`)."""
    return ops.convert_to_numpy(
        boundary_placement.predictive_entropy(np.asarray(log_probs), "float64"))


def predictive_entropies(lm, ids, chunk=1000):
    """`H_t` in nats of `lm`'s prediction of symbol `t + 1`, for every input
    `t` of `ids[:-1]` (`batch_one_pass`)."""
    return entropies_of(batch_one_pass(lm, np.asarray(ids)[:-1], chunk)[1])


def signal_terms(log_probs, ids):
    """`(H_t, S_t, H_{t+1})` in nats for every input `t` of `ids[:-1]`,
    from the `log_probs` of a pass over all of `ids` (`batch_one_pass`):
    the entropy of the prediction of symbol `t + 1`, the surprisal of the
    symbol `ids[t + 1]` that does come, and the entropy after it."""
    ids = np.asarray(ids)
    entropy = entropies_of(log_probs)  # H_0 .. H_{T-1}
    surprisal = -log_probs[np.arange(len(ids) - 1), ids[1:]]  # S_0 .. S_{T-2}
    return entropy[:-1], surprisal, entropy[1:]


def surprisal_signal(log_probs, ids):
    """`v_t = H_t + (S_t - H_{t+1}) / 2` (`hmkeras.BoundaryPlacement`, form
    `"surprisal"`, Eq. 3) for every input `t` of `ids[:-1]`, from the
    `log_probs` of a pass over all of `ids`: the placement's own
    `rise_signal` on a batch of one, in float64.

    Examples:

        >>> import numpy as np
        >>> log_probs = np.log(np.full((3, 2), 0.5))  # uniform: H = S = log 2, v = log 2
        >>> np.round(surprisal_signal(log_probs, [0, 1, 0]), 4)
        array([0.6931, 0.6931])
    """
    log_probs = np.asarray(log_probs, np.float64)[None]  # normalized: its own logits
    entropy = boundary_placement.predictive_entropy(log_probs, "float64")[..., None]
    signal = boundary_placement.rise_signal(entropy, log_probs, np.asarray(ids)[None])
    return ops.convert_to_numpy(signal)[0, :, 0]


def backward_log_probs(lm, ids):
    """The log-probabilities (nats, float64) of the backward language
    model's predictions over the stream `ids` read last symbol first, in
    its reading order (row `k` predicts `ids[::-1][k + 1]`), or None for a
    model without one.

    The backward model reads the whole stream in one compiled pass (Keras'
    predict function) from its zero state.
    """
    if lm.backward_language_model is None:
        return None
    logits = lm.backward_language_model.predict_on_batch(np.asarray(ids, np.int32)[None])[0]
    return ops.convert_to_numpy(ops.log_softmax(ops.cast(logits, "float64"), axis=-1))


def backward_signal(lm, ids):
    """The backward language model's surprisal signal (Eq. 3 on its
    predictions, `backward_log_probs`) over the stream `ids` read last
    symbol first, one value per symbol of `ids` in that reversed order
    (the last, about the symbol before the stream, 0), or None for a model
    without one."""
    log_probs = backward_log_probs(lm, ids)
    if log_probs is None:
        return None
    return np.append(surprisal_signal(log_probs, np.asarray(ids)[::-1]), 0.0)


def reversed_utterance_values(utterances, reversed_values):
    """A per-symbol stream of values over the reversed stream cut into one
    array per utterance, each in the utterance's reversed order."""
    total = len(reversed_values)
    return [reversed_values[total - start - length: total - start]
            for start, length in _utterance_slices(utterances)]


def utterance_signals(lm, utterances, ids, log_probs):
    """`(forward, backward)`: the surprisal signal (Eq. 3) cut into one
    array per utterance, read forwards on `lm`'s predictions (`log_probs`,
    of `batch_one_pass` over the stream `ids` of `utterances`) and, each
    utterance in its reversed order, on its backward language model's
    (`backward_signal`; None for a model without one)."""
    forward = utterance_values(utterances, surprisal_signal(log_probs, ids))
    backward = backward_signal(lm, ids)
    if backward is not None:
        backward = reversed_utterance_values(utterances, backward)
    return forward, backward


def bidirectional_targets(lm, utterances, forward, backward):
    """The lines `z^1` of `lm` is trained towards on `utterances`: the rule
    of Eq. (4) (`word_discovery.bidirectional_segmentation`) on the
    `utterance_signals` `forward` and `backward`, at the threshold of the
    model's placement (its `rise_fraction`)."""
    return word_discovery.bidirectional_segmentation(
        utterances.unspaced, forward, backward,
        rise_fraction=lm.boundary_placement.rise_fraction)


def word_discovery_results(lm, vocab, utterances, boundaries=None, seed=0):
    """Every segmenter's words on the test utterances, scored.

    Args:
        lm: The trained `CharLanguageModel`.
        vocab: Its `CharVocabulary`.
        utterances: `{"train": Utterances, "test": Utterances, ...}`.
        boundaries: The `(T, L-1)` boundaries of the batch-1 test pass
            (`evaluate_char_model(..., keep_boundaries=True)`), or None for
            a model without boundaries.
        seed: Seed of the random baseline.

    Returns:
        `(results, segmentations)`: the JSON-able `results` has per
        segmenter (`SEGMENTERS`, those that apply) its scores
        (`WordDiscoveryScores.as_dict()`) and `rate` (boundaries per
        utterance-internal position), plus `gold_rate`, `num_utterances`,
        `primary` (`"z1"`, or `"entropy"` without boundaries) and whether
        the text has gold words at all (`scored`: False for a text without
        spaces, whose segmentations are returned unscored);
        `segmentations` maps each segmenter to its lines.
    """
    test, train = utterances["test"], utterances["train"]
    segmentations = {}
    if boundaries is not None:
        for layer in range(min(2, boundaries.shape[1])):
            segmentations[f"z{layer + 1}"] = stream_segmentation(test, boundaries[:, layer])
    ids = vocab.encode(test.text)
    log_probs = batch_one_pass(lm, ids)[1]  # H_t of the last symbol is not read
    forward, backward = utterance_signals(lm, test, ids, log_probs)
    segmentations["entropy"] = word_discovery.entropy_segmentation(
        test.unspaced, utterance_values(test, entropies_of(log_probs)[:-1]), rule="rise")
    segmentations["surprisal"] = word_discovery.entropy_segmentation(
        test.unspaced, forward, rule="rise")
    if backward is not None:
        segmentations["bidirectional"] = bidirectional_targets(lm, test, forward, backward)
    gold_rate = word_discovery.boundary_rate(test.segmented)
    segmentations["random"] = word_discovery.random_segmentation(
        test.unspaced, gold_rate, seed)
    segmentations["transition_probability"] = (
        word_discovery.transition_probability_segmentation(train.unspaced, test.unspaced))
    results = {"primary": "z1" if boundaries is not None else "entropy",
               "scored": test.has_words, "gold_rate": gold_rate,
               "num_utterances": len(test)}
    for name, lines in segmentations.items():
        entry = {"rate": word_discovery.boundary_rate(lines)}
        if test.has_words:
            entry.update(word_discovery.score_segmentation(test.segmented, lines).as_dict())
        results[name] = entry
    return results, segmentations


def write_segmented(path, lines):
    """Writes `lines` to `path`, one per line (UTF-8); returns `path`."""
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(line + "\n" for line in lines)
    return path
