"""Resumable training checkpoints: weights, optimizer, data position, state.

A checkpoint is a directory with

* `model.weights.h5` (Keras' `save_weights`): every weight of the training
  model, i.e. the parameters, the hard-sigmoid slope of a hierarchical cell
  (a non-trainable weight) and the RNN state carried across truncated-BPTT
  batches (`hmkeras.training.stateful_training.TruncatedBPTTModel.carried_state`),
  and the optimizer's variables (iteration count, learning rate, Adam
  moments);
* `random_state.npz`: the model's variables that are not weights, i.e.
  the states of its `keras.random.SeedGenerator`s (dropout masks, sampled
  boundaries), so a resumed run draws the same random numbers;
* `progress.json`: the data position (`epoch`, `batch` = batches of that
  epoch already trained on) and whatever else the trainer keeps there
  (best validation loss, epochs without improvement, ...).

`save` writes the new checkpoint to `latest.tmp` (its files flushed to
disk), moves the previous one to `latest.old`, renames `latest.tmp` to
`latest` and only then deletes `latest.old`. A save killed at any point
(even between the two renames, when `latest` is briefly missing) leaves a
complete checkpoint to resume from: `latest`, or else `latest.old`, which
the readers fall back on and the next `save` moves back first. A
half-written `latest.tmp` is never read. `restore` returns the progress
dict (or None when there is no checkpoint).
"""

import json
import os
import shutil

import h5py
import numpy as np

_WEIGHTS = "model.weights.h5"
_RANDOM_STATE = "random_state.npz"
_PROGRESS = "progress.json"


class TrainingCheckpoint:
    """One resumable checkpoint kept in `directory/latest`.

    Args:
        directory: Where the checkpoint lives (created when saving): a
            non-empty `str` or `os.PathLike`.

    Examples:

        >>> import keras, numpy as np, tempfile
        >>> from hmkeras.training import TrainingCheckpoint
        >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        >>> model.compile(keras.optimizers.Adam(0.1), "mse")
        >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), verbose=0)
        >>> ckpt = TrainingCheckpoint(tempfile.mkdtemp())
        >>> ckpt.save(model, {"epoch": 1, "batch": 0})
        >>> clone = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        >>> clone.compile(keras.optimizers.Adam(0.1), "mse")
        >>> ckpt.restore(clone)["epoch"]
        1
        >>> int(clone.optimizer.iterations.numpy())
        1
    """

    def __init__(self, directory):
        try:
            self.directory = os.fspath(directory)
        except TypeError:
            self.directory = None
        if not isinstance(self.directory, str) or not self.directory:
            raise ValueError(
                "`directory` must be a non-empty path (a str or os.PathLike). "
                f"Received: directory={directory!r}"
            )
        self.path = os.path.join(self.directory, "latest")

    def _complete(self):
        """The directory of the newest complete checkpoint, or None.

        Only whole directories are ever renamed to `latest` / `latest.old`,
        so one holding `progress.json` (written last) is complete. `latest`
        is missing only after a save was killed between its two renames;
        `latest.old` is then the previous checkpoint, still whole.
        """
        for path in (self.path, self.path + ".old"):
            if os.path.exists(os.path.join(path, _PROGRESS)):
                return path
        return None

    def exists(self):
        return self._complete() is not None

    def save(self, model, progress):
        """Saves `model` (weights and optimizer) and the `progress` dict."""
        os.makedirs(self.directory, exist_ok=True)
        previous = self.path + ".old"
        if self._complete() == previous:
            # The last save was killed between its renames: finish it backwards
            # (`latest.old` back to `latest`) before `latest.old` is reused.
            os.replace(previous, self.path)
        temporary = self.path + ".tmp"
        shutil.rmtree(temporary, ignore_errors=True)
        os.makedirs(temporary)
        model.save_weights(os.path.join(temporary, _WEIGHTS))
        _save_values(os.path.join(temporary, _RANDOM_STATE), _random_state(model))
        with open(os.path.join(temporary, _PROGRESS), "w") as f:
            json.dump(progress, f, indent=2, sort_keys=True)
        _flush_to_disk(temporary)  # the files are whole before any rename
        shutil.rmtree(previous, ignore_errors=True)
        if os.path.exists(self.path):
            os.replace(self.path, previous)
        os.replace(temporary, self.path)
        _flush_to_disk(self.directory)
        shutil.rmtree(previous, ignore_errors=True)

    def progress(self):
        """The saved progress dict, or None."""
        path = self._complete()
        if path is None:
            return None
        with open(os.path.join(path, _PROGRESS)) as f:
            return json.load(f)

    def restore(self, model):
        """Restores `model` and its (compiled) optimizer; returns the progress.

        Returns None, and changes nothing, when there is no checkpoint.
        """
        path = self._complete()
        if path is None:
            return None
        optimizer = model.optimizer
        if not optimizer.built:  # Keras skips the state of an unbuilt optimizer
            optimizer.build(model.trainable_variables)
        weights = os.path.join(path, _WEIGHTS)
        # Keras only warns when the optimizer's variables do not match the
        # saved ones and then skips them: refuse instead.
        with h5py.File(weights, "r") as saved:
            saved_count = len(saved["optimizer/vars"]) if "optimizer/vars" in saved else 0
        if saved_count != len(optimizer.variables):
            raise ValueError(
                f"The checkpoint {weights} holds {saved_count} optimizer "
                f"variables but the optimizer has {len(optimizer.variables)}: "
                "it was written by a different model or optimizer."
            )
        model.load_weights(weights)
        random_state = os.path.join(path, _RANDOM_STATE)
        if os.path.exists(random_state):
            _restore_values(random_state, _random_state(model), "random-state")
        with open(os.path.join(path, _PROGRESS)) as f:
            return json.load(f)


def _flush_to_disk(directory):
    """fsyncs the files of `directory` and the directory itself (its
    entries), so a rename that follows never points at unwritten data."""
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                os.fsync(f.fileno())
    try:
        handle = os.open(directory, os.O_RDONLY)
    except OSError:  # platforms without directory handles (Windows)
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)


def _random_state(model):
    """The model's variables that are not weights (seed-generator states)."""
    weights = {id(w) for w in model.weights}
    return [v for v in model.variables if id(v) not in weights]


def _save_values(path, variables):
    np.savez(path, **{f"v{i:05d}": np.asarray(v.numpy()) for i, v in enumerate(variables)})


def _restore_values(path, variables, what):
    with np.load(path) as saved:
        values = [saved[key] for key in sorted(saved.files)]
    if len(values) != len(variables):
        raise ValueError(
            f"The checkpoint file {path} holds {len(values)} {what} variables "
            f"but the model has {len(variables)}: it was written by a "
            "different model or optimizer."
        )
    for variable, value in zip(variables, values):
        variable.assign(value)
