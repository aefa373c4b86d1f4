"""Bits per character with the state carried over a whole text.

`evaluate_char_model` scores a `hmkeras.models.char_language_model.CharLanguageModel`
the way Kadar et al. (2018, Sec. 3.1) evaluate the HM-LSTM: batch size 1,
the text read in consecutive chunks of 100 characters, and the RNN state
(boundaries included) carried from each chunk to the next over the whole
test set, so every character but the first is predicted exactly once from
its entire past.  BPC is the mean of `-log2 p(x_{t+1} | x_{<=t})` over the
`len(ids) - 1` targets.

For hierarchical cells it also gathers the boundaries `z^l_t` of every step
and reports, via `hmkeras.analysis.boundary_metrics`, the per-layer z-rates, the
z-ratio (Kadar et al. Table 2) and, given a reference segmentation (spaces of
real text, `_` of PTB char, the true word ends of the synthetic corpus),
boundary precision / recall / F1 of every layer.  The boundary at position
`t` is the one emitted while reading `ids[t]`; `reference[t]` must use the
same alignment.  A model may put its boundaries on the separator or on the
last character of each word: give the reference in both alignments (a dict)
and every layer is headlined by the one it matches best.

With `return_losses=True` (batch 1) the same pass also keeps the loss of
every target, in bits: `result.losses[t] = -log2 p(ids[t + 1] | ids[:t + 1])`,
aligned with `ids[1:]`, whose mean is the BPC.  These are what
`hmkeras.analysis.surprisal_analysis.surprisal_recovery` takes (Krause et al.
Section 4.2, Fig. 3).  `EvaluationResult.word_level(num_words)` turns the BPC
into bits per word and word perplexity (Krause et al. Eq. 23).

The batch-1 pass runs one compiled function per chunk (`tf.function` on
TensorFlow, `jax.jit` on JAX) with the state passed in and out explicitly
(no retracing: the last chunk is padded and weighted 0), under a
`keras.utils.Progbar`.

`batch_size > 1` splits the text into that many contiguous rows, each
carrying its own state (the truncated-BPTT layout): much faster, used for
validation during training; the last `< batch_size * seq_len` characters
are then left out (`num_targets` says how many were scored).

Examples:

    >>> import numpy as np
    >>> from hmkeras.models.char_language_model import CharLanguageModel
    >>> lm = CharLanguageModel(vocab_size=4, cell="hmlstm", units=4,
    ...                        embedding_dim=3, output_units=4, seed=1)
    >>> ids = np.array([0, 1, 2, 3] * 30)
    >>> result = evaluate_char_model(lm, ids, seq_len=50, verbose=0,
    ...                              return_losses=True)
    >>> result.num_targets, 1.5 < result.bpc < 2.5, len(result.z_rates)
    (119, True, 2)
    >>> result.losses.shape, bool(np.isclose(result.losses.mean(), result.bpc))
    ((119,), True)
    >>> words = result.word_level(num_words=30)
    >>> bool(np.isclose(words.bits_per_word, result.bpc * 120 / 30))
    True
"""

import dataclasses

import keras
import numpy as np
import tensorflow as tf

from hmkeras.analysis import bits
from hmkeras.analysis import boundary_metrics
from hmkeras.cells import sparse_update
from hmkeras.data.pipeline import EvaluationChunks
from hmkeras.data.pipeline import TruncatedBPTTBatches

_LN2 = bits.LN2


