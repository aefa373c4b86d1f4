"""Tests of RecurrentRecursiveCell and tensor_stack against NumPy references."""

import os

import backend_support
from backend_support import to_numpy
import keras
import numpy as np
import pytest
from keras import ops as kops

import hmkeras
from hmkeras.cells import tensor_stack
from hmkeras.cells.recurrent_recursive_cell import MERGE
from hmkeras.cells.recurrent_recursive_cell import RECUR
from hmkeras.cells.recurrent_recursive_cell import RecurrentRecursiveCell
from hmkeras.cells.recurrent_recursive_cell import SPLIT
from hmkeras.cells.recurrent_recursive_cell import bracketed_tree
from hmkeras.cells.recurrent_recursive_cell import tree_agreement
from hmkeras.cells.recurrent_recursive_cell import tree_spans

pytestmark = pytest.mark.every_backend

S, M, R = SPLIT, MERGE, RECUR


def _np(x):
    return keras.ops.convert_to_numpy(x)


# ----------------------------------------------------------------------
# NumPy reference of Jacob et al. Sec. 2, with a Python list as the stack.
# ----------------------------------------------------------------------
def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _lstm(x, h, c, wx, wh, b):
    i, f, g, o = np.split(x @ wx + h @ wh + b, 4)
    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    return _sigmoid(o) * np.tanh(c), c


WEIGHT_NAMES = ("kernel", "recurrent_kernel", "bias", "merge_kernel", "merge_bias",
                "merge_input_kernel", "merge_recurrent_kernel", "merge_lstm_bias",
                "policy_kernel", "policy_bias", "down_gate_input_kernel",
                "down_gate_recurrent_kernel", "down_gate_bias")


def cell_params(cell):
    """The cell's weights as float64 NumPy arrays, by name."""
    return {name: np.asarray(getattr(cell, name), np.float64)
            for name in WEIGHT_NAMES if hasattr(cell, name)}


def reference_split(P, x, h, c, block, tree, fresh=False):
    """`(h, c, saved)` after a split: F2's state and the pushed slot
    (`h_down`, with `memory="tree"` followed by F1's memory `c_down`);
    with `fresh` F2 starts from the zero state."""
    h_down, c_down = _lstm(x, h, c, *block(0))             # F1
    if fresh:
        h, c = np.zeros_like(h), np.zeros_like(c)
    h, c = _lstm(x, h, c, *block(1))                       # F2
    return h, c, np.concatenate([h_down, c_down]) if tree else h_down


def reference_merge(P, x, h, c, saved, tree):
    """`(h, c)` after a merge that pops `saved`: h_m = MLP(h, h_down), then
    F4, an LSTM unit on `(h_m, c)` or, with `memory="tree"`, a binary
    Tree-LSTM node over `c` and the saved `c_down`."""
    u = len(h)
    h_down, c_down = (saved[:u], saved[u:]) if tree else (saved, None)
    h_m = np.tanh(np.concatenate([h, h_down]) @ P["merge_kernel"] + P["merge_bias"])
    if not tree:
        return _lstm(x, h_m, c, P["merge_input_kernel"], P["merge_recurrent_kernel"],
                     P["merge_lstm_bias"])
    i, f, g, o = np.split(x @ P["merge_input_kernel"] + h_m @ P["merge_recurrent_kernel"]
                          + P["merge_lstm_bias"], 4)
    f_down = _sigmoid(x @ P["down_gate_input_kernel"]
                      + h_m @ P["down_gate_recurrent_kernel"] + P["down_gate_bias"])
    c = _sigmoid(f) * c + f_down * c_down + _sigmoid(i) * np.tanh(g)
    return _sigmoid(o) * np.tanh(c), c


