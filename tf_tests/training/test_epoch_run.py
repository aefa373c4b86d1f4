"""Tests of hmkeras.training.epoch_run (a resumable run of whole epochs).

Tiny Keras models; the expectations are computed independently: plain
SGD and its learning rates in NumPy, the early-stopping epoch by hand, an
uninterrupted run for a resumed one. The whole-script runs
(examples/ptb_word.py, examples/iam_ondb.py) are in tf_tests/examples/.
"""

import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from hmkeras.training.epoch_run import EpochSchedule
from hmkeras.training.epoch_run import train_epochs
from hmkeras.training.training_state import TrainingCheckpoint

RNG = np.random.RandomState(0)
X = RNG.normal(size=(12, 3)).astype("float32")
Y = RNG.normal(size=(12, 1)).astype("float32")


def _linear(optimizer):
    """`y = x W`, W fixed, compiled with `optimizer` and the mean squared error."""
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, use_bias=False)])
    model.set_weights([np.array([[0.5], [-0.25], [1.0]], "float32")])
    model.compile(optimizer, "mse")
    return model


def _batches(x, y, batch_size):
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size)


def _scripted(scores):
    """`validate` that returns the next of `scores` as `val_score`."""
    values = iter(scores)
    return lambda model: {"val_score": next(values)}


def _paper_rates(learning_rate, lr_decay, decay_after, epochs):
    """The rate of every epoch as Salton & Kelleher word it: the initial
    rate, divided by `lr_decay` at each epoch after `decay_after` epochs."""
    rates, rate = [], learning_rate
    for number in range(1, epochs + 1):
        if number > decay_after:
            rate /= lr_decay
        rates.append(rate)
    return rates


@pytest.mark.parametrize("learning_rate,lr_decay,decay_after", [
    (1.0, 2.0, 12),    # Sec. 6.1, PTB
    (1.0, 1.15, 14),   # Sec. 6.2, WikiText-2
    (0.3, 1.0, 0),     # a constant rate
    (0.5, 3.0, 0),     # divided from the first epoch on
])
def test_learning_rate_schedule_is_the_papers(learning_rate, lr_decay, decay_after):
    schedule = EpochSchedule(max_epochs=30, learning_rate=learning_rate,
                             lr_decay=lr_decay, decay_after=decay_after)
    expected = _paper_rates(learning_rate, lr_decay, decay_after, 30)
    assert [schedule.learning_rate_at(e) for e in range(30)] == pytest.approx(expected)


def test_sgd_trains_with_the_scheduled_rates_and_records_the_history(tmp_path):
    """One full batch per epoch: the weights after each epoch are plain SGD
    in NumPy with the paper's rates; the history holds each epoch's loss
    (before its step), rate, validation log and seconds."""
    schedule = EpochSchedule(max_epochs=5, learning_rate=0.2, lr_decay=2.0,
                             decay_after=2, verbose=0)
    model = _linear(keras.optimizers.SGD())
    progress = train_epochs(model, _batches(X, Y, 12), schedule, str(tmp_path),
                            validate=lambda m: {"val_norm": float(np.abs(m.get_weights()[0]).sum())})
    w = np.array([[0.5], [-0.25], [1.0]], "float64")
    rates = _paper_rates(0.2, 2.0, 2, 5)
    losses, norms = [], []
    for rate in rates:
        error = X @ w - Y
        losses.append(float(np.mean(error ** 2)))
        w -= rate * 2.0 / len(X) * X.T @ error
        norms.append(float(np.abs(w).sum()))
    np.testing.assert_allclose(model.get_weights()[0], w, rtol=1e-5, atol=1e-6)
    history = progress["history"]
    assert [h["epoch"] for h in history] == [1, 2, 3, 4, 5]
    assert set(history[0]) == {"epoch", "loss", "learning_rate", "val_norm", "seconds"}
    np.testing.assert_allclose([h["learning_rate"] for h in history], rates, rtol=1e-6)
    np.testing.assert_allclose([h["loss"] for h in history], losses, rtol=1e-5)
    np.testing.assert_allclose([h["val_norm"] for h in history], norms, rtol=1e-5)
    assert all(h["seconds"] >= 0 for h in history)
    assert progress["epoch"] == 5 and not progress["done"] and "non_finite" not in progress
    # Without a monitor: no best weights, the last epoch's weights stay.
    assert not os.path.exists(tmp_path / "checkpoints" / "best.weights.h5")
    assert TrainingCheckpoint(str(tmp_path / "checkpoints")).progress() == progress


