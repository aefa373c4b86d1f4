"""`tf.data` pipelines over one long id stream, for character-level LMs.

Two layouts, both used by Chung et al. ("Hierarchical Multiscale Recurrent
Neural Networks", ICLR 2017) and Kadar et al. ("Revisiting the Hierarchical
Multiscale LSTM", COLING 2018):

* `TruncatedBPTTBatches` for training with truncated back-propagation through
  time and a *stateful* RNN: the stream is cut into `batch_size` contiguous
  rows and each row is read `seq_len` steps at a time, so row ``i`` of batch
  ``k + 1`` continues exactly where row ``i`` of batch ``k`` ended and the
  final state of one batch is the right initial state of the next.
* `EvaluationChunks` for evaluation: the whole text as a batch of one, read
  in chunks of `seq_len` (100 by default) with the state carried over the
  whole set (Kadar et al.'s protocol). The last, partial chunk is handled
  explicitly (kept, padded with a zero weight, or dropped on request).

Both yield ``(inputs, targets)`` with ``targets[t] == stream[t + 1]`` for
``inputs[t] == stream[t]``, as int32.

Training layout, with ``n`` ids, ``B = batch_size`` and ``T = seq_len``::

    num_batches = ((n - 1) // B) // T          # batches per epoch
    L = num_batches * T                        # steps per row
    row i       = ids[i * L : (i + 1) * L + 1] # inputs ids[iL+t], targets +1
    batch k     = row[:, k*T : (k+1)*T], targets row[:, k*T+1 : (k+1)*T+1]

The ``n - 1 - B * L`` ids at the end of the stream are not used as targets in
an epoch (`num_unused_ids`; fewer than ``B * T + B``).

Examples:

    >>> import numpy as np
    >>> batches = TruncatedBPTTBatches(np.arange(21), batch_size=2, seq_len=3)
    >>> batches.num_batches
    3
    >>> x, y = batches.batch(0)
    >>> x.tolist(), y.tolist()
    ([[0, 1, 2], [9, 10, 11]], [[1, 2, 3], [10, 11, 12]])
    >>> [x.numpy()[0].tolist() for x, _ in batches.dataset(start_batch=1)]
    [[3, 4, 5], [6, 7, 8]]
    >>> chunks = EvaluationChunks(np.arange(8), seq_len=3)
    >>> chunks.num_full_chunks, chunks.final_chunk_length
    (2, 1)
    >>> [y.numpy().tolist() for _, y in chunks.dataset()]
    [[[1, 2, 3]], [[4, 5, 6]], [[7]]]
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

__all__ = ["TruncatedBPTTBatches", "EvaluationChunks", "REMAINDER_MODES",
           "without_autotuning"]

REMAINDER_MODES = ("keep", "pad", "drop")


def without_autotuning(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """`dataset` with `tf.data`'s autotuning turned off.

    The training loops call `fit` once per epoch (`train_truncated_bptt`,
    `train_epochs`), so every epoch ends an input iterator. With
    autotuning on, TensorFlow lets `fit` return only once the iterator's
    autotuning thread wakes again, and that thread sleeps twice as long
    after each wake (10 ms, 20 ms, ...): on the main job `fit` returned up
    to 25 seconds after an epoch's last batch, in some epochs and not
    others. The library's pipelines have nothing to tune (no parallel
    `map`, no `AUTOTUNE` buffer); their elements and order are the same
    either way.

    Examples:

        >>> import tensorflow as tf
        >>> without_autotuning(tf.data.Dataset.range(3)).options().autotune.enabled
        False
    """
    if not isinstance(dataset, tf.data.Dataset):
        raise ValueError(
            f"`dataset` must be a tf.data.Dataset, got {type(dataset).__name__}."
        )
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)


def _check_positive_int(name: str, value) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or value < 1
    ):
        raise ValueError(f"`{name}` must be a positive integer, got {value!r}.")
    return int(value)


def _as_id_array(ids) -> np.ndarray:
    """1-D integer array, stored as uint8 when every id fits (less memory)."""
    array = np.asarray(ids)
    if array.ndim != 1:
        raise ValueError(
            f"`ids` must be a 1-D sequence of ids, got shape {array.shape}."
        )
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"`ids` must be integers, got dtype {array.dtype}.")
    if array.size and array.min() < 0:
        raise ValueError("`ids` must be non-negative.")
    if array.size and array.max() < 256:
        return array.astype(np.uint8)
    return array.astype(np.int32)


class TruncatedBPTTBatches:
    """Contiguous `(batch_size, seq_len)` batches for stateful TBPTT training.

    Args:
      ids: 1-D sequence of non-negative int ids (the whole split).
      batch_size: number of parallel rows (streams).
      seq_len: number of steps per batch (the truncation length).

    Attributes:
      num_batches: batches per epoch.
      steps_per_row: ``num_batches * seq_len``.
      num_unused_ids: ids at the end of the stream never used as a target.

    Resuming: `dataset(start_batch=k)` yields exactly the batches ``k, k+1,
    ...`` of a full epoch, the same as ``dataset().skip(k)`` but without
    reading the skipped ones; save ``k`` (and the RNN state) to resume a run
    at the data position where it stopped.

    Examples:

        >>> import numpy as np
        >>> b = TruncatedBPTTBatches(np.arange(101), batch_size=4, seq_len=5)
        >>> b.num_batches, b.steps_per_row, b.num_unused_ids
        (5, 25, 0)
        >>> x, y = next(iter(b.dataset()))
        >>> x.shape, x.dtype.name
        (TensorShape([4, 5]), 'int32')
    """

    def __init__(self, ids, batch_size: int, seq_len: int):
        self.batch_size = _check_positive_int("batch_size", batch_size)
        self.seq_len = _check_positive_int("seq_len", seq_len)
        ids = _as_id_array(ids)
        self.num_ids = int(ids.shape[0])
        needed = self.batch_size * self.seq_len + 1
        if self.num_ids < needed:
            raise ValueError(
                f"`ids` has {self.num_ids} ids; batch_size={self.batch_size} x "
                f"seq_len={self.seq_len} needs at least {needed} (one full "
                "batch plus the last target)."
            )
        self.num_batches = ((self.num_ids - 1) // self.batch_size) // self.seq_len
        self.steps_per_row = self.num_batches * self.seq_len
        self.num_unused_ids = (
            self.num_ids - 1 - self.batch_size * self.steps_per_row
        )
        length = self.steps_per_row
        # Row i holds its inputs and its last target: L + 1 ids.
        self._rows = np.stack(
            [ids[i * length : (i + 1) * length + 1] for i in range(self.batch_size)]
        )
        self._rows_tensor = None

    def __len__(self) -> int:
        return self.num_batches

    def batch(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """Batch `index` as NumPy int32 arrays `(inputs, targets)`."""
        if not 0 <= index < self.num_batches:
            raise ValueError(
                f"`index` must be in [0, {self.num_batches}), got {index}."
            )
        lo = index * self.seq_len
        x = self._rows[:, lo : lo + self.seq_len]
        y = self._rows[:, lo + 1 : lo + self.seq_len + 1]
        return x.astype(np.int32), y.astype(np.int32)

    def dataset(self, start_batch: int = 0, row_ids: bool = False) -> tf.data.Dataset:
        """The epoch's batches from `start_batch` on, in order.

        Args:
          start_batch: index of the first batch, in ``[0, num_batches]``
            (``num_batches`` gives an empty dataset: the epoch is done).
          row_ids: whether each element names its rows: ``((inputs,
            row_ids), targets)`` with ``row_ids`` the int32 ``(batch_size,)``
            range ``0 .. batch_size - 1``, which travel with the rows when a
            `tf.distribute` strategy splits the batch over replicas (what
            `hmkeras.TruncatedBPTTModel` needs to carry each row's state
            there).

        Returns:
          A `tf.data.Dataset` of ``(inputs, targets)`` (or ``((inputs,
          row_ids), targets)``), int32 tensors of shape ``(batch_size,
          seq_len)``, without autotuning (`without_autotuning`). Call
          `.repeat()` for several epochs (each epoch starts again at batch
          0, where the RNN state should be reset).
        """
        if (
            isinstance(start_batch, bool)
            or not isinstance(start_batch, (int, np.integer))
            or not 0 <= start_batch <= self.num_batches
        ):
            raise ValueError(
                f"`start_batch` must be an integer in [0, {self.num_batches}], "
                f"got {start_batch!r}."
            )
        if not isinstance(row_ids, (bool, np.bool_)):
            raise ValueError(f"`row_ids` must be True or False, got {row_ids!r}.")
        if self._rows_tensor is None:
            self._rows_tensor = tf.constant(self._rows)
        rows = self._rows_tensor
        batch_size, seq_len = self.batch_size, self.seq_len

        def _slice(k):
            lo = tf.cast(k, tf.int32) * seq_len
            x = tf.slice(rows, [0, lo], [batch_size, seq_len])
            y = tf.slice(rows, [0, lo + 1], [batch_size, seq_len])
            x, y = tf.cast(x, tf.int32), tf.cast(y, tf.int32)
            if row_ids:
                return (x, tf.range(batch_size, dtype=tf.int32)), y
            return x, y

        return without_autotuning(
            tf.data.Dataset.range(int(start_batch), self.num_batches).map(_slice)
        )

    def __repr__(self) -> str:
        return (
            f"TruncatedBPTTBatches(num_ids={self.num_ids}, batch_size="
            f"{self.batch_size}, seq_len={self.seq_len}, num_batches="
            f"{self.num_batches}, num_unused_ids={self.num_unused_ids})"
        )


class EvaluationChunks:
    """The whole stream as a batch of one, in consecutive chunks.

    Every id except the first is predicted exactly once: there are
    ``num_targets = len(ids) - 1`` targets, in ``num_full_chunks`` chunks of
    `seq_len` and, when ``final_chunk_length > 0``, one final partial chunk.

    Args:
      ids: 1-D sequence of non-negative int ids (the whole split).
      seq_len: chunk length (100 by default, as in Kadar et al.).

    Examples:

        >>> import numpy as np
        >>> ev = EvaluationChunks(np.arange(251), seq_len=100)
        >>> ev.num_targets, ev.num_full_chunks, ev.final_chunk_length
        (250, 2, 50)
        >>> [tuple(x.shape) for x, _, _ in ev.dataset(remainder="pad")] == [(1, 100)] * 3
        True
    """

    def __init__(self, ids, seq_len: int = 100):
        self.seq_len = _check_positive_int("seq_len", seq_len)
        ids = _as_id_array(ids)
        if ids.shape[0] < 2:
            raise ValueError(
                f"`ids` must hold at least 2 ids (one target), got {ids.shape[0]}."
            )
        self._ids = ids
        self.num_ids = int(ids.shape[0])
        self.num_targets = self.num_ids - 1
        self.num_full_chunks = self.num_targets // self.seq_len
        self.final_chunk_length = self.num_targets % self.seq_len

    def num_chunks(self, remainder: str = "keep") -> int:
        """Number of elements `dataset(remainder)` yields."""
        _check_remainder(remainder)
        extra = self.final_chunk_length > 0 and remainder != "drop"
        return self.num_full_chunks + int(extra)

    def num_evaluated_targets(self, remainder: str = "keep") -> int:
        """Targets scored: `num_targets`, less the final chunk if dropped."""
        _check_remainder(remainder)
        if remainder == "drop":
            return self.num_full_chunks * self.seq_len
        return self.num_targets

    def dataset(self, remainder: str = "keep") -> tf.data.Dataset:
        """The chunks, in order, as a `tf.data.Dataset`.

        Args:
          remainder: what to do with the final partial chunk:
            "keep" (default): yield it as a shorter ``(1, final_chunk_length)``
              element; elements are ``(inputs, targets)`` of shape
              ``(1, None)``.
            "pad": pad it with id 0 to ``(1, seq_len)``; every element is then
              ``(inputs, targets, weights)`` with float32 weights, 1 on real
              targets and 0 on padding (Keras' ``sample_weight``), so every
              target is still scored exactly once. For an exact bits/char,
              sum ``weights * -log2 p(target)`` over all chunks and divide by
              `num_evaluated_targets` (a per-batch mean that divides by
              ``seq_len`` would under-count the short final chunk).
            "drop": leave it out; its ``final_chunk_length`` targets are not
              evaluated (see `num_evaluated_targets`).
        """
        _check_remainder(remainder)
        stream = tf.constant(self._ids)
        seq_len = self.seq_len
        tail = self.final_chunk_length

        def _chunk(k):
            lo = tf.cast(k, tf.int32) * seq_len
            x = tf.cast(stream[lo : lo + seq_len], tf.int32)
            y = tf.cast(stream[lo + 1 : lo + seq_len + 1], tf.int32)
            return tf.reshape(x, [1, seq_len]), tf.reshape(y, [1, seq_len])

        full = tf.data.Dataset.range(self.num_full_chunks).map(
            _chunk
        )
        lo = self.num_full_chunks * seq_len
        x_tail = self._ids[lo : lo + tail].astype(np.int32)[None]
        y_tail = self._ids[lo + 1 : lo + tail + 1].astype(np.int32)[None]
        if remainder == "drop" or tail == 0:
            if remainder == "pad":
                return full.map(lambda x, y: (x, y, tf.ones_like(x, tf.float32)))
            return full
        if remainder == "keep":
            return full.concatenate(
                tf.data.Dataset.from_tensors((x_tail, y_tail))
            )
        pad = ((0, 0), (0, seq_len - tail))
        weights = np.pad(np.ones_like(x_tail, dtype=np.float32), pad)
        last = (np.pad(x_tail, pad), np.pad(y_tail, pad), weights)
        full = full.map(lambda x, y: (x, y, tf.ones_like(x, tf.float32)))
        return full.concatenate(tf.data.Dataset.from_tensors(last))

    def __repr__(self) -> str:
        return (
            f"EvaluationChunks(num_targets={self.num_targets}, seq_len="
            f"{self.seq_len}, num_full_chunks={self.num_full_chunks}, "
            f"final_chunk_length={self.final_chunk_length})"
        )


def _check_remainder(remainder: str) -> None:
    if remainder not in REMAINDER_MODES:
        raise ValueError(
            f"`remainder` must be one of {list(REMAINDER_MODES)}, got "
            f"{remainder!r}."
        )