def reference_sequence(cell, embeddings, actions_wanted, params=None):
    """Runs one sequence; `actions_wanted[t]` is the given (or sampled)
    operation.  Returns per-step dicts (with the stack as a list).
    `params` (default: the cell's weights) gives the weights by name."""
    P = cell_params(cell) if params is None else params
    u, depth_max = cell.units, cell.max_depth
    wx, wh, b = P["kernel"], P["recurrent_kernel"], P["bias"]
    h, c, stack, steps = np.zeros(u), np.zeros(u), [], []
    for x, wanted in zip(embeddings, actions_wanted):
        allowed = np.array([len(stack) < depth_max, len(stack) > 0, True])
        step = {}
        if cell.has_policy:
            read = x if cell.policy_inputs == "token" else np.concatenate([h, x])
            logits = read @ P["policy_kernel"] + P["policy_bias"]
            logits = np.where(allowed, logits, -np.inf)
            log_probs = logits - np.log(np.sum(np.exp(logits[allowed])))
            step["log_probs"] = log_probs
            step["entropy"] = -np.sum(np.exp(log_probs[allowed]) * log_probs[allowed])
        action = wanted if allowed[wanted] else R
        step["action"] = action
        step["log_prob"] = step["log_probs"][action] if cell.has_policy else 0.0
        block = lambda k: (wx[:, 4 * u * k: 4 * u * (k + 1)],  # noqa: E731
                           wh[:, 4 * u * k: 4 * u * (k + 1)],
                           b[4 * u * k: 4 * u * (k + 1)])
        tree = cell.memory == "tree"
        if action == S:
            h, c, saved = reference_split(P, x, h, c, block, tree,
                                          fresh=cell.subtree_start == "fresh")
            stack.append(saved)
        elif action == R:
            h, c = _lstm(x, h, c, *block(2))              # LSTM_R
        else:
            h, c = reference_merge(P, x, h, c, stack.pop(), tree)
        step.update(h=h, c=c, stack=list(stack), depth=len(stack))
        steps.append(step)
    return steps


def _run_rnn(cell, inputs, training=False):
    rnn = keras.layers.RNN(cell, return_sequences=True, return_state=True)
    outputs, *states = rnn(inputs, training=training)
    return outputs, states


# Hand-written operation sequences (max_depth=2): nested push / pop order,
# a merge on an empty stack (step 0 of row 1) and a split on a full stack
# (step 2 of row 2) that must both run as recur.
SEQUENCES = np.array([
    [S, R, S, R, M, R, M, R],
    [M, S, R, M, R, S, M, R],
    [S, S, S, M, R, M, M, R],
    [R, R, R, R, R, R, R, R],
])


def _executed(sequence, max_depth):
    depth, executed = 0, []
    for op in sequence:
        if (op == S and depth == max_depth) or (op == M and depth == 0):
            op = R
        depth += {S: 1, M: -1, R: 0}[op]
        executed.append(op)
    return executed


@pytest.mark.parametrize("memory, subtree_start", [
    ("continued", "parent"), ("tree", "parent"), ("continued", "fresh"), ("tree", "fresh")])
@pytest.mark.parametrize("mode", ["supervised", "fixed"])
def test_given_operations_match_numpy_reference(mode, memory, subtree_start):
    cell = RecurrentRecursiveCell(5, max_depth=2, mode=mode, memory=memory,
                                  subtree_start=subtree_start, seed=1)
    embeddings = np.random.default_rng(0).normal(size=(4, 8, 3)).astype("float32")
    outputs, (h, c, stack, depth) = _run_rnn(cell, cell.pack_inputs(embeddings, SEQUENCES))
    out_h, actions, log_probs, entropies = (to_numpy(t) for t in cell.split_outputs(outputs))
    for row in range(4):
        ref = reference_sequence(cell, embeddings[row], SEQUENCES[row])
        assert actions[row].astype(int).tolist() == _executed(SEQUENCES[row], 2)
        assert [s["action"] for s in ref] == _executed(SEQUENCES[row], 2)
        np.testing.assert_allclose(out_h[row], [s["h"] for s in ref], atol=1e-5)
        np.testing.assert_allclose(log_probs[row], [s["log_prob"] for s in ref], atol=1e-5)
        if mode == "fixed":
            assert not np.any(log_probs[row]) and not np.any(entropies[row])
        else:
            np.testing.assert_allclose(entropies[row], [s["entropy"] for s in ref],
                                       atol=1e-5)
        np.testing.assert_allclose(to_numpy(c)[row], ref[-1]["c"], atol=1e-5)
        # Final stack: the pushed h_down vectors still open, bottom first,
        # zeros above the pointer.
        final = ref[-1]
        assert to_numpy(depth)[row, 0] == final["depth"]
        width = 10 if memory == "tree" else 5
        slots = to_numpy(stack)[row].reshape(2, width)
        for k in range(2):
            expected = final["stack"][k] if k < final["depth"] else np.zeros(width)
            np.testing.assert_allclose(slots[k], expected, atol=1e-5)


@pytest.mark.parametrize("policy_inputs", ["state_and_token", "token"])
def test_supervised_log_likelihood_equals_reference(policy_inputs):
    cell = RecurrentRecursiveCell(4, max_depth=3, mode="supervised",
                                  policy_inputs=policy_inputs, seed=2)
    rng = np.random.default_rng(1)
    embeddings = rng.normal(size=(4, 8, 2)).astype("float32")
    outputs, _ = _run_rnn(cell, cell.pack_inputs(embeddings, SEQUENCES))
    log_probs = to_numpy(cell.split_outputs(outputs)[2])
    for row in range(4):
        ref = reference_sequence(cell, embeddings[row], SEQUENCES[row])
        assert log_probs[row].sum() == pytest.approx(
            sum(s["log_prob"] for s in ref), abs=1e-4)
        # A proper distribution over the possible actions only.
        for step in ref:
            assert np.exp(step["log_probs"]).sum() == pytest.approx(1.0, abs=1e-6)


