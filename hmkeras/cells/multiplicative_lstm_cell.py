"""Multiplicative LSTM cell (Krause, Lu, Murray & Renals, 2017)."""

import keras
from keras import activations
from keras import constraints
from keras import initializers
from keras import ops
from keras import regularizers

from hmkeras import argument_checks
from hmkeras.cells import weight_normalization
from hmkeras.cells.independent_initializers import independent_draw
from hmkeras.cells.sequence_kernel import product as kernel_product
from hmkeras.cells.sequence_kernel import sequence_kernel
from hmkeras.cells.variational_dropout import VariationalDropoutMixin

# Gate blocks of `multiplicative_kernel` / the gate columns of `kernel` and of
# `bias`, in this order: the three sigmoid gates first, then the candidate,
# so that one activation call covers all gates.
GATE_ORDER = ("input", "forget", "output", "candidate")

# The matrices that weight normalization covers, per `weight_normalization_scope`.
# "recurrent": the recurrent weights of Krause et al. Section 4.2, i.e. the
# matrices applied to h_{t-1} and m_t (W_mh of Eq. 17; W_hm, W_im, W_om, W_fm
# of Eq. 18-21), the "1.25 times the number of recurrent weights as LSTM"
# that Section 2 counts. "all": the input projections `kernel` too.
WEIGHT_NORMALIZATION_SCOPES = {
    "recurrent": ("recurrent_kernel", "multiplicative_kernel"),
    "all": ("kernel", "recurrent_kernel", "multiplicative_kernel"),
}
def _scaled_block_initializer(initializer, scale, num_blocks, first_draw, seed):
    """Initialises a `(rows, num_blocks * width)` matrix block by block.

    Each `(rows, width)` block is drawn on its own and multiplied by `scale`:
    with an orthogonal initializer every block is a scaled (semi-)orthogonal
    matrix, Krause et al.'s "scaled orthogonal initialisation" (Section 4.1,
    footnote 2: scale 0.7, so that W_hm W_mh starts with spectral radius 0.49).
    """

    def initializer_fn(shape, dtype=None):
        rows, columns = shape
        width = columns // num_blocks
        blocks = [
            independent_draw(initializer, first_draw + k, seed)((rows, width), dtype=dtype)
            for k in range(num_blocks)
        ]
        matrix = blocks[0] if num_blocks == 1 else ops.concatenate(blocks, axis=1)
        return ops.multiply(matrix, ops.cast(scale, matrix.dtype))

    return initializer_fn


