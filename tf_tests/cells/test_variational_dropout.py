"""Tests of hmkeras.cells.variational_dropout: per-sequence masks and constants."""

import inspect
import re

import backend_support
import keras
import numpy as np
import pytest
from keras import ops

import hmkeras
from hmkeras.cells import variational_dropout
from hmkeras.cells.variational_dropout import VariationalDropoutMixin

pytestmark = pytest.mark.every_backend


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
    return hmkeras.RNN(ProbeCell(5, **kwargs), return_sequences=True)


X = np.ones((16, 7, 6), "float32")


def _steady(out):
    """Whether every step of `out` equals its first (one mask per sequence)."""
    return np.array_equal(out, np.broadcast_to(out[:, :1], out.shape))


@pytest.mark.parametrize("unroll", [False, True])
def test_one_sequence_per_call_of_the_loop(unroll):
    """`hmkeras.RNN` opens one sequence before its loop and closes it after,
    also for the cells of a `StackedRNNCells`."""
    layer = _probe_rnn(dropout=0.5)
    layer.unroll = unroll
    for calls in (1, 2):
        layer(X, training=True)
        events = layer.cell.events
        assert events.count("begin") == events.count("end") == calls, events
        assert events[-1] == "end" and events.count("step") >= calls
        assert not layer.cell.in_sequence
    cells = [ProbeCell(5, dropout=0.5), ProbeCell(5, recurrent_dropout=0.5)]
    out = hmkeras.RNN(keras.layers.StackedRNNCells(cells), return_sequences=True)(
        X, training=True)
    for cell in cells:
        assert cell.events[0] == "begin" and cell.events.count("begin") == 1
        assert cell.events[-1] == "end"
    assert _steady(ops.convert_to_numpy(out))


def test_keras_rnn_refuses_a_mask_it_cannot_make_per_sequence():
    """`keras.layers.RNN` opens no sequence for a custom cell: a step that
    needs a mask says so, rather than drawing one per step."""
    for rates in ({"dropout": 0.5}, {"recurrent_dropout": 0.5}):
        name = next(iter(rates))
        layer = keras.layers.RNN(ProbeCell(5, **rates), return_sequences=True)
        with pytest.raises(ValueError, match=rf"`{name}=0.5`.*no sequence is open.*hmkeras.RNN"):
            layer(X, training=True)
        np.testing.assert_array_equal(ops.convert_to_numpy(layer(X)), 1.0)
    stacked = keras.layers.RNN(keras.layers.StackedRNNCells([ProbeCell(5, dropout=0.5)]))
    with pytest.raises(ValueError, match="no sequence is open"):
        stacked(X, training=True)


def test_no_stack_inspection():
    """The module decides nothing from the Python call stack."""
    source = inspect.getsource(variational_dropout)
    for name in ("currentframe", "f_back", "f_code", "_getframe", "get_default_graph"):
        assert name not in source


def test_no_private_keras_base():
    assert VariationalDropoutMixin.__bases__ == (object,)
    for name in ("get_dropout_mask", "reset_dropout_mask"):
        assert not hasattr(VariationalDropoutMixin, name)


@pytest.mark.parametrize("unroll", [False, True])
def test_constants_once_per_sequence_or_every_step(unroll):
    """Once per call under `hmkeras.RNN`; at every step (the same values)
    under `keras.layers.RNN` (every step it runs in Python: every step
    eagerly or unrolled, the traced body of a `lax.scan`)."""
    for steps in (2, 6):
        scoped = hmkeras.RNN(ProbeCell(5), unroll=unroll, return_sequences=True)
        bare = keras.layers.RNN(ProbeCell(5), unroll=unroll, return_sequences=True)
        np.testing.assert_array_equal(
            ops.convert_to_numpy(scoped(X[:, :steps])), ops.convert_to_numpy(bare(X[:, :steps])))
        assert scoped.cell.constant_builds == 1, (steps, scoped.cell.constant_builds)
        assert bare.cell.constant_builds == bare.cell.events.count("step") >= 1


def test_masks_constant_in_time_and_differ_across_rows_and_sequences():
    layer = _probe_rnn(dropout=0.5, recurrent_dropout=0.3, seed=3)
    first = ops.convert_to_numpy(layer(X, training=True))
    second = ops.convert_to_numpy(layer(X, training=True))
    for out in (first, second):
        assert _steady(out)  # the same mask at every step of a sequence
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


def test_masks_and_constants_once_per_sequence_compiled():
    """Compiled (XLA on TensorFlow, `jax.jit` on JAX): one mask per call,
    a new one at the next call, the constants made once per trace."""
    layer = _probe_rnn(dropout=0.5, recurrent_dropout=0.5)
    layer(X[:, :2])  # build
    builds = layer.cell.constant_builds
    fn = backend_support.compiled(layer)
    first, second = fn(X), fn(X)
    for out in (first, second):
        assert _steady(out)
    assert not np.array_equal(first, second)
    assert layer.cell.constant_builds - builds <= 2  # traced, not per step
    assert not layer.cell.in_sequence


def test_loop_of_ones_own_with_scan():
    """`keras.ops.scan` between `begin_sequence` and `end_sequence`: one
    mask for every step (the recurrent one is read: Keras' TensorFlow scan
    needs outputs shaped as the carry)."""
    cell = ProbeCell(5, dropout=0.5, recurrent_dropout=0.5, seed=2)
    state = ops.zeros((16, 5))
    cell(X[:, 0], [state])  # build
    cell.begin_sequence(X[:, 0])

    def step(carry, x):
        output, new_states = cell(x, [carry], training=True)
        return new_states[0], output[:, 6:]

    _, outputs = ops.scan(step, state, ops.transpose(ops.convert_to_tensor(X), (1, 0, 2)))
    cell.end_sequence()
    masks = np.transpose(ops.convert_to_numpy(outputs), (1, 0, 2))
    assert _steady(masks) and set(np.unique(masks)) == {0.0, 2.0}


def test_same_seed_same_masks():
    a = _probe_rnn(dropout=0.5, seed=7)(X, training=True)
    b = _probe_rnn(dropout=0.5, seed=7)(X, training=True)
    np.testing.assert_array_equal(ops.convert_to_numpy(a), ops.convert_to_numpy(b))


def test_called_directly_needs_an_open_sequence_for_masks():
    cell = ProbeCell(5, dropout=0.5, seed=1)
    x, state = X[:, 0], [np.zeros((16, 5), "float32")]
    with pytest.raises(ValueError, match="no sequence is open"):
        cell(x, state, training=True)
    cell(x, state)  # inference: no mask, the constants made per call
    assert cell.constant_builds == 1
    # Stepping by hand inside begin/end_sequence: one mask for all steps.
    cell.begin_sequence(x)
    a, _ = cell(x, state, training=True)
    b, _ = cell(x, state, training=True)
    cell.end_sequence()
    np.testing.assert_array_equal(ops.convert_to_numpy(a), ops.convert_to_numpy(b))
    assert cell.constant_builds == 2
    assert not cell.in_sequence


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
