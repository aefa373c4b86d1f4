"""`CellWrapper`: what the averaging and attention wrappers share.

A wrapper is itself a Keras RNN cell (`state_size`, `output_size`,
`call(inputs, states, training)`) that runs another cell, the *wrapped*
cell, at every step and unchanged, and adds a memory of the wrapped cell's
past hidden states on top of it.  This module holds everything that does
not depend on how the memory is read:

* the checks of the wrapped cell (a `keras.layers.Layer` with an integer
  `output_size` and a flat `state_size`),
* the state layout: `[*wrapped_cell_states, *memory_states]` (the wrapped
  cell's own states first, unchanged, then the wrapper's),
* which part of the wrapped cell's output is remembered
  (`hierarchy_layers`): the
  whole output of an ordinary cell; for a hierarchical cell (`HMLSTMCell`,
  `HMRNNCell`) the hidden states of all its layers (`"all"`) or of its top
  layer (`"top"`), never the boundaries `z`,
* the optional reset column of the inputs (memory cleared at sentence
  boundaries),
* the output projection `activation(W [h_t; c_t] + b)` (Salton & Kelleher
  Eq. 11),
* the output layout and `split_outputs`,
* the per-sequence hooks (dropout masks) forwarded to the wrapped cell,
* `get_config` / `from_config`, nesting the wrapped cell's configuration.

Output layout (one tensor per step, of size `output_size`):

    [ output (units) | cell_output (cell.output_size), if return_cell_output
                     | attention weights (memory_size), if return_attention ]

`split_outputs(y)` returns the three parts as a `WrapperOutputs` named
tuple (`None` for a part that is not returned); it works on one step and on
whole sequences.  With `return_cell_output=True` the wrapped cell's output
stays available, so that e.g. `wrapper.cell.split_outputs(
wrapper.split_outputs(y).cell_output)` gives a hierarchical cell's
boundaries.

Reset column (`reset_token_id` or `reset_flag`): the wrapper's inputs then
carry one extra feature, the LAST one, that the wrapped cell does not see.
With `reset_token_id=k` it is the step's token id (as a float), with
`reset_flag=True` a flag (1.0 = reset).  At a step whose token id equals
`k` (or whose flag is > 0.5) the memory is used as usual and then cleared
after the step: the next step starts a new memory (holding only the zero
`h_0` for the averaging wrapper, nothing for the attention wrapper), as
after the RNN's initial state.  The wrapped cell's own state is never
reset by the wrapper.  Example of the token-id column in a functional
model:

    ids = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(vocab, dim)(ids)
    x = keras.layers.Concatenate()([x, keras.ops.cast(ids, "float32")[..., None]])
    y = keras.layers.RNN(AveragingWrapper(cell, reset_token_id=eos_id))(x)

Examples:

    >>> import keras, numpy as np, hmkeras
    >>> from hmkeras.wrappers import AveragingWrapper
    >>> wrapper = AveragingWrapper(hmkeras.HMLSTMCell(4, num_layers=2),
    ...                            return_cell_output=True)
    >>> y = keras.layers.RNN(wrapper, return_sequences=True)(np.zeros((2, 3, 5), "float32"))
    >>> parts = wrapper.split_outputs(y)
    >>> tuple(parts.output.shape), tuple(parts.cell_output.shape), parts.attention
    ((2, 3, 8), (2, 3, 9), None)
    >>> hiddens, boundaries = wrapper.cell.split_outputs(parts.cell_output)
    >>> tuple(boundaries.shape)
    (2, 3, 1)
"""

import collections

import keras
from keras import ops

from hmkeras import argument_checks
from hmkeras.cells import variational_dropout
from hmkeras.cells.hierarchical_cell import HierarchicalCell
from hmkeras.cells.independent_initializers import independent_draw

LAYER_CHOICES = ("all", "top")

WrapperOutputs = collections.namedtuple(
    "WrapperOutputs", ["output", "cell_output", "attention"]
)
WrapperOutputs.__doc__ = """The parts of a wrapper's output (see `CellWrapper.split_outputs`).

`output`: the wrapper's output `(..., units)`; `cell_output`: the wrapped
cell's own output `(..., cell.output_size)` or `None`; `attention`: the
attention weights `(..., memory_size)` (oldest slot first) or `None`.
"""


