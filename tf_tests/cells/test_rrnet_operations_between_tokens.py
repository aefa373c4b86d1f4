"""RecurrentRecursiveCell with `operations_per_token > 1` (Jacob et al.
Sec. 2: split and merge consume no token) against a pure-Python stack
machine: a Python list as the stack, NumPy for the LSTM units."""

import backend_support
from backend_support import to_numpy
import keras
import numpy as np
import pytest

from hmkeras.cells.recurrent_recursive_cell import MERGE
from hmkeras.cells.recurrent_recursive_cell import RECUR
from hmkeras.cells.recurrent_recursive_cell import RecurrentRecursiveCell
from hmkeras.cells.recurrent_recursive_cell import SPLIT
from hmkeras.cells.recurrent_recursive_cell import bracketed_tree
from hmkeras.cells.recurrent_recursive_cell import tree_agreement
from hmkeras.cells.recurrent_recursive_cell import tree_spans
from tf_tests.cells.test_recurrent_recursive_cell import _lstm
from tf_tests.cells.test_recurrent_recursive_cell import cell_params
from tf_tests.cells.test_recurrent_recursive_cell import reference_merge
from tf_tests.cells.test_recurrent_recursive_cell import reference_split


pytestmark = pytest.mark.every_backend

S, M, R = SPLIT, MERGE, RECUR


class StackMachine:
    """The RRNet of Sec. 2 reading one sequence, one operation at a time."""

    def __init__(self, cell):
        self.P, self.u, self.max_depth = cell_params(cell), cell.units, cell.max_depth
        self.tree = cell.memory == "tree"
        self.h, self.c, self.stack = np.zeros(self.u), np.zeros(self.u), []

    def allowed(self, last):
        if last:  # the token must be read
            return np.array([False, False, True])
        return np.array([len(self.stack) < self.max_depth, len(self.stack) > 0, True])

    def log_probs(self, x, allowed):
        logits = np.concatenate([self.h, x]) @ self.P["policy_kernel"] + self.P["policy_bias"]
        logits = np.where(allowed, logits, -np.inf)
        return logits - np.log(np.sum(np.exp(logits[allowed])))

    def _block(self, k):
        u, P = self.u, self.P
        cols = slice(4 * u * k, 4 * u * (k + 1))
        return P["kernel"][:, cols], P["recurrent_kernel"][:, cols], P["bias"][cols]

    def apply(self, action, x):
        if action == S:
            self.h, self.c, saved = reference_split(
                self.P, x, self.h, self.c, self._block, self.tree)
            self.stack.append(saved)
        elif action == M:
            self.h, self.c = reference_merge(
                self.P, x, self.h, self.c, self.stack.pop(), self.tree)
        else:
            self.h, self.c = _lstm(x, self.h, self.c, *self._block(2))  # LSTM_R

    def read(self, x, bound, chosen=None):
        """Reads token `x`: operations until a recur, at most `bound`.

        `chosen` replays given operations (checked possible); without it
        the machine is greedy. Returns `(operations, log_prob, entropy)`.
        """
        operations, log_prob, entropy = [], 0.0, 0.0
        for index in range(bound):
            allowed = self.allowed(last=index == bound - 1)
            log_probs = self.log_probs(x, allowed)
            action = int(np.argmax(log_probs)) if chosen is None else chosen[index]
            assert allowed[action], (operations, action)
            if allowed.sum() > 1:
                log_prob += log_probs[action]
                entropy -= np.sum(np.exp(log_probs[allowed]) * log_probs[allowed])
            self.apply(action, x)
            operations.append(action)
            if action == R:
                return operations, log_prob, entropy
        raise AssertionError("no recur within the bound")


def _cell(bound, max_depth=2, units=5, seed=0, memory="continued"):
    """A cell whose policy picks every operation often (not just recur)."""
    cell = RecurrentRecursiveCell(units, max_depth=max_depth, mode="reinforce",
                                  operations_per_token=bound, memory=memory, seed=seed)
    cell.build((None, 3))
    rng = np.random.default_rng(seed)
    cell.policy_kernel.assign(rng.normal(scale=1.5, size=cell.policy_kernel.shape))
    cell.policy_bias.assign([0.5, 0.5, -0.5])
    return cell


def _rows(actions, row):
    """The executed operations of every token of one row (-1 dropped)."""
    return [[int(a) for a in token if a >= 0] for token in actions[row]]


@pytest.mark.parametrize("training, bound, memory", [
    (False, 2, "continued"), (False, 3, "continued"), (True, 2, "continued"),
    (True, 3, "continued"), (True, 3, "tree"), (False, 3, "tree")])
