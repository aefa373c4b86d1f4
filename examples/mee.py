r"""Math expression evaluation with the RRNet (Jacob et al. 2018, Sec. 3.1, Table 2).

Trains `hmkeras.models.ExpressionModel` (an encoder whose final state
initialises a two-digit decoder LSTM) on MEE expressions of lengths 4 and 5
and reports the test accuracy (both digits right) for every length 4-7, as
in Table 2 of the paper, next to the paper's figures. For the RRNet
encoders it then prints the agreement of the encoder's trees with the
brackets per test length (bracketing F1, exact trees) and a few learned
trees above the true ones ("[" opens a sub-tree at a split, "]" closes it
after a merge).

Encoders (`--encoder`): `lstm` (baseline), `rrnet_supervised` (the true
operations: split at "(", merge at ")", recur otherwise; the policy trained
on them), `rrnet_reinforce` (tree sampled from the policy, REINFORCE with
an entropy bonus; by default the reward is minus the decoder's loss and
the baseline the reward of the policy's greedy tree, chosen by
measurement; `--reward=accuracy --baseline=learned` for the paper's
correctness reward and a learned baseline, `--baseline=leave_one_out` for
four sampled trees per expression, each against the mean reward of the
others; greedy trees at test time)
and `rrnet_random` (a random but fixed operation per symbol). The
REINFORCE policy splits and merges between tokens, at most twice before
each token, and only recur reads a token (the paper's operations;
`--operations_per_token=3`, its default, chosen by measurement);
`--operations_per_token=1` makes every operation consume its token.
`--policy_inputs=token` gives the REINFORCE (or supervised) policy the
token alone, `--policy_warmup_epochs=N` trains the encoder and decoder
for N epochs on the untrained policy's trees before the policy learns,
and `--exploration=E` spreads a share E of the policy's probability over
the possible operations (`docs/results/mee-logic.md`, "Where the encoder
and its policy start"; all three off by default). `--subtree_start=fresh`
starts each sub-tree from the zero state instead of its parent's, so what
precedes it reaches the states after it only through a merge
(`docs/results/mee-logic.md`, "Sub-trees that start fresh"; off by default).
The supervised and random-tree encoders merge with Tree-LSTM nodes
(`--memory=tree`, their default, chosen by measurement: the supervised
RRNet's lead over the LSTM comes with it); `--memory=continued` gives the
cell's other memory, REINFORCE's default.

The data come from `hmkeras.data.mee.generate_expressions` (plain Python,
deterministic from `--seed`); the paper's sizes are 100,000 / 10,000 /
10,000 expressions per length (`--train_size=100000 --valid_size=10000
--test_size=10000`). The defaults (50,000 / 1,000 / 2,000 per length, 128
units, 8 epochs of batch 256, Adam 5e-3) are the CPU run of
`docs/results/mee-logic.md`, "MEE (Jacob et al. Table 2) in small" (its
wall times are there); `--quick` (10,000 / 500 / 500, 3 epochs) runs in
minutes, a smoke test (the models are still near chance).

Examples:

    python examples/mee.py --encoder=rrnet_supervised
    python examples/mee.py --encoder=rrnet_reinforce
    python examples/mee.py --encoder=rrnet_reinforce --reward=accuracy --baseline=learned
    python examples/mee.py --encoder=rrnet_reinforce --baseline=leave_one_out \
        --batch_size=64 --patience=2 --output_dir=runs/mee_loo
    python examples/mee.py --encoder=lstm --quick       # minutes
    python examples/mee.py --encoder=lstm --tiny        # a smoke test
"""

import os
import time

from absl import flags

