"""The main job on JAX: `KERAS_BACKEND=jax python examples/ptb_char.py`.

Each run is a process of its own (the backend is chosen per process): a
whole tiny run (training with the state carried across batches, the
checkpoints, validation, the batch-1 test pass with its boundary scores,
the summary and the figure; the step model, a TensorFlow SavedModel, is
TensorFlow's only), and the same run stopped at step 5 and resumed in a
new process with `--data_parallel` over two host CPU devices
(`keras.distribution.DataParallel`), whose per-step losses and results
are those of the one-device run never interrupted.
"""

import json
import os
import subprocess
import sys

import pytest

from backend_support import host_devices_environment
from example_modules import ROOT

COMMON = ["--preset=quick", "--tiny", "--synthetic_train_chars=900", "--max_epochs=2",
          "--verbose=0"]


def _run_on_jax(*args, devices=1, succeeds=True):
    """ptb_char.py's stdout (`succeeds`), or the one line it fails with."""
    env = host_devices_environment(devices)
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "ptb_char.py"), *COMMON, *args],
        env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    if not succeeds:
        assert result.returncode != 0, result.stdout[-3000:]
        return result.stderr.strip().splitlines()[-1]
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def _steps(output_dir):
    with open(os.path.join(output_dir, "steps.jsonl")) as f:
        return [json.loads(line) for line in f]


@pytest.mark.slow
def test_main_job_on_jax_runs_and_resumes_on_two_devices_as_if_never_interrupted(tmp_path):
    pytest.importorskip("jax", reason="the jax extra: pip install -e '.[jax]'")
    straight, resumed = str(tmp_path / "a"), str(tmp_path / "b")
    printed = _run_on_jax(f"--output_dir={straight}")
    with open(os.path.join(straight, "results.json")) as f:
        results = json.load(f)
    assert results["epochs"] == 2 and 0 < results["test_bpc"] < 6
    assert len(results["z_rates"]) == 2 and len(results["boundary_scores"]) == 2
    assert results["step_model"] is None and "TensorFlow backend only" in printed
    assert os.path.exists(results["segmentation_png"])
    assert os.path.exists(os.path.join(straight, "checkpoints", "latest", "progress.json"))
    assert results["backend"] == "jax" and results["data_parallel_devices"] is None
    # Stopped at step 5, then run again to the end in a new process, every
    # batch split over two devices.
    _run_on_jax("--max_steps=5", f"--output_dir={resumed}")
    printed = _run_on_jax("--data_parallel", f"--output_dir={resumed}", devices=2)
    assert "every batch split over 2 devices" in printed
    a, b = _steps(straight), _steps(resumed)
    assert len(a) == results["steps"] > 16
    assert [s["step"] for s in b] == list(range(1, len(a) + 1))
    assert [(s["epoch"], s["batch"]) for s in a] == [(s["epoch"], s["batch"]) for s in b]
    assert a[-1]["epoch"] == 1  # across an epoch boundary
    for x, y in zip(a, b):
        assert x["bpc"] == pytest.approx(y["bpc"], rel=1e-5, abs=1e-6), x["step"]
    with open(os.path.join(resumed, "results.json")) as f:
        split = json.load(f)
    assert split["data_parallel_devices"] == 2
    assert split["test_bpc"] == pytest.approx(results["test_bpc"], rel=1e-5)
    assert split["z_rates"] == pytest.approx(results["z_rates"], abs=1e-6)
    # A batch that the devices do not split evenly is refused in one line.
    message = _run_on_jax("--data_parallel", "--batch_size=3",
                          f"--output_dir={tmp_path / 'c'}", devices=2, succeeds=False)
    assert ": --batch_size must be a multiple of the 2 devices" in message, message
    assert message.endswith("Received: --batch_size=3") and not (tmp_path / "c").exists()
