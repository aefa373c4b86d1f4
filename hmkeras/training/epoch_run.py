"""A resumable training run of whole epochs, with early stopping.

`train_epochs` trains a compiled Keras model one `fit` per epoch, the way
Salton & Kelleher (2018, Sec. 6.1 and 6.2) train their word language
models and Chung et al. (2017, Sec. 4.2) their handwriting model:

1. the epoch's learning rate is set (`EpochSchedule.learning_rate_at`: the
   full rate for `decay_after` epochs, then divided by `lr_decay` at every
   further epoch);
2. `fit` trains one epoch on the data (a callable `epoch -> data` gives
   each epoch its own order, e.g. reshuffled with a seed);
3. at the epoch's end `validate(model)`'s logs and the learning rate join
   the epoch's logs, before the other callbacks see them (e.g.
   `EpochSummaries` writes them);
4. with a `monitor`, a log to minimize (e.g. `"val_perplexity"`), the best
   epoch's weights go to `checkpoints/best.weights.h5`, and `patience`
   epochs in a row without a better value stop the run ("until we do not
   get any perplexity improvements over the validation set with an early
   stop counter of 10 epochs", Sec. 6.1); the best weights are loaded at
   the end;
5. a `TrainingCheckpoint` in `output_dir/checkpoints/` keeps the weights,
   the optimizer, the random state and the progress (epoch, best value,
   epochs without improvement, every epoch's logs), from which a rerun
   resumes at the next epoch.

A non-finite training loss (any batch) or weight (any epoch's end) stops
the run before anything of that epoch is validated or saved: the returned
progress says where (`progress["non_finite"]`), and the last good
checkpoint is kept.
"""

import dataclasses
import math
import os
import time

import keras

from hmkeras import argument_checks
from hmkeras import tensorflow_features
from hmkeras.training.epoch_progbar import EpochProgbar
from hmkeras.training.training_state import TrainingCheckpoint
from hmkeras.training.truncated_bptt_run import all_finite

if tensorflow_features.available():  # a tf.data.Dataset needs TensorFlow
    from hmkeras.data.pipeline import without_autotuning

BEST_WEIGHTS = "best.weights.h5"


@dataclasses.dataclass
class EpochSchedule:
    """How `train_epochs` trains.

    Attributes:
        max_epochs: Epochs in all (a resumed run counts the earlier ones).
        learning_rate: The optimizer's rate for the first `decay_after`
            epochs.
        lr_decay: The divisor of the rate at every later epoch (>= 1; 1:
            a constant rate).
        decay_after: Epochs at the full rate.
        monitor: The name of the epoch log to minimize (a key of
            `validate`'s logs, or of `fit`'s, e.g. `"loss"`); None: no
            best weights, no early stopping.
        patience: Stop after this many epochs in a row without a better
            `monitor` value (0: never stop early).
        verbose: Keras verbosity of `fit` (0, 1 or 2); with a `monitor`,
            its value is printed after every epoch either way.

    Examples:

        >>> from hmkeras.training.epoch_run import EpochSchedule
        >>> schedule = EpochSchedule(max_epochs=6, learning_rate=0.1, lr_decay=2.0,
        ...                          decay_after=2)
        >>> [schedule.learning_rate_at(epoch) for epoch in range(4)]  # 0-based epochs
        [0.1, 0.1, 0.05, 0.025]
    """

    max_epochs: int
    learning_rate: float
    lr_decay: float = 1.0
    decay_after: int = 0
    monitor: str = None
    patience: int = 0
    verbose: int = 1

    def __post_init__(self):
        self.max_epochs = argument_checks.check_positive_int("max_epochs", self.max_epochs)
        self.learning_rate = argument_checks.check_float(
            "learning_rate", self.learning_rate, minimum=0, exclusive_minimum=True)
        self.lr_decay = argument_checks.check_float("lr_decay", self.lr_decay, minimum=1)
        self.decay_after = argument_checks.check_int("decay_after", self.decay_after,
                                                     minimum=0)
        if self.monitor is not None and (not isinstance(self.monitor, str)
                                         or not self.monitor):
            raise ValueError("`monitor` must be None or the name of an epoch log, "
                             f"e.g. 'val_loss'. Received: monitor={self.monitor!r}")
        self.patience = argument_checks.check_int("patience", self.patience, minimum=0)
        if self.patience and self.monitor is None:
            raise ValueError("`patience` needs a `monitor` (the log it watches). "
                             f"Received: patience={self.patience}, monitor=None")
        self.verbose = argument_checks.check_int("verbose", self.verbose, minimum=0,
                                                 maximum=2)

    def learning_rate_at(self, epoch):
        """The learning rate of `epoch` (0-based): `learning_rate` for the
        first `decay_after` epochs, then divided by `lr_decay` once more at
        every epoch (Salton & Kelleher Sec. 6.1: 1.0 "halved ... at each
        epoch after 12 epochs"; Sec. 6.2: divided by 1.15 after 14).

        Examples:

            >>> schedule = EpochSchedule(max_epochs=15, learning_rate=1.0, lr_decay=2.0,
            ...                          decay_after=12)
            >>> [schedule.learning_rate_at(epoch) for epoch in (0, 11, 12, 13)]
            [1.0, 1.0, 0.5, 0.25]
        """
        return self.learning_rate / self.lr_decay ** max(0, epoch + 1 - self.decay_after)


