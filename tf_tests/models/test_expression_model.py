"""Tests of hmkeras.models.ExpressionModel (the MEE encoder-decoder)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from hmkeras.data import mee
from hmkeras.models.expression_model import ExpressionModel


def _batch(count=4, length=4):
    examples = list(mee.generate_expressions(length, "train", count, seed=5))
    width = max(len(e.expression) for e in examples)
    tokens = np.zeros((count, width), np.int32)
    operations = np.full((count, width), mee.RECUR_OPERATION, np.int32)
    for row, e in enumerate(examples):
        tokens[row, : len(e.expression)] = mee.encode_expression(e.expression)
        operations[row, : len(e.expression)] = e.operations
    digits = np.array([[e.value // 10, e.value % 10] for e in examples], np.int32)
    return examples, {"tokens": tokens, "operations": operations}, digits


def test_supervised_encoder_follows_the_brackets_and_its_policy_loss():
    examples, inputs, digits = _batch()
    model = ExpressionModel("rrnet_supervised", units=6, embedding_dim=4,
                            policy_weight=0.5, seed=0)
    logits, (actions, log_probs, _, mask) = model.analyze(inputs, digits=digits)
    assert logits.shape == (4, 2, 10)
    for row, e in enumerate(examples):
        n = len(e.expression)
        assert np.asarray(actions)[row, :n].astype(int).tolist() == list(e.operations)
        assert not np.asarray(mask)[row, n:].any() and np.asarray(mask)[row, :n].all()
    loss, correct, policy = model._objective(inputs, digits, training=False)
    manual = -np.mean(np.sum(np.asarray(log_probs) * np.asarray(mask), axis=1))
    assert float(policy) == pytest.approx(manual, rel=1e-5)
    ce = tf.reduce_mean(tf.reduce_sum(tf.keras.losses.sparse_categorical_crossentropy(
        digits, logits, from_logits=True), -1))
    assert float(loss) == pytest.approx(float(ce) + 0.5 * manual, rel=1e-5)
    greedy = np.argmax(np.asarray(model(inputs)), -1)
    assert np.asarray(correct).tolist() == np.all(greedy == digits, -1).tolist()


@pytest.mark.parametrize("encoder", ["lstm", "rrnet_supervised"])
def test_autoregressive_decoder_feeds_back_the_first_digit(encoder):
    _, inputs, digits = _batch(count=8)
    model = ExpressionModel(encoder, units=6, embedding_dim=4, seed=4)
    greedy = np.asarray(model(inputs))
    first = np.argmax(greedy[:, 0], -1)
    # Teacher forcing with the greedy first digit is the greedy decoder.
    forced = np.asarray(model.analyze(inputs, digits=np.stack([first, first], 1))[0])
    np.testing.assert_allclose(forced, greedy, rtol=1e-5, atol=1e-6)
    # Another first digit changes the second step only.
    other = np.asarray(model.analyze(
        inputs, digits=np.stack([(first + 1) % 10, first], 1))[0])
    np.testing.assert_allclose(other[:, 0], greedy[:, 0], rtol=1e-5, atol=1e-6)
    assert np.abs(other[:, 1] - greedy[:, 1]).min() > 1e-6
    # Training (teacher-forced) correctness is the greedy decoder's.
    digits = np.stack([first, np.argmax(greedy[:, 1], -1)], 1)
    digits[::2, 1] = (digits[::2, 1] + 1) % 10
    digits[1::4, 0] = (digits[1::4, 0] + 1) % 10
    _, correct, _ = model._objective(inputs, digits, training=False)
    assert np.asarray(correct).tolist() == np.all(
        np.argmax(greedy, -1) == digits, -1).tolist()


def test_step_decoder_ignores_the_targets():
    _, inputs, digits = _batch()
    model = ExpressionModel("lstm", units=6, embedding_dim=4, decoder="steps", seed=4)
    np.testing.assert_allclose(np.asarray(model.analyze(inputs, digits=digits)[0]),
                               np.asarray(model(inputs)), rtol=1e-6)


def test_random_encoder_uses_one_fixed_operation_per_symbol():
    _, inputs, _ = _batch()
    model = ExpressionModel("rrnet_random", units=4, embedding_dim=4, seed=3)
    operations = np.asarray(model.operations_for(inputs))
    tokens = inputs["tokens"]
    for symbol in np.unique(tokens):
        assert len(np.unique(operations[tokens == symbol])) == 1
    assert np.all(operations[tokens == 0] == mee.RECUR_OPERATION)


def test_reinforce_greedy_at_inference_and_sampled_in_training():
    _, inputs, digits = _batch(count=32)
    model = ExpressionModel("rrnet_reinforce", units=4, embedding_dim=4, seed=1)
    first = np.asarray(model.analyze(inputs, training=False)[1][0])
    second = np.asarray(model.analyze(inputs, training=False)[1][0])
    np.testing.assert_array_equal(first, second)
    sampled = [np.asarray(model.analyze(inputs, training=True)[1][0]) for _ in range(2)]
    assert not np.array_equal(sampled[0], sampled[1])


@pytest.mark.parametrize("kwargs, name", [
    (dict(encoder="gru"), "encoder"),
    (dict(encoder="rrnet_reinforce", reward="bits"), "reward"),
    (dict(units=0), "units"),
    (dict(entropy_weight=-1.0), "entropy_weight"),
    (dict(decoder="tree"), "decoder"),
    (dict(encoder="rrnet_reinforce", operations_per_token=0), "operations_per_token"),
    (dict(encoder="rrnet_supervised", operations_per_token=2), "operations_per_token"),
    (dict(encoder="rrnet_supervised", memory="saved"), "memory"),
    (dict(encoder="rrnet_reinforce", baseline="mean"), "baseline"),
    # Options of other encoders.
    (dict(encoder="rrnet_supervised", reward="likelihood"), "reward"),
    (dict(encoder="lstm", baseline="greedy"), "baseline"),
    (dict(encoder="rrnet_supervised", tree_samples=2), "tree_samples"),
    (dict(encoder="rrnet_reinforce", baseline="leave_one_out", tree_samples=1),
     "tree_samples"),
    (dict(encoder="rrnet_reinforce", tree_samples=0), "tree_samples"),
    (dict(encoder="rrnet_reinforce", tree_samples=2.0), "tree_samples"),
    (dict(encoder="rrnet_random", recur_bias=3.0), "recur_bias"),
    (dict(encoder="lstm", memory="tree"), "memory"),
    (dict(encoder="rrnet_random", policy_inputs="token"), "policy_inputs"),
    (dict(encoder="rrnet_reinforce", policy_inputs="tokens"), "policy_inputs"),
    (dict(encoder="rrnet_supervised", policy_warmup_steps=5), "policy_warmup_steps"),
    (dict(encoder="rrnet_reinforce", policy_warmup_steps=-1), "policy_warmup_steps"),
    (dict(encoder="rrnet_reinforce", policy_warmup_steps=2.0), "policy_warmup_steps"),
    (dict(encoder="lstm", exploration=0.1), "exploration"),
    (dict(encoder="rrnet_reinforce", exploration=1.5), "exploration"),
    (dict(encoder="lstm", subtree_start="fresh"), "subtree_start"),
    (dict(encoder="rrnet_supervised", subtree_start="zero"), "subtree_start"),
])
def test_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        ExpressionModel(**kwargs)


def test_default_operations_per_token():
    # The paper's reading for REINFORCE (chosen by measurement), one
    # operation per token for the encoders that are given theirs.
    assert ExpressionModel("rrnet_reinforce", units=4).cell.operations_per_token == 3
    assert ExpressionModel("rrnet_supervised", units=4).cell.operations_per_token == 1
    assert ExpressionModel("rrnet_reinforce", units=4,
                           operations_per_token=1).cell.operations_per_token == 1
    assert ExpressionModel("lstm", units=4).operations_per_token == 1


def test_default_memory():
    # Tree-LSTM merges for the encoders measured with them (and their
    # random-tree control), the continued memory for REINFORCE.
    assert ExpressionModel("rrnet_supervised", units=4).cell.memory == "tree"
    assert ExpressionModel("rrnet_random", units=4).cell.memory == "tree"
    assert ExpressionModel("rrnet_reinforce", units=4).cell.memory == "continued"
    assert ExpressionModel("lstm", units=4).memory is None
    model = ExpressionModel("rrnet_supervised", units=4, memory="continued")
    assert model.cell.memory == "continued"
    assert ExpressionModel.from_config(model.get_config()).cell.memory == "continued"


def test_default_reward_and_baseline():
    # REINFORCE's, chosen by measurement; the other encoders take none.
    model = ExpressionModel("rrnet_reinforce", units=4)
    assert (model.reward, model.baseline_name) == ("likelihood", "greedy")
    assert not hasattr(model, "baseline")
    model = ExpressionModel("rrnet_reinforce", units=4, reward="accuracy",
                            baseline="learned")
    assert (model.reward, model.baseline_name) == ("accuracy", "learned")
    assert isinstance(model.baseline, keras.layers.Dense)
    clone = ExpressionModel.from_config(model.get_config())
    assert (clone.reward, clone.baseline_name) == ("accuracy", "learned")
    model = ExpressionModel("rrnet_supervised", units=4)
    assert (model.reward, model.baseline_name) == (None, None)


def test_reinforce_between_tokens_trains_its_policy():
    """`operations_per_token=3`: up to two splits / merges before each
    token's recur, and one REINFORCE step moves the policy's weights."""
    _, inputs, digits = _batch(count=32)
    model = ExpressionModel("rrnet_reinforce", units=4, embedding_dim=4,
                            operations_per_token=3, seed=1)
    actions = np.asarray(model.analyze(inputs, training=True)[1][0])
    real = np.asarray(inputs["tokens"]) > 0
    assert actions.shape == real.shape + (3,)
    assert np.all(np.sum(actions == 2, axis=-1)[real] == 1)  # one recur per token
    assert np.any(np.sum(actions >= 0, axis=-1)[real] > 1)  # operations between tokens
    model.compile(optimizer=keras.optimizers.Adam(0.01))
    before = np.asarray(model.cell.policy_kernel).copy()
    logs = model.train_on_batch(inputs, digits, return_dict=True)
    assert np.isfinite(logs["loss"]) and logs["policy_loss"] != 0
    assert not np.allclose(np.asarray(model.cell.policy_kernel), before)


@pytest.mark.parametrize("reward", ["accuracy", "likelihood"])
def test_greedy_baseline_is_the_greedy_trees_reward(reward):
    """`baseline="greedy"`: the surrogate is -(r(sampled) - r(greedy)) *
    log p(sampled tree), with r of the greedy tree from its own pass."""
    keras.utils.set_random_seed(0)  # the unseeded layers' weights
    _, inputs, digits = _batch(count=16)
    model = ExpressionModel("rrnet_reinforce", units=4, embedding_dim=4, reward=reward,
                            baseline="greedy", policy_weight=1.0, entropy_weight=0.0,
                            seed=1)
    assert not hasattr(model, "baseline")  # no baseline weights
    # Half the targets are the greedy model's answers: some are right.
    digits[::2] = np.argmax(np.asarray(model(inputs)), -1)[::2]
    greedy_logits, greedy_tree = model.analyze(inputs, training=False, digits=digits)
    sampler = model.cell.seed_generator.state
    start = np.asarray(sampler).copy()
    logits, (sampled, log_probs, _, mask) = model.analyze(inputs, training=True,
                                                          digits=digits)
    assert not np.array_equal(np.asarray(sampled), np.asarray(greedy_tree[0]))

    def rewards(logits):
        probabilities = tf.nn.softmax(logits).numpy()
        task = -np.sum(np.log(np.take_along_axis(
            probabilities, digits[..., None], -1)[..., 0]), -1)
        correct = np.all(np.argmax(probabilities, -1) == digits, -1)
        return correct.astype(float) if reward == "accuracy" else -task

    greedy = np.asarray(model.greedy_reward(inputs, digits))
    np.testing.assert_allclose(greedy, rewards(np.asarray(greedy_logits)), rtol=1e-5,
                               atol=1e-6)
    sampler.assign(start)  # the same sampled trees
    loss, _, policy = model._objective(inputs, digits, training=True,
                                       greedy_reward=greedy)
    advantage = rewards(np.asarray(logits)) - greedy
    if reward == "likelihood":  # (an untrained model's answers hardly
        assert np.all(advantage != 0)  # depend on the tree)
    assert np.any(greedy > 0) if reward == "accuracy" else np.all(greedy < 0)
    log_prob = np.sum(np.asarray(log_probs) * np.asarray(mask), -1)
    assert float(policy) == pytest.approx(-np.mean(advantage * log_prob), rel=1e-4,
                                          abs=1e-6)
    # Evaluation builds the greedy tree: no advantage, no policy loss.
    assert float(model._objective(inputs, digits, training=False)[2]) == 0.0
    if reward == "accuracy":
        return
    # No baseline regression term in the loss.
    task = -np.mean(rewards(np.asarray(logits)))
    assert float(loss) == pytest.approx(task + float(policy), rel=1e-4)
    model.compile(optimizer=keras.optimizers.Adam(0.01))
    before = np.asarray(model.cell.policy_kernel).copy()
    logs = model.train_on_batch(inputs, digits, return_dict=True)
    assert np.isfinite(logs["loss"]) and logs["policy_loss"] != 0
    assert not np.allclose(np.asarray(model.cell.policy_kernel), before)


def test_leave_one_out_baseline_is_the_mean_of_the_siblings():
    """`baseline="leave_one_out"`: a training step reads each expression
    `tree_samples` times; each tree's advantage is its reward minus the
    mean reward of its expression's other trees (Kool et al. 2019)."""
    keras.utils.set_random_seed(0)
    _, inputs, digits = _batch(count=6)
    samples = 3
    model = ExpressionModel("rrnet_reinforce", units=4, embedding_dim=4,
                            baseline="leave_one_out", tree_samples=samples,
                            policy_weight=1.0, entropy_weight=0.0, seed=1)
    assert model.tree_samples == samples
    repeated = {name: np.repeat(value, samples, axis=0) for name, value in inputs.items()}
    repeated_digits = np.repeat(digits, samples, axis=0)
    sampler = model.cell.seed_generator.state
    start = np.asarray(sampler).copy()
    logits, (sampled, log_probs, _, mask) = model.analyze(repeated, training=True,
                                                          digits=repeated_digits)
    sampled = np.asarray(sampled).reshape(6, samples, -1)
    # The siblings' trees differ (an untrained policy is near uniform).
    assert any(len({row.tobytes() for row in group}) > 1 for group in sampled)
    logits64 = np.asarray(logits, np.float64)
    log_softmax = logits64 - np.log(np.exp(logits64).sum(-1, keepdims=True))
    reward = np.sum(np.take_along_axis(log_softmax, repeated_digits[..., None], -1),
                    axis=(1, 2)).reshape(6, samples)
    others = (reward.sum(1, keepdims=True) - reward) / (samples - 1)
    advantage = (reward - others).reshape(-1)
    assert np.all(advantage != 0)
    log_prob = np.sum(np.asarray(log_probs) * np.asarray(mask), -1)
    expected_policy = -np.mean(advantage * log_prob)
    sampler.assign(start)
    loss, _, policy = model._objective(repeated, repeated_digits, training=True,
                                       samples=samples)
    # The advantages are differences of float32 rewards (about 1e-3 apart,
    # each rounded by about 1e-6): an absolute tolerance of 1 % of them.
    assert float(policy) == pytest.approx(expected_policy, abs=2e-5)
    assert float(loss) == pytest.approx(-reward.mean() + expected_policy, rel=1e-5)
    # Evaluation builds the greedy tree once per expression: no advantage.
    assert float(model._objective(inputs, digits, training=False)[2]) == 0.0
    # A training step on the 6 expressions is this objective on 18 trees.
    model.compile(optimizer=keras.optimizers.Adam(0.01), jit_compile=False)
    sampler.assign(start)
    before = np.asarray(model.cell.policy_kernel).copy()
    logs = model.train_on_batch(inputs, digits, return_dict=True)
    assert logs["loss"] == pytest.approx(float(loss), rel=1e-4)
    assert logs["policy_loss"] == pytest.approx(expected_policy, abs=2e-5)
    assert not np.allclose(np.asarray(model.cell.policy_kernel), before)


