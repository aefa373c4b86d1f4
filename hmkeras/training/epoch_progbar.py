"""`EpochProgbar`: Keras' progress bar for one `fit` per epoch.

A training loop that calls `fit` once per epoch (to resume inside an epoch,
or to stop after a number of steps) prints its own `Epoch i/n` line; Keras'
`ProgbarLogger` would add a wrong `Epoch 1/1`, and its bar would end at the
planned steps when the epoch stopped early.

Examples:

    >>> import keras, numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> model.compile("sgd", "mse")
    >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=2, initial_epoch=1,
    ...               verbose=0, callbacks=[EpochProgbar()])
"""

import keras


class EpochProgbar(keras.callbacks.ProgbarLogger):
    """Keras' progress bar without its own `Epoch i/n` line and, when an
    epoch stops early, ending at the steps really run. Pass it in
    `callbacks` with `fit(..., verbose=1 or 2)`."""

    def set_params(self, params):
        super().set_params(params)
        self.epochs = 1  # ProgbarLogger prints its line only when > 1

    def on_epoch_end(self, epoch, logs=None):
        if self.seen:
            self.target = self.seen
        super().on_epoch_end(epoch, logs)
