"""Tests of examples/mee.py (a tiny end-to-end run and its settings; its bad
flags are in test_example_flags.py)."""

import json
import os
import subprocess
import sys

import pytest
from example_modules import ROOT, example_settings, load_example

mee_example = load_example("mee")


def _settings(*args):
    return example_settings("mee", *args)


@pytest.mark.slow
@pytest.mark.parametrize("operations_per_token", [1, None])
def test_tiny_reinforce_run_end_to_end(tmp_path, capsys, operations_per_token):
    out = str(tmp_path / "run")
    given = [] if operations_per_token is None else [
        f"--operations_per_token={operations_per_token}"]
    results = mee_example.run(_settings(
        "--encoder=rrnet_reinforce", "--tiny", f"--output_dir={out}", "--verbose=0",
        *given))
    # The default is the paper's reading, three operations per token at most.
    operations_per_token = operations_per_token or 3
    assert results["settings"]["operations_per_token"] == operations_per_token
    assert results["settings"]["memory"] == "continued"  # REINFORCE's defaults
    assert results["settings"]["reward"] == "likelihood"
    assert results["settings"]["baseline"] == "greedy"
    printed = capsys.readouterr().out
    with open(os.path.join(out, "results.json")) as f:
        saved = json.load(f)
    assert saved["test_accuracy"] == results["test_accuracy"]
    assert set(saved["test_accuracy"]) == {"4", "5", "6", "7"}
    for value in saved["test_accuracy"].values():
        # 16 test expressions per length: a multiple of 100 / 16.
        assert 0 <= value <= 100 and (value * 16 / 100) == pytest.approx(
            round(value * 16 / 100), abs=1e-3)
    # Table 2 with the paper's row, and two bracketed trees.
    assert "rrnet_reinforce (paper, train)" in printed and "89.42" in printed
    assert len(saved["trees"]) == 2 and len(saved["true_trees"]) == 2
    assert set(saved["tree_agreement"]) == {"4", "5", "6", "7"}
    for scores in saved["tree_agreement"].values():
        assert 0 <= scores["exact"] <= scores["f1"] <= 100
    assert "bracketing F1" in printed and printed.count("(true)") == 2
    # The trees' tokens spell the first test expressions of length 5.
    from hmkeras.data import mee

    expected = list(mee.generate_expressions(5, "test", 2, seed=0))
    from hmkeras.cells.recurrent_recursive_cell import bracketed_tree

    for true_tree, example in zip(saved["true_trees"], expected):
        assert true_tree == bracketed_tree(example.expression, example.operations)
    for line, example in zip(saved["trees"], expected):
        tree, value = line.split("   = ")
        assert tree.replace("[", "").replace("]", "").replace(" ", "") == example.expression
        assert value.startswith(f"{example.value} (predicted ")
        # A merge needs an earlier split (masked policy): never more "]";
        # read between tokens, a sub-tree open at the end closes there.
        if operations_per_token == 1:
            assert tree.count("]") <= tree.count("[")
        else:
            assert tree.count("]") == tree.count("[")


@pytest.mark.slow
def test_tiny_leave_one_out_run_stops_on_validation_and_saves_the_model(tmp_path, capsys):
    import keras
    import numpy as np

    from hmkeras.data import mee

    out = str(tmp_path / "run")
    results = mee_example.run(_settings(
        "--encoder=rrnet_reinforce", "--baseline=leave_one_out", "--operations_per_token=1",
        "--tiny", "--epochs=4", "--patience=1", f"--output_dir={out}", "--verbose=0"))
    settings = results["settings"]
    assert (settings["baseline"], settings["tree_samples"]) == ("leave_one_out", 4)
    curve = results["validation_curve"]
    assert 1 <= results["epochs_trained"] == len(curve) <= 4
    assert len(results["tree_f1_curve"]) == len(curve)
    # The kept epoch is the best one; training stopped one epoch after it.
    assert curve[results["kept_epoch"] - 1] == max(curve)
    assert results["epochs_trained"] in (results["kept_epoch"] + 1, 4)
    assert capsys.readouterr().out.count(
        "bracketing F1 of the greedy trees (validation)") == len(curve)
    # The saved model is the evaluated one (the best epoch's weights).
    model = keras.saving.load_model(os.path.join(out, mee_example.MODEL_FILE))
    assert model.baseline_name == "leave_one_out"
    examples = list(mee.generate_expressions(4, "test", 16, seed=0))
    inputs, digits = mee.model_inputs(examples)
    correct = np.all(np.argmax(np.asarray(model(inputs)), -1) == digits, -1)
    assert 100 * correct.mean() == pytest.approx(results["test_accuracy"]["4"])


