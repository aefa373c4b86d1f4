"""Kadar et al.'s "SimplerOut" output embedding: ReLU(W^e [h^1; ...; h^L]).

Kadar, Coltekin, Roeder & Kostadinov (COLING 2018), Section 3.2, ablation
"Simpler output layer (SimplerOut)": the gated output module of Chung et al.
(Eq. 11-12, see `hmkeras.GatedOutputEmbedding`) is replaced by one affine map
of the concatenated hidden states of all layers,

    h^e_t = ReLU(W^e [h^1_t; h^2_t; ...; h^L_t]).

It improved PTB from 1.27 to 1.25 bpc for the HM-LSTM (Table 2, row 9) and
from 1.32 to 1.26 bpc for a 3-layer LSTM (row 11).

This module also holds the small helpers both output embeddings share to
read the per-step output layout of the hierarchical cells (DESIGN.md):
`[h^1 | ... | h^L | z^1 ... z^{L-1}]`, width `sum(units) + L - 1`.
"""

import keras
from keras import ops


def _check_layer_sizes(layer_sizes):
    """Validates the `layer_sizes` argument; returns a tuple of ints or None."""
    if layer_sizes is None:
        return None
    if isinstance(layer_sizes, (int, float, str, bytes)):
        raise ValueError(
            "Argument `layer_sizes` must be a list of positive integers "
            f"(one per layer, e.g. `cell.units`). Received: {layer_sizes!r}"
        )
    sizes = tuple(layer_sizes)
    if not sizes:
        raise ValueError(
            "Argument `layer_sizes` must be a non-empty list of positive "
            f"integers. Received: {layer_sizes!r}"
        )
    for size in sizes:
        if isinstance(size, bool) or int(size) != size or size <= 0:
            raise ValueError(
                "Argument `layer_sizes` must contain positive integers only. "
                f"Received: {layer_sizes!r}"
            )
    return tuple(int(s) for s in sizes)


def _check_units(units):
    if isinstance(units, bool) or int(units) != units or units <= 0:
        raise ValueError(
            f"Argument `units` must be a positive integer. Received: {units!r}"
        )
    return int(units)


def _resolve_layer_sizes(layer_sizes, input_dim, layer_name):
    """Per-layer sizes for an input of width `input_dim`.

    With `layer_sizes=None` the whole input is one hidden state (L = 1).
    Otherwise the width must be `sum(layer_sizes)` (concatenated hidden
    states) or `sum(layer_sizes) + L - 1` (hierarchical cell output whose
    trailing boundary columns are ignored).
    """
    if input_dim is None:
        raise ValueError(
            f"{layer_name}: the last dimension of the inputs must be known. "
            "Received an input with unknown last dimension."
        )
    input_dim = int(input_dim)
    if layer_sizes is None:
        return (input_dim,)
    hidden = sum(layer_sizes)
    with_boundaries = hidden + len(layer_sizes) - 1
    if input_dim not in (hidden, with_boundaries):
        raise ValueError(
            f"{layer_name}: with layer_sizes={list(layer_sizes)} the last "
            f"dimension of the inputs must be sum(layer_sizes)={hidden} "
            "(concatenated hidden states) or "
            f"sum(layer_sizes)+L-1={with_boundaries} (hierarchical cell output "
            f"[h^1..h^L | z^1..z^(L-1)]). Received last dimension {input_dim}."
        )
    return tuple(layer_sizes)


