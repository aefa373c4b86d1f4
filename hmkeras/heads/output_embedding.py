"""`OutputEmbedding`: the private base of the output embeddings.

Both output modules map the hidden states of all L layers of a hierarchical
or stacked RNN to one embedding `h^e_t = ReLU(W^e x_t (+ b))`:

  * `hmkeras.GatedOutputEmbedding` (Chung et al. 2017, Eq. 11-12), with
    `x_t = [g^1 h^1_t; ...; g^L h^L_t]` scaled by per-layer gates;
  * `hmkeras.SimpleOutputEmbedding` (Kadar et al. 2018, "SimplerOut"), with
    `x_t = [h^1_t; ...; h^L_t]`.

This module holds what they share: the `units` / `layer_sizes` arguments
and their checks, reading the per-step output layout of the hierarchical
cells (DESIGN.md) -- `[h^1 | ... | h^L | z^1 ... z^{L-1}]`, width
`sum(units) + L - 1`, whose boundary columns are dropped -- the `kernel`
`W^e` and `bias` weights with their initializers, regularizers and
constraints, `compute_output_shape` and `get_config`. The subclasses add
their equation in `call` and, for the gates, their own weights.
"""

import keras
from keras import ops

from hmkeras import argument_checks


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


def _check_rank(input_shape, layer_name):
    """Inputs must have a batch axis: `(batch, features)` or more."""
    if len(input_shape) < 2:
        raise ValueError(
            f"{layer_name} expects inputs of rank >= 2, (batch, features) or "
            "(batch, time, features): the hidden states of a batch. Add the "
            "batch axis to a single vector (`x[None]`). Received: "
            f"inputs.shape={tuple(input_shape)}"
        )


class OutputEmbedding(keras.layers.Layer):
    """Base class: `ReLU(W^e x (+ b))` over the hidden states of all layers.

    Not registered for serialization and not exported: use
    `hmkeras.GatedOutputEmbedding` or `hmkeras.SimpleOutputEmbedding`. The
    constructor arguments are those documented there (without the gate
    arguments). Subclasses implement `call` with `_hidden` (boundary columns
    dropped) and `_project` (`W^e x + b`), and may override `_build_weights`
    to add weights; `build` resolves the per-layer sizes into `self._sizes`.
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
        self.units = argument_checks.check_positive_int("units", units)
        layer_sizes = argument_checks.check_int_list(
            "layer_sizes", layer_sizes, allow_none=True
        )
        self.layer_sizes = None if layer_sizes is None else tuple(layer_sizes)
        self.use_bias = argument_checks.check_bool("use_bias", use_bias)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)
        self.bias_constraint = keras.constraints.get(bias_constraint)
        self.supports_masking = True
        self._sizes = None

    def build(self, input_shape):
        _check_rank(input_shape, type(self).__name__)
        self._sizes = _resolve_layer_sizes(
            self.layer_sizes, input_shape[-1], type(self).__name__
        )
        self._build_weights()

    def _build_weights(self):
        """Creates the weights once `self._sizes` is known: by default
        `kernel` and, with `use_bias`, `bias` (in this order, the order in
        which saved weights are restored)."""
        self._add_kernel()
        self.bias = self._maybe_add_bias(
            "bias", self.units, self.bias_initializer
        )

    def _add_kernel(self):
        # W^e = [W^e_1; ...; W^e_L], shape (sum(layer_sizes), units): rows
        # [offset_l, offset_l + size_l) act on h^l.
        self.kernel = self.add_weight(
            name="kernel",
            shape=(sum(self._sizes), self.units),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )

    def _maybe_add_bias(self, name, size, initializer):
        """A bias weight of shape `(size,)` if `use_bias`, else None.

        Every bias shares `bias_regularizer` and `bias_constraint`.
        """
        if not self.use_bias:
            return None
        return self.add_weight(
            name=name,
            shape=(size,),
            initializer=initializer,
            regularizer=self.bias_regularizer,
            constraint=self.bias_constraint,
        )

    def _hidden(self, inputs):
        """`[h^1; ...; h^L]`: the inputs without the boundary columns."""
        _check_rank(inputs.shape, type(self).__name__)
        argument_checks.check_float_inputs(type(self).__name__, inputs)
        _resolve_layer_sizes(
            self.layer_sizes, inputs.shape[-1], type(self).__name__
        )
        return inputs[..., : sum(self._sizes)]  # drop z^1..z^{L-1} columns

    def _project(self, x):
        """`W^e x (+ b)`, the pre-activation of the embedding."""
        x = ops.matmul(x, self.kernel)
        if self.bias is not None:
            x = ops.add(x, self.bias)
        return x

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def _serialized(self, *names):
        """`{name: serialized attribute}` of initializers, regularizers and
        constraints, for `get_config`."""
        serializers = {
            "initializer": keras.initializers.serialize,
            "regularizer": keras.regularizers.serialize,
            "constraint": keras.constraints.serialize,
        }
        return {
            name: serializers[name.rsplit("_", 1)[-1]](getattr(self, name))
            for name in names
        }

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "layer_sizes": (
                    None if self.layer_sizes is None else list(self.layer_sizes)
                ),
                "use_bias": self.use_bias,
            }
        )
        config.update(
            self._serialized(
                "kernel_initializer",
                "bias_initializer",
                "kernel_regularizer",
                "bias_regularizer",
                "kernel_constraint",
                "bias_constraint",
            )
        )
        return config