def test_stack_and_depth_pointer_step_by_step():
    """Nested push / pop order: after every step of S R S R M R M the cell's
    stack slots and depth pointer equal the reference's list; the inner
    merge pops the inner h_down and leaves the outer one in slot 0."""
    rng = np.random.default_rng(3)
    cell = RecurrentRecursiveCell(3, max_depth=3, mode="fixed", seed=0)
    ops = np.array([[S, R, S, R, M, R, M]])
    x = to_numpy(cell.pack_inputs(rng.normal(size=(1, 7, 2)).astype("float32"), ops))
    rnn = keras.layers.RNN(cell, return_state=True)
    rnn(x)  # builds the cell
    ref = reference_sequence(cell, x[0, :, :-1], ops[0])
    assert [s["depth"] for s in ref] == [1, 1, 2, 2, 1, 1, 0]
    for t in range(7):
        _, _, _, stack, depth = rnn(x[:, : t + 1])
        assert float(depth[0, 0]) == ref[t]["depth"]
        slots = to_numpy(stack)[0].reshape(3, 3)
        for k in range(3):
            want = ref[t]["stack"][k] if k < ref[t]["depth"] else np.zeros(3)
            np.testing.assert_allclose(slots[k], want, atol=1e-6)
    # The outer h_down (pushed at step 0) survives the inner split / merge.
    np.testing.assert_allclose(ref[4]["stack"][0], ref[0]["stack"][0])
    assert not np.allclose(ref[2]["stack"][1], ref[0]["stack"][0])


def test_tensor_stack_matches_python_lists():
    rng = np.random.default_rng(4)
    batch, depth_max, units = 5, 3, 2
    stack = np.zeros((batch, depth_max * units), "float32")
    depth = np.zeros((batch, 1), "float32")
    lists = [[] for _ in range(batch)]
    for step in range(30):
        ops = rng.integers(0, 3, size=batch)
        values = rng.normal(size=(batch, units)).astype("float32")
        top_before = _np(tensor_stack.top(stack, depth, units))
        popped, stack, depth = tensor_stack.pop(stack, depth, (ops == M)[:, None], units)
        stack, depth = tensor_stack.push(stack, depth, values, (ops == S)[:, None])
        for row in range(batch):
            expected_top = lists[row][-1] if lists[row] else np.zeros(units)
            np.testing.assert_allclose(top_before[row], expected_top)
            if ops[row] == M and lists[row]:
                np.testing.assert_allclose(_np(popped)[row], lists[row].pop())
            elif ops[row] == S and len(lists[row]) < depth_max:
                lists[row].append(values[row])
            assert _np(depth)[row, 0] == len(lists[row])
            slots = _np(stack)[row].reshape(depth_max, units)
            for k in range(depth_max):
                want = lists[row][k] if k < len(lists[row]) else np.zeros(units)
                np.testing.assert_allclose(slots[k], want)


def test_reinforce_samples_only_possible_actions_with_right_log_probs():
    cell = RecurrentRecursiveCell(4, max_depth=1, mode="reinforce", seed=5)
    x = np.random.default_rng(5).normal(size=(64, 6, 3)).astype("float32")
    outputs, _ = _run_rnn(cell, x, training=True)
    _, actions, log_probs, _ = (to_numpy(t) for t in cell.split_outputs(outputs))
    actions = actions.astype(int)
    assert len(np.unique(actions)) == 3  # every action occurs somewhere
    for row in range(64):
        assert actions[row].tolist() == _executed(actions[row], 1)  # all possible
        ref = reference_sequence(cell, x[row], actions[row])
        np.testing.assert_allclose(log_probs[row], [s["log_prob"] for s in ref],
                                   atol=1e-5)


def test_reinforce_is_greedy_at_inference():
    cell = RecurrentRecursiveCell(4, max_depth=2, mode="reinforce", seed=6)
    x = np.random.default_rng(6).normal(size=(8, 6, 3)).astype("float32")
    rnn = keras.layers.RNN(cell, return_sequences=True)
    first = to_numpy(cell.split_outputs(rnn(x, training=False))[1]).astype(int)
    second = to_numpy(cell.split_outputs(rnn(x, training=False))[1]).astype(int)
    np.testing.assert_array_equal(first, second)
    for row in range(8):
        # Replay the greedy choices in the reference: each is its argmax.
        ref = reference_sequence(cell, x[row], first[row])
        assert [int(np.argmax(s["log_probs"])) for s in ref] == first[row].tolist()


