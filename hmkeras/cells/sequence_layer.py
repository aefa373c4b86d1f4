"""Sequence layers over the library's cells, as `keras.layers.LSTM` is over
`LSTMCell`.

`SequenceLayer` is the base of `HMLSTM`, `HMRNN` and `MultiplicativeLSTM`:
an `hmkeras.RNN` (a `keras.layers.RNN` that opens its cell's sequence
before the time loop, `sequence_rnn`) that builds and owns its cell from the cell's own
arguments (so `layer.cell` is an ordinary cell that `split_outputs`,
`SlopeAnnealing`, `BoundaryMonitor` and checkpoints see), exposes the
cell's arguments as read-only attributes, and has a flat configuration
(the cell's arguments next to the RNN's, as `keras.layers.LSTM`).

What it adds to `hmkeras.RNN(cell)` is speed: the work that needs the
whole sequence is done before the time loop.  The cell's per-sequence
constants (stacked kernels, weight-normalized or layer-normalized kernels)
are made once, as under `hmkeras.RNN(cell)`, and the input projection of every step (the
bottom layer's `W_1 x_t` of the hierarchical cells, with its layer
normalization; the mLSTM's `W_mx x_t` and `W_*x x_t`) is one matrix
product over the whole sequence, `cell.project_sequence`.  The time loop
then steps `cell.call_projected` over the projections.  The results are
those of `hmkeras.RNN(cell)` up to the rounding of the larger matrix
product.

A cell served by a sequence layer implements:

* `project_sequence(sequences, training) -> (batch, time, P)`, the input
  projections of all steps (input dropout applied);
* `call_projected(projected, states, training) -> (output, new_states)`,
  the step of `call` from one step of those projections.

The time loop is Keras' own: the public `keras.layers.RNN.inner_loop` of
a loop made once with the layer (`_ProjectedLoop`, whose cell is the
layer's cell stepping over the projections), so masking, `go_backwards`,
`unroll` and `zero_output_for_mask` behave as in every Keras RNN.
"""

import inspect

import keras
from keras import ops

from hmkeras import argument_checks
from hmkeras.cells.sequence_rnn import RNN

# Arguments of `keras.layers.RNN` that a sequence layer takes.
RNN_ARGUMENTS = (
    "return_sequences", "return_state", "go_backwards", "stateful", "unroll",
    "zero_output_for_mask",
)
# Base-layer keys of a cell's configuration, which the layer has itself.
_LAYER_KEYS = ("name", "trainable", "dtype")


def apply_to_steps(function, sequences):
    """`function` of the `(rows, features)` matrix of every step.

    Merges the batch and time axes, so that `function` does one matrix
    product for the whole sequence, and restores them.
    """
    batch, time = ops.shape(sequences)[0], ops.shape(sequences)[1]
    flat = ops.reshape(sequences, (-1, sequences.shape[-1]))
    result = function(flat)
    return ops.reshape(result, (batch, time, *result.shape[1:]))


def cell_argument_names(cell_class):
    """The names of the cell constructor's arguments, without `self` and
    `**kwargs`: the arguments a sequence layer passes to its cell."""
    parameters = inspect.signature(cell_class.__init__).parameters
    return tuple(
        name for name, p in parameters.items()
        if name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    )


def cell_base_arguments(layer_kwargs):
    """The base-layer arguments a sequence layer's cell shares with the
    layer (`dtype`, `trainable`), from the layer's `**kwargs`."""
    return {"dtype": layer_kwargs.get("dtype"),
            "trainable": layer_kwargs.get("trainable", True)}


def _cell_property(name):
    def getter(self):
        return getattr(self.cell, name)

    getter.__name__ = name
    getter.__doc__ = f"The cell's `{name}` (read-only)."
    return property(getter)


