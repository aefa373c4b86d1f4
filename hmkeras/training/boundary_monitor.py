"""`BoundaryMonitor`: per-layer boundary rates during training, collapse alerts.

A hierarchical cell is only worth its cost while its boundary detectors
segment: a layer whose rate stays near 0 leaves every layer above it
copying (no update, no gradient), one near 1 makes every step a boundary
(no segmentation; Kadar et al. Table 2, row 7).  The monitor puts the rate
of every boundary layer into the training logs every `interval` steps and
at the end of every epoch (so the progress bar, `History` and a
`keras.callbacks.TensorBoard` placed after it show them), and warns,
naming the layer, the rate and what to change, when a rate stays below
`low` or above `high` for `patience` checks in a row;
`stop_on_collapse=True` also stops the run.

Checks.  A check is one measurement of the rates compared with `low` and
`high`.  There is one after every `interval`-th training step (counted
over the whole run, across epochs) and one at the end of every epoch
whose last step was not already such a check (the same measurement is
never counted twice).  Each check counts once toward `patience`, so a run
shorter than `interval` steps is still checked once per epoch.  With 6
steps per epoch, `interval=4` and `patience=3`, the checks fall after
steps 4, 6 (end of epoch 1) and 8, and a layer collapsed from the start
is warned about at step 8; step 12 ends epoch 2 and is one check.

A rate that is not a number (NaN: the model's outputs are not finite,
e.g. after its weights diverged, where the step-mode boundaries would
otherwise read as 0) is logged as NaN and is not a check of that layer:
it neither counts toward a collapse nor ends a streak.

Where the rates come from:

* a model whose `train_step` reports them (`hmkeras.TruncatedBPTTModel`
  logs `z_rate_1 ... z_rate_{L-1}` of every training batch): those;
* otherwise a forward pass (inference mode) over `probe`, a batch of the
  model's inputs, through every `keras.layers.RNN` that runs a
  hierarchical cell in a functional or Sequential model; the cell may sit
  inside a wrapper cell (`hmkeras.AveragingWrapper`,
  `hmkeras.AttentionWrapper`) made with `return_cell_output=True`.
"""

import math
import warnings

import keras
import numpy as np

from hmkeras import argument_checks
from hmkeras.cells.hierarchical_cell import HierarchicalCell
from hmkeras.cells.hierarchical_cell import find_hierarchical_cells


def _cell_wrappers(cell):
    """The wrapper cells around a hierarchical cell, outermost first.

    A wrapper (`hmkeras.AveragingWrapper`, `hmkeras.AttentionWrapper`) has
    the wrapped cell as `cell` and reads its part of the outputs with
    `cell_outputs`; it must return it (`return_cell_output=True`).
    """
    wrappers = []
    while not isinstance(cell, HierarchicalCell) and hasattr(cell, "cell_outputs"):
        if not getattr(cell, "return_cell_output", True):
            raise ValueError(
                f"BoundaryMonitor needs the boundaries of the hierarchical cell "
                f"inside {type(cell).__name__}: make the wrapper with "
                "return_cell_output=True, so that its outputs hold the cell's."
            )
        wrappers.append(cell)
        cell = cell.cell
    return wrappers


# What to change, named in the warnings: the boundary prior of the
# sequence layers (expected segment lengths) and the detectors' bias.
_PRIOR = ("Use the boundary prior of hmkeras.HMLSTM / hmkeras.HMRNN "
          "(`boundary_prior`, `segment_lengths`; hmkeras.BoundaryPrior)")
_ADVICE = {
    "low": f"{_PRIOR} with shorter expected segments, or a higher "
           "`boundary_bias`.",
    "high": f"{_PRIOR} with longer expected segments.",
}


class BoundaryCollapseWarning(UserWarning):
    """A boundary layer's rate stayed at (about) 0 or 1 for too long.

    Examples:

        >>> import warnings, keras, numpy as np, hmkeras
        >>> x = np.zeros((4, 10), "int32")
        >>> model = keras.Sequential([
        ...     keras.Input((10,), dtype="int32"), keras.layers.Embedding(5, 4),
        ...     keras.layers.RNN(hmkeras.HMLSTMCell(4, num_layers=2, boundary_bias=-100.0),
        ...                      return_sequences=True),
        ...     keras.layers.Dense(5)])
        >>> model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        >>> monitor = hmkeras.BoundaryMonitor(probe=x, interval=1, patience=1)
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     _ = model.fit(x, x, batch_size=4, verbose=0, callbacks=[monitor])
        >>> [w.category.__name__ for w in caught][:1]  # z^1 never fires
        ['BoundaryCollapseWarning']
        >>> [(name, layer, rate) for _, name, layer, rate in monitor.collapses][:1]
        [('z_rate_1', 1, 0.0)]
    """