from command_line import FlagError  # examples/command_line.py
from command_line import absl_main
from command_line import flag_errors
from command_line import run_script
from command_line import settings_from_flags

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ENCODERS = ("lstm", "rrnet_supervised", "rrnet_reinforce", "rrnet_random")
REWARDS = ("accuracy", "likelihood")
BASELINES = ("learned", "greedy", "leave_one_out")
DECODERS = ("autoregressive", "steps")
# Options of some encoders: (flag, its default, the encoders that use it).
ENCODER_OPTIONS = (
    ("reward", None, ("rrnet_reinforce",)),
    ("baseline", None, ("rrnet_reinforce",)),
    ("tree_samples", None, ("rrnet_reinforce",)),
    ("policy_warmup_epochs", 0, ("rrnet_reinforce",)),
    ("exploration", 0.0, ("rrnet_reinforce",)),
    ("recur_bias", 0.0, ("rrnet_supervised", "rrnet_reinforce")),
    ("policy_inputs", "state_and_token", ("rrnet_supervised", "rrnet_reinforce")),
    ("memory", None, ("rrnet_supervised", "rrnet_reinforce", "rrnet_random")),
    ("subtree_start", "parent", ("rrnet_supervised", "rrnet_reinforce", "rrnet_random")),
)
# Jacob et al. (2018), Table 2: train accuracy and test accuracy by length.
PAPER_TABLE_2 = {
    "lstm": {"train": 75.80, 4: 81.32, 5: 67.65, 6: 52.70, 7: 41.35},
    "rrnet_reinforce": {"train": 86.00, 4: 89.42, 5: 77.96, 6: 61.34, 7: 50.46},
    "rrnet_supervised": {"train": 93.70, 4: 93.28, 5: 86.69, 6: 79.09, 7: 72.70},
}
TINY = dict(units=8, embedding_dim=4, train_size=48, valid_size=16, test_size=16,
            epochs=1, batch_size=16, num_trees=2)

# Validation expressions (of the longest training length) whose trees are
# scored after each epoch, and the trained model's file in --output_dir.
CURVE_EXPRESSIONS = 500
MODEL_FILE = "model.keras"
QUICK = dict(train_size=10000, valid_size=500, test_size=500, epochs=3)

FLAGS = flags.FLAGS
_FLAGS_BEFORE = set(FLAGS)
flags.DEFINE_enum("encoder", "rrnet_supervised", list(ENCODERS), "The encoder.")
flags.DEFINE_bool("tiny", False, "Shrink the model and the data (tests).")
flags.DEFINE_bool("quick", False, "Less data and fewer epochs: a run of minutes.")
flags.DEFINE_integer("units", 128, "Encoder and decoder state size.", lower_bound=1)
flags.DEFINE_integer("embedding_dim", 32, "Character embedding size.", lower_bound=1)
flags.DEFINE_integer("max_depth", 10, "Stack slots of the RRNet cell.", lower_bound=1)
flags.DEFINE_list("train_lengths", ["4", "5"], "Lengths to train (and validate) on.")
flags.DEFINE_list("test_lengths", ["4", "5", "6", "7"], "Lengths to test on.")
flags.DEFINE_integer("train_size", 50000, "Training expressions per length.", lower_bound=1)
flags.DEFINE_integer("valid_size", 1000, "Validation expressions per length.", lower_bound=1)
flags.DEFINE_integer("test_size", 2000, "Test expressions per length.", lower_bound=1)
flags.DEFINE_integer("epochs", 8, "Training epochs (the most, with --patience).",
                     lower_bound=1)
flags.DEFINE_integer("patience", None, "Stop when the validation accuracy has not "
                     "risen for this many epochs and keep the best epoch's weights "
                     "(default: train all --epochs).", lower_bound=1)
flags.DEFINE_integer("batch_size", 256, "Batch size.", lower_bound=1)
flags.DEFINE_float("learning_rate", 0.005, "Adam learning rate.", lower_bound=0)
flags.DEFINE_float("clip_norm", 5.0, "Gradient-norm clipping.", lower_bound=0)
flags.DEFINE_float("policy_weight", 0.01, "Weight of the policy loss (it reaches "
                   "the encoder's weights too; 1 held the encoder on its plateau).",
                   lower_bound=0)
flags.DEFINE_float("entropy_weight", 1e-4, "REINFORCE entropy bonus.", lower_bound=0)
flags.DEFINE_float("recur_bias", 0.0, "Initial bias of the RRNet policy's recur logit "
                   "(0: a uniform policy; 3: recur with probability 0.91).")
