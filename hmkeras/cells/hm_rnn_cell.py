"""The hierarchical multiscale Elman RNN cell (Kadar et al. 2018, Eq. 9)."""

import keras
from keras import ops

from hmkeras.cells import layer_weights
from hmkeras.cells.hierarchical_cell import HierarchicalCell
from hmkeras.cells.layer_products import ProductGates
from hmkeras.cells.layer_step import blend_copy


@keras.saving.register_keras_serializable(package="hmkeras")
class HMRNNCell(HierarchicalCell):
    """Hierarchical multiscale RNN with Elman updates (HMRNN).

    Kadar et al. Eq. (9), in the vectorized form of their Appendix B
    (Eq. 13-15).  Each layer `l` (bottom first, `h^0 = x`, `z^0 = 1`):

        FLUSH  (z^l_{t-1} = 1):                 h = tanh(W h^{l-1}_t + V h^{l+1}_{t-1} + b)
        UPDATE (z^l_{t-1} = 0, z^{l-1}_t = 1):  h = tanh(W h^{l-1}_t + U h^l_{t-1} + b)
        COPY   (z^l_{t-1} = 0, z^{l-1}_t = 0):  h unchanged (exactly)

    i.e. `h = copy * h_{t-1} + (1 - copy) * tanh(W h^{l-1} + (1 - update)
    V h^{l+1} + update U h^l + b)` (Eq. 15).  The top layer has no
    top-down input and no boundary: `h = (1 - z^{L-1}_t) h_{t-1} +
    z^{L-1}_t tanh(W h^{L-1}_t + U h^L_{t-1} + b)` (Eq. 14).

    Every matrix has one extra column, the boundary detector's: the paper
    gives no separate rule for it, so here `z~ = hard_sigm` of the same
    mixed pre-activation as the candidate (its last column); during a COPY
    that is the FLUSH mixture `W h^{l-1}_t + V h^{l+1}_{t-1}`, as Eq. (15)
    gives with `u_m = 0`.  The boundary
    machinery (modes, slope, straight-through estimator, masks, state and
    output layout) is the one `HMLSTMCell` uses.

    Gradients: the straight-through estimator differentiates through
    every boundary decision, and here a decision switches a layer between
    whole products (`U h^l` or `V h^{l+1}`) and between keeping `h` and
    replacing it, so the gradient grows with the sequence length (without
    layer norm exponentially: at 3 x 256 a global norm of about 7e2 over
    50 steps, 2e6 over 100, 2e13 over 200, `bench/gradient_norms.py`).
    Train with gradient clipping (Kadar et al. clip the norm at 1.0), and
    for long windows with a smaller `slope` (0.25: about 15 over 100
    steps) or `top_down=False`.

    Per-step output: `[h^1 | ... | h^L | z^1 ... z^{L-1}]`.
    State: `[h^1, ..., h^L, z_{t-1}]`.

    Numbers may be given as Python or NumPy scalars; booleans, strings,
    NaN and infinities are refused with a `ValueError` naming the argument
    (as in `HMLSTMCell`). The arguments after `num_layers` are
    keyword-only.

    Args:
        units: Positive int (every layer) or a list of per-layer sizes.
        num_layers: Number of layers L >= 2. Defaults to 3, or to
            `len(units)` when `units` is a list.
        boundary_mode: `"step"`, `"sample"` or `"soft"` (see `HMLSTMCell`).
        slope: Initial hard-sigmoid slope `a > 0` (a non-trainable weight).
        boundary_gradient: The straight-through backward pass,
            `"hard_sigmoid"` (default) or `"sigmoid"` (see `HMLSTMCell`).
        boundary_input: What the detectors read, `"previous"` (default)
            or `"updated"` (see `HMLSTMCell`).
        layer_norm: Layer normalization (Ba et al. 2016) of each of the
            bottom-up, recurrent and top-down products. Default `True`.
        layer_norm_gain: Initial gain (> 0) of those normalizations (see
            `HMLSTMCell`).
        top_down: Whether FLUSH reads the layer above (Eq. 9). With
            `False` a FLUSH uses `tanh(W h^{l-1}_t + b)` alone.
        boundary_bias: Initial bias of every boundary detector (a finite
            number, default 0).
        nested_boundaries: Whether a layer above the bottom ends a segment
            only where the layer below ends one: `z^l_t` is its detector's
            decision times `z^{l-1}_t` (an extension; default `False`,
            Chung et al.'s detectors, which may fire at any step). A
            phrase ends where a word ends; on the main job's HM-LSTM,
            with no placement of its own, `z^2` then marks the phrases
            on most seeds (`docs/results/char-lm.md`, "Boundaries nested
            in the layer below's").
        kernel_initializer: For the bottom-up matrices `W`.
        recurrent_initializer: For the recurrent `U` and top-down `V`
            matrices. Default orthogonal.
        boundary_initializer: For the boundary column of every matrix.
        bias_initializer: For the biases.
        kernel_regularizer: Regularizer of `W`.
        recurrent_regularizer: Regularizer of `U` and `V`.
        bias_regularizer: Regularizer of `b`.
        kernel_constraint: Constraint of `W`.
        recurrent_constraint: Constraint of `U` and `V`.
        bias_constraint: Constraint of `b`.
        dropout: Variational dropout rate of the input, in [0, 1).
        recurrent_dropout: Variational dropout rate of `h^l_{t-1}` where it
            enters the recurrent and top-down products, in [0, 1).
        seed: Seed of the initial weights, the dropout masks and the
            Bernoulli boundary samples (see `HMLSTMCell`).
        sparse_updates: Skip the update of a layer that COPYs in every row
            at inference (see `HMLSTMCell`).
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: A floating-point `(batch, features)` tensor, one step
            (`keras.layers.RNN` passes its `(batch, time, features)`
            sequence one step at a time). Integer inputs, usually token ids
            that need a `keras.layers.Embedding`, are refused with a
            `ValueError`.
        states: The state list above.
        training: Whether boundaries are sampled (`"sample"` mode) and
            dropout is applied.

    Examples:

        >>> import keras, numpy as np, hmkeras
        >>> cell = hmkeras.HMRNNCell([8, 6], boundary_mode="step")
        >>> y = keras.layers.RNN(cell, return_sequences=True)(np.ones((2, 5, 3), "float32"))
        >>> tuple(y.shape)
        (2, 5, 15)
    """

    _extra_states_per_layer = 0
    # COPY (u_m = 0): W h^{l-1}_t + V h^{l+1}_{t-1}, the FLUSH mixture (Eq. 15).
    _copy_products = ("bottom_up", "top_down")
    _columns_per_unit = 1
    _stack_recurrent_products = False

    def __init__(
        self,
        units,
        num_layers=None,
        *,
        boundary_mode="step",
        slope=1.0,
        boundary_gradient="hard_sigmoid",
        boundary_input="previous",
        layer_norm=True,
        layer_norm_gain=0.2,
        top_down=True,
        boundary_bias=0.0,
        nested_boundaries=False,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        boundary_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        recurrent_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        recurrent_constraint=None,
        bias_constraint=None,
        dropout=0.0,
        recurrent_dropout=0.0,
        seed=None,
        sparse_updates=False,
        **kwargs,
    ):
        super().__init__(
            units,
            num_layers,
            boundary_mode=boundary_mode,
            slope=slope,
            boundary_gradient=boundary_gradient,
            boundary_input=boundary_input,
            layer_norm=layer_norm,
            layer_norm_gain=layer_norm_gain,
            top_down=top_down,
            boundary_bias=boundary_bias,
            nested_boundaries=nested_boundaries,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            boundary_initializer=boundary_initializer,
            bias_initializer=bias_initializer,
            kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer,
            kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint,
            dropout=dropout,
            recurrent_dropout=recurrent_dropout,
            seed=seed,
            sparse_updates=sparse_updates,
            **kwargs,
        )

    def _build_layer(self, index, input_size, units, above_units):
        params = layer_weights.add_products(self, index, input_size, units, above_units)
        params["bias"] = layer_weights.add_bias(self, index, units, above_units is not None)
        self._layer_params.append(params)

    def _product_gates(self, step):
        if step.is_top:
            return ProductGates()  # Eq. (14): the top layer never FLUSHes
        # Eq. (13)/(15): u_m U h^l_{t-1} + (1 - u_m) V h^{l+1}_{t-1}
        update = step.ops.update
        return ProductGates(recurrent=update, top_down=1.0 - update)

    def _layer_step(self, step):
        units = self.units[step.index]
        (h_previous,) = step.state
        s = step.products.mixture(step.inputs, self._product_gates(step))
        s = s + self._layer_params[step.index]["bias"]
        h = blend_copy(step.ops.copy, h_previous, ops.tanh(s[:, :units]))  # Eq. (15)
        boundary = s[:, units:] if self.has_detector_columns and not step.is_top else None
        return [h], boundary
