"""AveragingWrapper against a NumPy reference that keeps an explicit buffer.

The reference is driven by the wrapped cell's own per-step outputs (read
from the wrapper's output with `return_cell_output=True`) and keeps every
remembered state in a Python list, starting with the zero `h_0` (Salton &
Kelleher Eq. 10-11): the wrapper's running sum and count must give the
explicit mean over that buffer at every step, reset points included.
"""

import keras
import numpy as np
from backend_support import to_numpy
import pytest

import hmkeras
from hmkeras.wrappers import AveragingWrapper

pytestmark = pytest.mark.every_backend
# float64 is float64 on TensorFlow; on JAX without `JAX_ENABLE_X64` it is
# float32, so there the references hold to float32 rounding.
FLOAT64 = (dict(atol=1e-10) if keras.backend.backend() == "tensorflow"
           else dict(rtol=2e-5, atol=1e-6))

B, T, F = 3, 12, 4


def _run(wrapper, x, mask=None):
    rnn = keras.layers.RNN(wrapper, return_sequences=True, dtype="float64")
    y = rnn(x) if mask is None else rnn(x, mask=mask)
    return wrapper.split_outputs(to_numpy(y))


def _reference(wrapper, hs, resets=None, include_current=False):
    """Explicit-buffer mean and Eq. (11), per row and step."""
    kernel = wrapper.output_kernel.numpy()
    bias = wrapper.output_bias.numpy()
    batch, steps, size = hs.shape
    out = np.zeros((batch, steps, kernel.shape[1]))
    contexts = np.zeros((batch, steps, size))
    for b in range(batch):
        buffer = [np.zeros(size)]  # h_0 = 0, counted
        for t in range(steps):
            h = hs[b, t]
            seen = buffer + [h] if include_current else buffer
            contexts[b, t] = np.mean(seen, axis=0)
            out[b, t] = np.tanh(np.concatenate([h, contexts[b, t]]) @ kernel + bias)
            buffer.append(h)
            if resets is not None and resets[b, t]:
                buffer = [np.zeros(size)]
    return out, contexts


def _lstm(units=6):
    return keras.layers.LSTMCell(units, dtype="float64")


@pytest.mark.parametrize("include_current", [False, True])
def test_matches_explicit_buffer_mean_lstm(include_current):
    keras.utils.set_random_seed(0)
    wrapper = AveragingWrapper(_lstm(), include_current=include_current,
                               return_cell_output=True, dtype="float64")
    x = np.random.default_rng(0).normal(size=(B, T, F))
    parts = _run(wrapper, x)
    hs = to_numpy(parts.cell_output)
    expected, contexts = _reference(wrapper, hs, include_current=include_current)
    np.testing.assert_allclose(to_numpy(parts.output), expected, **FLOAT64)
    # The first context is exactly the zero h_0 (or half of h_1).
    first = hs[:, 0] / 2 if include_current else np.zeros_like(hs[:, 0])
    np.testing.assert_allclose(contexts[:, 0], first)
    # The wrapped cell's recurrence is unchanged: a bare RNN gives its outputs.
    bare = keras.layers.RNN(wrapper.cell, return_sequences=True, dtype="float64")(x)
    np.testing.assert_allclose(hs, to_numpy(bare), **FLOAT64)


@pytest.mark.parametrize("layers", ["all", "top"])
@pytest.mark.parametrize("cls", [hmkeras.HMLSTMCell, hmkeras.HMRNNCell])
def test_hierarchical_cell_averages_hiddens_never_boundaries(cls, layers):
    keras.utils.set_random_seed(1)
    cell = cls([5, 4, 3], dtype="float64")
    wrapper = AveragingWrapper(cell, hierarchy_layers=layers, return_cell_output=True,
                               dtype="float64")
    x = np.random.default_rng(1).normal(size=(B, T, F))
    parts = _run(wrapper, x)
    hiddens, boundaries = cell.split_outputs(parts.cell_output)
    hiddens = [to_numpy(h) for h in hiddens]
    hs = hiddens[-1] if layers == "top" else np.concatenate(hiddens, axis=-1)
    assert wrapper.remembered_size == (3 if layers == "top" else 12)
    expected, _ = _reference(wrapper, hs)
    np.testing.assert_allclose(to_numpy(parts.output), expected, **FLOAT64)
    assert to_numpy(boundaries).shape == (B, T, 2)


def test_multiplicative_lstm_cell():
    keras.utils.set_random_seed(2)
    wrapper = AveragingWrapper(hmkeras.MultiplicativeLSTMCell(5, dtype="float64"),
                               units=7, return_cell_output=True, dtype="float64")
    x = np.random.default_rng(2).normal(size=(B, T, F))
    parts = _run(wrapper, x)
    assert parts.output.shape == (B, T, 7)
    expected, _ = _reference(wrapper, to_numpy(parts.cell_output))
    np.testing.assert_allclose(to_numpy(parts.output), expected, **FLOAT64)


@pytest.mark.parametrize("mode", ["token_id", "flag"])
def test_reset_column_clears_memory_after_the_step(mode):
    keras.utils.set_random_seed(3)
    rng = np.random.default_rng(3)
    ids = rng.integers(0, 4, size=(B, T))
    ids[0, 3] = ids[1, 0] = ids[2, T - 1] = 2  # a sentence end in every row
    resets = ids == 2
    column = ids if mode == "token_id" else resets
    kwargs = {"reset_token_id": 2} if mode == "token_id" else {"reset_flag": True}
    wrapper = AveragingWrapper(_lstm(), return_cell_output=True, dtype="float64", **kwargs)
    features = rng.normal(size=(B, T, F))
    x = np.concatenate([features, column[..., None].astype("float64")], axis=-1)
    parts = _run(wrapper, x)
    hs = to_numpy(parts.cell_output)
    expected, _ = _reference(wrapper, hs, resets=resets)
    np.testing.assert_allclose(to_numpy(parts.output), expected, **FLOAT64)
    # The cell never sees the column: its outputs are those of the features.
    bare = keras.layers.RNN(wrapper.cell, return_sequences=True, dtype="float64")(features)
    np.testing.assert_allclose(hs, to_numpy(bare), **FLOAT64)
    # And the reset matters: without it the outputs differ after row 0's end.
    plain = AveragingWrapper(wrapper.cell, return_cell_output=True, dtype="float64")
    plain.build((None, F))
    plain.set_weights(wrapper.get_weights())
    other = _run(plain, features)
    assert not np.allclose(to_numpy(other.output)[0, 4:], to_numpy(parts.output)[0, 4:])


def test_state_layout_and_zero_state_is_empty_memory():
    wrapper = AveragingWrapper(_lstm(6), dtype="float64")
    assert wrapper.state_size == [6, 6, 6, 1]
    assert wrapper.output_size == 6
    states = wrapper.get_initial_state(batch_size=2)
    assert [tuple(s.shape) for s in states] == [(2, 6), (2, 6), (2, 6), (2, 1)]
    assert all(float(np.abs(s).sum()) == 0.0 for s in states)