flags.DEFINE_enum("policy_inputs", "state_and_token", ["state_and_token", "token"],
                  "What the RRNet policy reads: [h; e_t] (the paper's) or the token's "
                  "embedding e_t only (a fixed operation per symbol when greedy).")
flags.DEFINE_integer("policy_warmup_epochs", 0, "REINFORCE: epochs at the start that "
                     "train the encoder and decoder on the untrained policy's trees, "
                     "without the policy's losses (counted in --epochs).", lower_bound=0)
flags.DEFINE_float("exploration", 0.0, "REINFORCE: share of the policy's probability "
                   "spread evenly over the possible operations, in [0, 1).",
                   lower_bound=0, upper_bound=0.999999)
flags.DEFINE_integer("operations_per_token", None, "The most operations per token "
                     "(1: each consumes its token; n > 1, rrnet_reinforce only: the "
                     "paper's splits and merges between tokens, at most n - 1, then "
                     "the recur that reads the token). Default: 3 for rrnet_reinforce, "
                     "1 for the others.", lower_bound=1)
flags.DEFINE_enum("memory", None, ["continued", "tree"], "The RRNet cell's LSTM memory "
                  "at a merge: continued from the sub-tree, or a Tree-LSTM node over the "
                  "sub-tree's memory and the one saved at its split. Default: tree for "
                  "rrnet_supervised and rrnet_random, continued for rrnet_reinforce.")
flags.DEFINE_enum("subtree_start", "parent", ["parent", "fresh"], "Where the RRNet "
                  "cell's sub-tree starts at a split: from the parent's state (the "
                  "paper's) or from the zero state, so what precedes it reaches the "
                  "states after it only through a merge.")
flags.DEFINE_enum("reward", None, list(REWARDS), "REINFORCE reward: correctness "
                  "(the paper) or minus the decoder loss. Default: likelihood.")
flags.DEFINE_enum("baseline", None, list(BASELINES), "REINFORCE baseline: learned "
                  "from the expression's tokens, the reward of the policy's greedy "
                  "tree (self-critical; one more forward pass per step), or the mean "
                  "reward of the expression's other sampled trees (leave_one_out, "
                  "with --tree_samples). Default: greedy.")
flags.DEFINE_integer("tree_samples", None, "REINFORCE: trees sampled per training "
                     "expression (a batch of --batch_size expressions trains on "
                     "batch_size * tree_samples trees). Default: 4 with "
                     "--baseline=leave_one_out, else 1.", lower_bound=1)
flags.DEFINE_enum("decoder", "autoregressive", list(DECODERS), "Digit decoder: the "
                  "first digit fed back (the paper) or two learned step inputs.")
flags.DEFINE_integer("seed", 0, "Seed of the data and the model.", lower_bound=0)
flags.DEFINE_integer("num_trees", 5, "Test expressions whose tree is printed.",
                     lower_bound=0)
flags.DEFINE_string("output_dir", None, "Where results.json goes (optional).")
flags.DEFINE_integer("verbose", 2, "Keras verbosity (0, 1 or 2).", lower_bound=0,
                     upper_bound=2)
_OWN_FLAGS = set(FLAGS) - _FLAGS_BEFORE


def _lengths(name, values):
    try:
        lengths = [int(v) for v in values]
    except ValueError:
        lengths = []
    if not lengths or min(lengths) < 1:
        raise FlagError(f"--{name} must be positive integers, e.g. 4,5. "
                        f"Received: --{name}={','.join(values)}")
    return lengths


