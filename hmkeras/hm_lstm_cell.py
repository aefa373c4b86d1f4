"""The hierarchical multiscale LSTM cell (Chung, Ahn & Bengio, ICLR 2017)."""

import keras
import tensorflow as tf

from hmkeras.hierarchical_cell import HierarchicalCell
from hmkeras.masked_lstm_update import masked_lstm_update


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

    Args:
        units: Positive int, the size of every layer, or a list with one
            size per layer (bottom first).
        num_layers: Number of layers L >= 2. Defaults to 3, or to
            `len(units)` when `units` is a list.
        boundary_mode: `"step"` (Eq. 9, deterministic; default),
            `"sample"` (z ~ Bernoulli(z~) while training, step at
            inference) or `"soft"` (z = z~, no discretization).
        slope: Initial slope `a` of `hard_sigm(x) = clip((a x + 1) / 2, 0,
            1)`. Kadar et al.'s alpha is `a / 2`. Stored as a
            non-trainable weight `slope`, changed by `SlopeAnnealing`.
        layer_norm: Layer normalization (Ba et al. 2016, Eq. 20-22) of
            each of the bottom-up, recurrent and top-down products and of
            the cell state before the output tanh, on every layer.
        top_down: Whether layers below the top get the gated top-down
            input `z^l_{t-1} V_l h^{l+1}_{t-1}` (Eq. 6). `False` is
            Kadar et al.'s NoTopDown ablation.
        copy_last: The variant of the authors' code base (Kadar et al.'s
            CopyLast): when the top layer COPYs it keeps `c` but recomputes
            `h = o * tanh(c_{t-1})`.  Default `False` (the paper: `h` is
            copied too).
        forget_bias: Added to the forget-gate bias at initialization.
        kernel_initializer: For the bottom-up matrices `W` (gate columns).
        recurrent_initializer: For the recurrent `U` and top-down `V`
            matrices (gate columns). Default orthogonal.
        boundary_initializer: For the boundary column of every matrix.
            Default Glorot uniform (Kadar et al. Sec. 3.1).
        bias_initializer: For the biases.
        kernel_regularizer, recurrent_regularizer, bias_regularizer:
            Regularizers of `W`, of `U` and `V`, and of `b`.
        dropout: Variational dropout rate of the input `x_t` (one mask per
            sequence, Gal & Ghahramani 2016), in [0, 1).
        recurrent_dropout: Variational dropout rate of `h^l_{t-1}` where it
            enters the recurrent and top-down products, in [0, 1). The
            carried state is not dropped, so COPY stays exact.
        seed: Seed of the dropout masks and of the Bernoulli boundary
            samples (`"sample"` mode).

    Call arguments:
        inputs: A `(batch, features)` tensor, one step.
        states: The state list above.
        training: Whether boundaries are sampled (`"sample"` mode) and
            dropout is applied.

    Example:

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
    _columns_per_unit = 4  # f, i, o, g

    def __init__(self, units, num_layers=None, copy_last=False, forget_bias=1.0, **kwargs):
        super().__init__(units, num_layers=num_layers, **kwargs)
        if not isinstance(copy_last, bool):
            raise ValueError(
                f"`copy_last` must be True or False. Received: copy_last={copy_last!r}"
            )
        if isinstance(forget_bias, bool) or not isinstance(forget_bias, (int, float)):
            raise ValueError(
                f"`forget_bias` must be a number. Received: forget_bias={forget_bias!r}"
            )
        self.copy_last = copy_last
        self.forget_bias = float(forget_bias)

    def _build_layer(self, index, input_size, units, above_units):
        n = index + 1  # paper numbering of weights
        columns = 4 * units + int(above_units is not None)
        params = self._add_products(index, input_size, units, above_units)

        def bias_initializer(shape, dtype=None):
            bias = self.bias_initializer(shape, dtype=dtype)
            if not self.forget_bias:
                return bias
            # Gate order f, i, o, g, z: the forget gate is the first block.
            shift = keras.ops.concatenate(
                [
                    keras.ops.full((units,), self.forget_bias, dtype=dtype),
                    keras.ops.zeros((shape[0] - units,), dtype=dtype),
                ]
            )
            return bias + shift

        params["bias"] = self.add_weight(
            name=f"bias_{n}",
            shape=(columns,),
            initializer=bias_initializer,
            regularizer=self.bias_regularizer,
        )
        if self.layer_norm:  # Ba et al. Eq. (22): LN(c) before the output tanh
            params["norm_cell"] = self._add_layer_norm(f"norm_cell_{n}", units)
        self._layer_params.append(params)

    def build_sequence_constants(self, step_input):
        """Stacked kernels `[U_l; V_l]`, built once per sequence.

        The recurrent and top-down products only read the previous step, so
        as one matmul of `[h^l_{t-1}, z^l_{t-1} h^{l+1}_{t-1}]` against the
        stacked kernel they can start when the step starts, independently
        of the bottom-up chain through the layers.  `keras.layers.RNN` builds the stacked
        kernels before its time loop (see `variational_dropout`).  With
        layer normalization each product is normalized on its own and
        nothing is stacked.
        """
        del step_input
        if self.layer_norm:
            return {}
        stacked = []
        for params in self._layer_params:
            blocks = [params["recurrent_kernel"]]
            if "top_down_kernel" in params:
                blocks.append(params["top_down_kernel"])
            blocks = [tf.cast(tf.convert_to_tensor(b), self.compute_dtype) for b in blocks]
            stacked.append(tf.concat(blocks, axis=0) if len(blocks) > 1 else blocks[0])
        return {"recurrent_top_down_kernels": stacked}

    def _preactivation(self, index, below, z_below, recurrent, above, z_previous, constants):
        """`s` of Chung et al. Eq. (4)-(7)."""
        params = self._layer_params[index]
        has_top_down = "top_down_kernel" in params
        if "recurrent_top_down_kernels" in constants:
            # z is one scalar per row: it can gate a product's input
            # instead of its output.
            if z_below is not None:
                below = z_below * below  # Eq. (7): gated by z^{l-1}_t
            s = tf.matmul(below, params["kernel"]) + params["bias"]
            past = recurrent  # Eq. (5)
            if has_top_down:  # Eq. (6): gated by z^l_{t-1}
                past = tf.concat([recurrent, z_previous * above], axis=-1)
            return s + tf.matmul(past, constants["recurrent_top_down_kernels"][index])
        bottom_up, recurrent, top_down = self._products(params, below, recurrent, above)
        if z_below is not None:
            bottom_up = z_below * bottom_up  # Eq. (7): gated by z^{l-1}_t
        s = bottom_up + recurrent + params["bias"]
        if top_down is not None:
            s = s + z_previous * top_down  # Eq. (6): gated by z^l_{t-1}
        return s

    def _layer_step(self, index, below, z_below, state, recurrent, above, z_previous, ops, constants):
        params = self._layer_params[index]
        units = self.units[index]
        h_previous, c_previous = state
        s = self._preactivation(index, below, z_below, recurrent, above, z_previous, constants)
        # Eq. (4): f, i, o = sigm; g = tanh; the z column is returned raw.
        # One split (not three slices) keeps the backward pass to one concat.
        boundary = None
        if z_previous is None:
            sfio, sg = tf.split(s, [3 * units, units], axis=-1)
        else:
            sfio, sg, boundary = tf.split(s, [3 * units, units, 1], axis=-1)
        # Eq. (2)-(3) in the masked form of Kadar et al. Eq. (10)-(12):
        # FLUSH keeps only i * g; COPY keeps c_{t-1} (and h_{t-1}) bit for bit.
        cell_output = None
        if self.layer_norm:  # Ba et al. Eq. (22): LN(c) before the output tanh
            cell_output = lambda c: self._normalize(c, params["norm_cell"])
        h, c = masked_lstm_update(
            sfio, sg, c_previous, h_previous, ops.update, ops.copy,
            copy_hidden=not (z_previous is None and self.copy_last),
            cell_output=cell_output,
        )
        return [h, c], boundary

    def get_config(self):
        config = super().get_config()
        config.update({"copy_last": self.copy_last, "forget_bias": self.forget_bias})
        return config
