"""`HierarchicalCell`: the hierarchy that `HMLSTMCell` and `HMRNNCell` share.

It owns what the two cells have in common (Chung et al. 2017, Sec. 3.2;
Kadar et al. 2018, Appendix A and B): the argument checks, the
non-trainable `slope` of the hard sigmoid, the boundary detectors
(`"step"`, `"sample"`, `"soft"`; Chung Eq. 8-9), what they read
(`boundary_input`), whether a layer's boundaries nest in the layer
below's (`nested_boundaries`) and their straight-through backward pass
(`boundary_gradient`), the unroll over the
layers of one step (bottom first) with each layer's COPY / UPDATE / FLUSH
masks (Chung Eq. 2-3) and the configuration.  A layer's weights come from
`layer_weights`, its products for a sequence from `layer_products`, its
masks and what its update reads from `layer_step`, the layer sizes and
the state and output layout from `hierarchy_layout`:

    state:  [h^1, (extra^1...), ..., h^L, (extra^L...), z_{t-1}]
    output: [h^1 | ... | h^L | z^1 ... z^{L-1}]

A subclass only says what one layer computes at one step: its weights
(`_build_layer`), the state it carries besides `h`
(`_extra_states_per_layer`; the HM-LSTM's `c^l`), how the boundaries gate
its products (`_product_gates`) and its update (`_layer_step`, which
reads a `LayerStep`).
"""

import keras
from keras import ops

from hmkeras import argument_checks
from hmkeras.cells import hierarchy_layout
from hmkeras.cells import layer_weights
from hmkeras.cells import sparse_update
from hmkeras.cells import straight_through
from hmkeras.cells.layer_products import LayerProducts
from hmkeras.cells.layer_products import ProductInputs
from hmkeras.cells.layer_products import ProductOptions
from hmkeras.cells.layer_search import find_layers
from hmkeras.cells.layer_step import LayerStep
from hmkeras.cells.layer_step import StepContext
from hmkeras.cells.layer_step import layer_operations
from hmkeras.cells.sequence_layer import apply_to_steps
from hmkeras.cells.variational_dropout import VariationalDropoutMixin

BOUNDARY_MODES = ("step", "sample", "soft")
# What a boundary detector reads: Chung et al.'s pre-activation column
# (Eq. 5-7), or the layer's updated state (an extension).
BOUNDARY_INPUTS = ("previous", "updated")
# The initializer, regularizer and constraint arguments, with their Keras
# module (`get`, `serialize`).
_KERAS_OBJECTS = tuple(
    (f"{weights}_{kind}", module)
    for kind, module, names in (
        ("initializer", keras.initializers, ("kernel", "recurrent", "boundary", "bias")),
        ("regularizer", keras.regularizers, ("kernel", "recurrent", "bias")),
        ("constraint", keras.constraints, ("kernel", "recurrent", "bias")),
    )
    for weights in names
)


def _check_boundary_gradient(boundary_gradient, boundary_mode):
    """`boundary_gradient` is a backward pass of the straight-through
    estimators, which the `"soft"` mode (no estimator) does not use."""
    boundary_gradient = argument_checks.check_choice(
        "boundary_gradient", boundary_gradient, straight_through.GRADIENTS
    )
    if boundary_mode == "soft" and boundary_gradient != "hard_sigmoid":
        raise ValueError(
            f'`boundary_gradient={boundary_gradient!r}` needs boundary_mode "step" or '
            '"sample" (the straight-through estimators); boundary_mode="soft" takes '
            'the hard sigmoid\'s own gradient. Received: boundary_mode="soft"'
        )
    return boundary_gradient


