"""Per-sequence constants for recurrent cells: variational dropout masks and
tensors prepared once per sequence (e.g. weight-normalized kernels).

Variational dropout (Gal & Ghahramani, 2016; used by Krause et al. for the
mLSTM, Section 4.2) draws ONE dropout mask per sequence and batch row and
applies it at every time step. Other per-sequence work, such as normalizing a
weight-normalized kernel, likewise only needs doing once per sequence. A cell,
however, is stepped by `keras.layers.RNN` one step at a time inside a
`tf.while_loop`, and has no place of its own to do work "before the loop".

`VariationalDropoutMixin` gives a cell that place. A sequence is *open*
from `begin_sequence(first_step_input)` to `end_sequence()`; while it is
open the cell's masks and constants are tensors computed once, which the
loop body captures. Whoever runs the loop opens it: the library's sequence
layers (`HMLSTM`, `HMRNN`, `MultiplicativeLSTM`) and `hmkeras.RNN` (a
`keras.layers.RNN` that opens the sequences of the cells it steps, also
inside `keras.layers.StackedRNNCells` and wrapper cells) do so around
their time loop; a loop of one's own (`keras.ops.scan`, a Python loop)
calls `begin_sequence` before its first step and `end_sequence` after its
last. A wrapper cell forwards its sequence to the cell it wraps with the
module functions `begin_sequence(cell, ...)` / `end_sequence(cell)`.

With no sequence open (the cell stepped by Keras' own `keras.layers.RNN`,
or by hand) the constants are computed at every step (the same values),
and a dropout mask cannot be per sequence: a step that would draw one
(`training=True` and a rate above 0) raises a `ValueError` that names the
rate and says how to open a sequence, rather than drawing a new mask at
every step.

API for a cell (a `keras.layers.Layer` with a `units` attribute):

- `self.init_variational_dropout(dropout, recurrent_dropout, seed)` in
  `__init__`: validates the rates (ValueError outside [0, 1)), sets
  `self.dropout`, `self.recurrent_dropout`, `self.seed`, `self.seed_generator`.
- `recurrent_dropout_units` (property to override, default `self.units`): the
  size of the recurrent mask, or a list of sizes for one mask per entry (e.g.
  one per layer of a hierarchical cell).
- `build_sequence_constants(self, step_input) -> dict` (method to override,
  default `{}`): the per-sequence tensors, in the cell's compute dtype.
- In `call(inputs, states, training)`:
  `self.input_dropout_mask(inputs, training)` -> `(batch, input_dim)` mask or
  `None`; `self.recurrent_dropout_mask(inputs, training)` -> `(batch, N)` mask
  (or a list of them) or `None`; `self.sequence_constants(inputs)` -> dict.
  Masks are `None` when `training` is falsy or the rate is 0, and hold 0 or
  `1 / (1 - rate)` (inverted dropout) otherwise.
- `variational_dropout_config()`: the three arguments for `get_config`.

Example (runnable):

```python
import hmkeras
import keras
import numpy as np
from keras import ops
from hmkeras.cells.variational_dropout import VariationalDropoutMixin


class TinyRNNCell(VariationalDropoutMixin, keras.layers.Layer):
    def __init__(self, units, dropout=0.0, recurrent_dropout=0.0, seed=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = units
        self.output_size = units
        self.init_variational_dropout(dropout, recurrent_dropout, seed)

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], self.units))
        self.recurrent_kernel = self.add_weight(shape=(self.units, self.units))

    def build_sequence_constants(self, step_input):
        # Done once per sequence under hmkeras.RNN (every step without one).
        return {"kernel": ops.cast(self.kernel, self.compute_dtype)}

    def call(self, inputs, states, training=False):
        h = states[0]
        x_mask = self.input_dropout_mask(inputs, training)
        if x_mask is not None:
            inputs = inputs * x_mask
        kernel = self.sequence_constants(inputs)["kernel"]
        h = ops.tanh(ops.matmul(inputs, kernel)
                     + ops.matmul(h, self.recurrent_kernel))
        h_mask = self.recurrent_dropout_mask(inputs, training)
        if h_mask is not None:
            h = h * h_mask
        return h, [h]


layer = hmkeras.RNN(TinyRNNCell(8, dropout=0.2, recurrent_dropout=0.2))
y = layer(np.ones((2, 5, 3), "float32"), training=True)
```

Why the loop opens the sequence
-------------------------------
`keras.layers.RNN` tells only Keras' own dropout cells (through a class
that is not public API) that a sequence starts, and under JAX it steps
the cell inside `lax.scan`, where a cell cannot draw random numbers that
outlive the step. The masks are therefore drawn where the loop is set up,
outside the scan or `tf.while_loop`, on every backend: once per call of
the sequence layer or `hmkeras.RNN` (a new call, e.g. the next batch,
draws new masks), eagerly, in a `tf.function`, under XLA and under
`jax.jit`.
"""

