"""Tests of examples/logic.py (a tiny end-to-end run and its settings; its bad
flags are in test_example_flags.py)."""

import collections
import json
import os
import subprocess
import sys

import pytest
from example_modules import ROOT, example_settings, load_example

from hmkeras.data import logic

logic_example = load_example("logic")


def _settings(*args):
    return example_settings("logic", *args)


@pytest.mark.slow
@pytest.mark.parametrize("encoder", ["lstm", "rrnet_supervised"])
def test_tiny_run_end_to_end(encoder, tmp_path, capsys):
    out = str(tmp_path / "run")
    results = logic_example.run(_settings(
        f"--encoder={encoder}", "--tiny", f"--output_dir={out}", "--verbose=0"))
    printed = capsys.readouterr().out
    with open(os.path.join(out, "results.json")) as f:
        saved = json.load(f)
    assert saved["test_accuracy"] == results["test_accuracy"]
    assert set(saved["test_accuracy"]) == {"1", "2", "3"}  # tiny: test on 1-3
    for value in saved["test_accuracy"].values():
        # 8 test pairs per bin: a multiple of 100 / 8.
        assert 0 <= value <= 100 and value * 8 / 100 == pytest.approx(
            round(value * 8 / 100), abs=1e-3)
    # The majority baseline, recomputed from the generator.
    train = [p for n in (1, 2) for p in logic.generate_pairs(n, "train", 24, seed=0)]
    majority = collections.Counter(p.relation for p in train).most_common(1)[0][0]
    for n in (1, 2, 3):
        test = list(logic.generate_pairs(n, "test", 8, seed=0))
        expected = 100 * sum(p.relation == majority for p in test) / 8
        assert saved["majority_accuracy"][str(n)] == pytest.approx(expected)
    assert "majority relation" in printed and encoder in printed
    assert saved["settings"]["train_max_operations"] == 2
    assert saved["backend"] == "tensorflow"


@pytest.mark.slow
def test_tiny_run_on_jax(tmp_path):
    # The same command under KERAS_BACKEND=jax, in a process of its own.
    pytest.importorskip("jax", reason="the jax extra: pip install -e '.[jax]'")
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "logic.py"),
         "--encoder=rrnet_supervised", "--tiny", f"--output_dir={out}", "--verbose=0"],
        env={**os.environ, "KERAS_BACKEND": "jax"}, capture_output=True, text=True,
        timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out / "results.json") as f:
        saved = json.load(f)
    assert saved["backend"] == "jax"
    assert set(saved["test_accuracy"]) == {"1", "2", "3"}
    for n in (1, 2, 3):
        value = saved["test_accuracy"][str(n)]
        assert 0 <= value <= 100 and value * 8 / 100 == pytest.approx(
            round(value * 8 / 100), abs=1e-3)
        # The data do not depend on the backend: the baseline is TensorFlow's.
        train = [p for k in (1, 2) for p in logic.generate_pairs(k, "train", 24, seed=0)]
        test = list(logic.generate_pairs(n, "test", 8, seed=0))
        assert saved["majority_accuracy"][str(n)] == pytest.approx(
            logic_example.majority_accuracy(train, test))


def test_batches_run_without_autotuning():
    """A new iterator every epoch: without autotuning its end holds nothing."""
    pairs = list(logic.generate_pairs(2, "train", 6, seed=0))
    dataset = logic_example._dataset(pairs, 4, logic_example._width(pairs), shuffle_seed=1)
    assert dataset.options().autotune.enabled is False
    assert sum(int(labels.shape[0]) for _, labels in dataset) == 6


def test_tiny_settings():
    s = _settings("--tiny", "--units=12")
    assert s["units"] == 12 and s["train_size"] == logic_example.TINY["train_size"]
    assert s["train_max_operations"] == 2 and s["test_max_operations"] == 3
    assert _settings()["train_max_operations"] == 6
    assert _settings()["test_max_operations"] == 12
