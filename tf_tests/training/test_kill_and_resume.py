"""Training killed with SIGKILL loses no work and leaves no half checkpoint.

* A real `examples/ptb_char.py` run (quick preset, `--tiny`) is SIGKILLed
  mid-epoch once a checkpoint exists; rerun on the same output directory
  it resumes from that checkpoint and ends with the same per-step losses
  and the same weights, optimizer state included, as a run of the same
  seed that was never interrupted.
* A process SIGKILLed while `TrainingCheckpoint.save` is under way, at a
  point chosen through `sys.setprofile` (nothing is patched: the hook
  only blocks the process there until the test kills it), leaves the
  previous complete checkpoint to resume from, or the new one once it is
  in place.
"""

import json
import os
import signal
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import h5py
import keras
import numpy as np
import pytest
from example_modules import ROOT, run_ptb_char

from hmkeras.training.training_state import TrainingCheckpoint

SUBPROCESS_TIMEOUT = 240  # seconds; the machine running the tests may be busy


def _environment():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env["PYTHONPATH"] = os.pathsep.join([ROOT, env.get("PYTHONPATH", "")])
    return env


def _steps(output_dir):
    """`{step: bpc}` of steps.jsonl; a step trained again after a resume
    counts with its last value. The line the kill tore (unfinished, then
    continued by the resumed run's first line) is read from its last
    record on."""
    steps = {}
    with open(os.path.join(output_dir, "steps.jsonl")) as f:
        for line in f:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                try:
                    record = json.loads(line[line.rindex('{"step"'):])
                except (ValueError, json.JSONDecodeError):
                    continue  # the torn line ends the file
            steps[record["step"]] = record["bpc"]
    return steps


def _h5_arrays(path):
    arrays = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, item: arrays.__setitem__(name, item[()])
                     if isinstance(item, h5py.Dataset) else None)
    return arrays


def _wait_for(predicate, process, what, log):
    deadline = time.monotonic() + SUBPROCESS_TIMEOUT
    while time.monotonic() < deadline:
        if predicate():
            return
        if process.poll() is not None:
            pytest.fail(f"the process ended (status {process.returncode}) before {what}:\n"
                        + open(log).read()[-3000:])
        time.sleep(0.02)
    process.kill()
    pytest.fail(f"timed out waiting for {what}")


def _kill(process):
    os.kill(process.pid, signal.SIGKILL)
    assert process.wait(timeout=60) == -signal.SIGKILL


# 40,000 characters: 500 batches of 4 x 20 per epoch, so the kill always
# comes in the middle of the first epoch.
COMMON = ["--preset=quick", "--tiny", "--synthetic_train_chars=40000",
          "--max_epochs=1", "--verbose=0", "--save_every=3"]


@pytest.mark.slow
def test_sigkilled_run_resumes_to_the_uninterrupted_result(tmp_path):
    killed, straight = str(tmp_path / "killed"), str(tmp_path / "straight")
    log = str(tmp_path / "killed.log")
    checkpoint = TrainingCheckpoint(os.path.join(killed, "checkpoints"))

    def second_checkpoint():
        try:  # None, or read while a save renames: look again
            return (checkpoint.progress() or {}).get("batch", 0) >= 6
        except (OSError, ValueError):
            return False

    with open(log, "w") as output:
        process = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "examples", "ptb_char.py"), *COMMON,
             f"--output_dir={killed}"],
            cwd=ROOT, env=_environment(), stdout=output, stderr=subprocess.STDOUT)
        try:
            _wait_for(second_checkpoint, process, "the second checkpoint", log)
            _kill(process)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    saved = checkpoint.progress()
    assert saved["epoch"] == 0 and 6 <= saved["batch"] < 500  # mid-epoch
    resumed_from = saved["batch"]
    last = resumed_from + 4  # the resumed run trains 4 steps more, then stops
    assert run_ptb_char(*COMMON, f"--max_steps={last}", f"--output_dir={killed}") is None
    assert run_ptb_char(*COMMON, f"--max_steps={last}", f"--output_dir={straight}") is None

    a, b = _steps(straight), _steps(killed)
    assert sorted(a) == sorted(b) == list(range(1, last + 1))
    # Same seed, same batches, same CPU kernels: equal to the last bit (the
    # first `resumed_from` steps come from the killed process, the others
    # from the resumed run, all against a third, uninterrupted run).
    assert [a[step] for step in a] == [b[step] for step in a]
    weights_a = _h5_arrays(os.path.join(straight, "checkpoints/latest/model.weights.h5"))
    weights_b = _h5_arrays(os.path.join(killed, "checkpoints/latest/model.weights.h5"))
    assert sorted(weights_a) == sorted(weights_b)
    assert any(name.startswith("optimizer") for name in weights_a)
    for name in weights_a:  # parameters, slope, carried state, Adam moments
        np.testing.assert_array_equal(weights_a[name], weights_b[name], err_msg=name)
    progress = TrainingCheckpoint(os.path.join(killed, "checkpoints")).progress()
    assert progress["batch"] == last
    # The epoch's training BPC counts the killed process' batches too, and
    # the run's seconds add up over both processes.
    for run_dir in (straight, killed):
        total = TrainingCheckpoint(os.path.join(run_dir, "checkpoints")).progress()
        assert total["epoch_bpc_sum"] == pytest.approx(sum(a.values()), rel=1e-6)
    assert progress["seconds"] > saved["seconds"] > 0


