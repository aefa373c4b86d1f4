"""Every weight matrix of a cell is its own draw, reproducible from `seed`."""

import itertools

import keras
import numpy as np
import pytest

import hmkeras
from hmkeras.cells.independent_initializers import independent_draw

pytestmark = pytest.mark.every_backend


def _random_matrices(cell):
    """The gate blocks and boundary columns of every random matrix."""
    blocks = {}
    columns = cell._columns_per_unit
    for weight in cell.weights:
        name = weight.name
        if not name.startswith(("kernel_", "recurrent_kernel_", "top_down_kernel_")):
            continue
        value = weight.numpy()
        layer = int(name.rsplit("_", 1)[1])
        units = cell.units[layer - 1]
        blocks[name] = value[:, : columns * units]
        if value.shape[1] > columns * units:
            blocks[name + "/boundary"] = value[:, columns * units:]
    return blocks


@pytest.mark.parametrize("cls", [hmkeras.HMLSTMCell, hmkeras.HMRNNCell])
@pytest.mark.parametrize("layer_norm", [True, False])
def test_equal_sized_layers_start_from_distinct_weights(cls, layer_norm):
    keras.utils.set_random_seed(0)
    cell = cls(6, num_layers=3, layer_norm=layer_norm)
    cell.build((None, 6))  # input size = units: W_1 has the shape of W_2, W_3
    blocks = _random_matrices(cell)
    # 3 W, 3 U, 2 V and the 6 boundary columns of the two lower layers.
    assert len(blocks) == 3 + 3 + 2 + 6
    for (name_a, a), (name_b, b) in itertools.combinations(blocks.items(), 2):
        if a.shape == b.shape:
            assert not np.allclose(a, b), f"{name_a} == {name_b}"


@pytest.mark.parametrize("cls", [hmkeras.HMLSTMCell, hmkeras.HMRNNCell])
def test_initial_weights_reproducible_from_seed(cls):
    def weights(seed, global_seed):
        keras.utils.set_random_seed(global_seed)  # must not matter with `seed`
        cell = cls(5, num_layers=3, seed=seed)
        cell.build((None, 4))
        return [w.numpy() for w in cell.weights]

    same_a, same_b, other = weights(7, 0), weights(7, 1), weights(8, 0)
    for a, b in zip(same_a, same_b):
        np.testing.assert_array_equal(a, b)
    assert any(not np.allclose(a, c) for a, c in zip(same_a, other) if a.size > 1)


def test_mlstm_blocks_are_distinct_draws():
    keras.utils.set_random_seed(0)
    cell = hmkeras.MultiplicativeLSTMCell(6, multiplicative_units=6)
    cell.build((None, 6))
    value = cell.multiplicative_kernel.numpy()
    blocks = np.split(value, 4, axis=1)
    for a, b in itertools.combinations(blocks + [cell.recurrent_kernel.numpy()], 2):
        assert not np.allclose(a, b)


def test_independent_draw_keeps_deterministic_initializers():
    zeros = keras.initializers.Zeros()
    assert independent_draw(zeros, 3, seed=1) is zeros
    function = lambda shape, dtype=None: np.ones(shape)  # noqa: E731
    assert independent_draw(function, 3) is function
    seeded = keras.initializers.GlorotUniform(seed=5)
    a = independent_draw(seeded, 0)((4, 4))
    b = independent_draw(seeded, 1)((4, 4))
    again = independent_draw(seeded, 0)((4, 4))
    assert not np.allclose(a, b)
    np.testing.assert_array_equal(a, again)
