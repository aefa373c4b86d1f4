"""The slope annealing trick (Chung et al. 2017, Section 3.3)."""

import keras

from hmkeras.cells.hierarchical_cell import find_hierarchical_cells


def chung_ptb_schedule(epoch):
    """`min(5, 1 + 0.04 * epoch)`: Chung et al.'s PTB schedule."""
    return min(5.0, 1.0 + 0.04 * epoch)


UNITS = ("epoch", "step")


class SlopeAnnealing(keras.callbacks.Callback):
    """Anneals the hard-sigmoid slope of every hierarchical cell in a model.

    The slope is a non-trainable weight of each `HMLSTMCell` / `HMRNNCell`,
    so the new value is seen by already compiled (also XLA) train
    functions without retracing, and it is saved with the model and its
    checkpoints.  The callback finds the cells itself: inside
    `keras.layers.RNN`, `StackedRNNCells`, `Bidirectional`, wrapper cells
    and nested models.

    Args:
        schedule: A callable from the epoch (or global step) number to the
            slope. Default: Chung et al.'s PTB schedule
            `min(5, 1 + 0.04 * epoch)`.
        unit: `"epoch"` (the schedule is called at the start of each epoch
            with the 0-based epoch index) or `"step"` (called before every
            train batch with the global step, i.e. the optimizer's
            iteration count, so it resumes correctly from a checkpoint).
        verbose: If 1, prints the slope when it changes at an epoch start.

    Example:

    >>> import keras, numpy as np, hmkeras
    >>> model = keras.Sequential([
    ...     keras.Input((6, 3)),
    ...     keras.layers.RNN(hmkeras.HMLSTMCell(4, num_layers=2)),
    ...     keras.layers.Dense(1)])
    >>> model.compile("adam", "mse")
    >>> annealing = hmkeras.SlopeAnnealing(lambda epoch: 1.0 + epoch)
    >>> _ = model.fit(np.zeros((4, 6, 3)), np.zeros((4, 1)), epochs=3,
    ...               callbacks=[annealing], verbose=0)
    >>> float(model.layers[0].cell.slope.numpy())
    3.0
    """

    def __init__(self, schedule=None, unit="epoch", verbose=0):
        super().__init__()
        if schedule is None:
            schedule = chung_ptb_schedule
        if not callable(schedule):
            raise ValueError(
                f"`schedule` must be a callable (epoch or step -> slope). "
                f"Received: schedule={schedule!r}"
            )
        if unit not in UNITS:
            raise ValueError(f"`unit` must be one of {UNITS}. Received: unit={unit!r}")
        self.schedule = schedule
        self.unit = unit
        self.verbose = verbose
        self._cells = None

    def set_model(self, model):
        super().set_model(model)
        self._cells = None

    @property
    def cells(self):
        """The hierarchical cells whose slope this callback sets."""
        if self._cells is None:
            self._cells = find_hierarchical_cells(self.model)
        return self._cells

    def _set_slope(self, index):
        raw = self.schedule(index)
        try:
            value = float(raw)
        except (TypeError, ValueError):
            value = float("nan")
        if isinstance(raw, bool) or not value > 0:
            raise ValueError(
                "`schedule` must return a number > 0. "
                f"Received: schedule({index})={raw!r}"
            )
        for cell in self.cells:
            if cell.built:
                cell.slope.assign(value)
        return value

    def on_train_begin(self, logs=None):
        if not self.cells:
            raise ValueError(
                "SlopeAnnealing found no HMLSTMCell or HMRNNCell in the model."
            )

    def on_epoch_begin(self, epoch, logs=None):
        if self.unit == "epoch":
            value = self._set_slope(epoch)
            if self.verbose:
                print(f"\nEpoch {epoch + 1}: SlopeAnnealing sets slope to {value:.4f}.")

    def on_train_batch_begin(self, batch, logs=None):
        if self.unit == "step":
            step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
            self._set_slope(step)

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None and self.cells and self.cells[0].built:
            logs["slope"] = float(keras.ops.convert_to_numpy(self.cells[0].slope))
