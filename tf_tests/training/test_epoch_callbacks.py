"""Tests of hmkeras.training.epoch_summaries and epoch_progbar."""

import os

import keras
import numpy as np
import tensorflow as tf

from hmkeras.training.epoch_progbar import EpochProgbar
from hmkeras.training.epoch_summaries import EpochSummaries


def _scalars(log_dir):
    values = {}
    for name in os.listdir(log_dir):
        for event in tf.compat.v1.train.summary_iterator(os.path.join(log_dir, name)):
            for value in event.summary.value:
                values[(value.tag, event.step)] = float(tf.make_ndarray(value.tensor))
    return values


def test_summaries_write_every_epoch_when_asked(tmp_path):
    allowed = {"now": True}
    summaries = EpochSummaries(str(tmp_path), when=lambda: allowed["now"])
    summaries.on_epoch_end(0, {"bpc": 1.5, "batch_bpc": 9.0, "val_bpc": 1.25})
    allowed["now"] = False
    summaries.on_epoch_end(1, {"bpc": 7.0})
    summaries.on_epoch_end(2, {})
    assert _scalars(str(tmp_path)) == {("epoch_bpc", 1): 1.5, ("epoch_val_bpc", 1): 1.25}


def test_progbar_prints_no_epoch_line(capsys):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")

    class StopAfterTwo(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 1:
                self.model.stop_training = True

    model.fit(np.ones((8, 2)), np.ones((8, 1)), batch_size=1, epochs=3, initial_epoch=2,
              verbose=1, callbacks=[StopAfterTwo(), EpochProgbar()])
    out = capsys.readouterr().out
    assert "Epoch" not in out and "2/8" in out and "3/8" not in out
