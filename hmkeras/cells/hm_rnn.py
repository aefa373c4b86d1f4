"""The `HMRNN` sequence layer: `HMRNNCell` over a whole sequence."""

import keras

from hmkeras.cells.hierarchical_sequence_layer import HierarchicalSequenceLayer
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

    Example:

    >>> import numpy as np
    >>> from hmkeras.cells import HMRNN
    >>> layer = HMRNN([8, 6], return_state=True)
    >>> y, h1, h2, z = layer(np.ones((2, 5, 3), "float32"))
    >>> tuple(y.shape), tuple(z.shape)
    ((2, 15), (2, 1))
    """

    cell_name = "hmrnn_cell"
    cell_class = HMRNNCell
