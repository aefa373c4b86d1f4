"""The `HMRNN` sequence layer: `HMRNNCell` over a whole sequence."""

import keras

from hmkeras.cells.hierarchical_sequence_layer import HierarchicalSequenceLayer
from hmkeras.cells.sequence_layer import cell_base_arguments
from hmkeras.cells.hm_rnn_cell import HMRNNCell


@keras.saving.register_keras_serializable(package="hmkeras")
class HMRNN(HierarchicalSequenceLayer):
    """Hierarchical multiscale Elman RNN layer (Kadar et al. 2018, Eq. 9).

    `keras.layers.RNN(HMRNNCell(...))` as one layer, with the bottom
    layer's input product `W_1 x_t` computed for all steps before the time
    loop (see `hmkeras.cells.sequence_layer`).  Takes every argument of
    `HMRNNCell`, the boundary prior's `boundary_prior` and
    `segment_lengths`, and `return_sequences`, `return_state`,
    `go_backwards`, `stateful`, `unroll`, `zero_output_for_mask`; see
    `HMLSTM`, which it mirrors.  States: `[h^1, ..., h^L, z]`.

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
        boundary_prior: The form of the boundary prior whose loss the layer
            adds while training (`hmkeras.BoundaryPrior`): `"rate"` (default)
            or `"binomial"`; `None` adds none and gives exactly the papers'
            model. An extension: trained on the language-modelling loss alone
            the boundary detectors fire on most steps and segment nothing.
        segment_lengths: The expected segment length (in steps, > 1) of every
            boundary layer, bottom first (`num_layers - 1` values). Default
            `None`: 5 for the bottom layer, 3 times longer for each layer above
            (`(5, 15)` for three layers).
        return_sequences: Boolean. Whether to return the output of every step
            (`(batch, time, output_size)`) or of the last one only. Default
            `False`.
        return_state: Boolean. Whether to return the final states after the
            output. Default `False`.
        go_backwards: Boolean (default `False`). If `True`, process the input
            sequence backwards and return the reversed sequence.
        stateful: Boolean (default `False`). If `True`, the last state of each
            sample at index `i` in a batch is the initial state of the sample
            at index `i` in the next batch (truncated BPTT).
        unroll: Boolean (default `False`). If `True`, the time loop is unrolled
            (faster for short sequences, more memory).
        zero_output_for_mask: Boolean (default `False`). Whether masked steps
            output zeros (`True`) or repeat the previous output.
        **kwargs: Base layer keyword arguments, such as `name` and `dtype`.

    Call arguments:
        sequences: A floating-point `(batch, time, features)` tensor
            (integer or boolean inputs are refused with a `ValueError`).
        initial_state: Optional list of the cell's initial states,
            `[h^1, ..., h^L, z]`; None starts from zeros.
        mask: Optional `(batch, time)` boolean tensor: at a `False` step
            the states are carried over unchanged, and the boundary prior
            leaves the step out.
        training: Whether the layer runs in training mode: boundaries are
            sampled (`boundary_mode="sample"`), dropout is applied and the
            boundary prior's loss is added.

    Examples:

        >>> import numpy as np
        >>> from hmkeras.cells import HMRNN
        >>> layer = HMRNN([8, 6], return_state=True)
        >>> y, h1, h2, z = layer(np.ones((2, 5, 3), "float32"))
        >>> tuple(y.shape), tuple(z.shape)
        ((2, 15), (2, 1))
    """

    cell_name = "hmrnn_cell"
    cell_class = HMRNNCell

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
        boundary_prior="rate",
        segment_lengths=None,
        return_sequences=False,
        return_state=False,
        go_backwards=False,
        stateful=False,
        unroll=False,
        zero_output_for_mask=False,
        **kwargs,
    ):
        cell = HMRNNCell(
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
            name=self.cell_name,
            **cell_base_arguments(kwargs),
        )
        super().__init__(
            cell,
            boundary_prior=boundary_prior,
            segment_lengths=segment_lengths,
            return_sequences=return_sequences,
            return_state=return_state,
            go_backwards=go_backwards,
            stateful=stateful,
            unroll=unroll,
            zero_output_for_mask=zero_output_for_mask,
            **kwargs,
        )