@pytest.mark.every_backend
@pytest.mark.parametrize("policy_inputs", ["state_and_token", "token"])
def test_policy_warmup_trains_the_encoder_first(policy_inputs):
    """`policy_warmup_steps=2`: the first two training steps leave the
    policy's weights where they are (its losses are out; the encoder and
    decoder learn), the third moves them; the count is saved and goes on
    from where it was after a reload."""
    _, inputs, digits = _batch(count=16)
    model = ExpressionModel("rrnet_reinforce", units=4, embedding_dim=4,
                            operations_per_token=1, policy_inputs=policy_inputs,
                            policy_warmup_steps=2, seed=0)
    model.compile(optimizer=keras.optimizers.Adam(0.01))
    moved = []
    for _ in range(3):
        policy = np.asarray(model.cell.policy_kernel).copy()
        encoder = np.asarray(model.cell.kernel).copy()
        logs = model.train_on_batch(inputs, digits, return_dict=True)
        assert logs["policy_loss"] != 0  # computed (and logged) all along
        assert not np.allclose(np.asarray(model.cell.kernel), encoder)
        moved.append(not np.allclose(np.asarray(model.cell.policy_kernel), policy))
    assert moved == [False, False, True]
    assert int(keras.ops.convert_to_numpy(model.trained_steps)) == 3
    # Without a warm-up there is no counter, and the first step moves the policy.
    plain = ExpressionModel("rrnet_reinforce", units=4, embedding_dim=4,
                            operations_per_token=1, policy_inputs=policy_inputs, seed=0)
    assert not hasattr(plain, "trained_steps")
    assert ExpressionModel.from_config(model.get_config()).policy_warmup_steps == 2


