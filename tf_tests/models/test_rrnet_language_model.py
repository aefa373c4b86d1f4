"""Tests of hmkeras.models.rrnet_language_model (tiny models, NumPy references)."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

import finite_differences
from hmkeras import data
from hmkeras.cells.recurrent_recursive_cell import MERGE
from hmkeras.cells.recurrent_recursive_cell import SPLIT
from hmkeras.models.rrnet_language_model import RecurrentRecursiveLanguageModel
from hmkeras.models.rrnet_language_model import RecurrentRecursiveLanguageModelConfig

VOCAB, UNITS, TIME, DEPTH = 11, 8, 10, 3


def _model(**kwargs):
    options = dict(vocab_size=VOCAB, units=UNITS, max_depth=DEPTH, dropout=0.0, seed=3)
    options.update(kwargs)
    lm = RecurrentRecursiveLanguageModel(**options)
    # A non-trivial baseline (its kernel starts at zero).
    rng = np.random.default_rng(7)
    for w in lm.baseline.weights:
        w.assign(rng.normal(size=w.shape).astype("float32"))
    # A policy far from uniform, so that all three actions occur.
    lm.cell.policy_kernel.assign(
        3 * rng.normal(size=lm.cell.policy_kernel.shape).astype("float32"))
    return lm


def _batch(batch=4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(1, VOCAB, size=(batch, TIME)).astype("int32")
    y = rng.integers(1, VOCAB, size=(batch, TIME)).astype("int32")
    w = np.ones((batch, TIME), "float32")
    w[0, 6:] = 0  # padding at the end of a row
    w[2, 3:] = 0
    return x, y, w


def _log_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def _numpy_policy(lm, x, analysis, kernel=None, bias=None):
    """Masked policy log-probabilities `(batch, time, 3)` from
    `[h_{t-1}; e_t]` and the stack depth the taken actions imply (with
    the cell's policy weights unless `kernel` and `bias` are given)."""
    h = np.asarray(analysis["h"])
    actions = np.asarray(analysis["actions"]).astype(int)
    e = np.asarray(lm.embedding.embeddings)[x]
    if kernel is None:
        kernel, bias = np.asarray(lm.cell.policy_kernel), np.asarray(lm.cell.policy_bias)
    batch, time = x.shape
    out = np.zeros((batch, time, 3))
    for b in range(batch):
        depth, previous = 0, np.zeros(UNITS)
        for t in range(time):
            logits = np.concatenate([previous, e[b, t]]) @ kernel + bias
            allowed = np.array([depth < DEPTH, depth > 0, True])
            logits = np.where(allowed, logits, -np.inf)
            out[b, t] = _log_softmax(logits[None])[0]
            depth += {SPLIT: 1, MERGE: -1}.get(actions[b, t], 0)
            previous = h[b, t]
    return out


@pytest.mark.parametrize("discount", [0.0, 0.9, 1.0])
def test_reinforce_terms_match_numpy(discount):
    lm = _model(reward_discount=discount, entropy_weight=0.1, policy_weight=0.7,
                baseline_weight=0.3)
    x, y, w = _batch()
    analysis = lm.analyze(x, y, training=True)  # sampled actions
    terms = lm.objective(analysis, y, w)

    actions = np.asarray(analysis["actions"]).astype(int)
    log_pi = _numpy_policy(lm, x, analysis)
    log_prob = np.take_along_axis(log_pi, actions[..., None], -1)[..., 0]
    np.testing.assert_allclose(analysis["log_probs"], log_prob, atol=1e-5)
    p = np.exp(log_pi)
    entropy = -np.sum(p * np.where(p > 0, log_pi, 0.0), -1)
    np.testing.assert_allclose(analysis["entropies"], entropy, atol=1e-5)

    # Rewards: log p(next word) from the softmax; returns: discounted sums.
    nll = -np.take_along_axis(_log_softmax(np.asarray(analysis["logits"], "float64")),
                              y[..., None], -1)[..., 0]
    rewards = -nll * w
    returns = np.zeros_like(rewards)
    running = np.zeros(len(x))
    for t in reversed(range(TIME)):
        running = rewards[:, t] + discount * running
        returns[:, t] = running
    np.testing.assert_allclose(terms["rewards"], rewards, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(terms["returns"], returns, rtol=1e-5, atol=1e-4)

    # Baseline: linear in [h_{t-1}; e_t].
    h = np.asarray(analysis["h"])
    previous = np.concatenate([np.zeros_like(h[:, :1]), h[:, :-1]], 1)
    e = np.asarray(lm.embedding.embeddings)[x]
    v, c = (np.asarray(t) for t in lm.baseline.weights)
    baseline = (np.concatenate([previous, e], -1) @ v)[..., 0] + c[0]
    np.testing.assert_allclose(analysis["baseline"], baseline, atol=1e-5)

    count = w.sum()
    policy = np.sum(-(returns - baseline) * log_prob * w) / count
    mean_entropy = np.sum(entropy * w) / count
    baseline_loss = np.sum((returns - baseline) ** 2 * w) / count
    lm_loss = np.sum(nll * w) / count
    np.testing.assert_allclose(terms["policy"], policy, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(terms["entropy"], mean_entropy, rtol=1e-5)
    np.testing.assert_allclose(terms["baseline"], baseline_loss, rtol=1e-4)
    np.testing.assert_allclose(terms["nll"], lm_loss, rtol=1e-5)
    np.testing.assert_allclose(
        terms["loss"], lm_loss + 0.7 * policy - 0.1 * mean_entropy + 0.3 * baseline_loss,
        rtol=1e-4, atol=1e-4)


def test_policy_gradient_comes_only_from_the_policy_terms():
    lm = _model(entropy_weight=0.1)
    x, y, w = _batch(seed=1)
    policy_vars = [lm.cell.policy_kernel, lm.cell.policy_bias]
    baseline_vars = list(lm.baseline.trainable_weights)
    with tf.GradientTape(persistent=True) as tape:
        analysis = lm.analyze(x, y, training=True)
        terms = lm.objective(analysis, y, w)
        without_lm = terms["loss"] - terms["nll"]
    # The sampled actions are discrete: no LM gradient reaches the policy.
    for g in tape.gradient(terms["nll"], policy_vars):
        assert g is None or not np.any(np.asarray(g))
    # Nor the baseline's loss (its input is cut from the gradient).
    for g in tape.gradient(terms["baseline"], policy_vars):
        assert g is None or not np.any(np.asarray(g))
    # With the LM loss removed, the policy still gets a (non-zero) gradient,
    # that of policy_weight * policy - entropy_weight * entropy.
    total = tape.gradient(without_lm, policy_vars)
    policy = tape.gradient(terms["policy"], policy_vars)
    entropy = tape.gradient(terms["entropy"], policy_vars)
    for g, gp, ge in zip(total, policy, entropy):
        assert np.any(np.abs(np.asarray(g)) > 1e-6)
        np.testing.assert_allclose(g, np.asarray(gp) - 0.1 * np.asarray(ge), atol=1e-5)
    # Its value: finite differences (float64) of the policy and entropy
    # terms of the NumPy policy, the sampled actions and advantages held.
    actions = np.asarray(analysis["actions"]).astype(int)
    advantage = np.asarray(terms["returns"], "float64") - np.asarray(analysis["baseline"])
    config = lm.config

    def policy_terms(values):
        log_pi = _numpy_policy(lm, x, analysis, values["kernel"], values["bias"])
        taken = np.take_along_axis(log_pi, actions[..., None], -1)[..., 0]
        p = np.exp(log_pi)
        entropies = -np.sum(p * np.where(p > 0, log_pi, 0.0), -1)
        return (config.policy_weight * np.sum(-advantage * taken * w)
                - config.entropy_weight * np.sum(entropies * w)) / w.sum()

    largest = finite_differences.assert_gradients_match(
        policy_terms, {"kernel": lm.cell.policy_kernel.numpy(), "bias": lm.cell.policy_bias.numpy()},
        {"kernel": total[0], "bias": total[1]}, entries=6, rtol=1e-4, atol=1e-6, seed=1)
    assert largest > 1e-3
    # The baseline learns from its squared error only.
    for g, gb in zip(tape.gradient(without_lm, baseline_vars),
                     tape.gradient(terms["baseline"], baseline_vars)):
        np.testing.assert_allclose(g, gb, rtol=1e-5, atol=1e-6)
    for g in tape.gradient(terms["policy"], baseline_vars):
        assert g is None or not np.any(np.asarray(g))
    del tape


def test_perplexity_is_exp_mean_nll_with_greedy_actions():
    lm = _model()
    rng = np.random.default_rng(2)
    sentences = [rng.integers(3, VOCAB, size=n) for n in (4, 9, 2, 12, 6)]
    batches = data.SentenceBatches(sentences, seq_len=TIME, batch_size=2, overflow="split")
    result = lm.evaluate_perplexity(batches)
    x, y, w = batches.arrays()
    analysis = lm.analyze(x, training=False)
    # Greedy: every action is the argmax of the (masked) policy.
    log_pi = _numpy_policy(lm, x, analysis)
    np.testing.assert_array_equal(np.asarray(analysis["actions"]).astype(int),
                                  log_pi.argmax(-1))
    nll = -np.take_along_axis(_log_softmax(np.asarray(analysis["logits"], "float64")),
                              y[..., None], -1)[..., 0]
    expected = math.exp(np.sum(nll * w) / w.sum())
    assert result["num_targets"] == int(w.sum())
    np.testing.assert_allclose(result["perplexity"], expected, rtol=1e-5)
    # Greedy evaluation is deterministic.
    assert lm.evaluate_perplexity(batches)["perplexity"] == result["perplexity"]


@pytest.mark.slow
def test_fit_and_save_load_round_trip(tmp_path):
    lm = _model(embedding_dim=6)
    x, y, w = _batch()
    lm.compile(keras.optimizers.SGD(0.5, global_clipnorm=5.0))
    before = np.asarray(lm.cell.policy_kernel).copy()
    history = lm.fit(x, y, sample_weight=w, batch_size=2, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert not np.allclose(before, lm.cell.policy_kernel)  # REINFORCE moved it
    path = str(tmp_path / "rrnet.keras")
    lm.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, RecurrentRecursiveLanguageModel)
    assert loaded.config == lm.config
    np.testing.assert_allclose(loaded(x), lm(x), atol=1e-6)
    weights = str(tmp_path / "rrnet.weights.h5")
    lm.save_weights(weights)
    fresh = RecurrentRecursiveLanguageModel(config=lm.config)
    fresh.load_weights(weights)
    np.testing.assert_allclose(fresh(x), lm(x), atol=1e-6)
    tree = lm.tree_of(x[0], [f"w{i}" for i in x[0]])
    assert tree.replace("[", "").replace("]", "").split() == [f"w{i}" for i in x[0]]
    assert tree.count("[") == int(np.sum(lm.greedy_actions(x[:1]) == SPLIT))


def test_config_round_trip_and_bad_arguments():
    config = RecurrentRecursiveLanguageModelConfig(vocab_size=5, units=4, seed=1)
    assert RecurrentRecursiveLanguageModelConfig.from_json(config.to_json()) == config
    with pytest.raises(ValueError, match="reward_discount"):
        RecurrentRecursiveLanguageModelConfig(vocab_size=5, reward_discount=1.5)
    with pytest.raises(ValueError, match="units"):
        RecurrentRecursiveLanguageModelConfig(vocab_size=5, units=0)
    with pytest.raises(ValueError, match="config"):
        RecurrentRecursiveLanguageModel(config="big")
    with pytest.raises(ValueError, match="operations_per_token"):
        RecurrentRecursiveLanguageModelConfig(vocab_size=5, operations_per_token=0)


def test_operations_between_words_train_and_draw_trees():
    """`operations_per_token=3`: the policy may split and merge between
    words; the greedy trees have one recur per word and one "[" per split,
    and a training step moves the policy."""
    from hmkeras.cells.recurrent_recursive_cell import RECUR

    lm = RecurrentRecursiveLanguageModel(vocab_size=9, units=6, max_depth=3,
                                         operations_per_token=3, seed=2)
    x = np.random.default_rng(2).integers(1, 9, size=(4, 7)).astype("int32")
    actions = lm.greedy_actions(x)
    assert actions.shape == (4, 7, 3)
    assert np.all(np.sum(actions == RECUR, axis=-1) == 1)
    tree = lm.tree_of(x[0])
    assert tree.count("[") == tree.count("]") == int(np.sum(actions[0] == SPLIT))
    lm.compile(optimizer=keras.optimizers.SGD(0.5))
    before = np.asarray(lm.cell.policy_kernel).copy()
    logs = lm.train_on_batch(x[:, :-1], x[:, 1:], return_dict=True)
    assert all(np.isfinite(v) for v in logs.values())
    assert not np.allclose(np.asarray(lm.cell.policy_kernel), before)
    clone = RecurrentRecursiveLanguageModel.from_config(lm.get_config())
    assert clone.config.operations_per_token == 3