class HierarchicalCell(VariationalDropoutMixin, keras.layers.Layer):
    """Base class of the hierarchical multiscale RNN cells.

    Not used directly: see `HMLSTMCell` and `HMRNNCell`, whose docstrings
    list the arguments (those of `HMRNNCell` are this class's; `HMLSTMCell`
    adds `copy_last` and `forget_bias`).  Arguments after `num_layers` are
    keyword-only.  Subclasses implement `_build_layer`, `_product_gates`
    and `_layer_step`, and set `_extra_states_per_layer` (the number of
    state tensors of size `units_l` a layer keeps besides `h^l`),
    `_columns_per_unit` and `_copy_products`.

    Examples:

        >>> import numpy as np, hmkeras
        >>> cell = hmkeras.HMLSTMCell([4, 3])
        >>> isinstance(cell, hmkeras.HierarchicalCell), cell.state_size, cell.output_size
        (True, [4, 4, 3, 3, 1], 8)
        >>> y, states = cell(np.ones((2, 5), "float32"), cell.get_initial_state(2))
        >>> hiddens, boundaries = cell.split_outputs(y)
        >>> [tuple(h.shape) for h in hiddens], tuple(boundaries.shape)
        ([(2, 4), (2, 3)], (2, 1))
    """

    _extra_states_per_layer = 0
    # Without layer normalization: whether the recurrent and top-down
    # products are one matmul of the gated inputs against `[U; V]` (for
    # products much wider than their inputs: the LSTM's 4 gates) or
    # separate matmuls whose outputs are gated (`ProductOptions`).
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
        super().__init__(**kwargs)
        self.units = hierarchy_layout.resolve_layer_sizes(units, num_layers)
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
        self.boundary_gradient = _check_boundary_gradient(boundary_gradient, self.boundary_mode)
        self.boundary_input = argument_checks.check_choice(
            "boundary_input", boundary_input, BOUNDARY_INPUTS
        )
        self.layer_norm = argument_checks.check_bool("layer_norm", layer_norm)
        self.layer_norm_gain = argument_checks.check_float(
            "layer_norm_gain", layer_norm_gain, minimum=0, exclusive_minimum=True
        )
        self.top_down = argument_checks.check_bool("top_down", top_down)
        self.boundary_bias = argument_checks.check_float("boundary_bias", boundary_bias)
        self.nested_boundaries = argument_checks.check_bool(
            "nested_boundaries", nested_boundaries)
        self.sparse_updates = sparse_update.check_sparse_updates(
            sparse_updates, self.boundary_mode
        )
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
        self.state_size = hierarchy_layout.state_sizes(
            self.units, 1 + self._extra_states_per_layer
        )
        self.output_size = hierarchy_layout.output_size(self.units)

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
        # One dict of weights per layer, filled by `_build_layer` (see
        # `layer_weights`); every random matrix gets its own draw number.
        self._layer_params = []
        self._draws = 0
        below = input_size
        for index, size in enumerate(self.units):
            above = self.units[index + 1] if index + 1 < self.num_layers else None
            self._build_layer(index, below, size, above)
            below = size
        if self.boundary_input == "updated":
            for index in range(self.num_layers - 1):
                self._layer_params[index].update(
                    layer_weights.add_updated_detector(self, index, self.units[index]))

    @property
    def has_detector_columns(self):
        """Whether the layers below the top have the boundary detector's
        column in their products (Chung Eq. 5-7: `boundary_input="previous"`)."""
        return self.boundary_input == "previous"

    def build_sequence_constants(self, step_input):
        """Tensors prepared once per sequence (see `variational_dropout`).

        `{"layer_products": (LayerProducts, ...)}`, one per layer, bottom
        first: each layer's kernels with their transposes, with layer
        normalization the centred kernels and stacked biases, with
        `sparse_updates` the boundary column of a COPY (`layer_products`).
        """
        del step_input
        return {"layer_products": tuple(
            LayerProducts.build(params, self._product_options(index))
            for index, params in enumerate(self._layer_params)
        )}

    def _product_options(self, index):
        """The `ProductOptions` of layer `index`."""
        # With `boundary_input="updated"` a COPY's detector reads the kept
        # `h^l`, so no product's column is kept for it.
        can_copy_and_detect = (0 < index < self.num_layers - 1) and self.has_detector_columns
        return ProductOptions(
            layer_norm=self.layer_norm,
            stack_recurrent=self._stack_recurrent_products,
            compute_dtype=self.compute_dtype,
            copy_products=(
                self._copy_products if self.sparse_updates and can_copy_and_detect
                else None
            ),
        )

    def bottom_up_product(self, inputs, constants):
        """The bottom layer's bottom-up term `W_1 x` (Chung Eq. 7).

        With layer normalization it is `LN(W_1 x)` without its bias (Ba et
        al. Eq. 20-21).  The bottom layer's bottom-up product is never
        gated (`z^0_t = 1`), so it only depends on the input: a sequence
        layer computes it for all steps at once (`project_sequence`).

        Args:
            inputs: `(rows, input_size)`, the (dropped-out) inputs.
            constants: the cell's per-sequence constants.
        """
        return constants["layer_products"][0].bottom_up(inputs)

    # ------------------------------------------------------------------
    # Subclass interface
    # ------------------------------------------------------------------
    def _build_layer(self, index, input_size, units, above_units):
        """Appends layer `index`'s weight dict to `self._layer_params`."""
        raise NotImplementedError

    def _product_gates(self, step):
        """The `ProductGates` of a `LayerStep`'s products (Chung Eq. 5-7)."""
        raise NotImplementedError

    # The products a layer below the top keeps while it COPYs: what its
    # boundary column reads when sparse updates skip the layer.
    _copy_products = ()

    def _layer_step(self, step):
        """One layer at one step.

        Args:
            step: A `LayerStep`.

        Returns:
            `(new_state, boundary_preactivation)`: the new state list with
            `h_t^l` first, and the `(batch, 1)` pre-activation of the
            boundary detector (`None` for the top layer).
        """
        raise NotImplementedError

    # ------------------------------------------------------------------
    # The step
    # ------------------------------------------------------------------
    def _updated_preactivation(self, index, hidden):
        """The pre-activation of `z^l_t` from the updated state, `h^l_t w_l
        + c_l` (`boundary_input="updated"`, an extension)."""
        params = self._layer_params[index]
        return ops.matmul(hidden, params["detector_kernel"]) + params["detector_bias"]

    def _detect_boundary(self, preactivation, slope, training):
        """Chung et al. Eq. (8)-(9) with the straight-through estimator."""
        if self.boundary_mode == "soft":
            return straight_through.hard_sigmoid(preactivation, slope)
        if self.boundary_mode == "sample" and training:
            argument_checks.check_draws_per_step(type(self).__name__,
                                                 'boundary_mode="sample"', preactivation)
            # float32 noise: in bfloat16 a uniform draw has only 128 levels.
            is_double = keras.backend.standardize_dtype(preactivation.dtype) == "float64"
            noise = keras.random.uniform(
                ops.shape(preactivation),
                dtype="float64" if is_double else "float32",
                seed=self.seed_generator,
            )
            return straight_through.bernoulli_straight_through(
                preactivation, slope, noise, self.boundary_gradient
            )
        return straight_through.step_straight_through(
            preactivation, slope, self.boundary_gradient
        )

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
        z_previous = ops.split(states[-1], self.num_layers - 1, axis=-1)
        slope = ops.convert_to_tensor(self.slope)
        reference = inputs if projected is None else projected
        recurrent_masks = self.recurrent_dropout_mask(reference, training)
        previous_h = [self._layer_state(states, index)[0] for index in range(self.num_layers)]
        if recurrent_masks is not None:
            previous_h = [h * mask for h, mask in zip(previous_h, recurrent_masks)]
        context = StepContext(
            training=training,
            sparse=self.sparse_updates and not training,
            slope=slope,
            z_previous=z_previous,
            recurrent=previous_h,
            products=self.sequence_constants(reference)["layer_products"],
        )
        return self._unroll_layers(inputs, projected, states, context)

    def _layer_state(self, states, index):
        """Layer `index`'s slice of the flat state list, `h^l` first."""
        return hierarchy_layout.layer_state(states, index, 1 + self._extra_states_per_layer)

    def _unroll_layers(self, inputs, projected, states, context):
        """The layers of one step, bottom first (Chung et al. Sec. 3.2)."""
        below, z_below = inputs, None
        new_states, hiddens, boundaries = [], [], []
        for index in range(self.num_layers):
            is_top = index == self.num_layers - 1
            z_prev = None if is_top else context.z_previous[index]
            step = LayerStep(
                index=index,
                state=self._layer_state(states, index),
                inputs=ProductInputs(
                    below=below,
                    recurrent=context.recurrent[index],
                    above=None if is_top else context.recurrent[index + 1],
                    projected=projected if index == 0 else None,
                ),
                z_below=z_below,
                z_previous=z_prev,
                ops=layer_operations(z_prev, z_below),  # Chung Eq. (2)
                products=context.products[index],
            )
            if context.sparse:
                state, preactivation = sparse_update.skip_copying_layer(
                    self._layer_step, step
                )
            else:
                state, preactivation = self._layer_step(step)
            new_states.extend(state)
            hiddens.append(state[0])
            below = state[0]
            if not is_top and not self.has_detector_columns:
                preactivation = self._updated_preactivation(index, state[0])
            if not is_top:  # Chung Eq. (8)-(9)
                z = self._detect_boundary(preactivation, context.slope, context.training)
                if self.nested_boundaries and z_below is not None:
                    z = z * z_below  # a segment of layer l ends where one of l - 1 does
                z_below = z
                boundaries.append(z)
        z = ops.concatenate(boundaries, axis=-1)
        new_states.append(z)
        output = ops.concatenate(hiddens + [z], axis=-1)
        return output, new_states

    def get_initial_state(self, batch_size=None):
        """Zero states; `z_0 = 0`, so no layer FLUSHes at the first step."""
        return [
            ops.zeros((batch_size, size), dtype=self.compute_dtype)
            for size in self.state_size
        ]

    # ------------------------------------------------------------------
    # Outputs and configuration
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
        return hierarchy_layout.split_outputs(outputs, self.units)

    def get_config(self):
        config = {
            "units": list(self.units),
            "num_layers": self.num_layers,
            "boundary_mode": self.boundary_mode,
            "slope": self.initial_slope,
            "boundary_gradient": self.boundary_gradient,
            "boundary_input": self.boundary_input,
            "layer_norm": self.layer_norm,
            "layer_norm_gain": self.layer_norm_gain,
            "top_down": self.top_down,
            "boundary_bias": self.boundary_bias,
            "nested_boundaries": self.nested_boundaries,
            **{
                name: module.serialize(getattr(self, name))
                for name, module in _KERAS_OBJECTS
            },
            **self.variational_dropout_config(),
            "sparse_updates": self.sparse_updates,
        }
        base = super().get_config()
        return {**base, **config}


def find_hierarchical_cells(model_or_layer):
    """All `HierarchicalCell`s inside a model, layer, RNN or wrapper cell."""
    return find_layers(model_or_layer, lambda layer: isinstance(layer, HierarchicalCell))
