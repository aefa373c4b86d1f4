"""Kadar et al.'s "SimplerOut" output embedding: ReLU(W^e [h^1; ...; h^L]).

Kadar, Coltekin, Roeder & Kostadinov (COLING 2018), Section 3.2, ablation
"Simpler output layer (SimplerOut)": the gated output module of Chung et al.
(Eq. 11-12, see `hmkeras.GatedOutputEmbedding`) is replaced by one affine map
of the concatenated hidden states of all layers,

    h^e_t = ReLU(W^e [h^1_t; h^2_t; ...; h^L_t]).

It improved PTB from 1.27 to 1.25 bpc for the HM-LSTM (Table 2, row 9) and
from 1.32 to 1.26 bpc for a 3-layer LSTM (row 11).
"""

import keras
from keras import ops

from hmkeras.heads.output_embedding import OutputEmbedding


@keras.saving.register_keras_serializable(package="hmkeras")
class SimpleOutputEmbedding(OutputEmbedding):
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

    Numbers may be given as Python or NumPy integers (`np.int64(8)`,
    `layer_sizes=np.array([4, 4, 4])`); floats, booleans and strings are
    refused with a `ValueError` naming the argument.

    Args:
        units: Positive integer, dimensionality of the output embedding.
        layer_sizes: Optional list of positive integers, the size of each
            layer's hidden state, bottom first (e.g. `cell.units`). The last
            dimension of the inputs must then be `sum(layer_sizes)` or
            `sum(layer_sizes) + len(layer_sizes) - 1` (boundary columns
            ignored). `None` (default) treats the whole input as one hidden
            state.
        use_bias: `True` or `False`, whether to add a bias before the ReLU.
            Default: `False`, as in Kadar et al.'s formula.
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
            `(batch, timesteps, features)` (rank >= 2: a single vector
            without its batch axis is refused with a `ValueError`),
            `features` as described under `layer_sizes`.

    Returns:
        A tensor of shape `(..., units)`, non-negative.

    Examples:

        >>> import numpy as np
        >>> # e.g. an HM cell with units [2, 2, 2]: 6 hidden + 2 boundary columns
        >>> outputs = np.random.random((4, 10, 8)).astype("float32")
        >>> embedding = SimpleOutputEmbedding(16, layer_sizes=[2, 2, 2])
        >>> tuple(embedding(outputs).shape)
        (4, 10, 16)
    """

    def call(self, inputs):
        hidden = self._hidden(inputs)  # [h^1; ...; h^L]
        # Kadar et al. Sec. 3.2, SimplerOut: ReLU(W^e [h^1; ...; h^L] (+ b))
        return ops.relu(self._project(hidden))