def resolve_settings(flag_values):
    """The run's settings: flags, `--tiny` or `--quick` for those not given
    explicitly."""
    if flag_values.tiny and flag_values.quick:
        raise FlagError("--tiny and --quick are two sizes: give one of them.")
    preset = TINY if flag_values.tiny else QUICK if flag_values.quick else {}
    settings = settings_from_flags(flag_values, _OWN_FLAGS, preset)
    settings["train_lengths"] = _lengths("train_lengths", settings["train_lengths"])
    settings["test_lengths"] = _lengths("test_lengths", settings["test_lengths"])
    given = settings["operations_per_token"]  # None: the encoder's default
    if given is not None and given > 1 and settings["encoder"] != "rrnet_reinforce":
        raise FlagError(
            "--operations_per_token > 1 needs --encoder=rrnet_reinforce (the other "
            "encoders read one given operation, or none, per token). Received: "
            f"--operations_per_token={settings['operations_per_token']} "
            f"--encoder={settings['encoder']}")
    if settings["baseline"] == "leave_one_out" and settings["tree_samples"] == 1:
        raise FlagError("--baseline=leave_one_out needs --tree_samples of at least 2 "
                        "(each tree's baseline is the mean reward of the others). "
                        "Received: --tree_samples=1")
    for name, default, users in ENCODER_OPTIONS:
        if settings[name] != default and settings["encoder"] not in users:
            raise FlagError(
                f"--{name} is an option of --encoder={'|'.join(users)} only. Received: "
                f"--{name}={settings[name]} --encoder={settings['encoder']}")
    from hmkeras import tensorflow_features

    with flag_errors(ValueError):  # another backend: one line, before any file is made
        tensorflow_features.require_training_backend("ExpressionModel (examples/mee.py)")
    return settings


def load_split(split, lengths, size, seed):
    """`{length: [MeeExample]}` from the plain-Python generator."""
    from hmkeras.data import mee

    return {length: list(mee.generate_expressions(length, split, size, seed))
            for length in lengths}


