"""Tests of hmkeras.cells.variational_dropout: per-sequence masks and constants."""

import re

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from hmkeras.cells import variational_dropout
from hmkeras.cells.variational_dropout import VariationalDropoutMixin


class ProbeCell(VariationalDropoutMixin, keras.layers.Layer):
    """Outputs [input mask | recurrent mask] (ones where no mask) each step.

    Also records the order of sequence hooks and steps in `events`, and
    counts calls of `build_sequence_constants`.
    """

    def __init__(self, units, dropout=0.0, recurrent_dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units
        self.output_size = None  # set in build
        self.init_variational_dropout(dropout, recurrent_dropout, seed)
        self.events = []
        self.constant_builds = 0

    def build(self, input_shape):
        self.output_size = input_shape[-1] + self.units

    def build_sequence_constants(self, step_input):
        self.constant_builds += 1
        return {"two": ops.full((), 2.0, dtype=self.compute_dtype)}

    def begin_sequence(self, step_input):
        self.events.append("begin")
        super().begin_sequence(step_input)

    def end_sequence(self):
        self.events.append("end")
        super().end_sequence()

    def call(self, inputs, states, training=False):
        self.events.append("step")
        x_mask = self.input_dropout_mask(inputs, training)
        h_mask = self.recurrent_dropout_mask(inputs, training)
        if x_mask is None:
            x_mask = ops.ones_like(inputs)
        if h_mask is None:
            h_mask = ops.ones_like(states[0])
        two = self.sequence_constants(inputs)["two"]
        output = ops.concatenate([x_mask, h_mask], axis=-1) * two / 2.0
        return output, [states[0]]


def _probe_rnn(**kwargs):
    return keras.layers.RNN(ProbeCell(5, **kwargs), return_sequences=True)


X = np.ones((16, 7, 6), "float32")


@pytest.mark.parametrize("unroll", [False, True])
def test_one_sequence_per_rnn_call(unroll):
    """The cell opens one sequence per `keras.layers.RNN` call, at its first
    step (Keras' shape-probing step), and uses it for every step after."""
    layer = _probe_rnn(dropout=0.5)
    layer.unroll = unroll
    for calls in (1, 2):
        layer(X, training=True)  # eager: every step runs in Python
        events = layer.cell.events
        assert events.count("begin") == calls, events
        assert events[1] == "begin" and events.count("step") >= calls * X.shape[1]
        assert not layer.cell.in_sequence  # outside the call: none usable

    # Also for cells inside StackedRNNCells.
    cells = [ProbeCell(5), ProbeCell(5)]
    keras.layers.RNN(keras.layers.StackedRNNCells(cells))(X)
    for cell in cells:
        assert cell.events.count("begin") == 1 and cell.events[1] == "begin"


def test_rnn_call_in_progress():
    assert variational_dropout.rnn_call_in_progress() is None
    frames = []

    class Recorder(ProbeCell):
        def call(self, inputs, states, training=False):
            frames.append(variational_dropout.rnn_call_in_progress())
            return super().call(inputs, states, training)

    layer = keras.layers.RNN(Recorder(5))
    layer(X[:, :3])
    layer(X[:, :3])
    assert all(frame is not None for frame in frames)
    first, second = frames[:len(frames) // 2], frames[len(frames) // 2:]
    assert len({id(f) for f in first}) == 1 and first[0] is not second[0]


def test_no_private_keras_base():
    assert VariationalDropoutMixin.__bases__ == (object,)
    for name in ("get_dropout_mask", "reset_dropout_mask"):
        assert not hasattr(VariationalDropoutMixin, name)


@pytest.mark.parametrize("unroll", [False, True])
def test_constants_built_once_per_sequence(unroll):
    for steps in (2, 6):
        layer = keras.layers.RNN(ProbeCell(5), unroll=unroll)
        layer(X[:, :steps])
        assert layer.cell.constant_builds == 1, (steps, layer.cell.constant_builds)


def test_masks_constant_in_time_and_differ_across_rows_and_sequences():
    layer = _probe_rnn(dropout=0.5, recurrent_dropout=0.3, seed=3)
    first = ops.convert_to_numpy(layer(X, training=True))
    second = ops.convert_to_numpy(layer(X, training=True))
    for out in (first, second):
        # Same mask at every step of a sequence.
        np.testing.assert_array_equal(out, np.broadcast_to(out[:, :1], out.shape))
        masks = out[:, 0]
        x_mask, h_mask = masks[:, :6], masks[:, 6:]
        # Inverted dropout values.
        np.testing.assert_allclose(np.unique(x_mask), [0.0, 2.0])
        np.testing.assert_allclose(np.unique(h_mask), [0.0, 1.0 / 0.7], rtol=1e-6)
        # Different rows of the batch get different masks.
        assert len({row.tobytes() for row in masks}) > 1
    # A new sequence gets a new mask.
    assert not np.array_equal(first, second)


def test_masks_off_at_inference():
    layer = _probe_rnn(dropout=0.5, recurrent_dropout=0.5)
    np.testing.assert_array_equal(ops.convert_to_numpy(layer(X, training=False)), 1.0)
    np.testing.assert_array_equal(ops.convert_to_numpy(layer(X)), 1.0)


def test_masks_in_compiled_graph():
    layer = _probe_rnn(dropout=0.5)
    fn = tf.function(lambda x: layer(x, training=True))
    out = fn(X).numpy()
    np.testing.assert_array_equal(out, np.broadcast_to(out[:, :1], out.shape))
    assert not np.array_equal(out, fn(X).numpy())
    assert not layer.cell.in_sequence


def test_masks_and_constants_once_per_sequence_under_xla():
    layer = _probe_rnn(dropout=0.5, recurrent_dropout=0.5)
    fn = tf.function(lambda x: layer(x, training=True), jit_compile=True)
    first, second = fn(X).numpy(), fn(X).numpy()
    for out in (first, second):
        np.testing.assert_array_equal(out, np.broadcast_to(out[:, :1], out.shape))
    assert not np.array_equal(first, second)
    assert layer.cell.constant_builds == 1  # traced once: one sequence


def test_same_seed_same_masks():
    a = _probe_rnn(dropout=0.5, seed=7)(X, training=True)
    b = _probe_rnn(dropout=0.5, seed=7)(X, training=True)
    np.testing.assert_array_equal(ops.convert_to_numpy(a), ops.convert_to_numpy(b))


def test_called_directly_draws_per_call_unless_a_sequence_is_open():
    cell = ProbeCell(5, dropout=0.5, seed=1)
    x, state = X[:, 0], [np.zeros((16, 5), "float32")]
    # No sequence: every call draws a new mask and rebuilds the constants.
    a, _ = cell(x, state, training=True)
    b, _ = cell(x, state, training=True)
    assert not np.array_equal(ops.convert_to_numpy(a), ops.convert_to_numpy(b))
    assert cell.constant_builds == 2
    # Stepping by hand inside begin/end_sequence: one mask for all steps.
    cell.begin_sequence(x)
    a, _ = cell(x, state, training=True)
    b, _ = cell(x, state, training=True)
    cell.end_sequence()
    np.testing.assert_array_equal(ops.convert_to_numpy(a), ops.convert_to_numpy(b))
    assert cell.constant_builds == 3
    assert not cell.in_sequence


def test_sequence_from_another_graph_is_not_used():
    cell = ProbeCell(5, dropout=0.5)
    x, state = X[:, 0], [np.zeros((16, 5), "float32")]
    cell(x, state)  # build
    tf.function(lambda t: cell.begin_sequence(t))(x)  # left open in a dead graph
    assert not cell.in_sequence
    out, _ = cell(x, state, training=True)  # falls back to a fresh mask
    assert np.isfinite(ops.convert_to_numpy(out)).all()


def test_recurrent_mask_list_of_sizes():
    class TwoLayerProbe(ProbeCell):
        @property
        def recurrent_dropout_units(self):
            return [3, 4]

    cell = TwoLayerProbe(5, recurrent_dropout=0.5)
    cell.begin_sequence(X[:, 0])
    masks = cell.recurrent_dropout_mask(X[:, 0], training=True)
    cell.end_sequence()
    assert [tuple(m.shape) for m in masks] == [(16, 3), (16, 4)]


def test_wrapper_helpers_forward_to_inner_cells():
    inner = ProbeCell(5, dropout=0.5)
    variational_dropout.begin_sequence(inner, X[:, 0])
    assert inner.in_sequence
    variational_dropout.end_sequence(inner)
    assert not inner.in_sequence

    lstm = keras.layers.LSTMCell(5, dropout=0.5)
    lstm_states = [np.zeros((16, 5), "float32")] * 2
    variational_dropout.begin_sequence(lstm, X[:, 0], lstm_states)
    assert lstm._dropout_mask is not None
    variational_dropout.end_sequence(lstm)
    assert lstm._dropout_mask is None
    with pytest.raises(ValueError, match="states"):
        variational_dropout.begin_sequence(lstm, X[:, 0])


@pytest.mark.parametrize("name", ["dropout", "recurrent_dropout"])
@pytest.mark.parametrize("value", [-0.1, 1.0, 1.5, float("nan"), "0.2", True])
def test_bad_rates(name, value):
    with pytest.raises(ValueError, match=rf"`{name}` must be a float in \[0, 1\)"):
        ProbeCell(5, **{name: value})


def test_bad_seed():
    with pytest.raises(ValueError, match="`seed`"):
        ProbeCell(5, seed=1.5)


def test_module_docstring_example_runs():
    match = re.search(r"```python\n(.*?)```", variational_dropout.__doc__, re.S)
    namespace = {}
    exec(compile(match.group(1), "<docstring example>", "exec"), namespace)
    assert tuple(namespace["y"].shape) == (2, 8)
