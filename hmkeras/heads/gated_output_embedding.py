"""Chung et al.'s gated output embedding over all layers (Eq. 11-12).

Chung, Ahn & Bengio, "Hierarchical Multiscale Recurrent Neural Networks"
(ICLR 2017), Section 4.1 and Figure 2 (right). At each step the output
embedding reads the hidden states of all L layers, each scaled by a scalar
gate computed from all of them:

    g^l_t = sigm(w^l [h^1_t; ...; h^L_t])                     (Eq. 11)
    h^e_t = ReLU(sum_l g^l_t W^e_l h^l_t)                       (Eq. 12)

Implementation note. With `W^e = [W^e_1; ...; W^e_L]` stacked along its
input axis (the `kernel` weight, shape `(sum(layer_sizes), units)`), the
gated sum is one matrix product of the gate-scaled concatenation:

    sum_l g^l W^e_l h^l = W^e [g^1 h^1; ...; g^L h^L],

so the layer costs one `(sum(layer_sizes), L)` product for the gates and one
`(sum(layer_sizes), units)` product for the embedding -- the same as
`hmkeras.SimpleOutputEmbedding` plus the gates -- instead of L separate
products or a `(batch, L, units)` intermediate.
"""

import numpy as np

import keras
from keras import ops

from hmkeras import argument_checks
from hmkeras.heads.output_embedding import OutputEmbedding


