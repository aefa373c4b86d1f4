"""Variational dropout in the hierarchical cells (the shared machinery)."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
from backend_support import to_numpy
import pytest
from keras import ops

import hm_reference
import hmkeras
from hm_fixtures import FLOAT64, UNITS, inputs, make_cell

pytestmark = pytest.mark.every_backend


def twin_without_dropout(cell, cls):
    twin = make_cell(cls)
    for target, source in zip(twin.weights, cell.weights):
        target.assign(ops.convert_to_numpy(source))
    return twin


@pytest.mark.parametrize("cls", [hmkeras.HMLSTMCell, hmkeras.HMRNNCell])
def test_dropout_is_off_at_inference(cls):
    cell = make_cell(cls, dropout=0.5, recurrent_dropout=0.5, seed=3)
    twin = twin_without_dropout(cell, cls)
    x = inputs()
    a = keras.layers.RNN(cell, return_sequences=True, dtype="float64")(x, training=False)
    b = keras.layers.RNN(twin, return_sequences=True, dtype="float64")(x, training=False)
    np.testing.assert_array_equal(to_numpy(a), to_numpy(b))


def test_input_mask_is_one_per_sequence_and_matches_reference():
    cell = make_cell(dropout=0.5, seed=11)
    x = inputs()
    step = lambda t: ops.convert_to_tensor(x[:, t], cell.compute_dtype)  # noqa: E731
    cell.begin_sequence(step(0))
    try:
        mask = to_numpy(cell.input_dropout_mask(step(0), training=True))
        states = cell.get_initial_state(batch_size=x.shape[0])
        outputs = []
        for t in range(x.shape[1]):
            again = to_numpy(cell.input_dropout_mask(step(t), training=True))
            np.testing.assert_array_equal(again, mask)  # constant across time
            y, states = cell(step(t), states, training=True)
            outputs.append(to_numpy(y))
    finally:
        cell.end_sequence()
    assert set(np.unique(mask)) == {0.0, 2.0}
    assert not np.all(mask == mask[0])  # rows differ
    ref = hm_reference.hmlstm(x * mask[:, None, :], hm_reference.cell_weights(cell), UNITS)
    np.testing.assert_allclose(np.stack(outputs, 1), ref["outputs"], **FLOAT64)


@pytest.mark.parametrize("cls", [hmkeras.HMLSTMCell, hmkeras.HMRNNCell])
def test_recurrent_dropout_keeps_copy_exact_and_changes_training_outputs(cls):
    cell = make_cell(cls, recurrent_dropout=0.5, seed=5)
    x = inputs()
    rnn = hmkeras.RNN(cell, return_sequences=True, dtype="float64")
    trained = to_numpy(rnn(x, training=True))
    plain = to_numpy(rnn(x, training=False))
    assert not np.allclose(trained, plain)
    hiddens, z = cell.split_outputs(trained)
    top = to_numpy(hiddens[-1])
    z_last = to_numpy(z)[..., -1]
    # The top layer COPYs whenever z^{L-1}_t = 0: h is carried bit for bit.
    copies = z_last[:, 1:] == 0.0
    assert copies.any()
    np.testing.assert_array_equal(top[:, 1:][copies], top[:, :-1][copies])


def test_dropout_arguments_are_validated_and_serialized():
    with pytest.raises(ValueError, match="dropout"):
        hmkeras.HMLSTMCell(4, dropout=1.0)
    with pytest.raises(ValueError, match="recurrent_dropout"):
        hmkeras.HMRNNCell(4, recurrent_dropout=-0.1)
    config = hmkeras.HMLSTMCell(4, dropout=0.25, recurrent_dropout=0.1, seed=3).get_config()
    assert (config["dropout"], config["recurrent_dropout"], config["seed"]) == (0.25, 0.1, 3)
    rebuilt = hmkeras.HMLSTMCell.from_config(config)
    assert rebuilt.dropout == 0.25 and rebuilt.recurrent_dropout == 0.1
