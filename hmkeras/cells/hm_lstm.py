"""The `HMLSTM` sequence layer: `HMLSTMCell` over a whole sequence."""

import keras

from hmkeras.cells.hierarchical_sequence_layer import HierarchicalSequenceLayer
from hmkeras.cells.sequence_layer import cell_base_arguments
from hmkeras.cells.hm_lstm_cell import HMLSTMCell


@keras.saving.register_keras_serializable(package="hmkeras")
class HMLSTM(HierarchicalSequenceLayer):
    """Hierarchical multiscale LSTM layer (Chung, Ahn & Bengio, 2017).

    `keras.layers.RNN(HMLSTMCell(...))` as one layer, the way
    `keras.layers.LSTM` is `RNN(LSTMCell(...))`, and faster: the bottom
    layer's input product `W_1 x_t` (Chung et al. Eq. 7, with its layer
    normalization) is one matrix product over all steps before the time
    loop (see `hmkeras.cells.sequence_layer`).  The outputs, states and
    gradients are those of `RNN(HMLSTMCell(...))` with the same weights,
    up to rounding.

    Takes every argument of `HMLSTMCell` (see there: `units`,
    `num_layers`, `boundary_mode`, `slope`, `layer_norm`, `dropout`,
    `recurrent_dropout`, `seed`, `sparse_updates`, ...), the boundary
    prior's `boundary_prior` (default `"rate"`, `None` for the papers'
    model) and `segment_lengths` (a `hmkeras.BoundaryPrior` whose loss the
    layer adds while training), and those of `keras.layers.RNN`: `return_sequences`, `return_state`,
    `go_backwards`, `stateful`, `unroll`, `zero_output_for_mask`.  The
    cell is `layer.cell`; its arguments are read-only attributes of the
    layer (`layer.units`, `layer.boundary_mode`, ...), and
    `layer.split_outputs` is the cell's.  Masking (`keras.layers.Masking`,
    `Embedding(mask_zero=True)`) works as for any Keras RNN.

    Output: the per-step output of the cell,
    `[h^1 | ... | h^L | z^1 ... z^{L-1}]`, for the last step or, with
    `return_sequences=True`, for every step; with `return_state=True`
    followed by the cell's states `[h^1, c^1, ..., h^L, c^L, z]`.

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
            `[h^1, c^1, ..., h^L, c^L, z]`; None starts from zeros.
        mask: Optional `(batch, time)` boolean tensor: at a `False` step
            the states are carried over unchanged, and the boundary prior
            leaves the step out.
        training: Whether the layer runs in training mode: boundaries are
            sampled (`boundary_mode="sample"`), dropout is applied and the
            boundary prior's loss is added.

    Examples:

        >>> import numpy as np
        >>> from hmkeras.cells import HMLSTM
        >>> layer = HMLSTM(8, num_layers=3, return_sequences=True)
        >>> y = layer(np.zeros((2, 5, 4), "float32"))
        >>> tuple(y.shape)
        (2, 5, 26)
        >>> hiddens, boundaries = layer.split_outputs(y)
        >>> [tuple(h.shape) for h in hiddens], tuple(boundaries.shape)
        ([(2, 5, 8), (2, 5, 8), (2, 5, 8)], (2, 5, 2))
    """

    cell_name = "hmlstm_cell"
    cell_class = HMLSTMCell

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
        cell = HMLSTMCell(
            units,
            num_layers,
            boundary_mode=boundary_mode,
            slope=slope,
            boundary_gradient=boundary_gradient,
            boundary_input=boundary_input,
            layer_norm=layer_norm,
            layer_norm_gain=layer_norm_gain,
            top_down=top_down,
            copy_last=copy_last,
            boundary_bias=boundary_bias,
            nested_boundaries=nested_boundaries,
            forget_bias=forget_bias,
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