import collections

import keras
from keras import ops

from hmkeras.argument_checks import check_int
from hmkeras.argument_checks import check_rate

_Sequence = collections.namedtuple(
    "_Sequence", ["input_mask", "recurrent_mask", "constants"]
)


class _SequenceSlot:
    """Holds the open sequence, out of sight of Keras' attribute tracking."""

    __slots__ = ("sequence",)

    def __init__(self):
        self.sequence = None


def _no_sequence_error(cell, argument, rate):
    return ValueError(
        f"{type(cell).__name__} `{argument}={rate}` draws one mask per "
        "sequence, and no sequence is open: run the cell with hmkeras.RNN "
        "(keras.layers.RNN that opens its cells' sequences) or a sequence "
        "layer (HMLSTM, HMRNN, MultiplicativeLSTM), or call "
        "cell.begin_sequence(first_step_input) before a loop of your own "
        "and cell.end_sequence() after it."
    )


class VariationalDropoutMixin:
    """Mixin for RNN cells: per-sequence dropout masks and constants.

    Put it before `keras.layers.Layer` in the bases and call
    `init_variational_dropout` from `__init__`. See the module docstring for
    the API and a runnable example.
    """

    # -- Set-up ------------------------------------------------------------

    def init_variational_dropout(self, dropout=0.0, recurrent_dropout=0.0, seed=None):
        """Validates and stores the dropout arguments; makes the seed generator.

        Args:
            dropout: rate of the mask on the cell input, in [0, 1).
            recurrent_dropout: rate of the mask(s) on the recurrent state, in
                [0, 1).
            seed: `None` or an int (a NumPy integer too), the seed of the
                masks.
        """
        self.dropout = check_rate("dropout", dropout)
        self.recurrent_dropout = check_rate("recurrent_dropout", recurrent_dropout)
        self.seed = check_int("seed", seed, allow_none=True)
        self.seed_generator = keras.random.SeedGenerator(self.seed)
        self._vd_slot = _SequenceSlot()

    def variational_dropout_config(self):
        """The constructor arguments handled here, for `get_config`."""
        return {
            "dropout": self.dropout,
            "recurrent_dropout": self.recurrent_dropout,
            "seed": self.seed,
        }

    # -- Override points ---------------------------------------------------

    @property
    def recurrent_dropout_units(self):
        """Size of the recurrent mask (an int), or a list of sizes."""
        return self.units

    def build_sequence_constants(self, step_input):
        """Per-sequence tensors of the cell, as a dict. Default: none."""
        del step_input
        return {}

    # -- Sequence life cycle ----------------------------------------------

    @property
    def in_sequence(self):
        """Whether a sequence is open."""
        return self._vd_slot.sequence is not None

    def begin_sequence(self, step_input):
        """Draws this sequence's masks and computes its constants.

        Args:
            step_input: the input of one step, `(batch, input_dim)`; fixes the
                batch size and input size of the masks.
        """
        step_input = ops.convert_to_tensor(step_input)
        self._vd_slot.sequence = _Sequence(
            input_mask=self._draw_input_mask(step_input),
            recurrent_mask=self._draw_recurrent_mask(step_input),
            constants=self.build_sequence_constants(step_input),
        )

    def end_sequence(self):
        """Forgets the open sequence's masks and constants."""
        self._vd_slot.sequence = None

    # -- Used by `call` ----------------------------------------------------

    def input_dropout_mask(self, inputs, training=None):
        """The open sequence's mask for the step input, or None (inference
        or rate 0); a ValueError when a mask is due and no sequence is open."""
        del inputs
        if not training or not self.dropout:
            return None
        if self._vd_slot.sequence is None:
            raise _no_sequence_error(self, "dropout", self.dropout)
        return self._vd_slot.sequence.input_mask

    def recurrent_dropout_mask(self, inputs, training=None):
        """The open sequence's mask(s) for the recurrent state, or None."""
        del inputs
        if not training or not self.recurrent_dropout:
            return None
        if self._vd_slot.sequence is None:
            raise _no_sequence_error(self, "recurrent_dropout", self.recurrent_dropout)
        return self._vd_slot.sequence.recurrent_mask

    def sequence_constants(self, inputs):
        """The per-sequence constants (computed now if no sequence is open)."""
        sequence = self._vd_slot.sequence
        if sequence is not None:
            return sequence.constants
        return self.build_sequence_constants(inputs)

    # -- Mask drawing ------------------------------------------------------

    def _draw_mask(self, batch_size, size, rate):
        ones = ops.ones((batch_size, size), dtype=self.compute_dtype)
        return keras.random.dropout(ones, rate=rate, seed=self.seed_generator)

    def _draw_input_mask(self, step_input):
        if not self.dropout:
            return None
        return self._draw_mask(
            ops.shape(step_input)[0], step_input.shape[-1], self.dropout
        )

    def _draw_recurrent_mask(self, step_input):
        if not self.recurrent_dropout:
            return None
        batch_size = ops.shape(step_input)[0]
        sizes = self.recurrent_dropout_units
        if isinstance(sizes, (list, tuple)):
            return [
                self._draw_mask(batch_size, size, self.recurrent_dropout)
                for size in sizes
            ]
        return self._draw_mask(batch_size, sizes, self.recurrent_dropout)


