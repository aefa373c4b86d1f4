"""`bench/tree_rewards.py`: the supervised twin of a REINFORCE encoder
reads given trees exactly as the encoder reads its own."""

import keras
import numpy as np
import pytest
from example_modules import load_script

from hmkeras.data import mee
from hmkeras.models.expression_model import ExpressionModel

BENCH = load_script("bench", "tree_rewards")


def _trained_reinforce(**options):
    examples = list(mee.generate_expressions(4, "train", 32, seed=3))
    inputs, digits = mee.model_inputs(examples)
    model = ExpressionModel("rrnet_reinforce", units=6, embedding_dim=4,
                            operations_per_token=1, memory="tree", seed=0, **options)
    model.compile(optimizer=keras.optimizers.Adam(0.01))
    model.fit(inputs, digits, epochs=2, batch_size=16, verbose=0)
    return model


@pytest.mark.parametrize("baseline, policy_inputs", [
    ("greedy", "state_and_token"), ("learned", "state_and_token"), ("greedy", "token")])
def test_twin_reading_the_greedy_trees_is_the_encoder(baseline, policy_inputs):
    model = _trained_reinforce(baseline=baseline, policy_inputs=policy_inputs)
    twin = BENCH.twin_encoder(model)
    examples = list(mee.generate_expressions(5, "test", 12, seed=1))
    inputs, digits = mee.model_inputs(examples)
    greedy = BENCH.tree_operations("greedy", model, inputs, None)
    given = {"tokens": inputs["tokens"], "operations": greedy}
    np.testing.assert_allclose(np.asarray(twin.analyze(given)[0]),
                               np.asarray(model.analyze(inputs)[0]), rtol=1e-6, atol=1e-6)
    # Other trees change what the encoder computes.
    given["operations"] = inputs["operations"]
    assert not np.allclose(np.asarray(twin.analyze(given)[0]),
                           np.asarray(model.analyze(inputs)[0]), atol=1e-4)


def test_twin_of_a_run_with_a_policy_warmup():
    model = _trained_reinforce(policy_inputs="token", policy_warmup_steps=1)
    twin = BENCH.twin_encoder(model)  # the step counter is not a weight of the twin
    inputs, _ = mee.model_inputs(list(mee.generate_expressions(4, "test", 6, seed=1)))
    greedy = BENCH.tree_operations("greedy", model, inputs, None)
    given = {"tokens": inputs["tokens"], "operations": greedy}
    np.testing.assert_allclose(np.asarray(twin.analyze(given)[0]),
                               np.asarray(model.analyze(inputs)[0]), rtol=1e-6, atol=1e-6)


def test_greedy_trees_with_the_closing_merges():
    """`greedy, ) merges`: the greedy operations, a merge at every ")"."""
    model = _trained_reinforce()
    inputs, _ = mee.model_inputs(list(mee.generate_expressions(5, "test", 8, seed=2)))
    greedy = BENCH.tree_operations("greedy", model, inputs, None)
    changed = BENCH.tree_operations("greedy, ) merges", model, inputs, None)
    closing = np.asarray(inputs["tokens"]) == mee.encode_expression("(1+2)")[-1]
    assert closing.sum() >= 8 * 5  # a closing bracket per operation
    assert np.all(changed[closing] == mee.MERGE_OPERATION)
    np.testing.assert_array_equal(changed[~closing], greedy[~closing])


def test_table_scores_each_kind_of_tree():
    model = _trained_reinforce()
    examples = {length: list(mee.generate_expressions(length, "test", 10, seed=1))
                for length in (4, 6)}
    table = BENCH.tree_rewards(model, examples, seed=0)
    assert set(table) == {4, 6}
    for length, rows in table.items():
        assert set(rows) == set(BENCH.TREES)
        assert rows["brackets"]["bracket_f1"] == 100.0
        assert rows["no tree"]["bracket_f1"] == 0.0
        inputs, digits = mee.model_inputs(examples[length])
        logits = np.asarray(model.analyze(inputs)[0])
        correct = np.all(np.argmax(logits, -1) == digits, -1)
        assert rows["greedy"]["accuracy"] == pytest.approx(100 * correct.mean())
        log_softmax = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        reward = np.take_along_axis(log_softmax, digits[..., None], -1).sum((1, 2)).mean()
        assert rows["greedy"]["reward"] == pytest.approx(reward, rel=1e-5)
        for row in rows.values():
            assert 0 <= row["accuracy"] <= 100 and row["reward"] < 0


def test_runs_reading_several_operations_per_token_are_refused():
    model = ExpressionModel("rrnet_reinforce", units=4, embedding_dim=3)
    with pytest.raises(ValueError, match="operations_per_token"):
        BENCH.twin_encoder(model)


def test_merges_out_of_reach_of_a_reading_between_tokens():
    # A merge goes before the next token: the closing brackets at the end
    # have none, and a run of r closing brackets before a token needs r
    # merges where n - 1 fit.
    assert BENCH.merges_out_of_reach("(1+2)", 3) == 1
    assert BENCH.merges_out_of_reach("((1+2)*3)", 3) == 1
    assert BENCH.merges_out_of_reach("((1+(2+(3+4)))*5)", 3) == 2
    assert BENCH.merges_out_of_reach("((1+(2+(3+4)))*5)", 4) == 1
    assert BENCH.merges_out_of_reach("((1+(2+(3+4)))*5)", 2) == 3
    examples = {4: list(mee.generate_expressions(4, "test", 50, seed=0))}
    for n in (2, 3):
        # Independently: walk the characters, count the closing brackets
        # each token is preceded by, and those left at the end.
        lost = total = 0
        for e in examples[4]:
            pending = 0
            for char in e.expression:
                if char == ")":
                    pending += 1
                    total += 1
                else:
                    lost += max(0, pending - (n - 1))
                    pending = 0
            lost += pending
        share = BENCH.out_of_reach_share(examples, n)[4]
        assert share == pytest.approx(100 * lost / total)
        assert 30 < share < 70  # every expression ends with its brackets