@pytest.mark.every_backend
def test_policy_warmup_count_is_saved(tmp_path):
    _, inputs, digits = _batch(count=8)
    model = ExpressionModel("rrnet_reinforce", units=4, embedding_dim=4,
                            policy_warmup_steps=3, seed=0)
    model.compile(optimizer=keras.optimizers.Adam(0.01))
    model.train_on_batch(inputs, digits)
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert int(keras.ops.convert_to_numpy(loaded.trained_steps)) == 1
    assert loaded.policy_warmup_steps == 3


def test_tree_samples_defaults():
    # Four trees per expression for the leave-one-out baseline, one otherwise.
    assert ExpressionModel("rrnet_reinforce", units=4,
                           baseline="leave_one_out").tree_samples == 4
    assert ExpressionModel("rrnet_reinforce", units=4).tree_samples == 1
    assert ExpressionModel("rrnet_reinforce", units=4, tree_samples=2).tree_samples == 2
    assert ExpressionModel("lstm", units=4).tree_samples == 1
    model = ExpressionModel("rrnet_reinforce", units=4, baseline="leave_one_out",
                            tree_samples=3)
    assert ExpressionModel.from_config(model.get_config()).tree_samples == 3
    assert ExpressionModel.from_config(
        ExpressionModel("lstm", units=4).get_config()).tree_samples == 1