@dataclasses.dataclass(frozen=True)
class WordLevelFigures:
    """Word-level figures of a character/byte model (Krause et al. Eq. 23).

    Attributes:
        bits_per_char: Bits per character (or byte), the measured BPC.
        bits_per_word: `bits_per_char * num_symbols / num_words`.
        word_perplexity: `2 ** bits_per_word`.
        num_symbols: Characters (bytes) of the text the words were counted in.
        num_words: Words of that text.
    """

    bits_per_char: float
    bits_per_word: float
    word_perplexity: float
    num_symbols: int
    num_words: int

    def as_dict(self):
        return dataclasses.asdict(self)


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
            f1 (+ counts) against the reference in its best alignment, the
            name of that alignment (`alignment`) and the fields of every
            alignment (`by_alignment`), or None
            (`AlignedBoundaryScores.as_dict`).
        boundaries: The `(T, L-1)` boundaries (batch 1 only, if asked for).
        num_symbols: Length of the evaluated id stream (`num_targets + 1` at
            batch 1).
        losses: The `(num_targets,)` per-target losses in bits, aligned with
            `ids[1:]` (batch 1 only, with `return_losses=True`).
        update_statistics: With `sparse_updates=True`, the executed and
            skipped layer updates and the skipped fraction
            (`hmkeras.cells.sparse_update.count_updates`), else None.

    Examples:

        >>> from hmkeras.analysis import EvaluationResult
        >>> result = EvaluationResult(bpc=1.5, num_targets=399, num_symbols=400)
        >>> result.word_level(num_words=80).bits_per_word  # 1.5 bits x 400 / 80
        7.5
        >>> "losses" in result.as_dict()  # JSON-able figures, no arrays
        False
    """

    bpc: float
    num_targets: int
    z_rates: list = None
    z_ratio: float = None
    boundary_scores: list = None
    boundaries: np.ndarray = dataclasses.field(default=None, repr=False)
    num_symbols: int = None
    losses: np.ndarray = dataclasses.field(default=None, repr=False)
    update_statistics: dict = None

    def as_dict(self):
        """JSON-able figures (without the boundaries and losses arrays)."""
        out = dataclasses.asdict(self)
        out.pop("boundaries")
        out.pop("losses")
        return out

    def word_level(self, num_words, num_symbols=None):
        """Bits per word and word perplexity of this BPC (Krause Eq. 23).

        Args:
            num_words: Words in the evaluated text, e.g.
                `hmkeras.analysis.bits.WIKITEXT2_TEST_WORDS` for the whole WikiText-2
                test set, or `hmkeras.data.wikitext2_raw.count_words(text)`.
            num_symbols: Characters (bytes) of that text; default
                `self.num_symbols`, the length of the evaluated stream.

        Returns:
            A `WordLevelFigures`.
        """
        if num_symbols is None:
            num_symbols = self.num_symbols
        if num_symbols is None:
            raise ValueError(
                "`num_symbols` is required: this result does not record the "
                "length of the evaluated text."
            )
        return WordLevelFigures(
            bits_per_char=float(self.bpc),
            # Krause et al. Eq. (23): bits/word = bits/symbol * symbols / words
            bits_per_word=bits.bits_per_word(self.bpc, num_symbols, num_words),
            word_perplexity=bits.word_perplexity(self.bpc, num_symbols, num_words),
            num_symbols=int(num_symbols),
            num_words=int(num_words),
        )


def _sum_counts(counts):
    """One `sparse_update.count_updates` dict from those of the chunks."""
    return sparse_update.summarize_counts(
        np.sum([c["per_layer_executed"] for c in counts], axis=0),
        np.sum([c["per_layer_skipped"] for c in counts], axis=0),
    )


class ChunkScorer:
    """A compiled function scoring one chunk from an explicit state.

    `scorer(inputs, targets, weights, state)
        -> (bits, target_bits, boundaries, state)`
    where `target_bits` is `weights * -log2 p(targets)` `(batch, T)`, `bits`
    its sum, `boundaries` the `(batch, T, L-1)` boundaries (empty for
    non-hierarchical cells).  Compiled with `tf.function` on TensorFlow
    and `jax.jit` on JAX, where the weights' current values are arguments
    of the compiled function (read in a `keras.StatelessScope`).
    """

    def __init__(self, language_model):
        self.language_model = language_model
        backend = keras.backend.backend()
        if backend == "tensorflow":
            self._score = tf.function(self._score_chunk, reduce_retracing=True)
        elif backend == "jax":
            self._score = self._jax_compiled()
        else:
            self._score = self._score_chunk

    def _score_chunk(self, inputs, targets, weights, state):
        lm = self.language_model
        logits, rnn_outputs, *new_state = lm.network([inputs, *state], training=False)
        nats = keras.ops.sparse_categorical_crossentropy(
            targets, keras.ops.cast(logits, "float32"), from_logits=True)
        target_bits = nats * weights / _LN2
        chunk_bits = keras.ops.sum(nats * weights) / _LN2
        if lm.is_hierarchical:
            z = lm.boundaries(rnn_outputs)
        else:
            z = keras.ops.zeros((*keras.ops.shape(inputs), 0))
        return chunk_bits, target_bits, z, new_state

    def _jax_compiled(self):
        import jax  # the backend's own

        network = self.language_model.network

        def stateless(values, inputs, targets, weights, state):
            with keras.StatelessScope(state_mapping=list(zip(network.variables, values))):
                return self._score_chunk(inputs, targets, weights, state)

        compiled = jax.jit(stateless)

        def score(inputs, targets, weights, state):
            values = [v.value for v in network.variables]
            return compiled(values, *(np.asarray(a) for a in (inputs, targets, weights)),
                            [np.asarray(s) for s in state])

        return score

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
    return_losses=False,
    verbose=1,
    sparse_updates=False,
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
        reference: Optional reference boundaries, aligned with the inputs
            (see the module docstring); batch 1 only. A 0/1 array
            `(len(ids),)`, or a dict `{alignment name: array}` of the same
            segmentation in several alignments, e.g. `{"separator": ...,
            "last_char": ...}`: every layer is then scored against each and
            headlined by the best (`boundary_metrics.aligned_boundary_scores`).
        tolerance: Matching tolerance of the boundary scores, in steps.
        keep_boundaries: Whether to return the `(T, L-1)` boundaries.
        return_losses: Whether to keep the per-target losses (bits) in
            `result.losses`, aligned with `ids[1:]`; batch 1 only.
        verbose: 1 shows a `keras.utils.Progbar`.
        sparse_updates: Hierarchical cells only: a layer that COPYs in every
            row skips its update (`hmkeras.cells.sparse_update`; at batch 1
            every COPY), with the dense path's results; the counts go to
            `result.update_statistics`.

    Returns:
        An `EvaluationResult`.

    Examples:

        >>> import numpy as np
        >>> from hmkeras.analysis import evaluate_char_model
        >>> from hmkeras.models import CharLanguageModel
        >>> lm = CharLanguageModel(vocab_size=3, units=4, embedding_dim=2, output_units=4,
        ...                        seed=0)
        >>> ids = np.array([0, 1, 2] * 20)
        >>> reference = (ids == 2).astype(int)  # "words" end on id 2
        >>> result = evaluate_char_model(lm, ids, seq_len=20, reference=reference, verbose=0)
        >>> result.num_targets, len(result.z_rates), sorted(result.boundary_scores[0])[:3]
        (59, 2, ['alignment', 'by_alignment', 'f1'])
    """
    if sparse_updates and not language_model.is_hierarchical:
        raise ValueError(
            "`sparse_updates=True` needs a hierarchical cell (hmlstm, hmrnn). "
            f"Received: cell={language_model.config.cell!r}"
        )
    if not sparse_updates:
        return _evaluate(language_model, ids, seq_len, batch_size, reference,
                         tolerance, keep_boundaries, return_losses, verbose)
    # The flag is read when the scorer is traced, inside the block.
    with sparse_update.sparse_updates(language_model.network):
        return _evaluate(language_model, ids, seq_len, batch_size, reference,
                         tolerance, keep_boundaries, return_losses, verbose,
                         count_updates=True)


