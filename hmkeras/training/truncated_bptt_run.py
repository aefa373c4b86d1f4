"""A resumable truncated-BPTT training run of a `CharLanguageModel`.

`train_truncated_bptt` trains (or resumes) a character language model the
way Chung et al. (Sec. 4.1) do: windows of `seq_len` symbols, the RNN state
(boundaries included) carried from batch to batch and reset at every epoch
start, Adam with global gradient-norm clipping, the learning rate divided
by `lr_divisor` when the validation loss stops improving, early stopping
and slope annealing `min(slope_max, slope + slope_rate * epoch)`. One `fit`
per epoch; its run directory gets

* `checkpoints/` (`TrainingCheckpoint`: weights, optimizer, slope, epoch,
  the position inside the epoch and the carried state, every `save_every`
  steps and every epoch; `best.weights.h5`, the best validation epoch's),
* `steps.jsonl` (one line per step: step, epoch, batch, training BPC),
* `logs/` (TensorBoard: every epoch's logs, `EpochSummaries`).

A rerun resumes from the checkpoint; `max_steps` interrupts a run (rerun
to go on); a non-finite loss, or a non-finite weight where a checkpoint is
due, stops it before anything is saved: the last good checkpoint is kept
and the returned progress says where (`progress["non_finite"]`).

Examples:

    >>> import tempfile, numpy as np
    >>> from hmkeras.models.char_language_model import CharLanguageModel
    >>> from hmkeras.models.char_language_model import CharLanguageModelConfig
    >>> lm = CharLanguageModel(CharLanguageModelConfig(
    ...     vocab_size=5, cell="lstm", units=4, embedding_dim=3, output="none"))
    >>> ids = np.arange(200) % 5
    >>> schedule = TrainingSchedule(batch_size=2, seq_len=10, max_epochs=1, verbose=0)
    >>> progress = train_truncated_bptt(
    ...     lm, ids, schedule, tempfile.mkdtemp(), validate=lambda lm: {"val_bpc": 1.0})
    Epoch 1/1: 9 steps
    >>> progress["epoch"], progress["best_val_bpc"]
    (1, 1.0)
"""

import dataclasses
import json
import math
import os

import keras
import numpy as np

from hmkeras.data.pipeline import TruncatedBPTTBatches
from hmkeras.training.boundary_monitor import BoundaryMonitor
from hmkeras.training.epoch_progbar import EpochProgbar
from hmkeras.training.epoch_summaries import EpochSummaries
from hmkeras.training.run_directory import RunClock
from hmkeras.training.slope_annealing import SlopeAnnealing
from hmkeras.training.stateful_training import TruncatedBPTTModel
from hmkeras.training.training_state import TrainingCheckpoint


@dataclasses.dataclass
class TrainingSchedule:
    """How `train_truncated_bptt` trains; the names are those of the flags
    of `examples/ptb_char.py`, whose messages name them as `--name`.

    Attributes:
        batch_size: Rows of every training batch.
        seq_len: The truncated-BPTT window.
        learning_rate: Adam's learning rate.
        clip_norm: Global gradient-norm clipping threshold.
        lr_schedule: Divide the learning rate when validation stalls.
        lr_divisor: The factor of that division (Chung et al.: 50).
        max_lr_divisions: Divisions before early stopping can stop.
        patience: Epochs without improvement before stopping.
        max_epochs: Upper bound of epochs.
        max_steps: Interrupt the run after this many steps in total (0: no
            limit); a rerun resumes it.
        save_every: Checkpoint every N steps (and every epoch).
        slope_schedule: Anneal the slope of a hierarchical cell,
            `min(slope_max, slope + slope_rate * epoch)`.
        slope, slope_rate, slope_max: That schedule.
        monitor_interval: `BoundaryMonitor`'s interval in steps.
        stop_on_collapse: Stop when a boundary layer collapses.
        verbose: Keras verbosity (0, 1 or 2).
    """

    batch_size: int = 64
    seq_len: int = 100
    learning_rate: float = 0.002
    clip_norm: float = 1.0
    lr_schedule: bool = True
    lr_divisor: float = 50.0
    max_lr_divisions: int = 2
    patience: int = 2
    max_epochs: int = 100
    max_steps: int = 0
    save_every: int = 200
    slope_schedule: bool = True
    slope: float = 1.0
    slope_rate: float = 0.04
    slope_max: float = 5.0
    monitor_interval: int = 100
    stop_on_collapse: bool = False
    verbose: int = 1

    @classmethod
    def from_settings(cls, settings):
        """The schedule of a run's settings (any object with those
        attributes; others are ignored)."""
        return cls(**{field.name: getattr(settings, field.name)
                      for field in dataclasses.fields(cls)})