class _NonFinite(Exception):
    """Raised out of `fit` by `_EpochEnd`; its message says what was not finite."""


class _EpochEnd(keras.callbacks.Callback):
    """Stops on a non-finite loss (after every batch) or weight (at the
    epoch's end); adds the learning rate and `validate`'s logs to the
    epoch's logs (first in the callbacks, so the others see them)."""

    def __init__(self, validate):
        super().__init__()
        self.validate = validate

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            raise _NonFinite(f"the training loss is {float(loss)}")

    def on_epoch_end(self, epoch, logs=None):
        optimizer = self.model.optimizer
        if not all_finite(self.model.variables + optimizer.variables):
            raise _NonFinite("a weight is not finite")
        if logs is None:
            return
        logs["learning_rate"] = float(keras.ops.convert_to_numpy(optimizer.learning_rate))
        if self.validate is not None:
            logs.update(self.validate(self.model))


def _epoch_data(data, epoch):
    """What `fit` trains on in `epoch`: a `tf.data.Dataset` without
    autotuning (`hmkeras.data.pipeline.without_autotuning`: with it, the
    iterator that ends with each epoch's `fit` can hold `fit` for seconds)."""
    data = data(epoch) if callable(data) else data
    if hasattr(data, "with_options"):  # a tf.data.Dataset
        data = without_autotuning(data)
    return data


def _restore(model, checkpoint, schedule):
    """The progress of the run in `checkpoint` (restored into `model`), or
    that of a new run."""
    progress = {"epoch": 0, "bad_epochs": 0, "done": False, "history": []}
    if schedule.monitor is not None:
        progress[f"best_{schedule.monitor}"] = None
    restored = checkpoint.restore(model)
    if restored is not None:
        print(f"Resuming from {checkpoint.path}: epoch {restored['epoch'] + 1}.")
        progress.update(restored)
    return progress


def _keep_best(model, schedule, progress, logs, best_path):
    """Saves the weights of a better epoch; counts the others, and stops
    (`progress["done"]`) after `patience` of them in a row."""
    if schedule.monitor is None:
        return
    if schedule.monitor not in logs:
        raise ValueError(f"`monitor` must name one of the epoch's logs {sorted(logs)}. "
                         f"Received: monitor={schedule.monitor!r}")
    value, key = logs[schedule.monitor], f"best_{schedule.monitor}"
    if math.isfinite(value) and (progress[key] is None or value < progress[key]):
        progress[key], progress["bad_epochs"] = value, 0
        model.save_weights(best_path)
    else:  # a NaN validation value is never the best
        progress["bad_epochs"] += 1
    best = "none" if progress[key] is None else f"{progress[key]:.4g}"
    print(f"  {schedule.monitor} {value:.4g} (best {best})")
    if schedule.patience and progress["bad_epochs"] >= schedule.patience:
        print("Early stopping.")
        progress["done"] = True


