"""Tests for hmkeras.data.pipeline: TBPTT batches and evaluation chunks."""

import numpy as np
import pytest

from hmkeras.data.pipeline import EvaluationChunks
from hmkeras.data.pipeline import TruncatedBPTTBatches
from hmkeras.data.pipeline import without_autotuning


def _collect(dataset):
    return [tuple(t.numpy() for t in element) for element in dataset]


@pytest.mark.parametrize("n, batch_size, seq_len", [(1000, 4, 7), (301, 3, 10),
                                                    (64, 1, 63)])
def test_rows_continue_across_batches(n, batch_size, seq_len):
    ids = (np.arange(n) * 7919) % 1009  # ids >= 256: int32 storage
    batches = TruncatedBPTTBatches(ids, batch_size, seq_len)
    assert batches.num_batches == ((n - 1) // batch_size) // seq_len
    assert len(batches) == batches.num_batches
    elements = _collect(batches.dataset())
    assert len(elements) == batches.num_batches
    # Concatenating batch k of row i gives one contiguous run of the stream.
    xs = np.concatenate([x for x, _ in elements], axis=1)
    ys = np.concatenate([y for _, y in elements], axis=1)
    length = batches.steps_per_row
    for i in range(batch_size):
        np.testing.assert_array_equal(xs[i], ids[i * length:(i + 1) * length])
        np.testing.assert_array_equal(ys[i], ids[i * length + 1:(i + 1) * length + 1])
    for k, (x, y) in enumerate(elements):
        assert x.shape == y.shape == (batch_size, seq_len)
        assert x.dtype == y.dtype == np.int32
        # Targets are the inputs shifted by one, and the first input of
        # batch k+1 follows the last input of batch k in every row.
        np.testing.assert_array_equal(x[:, 1:], y[:, :-1])
        if k + 1 < len(elements):
            np.testing.assert_array_equal(elements[k + 1][0][:, 0], y[:, -1])
    used = batch_size * length
    assert batches.num_unused_ids == n - 1 - used
    assert 0 <= batches.num_unused_ids < batch_size * seq_len + batch_size


def test_start_batch_equals_skip():
    ids = np.random.default_rng(0).integers(0, 50, size=2000)
    batches = TruncatedBPTTBatches(ids, batch_size=5, seq_len=9)
    full = _collect(batches.dataset())
    for start in (0, 1, 7, batches.num_batches - 1, batches.num_batches):
        resumed = _collect(batches.dataset(start_batch=start))
        skipped = _collect(batches.dataset().skip(start))
        assert len(resumed) == len(skipped) == batches.num_batches - start
        for (x1, y1), (x2, y2), (x3, y3) in zip(resumed, skipped, full[start:]):
            np.testing.assert_array_equal(x1, x2)
            np.testing.assert_array_equal(y1, y3)
            np.testing.assert_array_equal(x1, x3)
    x, y = batches.batch(3)
    np.testing.assert_array_equal(x, full[3][0])
    np.testing.assert_array_equal(y, full[3][1])


def test_row_ids_name_the_rows_of_every_batch():
    ids = np.random.default_rng(1).integers(0, 50, size=500)
    batches = TruncatedBPTTBatches(ids, batch_size=6, seq_len=8)
    plain = _collect(batches.dataset(start_batch=2))
    named = list(batches.dataset(start_batch=2, row_ids=True))
    assert len(named) == len(plain) == batches.num_batches - 2
    for ((x, rows), y), (x_plain, y_plain) in zip(named, plain):
        np.testing.assert_array_equal(x.numpy(), x_plain)
        np.testing.assert_array_equal(y.numpy(), y_plain)
        assert rows.dtype.name == "int32"
        np.testing.assert_array_equal(rows.numpy(), np.arange(6))


def test_training_batches_run_without_autotuning():
    """A `fit` per epoch ends an iterator per epoch: with autotuning on,
    TensorFlow holds `fit` until the autotuning thread next wakes."""
    import tensorflow as tf

    batches = TruncatedBPTTBatches(np.arange(200), batch_size=3, seq_len=5)
    for dataset in (batches.dataset(), batches.dataset(start_batch=4, row_ids=True)):
        assert dataset.options().autotune.enabled is False
    tuned = tf.data.Dataset.range(7).with_options(tf.data.Options())
    assert tuned.options().autotune.enabled is not False
    untuned = without_autotuning(tuned)
    assert untuned.options().autotune.enabled is False
    assert list(untuned.as_numpy_iterator()) == list(range(7))
    with pytest.raises(ValueError, match="`dataset` must be a tf.data.Dataset, got list"):
        without_autotuning([0, 1, 2])


def test_bptt_invalid_arguments():
    with pytest.raises(ValueError, match="batch_size"):
        TruncatedBPTTBatches(np.arange(100), batch_size=0, seq_len=5)
    with pytest.raises(ValueError, match="seq_len"):
        TruncatedBPTTBatches(np.arange(100), batch_size=2, seq_len=2.5)
    with pytest.raises(ValueError, match="needs at least 21"):
        TruncatedBPTTBatches(np.arange(20), batch_size=4, seq_len=5)
    batches = TruncatedBPTTBatches(np.arange(100), batch_size=2, seq_len=5)
    with pytest.raises(ValueError, match="start_batch"):
        batches.dataset(start_batch=batches.num_batches + 1)
    with pytest.raises(ValueError, match="row_ids"):
        batches.dataset(row_ids=1)
    with pytest.raises(ValueError, match="1-D"):
        TruncatedBPTTBatches(np.zeros((4, 30), int), batch_size=2, seq_len=5)


@pytest.mark.parametrize("n, seq_len", [(251, 100), (201, 100), (8, 3), (2, 5)])
def test_evaluation_chunks_cover_every_target_once(n, seq_len):
    ids = np.arange(n) % 97
    ev = EvaluationChunks(ids, seq_len=seq_len)
    assert ev.num_targets == n - 1
    assert ev.num_full_chunks * seq_len + ev.final_chunk_length == n - 1

    kept = _collect(ev.dataset())
    assert len(kept) == ev.num_chunks("keep")
    np.testing.assert_array_equal(np.concatenate([x for x, _ in kept], 1)[0], ids[:-1])
    np.testing.assert_array_equal(np.concatenate([y for _, y in kept], 1)[0], ids[1:])
    assert all(x.shape[0] == 1 for x, _ in kept)
    if ev.final_chunk_length:
        assert kept[-1][0].shape == (1, ev.final_chunk_length)

    padded = _collect(ev.dataset(remainder="pad"))
    assert len(padded) == ev.num_chunks("pad") == len(kept)
    assert all(x.shape == (1, seq_len) for x, _, _ in padded)
    weights = np.concatenate([w for _, _, w in padded], 1)[0]
    assert weights.sum() == ev.num_evaluated_targets("pad") == n - 1
    targets = np.concatenate([y for _, y, _ in padded], 1)[0]
    np.testing.assert_array_equal(targets[weights == 1], ids[1:])

    dropped = _collect(ev.dataset(remainder="drop"))
    assert len(dropped) == ev.num_full_chunks == ev.num_chunks("drop")
    assert ev.num_evaluated_targets("drop") == ev.num_full_chunks * seq_len


def test_evaluation_invalid_arguments():
    with pytest.raises(ValueError, match="remainder"):
        EvaluationChunks(np.arange(10)).dataset(remainder="truncate")
    with pytest.raises(ValueError, match="at least 2"):
        EvaluationChunks(np.arange(1))
    with pytest.raises(ValueError, match="seq_len"):
        EvaluationChunks(np.arange(10), seq_len=0)