@keras.saving.register_keras_serializable(package="hmkeras")
class MultiplicativeLSTMCell(VariationalDropoutMixin, keras.layers.Layer):
    """Cell class for the multiplicative LSTM (mLSTM) layer.

    Krause et al. (2017) combine the input-dependent, factorized transition of
    the multiplicative RNN with LSTM gating. At each step (Eq. 17-21, with the
    LSTM memory and output of Eq. 15-16):

        m_t = (W_mx x_t) * (W_mh h_{t-1})                        # Eq. (17)
        h^_t = W_hx x_t + W_hm m_t                               # Eq. (18)
        i_t = sigmoid(W_ix x_t + W_im m_t)                       # Eq. (19)
        o_t = sigmoid(W_ox x_t + W_om m_t)                       # Eq. (20)
        f_t = sigmoid(W_fx x_t + W_fm m_t)                       # Eq. (21)
        c_t = f_t * c_{t-1} + i_t * tanh(h^_t)                   # Eq. (15)
        h_t = tanh(c_t) * o_t                                    # Eq. (16)

    plus a bias on the four pre-activations (`use_bias`). All input
    projections are one matmul, and all projections of m_t another:

    - `kernel`, `(input_dim, multiplicative_units + 4 * units)`:
      `[W_mx | W_ix W_fx W_ox W_hx]`;
    - `recurrent_kernel`, `(units, multiplicative_units)`: `W_mh`;
    - `multiplicative_kernel`, `(multiplicative_units, 4 * units)`:
      `[W_im W_fm W_om W_hm]`;
    - `bias`, `(4 * units,)`: `[b_i b_f b_o b_h]`.

    The gate order is input, forget, output, candidate (`GATE_ORDER`), which
    differs from `keras.layers.LSTMCell` (input, forget, candidate, output).

    Weight normalization (`weight_normalization=True`, Salimans & Kingma,
    2016): a normalized matrix becomes `g * v / ||v||` per output column,
    the variable `<name>` holding the direction `v` and `<name>_g` the gain,
    initialised to `||v||` so the initial function is that of the same cell
    without normalization. Which matrices, `weight_normalization_scope`
    says. Its default, `"recurrent"`, follows the paper, whose mLSTM uses
    "weight normalization (Salimans & Kingma, 2016) on recurrent weights"
    (Krause et al. Section 4.2): `recurrent_kernel` (W_mh, Eq. 17) and
    `multiplicative_kernel` (W_hm, W_im, W_om, W_fm, Eq. 18-21), the
    weights applied to h_{t-1} and m_t, while the input projections
    `kernel` stay as they are (no `kernel_g`). `"all"` normalizes `kernel`
    too. Under
    `hmkeras.RNN` (or in the `MultiplicativeLSTM` layer) the normalized
    matrices are computed once per sequence, before the time loop (see
    `hmkeras.cells.variational_dropout`); stepped by Keras' own
    `keras.layers.RNN` or called by hand, the cell computes them at each
    call.

    Variational dropout (Gal & Ghahramani, 2016; Krause et al. Section 4.2
    drop the embedding and the hidden state with masks "shared across a
    sequence"): `dropout` draws one mask per sequence and batch row on the
    input x_t; `recurrent_dropout` one mask on the hidden state h_t. As in
    the authors' code, it is the dropped `h_t * mask` that is both the cell's
    output and the state fed back to step t + 1 (the memory c_t is not
    dropped); unlike `keras.layers.LSTMCell`, which drops h_{t-1} only where
    it enters the recurrent matmul and outputs the undropped h_t. Masks are
    used only when `training` is true, and need a loop that opens the
    sequence: `hmkeras.RNN`, the `MultiplicativeLSTM` layer or
    `begin_sequence` / `end_sequence` (see
    `hmkeras.cells.variational_dropout`).

    Initialisation (Krause et al. Section 4.1): forget-gate bias 3
    (`forget_bias`) and scaled orthogonal hidden matrices: each `(.., units)`
    block of `recurrent_kernel` and `multiplicative_kernel` is drawn by
    `recurrent_initializer` on its own and multiplied by
    `recurrent_init_scale` (0.7 in the paper).

    Numbers may be given as Python or NumPy scalars (stored as Python
    `int` / `float`); booleans, strings, NaN and infinities are refused
    with a `ValueError` naming the argument.

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
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: A floating-point 2D tensor, with shape `(batch, features)`:
            one step of the `(batch, time, features)` sequence that
            `hmkeras.RNN` (or `keras.layers.RNN`) steps through. Integer or boolean inputs
            (usually token ids that need a `keras.layers.Embedding`) are
            refused with a `ValueError`; Keras' `LSTMCell` would silently
            read ids as numbers.
        states: A list `[h, c]` of two 2D tensors with shape `(batch, units)`,
            the state from the previous time step.
        training: Python boolean indicating whether the layer should behave in
            training mode or in inference mode. Only relevant when `dropout`
            or `recurrent_dropout` is used.

    Returns:
        `(h, [h, c])`: the output h_t and the new state.

    Examples:

        >>> import numpy as np, hmkeras
        >>> from hmkeras.cells.multiplicative_lstm_cell import MultiplicativeLSTMCell
        >>> inputs = np.random.random((32, 10, 8)).astype("float32")
        >>> rnn = hmkeras.RNN(
        ...     MultiplicativeLSTMCell(4, weight_normalization=True,
        ...                            dropout=0.2, recurrent_dropout=0.2),
        ...     return_sequences=True, return_state=True)
        >>> whole_sequence_output, final_h, final_c = rnn(inputs, training=True)
        >>> tuple(whole_sequence_output.shape), tuple(final_h.shape), tuple(final_c.shape)
        ((32, 10, 4), (32, 4), (32, 4))
        >>> [w.name for w in rnn.cell.weights if w.name.endswith("_g")]  # the gains
        ['recurrent_kernel_g', 'multiplicative_kernel_g']
    """

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
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = argument_checks.check_positive_int("units", units)
        self.multiplicative_units = argument_checks.check_positive_int(
            "multiplicative_units", multiplicative_units, allow_none=True
        ) or self.units
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = argument_checks.check_bool("use_bias", use_bias)
        self.weight_normalization = argument_checks.check_bool(
            "weight_normalization", weight_normalization
        )
        self.weight_normalization_scope = argument_checks.check_choice(
            "weight_normalization_scope",
            weight_normalization_scope,
            tuple(WEIGHT_NORMALIZATION_SCOPES),
        )
        self.forget_bias = argument_checks.check_float("forget_bias", forget_bias)
        self.recurrent_init_scale = argument_checks.check_float(
            "recurrent_init_scale", recurrent_init_scale, minimum=0, exclusive_minimum=True
        )

        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = regularizers.get(recurrent_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.recurrent_constraint = constraints.get(recurrent_constraint)
        self.bias_constraint = constraints.get(bias_constraint)

        self.init_variational_dropout(dropout, recurrent_dropout, seed)

        self.state_size = [self.units, self.units]
        self.output_size = self.units

    def build(self, input_shape):
        input_dim = argument_checks.check_step_input_shape(
            type(self).__name__, input_shape
        )
        super().build(input_shape)
        units, m_units = self.units, self.multiplicative_units
        # [W_mx | W_ix W_fx W_ox W_hx]
        self._add_matrix(
            "kernel",
            (input_dim, m_units + 4 * units),
            independent_draw(self.kernel_initializer, 0, self.seed),
            self.kernel_regularizer,
            self.kernel_constraint,
        )
        # W_mh, then [W_im W_fm W_om W_hm]: scaled orthogonal blocks.
        self._add_matrix(
            "recurrent_kernel",
            (units, m_units),
            _scaled_block_initializer(
                self.recurrent_initializer, self.recurrent_init_scale, 1, 1, self.seed
            ),
            self.recurrent_regularizer,
            self.recurrent_constraint,
        )
        self._add_matrix(
            "multiplicative_kernel",
            (m_units, 4 * units),
            _scaled_block_initializer(
                self.recurrent_initializer, self.recurrent_init_scale, 4, 2, self.seed
            ),
            self.recurrent_regularizer,
            self.recurrent_constraint,
        )
        if self.use_bias:

            def bias_initializer(shape, dtype=None):
                del shape
                bias = self.bias_initializer((4 * units,), dtype=dtype)
                # Forget-gate block (GATE_ORDER index 1) + forget_bias.
                forget = ops.concatenate(
                    [
                        ops.zeros((units,), dtype=bias.dtype),
                        ops.full((units,), self.forget_bias, dtype=bias.dtype),
                        ops.zeros((2 * units,), dtype=bias.dtype),
                    ]
                )
                return bias + forget

            self.bias = self.add_weight(
                shape=(4 * units,),
                name="bias",
                initializer=bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )
        else:
            self.bias = None

    @property
    def normalized_matrices(self):
        """Names of the weight-normalized matrices (none without it)."""
        if not self.weight_normalization:
            return ()
        return WEIGHT_NORMALIZATION_SCOPES[self.weight_normalization_scope]

    def _add_matrix(self, name, shape, initializer, regularizer, constraint):
        """Adds weight `name`; if it is weight-normalized, also `name + "_g"`."""
        normalized = name in self.normalized_matrices
        if normalized:
            # The gain starts at ||v||, so that g * v / ||v|| == v.
            initializer, gain_initializer = weight_normalization.initializers(
                initializer
            )
        matrix = self.add_weight(
            shape=shape,
            name=name,
            initializer=initializer,
            regularizer=regularizer,
            constraint=constraint,
        )
        setattr(self, name, matrix)
        if normalized:
            gain = self.add_weight(
                shape=(shape[-1],), name=f"{name}_g", initializer=gain_initializer
            )
            setattr(self, f"{name}_g", gain)

    def build_sequence_constants(self, step_input):
        """The effective weights, in the compute dtype, once per sequence.

        The three matrices as `SequenceKernel`s (with their transposes,
        which the backward pass's input gradients read), the bias as a
        tensor.
        """
        del step_input
        constants = {}
        for name in ("kernel", "recurrent_kernel", "multiplicative_kernel"):
            matrix = getattr(self, name)
            if name in self.normalized_matrices:
                # Normalize in the variable dtype (float32 under mixed precision).
                matrix = weight_normalization.weight_normalize(
                    ops.cast(matrix, self.variable_dtype),
                    ops.cast(getattr(self, f"{name}_g"), self.variable_dtype),
                )
            constants[name] = sequence_kernel(ops.cast(matrix, self.compute_dtype))
        if self.use_bias:
            constants["bias"] = ops.cast(self.bias, self.compute_dtype)
        return constants

    def call(self, inputs, states, training=False):
        argument_checks.check_float_inputs(type(self).__name__, inputs)
        input_mask = self.input_dropout_mask(inputs, training)
        if input_mask is not None:
            inputs = inputs * input_mask
        return self._step(inputs, states, training)

    def project_sequence(self, sequences, training=False):
        """The `(batch, time, input_dim)` inputs with the input dropout mask.

        The mask of the open sequence is applied to all steps at once; the
        `MultiplicativeLSTM` layer's time loop then calls `call_projected`
        with one step of the result. The input projections
        `[W_mx x_t | W_ix x_t, W_fx x_t, W_ox x_t, W_hx x_t]` are left to
        the loop, one matmul per step: precomputed for all steps they form
        a `(batch, time, multiplicative_units + 4 * units)` tensor, 10 times
        the size of 128-wide inputs at 256 units, which the loop copies and
        slices and the gradient rebuilds; on a CPU that costs more than the
        per-step products, whose results stay in cache (256 units, batch
        64 x 100, in `bench/results/throughput.md`: 140.5 ms per training
        step with the precomputed projections against 121.6 ms for
        `RNN(MultiplicativeLSTMCell)`, which projects step by step).
        """
        input_mask = self.input_dropout_mask(sequences[:, 0, :], training)
        if input_mask is not None:
            sequences = sequences * input_mask[:, None, :]
        return sequences

    def call_projected(self, inputs, states, training=False):
        """One step of `project_sequence`'s (dropped-out) inputs."""
        return self._step(inputs, states, training)

    def _step(self, inputs, states, training):
        """One step from the (dropped-out) input `x_t` (Eq. 15-21)."""
        weights = self.sequence_constants(inputs)
        h_tm1, c_tm1 = states[0], states[1]
        units, m_units = self.units, self.multiplicative_units
        # Every projection of x_t in one matmul: [W_mx x | W_ix x, W_fx x,
        # W_ox x, W_hx x]; splits (not slices): their gradient is one concat.
        # (`ops.split` takes split points: [:m_units], [m_units:].)
        projected = kernel_product(inputs, weights["kernel"])
        x_m, x_gates = ops.split(projected, [m_units], axis=-1)
        # Eq. (17): m_t = (W_mx x_t) * (W_mh h_{t-1}).
        m = x_m * kernel_product(h_tm1, weights["recurrent_kernel"])
        # Eq. (18)-(21), pre-activations: W_*x x_t + W_*m m_t (+ b).
        z = x_gates + kernel_product(m, weights["multiplicative_kernel"])
        if self.use_bias:
            z = z + weights["bias"]
        z_gates, z_candidate = ops.split(z, [3 * units], axis=-1)
        # Eq. (19), (21), (20): one activation over [i | f | o].
        i, f, o = ops.split(self.recurrent_activation(z_gates), 3, axis=-1)
        c = f * c_tm1 + i * self.activation(z_candidate)  # Eq. (15), (18)
        h = self.activation(c) * o  # Eq. (16)

        # Variational dropout on h_t: the dropped h_t is output and recurs.
        hidden_mask = self.recurrent_dropout_mask(inputs, training)
        if hidden_mask is not None:
            h = h * hidden_mask
        return h, [h, c]

    def get_initial_state(self, batch_size=None):
        return [
            ops.zeros((batch_size, size), dtype=self.compute_dtype)
            for size in self.state_size
        ]

    def get_config(self):
        config = {
            "units": self.units,
            "multiplicative_units": self.multiplicative_units,
            "activation": activations.serialize(self.activation),
            "recurrent_activation": activations.serialize(self.recurrent_activation),
            "use_bias": self.use_bias,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
            "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
            "bias_initializer": initializers.serialize(self.bias_initializer),
            "forget_bias": self.forget_bias,
            "recurrent_init_scale": self.recurrent_init_scale,
            "weight_normalization": self.weight_normalization,
            "weight_normalization_scope": self.weight_normalization_scope,
            "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
            "recurrent_regularizer": regularizers.serialize(self.recurrent_regularizer),
            "bias_regularizer": regularizers.serialize(self.bias_regularizer),
            "kernel_constraint": constraints.serialize(self.kernel_constraint),
            "recurrent_constraint": constraints.serialize(self.recurrent_constraint),
            "bias_constraint": constraints.serialize(self.bias_constraint),
            **self.variational_dropout_config(),
        }
        base_config = super().get_config()
        return {**base_config, **config}


# Short alias, as in the paper ("mLSTM").
MLSTMCell = MultiplicativeLSTMCell
