"""Hierarchy machinery shared by the hierarchical multiscale cells.

`HierarchicalCell` is the base of `HMLSTMCell` and `HMRNNCell`.  It owns
everything the two cells have in common (Chung et al. 2017, Sec. 3.2;
Kadar et al. 2018, Appendix A and B):

* the argument checks and the per-layer sizes,
* the non-trainable `slope` weight of the hard sigmoid,
* the boundary detectors (`"step"`, `"sample"`, `"soft"`),
* the UPDATE / COPY / FLUSH masks of every layer,
* the unroll over layers inside one time step (bottom first),
* the state layout, the output layout and `split_outputs`,
* layer normalization (Ba et al. 2016) and the configuration.

A subclass only says what one layer computes at one step: which weights a
layer has (`_build_layer`), what state it carries besides `h`
(`_extra_state_size`), and its update (`_layer_step`).

State layout (a flat list, as `keras.layers.RNN` wants it):
`[h^1, (extra^1...), h^2, (extra^2...), ..., h^L, (extra^L...), z]` where
`z` has shape `(batch, L - 1)` and holds the boundaries of the previous step
(`z_{t-1}^1 ... z_{t-1}^{L-1}`).  For the HM-LSTM the extra state of a layer
is its cell state `c^l`.

Output layout (one tensor per step):
`[h^1 | h^2 | ... | h^L | z^1 ... z^{L-1}]`.

Masks (Kadar et al. Appendix A, Eq. 10-12; Chung et al. Eq. 2-3), with
`z_t^0 = 1` (the input is never skipped) and no boundary on the top layer:

    flush  = z_{t-1}^l
    update = (1 - z_{t-1}^l) * z_t^{l-1}
    copy   = (1 - z_{t-1}^l) * (1 - z_t^{l-1})

The masks are arithmetic, so in the discrete modes COPY keeps the state
bit for bit (`1 * prev + 0 * new`) and gradients reach `z` through the
masks as well as through the gated inputs.

Example (rows: FLUSH, UPDATE, COPY):

>>> import tensorflow as tf
>>> ops = layer_operations(z_previous=tf.constant([[1.0], [0.0], [0.0]]),
...                        z_below=tf.constant([[0.0], [1.0], [0.0]]))
>>> [m.numpy().ravel().tolist() for m in (ops.flush, ops.update, ops.copy)]
[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
"""

import collections

import keras
import numpy as np
import tensorflow as tf

from hmkeras import argument_checks
from hmkeras.cells import sparse_update
from hmkeras.cells import straight_through
from hmkeras.cells.independent_initializers import independent_draw
from hmkeras.cells.layer_search import find_layers
from hmkeras.cells.sequence_kernel import product as kernel_product
from hmkeras.cells.sequence_kernel import sequence_kernel
from hmkeras.cells.sequence_layer import apply_to_steps
from hmkeras.cells.variational_dropout import VariationalDropoutMixin

BOUNDARY_MODES = ("step", "sample", "soft")

LayerOperations = collections.namedtuple(
    "LayerOperations", ["flush", "update", "copy"]
)
LayerOperations.__doc__ = """Masks of shape `(batch, 1)` choosing the operation of one layer.

`None` stands for a mask that is identically zero: the bottom layer never
COPYs (`copy is None`) and the top layer never FLUSHes (`flush is None`).
`update` is never `None`.
"""


def blend_copy(copy, previous, candidate):
    """`copy * previous + (1 - copy) * candidate` (Kadar Eq. 11-12).

    Exact in the discrete modes: with `copy == 1` it returns `previous` bit
    for bit, with `copy == 0` it returns `candidate`.  `copy=None` means no
    COPY is possible and returns `candidate` unchanged.
    """
    if copy is None:
        return candidate
    return copy * previous + (1.0 - copy) * candidate


def layer_operations(z_previous, z_below):
    """UPDATE / COPY / FLUSH masks of one layer (Chung et al. Eq. 2).

    Args:
        z_previous: `z_{t-1}^l`, shape `(batch, 1)`, or `None` for the top
            layer, which has no boundary detector.
        z_below: `z_t^{l-1}`, shape `(batch, 1)`, or `None` for the bottom
            layer (`z_t^0 = 1`).

    Returns:
        A `LayerOperations`.
    """
    if z_previous is None and z_below is None:
        raise ValueError("A layer needs a boundary below or above it.")
    if z_previous is None:  # top layer: UPDATE when the layer below ends
        return LayerOperations(flush=None, update=z_below, copy=1.0 - z_below)
    if z_below is None:  # bottom layer: FLUSH or UPDATE, never COPY
        return LayerOperations(flush=z_previous, update=1.0 - z_previous, copy=None)
    not_flush = 1.0 - z_previous
    return LayerOperations(
        flush=z_previous,
        update=not_flush * z_below,
        copy=not_flush * (1.0 - z_below),
    )


