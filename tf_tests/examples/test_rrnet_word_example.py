"""Tests of examples/ptb_word.py --cell=rrnet (Jacob et al. 2018, Sec. 3.3):
a --tiny run end to end, its resumption, the paper's defaults and the flag
checks. The example runs in its own Python process (its absl flags share
names with the other examples)."""

import pytest
import json
import os
import subprocess
import sys
import textwrap

from example_modules import ROOT

SCRIPT = os.path.join(ROOT, "examples", "ptb_word.py")
_ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", HMKERAS_OFFLINE="1")

_DRIVER = textwrap.dedent("""
    import importlib.util, json, sys
    sys.path.insert(0, {examples!r})
    spec = importlib.util.spec_from_file_location("ptb_word", {script!r})
    ptb_word = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ptb_word)
    out = {{}}
    for name, args in {settings!r}:
        ptb_word.FLAGS.unparse_flags()
        ptb_word.FLAGS(["ptb_word", *args])
        try:
            out[name] = ptb_word.resolve_settings(ptb_word.FLAGS)
        except ptb_word.FlagError as error:
            out[name] = "FlagError: " + str(error)
    for name, args in {runs!r}:
        ptb_word.FLAGS.unparse_flags()
        ptb_word.FLAGS(["ptb_word", *args])
        out[name] = ptb_word.run(ptb_word.resolve_settings(ptb_word.FLAGS))
    print("RESULTS" + json.dumps(out))
""")


@pytest.mark.slow
def test_rrnet_tiny_run_resume_and_flags(tmp_path):
    out = tmp_path / "rrnet"
    settings = [
        ("paper", ["--cell=rrnet"]),
        ("two_layers", ["--cell=rrnet", "--num_layers=2"]),
        ("wrapped", ["--cell=rrnet", "--wrapper=average"]),
        ("lstm_depth", ["--cell=lstm", "--max_depth=4"]),
    ]
    tiny = ["--cell=rrnet", "--tiny", "--verbose=0", "--max_depth=4",
            f"--output_dir={out}"]
    between = ["--cell=rrnet", "--tiny", "--verbose=0", "--max_depth=4",
               "--operations_per_token=3", f"--output_dir={tmp_path / 'between'}"]
    runs = [("tiny", tiny), ("resumed", tiny + ["--max_epochs=2"]), ("between", between)]
    code = _DRIVER.format(examples=os.path.join(ROOT, "examples"), script=SCRIPT,
                          settings=settings, runs=runs)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=_ENV, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    line = [x for x in done.stdout.splitlines() if x.startswith("RESULTS")][-1]
    results = json.loads(line[len("RESULTS"):])

    # Jacob et al. (2018) Sec. 3.3: one layer of 350 units.
    paper = results["paper"]
    assert (paper["units"], paper["num_layers"], paper["max_depth"]) == (350, 1, 10)
    assert paper["output_dir"].endswith("word_embedded_rrnet_none")
    assert "--num_layers" in results["two_layers"]
    assert "--wrapper" in results["wrapped"]
    assert "--max_depth applies to --cell=rrnet only" in results["lstm_depth"]

    with open(out / "results.json") as f:
        saved = json.load(f)
    assert saved["cell"] == "rrnet" and saved["epochs"] == 2  # resumed once
    with open(out / "model_config.json") as f:
        config = json.load(f)
    assert config["max_depth"] == 4 and config["units"] == 16
    for run in ("tiny", "resumed"):
        result = results[run]
        # The best weights are evaluated with greedy (deterministic) trees.
        best = result["best_val_perplexity"]
        assert abs(result["validation"]["perplexity"] - best) < 1e-5 * best
        assert result["test"]["perplexity"] > result["entropy_rate_perplexity"]
    # The greedy tree covers the sentence's words, brackets balanced or open.
    tree = saved["tree"]
    assert tree.startswith("<eos>") or tree.startswith("[<eos>")
    assert tree.count("]") <= tree.count("[")
    assert "Resuming from" in done.stdout
    # Splits and merges between words: the configuration records it, and a
    # tree still open after the last word closes there.
    with open(tmp_path / "between" / "model_config.json") as f:
        assert json.load(f)["operations_per_token"] == 3
    with open(tmp_path / "between" / "results.json") as f:
        tree = json.load(f)["tree"]
    assert tree.count("]") == tree.count("[")
    assert results["between"]["test"]["perplexity"] > results["between"]["entropy_rate_perplexity"]


@pytest.mark.slow
def test_rrnet_tiny_run_and_resumption_on_jax(tmp_path):
    """The REINFORCE word LM on JAX (its stateless step, its cell's draws in
    JAX's loop): a --tiny run with operations between words, resumed for a
    second epoch from its checkpoint."""
    pytest.importorskip("jax", reason="the jax extra: pip install -e '.[jax]'")
    out = tmp_path / "between"
    tiny = ["--cell=rrnet", "--tiny", "--verbose=0", "--max_depth=4",
            "--operations_per_token=3", f"--output_dir={out}"]
    runs = [("tiny", tiny), ("resumed", tiny + ["--max_epochs=2"])]
    code = _DRIVER.format(examples=os.path.join(ROOT, "examples"), script=SCRIPT,
                          settings=[], runs=runs)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**_ENV, "KERAS_BACKEND": "jax"}, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    line = [x for x in done.stdout.splitlines() if x.startswith("RESULTS")][-1]
    results = json.loads(line[len("RESULTS"):])
    assert results["tiny"]["backend"] == "jax"
    assert results["tiny"]["epochs"] == 1 and results["resumed"]["epochs"] == 2
    for run in ("tiny", "resumed"):
        result = results[run]
        best = result["best_val_perplexity"]
        assert 1 < best < 83  # better than a uniform guess over the vocabulary
        assert abs(result["validation"]["perplexity"] - best) < 1e-5 * best
    # The resumed run continued the first one's history.
    assert results["resumed"]["history"][0] == results["tiny"]["history"][0]