def test_reinforce_gradient_is_unbiased():
    """Bandit over two steps (max_depth 1): the mean REINFORCE surrogate
    gradient from sampled actions matches the exact gradient of the expected
    reward, computed by central finite differences of the NumPy reference
    summed over the four possible action sequences."""
    units, n = 3, 20000
    cell = RecurrentRecursiveCell(units, max_depth=1, mode="reinforce", seed=7)
    x_one = np.random.default_rng(7).normal(size=(1, 2, 2)).astype("float32")
    cell.build((None, 2))
    cell.policy_bias.assign([0.3, 0.0, -0.2])
    reward = {(S, M): 1.0, (S, R): -0.5, (R, S): 2.0, (R, R): 0.2}
    sequences = list(reward)
    names = ("policy_kernel", "policy_bias", "kernel", "bias")
    params = cell_params(cell)

    def sequence_log_probs(p):
        return np.array([sum(step["log_prob"] for step in reference_sequence(
            cell, x_one[0].astype(np.float64), seq, params=p)) for seq in sequences])

    log_p = sequence_log_probs(params)
    probs = np.exp(log_p)
    assert probs.sum() == pytest.approx(1.0, abs=1e-9)  # the only possible ones
    rewards_table = np.array([reward[seq] for seq in sequences])
    exact, score, eps = [], [], 1e-5
    for name in names:
        for index in np.ndindex(params[name].shape):
            plus, minus = dict(params), dict(params)
            plus[name] = params[name].copy(); plus[name][index] += eps
            minus[name] = params[name].copy(); minus[name][index] -= eps
            lp_plus, lp_minus = sequence_log_probs(plus), sequence_log_probs(minus)
            exact.append((np.exp(lp_plus) - np.exp(lp_minus)) @ rewards_table / (2 * eps))
            score.append((lp_plus - lp_minus) / (2 * eps))
    exact, score = np.array(exact), np.array(score).T  # (P,), (4, P)

    rnn = keras.layers.RNN(cell, return_sequences=True)
    # The reward of the sampled action pair (a_1, a_2), looked up in-graph
    # at 3 * a_1 + a_2 (impossible pairs: NaN, checked absent below).
    table = np.full(9, np.nan, "float32")
    for (a_1, a_2), value in reward.items():
        table[3 * a_1 + a_2] = value

    def surrogate(out, losses):
        _, actions, log_probs, _ = cell.split_outputs(out)
        actions = kops.cast(actions, "int32")
        rewards = kops.take(kops.convert_to_tensor(table), 3 * actions[:, 0] + actions[:, 1])
        rewards = kops.stop_gradient(rewards)
        return kops.mean(rewards * kops.sum(log_probs, axis=1))

    rnn.build((None, 2, 2))
    out, _, all_grads = backend_support.weight_gradients(
        rnn, surrogate, np.repeat(x_one, n, axis=0), training=True)
    actions_np = _np(cell.split_outputs(out)[1]).astype(int)
    assert all(tuple(a) in reward for a in actions_np)
    position = {id(v): k for k, v in enumerate(rnn.trainable_variables)}
    grads = [all_grads[position[id(getattr(cell, name))]] for name in names]
    mc = np.concatenate([g.ravel() for g in grads])
    # Standard error of the multinomial average sum_s f_s R_s score_s.
    v = rewards_table[:, None] * score
    cov = (np.diag(probs) - np.outer(probs, probs)) / n
    se = np.sqrt(np.maximum(np.einsum("sp,st,tp->p", v, cov, v), 0))
    assert np.all(np.abs(mc - exact) <= 5 * se + 2e-4), np.max(np.abs(mc - exact) - 5 * se)
    # The test has power: the kernel (reached only through h) matters.
    kernel_part = slice(15 + 3, 15 + 3 + params["kernel"].size)
    assert np.max(np.abs(exact[kernel_part]) / (se[kernel_part] + 1e-12)) > 10
    # Sampled sequence frequencies match the policy.
    freq = np.array([np.mean([tuple(a) == seq for a in actions_np]) for seq in sequences])
    np.testing.assert_allclose(freq, probs, atol=5 * np.sqrt(probs * (1 - probs) / n).max())