def caches_keras_masks(cell):
    """Whether `cell` is one of Keras' dropout cells (`LSTMCell`, `GRUCell`,
    `SimpleRNNCell`), which cache their masks until told to reset them."""
    return all(
        callable(getattr(cell, name, None))
        for name in ("get_dropout_mask", "get_recurrent_dropout_mask",
                     "reset_dropout_mask", "reset_recurrent_dropout_mask")
    )


def begin_sequence(cell, step_input, states=None):
    """Opens a sequence on `cell` if it supports it; for wrapper cells.

    A wrapper cell (one that holds another cell and calls it at each step)
    calls this from its own `begin_sequence`, and `end_sequence(cell)` from its
    own `end_sequence`, so that the wrapped cell gets per-sequence masks and
    constants too. Works for cells with sequence hooks of their own
    (`VariationalDropoutMixin` cells, wrapper cells) and for Keras' dropout
    cells (`LSTMCell`, `GRUCell`, `SimpleRNNCell`, which need
    `states`, the wrapped cell's state list, and whose cached masks are
    redrawn); other cells are left alone.
    """
    if callable(getattr(cell, "begin_sequence", None)):
        cell.begin_sequence(step_input)
    elif caches_keras_masks(cell):
        if states is None:
            raise ValueError(
                f"begin_sequence: `states` is needed to prepare the dropout "
                f"masks of {cell.__class__.__name__}."
            )
        states = states if isinstance(states, (list, tuple)) else [states]
        end_sequence(cell)
        cell.get_dropout_mask(step_input)
        cell.get_recurrent_dropout_mask(states[0])


def end_sequence(cell):
    """Closes the sequence opened by `begin_sequence(cell, ...)`."""
    if callable(getattr(cell, "end_sequence", None)):
        cell.end_sequence()
    elif caches_keras_masks(cell):
        cell.reset_dropout_mask()
        cell.reset_recurrent_dropout_mask()