def test_config_round_trip():
    model = ExpressionModel("rrnet_reinforce", units=5, embedding_dim=3, max_depth=4,
                            reward="likelihood", decoder="steps",
                            operations_per_token=2, baseline="greedy",
                            policy_inputs="token", exploration=0.25,
                            policy_warmup_steps=7, subtree_start="fresh", seed=2)
    clone = ExpressionModel.from_config(model.get_config())
    assert clone.get_config() == model.get_config()
    assert clone.cell.policy_inputs == "token" and clone.cell.exploration == 0.25
    assert clone.cell.subtree_start == "fresh"
    assert clone.policy_warmup_steps == 7
    assert ExpressionModel("rrnet_supervised", units=4).cell.policy_inputs == (
        "state_and_token")
    assert ExpressionModel("rrnet_random", units=4).cell.subtree_start == "parent"


@pytest.mark.parametrize("encoder", ["lstm", "rrnet_supervised", "rrnet_reinforce",
                                     "rrnet_random"])
def test_keras_file_round_trip(tmp_path, encoder):
    """A trained model saved to a `.keras` file loads with its weights and
    its optimizer's state, and answers the same."""
    _, inputs, digits = _batch(count=8)
    model = ExpressionModel(encoder, units=6, embedding_dim=4, seed=0)
    model.compile(optimizer=keras.optimizers.Adam(0.01))
    model.fit(inputs, digits, epochs=1, verbose=0)
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.get_config() == model.get_config()
    assert len(loaded.weights) == len(model.weights) > 0
    for saved, restored in zip(model.weights + model.optimizer.variables,
                               loaded.weights + loaded.optimizer.variables):
        np.testing.assert_array_equal(np.asarray(restored), np.asarray(saved))
    np.testing.assert_array_equal(np.asarray(loaded(inputs)), np.asarray(model(inputs)))


