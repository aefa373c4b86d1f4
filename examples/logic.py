r"""Logical inference with the RRNet (Jacob et al. 2018, Sec. 3.2, Fig. 2).

Trains `hmkeras.models.PairClassifier` (a shared sentence encoder, the
`[u; v; u - v; u * v]` comparison, a tanh layer and a softmax over the
seven relations) on pairs of the artificial propositional language of
Bowman et al. (2015) with at most `--train_max_operations` (6) operations,
and reports the test accuracy for every number of operations 1-12, as in
Fig. 2 of the paper, next to the majority-relation baseline of each bin.

Encoders (`--encoder`): `lstm` (baseline), `rrnet_supervised` (the RRNet
fed each sentence's ground-truth tree: split at "(", merge at ")", recur
otherwise) and `rrnet_random` (a random but fixed operation per token).

The data come from `hmkeras.data.logic.generate_pairs` (plain Python,
deterministic from `--seed`; the TFDS builder `LogicInference` writes the
same pairs to files); a pair's number of operations is the larger of its
two sentences'. The script runs on every Keras backend
(`KERAS_BACKEND=jax python examples/logic.py ...`); the batches come
through `tf.data`, so TensorFlow must be installed. `results.json` names
the backend.

Examples:

    python examples/logic.py --encoder=rrnet_supervised
    python examples/logic.py --encoder=lstm --output_dir=/tmp/logic_lstm
    python examples/logic.py --encoder=lstm --tiny        # a smoke test
"""

import collections
import os
import time

from absl import flags

from command_line import absl_main  # examples/command_line.py
from command_line import run_script
from command_line import settings_from_flags

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ENCODERS = ("lstm", "rrnet_supervised", "rrnet_random")
MAX_OPERATIONS = 12  # hmkeras.data.logic.MAX_OPERATIONS
TINY = dict(units=8, embedding_dim=4, hidden_units=8, train_size=24, valid_size=8,
            test_size=8, epochs=1, batch_size=16, train_max_operations=2,
            test_max_operations=3)

FLAGS = flags.FLAGS
_FLAGS_BEFORE = set(FLAGS)
flags.DEFINE_enum("encoder", "rrnet_supervised", list(ENCODERS), "The encoder.")
flags.DEFINE_bool("tiny", False, "Shrink the model and the data (tests).")
flags.DEFINE_integer("units", 64, "Encoder state size.", lower_bound=1)
flags.DEFINE_integer("embedding_dim", 32, "Token embedding size.", lower_bound=1)
flags.DEFINE_integer("hidden_units", 64, "Size of the comparison layer.", lower_bound=1)
flags.DEFINE_integer("train_max_operations", 6, "Train (and validate) on pairs with "
                     "1..this many operations.", lower_bound=1,
                     upper_bound=MAX_OPERATIONS)
flags.DEFINE_integer("test_max_operations", MAX_OPERATIONS, "Test on pairs with "
                     "1..this many operations.", lower_bound=1,
                     upper_bound=MAX_OPERATIONS)
flags.DEFINE_integer("train_size", 2000, "Training pairs per number of operations.",
                     lower_bound=1)
flags.DEFINE_integer("valid_size", 200, "Validation pairs per number of operations.",
                     lower_bound=1)
flags.DEFINE_integer("test_size", 500, "Test pairs per number of operations.",
                     lower_bound=1)
flags.DEFINE_integer("epochs", 15, "Training epochs.", lower_bound=1)
flags.DEFINE_integer("batch_size", 64, "Batch size.", lower_bound=1)
flags.DEFINE_float("learning_rate", 0.003, "Adam learning rate.", lower_bound=0)
flags.DEFINE_float("clip_norm", 5.0, "Gradient-norm clipping.", lower_bound=0)
flags.DEFINE_integer("seed", 0, "Seed of the data and the model.", lower_bound=0)
flags.DEFINE_string("output_dir", None, "Where results.json goes (optional).")
flags.DEFINE_integer("verbose", 2, "Keras verbosity (0, 1 or 2).", lower_bound=0,
                     upper_bound=2)
_OWN_FLAGS = set(FLAGS) - _FLAGS_BEFORE


def resolve_settings(flag_values):
    """The run's settings: flags, `--tiny` for those not given explicitly."""
    return settings_from_flags(flag_values, _OWN_FLAGS, TINY if flag_values.tiny else {})


def load_split(split, max_operations, size, seed):
    """`{operations: [LogicPair]}` from the plain-Python generator."""
    from hmkeras.data import logic

    return {n: list(logic.generate_pairs(n, split, size, seed))
            for n in range(1, max_operations + 1)}


