"""Tests of examples/xla_gpu_training.py (tiny runs, in subprocesses).

The script configures devices (logical CPUs for `--cpu_replicas`) and the
global dtype policy, which must happen in a fresh process; the flag checks
that come before TensorFlow loads run in subprocesses too (fast).

One run trains a few steps under the default strategy with XLA and
mixed_bfloat16; a second resumes it from its checkpoint (the carried state
included) under MirroredStrategy over two logical CPU devices and
finishes the epoch.
"""

import json
import os
import subprocess
import sys

import pytest
from example_modules import ROOT
from worker_cluster import run_workers

SCRIPT = os.path.join(ROOT, "examples", "xla_gpu_training.py")


def _run(*args, env=None, timeout=1800):
    environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", **(env or {}))
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True,
                          text=True, cwd=ROOT, env=environment, timeout=timeout)


def _results(output_dir):
    with open(os.path.join(output_dir, "results.json")) as f:
        return json.load(f)


def _progress(output_dir):
    with open(os.path.join(output_dir, "checkpoints", "latest", "progress.json")) as f:
        return json.load(f)


@pytest.mark.slow
def test_xla_run_then_mirrored_resume_end_to_end(tmp_path):
    out = str(tmp_path / "run")
    common = ["--preset=quick", "--tiny", f"--output_dir={out}", "--verbose=0",
              "--precision=mixed_bfloat16"]
    first = _run(*common, "--max_steps=3")
    assert first.returncode == 0, first.stderr[-3000:]
    results = _results(out)
    assert results["strategy"] == "default" and results["replicas"] == 1
    assert results["jit_compile"] is True
    assert results["carry_state"] is True  # truncated BPTT, as ptb_char.py
    assert results["steps"] == 3 and results["epochs"] == 0
    assert results["compute_dtype"] == "bfloat16"
    assert results["weight_dtypes"] == ["float32"]  # variables stay float32
    assert 0 < results["final_bpc"] < 8 and 0 < results["valid_bpc"] < 8
    assert os.path.isdir(os.path.join(out, "checkpoints"))
    first_seconds = _progress(out)["seconds"]

    # The same run resumed from its checkpoint, now over two replicas (the
    # strategy is not part of the model), to the end of its one epoch.
    second = _run(*common, "--strategy=mirrored", "--cpu_replicas=2")
    assert second.returncode == 0, second.stderr[-3000:]
    assert "Resuming from" in second.stdout
    results = _results(out)
    # 3000 synthetic characters in batches of 4 x 20: 37 batches.
    assert results["strategy"] == "mirrored" and results["replicas"] == 2
    assert results["jit_compile"] is False  # XLA cannot span logical CPUs
    assert results["steps"] == 37 and results["steps_this_run"] == 34
    assert results["epochs"] == 1
    # Throughput and time of every process: 1 + 32 steps timed after each
    # one's 2 compiling steps; the seconds of the first process included.
    assert results["timed_steps"] == 33 and results["chars_per_second"] > 0
    assert results["wall_seconds"] >= _progress(out)["seconds"] > first_seconds > 0
    assert 0 < results["final_bpc"] < 8 and 0 < results["valid_bpc"] < 8
    assert results["weight_dtypes"] == ["float32"]

    # A rerun of the finished run reports it and rewrites nothing.
    before = open(os.path.join(out, "results.json"), "rb").read()
    again = _run(*common, "--strategy=mirrored", "--cpu_replicas=2", timeout=120)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"{out} holds a finished run (37 steps, 1 epochs)" in again.stdout
    assert open(os.path.join(out, "results.json"), "rb").read() == before

    # Its checkpoints hold the carried state: resuming without it is refused.
    third = _run(*common, "--nocarry_state", timeout=120)
    assert third.returncode != 0 and "Traceback" not in third.stderr
    assert "--nocarry_state" in third.stderr and "--carry_state" in third.stderr


@pytest.mark.slow
def test_two_workers_end_to_end(tmp_path):
    """`--strategy=multi_worker` with two worker processes on this machine
    (each writes its own --output_dir; the chief's results are the run's)."""
    done = run_workers(lambda index: [
        sys.executable, SCRIPT, "--preset=quick", "--tiny", "--max_steps=3",
        "--strategy=multi_worker", "--nojit_compile", "--verbose=0",
        f"--output_dir={tmp_path / f'worker{index}'}"], cwd=ROOT)
    for worker in done:
        assert worker.returncode == 0, worker.stderr[-3000:]
    chief, other = (_results(str(tmp_path / f"worker{i}")) for i in range(2))
    assert chief["strategy"] == "multi_worker" and chief["replicas"] == 2
    assert chief["steps"] == 3 and chief["carry_state"] is True
    assert 0 < chief["final_bpc"] < 8 and 0 < chief["valid_bpc"] < 8
    # The logged figures are the means over both workers' replicas.
    for key in ("final_bpc", "valid_bpc", "last_epoch_mean_loss", "steps"):
        assert other[key] == chief[key], key


@pytest.mark.slow
def test_non_finite_loss_stops_in_one_line(tmp_path):
    """A learning rate of 1e30: step 2's loss is NaN; the run stops in one
    line naming the step and the checkpoint of step 1, left as saved."""
    out = str(tmp_path / "run")
    done = _run("--preset=quick", "--tiny", f"--output_dir={out}", "--verbose=0",
                "--nojit_compile", "--learning_rate=1e30", "--save_every=1", timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("xla_gpu_training.py: Step 2: the training loss is nan"), line
    assert f"{os.path.join(out, 'checkpoints', 'latest')} (step 1), untouched" in line
    assert _progress(out)["batch"] == 1
    assert not os.path.exists(os.path.join(out, "results.json"))


@pytest.mark.parametrize(
    "args, env, message",
    [
        (["--strategy=multi_worker"], {"TF_CONFIG": ""}, "TF_CONFIG"),
        (["--cpu_replicas=2"], {}, "--cpu_replicas goes with --strategy=mirrored"),
        (["--strategy=mirrored", "--cpu_replicas=3"], {}, "must split evenly"),
        (["--strategy=mirrored", "--cpu_replicas=2", "--jit_compile"], {},
         "--nojit_compile"),
        (["--strategy=tpu", "--precision=mixed_float16"], {}, "mixed_bfloat16"),
        (["--tpu=local"], {}, "--tpu goes with --strategy=tpu"),
        (["--patience=3"], {}, "--patience"),
        (["--data_parallel"], {}, "--data_parallel is ptb_char.py's"),
        (["--precision=float64"], {}, "float32|mixed_bfloat16|mixed_float16"),
    ],
)
def test_bad_flags_are_one_line(tmp_path, args, env, message):
    result = _run("--preset=quick", "--tiny", f"--output_dir={tmp_path / 'run'}", *args,
                  env=env, timeout=120)
    assert result.returncode != 0
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not os.path.exists(tmp_path / "run")
