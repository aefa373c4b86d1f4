r"""What a trained MEE encoder's trees are worth to it: the REINFORCE reward
of its own trees against the brackets' and others.

REINFORCE moves the policy towards the trees that earn more reward than
its baseline. This script reads a trained run of `examples/mee.py` (its
`model.keras`) and scores the test expressions of every length with the
run's encoder reading:

* `greedy`: the trees of its policy's argmax (what the run's test reads);
* `brackets`: the true trees (split at "(", merge at ")", recur otherwise);
* `no tree`: recur at every token (the encoder as an LSTM of its cells);
* `random`: a uniformly random operation per token (seeded);
* `greedy, ) merges`: the greedy trees with a merge at every closing
  bracket (a merge on an empty stack runs as a recur): one change of a
  policy that picks an operation per symbol, the one that completes the
  brackets of a policy that already splits at every "(".

For each: the accuracy (both digits right, %), the mean reward of the
run's REINFORCE objective with the likelihood reward (minus the decoder's
loss, nats; higher is better) and the bracketing F1 of the trees (%).
If the brackets earn less than the greedy trees, the reward gives the
policy no reason to find them: the encoder has learned to use its own
trees. It also prints the share of the brackets' merges that a reading
with splits and merges between tokens (at most two before each token)
cannot execute (`merges_out_of_reach`). The trees are given to a twin of the encoder, an
`ExpressionModel("rrnet_supervised")` with the run's weights; so the run
must read one operation per token (`--operations_per_token=1`: the
brackets are then one operation per token, as in the supervised
setting).

    python examples/mee.py --encoder=rrnet_reinforce --operations_per_token=1 \
        --memory=tree --output_dir=runs/mee_reinforce_s0
    python bench/tree_rewards.py --run_dir=runs/mee_reinforce_s0

Figures: `docs/results/mee-logic.md`, "Why the REINFORCE trees ignore the
brackets".
"""

import json
import os
import re

from absl import app
from absl import flags
import numpy as np

FLAGS = flags.FLAGS
flags.DEFINE_string("run_dir", None, "An --output_dir of examples/mee.py (an RRNet "
                    "encoder reading one operation per token).")
flags.DEFINE_integer("test_size", None, "Test expressions per length (default: the "
                     "run's --test_size).", lower_bound=1)
flags.DEFINE_integer("seed", 0, "Seed of the random trees.", lower_bound=0)
flags.mark_flags_as_required(["run_dir"])

TREES = ("greedy", "brackets", "no tree", "random", "greedy, ) merges")
# The operations per token of a reading between tokens whose reach is
# reported: the paper's (`examples/mee.py --operations_per_token=3`).
READING_BETWEEN_TOKENS = 3


def twin_encoder(model):
    """An `ExpressionModel("rrnet_supervised")` with `model`'s cell and
    weights: it reads the operations it is given."""
    from hmkeras.models.expression_model import ExpressionModel

    if model.cell is None or model.operations_per_token != 1:
        raise ValueError(
            "The run must have an RRNet encoder reading one operation per token "
            "(--operations_per_token=1); received encoder="
            f"{model.encoder_name!r}, operations_per_token={model.operations_per_token}.")
    twin = ExpressionModel(
        "rrnet_supervised", vocab_size=model.vocab_size, units=model.units,
        embedding_dim=model.embedding_dim, max_depth=model.max_depth,
        decoder=model.decoder_name, memory=model.memory,
        policy_inputs=model.policy_inputs, subtree_start=model.subtree_start)
    twin.build_from_config({"built": True})
    # The same layers in the same order; a learned baseline is the run's own,
    # and so is the step counter of a policy warm-up.
    weights = [w for w in model.weights if not w.path.startswith("baseline/")
               and w is not getattr(model, "trained_steps", None)]
    for mine, theirs in zip(twin.weights, weights, strict=True):
        if tuple(mine.shape) != tuple(theirs.shape):
            raise ValueError(f"Weights do not match: {mine.path} {mine.shape} and "
                             f"{theirs.path} {theirs.shape}.")
        mine.assign(theirs)
    return twin


def tree_operations(kind, model, inputs, rng):
    """`(n, T)` operation ids of the trees of `kind` (see the module
    docstring)."""
    if kind == "brackets":
        return inputs["operations"]
    if kind == "no tree":
        return np.full_like(inputs["operations"], 2)
    if kind == "random":
        return rng.integers(0, 3, size=inputs["operations"].shape).astype(np.int32)
    actions = np.asarray(model.analyze(inputs, training=False)[1][0]).astype(np.int32)
    if kind == "greedy, ) merges":  # the brackets merge at every ")", only there
        from hmkeras.data import mee

        closing = np.asarray(inputs["operations"]) == mee.MERGE_OPERATION
        actions = np.where(closing, mee.MERGE_OPERATION, actions)
    return actions