class BoundaryMonitor(keras.callbacks.Callback):
    """Logs per-layer boundary rates and warns when a layer collapses.

    Numbers may be given as Python or NumPy scalars; booleans, strings,
    NaN and infinities are refused with a `ValueError` naming the argument.

    Args:
        probe: A batch of the model's inputs on which the rates are measured
            (inference mode); not needed when the model's `train_step`
            reports `z_rate_l` itself (`hmkeras.TruncatedBPTTModel`).
        interval: Positive int: check every `interval` training steps, and
            at the end of every epoch (see "Checks" in the module
            docstring). Default 100.
        low: A rate below `low` counts as collapsed to 0; in [0, 1] and
            below `high`. Default 0.01.
        high: A rate above `high` counts as collapsed to 1 (a layer that
            fires on more than 80 % of the steps does not segment); in
            [0, 1]. Default 0.8.
        patience: Positive int, the number of consecutive collapsed checks
            (interval and epoch-end checks alike) before the warning.
            Default 3.
        stop_on_collapse: `True` or `False`: also set `model.stop_training`
            on a collapse.
        verbose: 0 (silent) or 1 (the warnings, default).

    Attributes:
        collapses: `(step, name, layer, rate)` of every collapse warned
            about: the training step of the check that completed the
            streak, the log name, the layer (1 for z^1) and its rate there.

    Examples:

        >>> import keras, numpy as np, hmkeras
        >>> x = np.random.default_rng(0).integers(0, 20, (16, 30))
        >>> model = keras.Sequential([
        ...     keras.Input((30,), dtype="int32"), keras.layers.Embedding(20, 8),
        ...     keras.layers.RNN(hmkeras.HMLSTMCell(8), return_sequences=True),
        ...     keras.layers.Dense(20)])
        >>> model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        >>> monitor = hmkeras.BoundaryMonitor(probe=x[:4], interval=2, verbose=0)
        >>> history = model.fit(x, x, epochs=1, batch_size=4, callbacks=[monitor], verbose=0)
        >>> sorted(k for k in history.history if k.startswith("z_rate"))
        ['z_rate_1', 'z_rate_2']
    """

    def __init__(self, probe=None, interval=100, low=0.01, high=0.8, patience=3,
                 stop_on_collapse=False, verbose=1):
        super().__init__()
        self.probe = probe
        self.interval = argument_checks.check_positive_int("interval", interval)
        self.low = argument_checks.check_fraction("low", low)
        self.high = argument_checks.check_fraction("high", high)
        if not self.low < self.high:
            raise ValueError(f"`low` must be below `high`. Received: low={low!r}, high={high!r}")
        self.patience = argument_checks.check_positive_int("patience", patience)
        self.stop_on_collapse = argument_checks.check_bool(
            "stop_on_collapse", stop_on_collapse
        )
        self.verbose = argument_checks.check_int("verbose", verbose, minimum=0, maximum=1)
        self.collapses = []

    # ------------------------------------------------------------------
    def on_train_begin(self, logs=None):
        self._streaks = {}
        self._warned = set()
        self._step = 0
        self._checked_step = None  # the step of the latest check
        self._probes = None  # built lazily, when the logs carry no rates

    def _build_probes(self, model):
        """`[(prefix, cell, probe_model)]` for every hierarchical RNN."""
        rnns = [
            layer for layer in model._flatten_layers(include_self=False)
            if isinstance(layer, keras.layers.RNN) and find_hierarchical_cells(layer)
        ]
        if not rnns:
            raise ValueError(
                "BoundaryMonitor found no keras.layers.RNN running an HMLSTMCell "
                "or HMRNNCell in the model."
            )
        if self.probe is None:
            raise ValueError(
                "BoundaryMonitor needs `probe` (a batch of the model's inputs) "
                "unless the model's train_step logs z_rate_1, z_rate_2, ..."
            )
        try:
            inputs = model.inputs
        except (AttributeError, ValueError):
            inputs = None
        if not inputs:
            raise ValueError(
                "BoundaryMonitor(probe=...) needs a functional or Sequential "
                "model; a subclassed model must log z_rate_l from its train_step."
            )
        probes = []
        for rnn in rnns:
            output = rnn.output
            if isinstance(output, (list, tuple)):
                output = output[0]
            prefix = "" if len(rnns) == 1 else f"{rnn.name}_"
            probe_model = keras.Model(inputs[0] if len(inputs) == 1 else inputs, output)
            probes.append((prefix, find_hierarchical_cells(rnn)[0],
                           _cell_wrappers(rnn.cell), probe_model))
        return probes

    def _measure(self, logs):
        """`{log_name: rate}` of every boundary layer; NaN where the pass
        that gave them was not finite (a NaN state reads as z = 0)."""
        if logs and "z_rate_1" in logs:
            finite = math.isfinite(float(logs.get("loss", 0.0)))
            return {k: float(v) if finite else math.nan
                    for k, v in logs.items() if k.startswith("z_rate_")}
        # Reading `self.model` brings the trained weights back to the model
        # under JAX, where `fit` keeps them apart during an epoch.
        model = self.model
        if self._probes is None:
            self._probes = self._build_probes(model)
        rates = {}
        for prefix, cell, wrappers, probe_model in self._probes:
            outputs = probe_model(self.probe, training=False)
            for wrapper in wrappers:  # the wrapped cell's part of the output
                outputs = wrapper.cell_outputs(outputs)
            _, boundaries = cell.split_outputs(outputs)
            # `convert_to_numpy`: PyTorch's tensors refuse `np.asarray`.
            boundaries = keras.ops.convert_to_numpy(boundaries).astype(np.float64)
            per_layer = boundaries.reshape(-1, boundaries.shape[-1]).mean(axis=0)
            if not np.all(np.isfinite(keras.ops.convert_to_numpy(outputs))):
                # Step-mode boundaries of NaN pre-activations are 0: a
                # diverged model must not read as a collapse to 0.
                per_layer = np.full_like(per_layer, np.nan)
            for index, rate in enumerate(per_layer):
                rates[f"{prefix}z_rate_{index + 1}"] = float(rate)
        return rates

    def _check(self, rates, where):
        self._checked_step = self._step
        for name, rate in rates.items():
            if not math.isfinite(rate):
                continue
            state = "low" if rate < self.low else "high" if rate > self.high else None
            # Consecutive checks in the same collapsed state.
            previous_state, count = self._streaks.get(name, (None, 0))
            count = count + 1 if state is not None and state == previous_state else int(state is not None)
            self._streaks[name] = (state, count)
            if state is None:
                self._warned.discard(name)
                continue
            if count < self.patience or name in self._warned:
                continue
            self._warned.add(name)
            layer = int(name.rsplit("_", 1)[1])
            self.collapses.append((self._step, name, layer, rate))
            if state == "low":
                what = (f"fired on {rate:.4f} of the steps, below low={self.low}, "
                        f"for {self.patience} checks in a row, so the layers above "
                        "it barely update")
            else:
                what = (f"fired on {rate:.4f} of the steps, above high={self.high}, "
                        f"for {self.patience} checks in a row, so it is not "
                        "segmenting")
            message = (f"BoundaryMonitor at {where}: boundary layer {layer} "
                       f"({name}) {what}. {_ADVICE[state]}")
            if self.verbose:
                warnings.warn(message, BoundaryCollapseWarning, stacklevel=2)
            if self.stop_on_collapse:
                self.model.stop_training = True

    def on_train_batch_end(self, batch, logs=None):
        self._step += 1
        if self._step % self.interval:
            return
        rates = self._measure(logs)
        if logs is not None:
            logs.update(rates)
        self._check(rates, f"step {self._step}")

    def on_epoch_end(self, epoch, logs=None):
        rates = self._measure(logs)
        if logs is not None:
            logs.update(rates)
        if self._checked_step != self._step:  # else this step was checked
            self._check(rates, f"step {self._step} (end of epoch {epoch + 1})")