def test_reinforce_draws_the_seeds_reserved_before_the_loop():
    """`hmkeras.RNN` reserves a sequence's seeds before its loop
    (`step_sampler`): step t's draw uses seed `[s0, s1 + 1 + t]` (one
    operation per token; the block's first step is Keras' TensorFlow probe
    step) in every unmasked row, whatever the mask of the others, and the
    generator ends `steps + 1` draws on. Replayed: each step's policy from
    the NumPy reference, drawn with that seed."""
    cell = RecurrentRecursiveCell(4, max_depth=2, mode="reinforce", seed=11)
    x = np.random.default_rng(11).normal(size=(32, 6, 3)).astype("float32")
    mask = np.ones((32, 6), bool)
    mask[:8, :2] = False  # rows 0-7 start two steps late
    # Masked steps output zeros (JAX's loop needs it for this cell).
    rnn = hmkeras.RNN(cell, return_sequences=True, zero_output_for_mask=True)
    rnn.build(x.shape)
    s0, s1 = to_numpy(cell.seed_generator.state.value).tolist()
    outputs = rnn(x, mask=mask, training=True)
    actions = to_numpy(cell.split_outputs(outputs)[1]).astype(int)
    assert to_numpy(cell.seed_generator.state.value).tolist() == [s0, s1 + 7]
    policies = np.zeros((32, 6, 3), "float32")
    for row in range(32):
        steps = reference_sequence(cell, x[row][mask[row]].astype(np.float64),
                                   actions[row][mask[row]])
        policies[row, mask[row]] = [np.maximum(s["log_probs"], -1e9) for s in steps]
    replay = keras.random.SeedGenerator(0)
    for t in range(6):
        replay.state.assign(np.array([s0, s1 + 1 + t], to_numpy(replay.state.value).dtype))
        drawn = to_numpy(keras.random.categorical(policies[:, t], 1, seed=replay))[:, 0]
        np.testing.assert_array_equal(drawn[mask[:, t]], actions[mask[:, t], t])
    assert len(np.unique(actions[mask])) == 3  # the replay has power


def test_reinforce_without_a_sequence_begun_refuses():
    cell = RecurrentRecursiveCell(4, max_depth=2, mode="reinforce", seed=12)
    cell.build((None, 3))
    states = [np.zeros((2, size), "float32") for size in cell.state_size]
    with pytest.raises(ValueError, match="samples from seeds fixed before the loop"):
        cell(np.ones((2, 3), "float32"), states, training=True)


def test_sampling_inside_compiled_function():
    cell = RecurrentRecursiveCell(4, max_depth=2, mode="reinforce", seed=8)
    rnn = keras.layers.RNN(cell, return_sequences=True)
    x = np.random.default_rng(8).normal(size=(16, 5, 3)).astype("float32")

    # TensorFlow: graph mode; XLA (jit_compile=True) passes too but
    # compiles for ~50 s on a loaded CPU, too slow for this suite.  JAX:
    # `jax.jit`, the seed generator's state written back.
    if backend_support.BACKEND == "tensorflow":
        import tensorflow as tf

        sample = tf.function(lambda inputs: rnn(inputs, training=True))
    else:
        rnn.build(x.shape)
        sample = backend_support.compiled(rnn)

    first = to_numpy(cell.split_outputs(sample(x))[1]).astype(int)
    second = to_numpy(cell.split_outputs(sample(x))[1]).astype(int)
    assert not np.array_equal(first, second)  # the seed generator advances
    for row in range(16):
        assert first[row].tolist() == _executed(first[row], 2)


def test_recur_bias_starts_the_policy_near_an_lstm():
    """The recur logit starts at `recur_bias`, split and merge at 0: with the
    policy kernel at zero, p(recur) = e^b / (e^b + number of possible
    operations)."""
    cell = RecurrentRecursiveCell(3, max_depth=2, mode="reinforce", recur_bias=3.0, seed=0)
    cell.build((None, 2))
    cell.policy_kernel.assign(np.zeros(cell.policy_kernel.shape, "float32"))
    depth = kops.convert_to_tensor(
        np.array([[0.0], [1.0], [2.0]], "float32"))  # merge impossible, all, split impossible
    probs = np.exp(_np(cell.policy_log_probs(
        kops.ones((3, 3)), kops.ones((3, 2)), cell.allowed_actions(depth))))
    e = np.exp(3.0)
    np.testing.assert_allclose(probs, [[1 / (e + 1), 0, e / (e + 1)],
                                       [1 / (e + 2), 1 / (e + 2), e / (e + 2)],
                                       [0, 1 / (e + 1), e / (e + 1)]], rtol=1e-5)
    assert RecurrentRecursiveCell(3, max_depth=2).recur_bias == 0.0