def to_arrays(pairs, width):
    """The `PairClassifier` inputs, padded to `width` tokens, and the
    relation ids."""
    import numpy as np

    from hmkeras.cells.recurrent_recursive_cell import RECUR
    from hmkeras.data import logic

    arrays = {}
    for side in ("left", "right"):
        tokens = np.zeros((len(pairs), width), np.int32)
        operations = np.full((len(pairs), width), RECUR, np.int32)
        for row, pair in enumerate(pairs):
            sentence = getattr(pair, side)
            ids = logic.encode_sentence(sentence)
            tokens[row, : len(ids)] = ids
            operations[row, : len(ids)] = logic.sentence_operations(sentence)
        arrays[f"{side}_tokens"], arrays[f"{side}_operations"] = tokens, operations
    labels = np.array([logic.RELATIONS.index(p.relation) for p in pairs], np.int32)
    return arrays, labels


def _width(pairs):
    return max(len(s.split()) for p in pairs for s in (p.left, p.right))


def _dataset(pairs, batch_size, width, shuffle_seed=None):
    import tensorflow as tf

    from hmkeras.data.pipeline import without_autotuning

    inputs, labels = to_arrays(pairs, width)
    ds = tf.data.Dataset.from_tensor_slices((inputs, labels))
    if shuffle_seed is not None:
        ds = ds.shuffle(len(pairs), seed=shuffle_seed, reshuffle_each_iteration=True)
    return without_autotuning(ds.batch(batch_size).prefetch(2))  # an iterator per epoch


def majority_accuracy(train_pairs, test_pairs):
    """Accuracy (%) of always answering the most frequent training relation."""
    majority = collections.Counter(p.relation for p in train_pairs).most_common(1)[0][0]
    return 100.0 * sum(p.relation == majority for p in test_pairs) / len(test_pairs)


def run(s):
    """Trains, tests and prints Fig. 2 as a table; returns the results dict."""
    started = time.time()
    import keras
    import numpy as np

    from hmkeras.models.pair_classifier import PairClassifier
    from hmkeras.training.run_directory import write_results

    keras.utils.set_random_seed(s["seed"])
    train = load_split("train", s["train_max_operations"], s["train_size"], s["seed"])
    valid = load_split("validation", s["train_max_operations"], s["valid_size"],
                       s["seed"])
    test = load_split("test", s["test_max_operations"], s["test_size"], s["seed"])
    train_all = [p for pairs in train.values() for p in pairs]
    valid_all = [p for pairs in valid.values() for p in pairs]
    test_width = max(_width(pairs) for pairs in test.values())
    model = PairClassifier(
        encoder=s["encoder"], units=s["units"], embedding_dim=s["embedding_dim"],
        hidden_units=s["hidden_units"], max_depth=MAX_OPERATIONS, seed=s["seed"])
    model.compile(optimizer=keras.optimizers.Adam(s["learning_rate"],
                                                  clipnorm=s["clip_norm"]),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    print(f"{s['encoder']}: train {len(train_all):,} pairs (1-{s['train_max_operations']} "
          f"operations), valid {len(valid_all):,}, test {s['test_size']:,} per number "
          f"of operations 1-{s['test_max_operations']}.")
    width = _width(train_all + valid_all)
    fit_started = time.time()
    model.fit(_dataset(train_all, s["batch_size"], width, shuffle_seed=s["seed"]),
              validation_data=_dataset(valid_all, s["batch_size"], width),
              epochs=s["epochs"], verbose=s["verbose"], shuffle=False)
    train_seconds = time.time() - fit_started
    parameters = sum(int(np.prod(v.shape)) for v in model.trainable_weights)
    print(f"{parameters:,} trainable parameters")

    def accuracy(pairs, width):
        result = model.evaluate(_dataset(pairs, s["batch_size"], width), verbose=0,
                                return_dict=True)
        return 100.0 * float(result["accuracy"])

    results = {
        "encoder": s["encoder"], "settings": s, "backend": keras.backend.backend(),
        "valid_accuracy": accuracy(valid_all, width),
        "test_accuracy": {str(n): accuracy(pairs, test_width)
                          for n, pairs in test.items()},
        "majority_accuracy": {str(n): majority_accuracy(train_all, pairs)
                              for n, pairs in test.items()},
        "parameters": parameters, "train_seconds": train_seconds,
    }
    print_table(results)
    results["wall_seconds"] = time.time() - started
    if s["output_dir"]:
        os.makedirs(s["output_dir"], exist_ok=True)
        write_results(s["output_dir"], results)
    return results


def print_table(results):
    """Fig. 2 as rows: test accuracy per number of operations, and the
    majority-relation baseline."""
    bins = list(results["test_accuracy"])
    print("\n" + "operations".ljust(22) + "".join(n.rjust(6) for n in bins))
    for name, row in ((results["encoder"], results["test_accuracy"]),
                      ("majority relation", results["majority_accuracy"])):
        print(name.ljust(22) + "".join(f"{row[n]:6.1f}" for n in bins))
    print(f"validation accuracy (1-{results['settings']['train_max_operations']} "
          f"operations): {results['valid_accuracy']:.1f}")


def run_from_flags():
    """The command: the settings from the flags, then the run."""
    run(resolve_settings(FLAGS))


main = absl_main(run_from_flags)

if __name__ == "__main__":
    run_script(main)