def test_fit_gets_the_dataset_without_autotuning(tmp_path):
    """A dataset given as it is or by a callable reaches every epoch's
    `fit` with autotuning off (the iterator each `fit` ends would hold it)."""
    seen = []

    class Recording(keras.Sequential):
        def fit(self, x=None, **kwargs):
            seen.append(x.options().autotune.enabled)
            return super().fit(x, **kwargs)

    model = Recording([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(), "mse")
    schedule = EpochSchedule(max_epochs=2, learning_rate=0.1, verbose=0)
    train_epochs(model, _batches(X, Y, 4), schedule, str(tmp_path / "given"))
    schedule.max_epochs = 4
    train_epochs(model, lambda epoch: _batches(X, Y, 4), schedule, str(tmp_path / "made"))
    assert seen == [False] * 6


@pytest.mark.parametrize("scores,patience,stopped_after", [
    # best 3.9 at epoch 4; 4.0 three times (equal is no better): stop after 7.
    ([5.0, 4.0, 4.5, 3.9, 4.0, 4.0, 4.0, 1.0, 1.0, 1.0], 3, 7),
    # every epoch worse than the first: stop after 1 + patience.
    ([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 9.0], 2, 3),
    # patience 0: never early, max_epochs.
    ([1.0] + [2.0] * 9, 0, 10),
    # a NaN is never better (nor the best): 2.0 stays the best.
    ([float("nan"), 2.0, float("nan"), float("nan"), 1.0, 1.0], 2, 4),
])
def test_early_stopping_after_exactly_patience_bad_epochs(tmp_path, scores, patience,
                                                          stopped_after):
    calls = []
    validate = _scripted(scores)
    schedule = EpochSchedule(max_epochs=10, learning_rate=0.01, monitor="val_score",
                             patience=patience, verbose=0)
    progress = train_epochs(_linear(keras.optimizers.SGD()), _batches(X, Y, 12), schedule,
                            str(tmp_path), validate=lambda m: calls.append(1) or validate(m))
    assert progress["epoch"] == len(calls) == stopped_after
    assert progress["done"] == (stopped_after < 10)
    assert progress["best_val_score"] == np.nanmin(scores[:stopped_after])
    np.testing.assert_array_equal([h["val_score"] for h in progress["history"]],
                                  scores[:stopped_after])
    # A rerun of a stopped run trains no more.
    again = train_epochs(_linear(keras.optimizers.SGD()), _batches(X, Y, 12), schedule,
                         str(tmp_path), validate=validate)
    assert again["epoch"] == stopped_after


class _Snapshots(keras.callbacks.Callback):
    """Every epoch's weights at its end."""

    def __init__(self):
        super().__init__()
        self.weights = []

    def on_epoch_end(self, epoch, logs=None):
        self.weights.append([np.array(w) for w in self.model.get_weights()])


def test_best_weights_are_restored_at_the_end(tmp_path):
    snapshots = _Snapshots()
    schedule = EpochSchedule(max_epochs=4, learning_rate=0.1, monitor="val_score",
                             verbose=0)
    model = _linear(keras.optimizers.SGD())
    progress = train_epochs(model, _batches(X, Y, 4), schedule, str(tmp_path),
                            validate=_scripted([3.0, 1.0, 2.0, 1.5]),
                            callbacks=[snapshots])
    assert progress["best_val_score"] == 1.0 and progress["bad_epochs"] == 2
    best, last = snapshots.weights[1], snapshots.weights[3]
    assert not np.array_equal(best[0], last[0])
    for restored, expected in zip(model.get_weights(), best):
        np.testing.assert_array_equal(restored, expected)


def _adam_model():
    """Dense, seeded dropout and Dense, fixed weights, Adam: the optimizer
    and the dropout's seed generator carry state from epoch to epoch."""
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh"),
                              keras.layers.Dropout(0.3, seed=5), keras.layers.Dense(1)])
    rng = np.random.RandomState(1)
    model.set_weights([rng.normal(size=w.shape).astype("float32") * 0.5
                       for w in model.get_weights()])
    model.compile(keras.optimizers.Adam(), "mse")
    return model


def _shuffled(epoch):
    order = np.random.default_rng([7, epoch]).permutation(len(X))
    return _batches(X[order], Y[order], 4)


class _Interrupt(keras.callbacks.Callback):
    """Raises KeyboardInterrupt as epoch `epoch` (0-based) begins, like a
    kill after the previous epoch's checkpoint."""

    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == self.epoch:
            raise KeyboardInterrupt