@pytest.mark.slow
def test_tiny_reinforce_run_on_jax(tmp_path):
    """The same command under KERAS_BACKEND=jax, in a process of its own:
    `ExpressionModel`'s stateless step, the REINFORCE draws in JAX's loop,
    the saved model and the tree analysis."""
    pytest.importorskip("jax", reason="the jax extra: pip install -e '.[jax]'")
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "mee.py"),
         "--encoder=rrnet_reinforce", "--operations_per_token=1", "--tiny",
         f"--output_dir={out}", "--verbose=0"],
        env={**os.environ, "KERAS_BACKEND": "jax"}, capture_output=True, text=True,
        timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out / "results.json") as f:
        saved = json.load(f)
    assert saved["backend"] == "jax" and saved["settings"]["baseline"] == "greedy"
    assert sorted(saved["test_accuracy"]) == ["4", "5", "6", "7"]
    assert all(0 <= value <= 100 for value in saved["test_accuracy"].values())
    assert len(saved["tree_f1_curve"]) == saved["epochs_trained"]
    assert (out / "model.keras").exists()
    assert "bracketing F1" in done.stdout


def test_supervised_trees_agree_with_the_brackets():
    from hmkeras.data import mee
    from hmkeras.models.expression_model import ExpressionModel

    examples = list(mee.generate_expressions(5, "test", 6, seed=1))
    model = ExpressionModel("rrnet_supervised", units=4, embedding_dim=3, seed=0)
    # Length 5: five operations, so five splits and five merges each.
    assert mee_example.tree_agreement(model, examples) == {
        "f1": 100.0, "exact": 100.0, "splits": 5.0, "merges": 5.0}
    # Another tree scores below 100: the all-recur trees of the LSTM-like case.
    assert mee_example.tree_agreement(_AllRecur(), examples) == {
        "f1": 0.0, "exact": 0.0, "splits": 0.0, "merges": 0.0}


class _AllRecur:
    """A stand-in encoder whose trees have no constituent."""

    def analyze(self, inputs, training=False):
        import numpy as np

        tokens = inputs["tokens"]
        return np.zeros(tokens.shape[:1] + (2, 10)), (np.full(tokens.shape, 2),)


def test_tiny_settings():
    s = _settings("--tiny", "--units=12")
    assert s["units"] == 12 and s["train_size"] == mee_example.TINY["train_size"]
    assert s["train_lengths"] == [4, 5] and s["test_lengths"] == [4, 5, 6, 7]
    quick = _settings("--quick", "--epochs=2")
    assert quick["epochs"] == 2 and quick["train_size"] == mee_example.QUICK["train_size"]


def test_batches_run_without_autotuning():
    """Every epoch of `fit` starts a new iterator over the batches; with
    tf.data's autotuning on, ending the last one could hold the next epoch."""
    from hmkeras.data import mee

    by_length = {n: list(mee.generate_expressions(n, "train", 8, seed=0)) for n in (4, 5)}
    for seed in (None, 3):
        dataset = mee_example._dataset(by_length, 4, shuffle_seed=seed)
        assert dataset.options().autotune.enabled is False
        assert len(list(dataset)) == mee_example._steps_per_epoch(by_length, 4) == 4


@pytest.mark.slow
def test_policy_warmup_epochs_are_counted_in_steps(tmp_path):
    """`--policy_warmup_epochs=1`: the model leaves the policy's losses out
    for one epoch's steps (48 expressions of each training length in
    batches of 16: 6 steps), and its saved step count is the run's."""
    import keras

    out = str(tmp_path / "run")
    results = mee_example.run(_settings(
        "--encoder=rrnet_reinforce", "--policy_inputs=token", "--exploration=0.1",
        "--policy_warmup_epochs=1", "--operations_per_token=1", "--subtree_start=fresh",
        "--tiny", "--epochs=2", f"--output_dir={out}", "--verbose=0"))
    assert results["settings"]["policy_warmup_epochs"] == 1
    model = keras.saving.load_model(os.path.join(out, mee_example.MODEL_FILE))
    assert model.policy_warmup_steps == 6
    assert int(keras.ops.convert_to_numpy(model.trained_steps)) == 12
    assert (model.cell.policy_inputs, model.cell.exploration) == ("token", 0.1)
    assert model.cell.subtree_start == "fresh"
