"""examples/iam_ondb.py end to end (--tiny, embedded set), resuming, and
examples/sample_handwriting.py on the exported step model in a new process;
the same run on JAX."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from example_modules import ROOT, example_settings, load_example

iam_ondb = load_example("iam_ondb")
import boundary_prior_flags  # noqa: E402 (examples/, on sys.path once an example is loaded)
import command_line  # noqa: E402


def _settings(*args):
    return example_settings("iam_ondb", *args)


def _is_png(path):
    with open(path, "rb") as f:
        return f.read(8) == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_tiny_run_resume_and_sampling(tmp_path):
    out = str(tmp_path / "run")
    results = iam_ondb.run(_settings("--tiny", f"--output_dir={out}", "--verbose=0"))
    with open(os.path.join(out, "results.json")) as f:
        saved = json.load(f)
    assert saved["test_log_likelihood_per_sequence"] == pytest.approx(
        results["test_log_likelihood_per_sequence"])
    assert saved["test_sequences"] == 4 and saved["epochs"] == 1
    assert np.isfinite(saved["test_log_likelihood_per_sequence"])
    boundaries = saved["boundaries"]
    assert len(boundaries["z_rates"]) == 2
    for key in ("z2_vs_strokes", "z2_vs_glyphs", "z1_vs_strokes_tolerance_1"):
        scores = boundaries[key]
        assert set(scores["by_alignment"]) == {"on_end", "before_end"}
        assert scores["f1"] == max(v["f1"] for v in scores["by_alignment"].values())
    for name in ("fig5_segments.png", "samples.png"):
        assert _is_png(os.path.join(out, name)), name
    assert os.listdir(os.path.join(out, "logs"))  # TensorBoard events
    assert os.path.exists(os.path.join(out, "checkpoints", "latest", "progress.json"))
    # The default: the papers' model, recorded as such.
    assert (saved["boundary_prior"], saved["segment_lengths"]) == ("none", None)
    with open(os.path.join(out, "model_config.json")) as f:
        assert json.load(f)["boundary_prior"] is None

    # A run written before the prior flags (settings.json and
    # model_config.json without them) resumes as one with their defaults,
    # the papers' model it was trained as.
    for name in ("settings.json", "model_config.json"):
        with open(os.path.join(out, name)) as f:
            old = json.load(f)
        del old["boundary_prior"], old["segment_lengths"]
        with open(os.path.join(out, name), "w") as f:
            json.dump(old, f)
    # Rerunning with one more epoch resumes at epoch 1.
    again = iam_ondb.run(_settings("--tiny", f"--output_dir={out}", "--verbose=0",
                                   "--max_epochs=2"))
    assert again["epochs"] == 2
    with open(os.path.join(out, "checkpoints", "latest", "progress.json")) as f:
        assert json.load(f)["epoch"] == 2
    # Rerunning the finished run rewrites nothing.
    before = open(os.path.join(out, "results.json"), "rb").read()
    rerun = iam_ondb.run(_settings("--tiny", f"--output_dir={out}", "--verbose=0",
                                   "--max_epochs=2"))
    assert rerun["epochs"] == 2 and rerun["wall_seconds"] == again["wall_seconds"]
    assert open(os.path.join(out, "results.json"), "rb").read() == before
    # A model flag that differs is refused there.
    with pytest.raises(iam_ondb.FlagError, match="--units"):
        iam_ondb.run(_settings("--tiny", f"--output_dir={out}", "--units=9"))
    with pytest.raises(iam_ondb.FlagError, match="--boundary_prior none -> rate"):
        iam_ondb.run(_settings("--tiny", f"--output_dir={out}", "--boundary_prior=rate"))

    png = str(tmp_path / "drawn.png")
    npz = str(tmp_path / "drawn.npz")
    done = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "sample_handwriting.py"),
         f"--model_dir={out}", "--steps=25", "--num_samples=2", "--bias=2",
         f"--output={png}", f"--output_npz={npz}"],
        capture_output=True, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 0, done.stderr[-2000:]
    assert _is_png(png)
    with np.load(npz) as lines:
        arrays = [lines[k] for k in lines.files]
    assert [a.shape for a in arrays] == [(25, 3), (25, 3)]
    assert all(set(np.unique(a[:, 2])) <= {0.0, 1.0} for a in arrays)
    assert all(np.all(np.isfinite(a)) for a in arrays)
    # Without --output the PNG goes next to the run, nothing into the
    # current directory.
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    done = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "sample_handwriting.py"),
         f"--model_dir={out}/step_model", "--steps=5", "--num_samples=1"],
        capture_output=True, text=True, cwd=cwd, env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 0, done.stderr[-2000:]
    assert _is_png(os.path.join(out, "sampled_handwriting.png")) and not os.listdir(cwd)
    assert f"wrote {os.path.join(out, 'sampled_handwriting.png')}" in done.stdout

    # sample.py (text) refuses this run in one line naming --model_dir and
    # the run's kind (run_kind.json); without the marker, from the model.
    refused = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "sample.py"), f"--model_dir={out}"],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT})
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
    assert (f"--model_dir={out!r} holds a run of examples/iam_ondb.py" in refused.stderr
            and "reads runs of examples/ptb_char.py" in refused.stderr)
    os.remove(os.path.join(out, "run_kind.json"))
    with pytest.raises(iam_ondb.FlagError, match="--model_dir=.* without a vocabulary"):
        load_example("sample").sample(out, length=3)
    # The training scripts refuse each other's runs as --output_dir.
    char_run = tmp_path / "char"
    char_run.mkdir()
    (char_run / "run_kind.json").write_text('{"kind": "char_lm"}')
    with pytest.raises(iam_ondb.FlagError, match="--output_dir=.* holds a run of "
                                                 "examples/ptb_char.py"):
        iam_ondb.run(_settings("--tiny", f"--output_dir={char_run}"))


@pytest.mark.slow
def test_tiny_run_on_jax(tmp_path):
    # The same command under KERAS_BACKEND=jax, in a process of its own: it
    # trains, evaluates and draws from the model itself (no SavedModel).
    pytest.importorskip("jax", reason="the jax extra: pip install -e '.[jax]'")
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "iam_ondb.py"), "--tiny",
         "--boundary_prior=rate", f"--output_dir={out}", "--verbose=0"],
        env={**os.environ, "KERAS_BACKEND": "jax"}, capture_output=True, text=True,
        timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    with open(out / "results.json") as f:
        saved = json.load(f)
    assert saved["backend"] == "jax" and saved["step_model"] is None
    assert not os.path.exists(out / "step_model")
    assert np.isfinite(saved["test_log_likelihood_per_sequence"])
    assert saved["boundary_prior"] == "rate" and len(saved["boundaries"]["z_rates"]) == 2
    for name in ("fig5_segments.png", "samples.png"):
        assert _is_png(os.path.join(out, name)), name
    assert "samples.png" in done.stdout


def test_prior_flags_make_the_model_config():
    settings = _settings("--segment_lengths=4,20", "--boundary_prior=binomial")
    assert boundary_prior_flags.prior_arguments(settings) == dict(
        boundary_prior="binomial", segment_lengths=[4.0, 20.0])
    papers = _settings("--boundary_prior=none")
    assert boundary_prior_flags.prior_arguments(papers) == dict(
        boundary_prior=None, segment_lengths=None)
    lstm = _settings("--cell=lstm")
    assert (lstm["boundary_prior"], lstm["segment_lengths"]) == ("none", None)
    assert boundary_prior_flags.prior_arguments(_settings()) == dict(
        boundary_prior=None, segment_lengths=None)  # the default: the papers' model


def test_flag_errors(tmp_path):
    with pytest.raises(iam_ondb.FlagError, match="--manual_dir"):
        _settings("--dataset=iam_ondb")
    empty = tmp_path / "empty"
    empty.mkdir()
    settings = _settings("--dataset=iam_ondb", f"--manual_dir={empty}",
                         f"--data_dir={tmp_path / 'tfds'}",
                         f"--output_dir={tmp_path / 'run'}")
    with pytest.raises(iam_ondb.FlagError, match="register"):
        iam_ondb.run(settings)
    missing = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "sample_handwriting.py"),
         f"--model_dir={tmp_path}"], capture_output=True, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT})
    assert missing.returncode != 0 and "holds no step model" in missing.stderr


@pytest.mark.slow
def test_non_finite_loss_stops_before_a_checkpoint(tmp_path):
    """A learning rate of 1e30: the first epoch's NaN loss stops the run in
    one line, and no checkpoint (of a NaN state) is written."""
    out = str(tmp_path / "run")
    with pytest.raises(command_line.RunStopped) as stopped:
        iam_ondb.run(_settings("--tiny", f"--output_dir={out}", "--verbose=0",
                               "--learning_rate=1e30"))
    message = str(stopped.value)
    assert "\n" not in message and ": the training loss is nan; training stopped" in message
    assert "no checkpoint was saved before it" in message
    assert not os.path.exists(os.path.join(out, "checkpoints", "latest"))
    assert not os.path.exists(os.path.join(out, "results.json"))


def test_line_batches_of_any_length_after_two_equal_ones():
    """Batches padded to their own longest line: two first batches of one
    length and a third of another train (a Keras PyDataset fixed the time
    axis from its first two batches and refused the third)."""
    import keras

    import hmkeras
    from hmkeras.models.handwriting_model import HandwritingModel

    rng = np.random.default_rng(0)
    lines = [rng.normal(size=(n, 3)).astype("float32") for n in (7, 5, 7, 6, 12, 4)]
    batches = iam_ondb.line_batches(lines, 2)
    assert len(batches) == 3
    assert [x.shape[1] for x, _, _ in batches.as_numpy_iterator()] == [6, 6, 11]
    trainer = hmkeras.HandwritingTrainer(
        HandwritingModel(units=4, output_units=4, num_components=2, seed=0))
    trainer.compile(keras.optimizers.Adam(0.01))
    history = trainer.fit(batches, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_line_batches_on_another_backend_are_padded_to_few_lengths(monkeypatch):
    """On JAX (any backend but TensorFlow, which reads the name) every batch
    is padded to a multiple of 64 steps, with weight 0 on the padding."""
    import keras

    rng = np.random.default_rng(0)
    lines = [rng.normal(size=(n, 3)).astype("float32") for n in (7, 5, 70, 6)]
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    padded = list(iam_ondb.line_batches(lines, 2).as_numpy_iterator())
    assert [x.shape[1] for x, _, _ in padded] == [64, 128]
    for (x, y, w), pair in zip(padded, (lines[:2], lines[2:])):
        assert w.sum() == sum(len(line) - 1 for line in pair)
        np.testing.assert_array_equal(x[0, : len(pair[0]) - 1], pair[0][:-1])
        assert not x[w == 0].any() and not y[w == 0].any()
