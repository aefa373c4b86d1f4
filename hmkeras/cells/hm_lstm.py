"""The `HMLSTM` sequence layer: `HMLSTMCell` over a whole sequence."""

import keras

from hmkeras.cells.hierarchical_sequence_layer import HierarchicalSequenceLayer
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

    Example:

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
