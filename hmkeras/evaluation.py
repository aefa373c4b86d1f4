"""Bits per character with the state carried over a whole text.

`evaluate_char_model` scores a `hmkeras.char_language_model.CharLanguageModel`
the way Kadar et al. (2018, Sec. 3.1) evaluate the HM-LSTM: batch size 1,
the text read in consecutive chunks of 100 characters, and the RNN state
(boundaries included) carried from each chunk to the next over the whole
test set, so every character but the first is predicted exactly once from
its entire past.  BPC is the mean of `-log2 p(x_{t+1} | x_{<=t})` over the
`len(ids) - 1` targets.

For hierarchical cells it also gathers the boundaries `z^l_t` of every step
and reports, via `hmkeras.boundary_metrics`, the per-layer z-rates, the
z-ratio (Kadar et al. Table 2) and, given a reference segmentation (spaces of
real text, `_` of PTB char, the true word ends of the synthetic corpus),
boundary precision / recall / F1 of every layer.  The boundary at position
`t` is the one emitted while reading `ids[t]`; `reference[t]` must use the
same alignment.

The batch-1 pass runs one `tf.function` per chunk with the state passed in
and out explicitly (no retracing: the last chunk is padded and weighted 0),
under a `keras.utils.Progbar`.

`batch_size > 1` splits the text into that many contiguous rows, each
carrying its own state (the truncated-BPTT layout): much faster, used for
validation during training; the last `< batch_size * seq_len` characters
are then left out (`num_targets` says how many were scored).

Example:

>>> import numpy as np
>>> from hmkeras.char_language_model import CharLanguageModel
>>> lm = CharLanguageModel(vocab_size=4, cell="hmlstm", units=4,
...                        embedding_dim=3, output_units=4, seed=1)
>>> ids = np.array([0, 1, 2, 3] * 30)
>>> result = evaluate_char_model(lm, ids, seq_len=50, verbose=0)
>>> result.num_targets, 1.5 < result.bpc < 2.5, len(result.z_rates)
(119, True, 2)
"""

import dataclasses
import math

import keras
import numpy as np
import tensorflow as tf

from hmkeras import boundary_metrics
from hmkeras.data.pipeline import EvaluationChunks
from hmkeras.data.pipeline import TruncatedBPTTBatches

_LN2 = math.log(2.0)


@dataclasses.dataclass
class EvaluationResult:
    """Figures of one evaluation pass.

    Attributes:
        bpc: Bits per character.
        num_targets: Number of predicted characters.
        z_rates: Per boundary layer, the frequency of `z^l = 1` (None for
            non-hierarchical cells).
        z_ratio: `rate(z^1) / rate(z^2)` (None with fewer than 2 boundary
            layers).
        boundary_scores: Per boundary layer, a dict of precision / recall /
            f1 (+ counts) against the reference, or None.
        boundaries: The `(T, L-1)` boundaries (batch 1 only, if asked for).
    """

    bpc: float
    num_targets: int
    z_rates: list = None
    z_ratio: float = None
    boundary_scores: list = None
    boundaries: np.ndarray = dataclasses.field(default=None, repr=False)

    def as_dict(self):
        """JSON-able figures (without the boundaries array)."""
        out = dataclasses.asdict(self)
        out.pop("boundaries")
        return out


class ChunkScorer:
    """A compiled function scoring one chunk from an explicit state.

    `scorer(inputs, targets, weights, state) -> (bits, boundaries, state)`
    where `bits` is `sum(weights * -log2 p(targets))`, `boundaries` the
    `(batch, T, L-1)` boundaries (empty for non-hierarchical cells).
    """

    def __init__(self, language_model):
        self.language_model = language_model
        network = language_model.network
        hierarchical = language_model.is_hierarchical

        @tf.function(reduce_retracing=True)
        def score(inputs, targets, weights, state):
            logits, rnn_outputs, *new_state = network(
                [inputs, *state], training=False
            )
            nats = tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=targets, logits=tf.cast(logits, tf.float32)
            )
            bits = tf.reduce_sum(nats * weights) / _LN2
            if hierarchical:
                z = language_model.boundaries(rnn_outputs)
            else:
                z = tf.zeros(tf.concat([tf.shape(inputs), [0]], 0))
            return bits, z, new_state

        self._score = score

    def __call__(self, inputs, targets, weights, state):
        return self._score(inputs, targets, weights, list(state))