def _steps_per_epoch(by_length, batch_size):
    """Training steps of one epoch: the batches of every length (`_dataset`)."""
    return sum(-(-len(examples) // batch_size) for examples in by_length.values())


def _dataset(by_length, batch_size, shuffle_seed=None):
    """Batches of one length each (no padding), from `{length: [MeeExample]}`;
    shuffled within each length, then the batches, when `shuffle_seed` is
    given; else in order."""
    import tensorflow as tf

    from hmkeras.data.mee import model_inputs
    from hmkeras.data.pipeline import without_autotuning

    datasets = []
    for examples in by_length.values():
        inputs, digits = model_inputs(examples)
        ds = tf.data.Dataset.from_tensor_slices((inputs, digits))
        if shuffle_seed is not None:
            ds = ds.shuffle(len(examples), seed=shuffle_seed,
                            reshuffle_each_iteration=True)
        datasets.append(ds.batch(batch_size))
    ds = datasets[0]
    for other in datasets[1:]:
        ds = ds.concatenate(other)
    if shuffle_seed is not None:
        ds = ds.shuffle(int(ds.cardinality()), seed=shuffle_seed,
                        reshuffle_each_iteration=True)
    return without_autotuning(ds.prefetch(2))  # a new iterator every epoch


def run(s):
    """Trains, tests and prints Table 2; returns the results dict."""
    started = time.time()
    import keras
    import numpy as np

    from hmkeras.models.expression_model import ExpressionModel
    from hmkeras.training.run_directory import write_results

    keras.utils.set_random_seed(s["seed"])
    train = load_split("train", s["train_lengths"], s["train_size"], s["seed"])
    valid = load_split("validation", s["train_lengths"], s["valid_size"], s["seed"])
    test = load_split("test", s["test_lengths"], s["test_size"], s["seed"])
    # Every batch holds one length (4n + 1 characters for n operations): no
    # padding, and one trace of the training and test functions per length.
    train_all = [e for length in s["train_lengths"] for e in train[length]]
    valid_all = [e for length in s["train_lengths"] for e in valid[length]]
    model = ExpressionModel(
        encoder=s["encoder"], units=s["units"], embedding_dim=s["embedding_dim"],
        max_depth=s["max_depth"], policy_weight=s["policy_weight"],
        entropy_weight=s["entropy_weight"], reward=s["reward"], decoder=s["decoder"],
        recur_bias=s["recur_bias"], operations_per_token=s["operations_per_token"],
        memory=s["memory"], baseline=s["baseline"], tree_samples=s["tree_samples"],
        policy_inputs=s["policy_inputs"], exploration=s["exploration"],
        subtree_start=s["subtree_start"],
        policy_warmup_steps=s["policy_warmup_epochs"] * _steps_per_epoch(
            train, s["batch_size"]), seed=s["seed"])
    # The defaults resolved.
    s["operations_per_token"], s["memory"] = model.operations_per_token, model.memory
    s["reward"], s["baseline"] = model.reward, model.baseline_name
    if s["encoder"] == "rrnet_reinforce":
        s["tree_samples"] = model.tree_samples
    model.compile(optimizer=keras.optimizers.Adam(s["learning_rate"],
                                                  clipnorm=s["clip_norm"]))
    print(f"{s['encoder']}: train {len(train_all):,} expressions (lengths "
          f"{s['train_lengths']}), valid {len(valid_all):,}, test {s['test_size']:,} "
          f"per length {s['test_lengths']}.")
    # Bracketing F1 of the greedy trees after each epoch (RRNet encoders).
    curve_callback, tree_f1 = tree_curve(
        model, valid[max(s["train_lengths"])][:CURVE_EXPRESSIONS])
    history = model.fit(_dataset(train, s["batch_size"], shuffle_seed=s["seed"]),
                        validation_data=_dataset(valid, s["batch_size"]),
                        epochs=s["epochs"], verbose=s["verbose"], shuffle=False,
                        callbacks=_stopping(s["patience"]) + [curve_callback])
    parameters = sum(int(np.prod(v.shape)) for v in model.trainable_weights)
    print(f"{parameters:,} trainable parameters")

    def accuracy(by_length):
        result = model.evaluate(_dataset(by_length, s["batch_size"]), verbose=0,
                                return_dict=True)
        return 100.0 * float(result["accuracy"])

    curve = [100.0 * float(a) for a in history.history["val_accuracy"]]
    best = int(np.argmax(curve)) if s["patience"] else len(curve) - 1
    results = {"encoder": s["encoder"], "settings": s, "backend": keras.backend.backend(),
               "epochs_trained": len(curve), "kept_epoch": best + 1,
               "validation_curve": curve, "tree_f1_curve": tree_f1,
               "train_accuracy": 100.0 * float(history.history["accuracy"][best]),
               "valid_accuracy": accuracy(valid),
               "test_accuracy": {str(length): accuracy({length: test[length]})
                                 for length in s["test_lengths"]}}
    results["parameters"] = parameters

    def save():
        results["wall_seconds"] = time.time() - started
        if s["output_dir"]:
            os.makedirs(s["output_dir"], exist_ok=True)
            write_results(s["output_dir"], results)

    if s["output_dir"]:  # the trained model, for bench/tree_rewards.py
        os.makedirs(s["output_dir"], exist_ok=True)
        model.save(os.path.join(s["output_dir"], MODEL_FILE))
    save()  # the accuracies first, whatever the tree analysis does
    print_table(results)
    if model.cell is not None:
        print("bracketing F1 of the greedy trees after each epoch (validation, %): "
              + ", ".join(f"{f1:.1f}" for f1 in tree_f1))
    print(f"validation accuracy (lengths {s['train_lengths']}): "
          f"{results['valid_accuracy']:.2f} (epoch {results['kept_epoch']} of "
          f"{results['epochs_trained']}; after each: "
          f"{', '.join(f'{a:.1f}' for a in curve)})")
    if model.cell is not None:
        results["tree_agreement"] = {str(length): tree_agreement(model, test[length])
                                     for length in s["test_lengths"]}
        print_tree_agreement(results["tree_agreement"])
    results["trees"], results["true_trees"] = print_trees(
        model, test[max(s["train_lengths"])][: s["num_trees"]])
    save()
    return results


def tree_curve(model, examples):
    """A Keras callback that records the bracketing F1 (%) of the encoder's
    greedy trees on `examples` after each epoch, and the list it fills
    (left empty for the LSTM)."""
    import keras

    f1 = []

    def record(epoch, logs=None):
        if model.cell is not None:
            f1.append(tree_agreement(model, examples)["f1"])
            print(f"epoch {epoch + 1}: bracketing F1 of the greedy trees "
                  f"(validation) {f1[-1]:.2f} %", flush=True)

    return keras.callbacks.LambdaCallback(on_epoch_end=record), f1


def _stopping(patience):
    """With `patience`, stop once the validation accuracy has not risen for
    that many epochs and restore the best epoch's weights."""
    import keras

    if patience is None:
        return []
    return [keras.callbacks.EarlyStopping(monitor="val_accuracy", mode="max",
                                          patience=patience, restore_best_weights=True)]


def _encoder_trees(model, examples):
    """The encoder's operations (greedy for REINFORCE) on `examples`, one
    list per expression (of one operation id per token, or with
    `--operations_per_token` > 1 of one row of operations per token), and
    the predicted values."""
    import numpy as np

    from hmkeras.data.mee import model_inputs

    inputs, _ = model_inputs(examples)
    logits, tree = model.analyze(inputs, training=False)
    digits = np.argmax(np.asarray(logits), -1)
    values = (digits[:, 0] * 10 + digits[:, 1]).tolist()
    if tree is None:
        return None, values
    actions = np.asarray(tree[0]).astype(int)
    return [actions[row, : len(e.expression)].tolist()
            for row, e in enumerate(examples)], values


def tree_agreement(model, examples):
    """Bracketing F1 and exact-tree rate of the encoder's trees against the
    brackets of `examples` (both in %), and the mean number of splits and
    of merges its trees execute per expression (the brackets have one of
    each per operation of the expression)."""
    import numpy as np

    from hmkeras.cells import recurrent_recursive_cell as rr

    actions, _ = _encoder_trees(model, examples)
    scores = rr.tree_agreement(actions, [e.operations for e in examples])
    scores = {name: 100.0 * value for name, value in scores.items()}
    for name, operation in (("splits", rr.SPLIT), ("merges", rr.MERGE)):
        scores[name] = float(np.mean([np.sum(np.asarray(tree) == operation)
                                      for tree in actions]))
    return scores


def print_tree_agreement(agreement):
    print("\nTrees against the brackets (test; F1 and exact in %; splits and merges "
          "per expression, the brackets have L of each):")
    for length, scores in agreement.items():
        print(f"  L={length}: bracketing F1 {scores['f1']:6.2f}, "
              f"exact trees {scores['exact']:6.2f}, splits {scores['splits']:5.2f}, "
              f"merges {scores['merges']:5.2f}")


def print_trees(model, examples):
    """Prints each expression's learned tree above its true one; returns
    both lists of lines (the learned trees with the value and the
    prediction, the true trees)."""
    from hmkeras.cells.recurrent_recursive_cell import bracketed_tree

    if not examples:
        return [], []
    actions, values = _encoder_trees(model, examples)
    print("\nTrees of the encoder ([ opens at a split, ] closes after a merge), "
          "each above the true tree:")
    lines, true_lines = [], []
    for row, example in enumerate(examples):
        if actions is None:
            learned = "(LSTM: no tree) " + " ".join(example.expression)
        else:
            learned = bracketed_tree(example.expression, actions[row])
        true_lines.append(bracketed_tree(example.expression, example.operations))
        lines.append(f"{learned}   = {example.value} (predicted {values[row]})")
        print(f"  {lines[-1]}\n  {true_lines[-1]}   (true)")
    return lines, true_lines


def print_table(results):
    """Table 2 layout: this run's accuracies and the paper's row."""
    lengths = list(results["test_accuracy"])
    header = "model".ljust(34) + "train".rjust(8) + "".join(
        f"L={length}".rjust(8) for length in lengths)
    print("\n" + header)
    row = f"{results['encoder']} (this run, train)".ljust(34)
    row += f"{results['train_accuracy']:8.2f}"
    row += "".join(f"{results['test_accuracy'][length]:8.2f}" for length in lengths)
    print(row)
    paper = PAPER_TABLE_2.get(results["encoder"])
    if paper:
        line = f"{results['encoder']} (paper, train)".ljust(34) + f"{paper['train']:8.2f}"
        line += "".join(f"{paper[int(length)]:8.2f}" if int(length) in paper
                        else "       -" for length in lengths)
        print(line)


def run_from_flags():
    """The command: the settings from the flags, then the run."""
    run(resolve_settings(FLAGS))


main = absl_main(run_from_flags)

if __name__ == "__main__":
    run_script(main)
