"""`hmkeras.RNN`: `keras.layers.RNN` that opens its cells' sequences.

A cell with per-sequence dropout masks or constants
(`hmkeras.cells.variational_dropout`) needs its loop to say when a
sequence starts and ends; Keras' own `keras.layers.RNN` says so only to
Keras' dropout cells. `RNN` is `keras.layers.RNN` that does it for every
cell it steps: before its time loop it opens the sequence of its cell, of
each cell of a `keras.layers.StackedRNNCells` and, through them, of the
cells a wrapper cell holds; after the loop it closes them. A cell that
samples at every step (the RRNet in mode `"reinforce"`) is told the
sequence's length too, and reserves the seeds of its draws
(`hmkeras.cells.step_sampler`). Everything
else is Keras' `RNN`: arguments, masking, `go_backwards`, `unroll`,
state, configuration. The library's sequence layers (`HMLSTM`, `HMRNN`,
`MultiplicativeLSTM`) are `RNN`s.
"""

import keras
from keras import ops

from hmkeras.cells import variational_dropout


def _stacked_cells(cell):
    """The cells of a `keras.layers.StackedRNNCells`, else `[cell]`."""
    if isinstance(cell, keras.layers.StackedRNNCells):
        return list(cell.cells)
    return [cell]


def _output_size(cell):
    size = getattr(cell, "output_size", None)
    if size is None:
        size = cell.state_size
    return size[0] if isinstance(size, (list, tuple)) else size


def open_sequences(cell, sequences, training):
    """Opens the sequence of `cell` (of every cell of a `StackedRNNCells`).

    Args:
        cell: The cell a loop steps.
        sequences: The loop's input, `(batch, time, features)`: its first
            step fixes the masks' batch size (a stacked cell's input is
            the output of the cell below, whose size it has), its length
            the draws a sampling cell reserves.
        training: Whether the loop runs in training (a sampling cell
            draws only then).
    """
    sequences = ops.convert_to_tensor(sequences)
    step_input = sequences[:, 0, :]
    batch, steps = ops.shape(sequences)[0], ops.shape(sequences)[1]
    for inner in _stacked_cells(cell):
        if callable(getattr(inner, "begin_sequence", None)):
            inner.begin_sequence(step_input)
        if callable(getattr(inner, "begin_sampling", None)):
            inner.begin_sampling(steps, bool(training))
        step_input = ops.zeros((batch, _output_size(inner)), dtype=step_input.dtype)


def close_sequences(cell):
    """Closes what `open_sequences(cell, ...)` opened."""
    for inner in _stacked_cells(cell):
        variational_dropout.end_sequence(inner)
        if callable(getattr(inner, "end_sampling", None)):
            inner.end_sampling()


def _check_masking_on_jax(layer, mask):
    """Keras' JAX loop repeats a masked step's output from the first state
    (it assumes the output is `states[0]`): refused, with the way out, for
    a cell whose output is something else (the hierarchical cells'
    `[h^1..h^L | z]`)."""
    if mask is None or layer.zero_output_for_mask or keras.backend.backend() != "jax":
        return
    first_state = layer.cell.state_size
    first_state = first_state[0] if isinstance(first_state, (list, tuple)) else first_state
    if _output_size(layer.cell) != first_state:
        raise ValueError(
            f"{type(layer).__name__} with a mask on JAX needs "
            "zero_output_for_mask=True: Keras' JAX loop repeats a masked step's "
            "output from the cell's first state, and this cell's output "
            f"(size {_output_size(layer.cell)}) is not its first state (size "
            f"{first_state}). Received: zero_output_for_mask=False"
        )


@keras.saving.register_keras_serializable(package="hmkeras")
class RNN(keras.layers.RNN):
    """`keras.layers.RNN` that opens and closes its cells' sequences.

    Takes exactly `keras.layers.RNN`'s arguments. Use it for the library's
    cells with `dropout` or `recurrent_dropout` (one mask per sequence,
    Gal & Ghahramani 2016), inside `keras.layers.StackedRNNCells` or a
    wrapper cell too; without dropout, `keras.layers.RNN` gives the same
    results. Masks are drawn before the time loop, once per call.

    Args:
        cell: An RNN cell, or a list of cells (stacked, as in
            `keras.layers.RNN`).
        return_sequences: Whether to return every step's output (else the
            last).
        return_state: Whether to return the last state after the output.
        go_backwards: Whether to process the sequence backwards.
        stateful: Whether the last state of a batch is the initial state
            of the next.
        unroll: Whether to unroll the loop in the graph (short sequences).
        zero_output_for_mask: Whether masked steps output zeros (else the
            previous output).
        **kwargs: The arguments of a layer (`name`, `dtype`, ...).

    Call arguments:
        sequences: `(batch, time, features)`.
        initial_state: Optional list of initial state tensors.
        mask: Optional `(batch, time)` boolean mask.
        training: Whether dropout masks are applied.

    Examples:

        >>> import numpy as np, hmkeras
        >>> rnn = hmkeras.RNN(hmkeras.HMLSTMCell(4, num_layers=2, dropout=0.2, seed=1),
        ...                   return_sequences=True)
        >>> tuple(rnn(np.ones((2, 5, 3), "float32"), training=True).shape)
        (2, 5, 9)
    """

    @classmethod
    def from_config(cls, config):
        return super().from_config(dict(config))  # Keras' pops the cell

    def call(self, sequences, initial_state=None, mask=None, training=False):
        _check_masking_on_jax(self, mask)
        # Per-sequence masks and constants, drawn outside the time loop.
        open_sequences(self.cell, sequences, training)
        try:
            return super().call(
                sequences, initial_state=initial_state, mask=mask, training=training
            )
        finally:
            close_sequences(self.cell)