def all_finite(variables):
    """Whether every float variable in `variables` holds finite values only.

    Examples:

        >>> import keras
        >>> all_finite([keras.Variable([1.0, 2.0])]), all_finite([keras.Variable([np.nan])])
        (True, False)
    """
    return all(np.all(np.isfinite(keras.ops.convert_to_numpy(v))) for v in variables
               if np.issubdtype(np.dtype(v.dtype), np.floating))


class _Progress(keras.callbacks.Callback):
    """Counts batches, writes steps.jsonl, checkpoints, honours max_steps.

    The loop sets `interrupted` before each `fit` whose steps end before the
    epoch does (`max_steps`): that epoch gets no validation or summary. A
    non-finite loss, or a non-finite weight where a checkpoint is due,
    stops the run before anything is saved (`progress["non_finite"]`).
    """

    def __init__(self, trainer, checkpoint, progress, schedule, steps_path, clock):
        super().__init__()
        self.trainer, self.checkpoint, self.progress = trainer, checkpoint, progress
        self.schedule, self.steps_path, self.clock = schedule, steps_path, clock
        self.interrupted = False
        self.saved_step = (int(trainer.optimizer.iterations.numpy())
                           if checkpoint.exists() else None)

    def on_train_begin(self, logs=None):
        self.first_step = int(keras.ops.convert_to_numpy(self.trainer.optimizer.iterations))

    def on_train_batch_end(self, batch, logs=None):
        progress, schedule = self.progress, self.schedule
        # This fit's batches counted from its first step: under JAX the
        # optimizer's step counter is brought back only with the weights.
        step = self.first_step + batch + 1
        bpc = float(logs["batch_bpc"])
        if not math.isfinite(bpc):
            return self._stop_non_finite(step, f"the training loss is {bpc}")
        progress["batch"] += 1
        # The epoch's BPC over all its batches, across resumptions (None:
        # resumed from a checkpoint that did not keep the sum).
        if progress.get("epoch_bpc_sum", 0.0) is not None:
            progress["epoch_bpc_sum"] = progress.get("epoch_bpc_sum", 0.0) + bpc
        with open(self.steps_path, "a") as f:
            f.write(json.dumps({"step": step, "epoch": progress["epoch"],
                                "batch": progress["batch"], "bpc": bpc}) + "\n")
        stop = self.interrupted and schedule.max_steps and step >= schedule.max_steps
        if stop or step % schedule.save_every == 0:
            trainer = self.model  # under JAX, reading it brings the weights back
            if not all_finite(trainer.variables + trainer.optimizer.variables):
                return self._stop_non_finite(step, "a weight is not finite")
            progress["seconds"] = self.clock.total()
            self.checkpoint.save(trainer, progress)
            self.saved_step = step
        if stop:
            self.trainer.stop_training = True

    def on_epoch_end(self, epoch, logs=None):
        # Keras' `bpc` is the mean over this fit's batches only; a resumed
        # epoch logs the mean over all of its batches.
        total = self.progress.get("epoch_bpc_sum")
        if logs is not None and self.progress["batch"] and total is not None:
            logs["bpc"] = total / self.progress["batch"]

    def _stop_non_finite(self, step, what):
        self.progress["non_finite"] = (step, what, self.saved_step)
        self.interrupted = True  # no validation, summary or checkpoint
        self.trainer.stop_training = True


class _Validation(keras.callbacks.Callback):
    """`validate(lm)`'s logs (its `val_bpc` first) and the learning rate."""

    def __init__(self, lm, trainer, validate, progress_callback):
        super().__init__()
        self.lm, self.trainer, self.validate = lm, trainer, validate
        self.progress_callback = progress_callback

    def on_epoch_end(self, epoch, logs=None):
        if self.progress_callback.interrupted or logs is None:
            return
        found = dict(self.validate(self.lm))
        logs["val_bpc"] = found.pop("val_bpc")
        logs["learning_rate"] = float(self.trainer.optimizer.learning_rate.numpy())
        logs.update(found)