class SequenceLayer(RNN):
    """Base class of the sequence layers; see the module docstring.

    A subclass sets `cell_class` and `cell_name` (the name Keras gives a
    cell of that class, so that weight paths are those of `RNN(cell)`:
    `<layer name>/<cell name>/<weight>`), and writes its `__init__` as
    Keras' `LSTM` does: the cell's constructor arguments in the cell's
    order, the layer's own, then the keyword-only RNN arguments
    (`RNN_ARGUMENTS`) and `**kwargs`; it makes its cell and passes it here.
    Its docstring documents them all in its `Args` section, in that order,
    each cell argument as the cell documents it
    (`tf_tests/test_signatures.py` checks the signature and the text).  The
    cell's arguments are read-only attributes of the layer.

    Args:
        cell: The layer's cell, an instance of `cell_class`.
        return_sequences, return_state, go_backwards, stateful, unroll,
            zero_output_for_mask: As in `keras.layers.RNN`; booleans.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.
    """

    cell_class = None
    cell_name = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.cell_class is None:
            return
        for name in cell_argument_names(cls.cell_class):
            if not any(name in vars(base) for base in cls.__mro__):
                setattr(cls, name, _cell_property(name))

    def __init__(
        self,
        cell,
        *,
        return_sequences=False,
        return_state=False,
        go_backwards=False,
        stateful=False,
        unroll=False,
        zero_output_for_mask=False,
        **kwargs,
    ):
        # Keras' RNN reads any truthy value as True: refuse non-booleans.
        rnn_arguments = {
            "return_sequences": return_sequences, "return_state": return_state,
            "go_backwards": go_backwards, "stateful": stateful, "unroll": unroll,
            "zero_output_for_mask": zero_output_for_mask,
        }
        rnn_arguments = {k: argument_checks.check_bool(k, v) for k, v in rnn_arguments.items()}
        super().__init__(cell, **rnn_arguments, **kwargs)
        self.input_spec = keras.layers.InputSpec(ndim=3)
        self._projected_loop = _ProjectedLoop(self)

    def needs_all_outputs(self, training):
        """Whether the time loop keeps every step's output even without
        `return_sequences` (for a loss over the sequence); False here."""
        return False

    def build(self, sequences_shape, initial_state_shape=None):
        argument_checks.check_time_steps(type(self).__name__, sequences_shape)
        super().build(sequences_shape, initial_state_shape)

    def call(self, sequences, initial_state=None, mask=None, training=False):
        # A clear error for an empty sequence (Keras' loop fails on it deep
        # inside); a symbolic input of length 0 is refused at `build`.
        argument_checks.check_time_steps(type(self).__name__, sequences.shape)
        return super().call(
            sequences, initial_state=initial_state, mask=mask, training=training
        )

    def inner_loop(self, sequences, initial_state, mask, training=False):
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        argument_checks.check_float_inputs(type(self).__name__, sequences)
        # Work on the whole sequence, before the loop (one matrix product).
        projected = self.cell.project_sequence(sequences, training=training)
        return self._projected_loop.run(
            projected, initial_state, mask, training=training,
            return_sequences=self.return_sequences or self.needs_all_outputs(training),
        )

    def get_config(self):
        config = super().get_config()
        del config["cell"]
        cell_config = self.cell.get_config()
        for key in _LAYER_KEYS:
            cell_config.pop(key, None)
        return {**config, **cell_config}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class _ProjectedLoop:
    """A sequence layer's time loop over the projections, made once with
    the layer: Keras' own loop (`keras.layers.RNN.inner_loop`) stepping
    `cell.call_projected` (see the module docstring), with the layer's
    loop settings as they are at the call.

    Not a layer: it has no weights, and its cell is the layer's (tracking
    it would add a second path to the cell's weights).  Keras' loop passes
    a cell that is not a layer no `training`; the loop holds the call's.
    """

    # The layer's `keras.layers.RNN` settings that the loop follows.
    SETTINGS = ("go_backwards", "unroll", "zero_output_for_mask")

    def __init__(self, layer):
        self.layer = layer
        self.cell = layer.cell
        self.state_size = layer.cell.state_size
        self.output_size = layer.cell.output_size
        self.training = False
        self._loop = keras.layers.RNN(self, name=f"{layer.name}_loop")

    def call(self, projected, states):
        """One step: the cell's `call_projected`."""
        return self.cell.call_projected(projected, list(states), training=self.training)

    __call__ = call

    def run(self, projected, initial_state, mask, training, return_sequences):
        """The loop over `projected`: Keras' `(last_output, outputs, states)`."""
        self.training = training
        for name in self.SETTINGS:
            setattr(self._loop, name, getattr(self.layer, name))
        self._loop.return_sequences = return_sequences
        return self._loop.inner_loop(projected, initial_state, mask, training=training)