def score(twin, inputs, digits, operations):
    """Accuracy (%), mean reward (minus the decoder's loss, nats) and the
    executed trees, with the encoder reading `operations`."""
    given = {"tokens": inputs["tokens"], "operations": operations}
    logits, tree = twin.analyze(given, training=False)
    task, correct = twin._task(logits, digits)
    return 100.0 * float(np.mean(correct)), -float(np.mean(task)), np.asarray(tree[0])


def tree_rewards(model, examples_by_length, seed=0):
    """`{length: {tree kind: {"accuracy", "reward", "bracket_f1"}}}`."""
    from hmkeras.cells.recurrent_recursive_cell import tree_agreement
    from hmkeras.data.mee import model_inputs

    twin = twin_encoder(model)
    rng = np.random.default_rng(seed)
    table = {}
    for length, examples in examples_by_length.items():
        inputs, digits = model_inputs(examples)
        gold = [e.operations for e in examples]
        table[length] = {}
        for kind in TREES:
            operations = tree_operations(kind, model, inputs, rng)
            accuracy, reward, executed = score(twin, inputs, digits, operations)
            trees = [executed[row, : len(e.expression)] for row, e in enumerate(examples)]
            table[length][kind] = {"accuracy": accuracy, "reward": reward,
                                   "bracket_f1": 100 * tree_agreement(trees, gold)["f1"]}
    return table


def merges_out_of_reach(expression, operations_per_token):
    """How many of the brackets' merges a reading with splits and merges
    between tokens (`operations_per_token` = n > 1) cannot execute: a
    merge comes before the next token is read, so the merges of the
    closing brackets at the end of the expression have no token to come
    before, and a run of r closing brackets followed by a token needs r
    merges where at most n - 1 fit.

    Examples:

        >>> merges_out_of_reach("((1+2)*3)", 3)  # the outer merge is last
        1
        >>> merges_out_of_reach("(((1+2)+3)+4)", 3), merges_out_of_reach("(((1+2)+3)+4)", 2)
        (1, 1)
        >>> merges_out_of_reach("((1+(2+(3+4)))*5)", 3)  # ")))" then "*": one too many
        2
    """
    trailing = len(expression) - len(expression.rstrip(")"))
    inner = [len(run) for run in re.findall(r"\)+(?=[^)])", expression)]
    return trailing + sum(max(0, run - (operations_per_token - 1)) for run in inner)


def out_of_reach_share(examples_by_length, operations_per_token):
    """`{length: % of the brackets' merges out of reach}` (see
    `merges_out_of_reach`)."""
    return {length: 100.0 * sum(merges_out_of_reach(e.expression, operations_per_token)
                                for e in examples)
            / sum(e.expression.count(")") for e in examples)
            for length, examples in examples_by_length.items()}


def print_table(table):
    print(f"{'length':>6}  {'trees':<17}{'accuracy %':>11}{'reward (nats)':>15}"
          f"{'bracket F1 %':>14}")
    for length, rows in table.items():
        for kind, row in rows.items():
            print(f"{length:>6}  {kind:<17}{row['accuracy']:11.2f}{row['reward']:15.3f}"
                  f"{row['bracket_f1']:14.1f}")


def main(argv):
    del argv
    import keras

    from hmkeras.data import mee

    with open(os.path.join(FLAGS.run_dir, "results.json")) as f:
        settings = json.load(f)["settings"]
    model = keras.saving.load_model(os.path.join(FLAGS.run_dir, "model.keras"))
    size = FLAGS.test_size or settings["test_size"]
    examples = {length: list(mee.generate_expressions(length, "test", size,
                                                      settings["seed"]))
                for length in settings["test_lengths"]}
    table = tree_rewards(model, examples, FLAGS.seed)
    print_table(table)
    out_of_reach = out_of_reach_share(examples, READING_BETWEEN_TOKENS)
    print(f"\nThe brackets' merges out of reach of a reading with at most "
          f"{READING_BETWEEN_TOKENS - 1} splits or merges before each token (%): "
          + ", ".join(f"L={length} {share:.1f}" for length, share in out_of_reach.items()))
    with open(os.path.join(FLAGS.run_dir, "tree_rewards.json"), "w") as f:
        json.dump({"trees": {str(length): rows for length, rows in table.items()},
                   "merges_out_of_reach": {str(k): v for k, v in out_of_reach.items()}},
                  f, indent=1)


if __name__ == "__main__":
    app.run(main)