def epoch_header(schedule, epoch, start, steps, num_batches):
    """`Epoch 2/6: 94 steps`, or which batches this `fit` trains, and why.

    Examples:

        >>> epoch_header(TrainingSchedule(max_epochs=6, max_steps=50), 1, 10, 40, 94)
        'Epoch 2/6: batches 11-50 of 94 (40 steps, resumed, then --max_steps=50 stops the run)'
    """
    line = f"Epoch {epoch + 1}/{schedule.max_epochs}: "
    if steps == 0:
        return line + f"all {num_batches} batches trained; validation"
    if start == 0 and steps == num_batches:
        return line + f"{steps} steps"
    notes = [f"{steps} steps"] + (["resumed"] if start else [])
    if start + steps < num_batches:
        notes.append(f"then --max_steps={schedule.max_steps} stops the run")
    return line + f"batches {start + 1}-{start + steps} of {num_batches} ({', '.join(notes)})"


def _stopped(schedule, progress, step):
    print(f"Stopped at step {step} (--max_steps={schedule.max_steps}); rerun with a "
          "larger --max_steps (0: no limit) to go on.")
    progress["interrupted"] = True
    return progress


def train_truncated_bptt(lm, train_ids, schedule, output_dir, validate, changed=(),
                         clock=None):
    """Trains (or resumes) `lm` in `output_dir`; returns the progress dict.

    Args:
        lm: A `CharLanguageModel`.
        train_ids: The training text's symbol ids (1-D).
        schedule: A `TrainingSchedule`.
        output_dir: The run directory (checkpoints/, steps.jsonl, logs/).
        validate: `validate(lm) -> {"val_bpc": ..., more logs}`, called at
            every epoch's end; `val_bpc` drives the schedule.
        changed: Names of settings changed since the resumed run; a changed
            `learning_rate` replaces the checkpoint's rate (divided as often
            as the run has divided it).
        clock: The run's `RunClock` (`RunClock.of_run`); it resumes from
            the seconds saved with the checkpoint.

    Returns:
        The progress dict: `epoch`, `best_val_bpc`, `done` (stopped early),
        `history` (every epoch's logs); `interrupted` (by `max_steps`); and
        after a non-finite loss or weight `non_finite`, `(step, what,
        saved_step)`, with `checkpoint_path`, the last good checkpoint.
        The best validation epoch's weights are loaded into `lm` at the end
        of a run that was not interrupted.
    """
    clock = clock or RunClock()
    batches = TruncatedBPTTBatches(train_ids, schedule.batch_size, schedule.seq_len)
    trainer = TruncatedBPTTModel(lm, schedule.batch_size)
    trainer.compile(
        keras.optimizers.Adam(schedule.learning_rate, global_clipnorm=schedule.clip_norm),
        loss=trainer.loss_function(),
    )
    checkpoint = TrainingCheckpoint(os.path.join(output_dir, "checkpoints"))
    best_path = os.path.join(output_dir, "checkpoints", "best.weights.h5")
    os.makedirs(checkpoint.directory, exist_ok=True)
    progress = checkpoint.restore(trainer)
    if progress is None:
        progress = {"epoch": 0, "batch": 0, "best_val_bpc": None, "bad_epochs": 0,
                    "lr_divisions": 0, "done": False, "history": []}
    else:
        print(f"Resuming from {checkpoint.path}: epoch {progress['epoch'] + 1}, "
              f"batch {progress['batch']}, step "
              f"{int(trainer.optimizer.iterations.numpy())}.")
        if "learning_rate" in changed:
            divisions = progress["lr_divisions"]
            lr = schedule.learning_rate / schedule.lr_divisor ** divisions
            trainer.optimizer.learning_rate.assign(lr)
            print(f"Learning rate now {lr:.3g} (--learning_rate={schedule.learning_rate:g}"
                  + (f", divided {divisions} time(s) by --lr_divisor)." if divisions
                     else ")."))
    clock.resume_from(progress.get("seconds", 0.0))
    if progress["batch"] and "epoch_bpc_sum" not in progress:
        progress["epoch_bpc_sum"] = None  # a checkpoint older than the sum
    counter = _Progress(trainer, checkpoint, progress, schedule,
                        os.path.join(output_dir, "steps.jsonl"), clock)
    validation = _Validation(lm, trainer, validate, counter)
    callbacks = [counter, validation]
    if lm.is_hierarchical:
        # Per-layer z rates of the training batches in the logs, and a
        # warning naming a collapsed layer.
        callbacks.insert(1, BoundaryMonitor(interval=schedule.monitor_interval,
                                            stop_on_collapse=schedule.stop_on_collapse))
    if lm.is_hierarchical and schedule.slope_schedule:
        first, rate, top = schedule.slope, schedule.slope_rate, schedule.slope_max
        # Chung et al. Sec. 4.1: a = min(5, 1 + 0.04 * epoch).
        callbacks.insert(1, SlopeAnnealing(lambda epoch: min(top, first + rate * epoch)))
    summaries = EpochSummaries(os.path.join(output_dir, "logs"),
                               when=lambda: not counter.interrupted)
    callbacks.append(summaries)
    if schedule.verbose:
        callbacks.append(EpochProgbar())
    while not progress["done"] and progress["epoch"] < schedule.max_epochs:
        epoch = progress["epoch"]
        start = progress["batch"] = min(progress["batch"], batches.num_batches)
        step = int(trainer.optimizer.iterations.numpy())
        if schedule.max_steps and step >= schedule.max_steps:
            return _stopped(schedule, progress, step)
        if start == 0:
            trainer.reset_carried_state()  # a new epoch starts from zero state
        steps = batches.num_batches - start
        if schedule.max_steps:
            steps = min(steps, schedule.max_steps - step)
        counter.interrupted = start + steps < batches.num_batches
        print(epoch_header(schedule, epoch, start, steps, batches.num_batches))
        if steps == 0:
            # Every batch was trained before (a checkpoint saved between
            # the epoch's last batch and its end): validation and
            # summaries, without `fit`.
            logs = {}
            for callback in (counter, validation, summaries):
                callback.on_epoch_end(epoch, logs)
        else:
            history = trainer.fit(
                batches.dataset(start_batch=start), epochs=epoch + 1,
                initial_epoch=epoch, steps_per_epoch=steps, callbacks=callbacks,
                verbose=schedule.verbose, shuffle=False,
            )
            logs = {k: float(v[-1]) for k, v in history.history.items()}
            if trainer.stop_training and not counter.interrupted:
                # BoundaryMonitor(stop_on_collapse=True) ended the epoch early.
                print("A boundary layer collapsed (--stop_on_collapse): training stops.")
                progress["done"] = True
        if progress.get("non_finite"):
            progress["checkpoint_path"] = checkpoint.path
            return progress
        if counter.interrupted:
            return _stopped(schedule, progress, schedule.max_steps)
        progress["history"].append(logs)
        val = logs["val_bpc"]
        if progress["best_val_bpc"] is None or val < progress["best_val_bpc"]:
            progress["best_val_bpc"], progress["bad_epochs"] = val, 0
            lm.network.save_weights(best_path)
        else:
            progress["bad_epochs"] += 1
            if schedule.lr_schedule and progress["lr_divisions"] < schedule.max_lr_divisions:
                # Chung et al.: divide the learning rate by 50 when the
                # validation NLL stops decreasing.
                lr = trainer.optimizer.learning_rate
                lr.assign(lr.numpy() / schedule.lr_divisor)
                progress["lr_divisions"] += 1
                progress["bad_epochs"] = 0
                print(f"Validation stalled: learning rate now {float(lr.numpy()):.3g}.")
            elif progress["bad_epochs"] >= schedule.patience:
                print("Early stopping.")
                progress["done"] = True
        progress["epoch"], progress["batch"] = epoch + 1, 0
        progress["epoch_bpc_sum"], progress["seconds"] = 0.0, clock.total()
        checkpoint.save(trainer, progress)
    progress["interrupted"] = False
    if os.path.exists(best_path):
        lm.network.load_weights(best_path)
    return progress