def test_fresh_subtrees_are_closed_before_the_decoder():
    # Token 0 ("(", id 15, alone in the row) is read before a split that no
    # merge closes: with subtree_start="fresh" the encoder's last state does
    # not depend on it, and it reaches the decoder through the merges of
    # `close_subtrees` only.
    tokens = np.array([[15, 2, 11, 3, 4, 11, 5]])
    operations = np.array([[mee.RECUR_OPERATION, mee.SPLIT_OPERATION]
                           + [mee.RECUR_OPERATION] * 5])
    model = ExpressionModel("rrnet_supervised", units=6, embedding_dim=4,
                            subtree_start="fresh", seed=3)
    cell, table = model.cell, model.embedding.embeddings

    def first_token_gradient(function):
        with tf.GradientTape() as tape:
            value = function()
        gradient = tape.gradient(value, table)
        return np.abs(np.asarray(tf.convert_to_tensor(gradient))[15]).sum()

    def encoded():
        return model.encoder(cell.pack_inputs(model.embedding(tokens), operations))[1:]

    assert first_token_gradient(lambda: model({"tokens": tokens,
                                               "operations": operations})) > 0
    assert first_token_gradient(lambda: encoded()[0]) == 0.0
    assert first_token_gradient(lambda: cell.close_subtrees(encoded())[0]) > 0
    states = encoded()
    assert float(states[3][0, 0]) == 1.0  # one sub-tree open
    assert float(cell.close_subtrees(states)[3][0, 0]) == 0.0