def train_epochs(model, data, schedule, output_dir, validate=None, callbacks=()):
    """Trains (or resumes) `model` in `output_dir`; returns the progress dict.

    Args:
        model: A compiled `keras.Model` whose optimizer's learning rate is
            a variable (not a schedule).
        data: What `fit` trains on for one epoch (a `tf.data.Dataset`, a
            `keras.utils.PyDataset`), or a callable `epoch -> it` (the
            0-based epoch). `fit` does not shuffle it; a `tf.data.Dataset`
            trains without autotuning (`hmkeras.data.pipeline.without_autotuning`).
        schedule: An `EpochSchedule`.
        output_dir: The run directory; the checkpoints go to its
            `checkpoints/`.
        validate: None, or `validate(model) -> {name: value}`, called at
            every epoch's end; the logs join the epoch's logs.
        callbacks: More Keras callbacks for every `fit` (they see the
            validation logs at the epoch's end).

    Returns:
        The progress dict: `epoch` (epochs done), `done` (stopped early),
        `bad_epochs`, `history` (per epoch: `epoch` (1-based), `fit`'s
        logs, `learning_rate`, `validate`'s logs, `seconds` of the epoch
        with its validation); with a `monitor`, `best_<monitor>`. After a
        non-finite loss or weight: `non_finite`, `(step, what,
        saved_step)` (`saved_step`: the step of the last good checkpoint,
        None without one), and `checkpoint_path`, where that checkpoint
        is; the model then holds the non-finite state.

    Examples:

        >>> import tempfile, keras, numpy as np, tensorflow as tf
        >>> from hmkeras.training.epoch_run import EpochSchedule, train_epochs
        >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        >>> model.compile(keras.optimizers.SGD(), "mse")
        >>> data = tf.data.Dataset.from_tensor_slices((np.ones((8, 2)), np.ones((8, 1))))
        >>> scores = iter([3.0, 2.0, 2.5, 2.5])
        >>> schedule = EpochSchedule(max_epochs=6, learning_rate=0.1, lr_decay=2.0,
        ...                          decay_after=2, monitor="val_score", patience=2, verbose=0)
        >>> progress = train_epochs(model, data.batch(4), schedule, tempfile.mkdtemp(),
        ...                         validate=lambda model: {"val_score": next(scores)})
        Epoch 1/6: learning rate 0.1
          val_score 3 (best 3)
        Epoch 2/6: learning rate 0.1
          val_score 2 (best 2)
        Epoch 3/6: learning rate 0.05
          val_score 2.5 (best 2)
        Epoch 4/6: learning rate 0.025
          val_score 2.5 (best 2)
        Early stopping.
        >>> progress["epoch"], progress["best_val_score"], progress["done"]
        (4, 2.0, True)
    """
    checkpoint = TrainingCheckpoint(os.path.join(output_dir, "checkpoints"))
    best_path = os.path.join(checkpoint.directory, BEST_WEIGHTS)
    os.makedirs(checkpoint.directory, exist_ok=True)
    progress = _restore(model, checkpoint, schedule)
    saved_step = _step(model) if checkpoint.exists() else None
    callbacks = [_EpochEnd(validate), *callbacks]
    if schedule.verbose:
        callbacks.append(EpochProgbar())  # no misleading "Epoch 1/1" of Keras
    while not progress["done"] and progress["epoch"] < schedule.max_epochs:
        epoch = progress["epoch"]
        rate = schedule.learning_rate_at(epoch)
        model.optimizer.learning_rate.assign(rate)
        print(f"Epoch {epoch + 1}/{schedule.max_epochs}: learning rate {rate:.4g}")
        started = time.time()
        try:
            history = model.fit(_epoch_data(data, epoch), epochs=epoch + 1,
                                initial_epoch=epoch, callbacks=callbacks,
                                verbose=schedule.verbose, shuffle=False)
        except _NonFinite as stop:
            progress["non_finite"] = (_step(model), str(stop), saved_step)
            progress["checkpoint_path"] = checkpoint.path
            return progress
        logs = {name: float(values[-1]) for name, values in history.history.items()}
        progress["history"].append({"epoch": epoch + 1, **logs,
                                    "seconds": time.time() - started})
        _keep_best(model, schedule, progress, logs, best_path)
        progress["epoch"] = epoch + 1
        checkpoint.save(model, progress)
        saved_step = _step(model)
    if schedule.monitor is not None and os.path.exists(best_path):
        model.load_weights(best_path)
    return progress


def _step(model):
    return int(keras.ops.convert_to_numpy(model.optimizer.iterations))
