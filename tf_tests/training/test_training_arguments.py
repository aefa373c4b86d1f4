"""Arguments of the training classes: NumPy numbers accepted, bad values
refused with the argument named; `SlopeAnnealing(verbose=1)` prints only
when the slope changes."""

import pathlib

import keras
import numpy as np
import pytest

import hmkeras
from hmkeras.models.char_language_model import CharLanguageModel

NAN, INF = float("nan"), float("inf")


def _refused(name, make):
    with pytest.raises(ValueError, match=rf"`{name}` must be .*Received: {name}="):
        make()


# ---------------------------------------------------------------------------
# SlopeAnnealing
# ---------------------------------------------------------------------------
def _hm_model():
    model = keras.Sequential([
        keras.Input((4, 3)),
        keras.layers.RNN(hmkeras.HMLSTMCell(4, num_layers=2, seed=0)),
        keras.layers.Dense(1),
    ])
    # Eager: these tests check the callback (run in Python either way);
    # `test_slope_annealing.py` checks compiled and XLA train functions.
    model.compile("sgd", "mse", run_eagerly=True)
    return model


def test_slope_annealing_arguments():
    callback = hmkeras.SlopeAnnealing(unit=np.str_("step"), verbose=np.int64(1))
    assert callback.unit == "step" and type(callback.verbose) is int
    for value in ("x", 2, -1, True, 1.0, None):
        _refused("verbose", lambda: hmkeras.SlopeAnnealing(verbose=value))
    for value in ("batch", 1, None):
        _refused("unit", lambda: hmkeras.SlopeAnnealing(unit=value))


@pytest.mark.slow
def test_slope_schedule_may_return_numpy_numbers():
    # One fit, one NumPy type per epoch (a different value each, so every
    # epoch's setting is seen), the slope read from the weight after each.
    values = [np.float32(2.5), np.int64(2), np.float64(3.5)]
    model = _hm_model()
    slopes = []
    read_slope = keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: slopes.append(
        float(model.layers[0].cell.slope.numpy())))
    model.fit(np.zeros((2, 4, 3)), np.zeros((2, 1)), epochs=len(values), verbose=0,
              callbacks=[hmkeras.SlopeAnnealing(lambda epoch: values[epoch]), read_slope])
    assert slopes == [float(value) for value in values]


@pytest.mark.parametrize("value", [NAN, INF, 0.0, -1.0, True, "2", None])
def test_slope_schedule_bad_values_refused(value):
    model = _hm_model()
    with pytest.raises(ValueError, match=r"`schedule` must return a finite number > 0"):
        model.fit(np.zeros((2, 4, 3)), np.zeros((2, 1)), epochs=1, verbose=0,
                  callbacks=[hmkeras.SlopeAnnealing(lambda epoch: value)])


@pytest.mark.slow
def test_slope_annealing_prints_only_when_the_slope_changes(capsys):
    model = _hm_model()  # initial slope 1.0
    slopes = [1.0, 1.04, 1.04, 1.04, 2.0, 2.0]  # 1.04 is not exact in float32
    model.fit(np.zeros((2, 4, 3)), np.zeros((2, 1)), epochs=len(slopes), verbose=0,
              callbacks=[hmkeras.SlopeAnnealing(lambda epoch: slopes[epoch], verbose=1)])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert lines == [
        "Epoch 2: SlopeAnnealing sets slope to 1.0400.",
        "Epoch 5: SlopeAnnealing sets slope to 2.0000.",
    ]


@pytest.mark.slow
def test_slope_annealing_silent_by_default(capsys):
    model = _hm_model()
    model.fit(np.zeros((2, 4, 3)), np.zeros((2, 1)), epochs=2, verbose=0,
              callbacks=[hmkeras.SlopeAnnealing(lambda epoch: 1.0 + epoch)])
    assert capsys.readouterr().out.strip() == ""


