"""Tests of examples/ptb_word.py: --tiny runs end to end for every wrapper,
resumption, and one-line errors for bad flags.

The example defines absl flags of the same names as examples/ptb_char.py,
so it runs in its own Python process here (one process for all tiny runs,
to pay TensorFlow's start-up once)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
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
    for name, args in {runs!r}:
        ptb_word.FLAGS.unparse_flags()
        ptb_word.FLAGS(["ptb_word", *args])
        out[name] = ptb_word.run(ptb_word.resolve_settings(ptb_word.FLAGS))
    print("RESULTS" + json.dumps(out))
""")


def _drive(runs, backend="tensorflow"):
    code = _DRIVER.format(examples=os.path.join(ROOT, "examples"), script=SCRIPT,
                          runs=runs)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(_ENV, KERAS_BACKEND=backend), cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    line = [x for x in done.stdout.splitlines() if x.startswith("RESULTS")][-1]
    return json.loads(line[len("RESULTS"):]), done.stdout


@pytest.mark.slow
def test_tiny_runs_for_every_wrapper_and_resume(tmp_path):
    runs = []
    for wrapper in ("none", "average", "attention"):
        runs.append((wrapper, ["--tiny", f"--wrapper={wrapper}", "--verbose=0",
                               f"--output_dir={tmp_path / wrapper}"]))
    # The HM-LSTM with the prior (wrapped: the boundaries are read through
    # the wrapper) and the papers' HM-LSTM (the default).
    runs.append(("hmlstm", ["--tiny", "--cell=hmlstm", "--wrapper=average", "--verbose=0",
                            "--boundary_prior=rate", "--segment_lengths=4",
                            f"--output_dir={tmp_path / 'hm'}"]))
    runs.append(("hmlstm_papers", ["--tiny", "--cell=hmlstm",
                                   "--verbose=0", f"--output_dir={tmp_path / 'hm_papers'}"]))
    # Resuming the plain run for one more epoch.
    runs.append(("resumed", ["--tiny", "--wrapper=none", "--verbose=0", "--max_epochs=2",
                             f"--output_dir={tmp_path / 'none'}"]))
    results, stdout = _drive(runs)
    for wrapper in ("none", "average", "attention"):
        out = tmp_path / wrapper
        with open(out / "results.json") as f:
            saved = json.load(f)
        # The plain run was resumed for a second epoch (the last run).
        assert saved["wrapper"] == wrapper
        assert saved["epochs"] == (2 if wrapper == "none" else 1)
        floor = saved["entropy_rate_perplexity"]
        assert floor == pytest.approx(7.479, abs=1e-3)
        for split in ("validation", "test"):
            ppl = saved[split]["perplexity"]
            assert floor < ppl < 84  # above the floor, below uniform (83 ids)
        png = out / "attention.png"
        assert png.exists() == (wrapper != "none")
        if wrapper != "none":
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        for name in ("vocabulary.json", "model_config.json", "settings.json"):
            assert (out / name).exists()
    assert "Resuming from" in stdout
    hm, papers = results["hmlstm"], results["hmlstm_papers"]
    assert (hm["boundary_prior"], hm["segment_lengths"]) == ("rate", [4.0])
    assert (papers["boundary_prior"], papers["segment_lengths"]) == ("none", None)
    for run in (hm, papers):
        assert len(run["test_z_rates"]) == 1 and 0 <= run["test_z_rates"][0] <= 1
    with open(tmp_path / "hm" / "model_config.json") as f:
        assert json.load(f)["boundary_prior"] == "rate"
    assert "boundary_prior" not in results["none"]  # the LSTM has no boundaries
    resumed = results["resumed"]
    assert resumed["epochs"] == 2 and len(resumed["history"]) == 2
    assert resumed["history"][0] == results["none"]["history"][0]


@pytest.mark.slow
def test_tiny_hmlstm_run_with_attention_on_jax(tmp_path):
    """The word LM on JAX: the HM-LSTM with its prior under the attention
    wrapper (the boundaries read through the wrapper), validated and
    tested; the perplexities come from the logits of Keras' compiled
    predict step."""
    pytest.importorskip("jax", reason="the jax extra: pip install -e '.[jax]'")
    out = tmp_path / "hm"
    results, _ = _drive([("hm", [
        "--tiny", "--cell=hmlstm", "--wrapper=attention", "--verbose=0",
        "--boundary_prior=rate", "--segment_lengths=4", f"--output_dir={out}"])],
        backend="jax")
    run = results["hm"]
    for split in ("validation", "test"):
        assert run["entropy_rate_perplexity"] < run[split]["perplexity"] < 84  # 83 ids
    assert len(run["test_z_rates"]) == 1 and 0 <= run["test_z_rates"][0] <= 1
    assert run["epochs"] == 1 and (out / "checkpoints").is_dir()
    assert (out / "attention.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _fails(*args):
    done = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          env=_ENV, cwd=ROOT, timeout=300)
    lines = [x for x in done.stderr.strip().splitlines() if x.strip()]
    return done.returncode, lines


@pytest.mark.parametrize("args,flag", [
    (["--wrapper=cache"], "--wrapper"),
    (["--dropout=1.5"], "--dropout"),
    (["--units=0"], "--units"),
    (["--memory_size=5"], "--memory_size"),            # needs --wrapper=attention
    (["--text_file=/tmp/x.txt"], "--text_file"),        # needs --dataset=text_file
    (["--dataset=text_file"], "--text_file"),
    (["--cell=hmlstm", "--num_layers=1"], "--num_layers"),
])
def test_bad_flags_are_one_line_naming_the_flag(args, flag):
    code, lines = _fails(*args)
    assert code == 1
    assert len(lines) == 1, lines
    assert flag in lines[0]