# Runs in a fresh process: two saves of a one-layer model; during the
# second the profile hook blocks at the chosen point, after announcing it
# in `<directory>.ready`, until the test SIGKILLs the process.
SAVER = r"""
import os, sys, time
import keras, numpy as np
from hmkeras.training.training_state import TrainingCheckpoint

directory, point = sys.argv[1], sys.argv[2]
model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
model.compile(keras.optimizers.Adam(0.1), "mse")
checkpoint = TrainingCheckpoint(directory)
for step, kernel in ((1, 3.0), (2, 7.0)):
    model.fit(np.ones((4, 2)), np.ones((4, 1)), verbose=0)
    model.layers[0].kernel.assign(np.full((2, 1), kernel, "float32"))
    counts = {}

    def block_at(frame, event, arg):
        if event == "c_call" and arg is os.replace:
            name = "os.replace"
        elif event == "call" and frame.f_code.co_filename.endswith("training_state.py"):
            name = frame.f_code.co_name
        else:
            return
        counts[name] = counts.get(name, 0) + 1
        if f"{name}#{counts[name]}" == point:
            with open(directory + ".ready", "w") as f:
                f.write(point)
            time.sleep(600)

    if step == 2:
        sys.setprofile(block_at)
    checkpoint.save(model, {"step": step})
    sys.setprofile(None)
"""


# Where the second save is killed, and what is on disk then.
KILL_POINTS = {
    # The new checkpoint half written (its weights file, in latest.tmp).
    "_save_values#1": ["latest", "latest.tmp"],
    # The old checkpoint moved to latest.old, the new one not yet renamed to
    # latest: no `latest` at all on disk.
    "os.replace#2": ["latest.old", "latest.tmp"],
}


@pytest.mark.slow
def test_save_killed_midway_leaves_a_complete_checkpoint(tmp_path):
    processes = {}
    try:
        for index, point in enumerate(KILL_POINTS):  # both at once: a faster test
            directory = str(tmp_path / f"checkpoints{index}")
            log = open(directory + ".log", "w")
            processes[point] = directory, log, subprocess.Popen(
                [sys.executable, "-c", SAVER, directory, point], cwd=ROOT,
                env=_environment(), stdout=log, stderr=subprocess.STDOUT)
        for point, (directory, log, process) in processes.items():
            _wait_for(lambda: os.path.exists(directory + ".ready"), process,
                      f"the save to reach {point}", log.name)
            _kill(process)
    finally:
        for directory, log, process in processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
            log.close()

    for point, (directory, _, _) in processes.items():
        # The kill came inside the window it is meant to test ...
        assert sorted(os.listdir(directory)) == KILL_POINTS[point], point
        # ... and the previous checkpoint (step 1, kernel 3) is what resumes.
        checkpoint = TrainingCheckpoint(directory)
        assert checkpoint.exists() and checkpoint.progress() == {"step": 1}
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        model.compile(keras.optimizers.Adam(0.1), "mse")
        assert checkpoint.restore(model) == {"step": 1}
        np.testing.assert_array_equal(model.layers[0].kernel.numpy(), np.full((2, 1), 3.0))
        assert int(model.optimizer.iterations.numpy()) == 1

        # Training goes on: the next save puts a complete checkpoint in
        # `latest` and clears what the killed save left.
        checkpoint.save(model, {"step": 3})
        assert sorted(os.listdir(directory)) == ["latest"], point
        clone = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        clone.compile(keras.optimizers.Adam(0.1), "mse")
        assert TrainingCheckpoint(directory).restore(clone) == {"step": 3}
        np.testing.assert_array_equal(clone.layers[0].kernel.numpy(), np.full((2, 1), 3.0))