@keras.saving.register_keras_serializable(package="hmkeras")
class GatedOutputEmbedding(OutputEmbedding):
    """Gated output embedding of a multi-layer RNN - Chung et al. 2017.

    For hidden states `h^1..h^L` (bottom first) of a hierarchical or stacked
    RNN, computes one scalar gate per layer from all of them,
    `g^l = sigm(w^l [h^1; ...; h^L])` (Eq. 11), and the embedding
    `h^e = ReLU(sum_l g^l W^e_l h^l)` (Eq. 12). The gates let the output use
    the slow upper layers (which COPY between boundaries) and the fast bottom
    layer in proportions that change every step. It is usually followed by a
    `keras.layers.Dense(vocab_size)` softmax layer.

    The inputs are either plain concatenated hidden states or the per-step
    output of a hierarchical cell (`[h^1 | ... | h^L | z^1 ... z^{L-1}]`); in
    the latter case pass `layer_sizes=cell.units` and the boundary columns are
    ignored.

    Numbers may be given as Python or NumPy integers (`np.int64(8)`,
    `layer_sizes=np.array([4, 4, 4])`); floats, booleans and strings are
    refused with a `ValueError` naming the argument.

    Args:
        units: Positive integer, dimensionality of the output embedding.
        layer_sizes: Optional list of positive integers, the size of each
            layer's hidden state, bottom first (e.g. `cell.units`). The last
            dimension of the inputs must then be `sum(layer_sizes)` or
            `sum(layer_sizes) + len(layer_sizes) - 1` (boundary columns
            ignored). `None` (default) treats the whole input as the hidden
            state of a single layer (L = 1, one gate).
        use_bias: `True` or `False`, whether the gate logits and the
            embedding get a bias each. Default: `False`, as in Eq. 11-12.
        kernel_initializer: Initializer for `W^e = [W^e_1; ...; W^e_L]`, the
            `kernel` weight of shape `(sum(layer_sizes), units)`.
            Default: `"glorot_uniform"`.
        gate_initializer: Initializer for `[w^1 ... w^L]`, the `gate_kernel`
            weight of shape `(sum(layer_sizes), L)`.
            Default: `"glorot_uniform"`.
        bias_initializer: Initializer for the embedding bias.
            Default: `"zeros"`.
        gate_bias_initializer: Initializer for the gate bias.
            Default: `"zeros"`.
        kernel_regularizer: Regularizer function applied to `kernel`.
        gate_regularizer: Regularizer function applied to `gate_kernel`.
        bias_regularizer: Regularizer function applied to both biases.
        activity_regularizer: Regularizer function applied to the output.
        kernel_constraint: Constraint function applied to `kernel`.
        gate_constraint: Constraint function applied to `gate_kernel`.
        bias_constraint: Constraint function applied to both biases.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`
            (a dtype policy such as `"mixed_float16"` is honoured).

    Call arguments:
        inputs: A tensor of shape `(batch, features)` or
            `(batch, timesteps, features)` (rank >= 2: a single vector
            without its batch axis is refused with a `ValueError`),
            `features` as described under `layer_sizes`.

    Returns:
        A tensor of shape `(..., units)`, non-negative. The gates themselves
        are available from `compute_gates(inputs)`, shape `(..., L)`.

    Examples:

        >>> import numpy as np
        >>> # e.g. an HM cell with units [4, 4, 4]: 12 hidden + 2 boundary columns
        >>> outputs = np.random.random((2, 5, 14)).astype("float32")
        >>> embedding = GatedOutputEmbedding(8, layer_sizes=[4, 4, 4])
        >>> tuple(embedding(outputs).shape)
        (2, 5, 8)
        >>> tuple(embedding.compute_gates(outputs).shape)
        (2, 5, 3)
    """

    def __init__(
        self,
        units,
        layer_sizes=None,
        use_bias=False,
        kernel_initializer="glorot_uniform",
        gate_initializer="glorot_uniform",
        bias_initializer="zeros",
        gate_bias_initializer="zeros",
        kernel_regularizer=None,
        gate_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        kernel_constraint=None,
        gate_constraint=None,
        bias_constraint=None,
        **kwargs,
    ):
        super().__init__(
            units,
            layer_sizes=layer_sizes,
            use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            bias_initializer=bias_initializer,
            kernel_regularizer=kernel_regularizer,
            bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer,
            kernel_constraint=kernel_constraint,
            bias_constraint=bias_constraint,
            **kwargs,
        )
        self.gate_initializer = keras.initializers.get(gate_initializer)
        self.gate_bias_initializer = keras.initializers.get(
            gate_bias_initializer
        )
        self.gate_regularizer = keras.regularizers.get(gate_regularizer)
        self.gate_constraint = keras.constraints.get(gate_constraint)

    def _build_weights(self):
        num_layers = len(self._sizes)
        # Column l of the gate kernel is w^l (Eq. 11).
        self.gate_kernel = self.add_weight(
            name="gate_kernel",
            shape=(sum(self._sizes), num_layers),
            initializer=self.gate_initializer,
            regularizer=self.gate_regularizer,
            constraint=self.gate_constraint,
        )
        # Rows [offset_l, offset_l + size_l) of the kernel are W^e_l (Eq. 12).
        self._add_kernel()
        # Weight order gate_kernel, kernel, gate_bias, bias: saved models
        # restore weights by position.
        self.gate_bias = self._maybe_add_bias(
            "gate_bias", num_layers, self.gate_bias_initializer
        )
        self.bias = self._maybe_add_bias(
            "bias", self.units, self.bias_initializer
        )
        # Layer index of every hidden column, to spread g^l over h^l.
        self._column_layer = np.repeat(
            np.arange(num_layers, dtype="int32"), self._sizes
        )

    def _gates(self, hidden):
        # Explicit casts: `compute_gates` runs outside `__call__`'s autocast.
        kernel = ops.cast(self.gate_kernel, hidden.dtype)
        logits = ops.matmul(hidden, kernel)  # w^l [h^1; ...; h^L]
        if self.gate_bias is not None:
            logits = ops.add(logits, ops.cast(self.gate_bias, hidden.dtype))
        return ops.sigmoid(logits)  # Chung et al. Eq. (11)

    def call(self, inputs):
        hidden = self._hidden(inputs)
        gates = self._gates(hidden)  # (..., L)
        # g^l repeated over the size_l columns of h^l: [g^1 h^1; ...; g^L h^L].
        column_gates = ops.take(gates, self._column_layer, axis=-1)
        # sum_l g^l W^e_l h^l as a single product (see module docstring).
        x = self._project(ops.multiply(column_gates, hidden))
        return ops.relu(x)  # Chung et al. Eq. (12)

    def compute_gates(self, inputs):
        """Returns the gates `g^1..g^L` of Eq. (11), shape `(..., L)`.

        Args:
            inputs: The same inputs as for `call`.
        """
        inputs = ops.convert_to_tensor(inputs)
        # As in `call`: integer inputs are refused, floats computed in the
        # compute dtype.
        argument_checks.check_float_inputs(type(self).__name__, inputs)
        inputs = ops.cast(inputs, self.compute_dtype)
        if not self.built:
            self.build(inputs.shape)
        return self._gates(self._hidden(inputs))

    def get_config(self):
        config = super().get_config()
        config.update(
            self._serialized(
                "gate_initializer",
                "gate_bias_initializer",
                "gate_regularizer",
                "gate_constraint",
            )
        )
        return config
