"""HandwritingModel, its trainer and its step export (the trainer's loss tests
run on every backend)."""

import json
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
from hmkeras.training.handwriting_step_export import generate_strokes
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
    # Drawn from the model itself, the same seed draws what the export draws.
    offsets = ((0.5, -1.0), (2.0, 3.0))
    exported = generate_strokes(loaded, num_steps=6, num_samples=2, bias=0.5, seed=3)
    drawn = model.draw(6, 2, offsets=offsets, sampler={"bias": 0.5, "seed": 3})
    assert [line.shape for line in drawn] == [(6, 3), (6, 3)]
    for a, b in zip(exported, drawn):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


@pytest.mark.every_backend
def test_draw_from_the_model_is_seeded_and_denormalized():
    model = HandwritingModel(units=5, output_units=4, num_components=2, seed=1)
    offsets = ((0.5, -1.0), (2.0, 3.0))
    first = model.draw(5, 3, offsets=offsets, sampler={"seed": 7})
    again = model.draw(5, 3, offsets=offsets, sampler={"seed": 7})
    other = model.draw(5, 3, offsets=offsets, sampler={"seed": 8})
    assert [line.shape for line in first] == [(5, 3)] * 3
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not all(np.array_equal(a, b) for a, b in zip(first, other))
    for line in first:
        assert np.isin(line[:, 2], [0.0, 1.0]).all()  # pen up or down
        assert np.isfinite(line).all()


@pytest.mark.slow
@pytest.mark.every_backend
def test_trainer_loss_is_the_masked_step_mean_and_training_helps():
    rng = np.random.default_rng(1)
    keras.utils.set_random_seed(2)  # the run's seed: `fit` shuffles the lines
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


def _numpy_prior(form, z, weights, segment_lengths):
    """Eq. (1) or (2) of hmkeras.cells.boundary_prior, in NumPy: `z`
    `(batch, time, layers)`, padded steps (weight 0) left out."""
    import math

    z = z.astype(np.float64) * weights[..., None]
    counts, steps = z.sum(axis=1), weights.sum(axis=1).astype(np.float64)
    targets = 1.0 / np.asarray(segment_lengths, np.float64)
    if form == "rate":
        return 5.0 * np.sum((counts.sum(axis=0) / steps.sum() - targets) ** 2)
    total = 0.0
    for row in range(len(steps)):
        n = steps[row]
        for layer, p in enumerate(targets):
            k = counts[row, layer]
            log_choose = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
            total -= log_choose + k * math.log(p) + (n - k) * math.log1p(-p)
    return total / steps.sum()


@pytest.mark.every_backend
@pytest.mark.parametrize("form", ["rate", "binomial", None])
def test_training_loss_adds_the_masked_boundary_prior(form):
    rng = np.random.default_rng(3)
    lengths = None if form is None else [4.0, 9.0]
    model = HandwritingModel(units=5, output_units=4, num_components=2, seed=4,
                             boundary_prior=form, segment_lengths=lengths)
    assert (model.boundary_prior is None) == (form is None)
    x, y, w = pad_sequences(_lines(rng, [12, 3, 7]))
    params, rnn_outputs, *_ = model.network([x, *model.zero_state(3)], training=True)
    nll = keras.ops.convert_to_numpy(mixture_negative_log_likelihood(params, y))
    expected = float((nll * w).sum() / w.sum())
    z = keras.ops.convert_to_numpy(model.boundaries(rnn_outputs))
    if form is not None:
        prior = _numpy_prior(form, z, w, lengths)
        # Padding must matter here, or the test could not see it ignored.
        unmasked = _numpy_prior(form, z, np.ones_like(w), lengths)
        assert prior > 1e-3 and abs(prior - unmasked) > 1e-3
        expected += prior
    trainer = HandwritingTrainer(model)
    trainer.compile(keras.optimizers.SGD(0.0))  # no update: the loss of these weights
    logs = trainer.train_on_batch(x, y, sample_weight=w, return_dict=True)
    assert logs["loss"] == pytest.approx(expected, rel=1e-5)
    # Evaluation leaves the prior out, as the char LM's does.
    logs = trainer.evaluate(x, y, sample_weight=w, batch_size=3, verbose=0,
                            return_dict=True)
    assert logs["loss"] == pytest.approx(float((nll * w).sum() / w.sum()), rel=1e-5)


def test_prior_fields_are_checked_and_saved():
    # The papers' model by default (the prior costs log-likelihood here).
    assert HandwritingModelConfig(units=8).boundary_prior is None
    assert HandwritingModel(units=4, output_units=4, num_components=2).boundary_prior is None
    config = HandwritingModelConfig(units=8, boundary_prior="rate",
                                    segment_lengths=np.array([4, 12]))
    assert config.boundary_prior == "rate" and config.segment_lengths == [4.0, 12.0]
    assert HandwritingModelConfig.from_json(config.to_json()) == config
    papers = HandwritingModelConfig(units=8, boundary_prior=None)
    assert HandwritingModelConfig.from_json(papers.to_json()).boundary_prior is None
    binomial = HandwritingModelConfig(boundary_prior="binomial")
    assert HandwritingModelConfig.from_json(binomial.to_json()) == binomial
    # A configuration saved before the prior existed reads as the papers'
    # model, which it was trained as.
    old = json.loads(config.to_json())
    del old["boundary_prior"], old["segment_lengths"]
    assert HandwritingModelConfig.from_json(json.dumps(old)).boundary_prior is None
    with pytest.raises(ValueError, match="boundary_prior"):
        HandwritingModelConfig(boundary_prior="poisson")
    with pytest.raises(ValueError, match="segment_lengths"):
        HandwritingModelConfig(boundary_prior="rate", segment_lengths=[5, 15, 45])
    with pytest.raises(ValueError, match="segment_lengths"):
        HandwritingModelConfig(boundary_prior="rate", segment_lengths=[5, 1])
    with pytest.raises(ValueError, match="segment_lengths.*boundary_prior=None"):
        HandwritingModelConfig(segment_lengths=[5, 15])  # the default has no prior
    with pytest.raises(ValueError, match="segment_lengths.*boundary_prior=None"):
        HandwritingModelConfig(boundary_prior=None, segment_lengths=[5, 15])
    with pytest.raises(ValueError, match="segment_lengths.*cell='lstm'"):
        HandwritingModelConfig(cell="lstm", segment_lengths=[5, 15])
    with pytest.raises(ValueError, match="boundary_prior"):
        HandwritingModelConfig(cell="lstm", boundary_prior="poisson")
    assert HandwritingModel(cell="lstm", units=4, output_units=4,
                            num_components=2).boundary_prior is None