def check_cell(cell):
    """Refuses what cannot be wrapped, naming the `cell` argument.

    Returns:
        The wrapped cell's state sizes as a flat list of ints.
    """
    if not isinstance(cell, keras.layers.Layer) or not callable(cell):
        raise TypeError(
            "`cell` must be a Keras RNN cell: a keras.layers.Layer with "
            "`state_size`, `output_size` and call(inputs, states), such as "
            "keras.layers.LSTMCell(8) or hmkeras.HMLSTMCell(8). "
            f"Received: cell={cell!r}"
        )
    state_size = getattr(cell, "state_size", None)
    if isinstance(state_size, int) and not isinstance(state_size, bool):
        sizes = [state_size]
    elif isinstance(state_size, (list, tuple)) and state_size and all(
        isinstance(s, int) and not isinstance(s, bool) for s in state_size
    ):
        sizes = list(state_size)
    else:
        raise TypeError(
            "`cell` must be a Keras RNN cell whose `state_size` is an int or "
            "a flat list of ints (a nested state, as in "
            "keras.layers.StackedRNNCells, is not supported: wrap the top "
            f"cell). Received: cell={cell!r} with state_size={state_size!r}"
        )
    output_size = getattr(cell, "output_size", None)
    if not isinstance(output_size, int) or isinstance(output_size, bool):
        raise TypeError(
            "`cell` must be a Keras RNN cell with an integer `output_size`. "
            f"Received: cell={cell!r} with output_size={output_size!r}"
        )
    return sizes


def remembered_size(cell, layers):
    """The size of the vector `h_t` that the wrapper remembers."""
    if isinstance(cell, HierarchicalCell):
        return cell.units[-1] if layers == "top" else sum(cell.units)
    return cell.output_size


def remembered_state(cell, output, layers):
    """`h_t` from the wrapped cell's per-step output (boundaries left out)."""
    if isinstance(cell, HierarchicalCell):
        hiddens, _ = cell.split_outputs(output)
        if layers == "top":
            return hiddens[-1]
        return ops.concatenate(hiddens, axis=-1)
    return output


