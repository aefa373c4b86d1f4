"""`bench/gradient_norms.py` at a tiny size, in a subprocess (its flags are
process-global), against an independent computation of the same norms."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from example_modules import ROOT

SIZES = dict(units=5, layers=2, batch_size=3, seq_len=7, vocab=9, embedding=4)


def _model_and_batch(seed):
    """The script's model and first batch, rebuilt here from its recipe."""
    import keras

    import hmkeras

    keras.utils.set_random_seed(seed)
    cell = hmkeras.HMRNNCell(SIZES["units"], num_layers=SIZES["layers"], layer_norm=False)
    model = keras.Sequential([
        keras.Input((SIZES["seq_len"],), dtype="int32"),
        keras.layers.Embedding(SIZES["vocab"], SIZES["embedding"]),
        keras.layers.RNN(cell, return_sequences=True),
        keras.layers.Dense(SIZES["vocab"]),
    ])
    rng = np.random.default_rng(seed)
    batch = rng.integers(0, SIZES["vocab"], size=(SIZES["batch_size"], SIZES["seq_len"] + 1))
    return model, batch.astype("int32")


@pytest.mark.slow
def test_recorded_norms_are_the_gradient_norms(tmp_path):
    output = tmp_path / "norms.json"
    flags = [f"--{name}={value}" for name, value in SIZES.items()]
    done = subprocess.run(
        [sys.executable, os.path.join(ROOT, "bench", "gradient_norms.py"), *flags,
         "--models=hmrnn_noln,keras_stacked_lstm", "--seeds=4,5", "--steps=2",
         f"--output={output}"],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert done.returncode == 0, done.stderr[-3000:]
    with open(output) as f:
        report = json.load(f)
    table = (tmp_path / "norms.md").read_text()
    assert "HMRNNCell, no layer norm" in table
    results = {r["id"]: r for r in report["results"]}
    assert set(results) == {"hmrnn_noln", "keras_stacked_lstm"}
    for result in results.values():
        assert np.asarray(result["norms"]).shape == (2, 2)  # seeds x steps

    import keras
    import tensorflow as tf

    for seed_index, seed in enumerate((4, 5)):
        model, batch = _model_and_batch(seed)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        with tf.GradientTape() as tape:
            loss = loss_fn(batch[:, 1:], model(batch[:, :-1], training=True))
        gradients = tape.gradient(loss, model.trainable_variables)
        expected = np.sqrt(sum(np.sum(np.square(np.asarray(tf.convert_to_tensor(g),
                                                           dtype=np.float64)))
                               for g in gradients))
        recorded = results["hmrnn_noln"]["norms"][seed_index][0]
        assert recorded == pytest.approx(expected, rel=1e-5)
        assert results["hmrnn_noln"]["losses"][seed_index][0] == pytest.approx(
            float(loss), rel=1e-6)
