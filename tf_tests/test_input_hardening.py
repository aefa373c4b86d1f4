"""Hardening of every public layer against unusual inputs (issue 13).

One harness over the public classes, parametrized by name:

* the recurrent ones (`RECURRENT`): the cells inside `keras.layers.RNN`
  (`HMLSTMCell`, `HMRNNCell`, `MultiplicativeLSTMCell`,
  `RecurrentRecursiveCell`, `AveragingWrapper`, `AttentionWrapper`) and
  the sequence layers (`HMLSTM`, `HMRNN`, `MultiplicativeLSTM`);
* the per-position ones (`HEADS`): `GatedOutputEmbedding`,
  `SimpleOutputEmbedding`, `MixtureDensityOutput` and both directions of
  `TiedEmbedding`.

What is checked, and the reference each check is held against:

* a wrong rank and integer features are refused with a `ValueError`
  that names the layer and the expected rank or dtype (never a cast);
* a sequence of zero steps: the sequence layers refuse it with a clear
  `ValueError`; `keras.layers.RNN` over a cell fails exactly as it does
  over Keras' own `LSTMCell` (the failure is Keras'); the per-position
  layers return an empty sequence, as `keras.layers.Dense` does;
* a batch of one equals the corresponding row of a batch of two;
* a padded, masked row equals the unpadded row run alone, the state is
  carried bit for bit through the masked steps, and a fully masked row
  keeps the initial (zero) state;
* 10,000 steps of each cell in inference give finite outputs and states.

The dtype policies (float64, mixed_float16, mixed_bfloat16) are in
`test_dtype_policies.py`, which shares this harness.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import hmkeras
from hardening_cases import FEATURES
from hardening_cases import HEAD_FEATURES
from hardening_cases import HEADS
from hardening_cases import RECURRENT
from hardening_cases import SEQUENCE_LAYERS


def _numpy(tensors):
    return [keras.ops.convert_to_numpy(t) for t in tensors]


def _run(layer, x, mask=None):
    """`[outputs, *states]` of a `return_state=True` layer, as arrays."""
    if mask is not None:
        mask = tf.constant(mask)
    return _numpy(layer(x, mask=mask))


# ---------------------------------------------------------------------------
# Wrong rank, integer features, zero steps
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(RECURRENT))
@pytest.mark.parametrize("shape", [(2, 5), (2, 5, 3, 2)], ids=["rank2", "rank4"])
def test_recurrent_wrong_rank_refused(name, shape):
    layer = RECURRENT[name].make()
    with pytest.raises(ValueError) as info:
        layer(np.zeros(shape, "float32"))
    message = str(info.value)
    # The message names the layer (or its cell) and the rank it expects,
    # and what it received.
    assert "rank 3" in message or "expected ndim=3" in message, message
    assert "eceived" in message and "(2," in message, message


@pytest.mark.parametrize("name", sorted(RECURRENT))
@pytest.mark.parametrize("dtype", ["int32", "bool"])
def test_recurrent_integer_features_refused(name, dtype):
    layer = RECURRENT[name].make()
    with pytest.raises(ValueError, match=rf"floating-point.*{dtype}"):
        layer(np.ones((2, 4, FEATURES), dtype))
    # The same layer then works on floats: nothing was half-built.
    x = RECURRENT[name].inputs(np.random.default_rng(0), 2, 4)
    assert np.all(np.isfinite(keras.ops.convert_to_numpy(layer(x))))


@pytest.mark.parametrize("name", SEQUENCE_LAYERS)
def test_sequence_layer_refuses_zero_steps_clearly(name):
    for return_sequences in (False, True):
        layer = RECURRENT[name].make(return_sequences=return_sequences)
        with pytest.raises(ValueError, match=r"at least one time step.*\(2, 0, 3\)"):
            layer(np.zeros((2, 0, FEATURES), "float32"))
    # Symbolically too (at build), and after a build on real sequences.
    with pytest.raises(ValueError, match="at least one time step"):
        RECURRENT[name].make()(keras.Input((0, FEATURES)))
    layer = RECURRENT[name].make()
    layer(np.zeros((2, 3, FEATURES), "float32"))
    with pytest.raises(ValueError, match="at least one time step"):
        layer(np.zeros((2, 0, FEATURES), "float32"))


@pytest.mark.parametrize("name", sorted(set(RECURRENT) - set(SEQUENCE_LAYERS)))
def test_cell_in_keras_rnn_fails_on_zero_steps_as_keras_lstm_does(name):
    x = np.zeros((2, 0, FEATURES), "float32")
    with pytest.raises(Exception) as keras_error:
        keras.layers.RNN(keras.layers.LSTMCell(4))(x)
    with pytest.raises(Exception) as ours:
        RECURRENT[name].make()(x)
    assert type(ours.value) is type(keras_error.value)


# ---------------------------------------------------------------------------
# Batch of one
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(RECURRENT))
def test_batch_of_one_equals_its_row_of_a_batch_of_two(name):
    keras.utils.set_random_seed(0)
    layer = RECURRENT[name].make(return_sequences=True, return_state=True)
    x = RECURRENT[name].inputs(np.random.default_rng(1), 2, 6)
    pair = _run(layer, x)
    for row in (0, 1):
        single = _run(layer, x[row:row + 1])
        for got, want in zip(single, pair):
            assert got.shape[0] == 1
            np.testing.assert_allclose(got[0], want[row], rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------
# Padded and masked batches
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(RECURRENT))
def test_padded_row_equals_the_unpadded_row_alone(name):
    keras.utils.set_random_seed(0)
    steps, length = 8, 5
    rng = np.random.default_rng(2)
    x = RECURRENT[name].inputs(rng, 3, steps, "float64")
    # Row 1 is padded after `length` steps with garbage, row 2 is all padding.
    x[1, length:] = 1e3 * RECURRENT[name].inputs(rng, 1, steps - length, "float64")[0]
    mask = np.ones((3, steps), bool)
    mask[1, length:] = False
    mask[2, :] = False
    layer = RECURRENT[name].make(dtype="float64", return_sequences=True,
                                 return_state=True)
    padded = _run(layer, x, mask)
    alone = _run(layer, x[1:2, :length])
    # The valid steps of the padded row are those of the row alone ...
    np.testing.assert_allclose(padded[0][1, :length], alone[0][0], rtol=1e-10, atol=1e-12)
    for got, want in zip(padded[1:], alone[1:]):
        np.testing.assert_allclose(got[1], want[0], rtol=1e-10, atol=1e-12)
    # ... the state goes through the masked steps bit for bit (the same batch
    # cut after `length` steps), and masked steps repeat the last output.
    cut = _run(layer, x[:, :length], mask[:, :length])
    for got, want in zip(padded[1:], cut[1:]):
        np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(
        padded[0][1, length:], np.repeat(padded[0][1, length - 1:length], steps - length, 0))
    # A fully masked row keeps the zero initial state and outputs zeros.
    for tensor in padded:
        np.testing.assert_array_equal(tensor[2], np.zeros_like(tensor[2]))


@pytest.mark.parametrize("name", ["HMLSTM", "AveragingWrapper", "RecurrentRecursiveCell"])
def test_masked_steps_in_the_middle_are_skipped(name):
    """A Masking layer in a model: masked steps leave no trace in the state."""
    keras.utils.set_random_seed(0)
    steps = 9
    x = RECURRENT[name].inputs(np.random.default_rng(3), 1, steps, "float64")
    x[0, [2, 6]] = 0.0  # masked by keras.layers.Masking(0.0)
    keep = [t for t in range(steps) if t not in (2, 6)]
    layer = RECURRENT[name].make(dtype="float64", return_sequences=True,
                                 return_state=True)
    inputs = keras.Input((steps, FEATURES), dtype="float64")
    hidden = keras.layers.Masking(0.0, dtype="float64")(inputs)
    model = keras.Model(inputs, layer(hidden))
    masked = _numpy(model(x))
    skipped = _run(layer, x[:, keep])
    np.testing.assert_allclose(masked[0][:, keep], skipped[0], rtol=1e-10, atol=1e-12)
    for got, want in zip(masked[1:], skipped[1:]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------
# Long sequences
# ---------------------------------------------------------------------------
# The four cells (a sequence layer runs its cell's step, see
# `tf_tests/cells/test_sequence_layers.py`; the wrappers' memories over
# 100,000 steps: `bench/long_sequence.py`).
LONG = ("HMLSTMCell", "HMRNNCell", "MultiplicativeLSTMCell", "RecurrentRecursiveCell")


@pytest.mark.slow
@pytest.mark.parametrize("name", LONG)
def test_ten_thousand_steps_in_inference_stay_finite(name):
    keras.utils.set_random_seed(0)
    layer = RECURRENT[name].make(return_state=True)
    x = RECURRENT[name].inputs(np.random.default_rng(4), 1, 10_000)
    # Compiled: Keras' time loop run eagerly costs ~20 ms a step.
    result = _numpy(tf.function(lambda x: layer(x, training=False))(x))
    assert result[0].shape[0] == 1 and result[0].ndim == 2  # the last step only
    for tensor in result:
        assert np.all(np.isfinite(tensor))


# ---------------------------------------------------------------------------
# The per-position layers: output embeddings, mixture density, tied embedding
# ---------------------------------------------------------------------------
def _head_inputs(seed, *shape, dtype="float32"):
    return np.random.default_rng(seed).normal(size=shape + (HEAD_FEATURES,)).astype(dtype)


@pytest.mark.parametrize("name", sorted(HEADS))
def test_head_rank(name):
    make, min_rank = HEADS[name]
    layer = make(None)
    x = _head_inputs(0, 2, 3)
    expected = keras.ops.convert_to_numpy(layer(x))
    if min_rank == 2:  # the output embeddings need a batch axis
        with pytest.raises(ValueError, match=r"rank >= 2.*shape=\(5,\)"):
            layer(x[0, 0])
    else:  # a per-vector map: one vector is a batch of one, without the axis
        np.testing.assert_allclose(layer(x[0, 0]), expected[0, 0], rtol=1e-6, atol=1e-6)
    # Any number of leading axes.
    deeper = keras.ops.convert_to_numpy(layer(x[None]))
    np.testing.assert_allclose(deeper[0], expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(HEADS))
@pytest.mark.parametrize("dtype", ["int32", "bool"])
def test_head_integer_features_refused(name, dtype):
    layer = HEADS[name][0](None)
    with pytest.raises(ValueError, match=rf"floating-point.*{dtype}"):
        layer(np.ones((2, 3, HEAD_FEATURES), dtype))
    if name == "GatedOutputEmbedding":  # its gates, outside `__call__`, too
        with pytest.raises(ValueError, match=rf"floating-point.*{dtype}"):
            layer.compute_gates(np.ones((2, 3, HEAD_FEATURES), dtype))


@pytest.mark.parametrize("name", sorted(HEADS))
def test_head_zero_steps_batch_of_one_and_mask(name):
    layer = HEADS[name][0](None)
    x = _head_inputs(1, 2, 4)
    pair = keras.ops.convert_to_numpy(layer(x))
    # Zero steps: an empty sequence of outputs, as keras.layers.Dense gives.
    empty = layer(np.zeros((2, 0, HEAD_FEATURES), "float32"))
    dense = keras.layers.Dense(3)(np.zeros((2, 0, HEAD_FEATURES), "float32"))
    assert tuple(empty.shape) == (2, 0, pair.shape[-1])
    assert tuple(dense.shape)[:2] == (2, 0)
    # A batch of one is its row of the batch of two.
    for row in (0, 1):
        np.testing.assert_allclose(layer(x[row:row + 1])[0], pair[row], rtol=1e-6, atol=1e-6)
    # Padding: the valid steps of a padded row are those of the row alone,
    # and the mask goes through to the loss.
    inputs = keras.Input((4, HEAD_FEATURES))
    model = keras.Model(inputs, layer(keras.layers.Masking(0.0)(inputs)))
    padded = x.copy()
    padded[1, 2:] = 0.0
    out = model(padded)
    np.testing.assert_allclose(out[1, :2], pair[1, :2], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(out._keras_mask), [[True] * 4, [True, True, False, False]])


def test_tied_embedding_ids():
    tied = hmkeras.TiedEmbedding(7, 5)
    ids = np.array([[1, 6, 0], [3, 3, 2]])
    vectors = keras.ops.convert_to_numpy(tied(ids))
    table = keras.ops.convert_to_numpy(tied.embeddings)
    np.testing.assert_array_equal(vectors, table[ids])
    # Ids of any integer dtype; float ids are cast as keras.layers.Embedding does.
    np.testing.assert_array_equal(tied(ids.astype("int64")), vectors)
    np.testing.assert_array_equal(tied(ids.astype("float32")), vectors)
    # Zero steps, a batch of one, one id.
    assert tuple(tied(np.zeros((2, 0), "int32")).shape) == (2, 0, 5)
    np.testing.assert_array_equal(tied(ids[1:]), vectors[1:])
    np.testing.assert_array_equal(tied(np.int32(6)), table[6])
    # Reverse: vectors of another size are refused, naming embedding_dim.
    with pytest.raises(ValueError, match=r"embedding_dim=5.*\(2, 4\)"):
        tied(np.zeros((2, 4), "float32"), reverse=True)


def test_recurrent_recursive_cell_out_of_range_operation_is_a_recur():
    """Padding in the operation column (any value) never breaks the step."""
    cell = hmkeras.RecurrentRecursiveCell(4, 2, seed=0)
    rnn = keras.layers.RNN(cell, return_sequences=True)
    embeddings = np.random.default_rng(5).normal(size=(2, 3, 2)).astype("float32")
    odd = cell.pack_inputs(embeddings, np.array([[0, 7, -4], [2000, 1, 0]]))
    recur = cell.pack_inputs(embeddings, np.array([[0, 2, 2], [2, 1, 0]]))
    got, want = (keras.ops.convert_to_numpy(rnn(x)) for x in (odd, recur))
    np.testing.assert_array_equal(got, want)
    assert got[0, 1, 4] == 2.0 and got[1, 0, 4] == 2.0  # executed as recur
