"""`AttentionWrapper`: learned attention over a cell's recent past hidden states.

The attentive RNN-LM of Salton et al. (2017), the baseline that Salton &
Kelleher (2018, Sec. 3) compare persistence averaging to: a memory of the
last `memory_size` hidden states, a score for each, a softmax over the
filled slots and a weighted sum as the context.
"""

import keras
from keras import ops

from hmkeras import argument_checks
from hmkeras.wrappers.cell_wrapper import CellWrapper

SCORES = ("single", "combined")


@keras.saving.register_keras_serializable(package="hmkeras")
class AttentionWrapper(CellWrapper):
    """Attends over the last `memory_size` hidden states of a cell.

    At step `t` the wrapped cell computes `h_t` unchanged.  The memory holds
    the past states `h_{t-M} ... h_{t-1}` (`M = memory_size`; fewer at the
    start of a sequence).  Each stored state `h_i` gets a score

        "single":   e_i = v^T tanh(W h_i)
        "combined": e_i = v^T tanh(W_1 h_i + W_2 h_t),

    the weights are a softmax of the scores over the FILLED slots only
    (empty slots get weight exactly 0), the context is
    `c_t = sum_i a_i h_i` (`c_t = 0` while the memory is empty, at the first
    step), and the output is `activation(W [h_t; c_t] + b)`, by default
    `tanh(W [h_t; c_t] + b)`.  `h_t` itself joins the memory after the step,
    so a step never attends to itself or to the future; the oldest state
    leaves a full memory.

    The default `tanh` follows Salton & Kelleher (2018): their averaging
    model combines `h_t` and its context as `h'_t = tanh(W_c [h_t; c_t] +
    b)` (Eq. 11), and the attentive baseline differs from it only in the
    attention network that computes `c_t` (Sec. 5: the average replaces "a
    neural network based attention mechanism"; Sec. 7: the parameter
    difference "essentially aris[es] from the fact that we have dropped the
    attention neural network component"), so the two wrappers share Eq. 11.
    `activation=None` (or `"linear"`) gives the linear form
    `W [h_t; c_t] + b`, this wrapper's default before issue 23.

    The memory lives in the RNN state: `[*cell_states, values (M * size),
    keys (M * attention_units, "combined") or scores (M, "single"),
    fill (1)]`, slots oldest first.  `W_1 h_i` ("combined") and the whole
    score ("single", which does not depend on `h_t`) are computed once,
    when `h_i` is stored, and kept in the state: a step costs one new key
    and `M` dot products, not `M` matrix products.  (Across calls of a
    stateful RNN the kept keys are those computed with the weights of the
    time they were stored.)  A zero state is an empty memory.

    The attention weights are returned for plotting with
    `return_attention=True`: they are then the last `memory_size` features
    of the output (slot `memory_size - 1` is `h_{t-1}`, the most recent);
    `split_outputs(y).attention` reads them.  `return_attention` changes
    the output only, not the weights: to plot the weights of a model trained
    without them, rebuild it with `return_attention=True` and copy the
    weights over (`set_weights(trained.get_weights())`).  Output layout, reset column
    and `hierarchy_layers`: see `hmkeras.wrappers.cell_wrapper`.

    Args:
        cell: The wrapped RNN cell (a `keras.layers.Layer` with a flat
            `state_size` and an integer `output_size`).
        memory_size: Positive int, the number of past states attended to.
        score: `"single"` (default) or `"combined"` (see above).
        attention_units: Positive int or `None` (default: the size of
            `h_t`): the rows of `v`.
        units: Positive int or `None` (default: the size of `h_t`): the
            size of the output.
        activation: Of the output projection. Default `"tanh"`
            (Salton & Kelleher 2018, Eq. 11, as in `AveragingWrapper`);
            `None` or `"linear"` for `W [h_t; c_t] + b`.
        return_attention: Whether the output ends with the attention
            weights. Default `False`.
        hierarchy_layers: For a hierarchical cell, which hidden states are
            `h_t`: `"all"` layers' (default) or the `"top"` layer's; the
            boundaries are never attended to. Ignored for other cells.
        reset_token_id: `None` or a non-negative int: the inputs' last
            feature is the token id, and the memory empties after each step
            that reads this token.
        reset_flag: `True` or `False`: the inputs' last feature is a reset
            flag (1.0 empties the memory after the step).
        return_cell_output: Whether the output also holds the wrapped
            cell's output (for a hierarchical cell, its boundaries).
        kernel_initializer: Initializer of `W`, `W_1`, `W_2`, `v` and of the
            output kernel. Default `"glorot_uniform"`.
        bias_initializer: Initializer of `b`. Default `"zeros"`.
        kernel_regularizer: Regularizer of the same kernels, or `None`.
        bias_regularizer: Regularizer of `b`, or `None`.
        **kwargs: Base layer keyword arguments, such as `name` or `dtype`.

    Call arguments:
        inputs: One step `(batch, features)` (one more feature with a reset
            column).
        states: The flat state list described above.
        training: Passed to the wrapped cell.

    Examples:

        >>> import keras, numpy as np
        >>> from hmkeras.wrappers import AttentionWrapper
        >>> wrapper = AttentionWrapper(keras.layers.LSTMCell(4), memory_size=3,
        ...                            return_attention=True)
        >>> y = keras.layers.RNN(wrapper, return_sequences=True)(np.ones((1, 5, 2), "float32"))
        >>> weights = wrapper.split_outputs(y).attention  # (1, 5, 3), oldest slot first
        >>> weights = keras.ops.convert_to_numpy(weights)
        >>> np.round(weights[0, :, :].sum(axis=-1), 5).tolist()
        [0.0, 1.0, 1.0, 1.0, 1.0]
        >>> weights[0, 1, :2].tolist()  # one state stored at step 2
        [0.0, 0.0]
    """

    _has_attention = True

    def __init__(
        self,
        cell,
        memory_size,
        score="single",
        *,
        attention_units=None,
        units=None,
        activation="tanh",
        return_attention=False,
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
        memory_size = argument_checks.check_positive_int("memory_size", memory_size)
        score = argument_checks.check_choice("score", score, SCORES)
        attention_units = argument_checks.check_positive_int(
            "attention_units", attention_units, allow_none=True
        )
        return_attention = argument_checks.check_bool("return_attention", return_attention)
        super().__init__(
            cell, units=units, activation=activation, hierarchy_layers=hierarchy_layers,
            reset_token_id=reset_token_id, reset_flag=reset_flag,
            return_cell_output=return_cell_output, kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer, kernel_regularizer=kernel_regularizer,
            bias_regularizer=bias_regularizer, **kwargs,
        )
        self.memory_size = memory_size
        self.score = score
        self.attention_units = attention_units
        self.return_attention = return_attention

    @property
    def _attention_size(self):
        return self.attention_units or self.remembered_size

    def _memory_state_sizes(self, size):
        keys = self._attention_size if self.score == "combined" else 1
        return [self.memory_size * size, self.memory_size * keys, 1]

    def _build_memory(self, size):
        a = self._attention_size
        names = ("key_kernel", "query_kernel") if self.score == "combined" else ("key_kernel",)
        for draw, name in enumerate(names, start=1):  # W (W_1) and W_2
            setattr(self, name, self.add_weight(
                name=name, shape=(size, a), initializer=self.kernel_draw(draw),
                regularizer=self.kernel_regularizer,
            ))
        self.score_vector = self.add_weight(  # v
            name="score_vector", shape=(a, 1), initializer=self.kernel_draw(3),
            regularizer=self.kernel_regularizer,
        )

    def _memory_step(self, h, memory_states, keep):
        values, keys, fill = memory_states
        m = self.memory_size
        h = ops.cast(h, values.dtype)
        size = self.remembered_size
        stored = ops.reshape(values, (-1, m, size))
        # Slot j (oldest first) holds a state iff j >= M - fill.
        slots = ops.cast(ops.arange(m), fill.dtype)[None, :]
        filled = ops.greater_equal(slots, float(m) - fill)  # (batch, M)
        if self.score == "combined":
            stored_keys = ops.reshape(keys, (-1, m, self._attention_size))
            query = ops.matmul(h, self.query_kernel)  # W_2 h_t
            hidden = ops.tanh(stored_keys + query[:, None, :])  # tanh(W_1 h_i + W_2 h_t)
            # v^T ...: a batched product with v as a (1, a, 1) batch, the
            # batched matmul of (batch, M, a) by (a, 1) (not a reshape to 2D).
            score_vector = ops.expand_dims(self.score_vector, 0)
            scores = ops.squeeze(ops.matmul(hidden, score_vector), -1)
        else:
            scores = keys  # v^T tanh(W h_i), computed when h_i was stored
        weights = _masked_softmax(scores, filled)
        context = ops.sum(weights[:, :, None] * stored, axis=1)  # c_t = sum a_i h_i
        # Store h_t (and its key or score) in the newest slot.
        new_key = ops.matmul(h, self.key_kernel)  # W h_t (W_1 h_t)
        if self.score == "single":
            new_key = ops.matmul(ops.tanh(new_key), self.score_vector)  # v^T tanh(W h_t)
        values = ops.concatenate([values[:, size:], h], axis=-1)
        keys = ops.concatenate([keys[:, new_key.shape[-1]:], new_key], axis=-1)
        fill = ops.minimum(fill + 1.0, float(m))
        if keep is not None:  # a sentence ends here: the memory empties
            values, keys, fill = values * keep, keys * keep, fill * keep
        return context, [values, keys, fill], weights

    def get_config(self):
        return {
            **super().get_config(),
            "memory_size": self.memory_size,
            "score": self.score,
            "attention_units": self.attention_units,
            "return_attention": self.return_attention,
        }


def _masked_softmax(scores, filled):
    """Softmax over the filled slots; all zeros where no slot is filled.

    Empty slots get exactly 0 and no gradient; no NaN or infinity appears
    (not even in gradients) when a row has no filled slot.
    """
    lowest = ops.min(scores, axis=-1, keepdims=True)
    shift = ops.stop_gradient(
        ops.max(ops.where(filled, scores, lowest), axis=-1, keepdims=True)
    )
    safe = ops.where(filled, scores, shift)
    exponentials = ops.where(filled, ops.exp(safe - shift), 0.0)
    total = ops.sum(exponentials, axis=-1, keepdims=True)
    return exponentials / ops.where(ops.greater(total, 0.0), total, 1.0)
