"""`AveragingWrapper`: persistence averaging over any RNN cell (Salton & Kelleher 2018)."""

import keras
from keras import ops

from hmkeras import argument_checks
from hmkeras.wrappers.cell_wrapper import CellWrapper


@keras.saving.register_keras_serializable(package="hmkeras")
class AveragingWrapper(CellWrapper):
    """Adds the average of the past hidden states to a cell's output.

    At step `t` the wrapped cell computes `h_t` unchanged (Salton & Kelleher
    Eq. 9); the context is the mean of the hidden states in memory, the
    zero initial state `h_0` counted (Eq. 10),

        c_t = (1 / t) * sum_{i=0}^{t-1} h_i,

    and the output is `tanh(W_c [h_t; c_t] + b)` (Eq. 11).  With
    `include_current=True` the mean also counts `h_t`:
    `c_t = (1 / (t + 1)) * sum_{i=0}^{t} h_i`.

    The memory is a running sum and a count in the RNN state, constant in
    size: sequences of any length, `stateful=True` streaming (the memory
    goes on across calls, exactly as in one long call) and masking (a masked
    step carries the whole state, memory included) work.  A zero state is an
    empty memory holding only `h_0`, so `RNN.reset_state()` starts afresh.

    State: `[*cell_states, sum (remembered size), count (1)]` where `count`
    is the number of states stored after `h_0` (`t - 1` at step `t`).  The
    state is in the compute dtype: under a `mixed_float16` policy the count
    is exact up to 2048 steps and the sum loses precision on long streams,
    so reset the memory (sentences) or keep such streams in float32.
    Output layout, reset column and `hierarchy_layers`: see
    `hmkeras.wrappers.cell_wrapper`.

    Args:
        cell: The wrapped RNN cell (`keras.layers.LSTMCell`,
            `hmkeras.HMLSTMCell`, `HMRNNCell`, `MultiplicativeLSTMCell`, ...):
            a `keras.layers.Layer` with a flat `state_size` and an integer
            `output_size`.
        units: Positive int or `None` (default): the size of the output;
            `None` gives the size of the remembered `h_t`.
        include_current: Whether `c_t` averages `h_t` too. Default `False`
            (the paper's Eq. 10).
        activation: Of the output projection. Default `"tanh"` (Eq. 11;
            `AttentionWrapper` has the same default, the paper's models
            differing only in how `c_t` is computed).
        hierarchy_layers: For a hierarchical cell, which hidden states are
            `h_t`: `"all"` layers' (default) or the `"top"` layer's; the
            boundaries are never averaged. Ignored for other cells.
        reset_token_id: `None` or a non-negative int: the inputs' last
            feature is the token id, and the memory is cleared after each
            step that reads this token (a sentence end).
        reset_flag: `True` or `False`: the inputs' last feature is a reset
            flag (1.0 clears the memory after the step).
        return_cell_output: Whether the output also holds the wrapped
            cell's output (for a hierarchical cell, its boundaries).
        kernel_initializer: Initializer of `W_c`. Default `"glorot_uniform"`.
        bias_initializer: Initializer of `b`. Default `"zeros"`.
        kernel_regularizer: Regularizer of `W_c`, or `None`.
        bias_regularizer: Regularizer of `b`, or `None`.
        **kwargs: Base layer keyword arguments, such as `name` or `dtype`.

    Call arguments:
        inputs: One step `(batch, features)` (one more feature with a reset
            column).
        states: The flat state list described above.
        training: Passed to the wrapped cell.

    Examples:

        >>> import keras, numpy as np
        >>> from hmkeras.wrappers import AveragingWrapper
        >>> wrapper = AveragingWrapper(keras.layers.LSTMCell(8))
        >>> rnn = keras.layers.RNN(wrapper, return_sequences=True)
        >>> tuple(rnn(np.ones((2, 5, 3), "float32")).shape)
        (2, 5, 8)
        >>> wrapper.state_size
        [8, 8, 8, 1]
    """

    def __init__(
        self,
        cell,
        *,
        units=None,
        include_current=False,
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
        super().__init__(
            cell, units=units, activation=activation, hierarchy_layers=hierarchy_layers,
            reset_token_id=reset_token_id, reset_flag=reset_flag,
            return_cell_output=return_cell_output, kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
            bias_regularizer=bias_regularizer, **kwargs,
        )
        self.include_current = argument_checks.check_bool("include_current", include_current)

    def _memory_state_sizes(self, size):
        return [size, 1]

    def _build_memory(self, size):
        del size  # no weights besides the output projection

    def _memory_step(self, h, memory_states, keep):
        total, count = memory_states
        h = ops.cast(h, total.dtype)
        if self.include_current:
            context = (total + h) / (count + 2.0)  # mean of h_0 ... h_t
        else:
            context = total / (count + 1.0)  # Salton & Kelleher Eq. (10), h_0 = 0 counted
        # h_t joins the memory at the end of the step (their Fig. 2).
        total, count = total + h, count + 1.0
        if keep is not None:  # a sentence ends here: only h_0 = 0 is left
            total, count = total * keep, count * keep
        return context, [total, count], None

    def get_config(self):
        return {**super().get_config(), "include_current": self.include_current}
