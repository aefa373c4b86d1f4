"""HandwritingModel, its trainer and its step export."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np
import pytest
import tensorflow as tf

from hmkeras.heads.mixture_density_output import mixture_negative_log_likelihood
from hmkeras.models.handwriting_model import HandwritingModel
from hmkeras.models.handwriting_model import HandwritingModelConfig
from hmkeras.models.handwriting_model import pad_sequences
from hmkeras.training.handwriting_step_export import export_handwriting_step_model
from hmkeras.training.handwriting_training import HandwritingTrainer


def _lines(rng, lengths):
    out = []
    for n in lengths:
        seq = rng.normal(size=(n, 3)).astype(np.float32)
        seq[:, 2] = rng.random(n) < 0.2
        out.append(seq)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("cell", ["hmlstm", "lstm"])
def test_log_likelihoods_ignore_padding_and_match_stepping(cell, tmp_path):
    rng = np.random.default_rng(0)
    model = HandwritingModel(cell=cell, units=6, output_units=5, num_components=2, seed=1)
    lines = _lines(rng, [7, 4, 9])
    batched = model.sequence_log_likelihoods(lines, batch_size=3)
    alone = np.concatenate([model.sequence_log_likelihoods([q]) for q in lines])
    np.testing.assert_allclose(batched, alone, rtol=1e-5, atol=1e-4)
    # The exported step model, fed one step at a time with its own state,
    # gives the same per-sequence log-likelihood.
    path = export_handwriting_step_model(model, str(tmp_path / "step"), (0.5, -1), (2, 3))
    loaded = tf.saved_model.load(path)
    info = loaded.signatures["info"]()
    np.testing.assert_allclose(info["offset_std"].numpy(), [2, 3])
    assert HandwritingModelConfig.from_json(
        info["config_json"].numpy().decode()) == model.config
    line = lines[2]
    state = loaded.signatures["zero_state"](batch_size=tf.constant(1))
    total = 0.0
    for t in range(len(line) - 1):
        out = loaded.signatures["step"](strokes=tf.constant(line[t : t + 1]), **state)
        state = {k: v for k, v in out.items() if k.startswith("state_")}
        total -= float(mixture_negative_log_likelihood(out["params"], line[t + 1 : t + 2])[0])
        assert ("boundaries" in out) == (cell == "hmlstm")
    assert total == pytest.approx(batched[2], rel=1e-4, abs=1e-3)


@pytest.mark.slow
def test_trainer_loss_is_the_masked_step_mean_and_training_helps():
    rng = np.random.default_rng(1)
    model = HandwritingModel(units=6, output_units=6, num_components=2, seed=2)
    lines = _lines(rng, [6, 10, 8, 5])
    x, y, w = pad_sequences(lines)
    assert w.sum() == sum(len(q) - 1 for q in lines)
    trainer = HandwritingTrainer(model)
    trainer.compile(keras.optimizers.Adam(0.02))
    logs = trainer.evaluate(x, y, sample_weight=w, batch_size=4, verbose=0,
                            return_dict=True)
    ll = model.sequence_log_likelihoods(lines)
    assert logs["loss"] == pytest.approx(-ll.sum() / w.sum(), rel=1e-4)
    assert logs["nll_per_sequence"] == pytest.approx(-ll.mean(), rel=1e-4)
    assert 0 <= logs["z_rate_1"] <= 1
    trainer.fit(x, y, sample_weight=w, batch_size=4, epochs=15, verbose=0)
    assert model.sequence_log_likelihoods(lines).mean() > ll.mean()


def test_config_is_checked():
    with pytest.raises(ValueError, match="num_components"):
        HandwritingModelConfig(num_components=0)
    with pytest.raises(ValueError, match="cell"):
        HandwritingModelConfig(cell="gru")
    with pytest.raises(ValueError, match="num_layers"):
        HandwritingModelConfig(num_layers=1)
    config = HandwritingModelConfig()
    assert (config.units, config.output_units, config.num_layers) == (400, 400, 3)
    with pytest.raises(ValueError, match="HandwritingModelConfig"):
        HandwritingModel(config="x")