def resolve_layer_sizes(units, num_layers):
    """Per-layer sizes from `units` (int or list) and `num_layers`.

    NumPy integers are accepted and returned as Python ints.
    """
    num_layers = argument_checks.check_int(
        "num_layers", num_layers, minimum=2, allow_none=True
    )
    if isinstance(units, (list, tuple, np.ndarray)):
        sizes = argument_checks.check_int_list("units", units)
        if num_layers is not None and num_layers != len(sizes):
            raise ValueError(
                "`units` given as a list must have one size per layer: "
                f"len(units)={len(sizes)} but num_layers={num_layers!r}."
            )
    else:
        try:
            size = argument_checks.check_positive_int("units", units)
        except ValueError:
            raise ValueError(
                "`units` must be a positive integer or a non-empty list of "
                f"positive integers (one per layer). Received: units={units!r}"
            ) from None
        sizes = [size] * (3 if num_layers is None else num_layers)
    if len(sizes) < 2:  # only a one-size list gets here
        raise ValueError(
            "`units` given as a list needs one size per layer, and a "
            "hierarchy at least two layers (`num_layers` >= 2: a boundary "
            f"between two layers). Received: units={units!r}"
        )
    return sizes


class HierarchicalCell(VariationalDropoutMixin, keras.layers.Layer):
    """Base class of the hierarchical multiscale RNN cells.

    Not used directly: see `HMLSTMCell` and `HMRNNCell`, whose docstrings
    list the arguments (those of `HMRNNCell` are this class's; `HMLSTMCell`
    adds `copy_last` and `forget_bias`).  Arguments after `num_layers` are
    keyword-only.  Subclasses implement `_build_layer`,
    `_layer_step`, and set `_extra_states_per_layer` (the number of state
    tensors of size `units_l` a layer keeps besides `h^l`).
    """

    _extra_states_per_layer = 0
    # Without layer normalization: whether the recurrent and top-down
    # products are one matmul of the gated inputs against `[U; V]` (pays
    # when a product is much wider than its input: the LSTM's 4 gates) or
    # separate matmuls whose outputs are gated (measured faster for the
    # Elman cell, whose products are as wide as their inputs).
    _stack_recurrent_products = True
    # Number of pre-activation columns per unit of a layer (4 for the LSTM
    # gates f, i, o, g; 1 for the Elman candidate).
    _columns_per_unit = 1

    def __init__(
        self,
        units,
        num_layers=None,
        *,
        boundary_mode="step",
        slope=1.0,
        layer_norm=True,
        layer_norm_gain=0.2,
        top_down=True,
        boundary_bias=0.0,
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
        super().__init__(**kwargs)
        self.units = resolve_layer_sizes(units, num_layers)
        # Variational dropout (one mask per sequence), shared machinery: the
        # input mask drops x_t, the recurrent masks drop h^l_{t-1} where it
        # enters a product (recurrent and top-down), as in Keras' LSTMCell;
        # the carried state itself is not dropped, so COPY stays exact.
        self.init_variational_dropout(dropout, recurrent_dropout, seed)
        self.num_layers = len(self.units)
        self.boundary_mode = argument_checks.check_choice(
            "boundary_mode", boundary_mode, BOUNDARY_MODES
        )
        self.initial_slope = argument_checks.check_float(
            "slope", slope, minimum=0, exclusive_minimum=True
        )
        self.layer_norm = argument_checks.check_bool("layer_norm", layer_norm)
        self.layer_norm_gain = argument_checks.check_float(
            "layer_norm_gain", layer_norm_gain, minimum=0, exclusive_minimum=True
        )
        self.top_down = argument_checks.check_bool("top_down", top_down)
        self.boundary_bias = argument_checks.check_float("boundary_bias", boundary_bias)
        self.sparse_updates = sparse_update.check_sparse_updates(
            sparse_updates, self.boundary_mode
        )
        self._sparse_counter = sparse_update.UpdateCounter(self.num_layers)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.recurrent_initializer = keras.initializers.get(recurrent_initializer)
        self.boundary_initializer = keras.initializers.get(boundary_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.recurrent_regularizer = keras.regularizers.get(recurrent_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)
        self.recurrent_constraint = keras.constraints.get(recurrent_constraint)
        self.bias_constraint = keras.constraints.get(bias_constraint)
        self.state_size = []
        for size in self.units:
            self.state_size.extend([size] * (1 + self._extra_states_per_layer))
        self.state_size.append(self.num_layers - 1)
        self.output_size = sum(self.units) + self.num_layers - 1

    # ------------------------------------------------------------------
    # Building
    # ------------------------------------------------------------------
    def build(self, input_shape):
        input_size = argument_checks.check_step_input_shape(
            type(self).__name__, input_shape
        )
        # Chung et al.: the slope `a` of the hard sigmoid; a non-trainable
        # weight so that it is saved with the model and read afresh by
        # compiled functions.
        self.slope = self.add_weight(
            name="slope",
            shape=(),
            initializer=keras.initializers.Constant(self.initial_slope),
            trainable=False,
        )
        # One dict of weights per layer, filled by `_build_layer`; every
        # random matrix gets its own draw number.
        self._layer_params = []
        self._draws = 0
        below = input_size
        for index, size in enumerate(self.units):
            above = self.units[index + 1] if index + 1 < self.num_layers else None
            self._build_layer(index, below, size, above)
            below = size

    def _gate_initializer(self, gates_initializer, units, has_boundary):
        """Initializer of a `(rows, C * units [+ 1])` matrix.

        The gate columns come from `gates_initializer`, the boundary column
        (the last one, when the layer has a detector) from
        `boundary_initializer` (Kadar et al. Sec. 3.1: orthogonal gates,
        Glorot uniform for the z column).  Every matrix and every boundary
        column is a draw of its own (`independent_draw`), reproducible from
        `seed` when it is given: Keras initializer objects return the same
        values at every call, which would start equal-sized layers equal.
        """
        gate_columns = self._columns_per_unit * units
        gates_draw = independent_draw(gates_initializer, self._draws, self.seed)
        column_draw = independent_draw(
            self.boundary_initializer, self._draws + 1, self.seed
        )
        self._draws += 2

        def initializer(shape, dtype=None):
            rows = shape[0]
            gates = gates_draw((rows, gate_columns), dtype=dtype)
            if not has_boundary:
                return gates
            column = column_draw((rows, 1), dtype=dtype)
            return keras.ops.concatenate([gates, column], axis=1)

        return initializer

    def _add_matrix(self, name, rows, units, has_boundary, initializer, regularizer,
                    constraint):
        columns = self._columns_per_unit * units + int(has_boundary)
        return self.add_weight(
            name=name,
            shape=(rows, columns),
            initializer=self._gate_initializer(initializer, units, has_boundary),
            regularizer=regularizer,
            constraint=constraint,
        )

    def _add_layer_norm(self, name, size, gain=1.0):
        """Gain and bias of one layer normalization (Ba et al. 2016)."""
        gain = self.add_weight(
            name=f"{name}_gain", shape=(size,),
            initializer=keras.initializers.Constant(gain),
        )
        bias = self.add_weight(name=f"{name}_beta", shape=(size,), initializer="zeros")
        return gain, bias

    def _add_products(self, index, input_size, units, above_units):
        """The weights of a layer's three products (Chung Eq. 5-7).

        `kernel_{n}` (W, bottom-up), `recurrent_kernel_{n}` (U) and, below
        the top when `top_down`, `top_down_kernel_{n}` (V); with
        `layer_norm`, one normalization per product (Ba et al. Eq. 20).

        Returns:
            The layer's parameter dict, for the subclass to complete.
        """
        n = index + 1  # paper numbering of the layers
        has_boundary = above_units is not None
        params = {
            "kernel": self._add_matrix(
                f"kernel_{n}", input_size, units, has_boundary,
                self.kernel_initializer, self.kernel_regularizer,
                self.kernel_constraint,
            ),
            "recurrent_kernel": self._add_matrix(
                f"recurrent_kernel_{n}", units, units, has_boundary,
                self.recurrent_initializer, self.recurrent_regularizer,
                self.recurrent_constraint,
            ),
        }
        if has_boundary and self.top_down:
            params["top_down_kernel"] = self._add_matrix(
                f"top_down_kernel_{n}", above_units, units, has_boundary,
                self.recurrent_initializer, self.recurrent_regularizer,
                self.recurrent_constraint,
            )
        if self.layer_norm:
            columns = self._columns_per_unit * units + int(has_boundary)
            for name in ("bottom_up", "recurrent", "top_down"):
                if name != "top_down" or "top_down_kernel" in params:
                    params[f"norm_{name}"] = self._add_layer_norm(
                        f"norm_{name}_{n}", columns, gain=self.layer_norm_gain
                    )
        return params

    def _add_bias(self, index, units, has_boundary, gate_shift=None):
        """`b_l`, with the boundary column's entry set to `boundary_bias`.

        `gate_shift(shape, dtype)`, when given, is added to the gate part
        (the HM-LSTM's forget bias).
        """
        gate_columns = self._columns_per_unit * units

        def initializer(shape, dtype=None):
            bias = self.bias_initializer(shape, dtype=dtype)
            shift = keras.ops.zeros((gate_columns,), dtype=dtype)
            if gate_shift is not None:
                shift = gate_shift((gate_columns,), dtype)
            if has_boundary:
                column = keras.ops.full((1,), self.boundary_bias, dtype=dtype)
                shift = keras.ops.concatenate([shift, column])
            return bias + shift

        return self.add_weight(
            name=f"bias_{index + 1}",
            shape=(gate_columns + int(has_boundary),),
            initializer=initializer,
            regularizer=self.bias_regularizer,
            constraint=self.bias_constraint,
        )

    # ------------------------------------------------------------------
    # Per-sequence constants and the three products
    # ------------------------------------------------------------------
    def build_sequence_constants(self, step_input):
        """Tensors prepared once per sequence (see `variational_dropout`).

        Every kernel a step multiplies is a `SequenceKernel` (the kernel
        and its transpose, made once here, which the backward pass's input
        gradients read: `sequence_kernel`).

        Without layer normalization: each layer's kernels
        (`_plain_kernels`), with the stacked `[U_l; V_l]`.  The
        recurrent and top-down products only read the previous step, so as
        one matmul of `[a h^l_{t-1}, b h^{l+1}_{t-1}]` against the stacked
        kernel they start when the step starts, independently of the
        bottom-up chain through the layers.

        With layer normalization (Ba et al. Eq. 20-21), per product `M h`
        of a layer (`M` = W, U or V, `C` columns), the kernel is centred
        once per sequence, so that its product needs no centring:

            M_c = M - mean over columns of M      (so h M_c = h M - mean(h M))
            LN(h M) = y * gain / sqrt(mean(y ** 2) + eps) + beta,  y = h M_c

        A step then does one matmul per product (as without
        normalization), one sum of squares for its variance and the
        per-row and per-column scalings, instead of taking the mean and
        subtracting it from every `(batch, C)` product.  (Taking the
        variance from the weights instead, `h G h^T` with the Gram matrix
        `G = M_c M_c^T / C`, costs a `(batch, rows) x (rows, rows)` matmul
        forward and two backward per product: `bench/bench_cells.py
        --cell=hmlstm` measured 2.16 times the stacked LSTM's training
        step with it and 1.79 with this (both before the transposed kernels
        of `sequence_kernel`), on CPU at 3 x 256, batch 64; the
        HMRNN 3.32 and 2.08.)  (Moving the scales onto the inputs and
        doing a layer's products as one matmul against the stacked kernels
        measured 3% slower.)  The statistics (the variance) are in float32
        under mixed precision.  The biases `beta` of a layer's products are
        stacked, so that their gated sum is one small matmul.

        With `sparse_updates`, `"copy_boundaries"` holds, per layer, what
        its boundary column needs when the layer COPYs and skips its
        products (`_copy_boundary`; `None` for the bottom and top layers).
        """
        del step_input
        if not self.layer_norm:
            constants = {
                "kernels": [self._plain_kernels(params) for params in self._layer_params]
            }
            if self.sparse_updates:
                constants["copy_boundaries"] = [
                    self._copy_boundary(index, None) for index in range(self.num_layers)
                ]
            return constants
        statistics = self._statistics_dtype
        kernels, gains, betas, centred_kernels = [], [], [], []
        for params in self._layer_params:
            layer_kernels, layer_gains, layer_betas, layer_centred = [], [], [], []
            for kernel_name, norm_name in _NORMALIZED_PRODUCTS:
                if kernel_name not in params:
                    continue
                gain, beta = (tf.convert_to_tensor(v) for v in params[norm_name])
                kernel = tf.cast(tf.convert_to_tensor(params[kernel_name]), statistics)
                centred = kernel - tf.reduce_mean(kernel, axis=1, keepdims=True)
                layer_centred.append(centred)
                layer_kernels.append(sequence_kernel(tf.cast(centred, self.compute_dtype)))
                layer_gains.append(tf.cast(gain, self.compute_dtype))
                layer_betas.append(tf.cast(beta, self.compute_dtype))
            kernels.append(layer_kernels)
            gains.append(layer_gains)
            betas.append(tf.stack(layer_betas))
            centred_kernels.append(layer_centred)
        constants = {
            "normalized_kernels": kernels,
            "normalized_gains": gains,
            "normalized_betas": betas,
        }
        if self.sparse_updates:
            constants["copy_boundaries"] = [
                self._copy_boundary(index, centred_kernels[index])
                for index in range(self.num_layers)
            ]
        return constants

    def _copy_boundary(self, index, centred_kernels):
        """A `sparse_update.CopyBoundary` of layer `index`, or `None`.

        For the layers that can COPY and have a boundary detector (neither
        the bottom nor the top one): one `BoundaryTerm` per product that a
        COPY keeps (`_copy_coefficients`), and the offset, the detector's
        bias plus, with layer normalization, the kept products' `beta`.

        Args:
            index: 0-based layer index.
            centred_kernels: With layer normalization, the layer's kernels
                centred over their columns (the order of
                `_NORMALIZED_PRODUCTS`, in the statistics dtype); else
                `None` (the plain kernels are read).
        """
        if index in (0, self.num_layers - 1):
            return None
        params = self._layer_params[index]
        terms, offset = [], tf.convert_to_tensor(params["bias"])[-1:]
        for product, factor in enumerate(self._copy_coefficients):
            kernel_name, norm_name = _NORMALIZED_PRODUCTS[product]
            if _is_zero(factor) or kernel_name not in params:
                continue
            if centred_kernels is None:
                kernel = tf.cast(tf.convert_to_tensor(params[kernel_name]), self.compute_dtype)
                terms.append(sparse_update.boundary_term(product, kernel))
                continue
            gain, beta = (tf.convert_to_tensor(v)[-1] for v in params[norm_name])
            kernel = centred_kernels[product]
            terms.append(sparse_update.boundary_term(
                product, kernel, tf.cast(gain, kernel.dtype)
            ))
            offset = offset + beta
        return sparse_update.CopyBoundary(
            tuple(terms), tf.cast(offset, self.compute_dtype), _LAYER_NORM_EPSILON
        )

    def _plain_kernels(self, params):
        """A layer's kernels without layer normalization, as `SequenceKernel`s.

        `"kernel"`, and `"recurrent_kernel"` and `"top_down_kernel"` (when
        the layer has one); in cells that stack the recurrent and top-down
        products (`_stack_recurrent_products`), the two are replaced by
        `"recurrent_top_down_kernel"`, the stacked `[U_l; V_l]`, the only
        one of them a step multiplies.
        """
        matrices = {
            name: tf.cast(tf.convert_to_tensor(params[name]), self.compute_dtype)
            for name in ("kernel", "recurrent_kernel", "top_down_kernel")
            if name in params
        }
        if self._stack_recurrent_products:
            blocks = [matrices.pop("recurrent_kernel")]
            if "top_down_kernel" in matrices:
                blocks.append(matrices.pop("top_down_kernel"))
            matrices["recurrent_top_down_kernel"] = (
                tf.concat(blocks, axis=0) if len(blocks) > 1 else blocks[0]
            )
        return {name: sequence_kernel(m) for name, m in matrices.items()}

    @property
    def _statistics_dtype(self):
        """float32 under float16 / bfloat16 compute, as Keras' LayerNormalization."""
        if self.compute_dtype in ("float16", "bfloat16"):
            return "float32"
        return self.compute_dtype

    def bottom_up_product(self, inputs, constants):
        """The bottom layer's bottom-up term `W_1 x` (Chung Eq. 7).

        With layer normalization it is the normalized product
        `LN(W_1 x)` without its bias `beta` (Ba et al. Eq. 20-21; the
        biases are added in `_mixed_products`).  The bottom layer's
        bottom-up product is never gated (`z^0_t = 1`), so it only depends
        on the input: a sequence layer computes it for all steps at once
        (`project_sequence`) and hands it to the step as
        `constants[PROJECTED_INPUT]`.

        Args:
            inputs: `(rows, input_size)`, the (dropped-out) inputs.
            constants: the cell's per-sequence constants.
        """
        if not self.layer_norm:  # Chung Eq. (7)
            return kernel_product(inputs, constants["kernels"][0]["kernel"])
        return self._normalized_product(
            inputs, None, constants["normalized_kernels"][0][0],
            constants["normalized_gains"][0][0],
        )

    def _normalized_product(self, x, factor, kernel, gain):
        """`factor * (LN(x M) - beta)` from `M_c` and `gain` (Ba Eq. 20-21).

        See `build_sequence_constants`; `factor` is `(batch, 1)` or `None`.
        """
        y = kernel_product(x, kernel)  # centred: its mean over the columns is 0
        variance = tf.reduce_mean(
            tf.square(tf.cast(y, self._statistics_dtype)), axis=-1, keepdims=True
        )
        return y * self._normalizing_scale(variance, factor) * gain

    def _normalizing_scale(self, variance, factor):
        """`factor / sqrt(variance + eps)` per row, in the compute dtype.

        `variance` is `(batch, 1)` in the statistics dtype; `factor` is
        `(batch, 1)` or `None`.
        """
        statistics = self._statistics_dtype
        scale = _inverse_deviation(variance)
        if factor is not None:
            scale = scale * tf.cast(factor, statistics)
        return tf.cast(scale, self.compute_dtype)

    def _mixed_products(self, index, below, recurrent, above, coefficients, constants):
        """`a W h^{l-1}_t + b U h^l_{t-1} + c V h^{l+1}_{t-1}` (Chung Eq. 5-7).

        Args:
            index: 0-based layer index.
            below, recurrent, above: `h^{l-1}_t`, `h^l_{t-1}` and
                `h^{l+1}_{t-1}` (`above` is `None` for a layer without a
                top-down kernel).
            coefficients: `(a, b, c)`, per-row factors of shape `(batch, 1)`
                of the three products, `None` standing for 1.
            constants: the cell's per-sequence constants; for the bottom
                layer, `constants[PROJECTED_INPUT]`, when present, is its
                precomputed bottom-up term (`bottom_up_product`).

        Without layer normalization, in cells that stack `[U; V]`
        (`_stack_recurrent_products`), the factors scale the inputs (each is
        one scalar per row) and the recurrent and top-down products are one
        matmul against `[U; V]`; otherwise the three products are separate
        and the factors scale their outputs.  With it (Ba et al. Eq. 20), each product
        is normalized on its own (its mean removed by centring the kernel,
        see `build_sequence_constants`), and the factors scale the
        normalized products; statistics in float32 under mixed precision.

        Returns:
            The sum, `(batch, columns)`, without the bias.
        """
        params = self._layer_params[index]
        has_top_down = "top_down_kernel" in params
        a, b, c = coefficients
        projected = constants.get(PROJECTED_INPUT) if index == 0 else None
        kernels = None if self.layer_norm else constants["kernels"][index]

        def multiply(x, name):  # without layer normalization
            return kernel_product(x, kernels[name])

        if not self.layer_norm and self._stack_recurrent_products:
            if b is not None:
                recurrent = b * recurrent
            past = recurrent
            if has_top_down:
                past = tf.concat([recurrent, above if c is None else c * above], axis=-1)
            if projected is None and _is_zero(a):
                projected = 0.0
            elif projected is None:
                if a is not None:
                    below = a * below
                projected = multiply(below, "kernel")  # Chung Eq. (7)
            return projected + multiply(past, "recurrent_top_down_kernel")  # Eq. (5)-(6)
        if not self.layer_norm:  # three products, the factors scale their outputs
            total = projected
            products = [(recurrent, "recurrent_kernel", b)]
            if projected is None:
                products.insert(0, (below, "kernel", a))
            if has_top_down:
                products.append((above, "top_down_kernel", c))
            for x, name, factor in products:
                if _is_zero(factor):
                    continue
                term = multiply(x, name)  # Chung Eq. (7), (5), (6)
                if factor is not None:
                    term = factor * term
                total = term if total is None else total + term
            return total
        # Ba et al. Eq. (20)-(21) for each product, from the per-sequence
        # centred kernels (see `build_sequence_constants`).
        inputs, factors = [below, recurrent], [a, b]  # Chung Eq. (7), (5)
        if has_top_down:
            inputs.append(above)  # Chung Eq. (6)
            factors.append(c)
        total = None
        for k, (x, factor) in enumerate(zip(inputs, factors)):
            if k == 0 and projected is not None:  # the bottom layer's W x, precomputed
                total = projected
                continue
            if _is_zero(factor):
                continue
            kernel = constants["normalized_kernels"][index][k]
            gain = constants["normalized_gains"][index][k]
            term = self._normalized_product(x, factor, kernel, gain)
            total = term if total is None else total + term
        # The gated sum of the products' biases: one (batch, P) x (P, C) matmul.
        betas = constants["normalized_betas"][index]
        if all(f is None for f in factors):
            return total + tf.reduce_sum(betas, axis=0)
        if any(_is_zero(f) for f in factors):  # COPY: Python factors
            return total + sum(
                betas[k] for k, f in enumerate(factors) if not _is_zero(f)
            )
        ones = tf.ones_like(next(f for f in factors if f is not None))
        weights = tf.concat([ones if f is None else f for f in factors], axis=-1)
        return total + tf.matmul(tf.cast(weights, self.compute_dtype), betas)

    def _normalize(self, x, gain_and_bias):
        """Layer normalization of `x` over its last axis (Ba et al. Eq. 20-22)."""
        gain, bias = gain_and_bias
        dtype = self._statistics_dtype
        y = _layer_normalize(tf.cast(x, dtype), tf.cast(gain, dtype), tf.cast(bias, dtype))
        return tf.cast(y, self.compute_dtype)

    # ------------------------------------------------------------------
    # Subclass interface
    # ------------------------------------------------------------------
    def _build_layer(self, index, input_size, units, above_units):
        raise NotImplementedError

    def _product_coefficients(self, z_below, z_previous, ops):
        """The factors `(a, b, c)` of the layer's products (`_mixed_products`)."""
        raise NotImplementedError

    # The factors `(a, b, c)` of a layer below the top during a COPY, as
    # Python numbers: 0 drops the product (it adds exact zeros on the dense
    # path), `None` stands for 1.
    _copy_coefficients = None

    def _layer_step(self, index, below, z_below, state, recurrent, above, z_previous, ops, constants):
        """One layer at one step.

        Args:
            index: 0-based layer index.
            below: `h_t^{l-1}` (the input for the bottom layer).
            z_below: `z_t^{l-1}`, `(batch, 1)`, or `None` at the bottom.
            state: this layer's previous state list, `h_{t-1}^l` first.
            recurrent: `h_{t-1}^l` as it enters the recurrent product (with
                its recurrent-dropout mask applied when training).
            above: `h_{t-1}^{l+1}` as it enters the top-down product, or
                `None` for the top layer.
            z_previous: `z_{t-1}^l`, or `None` for the top layer.
            ops: the layer's `LayerOperations`.
            constants: the dict of per-sequence tensors that the cell's
                `build_sequence_constants` made (see `variational_dropout`).

        Returns:
            `(new_state, boundary_preactivation)`: the new state list with
            `h_t^l` first, and the `(batch, 1)` pre-activation of the
            boundary detector (`None` for the top layer).
        """
        raise NotImplementedError

    # ------------------------------------------------------------------
    # The step
    # ------------------------------------------------------------------
    def _detect_boundary(self, preactivation, slope, training):
        """Chung et al. Eq. (8)-(9) with the straight-through estimator."""
        if self.boundary_mode == "soft":
            return straight_through.hard_sigmoid(preactivation, slope)
        if self.boundary_mode == "sample" and training:
            # float32 noise: in bfloat16 a uniform draw has only 128 levels.
            noise_dtype = "float64" if preactivation.dtype == tf.float64 else "float32"
            noise = keras.random.uniform(
                tf.shape(preactivation), dtype=noise_dtype, seed=self.seed_generator
            )
            return straight_through.bernoulli_straight_through(
                preactivation, slope, noise
            )
        return straight_through.step_straight_through(preactivation, slope)

    def call(self, inputs, states, training=False):
        argument_checks.check_float_inputs(type(self).__name__, inputs)
        input_mask = self.input_dropout_mask(inputs, training)
        if input_mask is not None:
            inputs = inputs * input_mask
        return self._step(inputs, None, states, training)

    def project_sequence(self, sequences, training=False):
        """The bottom layer's bottom-up term for all steps, one matmul.

        Used by the sequence layers (`HMLSTM`, `HMRNN`) before their time
        loop; the loop then calls `call_projected` with one step of it.
        Applies the input dropout mask of the open sequence.

        Args:
            sequences: `(batch, time, input_size)` floating-point inputs.
            training: Whether input dropout is applied.

        Returns:
            `(batch, time, columns_1)`: `bottom_up_product` of every step.
        """
        first = sequences[:, 0, :]
        input_mask = self.input_dropout_mask(first, training)
        if input_mask is not None:
            sequences = sequences * input_mask[:, None, :]
        constants = self.sequence_constants(first)
        return apply_to_steps(
            lambda inputs: self.bottom_up_product(inputs, constants), sequences
        )

    def call_projected(self, projected, states, training=False):
        """One step from its precomputed bottom-up term (`project_sequence`).

        Computes what `call` computes for the step input whose term it is.
        """
        return self._step(None, projected, states, training)

    def _step(self, inputs, projected, states, training):
        """The step of `call` (`projected is None`) or `call_projected`."""
        per_layer = 1 + self._extra_states_per_layer
        z_previous = tf.split(states[-1], self.num_layers - 1, axis=-1)
        slope = tf.convert_to_tensor(self.slope)
        reference = inputs if projected is None else projected
        recurrent_masks = self.recurrent_dropout_mask(reference, training)
        previous_h = [states[index * per_layer] for index in range(self.num_layers)]
        if recurrent_masks is not None:
            previous_h = [h * mask for h, mask in zip(previous_h, recurrent_masks)]

        constants = self.sequence_constants(reference)
        if projected is not None:
            constants = {**constants, PROJECTED_INPUT: projected}
        sparse = self.sparse_updates and not training
        counter = self._sparse_counter
        if sparse and not counter.in_sequence_layer:
            # Under keras.layers.RNN: do not count its shape-probing step.
            counter.paused = not sparse_update.in_loop_step(self.sequence_graph)
        try:
            return self._unroll_layers(inputs, states, training, sparse, per_layer,
                                       z_previous, slope, previous_h, constants)
        finally:
            if sparse and not counter.in_sequence_layer:
                counter.paused = False

    def _unroll_layers(self, inputs, states, training, sparse, per_layer, z_previous,
                       slope, previous_h, constants):
        """The layers of one step, bottom first (see `_step`)."""
        below, z_below = inputs, None
        new_states, hiddens, boundaries = [], [], []
        for index in range(self.num_layers):
            is_top = index == self.num_layers - 1
            state = list(states[index * per_layer : (index + 1) * per_layer])
            above = None if is_top else previous_h[index + 1]
            z_prev = None if is_top else z_previous[index]
            ops = layer_operations(z_prev, z_below)
            arguments = (index, below, z_below, state, previous_h[index], above,
                         z_prev, ops, constants)
            if sparse:
                state, preactivation = self._sparse_layer_step(*arguments)
            else:
                state, preactivation = self._layer_step(*arguments)
            new_states.extend(state)
            hiddens.append(state[0])
            below = state[0]
            if not is_top:
                z_below = self._detect_boundary(preactivation, slope, training)
                boundaries.append(z_below)
        z = tf.concat(boundaries, axis=-1)
        new_states.append(z)
        output = tf.concat(hiddens + [z], axis=-1)
        return output, new_states

    def _sparse_layer_step(self, index, below, z_below, state, recurrent, above,
                           z_previous, ops, constants):
        """`_layer_step`, skipped when every row of the batch COPYs.

        A COPY keeps the layer's state bit for bit (Chung Eq. 2-3), so the
        skipped branch returns the state unchanged and computes only what
        the step still needs: the boundary detector's pre-activation (its
        one column of the products that a COPY keeps, `_copy_coefficients`,
        from the per-sequence `constants["copy_boundaries"]`:
        `sparse_update.boundary_preactivation`), none at all for the top
        layer.  The bottom layer never COPYs.  Every executed and skipped
        update is counted (`sparse_update`).
        """
        counter = self._sparse_counter
        if ops.copy is None:  # the bottom layer
            counter.count(index, skipped=False)
            return self._layer_step(index, below, z_below, state, recurrent,
                                    above, z_previous, ops, constants)
        has_boundary = z_previous is not None

        # The counts are stateful operations of their branch: compiled,
        # each branch runs its own (automatic control dependencies), so no
        # output waits on them.
        def dense():
            counter.count(index, skipped=False)
            new_state, preactivation = self._layer_step(
                index, below, z_below, state, recurrent, above, z_previous,
                ops, constants,
            )
            return (new_state, preactivation) if has_boundary else new_state

        def skipped():
            counter.count(index, skipped=True)
            if not has_boundary:
                return list(state)
            preactivation = sparse_update.boundary_preactivation(
                constants["copy_boundaries"][index], (below, recurrent, above)
            )  # Chung Eq. (5)-(7), the boundary column of a COPY
            return list(state), preactivation

        every_row_copies = tf.reduce_all(tf.equal(ops.copy, 1.0))
        result = tf.cond(every_row_copies, skipped, dense)
        if has_boundary:
            return list(result[0]), result[1]
        return list(result), None

    def get_initial_state(self, batch_size=None):
        """Zero states; `z_0 = 0`, so no layer FLUSHes at the first step."""
        return [
            keras.ops.zeros((batch_size, size), dtype=self.compute_dtype)
            for size in self.state_size
        ]

    # ------------------------------------------------------------------
    # Output layout
    # ------------------------------------------------------------------
    def split_outputs(self, outputs):
        """Split outputs into `(hiddens, boundaries)`.

        Works on one step `(batch, output_size)` and on whole sequences
        `(batch, time, output_size)`.

        Args:
            outputs: The per-step output of the cell, or the output of a
                `keras.layers.RNN` over it. The list that an RNN with
                `return_state=True` returns, `[outputs, *states]`, is
                accepted too: its first element, the (sequence) output, is
                split.

        Returns:
            `hiddens`: a list of `num_layers` tensors `(..., units_l)`,
            bottom first; `boundaries`: one tensor `(..., num_layers - 1)`.
        """
        if isinstance(outputs, (list, tuple)):
            if not outputs:
                raise ValueError(
                    "`outputs` must be a tensor of last dimension output_size="
                    f"{self.output_size}, or the list [outputs, *states] of "
                    "an RNN with return_state=True. Received: an empty "
                    f"{type(outputs).__name__}."
                )
            outputs = outputs[0]  # RNN(..., return_state=True): [outputs, *states]
        if not hasattr(outputs, "shape"):
            outputs = keras.ops.convert_to_tensor(outputs)
        if len(outputs.shape) < 1 or (
            outputs.shape[-1] is not None and outputs.shape[-1] != self.output_size
        ):
            raise ValueError(
                f"`outputs` must have last dimension output_size="
                f"{self.output_size}. Received: shape={tuple(outputs.shape)}"
            )
        pieces = keras.ops.split(
            outputs,
            list(_cumulative(self.units + [self.num_layers - 1]))[:-1],
            axis=-1,
        )
        return list(pieces[:-1]), pieces[-1]

    def get_config(self):
        config = {
            "units": list(self.units),
            "num_layers": self.num_layers,
            "boundary_mode": self.boundary_mode,
            "slope": self.initial_slope,
            "layer_norm": self.layer_norm,
            "layer_norm_gain": self.layer_norm_gain,
            "top_down": self.top_down,
            "boundary_bias": self.boundary_bias,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "recurrent_initializer": keras.initializers.serialize(
                self.recurrent_initializer
            ),
            "boundary_initializer": keras.initializers.serialize(
                self.boundary_initializer
            ),
            "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
            "recurrent_regularizer": keras.regularizers.serialize(
                self.recurrent_regularizer
            ),
            "bias_regularizer": keras.regularizers.serialize(self.bias_regularizer),
            "kernel_constraint": keras.constraints.serialize(self.kernel_constraint),
            "recurrent_constraint": keras.constraints.serialize(
                self.recurrent_constraint
            ),
            "bias_constraint": keras.constraints.serialize(self.bias_constraint),
            **self.variational_dropout_config(),
            "sparse_updates": self.sparse_updates,
        }
        base = super().get_config()
        return {**base, **config}


_LAYER_NORM_EPSILON = 1e-5
# Key of `constants` under which a sequence layer hands the bottom layer's
# precomputed bottom-up term of the current step to `_mixed_products`.
PROJECTED_INPUT = "projected_input"
# (kernel, normalization) of a layer's products, in the order of the
# coefficients of `_mixed_products`.
_NORMALIZED_PRODUCTS = (
    ("kernel", "norm_bottom_up"),
    ("recurrent_kernel", "norm_recurrent"),
    ("top_down_kernel", "norm_top_down"),
)


def _is_zero(factor):
    """Whether a product's factor is the Python number 0 (product dropped)."""
    return isinstance(factor, (int, float)) and factor == 0


def _inverse_deviation(variance, epsilon=_LAYER_NORM_EPSILON):
    """`1 / sqrt(variance + eps)`, and 0 (with no gradient) where `variance == 0`.

    A row of zero variance is constant (all zeros once centred): its
    normalized value is 0 either way, so the forward pass is unchanged.
    The 0 changes the gradient there, which would be `gain / sqrt(eps)`
    (about 316 x): `eps` guards the division, it should not set a gain.
    Such rows are hidden states that are exactly zero: the zero initial
    state, and a layer updated from all-zero inputs (with zero biases,
    tanh(0) = 0 keeps it zero).  Through the bottom-up, recurrent and
    top-down normalizations these rows chain that gain from link to link;
    in `"sample"` mode, whose boundaries fire on them (hard_sigm(0) = 0.5),
    the gradient of the first steps from the zero state grows by 1e2 to 1e4
    per step, past float32's range within a 100-step window.
    """
    return tf.where(variance > 0.0, tf.math.rsqrt(variance + epsilon), tf.zeros_like(variance))


def _layer_normalize(x, gain, bias, epsilon=_LAYER_NORM_EPSILON):
    """`(x - mean) / sqrt(var + eps) * gain + bias` over the last axis
    (with `_inverse_deviation`: no gradient through a constant row)."""
    mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
    return (x - mean) * _inverse_deviation(variance, epsilon) * gain + bias


def _cumulative(sizes):
    total = 0
    for size in sizes:
        total += size
        yield total


def find_hierarchical_cells(model_or_layer):
    """All `HierarchicalCell`s inside a model, layer, RNN or wrapper cell."""
    return find_layers(model_or_layer, lambda layer: isinstance(layer, HierarchicalCell))