def test_token_policy_chooses_by_the_symbol_alone():
    """`policy_inputs="token"`: the policy reads `e_t` only (kernel
    `(features, 3)`), so every state with the same operations possible gets
    the same distribution; the default reads `[h; e_t]`."""
    cell = RecurrentRecursiveCell(3, max_depth=2, mode="reinforce",
                                  policy_inputs="token", seed=0)
    cell.build((None, 2))
    assert tuple(cell.policy_kernel.shape) == (2, 3)
    rng = np.random.default_rng(0)
    x = np.repeat(rng.normal(size=(1, 2)), 4, axis=0).astype("float32")
    h = rng.normal(size=(4, 3)).astype("float32")  # four different states
    allowed = cell.allowed_actions(kops.ones((4, 1)))  # all three possible
    probs = np.exp(_np(cell.policy_log_probs(h, x, allowed)))
    logits = x[0] @ _np(cell.policy_kernel) + _np(cell.policy_bias)
    expected = np.exp(logits) / np.exp(logits).sum()
    np.testing.assert_allclose(probs, np.tile(expected, (4, 1)), rtol=1e-5)
    paper = RecurrentRecursiveCell(3, max_depth=2, mode="reinforce", seed=0)
    paper.build((None, 2))
    assert tuple(paper.policy_kernel.shape) == (5, 3)
    assert paper.policy_inputs == "state_and_token"
    varied = np.exp(_np(paper.policy_log_probs(h, x, allowed)))
    assert not np.allclose(varied[0], varied[1])
    config = cell.get_config()
    assert RecurrentRecursiveCell.from_config(config).get_config() == config
    with pytest.raises(ValueError, match="`policy_inputs`.*'fixed'"):
        RecurrentRecursiveCell(3, max_depth=2, mode="fixed", policy_inputs="token")


def test_exploration_mixes_in_the_uniform_policy():
    """`exploration=e`: p = (1 - e) softmax + e / (number possible), over
    the possible operations only; the impossible ones keep probability 0,
    and the gradient is finite."""
    cell = RecurrentRecursiveCell(3, max_depth=2, mode="reinforce", exploration=0.3,
                                  seed=0)
    cell.build((None, 2))
    rng = np.random.default_rng(1)
    h = rng.normal(size=(3, 3)).astype("float32")
    x = rng.normal(size=(3, 2)).astype("float32")
    depth = np.array([[0.0], [1.0], [2.0]], "float32")  # no merge, all, no split
    allowed = cell.allowed_actions(kops.convert_to_tensor(depth))
    probs = np.exp(_np(cell.policy_log_probs(h, x, allowed)))
    logits = (np.concatenate([h, x], -1).astype(np.float64) @ _np(cell.policy_kernel)
              + _np(cell.policy_bias))
    possible = np.array([[1, 0, 1], [1, 1, 1], [0, 1, 1]], bool)
    softmax = np.where(possible, np.exp(logits), 0)
    softmax /= softmax.sum(-1, keepdims=True)
    expected = 0.7 * softmax + 0.3 * possible / possible.sum(-1, keepdims=True)
    np.testing.assert_allclose(probs, expected, rtol=1e-5, atol=1e-7)
    assert np.all(probs[~possible] == 0)
    gradient, = backend_support.input_gradients(
        lambda state: kops.sum(kops.where(
            possible, cell.policy_log_probs(state, x, allowed), 0.0)), h)
    assert np.all(np.isfinite(gradient)) and np.any(gradient != 0)
    config = cell.get_config()
    assert config["exploration"] == 0.3
    assert RecurrentRecursiveCell.from_config(config).get_config() == config
    assert RecurrentRecursiveCell(3, max_depth=2).exploration == 0.0


