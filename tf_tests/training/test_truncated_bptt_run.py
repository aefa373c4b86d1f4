"""Tests of hmkeras.training.truncated_bptt_run (a resumable training run).

Tiny LSTM / HM-LSTM models on a few hundred symbols; the whole-script
runs (examples/ptb_char.py) are in tf_tests/examples/ and
tf_tests/training/test_kill_and_resume.py.
"""

import pytest
import json
import os

import numpy as np

from hmkeras.models.char_language_model import CharLanguageModel
from hmkeras.models.char_language_model import CharLanguageModelConfig
from hmkeras.training.truncated_bptt_run import TrainingSchedule
from hmkeras.training.truncated_bptt_run import epoch_header
from hmkeras.training.truncated_bptt_run import train_truncated_bptt

IDS = (np.arange(400) * 7 % 11) % 6


def _lm(cell="lstm"):
    return CharLanguageModel(CharLanguageModelConfig(
        vocab_size=6, cell=cell, units=4, num_layers=2 if cell == "hmlstm" else 1,
        embedding_dim=3, output="none", seed=1))


def _steps(run):
    with open(os.path.join(run, "steps.jsonl")) as f:
        return [json.loads(line) for line in f]


def _weights(lm):
    return [np.asarray(w) for w in lm.network.weights]


@pytest.mark.slow
def test_interrupted_and_resumed_equals_straight(tmp_path):
    schedule = TrainingSchedule(batch_size=2, seq_len=10, max_epochs=2, verbose=0,
                                save_every=100)
    validate = lambda lm: {"val_bpc": 2.0}  # noqa: E731
    straight, resumed = str(tmp_path / "a"), str(tmp_path / "b")
    lm_a = _lm()
    progress = train_truncated_bptt(lm_a, IDS, schedule, straight, validate)
    assert progress["epoch"] == 2 and not progress["interrupted"]
    assert len(progress["history"]) == 2 and progress["history"][0]["val_bpc"] == 2.0
    cut = TrainingSchedule(**{**vars(schedule), "max_steps": 27})
    stopped = train_truncated_bptt(_lm(), IDS, cut, resumed, validate)
    assert stopped["interrupted"] and [s["step"] for s in _steps(resumed)][-1] == 27
    lm_b = _lm()
    train_truncated_bptt(lm_b, IDS, schedule, resumed, validate)
    assert [s["bpc"] for s in _steps(resumed)] == [s["bpc"] for s in _steps(straight)]
    for a, b in zip(_weights(lm_a), _weights(lm_b)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_learning_rate_divided_then_early_stop(tmp_path):
    scores = iter([3.0, 3.0, 3.0, 3.0, 3.0])
    schedule = TrainingSchedule(batch_size=2, seq_len=10, max_epochs=10, verbose=0,
                                learning_rate=0.01, lr_divisor=10.0,
                                max_lr_divisions=1, patience=2)
    progress = train_truncated_bptt(_lm(), IDS, schedule, str(tmp_path),
                                    lambda lm: {"val_bpc": next(scores)})
    # Epoch 2 stalls: rate / 10; epochs 3 and 4 stall: stop.
    assert progress["done"] and progress["epoch"] == 4
    assert [round(h["learning_rate"], 6) for h in progress["history"]] == [
        0.01, 0.01, 0.001, 0.001]


@pytest.mark.slow
def test_non_finite_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path):
    run = str(tmp_path)
    schedule = TrainingSchedule(batch_size=2, seq_len=10, max_epochs=1, verbose=0,
                                max_steps=5)
    validate = lambda lm: {"val_bpc": 1.0}  # noqa: E731
    assert train_truncated_bptt(_lm(), IDS, schedule, run, validate)["interrupted"]
    saved = os.path.join(run, "checkpoints", "latest", "model.weights.h5")
    before = os.path.getmtime(saved)
    # An infinite learning rate: the weights of step 6 are not finite, the
    # loss of step 7 is NaN.
    wild = TrainingSchedule(**{**vars(schedule), "max_steps": 0,
                               "learning_rate": float("inf")})
    progress = train_truncated_bptt(_lm(), IDS, wild, run, validate,
                                    changed=("learning_rate",))
    step, what, saved_step = progress["non_finite"]
    assert step == 7 and what == "the training loss is nan" and saved_step == 5
    assert progress["checkpoint_path"] == os.path.join(run, "checkpoints", "latest")
    assert os.path.getmtime(saved) == before  # untouched
    assert [s["step"] for s in _steps(run)] == [1, 2, 3, 4, 5, 6]


@pytest.mark.slow
def test_hierarchical_model_anneals_its_slope(tmp_path):
    lm = _lm("hmlstm")
    schedule = TrainingSchedule(batch_size=2, seq_len=10, max_epochs=2, verbose=0,
                                slope=1.0, slope_rate=0.5, monitor_interval=5)
    scores = iter([2.0, 1.0])  # the best epoch, whose weights end the run: epoch 2
    progress = train_truncated_bptt(lm, IDS, schedule, str(tmp_path),
                                    lambda lm: {"val_bpc": next(scores)})
    assert float(lm.hierarchical_cell.slope.numpy()) == 1.5  # epoch 2: 1 + 0.5 * 1
    assert [h["val_bpc"] for h in progress["history"]] == [2.0, 1.0]
    assert os.listdir(tmp_path / "logs")  # the epochs' TensorBoard scalars


def test_epoch_header():
    s = TrainingSchedule(max_epochs=3, max_steps=10)
    assert epoch_header(s, 0, 0, 20, 20) == "Epoch 1/3: 20 steps"
    assert epoch_header(s, 0, 20, 0, 20) == "Epoch 1/3: all 20 batches trained; validation"
    assert epoch_header(s, 0, 0, 10, 20) == (
        "Epoch 1/3: batches 1-10 of 20 (10 steps, then --max_steps=10 stops the run)")