def _evaluate(language_model, ids, seq_len, batch_size, reference, tolerance,
              keep_boundaries, return_losses, verbose, count_updates=False):
    """`evaluate_char_model` (dense or sparse, as the cells are set); with
    `count_updates`, the sparse run's counts, from the boundaries."""
    ids = np.asarray(ids)
    if reference is not None and batch_size != 1:
        raise ValueError("`reference` boundary scores need batch_size=1.")
    if return_losses and batch_size != 1:
        raise ValueError(
            "`return_losses=True` needs batch_size=1 (every target scored once, "
            f"in text order). Received: batch_size={batch_size!r}"
        )
    scorer = ChunkScorer(language_model)
    state = [keras.ops.convert_to_tensor(s) for s in language_model.zero_state(batch_size)]
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
    total_bits, scored, collected, losses, counts = 0.0, 0.0, [], [], []
    for index, (x, y, w) in enumerate(dataset):
        previous_z = state[-1]  # z_{t-1}: a hierarchical cell's last state
        chunk_bits, target_bits, z, state = scorer(x, y, w, state)
        if count_updates:
            counts.append(sparse_update.count_updates(z, previous_z))
        total_bits += float(chunk_bits)
        w = w.numpy()
        if return_losses:
            losses.append(keras.ops.convert_to_numpy(target_bits)[0][w[0] > 0])
        scored += float(w.sum())
        if language_model.is_hierarchical:
            z = keras.ops.convert_to_numpy(z)
            if batch_size == 1:
                collected.append(z[0][w[0] > 0])
            else:
                collected.append(z.reshape(-1, z.shape[-1]))
        progbar.update(index + 1, [("bpc", total_bits / scored)])
    result = EvaluationResult(bpc=total_bits / num_targets, num_targets=num_targets,
                              num_symbols=len(ids))
    if return_losses:
        result.losses = np.concatenate(losses).astype(np.float64)
    if count_updates:
        result.update_statistics = _sum_counts(counts)
    if not language_model.is_hierarchical:
        return result
    z = np.concatenate(collected, axis=0)
    result.z_rates = [float(r) for r in boundary_metrics.z_rates(z)]
    if z.shape[-1] >= 2:
        result.z_ratio = float(boundary_metrics.z_ratio(z))
    if reference is not None:
        if not isinstance(reference, dict):
            reference = {"reference": reference}
        aligned = {}
        for name, values in reference.items():
            values = np.asarray(values)
            if values.ndim != 1 or values.shape[0] < z.shape[0]:
                raise ValueError(
                    f"`reference` must have one value per input id ({len(ids)}). "
                    f"Received: {name!r} of shape {values.shape}"
                )
            aligned[name] = values[: z.shape[0]]
        result.boundary_scores = [
            scores.as_dict()
            for scores in boundary_metrics.layer_boundary_scores(z, aligned, tolerance)
        ]
    if keep_boundaries:
        result.boundaries = z
    return result
