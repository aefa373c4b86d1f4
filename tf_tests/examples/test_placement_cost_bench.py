"""`bench/placement_cost.py`: a tiny run times every placement form of the
word-discovery model and divides by the baseline's time."""

import os
import re
import subprocess
import sys

import pytest
from example_modules import ROOT

SCRIPT = os.path.join(ROOT, "bench", "placement_cost.py")


@pytest.mark.slow
def test_tiny_run_times_every_form_against_the_baseline():
    done = subprocess.run(
        [sys.executable, SCRIPT, "--tiny", "--rounds=2", "--steps=1", "--warmup=1"],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "batch x seq_len 4 x 20, 2 rounds of 1 steps" in done.stdout
    rows = dict(re.findall(r"^\| (\w+) \| ([\d.]+) \| ", done.stdout, re.MULTILINE))
    assert sorted(rows) == ["bidirectional", "entropy", "none", "surprisal"]
    assert all(float(seconds) > 0 for seconds in rows.values())
    assert "| surprisal | " + rows["surprisal"] + " | 1.00 (1.00) |" in done.stdout


def test_a_spaced_preset_is_refused():
    done = subprocess.run([sys.executable, SCRIPT, "--preset=quick"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert done.returncode != 0 and "--preset must be brent" in done.stderr