def test_matches_the_stack_machine(training, bound, memory):
    cell = _cell(bound, memory=memory)
    x = np.random.default_rng(1).normal(size=(16, 7, 3)).astype("float32")
    rnn = keras.layers.RNN(cell, return_sequences=True, return_state=True)
    outputs, h_last, c_last, stack, depth, *_ = rnn(x, training=training)
    h, actions, log_probs, entropies = (to_numpy(t) for t in cell.split_outputs(outputs))
    assert actions.shape == (16, 7, bound)
    counts = np.zeros(3, int)
    for row in range(16):
        machine = StackMachine(cell)
        for t, executed in enumerate(_rows(actions, row)):
            # Greedy: the machine chooses itself; sampled: it replays the
            # cell's choices, each of which must be possible.
            chosen = None if not training else executed
            operations, log_prob, entropy = machine.read(
                x[row, t].astype(np.float64), bound, chosen)
            assert executed == operations
            assert actions[row, t, len(operations):].tolist() == \
                [-1] * (bound - len(operations))
            np.testing.assert_allclose(h[row, t], machine.h, atol=1e-5)
            np.testing.assert_allclose(log_probs[row, t], log_prob, atol=1e-5)
            np.testing.assert_allclose(entropies[row, t], entropy, atol=1e-5)
            counts += np.bincount(operations, minlength=3)
        np.testing.assert_allclose(to_numpy(c_last)[row], machine.c, atol=1e-5)
        assert to_numpy(depth)[row, 0] == len(machine.stack)
        slots = to_numpy(stack)[row].reshape(2, cell.slot_size)
        for k, vector in enumerate(machine.stack):
            np.testing.assert_allclose(slots[k], vector, atol=1e-5)
    # The case exercises the new reading: splits and merges between tokens,
    # several operations before one token.
    assert counts[S] > 10 and counts[M] > 10 and counts[R] == 16 * 7
    assert np.any(np.sum(actions >= 0, axis=-1) > 1)


def test_one_operation_per_token_is_the_consuming_cell():
    """`operations_per_token=1` is the cell of one consuming operation per
    token: the same weights, the same greedy outputs as before the option."""
    x = np.random.default_rng(2).normal(size=(4, 6, 3)).astype("float32")
    one = RecurrentRecursiveCell(4, max_depth=2, mode="reinforce", seed=3)
    default = keras.layers.RNN(one, return_sequences=True)(x)
    assert default.shape == (4, 6, 4 + 3)
    explicit = RecurrentRecursiveCell(4, max_depth=2, mode="reinforce",
                                      operations_per_token=1, seed=3)
    np.testing.assert_array_equal(
        to_numpy(keras.layers.RNN(explicit, return_sequences=True)(x)), to_numpy(default))


def test_sampling_inside_compiled_function():
    cell = _cell(3)
    rnn = keras.layers.RNN(cell, return_sequences=True)
    x = np.random.default_rng(4).normal(size=(8, 5, 3)).astype("float32")
    rnn.build(x.shape)
    actions = to_numpy(cell.split_outputs(backend_support.compiled(rnn)(x))[1])
    assert np.all(np.sum(actions == R, axis=-1) == 1)
    assert np.all(np.sum(actions >= 0, axis=-1) <= 3)


def test_config_round_trip_and_bad_arguments():
    cell = RecurrentRecursiveCell(4, max_depth=2, mode="reinforce", operations_per_token=3)
    assert RecurrentRecursiveCell.from_config(cell.get_config()).operations_per_token == 3
    assert cell.output_size == 4 + 3 + 2
    for bad in (0, 1.5, "2"):
        with pytest.raises(ValueError, match="`operations_per_token`"):
            RecurrentRecursiveCell(4, max_depth=2, mode="reinforce",
                                   operations_per_token=bad)
    for mode in ("supervised", "fixed"):
        with pytest.raises(ValueError, match="`operations_per_token`.*mode='reinforce'"):
            RecurrentRecursiveCell(4, max_depth=2, mode=mode, operations_per_token=2)


# "1+(2*3)" read with operations between tokens: split before "(" and
# before "2", merge before ")" (closing the span of "2*3") and the outer
# sub-tree left open at the end (it closes there).
ROWS = [[R, -1, -1], [R, -1, -1], [S, R, -1], [S, R, -1], [R, -1, -1],
        [R, -1, -1], [M, R, -1]]


def test_trees_read_between_tokens():
    assert tree_spans(ROWS) == {(2, 6), (3, 5)}
    assert bracketed_tree("1+(2*3)", ROWS) == "1 + [( [2 * 3] )]"
    # A merge right after its split reads no token: no span.
    assert tree_spans([[S, M, R], [R]]) == set()
    assert bracketed_tree("ab", [[S, M, R], [R]]) == "[]a b"
    assert bracketed_tree("ab", [[R], [S, M, R]]) == "a []b"
    assert bracketed_tree("ab", [[S, S, R], [M, M, R]]) == "[[a]] b"
    assert bracketed_tree("ab", [[S, S, R], [M, R]]) == "[[a] b]"
    assert bracketed_tree("ab", [[S, S, R], [M, S, M, R]]) == "[[a] []b]"
    assert bracketed_tree("ab", [[R], [S, R]]) == "a [b]"
    # Against the gold tree of the consuming reading ("(" to ")").
    gold = [R, R, S, R, R, R, M]  # span (2, 6)
    assert tree_agreement([ROWS], [gold]) == {"f1": 2 / 3, "exact": 0.0}
