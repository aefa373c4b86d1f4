"""The `MultiplicativeLSTM` sequence layer: the mLSTM over a whole sequence."""

import keras

from hmkeras.cells.multiplicative_lstm_cell import MultiplicativeLSTMCell
from hmkeras.cells.multiplicative_lstm_cell import with_legacy_defaults
from hmkeras.cells.sequence_layer import SequenceLayer


@keras.saving.register_keras_serializable(package="hmkeras")
class MultiplicativeLSTM(SequenceLayer):
    """Multiplicative LSTM layer (Krause et al. 2017).

    `keras.layers.RNN(MultiplicativeLSTMCell(...))` as one layer, the way
    `keras.layers.LSTM` is `RNN(LSTMCell(...))`, with the same outputs,
    states and gradients.  Weight normalization and the input dropout mask
    are applied once per call, before the time loop (see
    `hmkeras.cells.sequence_layer`); the input products `W_mx x_t`
    (Eq. 17) and `W_hx x_t`, `W_ix x_t`, `W_fx x_t`, `W_ox x_t`
    (Eq. 18-21) stay in the loop, one matmul per step, which on a CPU is
    cheaper than precomputing them for all steps (see
    `MultiplicativeLSTMCell.project_sequence`).  The two recurrent
    products cannot be merged into one: `W_hm m_t` and the gates' `W_*m m_t`
    (already one matmul) need `m_t`, which needs `W_mh h_{t-1}`.  Takes
    every argument of `MultiplicativeLSTMCell` and `return_sequences`,
    `return_state`, `go_backwards`, `stateful`, `unroll`,
    `zero_output_for_mask`.

    Weight normalization covers the recurrent weights by default
    (`weight_normalization_scope="recurrent"`: W_mh and W_hm, W_im, W_om,
    W_fm, as Krause et al. Section 4.2), and the input kernel too with
    `"all"`, which a configuration saved without that key (by an earlier
    version) gets.

    Args:

    Example:

    >>> import numpy as np
    >>> from hmkeras.cells import MultiplicativeLSTM
    >>> layer = MultiplicativeLSTM(4, weight_normalization=True,
    ...                            return_sequences=True)
    >>> tuple(layer(np.ones((2, 5, 3), "float32")).shape)
    (2, 5, 4)
    """

    cell_name = "multiplicative_lstm_cell"
    cell_class = MultiplicativeLSTMCell

    @classmethod
    def from_config(cls, config):
        # As the cell's: no `weight_normalization_scope` means "all".
        return super().from_config(with_legacy_defaults(config))