@pytest.mark.parametrize("memory", ["continued", "tree"])
def test_save_and_load_in_rnn(tmp_path, memory):
    cell = RecurrentRecursiveCell(4, max_depth=2, mode="supervised", recur_bias=1.5,
                                  memory=memory, seed=9)
    inputs = keras.Input((None, 4))
    model = keras.Model(inputs, keras.layers.RNN(cell, return_sequences=True)(inputs))
    x = to_numpy(cell.pack_inputs(
        np.random.default_rng(9).normal(size=(4, 8, 3)).astype("float32"), SEQUENCES))
    path = os.path.join(tmp_path, "rrnet.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(to_numpy(loaded(x)), to_numpy(model(x)), atol=1e-6)
    loaded_cell = loaded.layers[-1].cell
    assert isinstance(loaded_cell, RecurrentRecursiveCell)
    assert loaded_cell.get_config() == cell.get_config()


@pytest.mark.parametrize("kwargs, name", [
    (dict(units=0, max_depth=2), "units"),
    (dict(units=4, max_depth=0), "max_depth"),
    (dict(units=4, max_depth=2.5), "max_depth"),
    (dict(units=4, max_depth=2, mode="greedy"), "mode"),
    (dict(units=4, max_depth=2, seed="x"), "seed"),
    (dict(units=4, max_depth=2, recur_bias=float("nan")), "recur_bias"),
    (dict(units=4, max_depth=2, recur_bias="3"), "recur_bias"),
    (dict(units=4, max_depth=2, memory="saved"), "memory"),
    (dict(units=4, max_depth=2, policy_inputs="state"), "policy_inputs"),
    (dict(units=4, max_depth=2, mode="reinforce", exploration=1.0), "exploration"),
    (dict(units=4, max_depth=2, mode="reinforce", exploration=-0.1), "exploration"),
    (dict(units=4, max_depth=2, mode="supervised", exploration=0.1), "exploration"),
    (dict(units=4, max_depth=2, subtree_start="zero"), "subtree_start"),
])
def test_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        RecurrentRecursiveCell(**kwargs)


def test_bad_inputs():
    cell = RecurrentRecursiveCell(4, max_depth=2, mode="supervised")
    with pytest.raises(ValueError, match="operation id"):
        cell.build((None, 1))
    with pytest.raises(ValueError, match="output_size=7"):
        cell.split_outputs(np.zeros((2, 5)))


def test_each_lstm_unit_is_drawn_like_keras_lstm():
    # F1, F2 and LSTM_R share one (u, 12u) recurrent matrix; each unit's
    # (u, 4u) block is orthogonal on its own (rows orthonormal), as in
    # keras.layers.LSTM, and the blocks differ.
    cell = RecurrentRecursiveCell(8, max_depth=2, seed=3)
    cell.build((None, 6))
    recurrent = np.asarray(cell.recurrent_kernel, np.float64)
    blocks = np.split(recurrent, 3, axis=1)
    for block in blocks:
        np.testing.assert_allclose(block @ block.T, np.eye(8), atol=1e-5)
    assert not np.allclose(blocks[0], blocks[1])
    # Glorot-uniform bound of one unit's (features, 4u) kernel.
    kernel = to_numpy(cell.kernel)
    bound = np.sqrt(6.0 / (5 + 4 * 8))
    assert np.abs(kernel).max() <= bound and np.abs(kernel).max() > 0.8 * bound


def test_tree_memory_merges_the_saved_memory():
    # With memory="tree" a merge's cell state depends on the memory saved at
    # the split (c_down), through the down gate; with "continued" it cannot:
    # c_down is not kept. Checked by the gradient of the final c with respect
    # to the down gate's bias, and by the stack's slot width.
    embeddings = np.random.default_rng(4).normal(size=(2, 6, 3)).astype("float32")
    operations = np.array([[S, R, R, M, R, R]] * 2)
    cell = RecurrentRecursiveCell(4, max_depth=2, memory="tree", seed=2)
    rnn = keras.layers.RNN(cell, return_state=True)
    inputs = cell.pack_inputs(embeddings, operations)
    rnn.build(inputs.shape)
    (_, _, c, stack, _), _, gradients = backend_support.weight_gradients(
        rnn, lambda outputs, losses: kops.sum(outputs[2]), inputs)
    position = [id(v) for v in rnn.trainable_variables].index(id(cell.down_gate_bias))
    gradient = gradients[position]
    assert stack.shape == (2, 2 * 2 * 4)
    assert np.abs(to_numpy(gradient)).min() > 0
    assert not hasattr(RecurrentRecursiveCell(4, max_depth=2), "down_gate_bias")


@pytest.mark.parametrize("memory", ["continued", "tree"])
def test_fresh_subtree_reaches_the_past_only_through_its_merge(memory):
    # "(a b) c" as split, recur, merge, recur on 5 tokens after a first
    # recur: with subtree_start="fresh" the states inside the sub-tree do
    # not depend on the token read before it, and the state after the merge
    # does (through h_down); with "parent" every state does.
    operations = np.array([[R, S, R, M, R]] * 2)
    embeddings = np.random.default_rng(5).normal(size=(2, 5, 3)).astype("float32")

    def influence(subtree_start):
        """|d h_t / d e_0| summed, per step t."""
        cell = RecurrentRecursiveCell(4, max_depth=2, memory=memory,
                                      subtree_start=subtree_start, seed=6)
        rnn = keras.layers.RNN(cell, return_sequences=True)
        inputs = cell.pack_inputs(embeddings, operations)
        rnn.build(inputs.shape)
        return np.array([
            np.abs(backend_support.input_gradients(
                lambda x, t=t: kops.sum(cell.split_outputs(rnn(x))[0][:, t]), inputs)
                [0][:, 0, :-1]).sum() for t in range(5)])

    fresh, parent = influence("fresh"), influence("parent")
    assert fresh[1] == 0.0 and fresh[2] == 0.0  # inside the sub-tree
    assert fresh[3] > 0 and fresh[4] > 0        # after its merge
    assert np.all(parent > 0)


@pytest.mark.parametrize("memory", ["continued", "tree"])
def test_close_subtrees_merges_what_is_open(memory):
    # Rows ending with 2, 1 and 0 sub-trees open (max_depth=3): the closed
    # state is the NumPy reference's after as many merges with a zero
    # input, the stack is empty, and a row with nothing open is unchanged.
    operations = np.array([[S, R, S, R, R], [R, S, R, R, R], [S, R, M, R, R]])
    embeddings = np.random.default_rng(7).normal(size=(3, 5, 3)).astype("float32")
    cell = RecurrentRecursiveCell(4, max_depth=3, memory=memory,
                                  subtree_start="fresh", seed=8)
    rnn = keras.layers.RNN(cell, return_state=True)
    _, *states = rnn(cell.pack_inputs(embeddings, operations))
    h, c, stack, depth = (to_numpy(t) for t in cell.close_subtrees(states))
    params = cell_params(cell)
    for row, open_count in enumerate([2, 1, 0]):
        ref = reference_sequence(cell, embeddings[row], operations[row])[-1]
        assert ref["depth"] == open_count
        ref_h, ref_c, saved = ref["h"], ref["c"], list(ref["stack"])
        while saved:
            ref_h, ref_c = reference_merge(params, np.zeros(3), ref_h, ref_c,
                                           saved.pop(), memory == "tree")
        np.testing.assert_allclose(h[row], ref_h, atol=1e-5)
        np.testing.assert_allclose(c[row], ref_c, atol=1e-5)
    np.testing.assert_array_equal(depth, np.zeros((3, 1)))
    np.testing.assert_array_equal(h[2], to_numpy(states[0])[2])


def test_bracketed_tree():
    assert bracketed_tree("((1+2)*3)", [S, S, R, R, R, M, R, R, M]) == \
        "[( [( 1 + 2 )] * 3 )]"
    # A merge with nothing to close is its token alone, as in `tree_spans`.
    assert bracketed_tree("((1+2)*3)", [S, R, R, R, R, M, R, R, M]) == \
        "[( ( 1 + 2 )] * 3 )"


# "((1+2)*3)": the gold tree and four guesses, with their spans by hand.
GOLD = [S, S, R, R, R, M, R, R, M]  # spans (0, 8), (1, 5)
GUESSES = [
    ([S, R, R, R, R, M, R, R, M], {(0, 5)}),  # a merge with nothing open: no span
    ([S, S, R, R, R, M, R, R, R], {(1, 5)}),  # the outer split never closed
    (GOLD, {(0, 8), (1, 5)}),
    ([S, R, S, R, R, M, R, R, M], {(0, 8), (2, 5)}),
]


def test_tree_spans_on_hand_made_trees():
    for actions, spans in GUESSES:
        assert tree_spans(actions) == spans
    assert tree_spans([R, R, R]) == set()


def test_tree_agreement_on_hand_made_trees():
    # F1 per guess: 0, 2*1/(1+2), 1, 2*1/(2+2); exact only for the third.
    scores = tree_agreement([g for g, _ in GUESSES], [GOLD] * 4)
    assert scores["f1"] == pytest.approx((0 + 2 / 3 + 1 + 0.5) / 4)
    assert scores["exact"] == 0.25
    # Two trees without constituents agree fully.
    assert tree_agreement([[R, R]], [[R, R]]) == {"f1": 1.0, "exact": 1.0}
    assert tree_agreement([[R, R]], [[S, M]]) == {"f1": 0.0, "exact": 0.0}


def test_tree_agreement_needs_as_many_trees():
    with pytest.raises(ValueError, match="`predicted` and `gold`"):
        tree_agreement([GOLD], [GOLD, GOLD])
    with pytest.raises(ValueError, match="`predicted` and `gold`"):
        tree_agreement([], [])


def test_operation_ids_agree_with_the_mee_data():
    from hmkeras.data import mee

    assert (mee.SPLIT_OPERATION, mee.MERGE_OPERATION, mee.RECUR_OPERATION) == (S, M, R)
