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

`save` writes to a temporary directory and renames it, so an interrupted
save never leaves a half-written checkpoint; `restore` returns the
progress dict (or None when there is no checkpoint).

Example:

>>> import keras, numpy as np, tempfile
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

    def exists(self):
        return os.path.exists(os.path.join(self.path, _PROGRESS))

    def save(self, model, progress):
        """Saves `model` (weights and optimizer) and the `progress` dict."""
        os.makedirs(self.directory, exist_ok=True)
        temporary = self.path + ".tmp"
        shutil.rmtree(temporary, ignore_errors=True)
        os.makedirs(temporary)
        model.save_weights(os.path.join(temporary, _WEIGHTS))
        _save_values(os.path.join(temporary, _RANDOM_STATE), _random_state(model))
        with open(os.path.join(temporary, _PROGRESS), "w") as f:
            json.dump(progress, f, indent=2, sort_keys=True)
        previous = self.path + ".old"
        shutil.rmtree(previous, ignore_errors=True)
        if os.path.exists(self.path):
            os.replace(self.path, previous)
        os.replace(temporary, self.path)
        shutil.rmtree(previous, ignore_errors=True)

    def progress(self):
        """The saved progress dict, or None."""
        if not self.exists():
            return None
        with open(os.path.join(self.path, _PROGRESS)) as f:
            return json.load(f)

    def restore(self, model):
        """Restores `model` and its (compiled) optimizer; returns the progress.

        Returns None, and changes nothing, when there is no checkpoint.
        """
        if not self.exists():
            return None
        optimizer = model.optimizer
        if not optimizer.built:  # Keras skips the state of an unbuilt optimizer
            optimizer.build(model.trainable_variables)
        weights = os.path.join(self.path, _WEIGHTS)
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
        random_state = os.path.join(self.path, _RANDOM_STATE)
        if os.path.exists(random_state):
            _restore_values(random_state, _random_state(model), "random-state")
        return self.progress()


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
