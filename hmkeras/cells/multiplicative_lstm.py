"""The `MultiplicativeLSTM` sequence layer: the mLSTM over a whole sequence."""

import keras

from hmkeras.cells.multiplicative_lstm_cell import MultiplicativeLSTMCell
from hmkeras.cells.sequence_layer import SequenceLayer
from hmkeras.cells.sequence_layer import cell_base_arguments


@keras.saving.register_keras_serializable(package="hmkeras")
class MultiplicativeLSTM(SequenceLayer):
    """Multiplicative LSTM layer (Krause et al. 2017).

    `keras.layers.RNN(MultiplicativeLSTMCell(...))` as one layer, the way
    `keras.layers.LSTM` is `RNN(LSTMCell(...))`, with the same outputs,
    states and gradients.  Weight normalization and the input dropout mask
    are applied once per call, before the time loop (see
    `hmkeras.cells.sequence_layer`); the input products `W_mx x_t`
    (Eq. 17) and `W_hx x_t`, `W_ix x_t`, `W_fx x_t`, `W_ox x_t`
    (Eq. 18-21) stay in the loop, one matmul per step, which on a CPU is
    cheaper than precomputing them for all steps (see
    `MultiplicativeLSTMCell.project_sequence`).  The two recurrent
    products cannot be merged into one: `W_hm m_t` and the gates' `W_*m m_t`
    (already one matmul) need `m_t`, which needs `W_mh h_{t-1}`.  Takes
    every argument of `MultiplicativeLSTMCell` and `return_sequences`,
    `return_state`, `go_backwards`, `stateful`, `unroll`,
    `zero_output_for_mask`.

    Weight normalization covers the recurrent weights by default
    (`weight_normalization_scope="recurrent"`: W_mh and W_hm, W_im, W_om,
    W_fm, as Krause et al. Section 4.2), and the input kernel too with
    `"all"`.

    Args:
        units: Positive int, dimensionality of h_t and c_t.
        multiplicative_units: Positive int, dimensionality of m_t. Defaults
            (`None`) to `units` (as in the paper).
        activation: Activation of the candidate and of the memory (Eq. 15-16).
            Default: hyperbolic tangent (`tanh`).
        recurrent_activation: Activation of the gates (Eq. 19-21). Default:
            sigmoid.
        use_bias: Boolean, whether the pre-activations have a bias.
        kernel_initializer: Initializer for `kernel` (all input projections).
            Default: `"glorot_uniform"`.
        recurrent_initializer: Initializer of each block of the hidden
            matrices `recurrent_kernel` and `multiplicative_kernel`, whose
            values are then multiplied by `recurrent_init_scale`. Default:
            `"orthogonal"`.
        bias_initializer: Initializer for the bias. Default: `"zeros"`.
        forget_bias: Finite float added to the forget-gate slice of the
            initial bias (3.0 in the paper; 1.0 is Keras'
            `unit_forget_bias`). Ignored when `use_bias=False`.
        recurrent_init_scale: Float > 0, scale of the initial hidden matrices.
            Default: 0.7.
        weight_normalization: Boolean, whether to weight-normalize the
            matrices that `weight_normalization_scope` names.
        weight_normalization_scope: `"recurrent"` (default, as Krause et
            al. Section 4.2: "weight normalization ... on recurrent
            weights"): `recurrent_kernel` and `multiplicative_kernel`; or
            `"all"`: those and the input `kernel`. Ignored when
            `weight_normalization=False`.
        kernel_regularizer: Regularizer for `kernel` (its direction `v` when
            weight normalization covers it).
        recurrent_regularizer: Regularizer for `recurrent_kernel` and
            `multiplicative_kernel` (their directions under weight
            normalization).
        bias_regularizer: Regularizer for the bias.
        kernel_constraint: Constraint for `kernel`.
        recurrent_constraint: Constraint for `recurrent_kernel` and
            `multiplicative_kernel`.
        bias_constraint: Constraint for the bias.
        dropout: Float in [0, 1). Rate of the per-sequence mask on the input.
        recurrent_dropout: Float in [0, 1). Rate of the per-sequence mask on
            the hidden state (the dropped h_t is output and fed back).
        seed: `None` or an int, the seed of the initial weights and of the
            dropout masks.
        return_sequences: Boolean. Whether to return the output of every step
            (`(batch, time, output_size)`) or of the last one only. Default
            `False`.
        return_state: Boolean. Whether to return the final states after the
            output. Default `False`.
        go_backwards: Boolean (default `False`). If `True`, process the input
            sequence backwards and return the reversed sequence.
        stateful: Boolean (default `False`). If `True`, the last state of each
            sample at index `i` in a batch is the initial state of the sample
            at index `i` in the next batch (truncated BPTT).
        unroll: Boolean (default `False`). If `True`, the time loop is unrolled
            (faster for short sequences, more memory).
        zero_output_for_mask: Boolean (default `False`). Whether masked steps
            output zeros (`True`) or repeat the previous output.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        sequences: A floating-point `(batch, time, features)` tensor
            (integer or boolean inputs are refused with a `ValueError`).
        initial_state: Optional list of the cell's initial states,
            `[h, c]`; None starts from zeros.
        mask: Optional `(batch, time)` boolean tensor: at a `False` step
            the states are carried over unchanged.
        training: Whether dropout is applied (`dropout`, `recurrent_dropout`).

    Examples:

        >>> import numpy as np
        >>> from hmkeras.cells import MultiplicativeLSTM
        >>> layer = MultiplicativeLSTM(4, weight_normalization=True,
        ...                            return_sequences=True)
        >>> tuple(layer(np.ones((2, 5, 3), "float32")).shape)
        (2, 5, 4)
    """

    cell_name = "multiplicative_lstm_cell"
    cell_class = MultiplicativeLSTMCell

    def __init__(
        self,
        units,
        multiplicative_units=None,
        activation="tanh",
        recurrent_activation="sigmoid",
        use_bias=True,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        forget_bias=3.0,
        recurrent_init_scale=0.7,
        weight_normalization=False,
        weight_normalization_scope="recurrent",
        kernel_regularizer=None,
        recurrent_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        recurrent_constraint=None,
        bias_constraint=None,
        dropout=0.0,
        recurrent_dropout=0.0,
        seed=None,
        *,
        return_sequences=False,
        return_state=False,
        go_backwards=False,
        stateful=False,
        unroll=False,
        zero_output_for_mask=False,
        **kwargs,
    ):
        cell = MultiplicativeLSTMCell(
            units,
            multiplicative_units=multiplicative_units,
            activation=activation,
            recurrent_activation=recurrent_activation,
            use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
            forget_bias=forget_bias,
            recurrent_init_scale=recurrent_init_scale,
            weight_normalization=weight_normalization,
            weight_normalization_scope=weight_normalization_scope,
            kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer,
            kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint,
            dropout=dropout,
            recurrent_dropout=recurrent_dropout,
            seed=seed,
            name=self.cell_name,
            **cell_base_arguments(kwargs),
        )
        super().__init__(
            cell,
            return_sequences=return_sequences,
            return_state=return_state,
            go_backwards=go_backwards,
            stateful=stateful,
            unroll=unroll,
            zero_output_for_mask=zero_output_for_mask,
            **kwargs,
        )