def evaluate_char_model(
    language_model,
    ids,
    seq_len=100,
    batch_size=1,
    reference=None,
    tolerance=0,
    keep_boundaries=False,
    verbose=1,
):
    """BPC (and boundary figures) of a model over a whole id stream.

    Args:
        language_model: A `CharLanguageModel`.
        ids: 1-D int ids of the whole text (e.g. `vocab.encode(test_text)`;
            `CharVocabulary.encode` refuses symbols outside the training
            vocabulary).
        seq_len: Chunk length (100, as Kadar et al.).
        batch_size: 1 (Kadar et al.'s protocol, every target scored) or more
            (contiguous rows with separate states; faster, drops the tail).
        reference: Optional 0/1 array `(len(ids),)` of reference boundaries,
            aligned with the inputs (see the module docstring); batch 1 only.
        tolerance: Matching tolerance of the boundary scores, in steps.
        keep_boundaries: Whether to return the `(T, L-1)` boundaries.
        verbose: 1 shows a `keras.utils.Progbar`.

    Returns:
        An `EvaluationResult`.
    """
    ids = np.asarray(ids)
    if reference is not None and batch_size != 1:
        raise ValueError("`reference` boundary scores need batch_size=1.")
    scorer = ChunkScorer(language_model)
    state = [tf.constant(s) for s in language_model.zero_state(batch_size)]
    if batch_size == 1:
        chunks = EvaluationChunks(ids, seq_len=seq_len)
        dataset = chunks.dataset(remainder="pad")
        num_chunks = chunks.num_chunks("pad")
        num_targets = chunks.num_targets
    else:
        batches = TruncatedBPTTBatches(ids, batch_size=batch_size, seq_len=seq_len)
        dataset = batches.dataset().map(
            lambda x, y: (x, y, tf.ones_like(x, tf.float32))
        )
        num_chunks = batches.num_batches
        num_targets = batches.num_batches * seq_len * batch_size
    progbar = keras.utils.Progbar(
        num_chunks, verbose=verbose, unit_name="chunk", stateful_metrics=["bpc"]
    )
    total_bits, scored, collected = 0.0, 0.0, []
    for index, (x, y, w) in enumerate(dataset):
        bits, z, state = scorer(x, y, w, state)
        total_bits += float(bits)
        scored += float(tf.reduce_sum(w))
        if language_model.is_hierarchical:
            z = z.numpy()
            if batch_size == 1:
                collected.append(z[0][w.numpy()[0] > 0])
            else:
                collected.append(z.reshape(-1, z.shape[-1]))
        progbar.update(index + 1, [("bpc", total_bits / scored)])
    result = EvaluationResult(bpc=total_bits / num_targets, num_targets=num_targets)
    if not language_model.is_hierarchical:
        return result
    z = np.concatenate(collected, axis=0)
    result.z_rates = [float(r) for r in boundary_metrics.z_rates(z)]
    if z.shape[-1] >= 2:
        result.z_ratio = float(boundary_metrics.z_ratio(z))
    if reference is not None:
        reference = np.asarray(reference)[: z.shape[0]]
        if reference.shape[0] != z.shape[0]:
            raise ValueError(
                f"`reference` must have one value per input id ({len(ids)}). "
                f"Received: {np.asarray(reference).shape[0]}"
            )
        result.boundary_scores = [
            boundary_metrics.boundary_scores(z[:, layer], reference, tolerance)._asdict()
            for layer in range(z.shape[-1])
        ]
    if keep_boundaries:
        result.boundaries = z
    return result