# ---------------------------------------------------------------------------
# BoundaryMonitor
# ---------------------------------------------------------------------------
def test_boundary_monitor_numpy_numbers():
    monitor = hmkeras.BoundaryMonitor(
        interval=np.int64(2), low=np.float32(0.25), high=np.float64(0.75),
        patience=np.int32(2), stop_on_collapse=np.True_, verbose=np.int64(0))
    values = (monitor.interval, monitor.low, monitor.high, monitor.patience,
              monitor.stop_on_collapse, monitor.verbose)
    assert values == (2, 0.25, 0.75, 2, True, 0)
    assert [type(v) for v in values] == [int, float, float, int, bool, int]


@pytest.mark.parametrize(
    "name, values",
    [("interval", [0, -1, True, 2.0, "2", None, NAN]),
     ("low", [NAN, INF, -0.1, 1.5, True, "0.1", None]),
     ("high", [NAN, INF, -0.1, 1.5, True, "0.9", None]),
     ("patience", [0, True, 1.5, "3", None]),
     ("stop_on_collapse", [1, "yes", None]),
     ("verbose", [2, -1, True, "x", 1.0, None])],
)
def test_boundary_monitor_bad_values(name, values):
    for value in values:
        _refused(name, lambda: hmkeras.BoundaryMonitor(**{name: value}))


# ---------------------------------------------------------------------------
# BoundaryPrior
# ---------------------------------------------------------------------------
def test_boundary_prior_numpy_numbers():
    prior = hmkeras.BoundaryPrior(
        [np.float32(4.0), np.int64(20)], form="rate", weight=np.float32(2.0))
    assert prior.get_config() == {"segment_lengths": [4.0, 20.0], "form": "rate", "weight": 2.0}
    assert [type(r) for r in prior.segment_lengths] == [float, float]
    assert hmkeras.BoundaryPrior(np.array([5.0, 25.0])).segment_lengths == (5.0, 25.0)


@pytest.mark.parametrize(
    "kwargs, name",
    [(dict(segment_lengths="5"), "segment_lengths"),
     (dict(segment_lengths=np.float32(5)), "segment_lengths"),
     (dict(segment_lengths=[]), "segment_lengths"),
     (dict(segment_lengths=[NAN]), "segment_lengths"),
     (dict(segment_lengths=[INF]), "segment_lengths"),
     (dict(segment_lengths=[1.0]), "segment_lengths"),
     (dict(segment_lengths=[0.5]), "segment_lengths"),
     (dict(segment_lengths=[5, "15"]), "segment_lengths"),
     (dict(segment_lengths=[np.True_]), "segment_lengths"),
     (dict(form="poisson"), "form"),
     (dict(form=None), "form"),
     (dict(weight=True), "weight"),
     (dict(weight="1"), "weight"),
     (dict(weight=INF), "weight"),
     (dict(weight=-1), "weight")],
)
def test_boundary_prior_bad_values(kwargs, name):
    _refused(name, lambda: hmkeras.BoundaryPrior(**kwargs))


# ---------------------------------------------------------------------------
# TruncatedBPTTModel, TrainingCheckpoint
# ---------------------------------------------------------------------------
def test_truncated_bptt_model_arguments():
    lm = CharLanguageModel(vocab_size=5, cell="hmrnn", units=4, num_layers=2,
                           embedding_dim=3, output_units=4)
    model = hmkeras.TruncatedBPTTModel(lm, np.int64(2))
    assert type(model.batch_size) is int and model.batch_size == 2
    assert tuple(model.carried_state[0].shape) == (2, 4)
    for value in (0, -2, True, 2.0, "2", None):
        _refused("batch_size", lambda: hmkeras.TruncatedBPTTModel(lm, value))
    for value in (lm.network, "lm", None):
        _refused("language_model", lambda: hmkeras.TruncatedBPTTModel(value, 2))


def test_training_checkpoint_directory(tmp_path):
    checkpoint = hmkeras.TrainingCheckpoint(pathlib.Path(tmp_path) / "ckpt")
    assert checkpoint.directory == str(tmp_path / "ckpt")
    for value in ("", None, 3, b"bytes"):
        _refused("directory", lambda: hmkeras.TrainingCheckpoint(value))
