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
a loop layer made for the call (`_ProjectedSteps` is its cell, the layer's
cell stepping over the projections), so masking, `go_backwards`, `unroll`
and `zero_output_for_mask` behave as in every Keras RNN.
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


def _cell_parameters(cell_class):
    """The cell constructor's parameters, without `self` and `**kwargs`."""
    parameters = inspect.signature(cell_class.__init__).parameters
    return [
        p for name, p in parameters.items()
        if name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    ]


def _cell_argument_names(cell_class):
    return tuple(p.name for p in _cell_parameters(cell_class))


def _layer_signature(cls):
    """The cell's parameters, the layer's own and the RNN arguments
    (keyword-only), `**kwargs`."""
    parameters = _cell_parameters(cls.cell_class) + list(cls.layer_parameters) + [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=False)
        for name in RNN_ARGUMENTS
    ]
    parameters.append(inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD))
    return inspect.Signature(parameters)


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
    `<layer name>/<cell name>/<weight>`).  The layer's signature is the
    cell's constructor arguments, the layer's own (`layer_parameters`),
    then the keyword-only RNN arguments (`RNN_ARGUMENTS`) and `**kwargs`;
    the subclass's docstring documents them all in its `Args` section, in
    that order, each cell argument as the cell documents it
    (`tf_tests/test_signatures.py` checks both).  The cell's arguments are
    read-only attributes of the layer.
    """

    cell_class = None
    cell_name = None
    # The layer's own arguments, besides the cell's and the RNN's: keyword-
    # only `inspect.Parameter`s, taken by `set_layer_arguments` (called
    # after the cell is made).
    layer_parameters = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.cell_class is None:
            return
        # The signature: the cell's arguments, the layer's, then the RNN's.
        cls.__signature__ = _layer_signature(cls)
        for name in _cell_argument_names(cls.cell_class):
            if not any(name in vars(base) for base in cls.__mro__):
                setattr(cls, name, _cell_property(name))

    def __init__(self, *args, **kwargs):
        signature = type(self).__signature__
        bound = signature.bind(*args, **kwargs)  # TypeError on bad arguments
        arguments = dict(bound.arguments)
        layer_kwargs = arguments.pop("kwargs", {})
        own = {
            p.name: arguments.pop(p.name, p.default) for p in self.layer_parameters
        }
        # Keras' RNN reads any truthy value as True: refuse non-booleans.
        rnn_kwargs = {
            k: argument_checks.check_bool(k, arguments.pop(k))
            for k in RNN_ARGUMENTS if k in arguments
        }
        cell = self.cell_class(
            dtype=layer_kwargs.get("dtype"),
            trainable=layer_kwargs.get("trainable", True),
            name=self.cell_name,
            **arguments,
        )
        super().__init__(cell, **rnn_kwargs, **layer_kwargs)
        self.input_spec = keras.layers.InputSpec(ndim=3)
        self.set_layer_arguments(**own)

    def needs_all_outputs(self, training):
        """Whether the time loop keeps every step's output even without
        `return_sequences` (for a loss over the sequence); False here."""
        return False

    def set_layer_arguments(self, **arguments):
        """Takes the layer's own arguments (`layer_parameters`); none here."""

    def layer_arguments_config(self):
        """The layer's own arguments, for `get_config`; none here."""
        return {}

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
        loop = keras.layers.RNN(
            _ProjectedSteps(self.cell, training),
            return_sequences=self.return_sequences or self.needs_all_outputs(training),
            go_backwards=self.go_backwards,
            unroll=self.unroll,
            zero_output_for_mask=self.zero_output_for_mask,
            name=f"{self.name}_loop",
        )
        return loop.inner_loop(projected, initial_state, mask, training=training)

    def get_config(self):
        config = super().get_config()
        del config["cell"]
        cell_config = self.cell.get_config()
        for key in _LAYER_KEYS:
            cell_config.pop(key, None)
        return {**config, **cell_config, **self.layer_arguments_config()}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class _ProjectedSteps:
    """The cell of a sequence layer's time loop: `cell.call_projected` on one
    step of the projections (see the module docstring).

    Not a layer (it has no weights, and the loop layer passes it no
    `training`: it holds the call's).
    """

    def __init__(self, cell, training):
        self.cell = cell
        self.state_size = cell.state_size
        self.output_size = cell.output_size
        self.training = training

    def call(self, projected, states):
        return self.cell.call_projected(projected, list(states), training=self.training)

    __call__ = call
