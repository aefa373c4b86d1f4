"""The hierarchical multiscale LSTM cell (Chung, Ahn & Bengio, ICLR 2017)."""

import keras
from keras import ops

from hmkeras import argument_checks
from hmkeras.cells import layer_weights
from hmkeras.cells.hierarchical_cell import HierarchicalCell
from hmkeras.cells.layer_products import ProductGates
from hmkeras.cells.layer_normalization import layer_normalize
from hmkeras.cells.masked_lstm_update import masked_lstm_update


@keras.saving.register_keras_serializable(package="hmkeras")
class HMLSTMCell(HierarchicalCell):
    """Hierarchical multiscale LSTM: the whole hierarchy in one RNN cell.

    At every step each layer `l` (bottom first, `h^0 = x`, `z^0 = 1`)
    computes (Chung et al. Eq. 4-7, vectorized as in Kadar et al. App. A)

        s = U_l h^l_{t-1} + z^l_{t-1} V_l h^{l+1}_{t-1}
            + z^{l-1}_t W_l h^{l-1}_t + b_l
        f, i, o = sigm(s_f, s_i, s_o);  g = tanh(s_g);  z~ = hard_sigm(s_z)

    and then one of three operations (Chung et al. Eq. 2-3):

        FLUSH  (z^l_{t-1} = 1):                   c = i * g
        UPDATE (z^l_{t-1} = 0, z^{l-1}_t = 1):    c = f * c_{t-1} + i * g
        COPY   (z^l_{t-1} = 0, z^{l-1}_t = 0):    c, h unchanged (exactly)

    with `h = o * tanh(c)` after FLUSH and UPDATE.  The boundary
    `z^l_t = f_bound(z~)` (Eq. 8-9) is trained with the straight-through
    estimator.  The top layer has no boundary detector and no top-down
    input: it UPDATEs when `z^{L-1}_t = 1` and COPYs otherwise.

    Per-step output: `[h^1 | ... | h^L | z^1 ... z^{L-1}]`, of size
    `sum(units) + num_layers - 1`; `split_outputs` takes it apart.
    State: `[h^1, c^1, ..., h^L, c^L, z_{t-1}]` with `z_{t-1}` of shape
    `(batch, num_layers - 1)`, so a `stateful=True` RNN carries the
    boundaries across batches (truncated BPTT).

    Numbers may be given as Python or NumPy scalars (`np.int64(8)`,
    `np.float32(1.0)`; stored as Python `int` / `float`); booleans,
    strings, NaN and infinities are refused with a `ValueError` naming the
    argument. The arguments after `num_layers` are keyword-only.

    Args:
        units: Positive int, the size of every layer, or a list with one
            size per layer (bottom first).
        num_layers: Number of layers L >= 2. Defaults to 3, or to
            `len(units)` when `units` is a list.
        boundary_mode: `"step"` (Eq. 9, deterministic; default),
            `"sample"` (z ~ Bernoulli(z~) while training, step at
            inference) or `"soft"` (z = z~, no discretization).
        slope: Initial slope `a > 0` of `hard_sigm(x) = clip((a x + 1) / 2,
            0, 1)`, default 1. Kadar et al.'s alpha is `a / 2`. Stored as a
            non-trainable weight `slope`, changed by `SlopeAnnealing`.
        boundary_gradient: The straight-through estimator's backward pass
            (`hmkeras.cells.straight_through`): `"hard_sigmoid"` (Chung et
            al. Sec. 3.3; default), 0 where the detector is saturated
            (`|a x| >= 1`), or `"sigmoid"`, the logistic sigmoid's `a
            sigm(a x) (1 - sigm(a x))`, never 0 (an extension: a saturated,
            misplaced boundary can still move). `"step"` and `"sample"`
            modes only.
        boundary_input: What each boundary detector reads: `"previous"`
            (Chung et al. Eq. 5-7; default), a column of the layer's
            pre-activation `s`, from `h^l_{t-1}`, `h^{l+1}_{t-1}` and
            `h^{l-1}_t`; or `"updated"`, the layer's state after this
            step's update, `z~ = hard_sigm(h^l_t w_l + c_l)`, with weights
            `detector_kernel_l` and `detector_bias_l` of its own (an
            extension: `z^l_t` is first used at step `t + 1` and by the
            layer above after this layer's update, so it may read `h^l_t`;
            a detector that reads the word so far finds the words of
            unsegmented text better: `docs/guides/hm-lstm.md`, "Words that
            nothing marks: unsegmented text").
        layer_norm: Layer normalization (Ba et al. 2016, Eq. 20-22) of
            each of the bottom-up, recurrent and top-down products and of
            the cell state before the output tanh, on every layer. Default
            `True`: Chung et al. normalize all their models (Sec. 4.1);
            without it the boundaries tend to collapse
            (`docs/guides/hm-lstm.md`, "Boundaries that learn"). The
            statistics are computed in float32 under mixed precision.
        layer_norm_gain: Initial gain (> 0) of the products' normalizations
            (default 0.2; the cell state's starts at 1). A normalized
            product is scale-free, so its Jacobian grows as `1 / |h|`: with
            gains of 1 the backward pass grows ~1.5x per step at
            initialization and overflows float32 within a few hundred
            steps; 0.2 keeps it near 1x.
        top_down: Whether layers below the top get the gated top-down
            input `z^l_{t-1} V_l h^{l+1}_{t-1}` (Eq. 6). `False` is
            Kadar et al.'s NoTopDown ablation.
        copy_last: The variant of the authors' code base (Kadar et al.'s
            CopyLast): when the top layer COPYs it keeps `c` but recomputes
            `h = o * tanh(c_{t-1})`.  Default `False` (the paper: `h` is
            copied too).
        boundary_bias: Initial bias of every boundary detector, a finite
            number (default 0, as in the papers; an extension: negative values start the
            layers with fewer boundaries).
        nested_boundaries: Whether a layer above the bottom ends a segment
            only where the layer below ends one: `z^l_t` is its detector's
            decision times `z^{l-1}_t` (an extension; default `False`,
            Chung et al.'s detectors, which may fire at any step). A
            phrase ends where a word ends; on the main job's HM-LSTM,
            with no placement of its own, `z^2` then marks the phrases
            on most seeds (`docs/results/char-lm.md`, "Boundaries nested
            in the layer below's").
        forget_bias: Finite number added to the forget-gate bias at
            initialization. Default 1.
        kernel_initializer: For the bottom-up matrices `W` (gate columns).
        recurrent_initializer: For the recurrent `U` and top-down `V`
            matrices (gate columns). Default orthogonal.
        boundary_initializer: For the boundary column of every matrix.
            Default Glorot uniform (Kadar et al. Sec. 3.1).
        bias_initializer: For the biases.
        kernel_regularizer, recurrent_regularizer, bias_regularizer:
            Regularizers of `W`, of `U` and `V`, and of `b`.
        kernel_constraint, recurrent_constraint, bias_constraint:
            Constraints of `W`, of `U` and `V`, and of `b`.
        dropout: Variational dropout rate of the input `x_t` (one mask per
            sequence, Gal & Ghahramani 2016), in [0, 1).
        recurrent_dropout: Variational dropout rate of `h^l_{t-1}` where it
            enters the recurrent and top-down products, in [0, 1). The
            carried state is not dropped, so COPY stays exact.
        seed: Seed of the initial weights (every matrix and boundary column
            is a draw of its own), of the dropout masks and of the Bernoulli
            boundary samples (`"sample"` mode). Without it the initial
            weights follow `keras.utils.set_random_seed`.
        sparse_updates: Inference option (default `False`): a layer whose
            operation is COPY in every row of the batch (at batch 1: every
            COPY) skips its update, a `keras.ops.cond` around it, and computes
            only its boundary detector's column. The outputs equal the
            dense path's; `hmkeras.cells.sparse_update` counts the skipped
            updates. Ignored while training; refused with
            `boundary_mode="soft"`, whose COPY is not exact.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        inputs: A floating-point `(batch, features)` tensor, one step:
            `keras.layers.RNN` passes its `(batch, time, features)`
            sequence one step at a time. Integer or boolean inputs are
            refused with a `ValueError` (they are usually token ids that
            need a `keras.layers.Embedding` first; Keras' `LSTMCell` would
            silently read the ids as numbers); cast real integer features
            to a float dtype.
        states: The state list above.
        training: Whether boundaries are sampled (`"sample"` mode) and
            dropout is applied.

    Examples:

        >>> import keras, numpy as np, hmkeras
        >>> cell = hmkeras.HMLSTMCell(8, num_layers=3)
        >>> rnn = keras.layers.RNN(cell, return_sequences=True)
        >>> y = rnn(np.zeros((2, 5, 4), "float32"))
        >>> tuple(y.shape)
        (2, 5, 26)
        >>> hiddens, boundaries = cell.split_outputs(y)
        >>> [tuple(h.shape) for h in hiddens], tuple(boundaries.shape)
        ([(2, 5, 8), (2, 5, 8), (2, 5, 8)], (2, 5, 2))
    """

    _extra_states_per_layer = 1  # the cell state c^l
    # COPY (z^{l-1}_t = 0, z^l_{t-1} = 0): only U h^l_{t-1} remains (Eq. 5).
    _copy_products = ("recurrent",)
    _columns_per_unit = 4  # f, i, o, g

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
        copy_last=False,
        boundary_bias=0.0,
        nested_boundaries=False,
        forget_bias=1.0,
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
        self.copy_last = argument_checks.check_bool("copy_last", copy_last)
        self.forget_bias = argument_checks.check_float("forget_bias", forget_bias)

    def _build_layer(self, index, input_size, units, above_units):
        params = layer_weights.add_products(self, index, input_size, units, above_units)

        def forget_shift(shape, dtype):
            # Gate order f, i, o, g: the forget gate is the first block.
            return keras.ops.concatenate([
                keras.ops.full((units,), self.forget_bias, dtype=dtype),
                keras.ops.zeros((shape[0] - units,), dtype=dtype),
            ])

        params["bias"] = layer_weights.add_bias(
            self, index, units, above_units is not None, gate_shift=forget_shift
        )
        if self.layer_norm:  # Ba et al. Eq. (22): LN(c) before the output tanh
            params["norm_cell"] = layer_weights.add_layer_norm(
                self, f"norm_cell_{index + 1}", units
            )
        self._layer_params.append(params)

    def _product_gates(self, step):
        # Chung Eq. (4)-(7): z^{l-1}_t gates the bottom-up product, z^l_{t-1}
        # the top-down one.
        return ProductGates(bottom_up=step.z_below, top_down=step.z_previous)

    def _layer_step(self, step):
        params = self._layer_params[step.index]
        units = self.units[step.index]
        h_previous, c_previous = step.state
        s = step.products.mixture(step.inputs, self._product_gates(step)) + params["bias"]
        # Eq. (4): f, i, o = sigm; g = tanh; the z column is returned raw.
        # One split (not three slices) keeps the backward pass to one concat.
        boundary = None
        if step.is_top or not self.has_detector_columns:
            sfio, sg = ops.split(s, [3 * units], axis=-1)
        else:
            sfio, sg, boundary = ops.split(s, [3 * units, 4 * units], axis=-1)
        # Eq. (2)-(3) in the masked form of Kadar et al. Eq. (10)-(12):
        # FLUSH keeps only i * g; COPY keeps c_{t-1} (and h_{t-1}) bit for bit.
        cell_output = None
        if self.layer_norm:  # Ba et al. Eq. (22): LN(c) before the output tanh
            options = step.products.options
            cell_output = lambda c: layer_normalize(c, params["norm_cell"], options)
        h, c = masked_lstm_update(
            sfio, sg, c_previous, h_previous, step.ops.update, step.ops.copy,
            copy_hidden=not (step.is_top and self.copy_last),
            cell_output=cell_output,
        )
        return [h, c], boundary

    def get_config(self):
        config = super().get_config()
        config.update({"copy_last": self.copy_last, "forget_bias": self.forget_bias})
        return config
