"""Tests of examples/ptb_char.py and examples/sample.py (tiny runs)."""

import json
import os
import subprocess
import sys

import pytest
from example_modules import ROOT, load_example



ptb_char = load_example("ptb_char")
FLAGS = ptb_char.FLAGS


def _settings(*args):
    FLAGS.unparse_flags()
    FLAGS(["ptb_char", *args])
    return ptb_char.resolve_settings(FLAGS)


def _run(*args):
    settings = _settings(*args)
    settings["preset"] = FLAGS.preset
    return ptb_char.run(settings)


def _steps(output_dir):
    with open(os.path.join(output_dir, "steps.jsonl")) as f:
        return [json.loads(line) for line in f]


def test_quick_preset_end_to_end_and_sampling(tmp_path):
    out = str(tmp_path / "run")
    results = _run("--preset=quick", "--tiny", f"--output_dir={out}", "--verbose=0")
    with open(os.path.join(out, "results.json")) as f:
        saved = json.load(f)
    assert saved["test_bpc"] == pytest.approx(results["test_bpc"])
    assert 0 < saved["test_bpc"] < 6
    assert saved["true_entropy_rate_bits_per_char"] == pytest.approx(0.768, abs=0.01)
    assert len(saved["z_rates"]) == 2 and "f1" in saved["boundary_scores"][0]
    with open(os.path.join(out, "segmentation.png"), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    for name in ("vocabulary.json", "model_config.json", "step_model/saved_model.pb"):
        assert os.path.exists(os.path.join(out, name)), name
    assert os.listdir(os.path.join(out, "logs"))  # TensorBoard event file
    sample = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "sample.py"),
         f"--model_dir={out}/step_model", "--length=40", "--seed=1",
         "--temperature=0.8", "--prime=qi "],
        capture_output=True, text=True, check=True, cwd=ROOT)
    text = sample.stdout.strip("\n")
    assert text.startswith("qi ") and len(text) == 43


@pytest.mark.parametrize("cell", ["lstm", "mlstm"])
def test_non_hierarchical_cells_end_to_end(tmp_path, cell):
    out = str(tmp_path / cell)
    results = _run("--preset=quick", "--tiny", f"--cell={cell}", "--max_epochs=1",
                   "--synthetic_train_chars=900", f"--output_dir={out}", "--verbose=0")
    assert "z_rates" not in results and 0 < results["test_bpc"] < 6
    assert os.path.exists(os.path.join(out, "segmentation.png"))


@pytest.mark.parametrize("randomness", [
    [],
    # Random boundaries and dropout: the seed-generator states resume too.
    ["--boundary_mode=sample", "--dropout=0.1", "--recurrent_dropout=0.1"],
], ids=["deterministic", "sampled"])
def test_resume_reproduces_uninterrupted_run(tmp_path, randomness):
    """Stop at step 5 (mid epoch 1), resume in a new model to step 16 (into
    epoch 2: state reset, slope 1.5): the same per-step losses as a run
    that was never interrupted."""
    common = ["--preset=quick", "--tiny", "--synthetic_train_chars=900",
              "--max_epochs=2", "--verbose=0", "--save_every=1000", *randomness]
    straight, resumed = str(tmp_path / "a"), str(tmp_path / "b")
    assert _run(*common, "--max_steps=16", f"--output_dir={straight}") is None
    assert _run(*common, "--max_steps=5", f"--output_dir={resumed}") is None
    progress = json.load(open(os.path.join(resumed, "checkpoints/latest/progress.json")))
    assert (progress["epoch"], progress["batch"]) == (0, 5)
    assert _run(*common, "--max_steps=16", f"--output_dir={resumed}") is None
    a, b = _steps(straight), _steps(resumed)
    assert [s["step"] for s in b] == list(range(1, 17))
    assert [(s["epoch"], s["batch"]) for s in a] == [(s["epoch"], s["batch"]) for s in b]
    assert a[-1]["epoch"] == 1  # the runs crossed an epoch boundary
    for x, y in zip(a, b):
        assert x["bpc"] == pytest.approx(y["bpc"], rel=1e-5, abs=1e-6), x["step"]


@pytest.mark.parametrize("flag,value,allowed", [
    ("cell", "gru", "'hmlstm'"),
    ("dataset", "wiki", "'ptb_char'"),
    ("preset", "fast", "'quick'"),
    ("output", "fancy", "'simple'"),
    ("boundary_mode", "round", "'sample'"),
])
def test_bad_flag_values_name_flag_and_choices(flag, value, allowed):
    with pytest.raises(ValueError, match=f"--{flag} must be one of .*{allowed}"):
        _settings(f"--{flag}={value}")


def test_hierarchical_options_refused_for_other_cells():
    with pytest.raises(ValueError, match="--layer_norm applies to the hierarchical cells"):
        _settings("--cell=lstm", "--layer_norm")
    with pytest.raises(ValueError, match="--boundary_mode applies"):
        _settings("--cell=mlstm", "--boundary_mode=soft")
    with pytest.raises(ValueError, match="--num_layers must be 1"):
        _settings("--cell=mlstm", "--num_layers=2")
    # From a preset they are dropped: the quick preset's layer norm is the
    # HM cells' option, the LSTM baseline runs without it.
    s = _settings("--preset=quick", "--cell=lstm")
    assert s["layer_norm"] is False and s["top_down"] is True


def test_presets_and_explicit_flags():
    s = _settings("--preset=hutter_mlstm")
    assert (s["cell"], s["units"], s["embedding_dim"], s["weight_norm"],
            s["dropout"], s["dataset"], s["num_layers"]) == (
        "mlstm", 1900, 400, True, 0.2, "enwik8", 1)
    s = _settings("--preset=ptb", "--units=64", "--no_top_down")
    assert (s["units"], s["output_units"], s["top_down"], s["layer_norm"]) == (
        64, 512, False, True)
    assert s["output_dir"] == os.path.join("runs", "ptb_hmlstm")