class CellWrapper(keras.layers.Layer):
    """Base of `AveragingWrapper` and `AttentionWrapper` (see the module docstring).

    A subclass sets `_memory_state_sizes(size)` (the sizes of its memory
    states for a remembered vector of `size`), builds its own weights in
    `_build_memory(size)`, and reads and updates its memory in
    `_memory_step(h, memory_states, keep)`, which returns
    `(context, new_memory_states, attention)`: `keep` is `None` or a
    `(batch, 1)` tensor, 0.0 where the memory is cleared after this step.
    """

    _has_attention = False

    def __init__(
        self,
        cell,
        *,
        units=None,
        activation="tanh",
        hierarchy_layers="all",
        reset_token_id=None,
        reset_flag=False,
        return_cell_output=False,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self._cell_state_sizes = check_cell(cell)
        self.cell = cell
        self.units = argument_checks.check_positive_int("units", units, allow_none=True)
        self.activation = keras.activations.get(activation)
        self.hierarchy_layers = argument_checks.check_choice(
            "hierarchy_layers", hierarchy_layers, LAYER_CHOICES
        )
        self.reset_token_id = argument_checks.check_int(
            "reset_token_id", reset_token_id, minimum=0, allow_none=True
        )
        self.reset_flag = argument_checks.check_bool("reset_flag", reset_flag)
        if self.reset_flag and self.reset_token_id is not None:
            raise ValueError(
                "`reset_token_id` and `reset_flag` both name the last input "
                "feature: give one of them. Received: "
                f"reset_token_id={reset_token_id!r}, reset_flag={reset_flag!r}"
            )
        self.return_cell_output = argument_checks.check_bool(
            "return_cell_output", return_cell_output
        )
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        self.remembered_size = remembered_size(cell, self.hierarchy_layers)
        self.output_units = self.units or self.remembered_size
        self._sequence_open = False

    # ------------------------------------------------------------------
    @property
    def state_size(self):
        """The wrapped cell's state sizes, then the memory's (a flat list)."""
        return self._cell_state_sizes + self._memory_state_sizes(self.remembered_size)

    @property
    def output_size(self):
        return (
            self.output_units
            + (self.cell.output_size if self.return_cell_output else 0)
            + (self.memory_size if self._returns_attention else 0)
        )

    @property
    def _returns_attention(self):
        return self._has_attention and self.return_attention

    @property
    def has_reset_column(self):
        """Whether the last input feature is a reset column."""
        return self.reset_flag or self.reset_token_id is not None

    def _memory_state_sizes(self, size):
        raise NotImplementedError

    def _build_memory(self, size):
        raise NotImplementedError

    def _memory_step(self, h, memory_states, keep):
        raise NotImplementedError

    def build(self, input_shape):
        features = argument_checks.check_step_input_shape(type(self).__name__, input_shape)
        if self.has_reset_column:
            if features < 2:
                raise ValueError(
                    f"{type(self).__name__} with a reset column needs inputs of "
                    "at least 2 features (the cell's features, then the token "
                    f"id or flag). Received: step inputs.shape={tuple(input_shape)}"
                )
            features -= 1
        if not self.cell.built:
            self.cell.build((input_shape[0], features))
        size = self.remembered_size
        # Salton & Kelleher Eq. (11): W_c over [h_t; c_t] and its bias.
        self.output_kernel = self.add_weight(
            name="output_kernel", shape=(2 * size, self.output_units),
            initializer=self.kernel_draw(0), regularizer=self.kernel_regularizer,
        )
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.output_units,),
            initializer=self.bias_initializer, regularizer=self.bias_regularizer,
        )
        self._build_memory(size)

    def kernel_draw(self, index):
        """`kernel_initializer` for kernel number `index`, an independent draw.

        A Keras initializer object returns the same values at every call:
        kernels of one shape (`W_1`, `W_2`) would start equal without it.
        """
        return independent_draw(self.kernel_initializer, index)

    # ------------------------------------------------------------------
    # Per-sequence masks and constants of the wrapped cell (see
    # `hmkeras.cells.variational_dropout`): `hmkeras.RNN` opens the
    # wrapper's sequence before its loop, and the wrapper opens the wrapped
    # cell's.  The wrapper has no dropout of its own.
    # ------------------------------------------------------------------
    def _cell_inputs(self, step_input):
        if self.has_reset_column:
            return step_input[..., :-1]
        return step_input

    def begin_sequence(self, step_input):
        """Opens the wrapped cell's sequence (masks drawn, constants made)."""
        step_input = keras.ops.convert_to_tensor(step_input)
        batch = keras.ops.shape(step_input)[0]
        first_state = keras.ops.zeros(
            (batch, self._cell_state_sizes[0]), dtype=self.compute_dtype
        )
        variational_dropout.begin_sequence(
            self.cell, self._cell_inputs(step_input), [first_state]
        )
        self._sequence_open = True

    def end_sequence(self):
        """Closes the wrapped cell's sequence."""
        variational_dropout.end_sequence(self.cell)
        self._sequence_open = False

    def _check_keras_masks(self, training):
        """Refuses to step a Keras dropout cell in training outside a
        sequence: it would keep the masks of its first step for good."""
        if not training or self._sequence_open:
            return
        if not variational_dropout.caches_keras_masks(self.cell):
            return
        for argument in ("dropout", "recurrent_dropout"):
            rate = getattr(self.cell, argument, 0.0)
            if rate:
                raise ValueError(
                    f"{type(self).__name__} wraps a {type(self.cell).__name__} with "
                    f"`{argument}={rate}`, which draws one mask per sequence, and "
                    "no sequence is open: run the wrapper with hmkeras.RNN "
                    "(keras.layers.RNN that opens its cells' sequences), or call "
                    "wrapper.begin_sequence(first_step_input) before a loop of "
                    "your own and wrapper.end_sequence() after it."
                )

    # ------------------------------------------------------------------
    def get_initial_state(self, batch_size=None):
        """The wrapped cell's initial state, then a zero (empty) memory."""
        get_initial = getattr(self.cell, "get_initial_state", None)
        if get_initial is not None:
            cell_states = get_initial(batch_size=batch_size)
            if not isinstance(cell_states, (list, tuple)):
                cell_states = [cell_states]
            cell_states = list(cell_states)
        else:
            cell_states = [
                keras.ops.zeros((batch_size, s), dtype=self.compute_dtype)
                for s in self._cell_state_sizes
            ]
        memory = [
            keras.ops.zeros((batch_size, s), dtype=self.compute_dtype)
            for s in self._memory_state_sizes(self.remembered_size)
        ]
        return cell_states + memory

    def call(self, inputs, states, training=False):
        # Integer features are refused, never cast (the wrapped cell may be
        # a Keras cell, which would take them silently).
        argument_checks.check_float_inputs(type(self).__name__, inputs)
        self._check_keras_masks(training)
        states = list(states) if isinstance(states, (list, tuple)) else [states]
        count = len(self._cell_state_sizes)
        cell_states, memory_states = states[:count], states[count:]
        keep = None
        if self.has_reset_column:
            column = inputs[..., -1:]
            if self.reset_token_id is not None:
                reset = ops.equal(column, ops.cast(self.reset_token_id, column.dtype))
            else:
                reset = column > 0.5
            keep = 1.0 - ops.cast(reset, self.compute_dtype)
            inputs = inputs[..., :-1]
        cell_output, new_cell_states = self.cell(inputs, cell_states, training=training)
        if not isinstance(new_cell_states, (list, tuple)):
            new_cell_states = [new_cell_states]
        h = remembered_state(self.cell, cell_output, self.hierarchy_layers)
        context, new_memory, attention = self._memory_step(h, memory_states, keep)
        # The wrapped cell may compute in another dtype (its own `dtype`).
        h = ops.cast(h, context.dtype)
        # Salton & Kelleher Eq. (11): activation(W_c [h_t; c_t] + b).
        output = ops.matmul(ops.concatenate([h, context], axis=-1), self.output_kernel)
        output = self.activation(output + self.output_bias)
        parts = [output]
        if self.return_cell_output:
            parts.append(ops.cast(cell_output, output.dtype))
        if self._returns_attention:
            parts.append(ops.cast(attention, output.dtype))
        output = parts[0] if len(parts) == 1 else ops.concatenate(parts, axis=-1)
        return output, list(new_cell_states) + list(new_memory)

    # ------------------------------------------------------------------
    # Output layout
    # ------------------------------------------------------------------
    def split_outputs(self, outputs):
        """Split the wrapper's outputs into a `WrapperOutputs`.

        Works on one step `(batch, output_size)` and on whole sequences
        `(batch, time, output_size)`; the list `[outputs, *states]` of an
        RNN with `return_state=True` is accepted too (its first element is
        split).

        Returns:
            `WrapperOutputs(output, cell_output, attention)`, `None` for the
            parts this wrapper does not return.
        """
        if isinstance(outputs, (list, tuple)):
            if not outputs:
                raise ValueError("`outputs` must be a tensor, not an empty list.")
            outputs = outputs[0]
        if not hasattr(outputs, "shape"):
            outputs = keras.ops.convert_to_tensor(outputs)
        if len(outputs.shape) < 1 or outputs.shape[-1] != self.output_size:
            raise ValueError(
                f"`outputs` must have last dimension output_size={self.output_size}. "
                f"Received: shape={tuple(outputs.shape)}"
            )
        start = self.output_units
        output = outputs[..., :start]
        cell_output = attention = None
        if self.return_cell_output:
            cell_output = outputs[..., start:start + self.cell.output_size]
            start += self.cell.output_size
        if self._returns_attention:
            attention = outputs[..., start:]
        return WrapperOutputs(output, cell_output, attention)

    def cell_outputs(self, outputs):
        """The wrapped cell's output inside the wrapper's outputs.

        Raises:
            ValueError: when the wrapper was made with
                `return_cell_output=False`.
        """
        if not self.return_cell_output:
            raise ValueError(
                f"{type(self).__name__} was made with return_cell_output=False: "
                "its outputs do not hold the wrapped cell's output. Make it "
                "with return_cell_output=True to read the cell's output (for "
                "a hierarchical cell: its boundaries)."
            )
        return self.split_outputs(outputs).cell_output

    # ------------------------------------------------------------------
    def get_config(self):
        config = {
            "cell": keras.saving.serialize_keras_object(self.cell),
            "units": self.units,
            "activation": keras.activations.serialize(self.activation),
            "hierarchy_layers": self.hierarchy_layers,
            "reset_token_id": self.reset_token_id,
            "reset_flag": self.reset_flag,
            "return_cell_output": self.return_cell_output,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
            "bias_regularizer": keras.regularizers.serialize(self.bias_regularizer),
        }
        return {**super().get_config(), **config}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["cell"] = keras.saving.deserialize_keras_object(config["cell"])
        return cls(**config)
