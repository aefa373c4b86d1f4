"""The `MultiplicativeLSTM` sequence layer: the mLSTM over a whole sequence."""

import keras

from hmkeras.cells.multiplicative_lstm_cell import MultiplicativeLSTMCell
from hmkeras.cells.sequence_layer import SequenceLayer


@keras.saving.register_keras_serializable(package="hmkeras")
class MultiplicativeLSTM(SequenceLayer):
    """Multiplicative LSTM layer (Krause et al. 2017).

    `keras.layers.RNN(MultiplicativeLSTMCell(...))` as one layer, the way
    `keras.layers.LSTM` is `RNN(LSTMCell(...))`.  The input products
    `W_mx x_t` (Eq. 17) and `W_hx x_t`, `W_ix x_t`, `W_fx x_t`, `W_ox x_t`
    (Eq. 18-21) of all steps are one matrix product before the time loop,
    and weight normalization is done once per sequence; the loop does the
    products with `h_{t-1}` and `m_t` only (see
    `hmkeras.cells.sequence_layer`).  Takes every argument of
    `MultiplicativeLSTMCell` and `return_sequences`, `return_state`,
    `go_backwards`, `stateful`, `unroll`, `zero_output_for_mask`.

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