class _Epochs(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.begun = []

    def on_epoch_begin(self, epoch, logs=None):
        self.begun.append(epoch)


def test_resumed_after_an_interruption_equals_an_uninterrupted_run(tmp_path, capsys):
    schedule = EpochSchedule(max_epochs=5, learning_rate=0.05, lr_decay=2.0,
                             decay_after=2, monitor="val_loss", patience=3, verbose=0)

    def validate(model):
        return {"val_loss": float(model.evaluate(X, Y, verbose=0))}

    straight = _adam_model()
    expected = train_epochs(straight, _shuffled, schedule, str(tmp_path / "a"), validate)
    interrupted = str(tmp_path / "b")
    with pytest.raises(KeyboardInterrupt):
        train_epochs(_adam_model(), _shuffled, schedule, interrupted, validate,
                     callbacks=[_Interrupt(3)])
    assert TrainingCheckpoint(os.path.join(interrupted, "checkpoints")).progress()["epoch"] == 3
    capsys.readouterr()
    resumed, epochs = _adam_model(), _Epochs()
    progress = train_epochs(resumed, _shuffled, schedule, interrupted, validate,
                            callbacks=[epochs])
    assert f"Resuming from {os.path.join(interrupted, 'checkpoints', 'latest')}: epoch 4." \
        in capsys.readouterr().out
    assert epochs.begun == [3, 4]  # the rest only
    assert progress["epoch"] == expected["epoch"] == 5
    for key in ("best_val_loss", "bad_epochs", "done"):
        assert progress[key] == expected[key]
    drop_seconds = lambda history: [{k: v for k, v in h.items() if k != "seconds"}  # noqa: E731
                                    for h in history]
    assert drop_seconds(progress["history"]) == drop_seconds(expected["history"])
    # The same final (best) weights and optimizer state: Adam's moments and
    # step count came back from the checkpoint.
    for a, b in zip(resumed.get_weights(), straight.get_weights()):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(resumed.optimizer.variables, straight.optimizer.variables):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


class _PoisonWeight(keras.callbacks.Callback):
    """Makes a weight NaN after the last batch of epoch `epoch`."""

    def __init__(self, epoch, batches):
        super().__init__()
        self.epoch, self.batches, self.current = epoch, batches, None

    def on_epoch_begin(self, epoch, logs=None):
        self.current = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.current == self.epoch and batch == self.batches - 1:
            kernel = self.model.layers[0].kernel
            kernel.assign(np.full(kernel.shape, np.nan, "float32"))


def test_non_finite_loss_or_weight_stops_before_saving(tmp_path):
    run = str(tmp_path / "loss")
    schedule = EpochSchedule(max_epochs=4, learning_rate=0.01, monitor="val_score",
                             verbose=0)

    def data(epoch):  # epoch 2 (0-based 1) has a NaN input in its first batch
        x = X.copy()
        if epoch == 1:
            x[0, 0] = np.nan
        return _batches(x, Y, 6)

    validate = _scripted([1.0, 0.5, 0.2, 0.1])
    progress = train_epochs(_linear(keras.optimizers.SGD()), data, schedule, run, validate)
    # Epoch 1: steps 1-2, saved; epoch 2's first step (3) is NaN.
    assert progress["non_finite"] == (3, "the training loss is nan", 2)
    assert progress["checkpoint_path"] == os.path.join(run, "checkpoints", "latest")
    saved = TrainingCheckpoint(os.path.join(run, "checkpoints"))
    assert saved.progress()["epoch"] == 1 and len(progress["history"]) == 1
    restored = _linear(keras.optimizers.SGD())
    saved.restore(restored)
    assert np.all(np.isfinite(restored.get_weights()[0]))

    run = str(tmp_path / "weight")
    progress = train_epochs(_linear(keras.optimizers.SGD()), _batches(X, Y, 6), schedule,
                            run, _scripted([1.0, 0.5]), callbacks=[_PoisonWeight(1, 2)])
    assert progress["non_finite"] == (4, "a weight is not finite", 2)
    assert TrainingCheckpoint(os.path.join(run, "checkpoints")).progress()["epoch"] == 1


@pytest.mark.parametrize("arguments,name", [
    (dict(max_epochs=0), "max_epochs"),
    (dict(learning_rate=0.0), "learning_rate"),
    (dict(learning_rate=float("nan")), "learning_rate"),
    (dict(lr_decay=0.5), "lr_decay"),
    (dict(decay_after=-1), "decay_after"),
    (dict(monitor=""), "monitor"),
    (dict(patience=-1, monitor="val_loss"), "patience"),
    (dict(patience=2), "patience"),  # without a monitor
    (dict(verbose=3), "verbose"),
])
def test_bad_schedule_arguments_are_refused_by_name(arguments, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        EpochSchedule(**{"max_epochs": 2, "learning_rate": 0.1, **arguments})


def test_a_monitor_missing_from_the_logs_is_refused(tmp_path):
    schedule = EpochSchedule(max_epochs=2, learning_rate=0.1, monitor="val_perplexity",
                             verbose=0)
    with pytest.raises(ValueError, match=r"`monitor` must name one of the epoch's logs "
                                         r"\['learning_rate', 'loss', 'val_score'\]"):
        train_epochs(_linear(keras.optimizers.SGD()), _batches(X, Y, 12), schedule,
                     str(tmp_path), validate=_scripted([1.0]))
