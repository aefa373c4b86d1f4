"""Bad arguments, documented signatures, configurations and the output layout."""

import keras
import numpy as np
import pytest

import hmkeras
from hmkeras.wrappers import AttentionWrapper
from hmkeras.wrappers import AveragingWrapper

pytestmark = pytest.mark.every_backend


@pytest.mark.parametrize("kwargs, name", [
    ({"memory_size": 0}, "memory_size"),
    ({"memory_size": -3}, "memory_size"),
    ({"memory_size": 2.5}, "memory_size"),
    ({"memory_size": True}, "memory_size"),
    ({"memory_size": 3, "score": "dot"}, "score"),
    ({"memory_size": 3, "attention_units": 0}, "attention_units"),
    ({"memory_size": 3, "units": 0}, "units"),
    ({"memory_size": 3, "hierarchy_layers": "middle"}, "hierarchy_layers"),
    ({"memory_size": 3, "reset_token_id": -1}, "reset_token_id"),
    ({"memory_size": 3, "reset_flag": 1}, "reset_flag"),
    ({"memory_size": 3, "reset_flag": True, "reset_token_id": 0}, "reset_token_id"),
])
def test_bad_arguments_name_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        AttentionWrapper(keras.layers.LSTMCell(3), **kwargs)


@pytest.mark.parametrize("cell", [
    keras.layers.Dense(3), "lstm", None,
    keras.layers.StackedRNNCells([keras.layers.LSTMCell(3), keras.layers.LSTMCell(3)]),
])
@pytest.mark.parametrize("cls", [AveragingWrapper, AttentionWrapper])
def test_wrapping_a_non_cell_is_refused(cls, cell):
    args = (cell,) if cls is AveragingWrapper else (cell, 3)
    with pytest.raises(TypeError, match="`cell`"):
        cls(*args)


def test_split_outputs_layout_and_checks():
    wrapper = AttentionWrapper(hmkeras.HMLSTMCell([4, 3]), 5, units=2,
                               return_cell_output=True, return_attention=True)
    y = np.arange(2 * (2 + 8 + 5), dtype="float32").reshape(2, 2 + 8 + 5)
    parts = wrapper.split_outputs(y)
    np.testing.assert_array_equal(parts.output, y[:, :2])
    np.testing.assert_array_equal(parts.cell_output, y[:, 2:10])
    np.testing.assert_array_equal(parts.attention, y[:, 10:])
    np.testing.assert_array_equal(wrapper.cell_outputs([y]), y[:, 2:10])
    with pytest.raises(ValueError, match="output_size=15"):
        wrapper.split_outputs(y[:, :-1])