@keras.saving.register_keras_serializable(package="hmkeras")
class SimpleOutputEmbedding(keras.layers.Layer):
    """Output embedding over the concatenated hidden states (Kadar "SimplerOut").

    Computes `h^e = ReLU(W^e [h^1; ...; h^L] (+ b))` at every position: a
    single affine map of all layers' hidden states followed by a ReLU (Kadar
    et al. 2018, Section 3.2). It is the simpler alternative to Chung et al.'s
    gated output module (`hmkeras.GatedOutputEmbedding`) and is usually
    followed by a `keras.layers.Dense(vocab_size)` softmax layer.

    The inputs are either plain concatenated hidden states or the per-step
    output of a hierarchical cell (`[h^1 | ... | h^L | z^1 ... z^{L-1}]`); in
    the latter case pass `layer_sizes=cell.units` and the boundary columns are
    dropped before the matrix product.

    Args:
        units: Positive integer, dimensionality of the output embedding.
        layer_sizes: Optional list of positive integers, the size of each
            layer's hidden state, bottom first (e.g. `cell.units`). The last
            dimension of the inputs must then be `sum(layer_sizes)` or
            `sum(layer_sizes) + len(layer_sizes) - 1` (boundary columns
            ignored). `None` (default) treats the whole input as one hidden
            state.
        use_bias: Boolean, whether to add a bias before the ReLU. Default:
            `False`, as in Kadar et al.'s formula.
        kernel_initializer: Initializer for `W^e` (the `kernel` weight, shape
            `(sum(layer_sizes), units)`). Default: `"glorot_uniform"`.
        bias_initializer: Initializer for the bias. Default: `"zeros"`.
        kernel_regularizer: Regularizer function applied to `W^e`.
            Default: `None`.
        bias_regularizer: Regularizer function applied to the bias.
            Default: `None`.
        activity_regularizer: Regularizer function applied to the output.
            Default: `None`.
        kernel_constraint: Constraint function applied to `W^e`.
            Default: `None`.
        bias_constraint: Constraint function applied to the bias.
            Default: `None`.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`
            (a dtype policy such as `"mixed_float16"` is honoured).

    Call arguments:
        inputs: A tensor of shape `(batch, features)` or
            `(batch, timesteps, features)`, `features` as described under
            `layer_sizes`.

    Returns:
        A tensor of shape `(..., units)`, non-negative.

    Example:

    >>> import numpy as np
    >>> # e.g. an HM cell with units [2, 2, 2]: 6 hidden + 2 boundary columns
    >>> outputs = np.random.random((4, 10, 8)).astype("float32")
    >>> embedding = SimpleOutputEmbedding(16, layer_sizes=[2, 2, 2])
    >>> tuple(embedding(outputs).shape)
    (4, 10, 16)
    """

    def __init__(
        self,
        units,
        layer_sizes=None,
        use_bias=False,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        **kwargs,
    ):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.units = _check_units(units)
        self.layer_sizes = _check_layer_sizes(layer_sizes)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)
        self.bias_constraint = keras.constraints.get(bias_constraint)
        self.supports_masking = True
        self._hidden_dim = None

    def build(self, input_shape):
        sizes = _resolve_layer_sizes(
            self.layer_sizes, input_shape[-1], type(self).__name__
        )
        self._hidden_dim = sum(sizes)
        # Kadar et al. Sec. 3.2: W^e acts on [h^1; ...; h^L].
        self.kernel = self.add_weight(
            name="kernel",
            shape=(self._hidden_dim, self.units),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        if self.use_bias:
            self.bias = self.add_weight(
                name="bias",
                shape=(self.units,),
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )
        else:
            self.bias = None

    def call(self, inputs):
        _resolve_layer_sizes(
            self.layer_sizes, inputs.shape[-1], type(self).__name__
        )
        hidden = inputs[..., : self._hidden_dim]  # drop z^1..z^{L-1} columns
        x = ops.matmul(hidden, self.kernel)  # W^e [h^1; ...; h^L]
        if self.bias is not None:
            x = ops.add(x, self.bias)
        return ops.relu(x)  # Kadar et al. Sec. 3.2, SimplerOut

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "layer_sizes": (
                    None if self.layer_sizes is None else list(self.layer_sizes)
                ),
                "use_bias": self.use_bias,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(
                    self.bias_initializer
                ),
                "kernel_regularizer": keras.regularizers.serialize(
                    self.kernel_regularizer
                ),
                "bias_regularizer": keras.regularizers.serialize(
                    self.bias_regularizer
                ),
                "kernel_constraint": keras.constraints.serialize(
                    self.kernel_constraint
                ),
                "bias_constraint": keras.constraints.serialize(
                    self.bias_constraint
                ),
            }
        )
        return config
