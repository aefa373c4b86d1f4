"""`SentenceBatches`: sentences padded or cut to a fixed length, for word LMs.

The layout of Salton & Kelleher (persistence averaging, Section 6.3): every
sentence is one row of `seq_len` (35) steps, sentences longer than that are
cut and shorter ones padded, and a mini-batch is `batch_size` (32)
consecutive sentences in corpus order. The RNN state starts from zeros in
every batch (the model is stateless), so nothing is carried from one
sentence to the next and a memory (averaging, attention) starts empty at
every sentence.

A sentence ``w_1 .. w_n`` is read with ``<eos>`` as its first input and as
its last target (Mikolov et al.'s stream, where the previous sentence's
``<eos>`` precedes every sentence)::

    inputs   <eos> w_1 ... w_n
    targets  w_1   w_2 ... <eos>

padded with `pad_id` to `seq_len`; the weights are 1 on real targets and 0
on padding, so perplexity = exp(sum(weights * NLL) / sum(weights)).

`overflow` says what happens to a sentence of more than `seq_len` targets:

* ``"truncate"`` (training, as in the paper): only its first `seq_len`
  targets are kept (`num_dropped_targets` counts the rest);
* ``"split"`` (evaluation): it is cut into consecutive rows of `seq_len`,
  so every target is scored exactly once; each row starts from a zero state
  (the continuation rows see no earlier context of their sentence).

Empty sentences (WikiText-2's blank lines) are left out unless
``keep_empty=True`` (they would be a single ``<eos>`` target).

Examples:

    >>> import numpy as np
    >>> batches = SentenceBatches([np.array([5, 6]), np.array([7, 8, 9, 4])],
    ...                           seq_len=3, batch_size=2, overflow="split")
    >>> x, y, w = batches.arrays()
    >>> x.tolist()
    [[1, 5, 6], [1, 7, 8], [9, 4, 0]]
    >>> y.tolist()
    [[5, 6, 1], [7, 8, 9], [4, 1, 0]]
    >>> w.tolist()
    [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 0.0]]
    >>> batches.num_targets, batches.num_batches
    (8, 2)
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from hmkeras.data.pipeline import without_autotuning

__all__ = ["SentenceBatches", "OVERFLOW_MODES"]

OVERFLOW_MODES = ("truncate", "split")


def _positive(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"`{name}` must be a positive integer, got {value!r}.")
    return int(value)


class SentenceBatches:
    """Fixed-length sentence rows `(inputs, targets, weights)` in batches.

    Args:
      sentences: sequence of 1-D int id arrays, one per sentence, without
        ``<eos>``.
      seq_len: steps per row (35 in Salton & Kelleher).
      batch_size: rows per batch (32 in Salton & Kelleher); the last batch
        may be smaller.
      overflow: "truncate" or "split" (module docstring).
      eos_id, pad_id: ids of ``<eos>`` and of the padding
        (`hmkeras.data.WordVocabulary`: 1 and 0).
      keep_empty: keep empty sentences as a lone ``<eos>`` target.

    Attributes:
      num_rows: the number of rows.
      num_batches: the number of batches.
      num_targets: weighted targets: the tokens scored, ``<eos>`` included.
      num_dropped_targets: targets cut by "truncate".

    Examples:

        >>> import numpy as np
        >>> from hmkeras.data import SentenceBatches
        >>> batches = SentenceBatches([np.array([5, 6, 7]), np.array([8])], seq_len=4,
        ...                           batch_size=2)
        >>> inputs, targets, weights = batches.batch(0)
        >>> inputs.tolist()  # <eos> (1) first, padding (0) last
        [[1, 5, 6, 7], [1, 8, 0, 0]]
        >>> targets.tolist()
        [[5, 6, 7, 1], [8, 1, 0, 0]]
        >>> weights.tolist()
        [[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]]
    """

    def __init__(self, sentences, seq_len=35, batch_size=32, overflow="truncate",
                 eos_id=1, pad_id=0, keep_empty=False):
        self.seq_len = _positive("seq_len", seq_len)
        self.batch_size = _positive("batch_size", batch_size)
        if overflow not in OVERFLOW_MODES:
            raise ValueError(
                f"`overflow` must be one of {list(OVERFLOW_MODES)}, got {overflow!r}."
            )
        self.overflow = overflow
        rows_x, rows_y = [], []
        self.num_dropped_targets = 0
        for sentence in sentences:
            ids = np.asarray(sentence, dtype=np.int64).reshape(-1)
            if ids.size == 0 and not keep_empty:
                continue
            x = np.concatenate([[eos_id], ids])
            y = np.concatenate([ids, [eos_id]])
            if overflow == "truncate":
                self.num_dropped_targets += max(0, y.size - self.seq_len)
                starts = [0]
            else:
                starts = range(0, y.size, self.seq_len)
            for start in starts:
                rows_x.append(x[start : start + self.seq_len])
                rows_y.append(y[start : start + self.seq_len])
        if not rows_x:
            raise ValueError("`sentences` holds no sentence to read.")
        n = len(rows_x)
        self._x = np.full((n, self.seq_len), pad_id, dtype=np.int32)
        self._y = np.full((n, self.seq_len), pad_id, dtype=np.int32)
        self._w = np.zeros((n, self.seq_len), dtype=np.float32)
        for i, (x, y) in enumerate(zip(rows_x, rows_y)):
            self._x[i, : x.size] = x
            self._y[i, : y.size] = y
            self._w[i, : y.size] = 1.0
        self.num_rows = n
        self.num_batches = -(-n // self.batch_size)
        self.num_targets = int(self._w.sum())

    def __len__(self):
        return self.num_batches

    def arrays(self):
        """`(inputs, targets, weights)` of every row, NumPy."""
        return self._x.copy(), self._y.copy(), self._w.copy()

    def batch(self, index):
        """Batch `index` as NumPy `(inputs, targets, weights)`."""
        if not 0 <= index < self.num_batches:
            raise ValueError(f"`index` must be in [0, {self.num_batches}), got {index}.")
        lo, hi = index * self.batch_size, (index + 1) * self.batch_size
        return self._x[lo:hi], self._y[lo:hi], self._w[lo:hi]

    def dataset(self, start_batch=0):
        """The batches from `start_batch` on, in corpus order, as a
        `tf.data.Dataset` of `(inputs, targets, weights)` without
        autotuning (`pipeline.without_autotuning`)."""
        lo = start_batch * self.batch_size
        return without_autotuning(tf.data.Dataset.from_tensor_slices(
            (self._x[lo:], self._y[lo:], self._w[lo:])
        ).batch(self.batch_size))

    def __repr__(self):
        return (f"SentenceBatches(num_rows={self.num_rows}, seq_len={self.seq_len}, "
                f"batch_size={self.batch_size}, overflow={self.overflow!r}, "
                f"num_targets={self.num_targets})")
