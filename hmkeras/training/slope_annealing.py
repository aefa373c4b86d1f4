"""The slope annealing trick (Chung et al. 2017, Section 3.3)."""

import keras

from hmkeras import argument_checks
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
        verbose: 0 (silent, default) or 1: print the new slope at the start
            of an epoch when the schedule changes it (not when it stays
            the same). With `unit="step"` nothing is printed; the slope
            is in the logs (`slope`) at every epoch's end either way.

    The schedule may return a Python or NumPy number; it must be finite
    and > 0 (a `ValueError` otherwise).

    Examples:

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
        self.schedule = schedule
        self.unit = argument_checks.check_choice("unit", unit, UNITS)
        self.verbose = argument_checks.check_int("verbose", verbose, minimum=0, maximum=1)
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

    def _set_slope(self, index, report_change=False):
        """Sets every built cell's slope to `schedule(index)`.

        Returns `(value, changed)`: the new slope and, with
        `report_change`, whether it differs from the slope the cells had
        (compared in the weight's dtype; `False` without `report_change`).
        """
        raw = self.schedule(index)
        try:
            value = argument_checks.check_float(
                f"schedule({index})", raw, minimum=0, exclusive_minimum=True
            )
        except ValueError:
            raise ValueError(
                "`schedule` must return a finite number > 0. "
                f"Received: schedule({index})={raw!r}"
            ) from None
        changed = False
        for cell in self.cells:
            if cell.built:
                if report_change:
                    previous = keras.ops.convert_to_numpy(cell.slope)
                    changed = changed or bool(previous != previous.dtype.type(value))
                cell.slope.assign(value)
        return value, changed

    def on_train_begin(self, logs=None):
        if not self.cells:
            raise ValueError(
                "SlopeAnnealing found no HMLSTMCell or HMRNNCell in the model."
            )

    def on_epoch_begin(self, epoch, logs=None):
        if self.unit == "epoch":
            value, changed = self._set_slope(epoch, report_change=bool(self.verbose))
            if self.verbose and changed:
                print(f"\nEpoch {epoch + 1}: SlopeAnnealing sets slope to {value:.4f}.")

    def on_train_batch_begin(self, batch, logs=None):
        if self.unit == "step":
            step = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations))
            self._set_slope(step)

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None and self.cells and self.cells[0].built:
            logs["slope"] = float(keras.ops.convert_to_numpy(self.cells[0].slope))
