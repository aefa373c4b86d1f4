r"""Linear probes of a trained word-discovery run: what could z^1 read?

An `--unsegmented` run of `examples/ptb_char.py` trains `z^1` towards the
rises of a signal of its own predictions (`hmkeras.BoundaryPlacement`:
`form="surprisal"`, Eq. 3, the default, or `form="rise"`, the entropy;
`--targets` says which). This script asks whether the detector *could*
follow them: it reads the run's best weights, passes the training and
test utterances through the network once (batch 1, state carried, as the
test pass does), and fits a logistic regression on the training text
from a set of per-step features to the rise rule's boundaries
(`entropy_segmentation(..., rule="rise")`, computed from the same
network's predictions). Each probe's boundaries on the test utterances
are scored against the gold words
(`hmkeras.analysis.word_discovery.score_segmentation`), beside `z^1` and
the rise rule itself. No gold boundary is used for fitting.

Features (`h^l_t` the layers' outputs, `e(x_t)` the input embedding):

* `detector inputs`: `h^1_{t-1}`, `h^2_{t-1}`, `z^1_{t-1}` and `e(x_t)`,
  what Chung et al.'s detector of `z^1_t` reads (Eq. 4-5; a linear map
  and a step), so this probe is the best such detector for the targets;
* `updated state`: `h^1_t`, the bottom layer after its update.

    python examples/ptb_char.py --preset=brent --manual_dir=../shared/data/brent \
        --seed=0 --boundary_input=previous --boundary_gradient=hard_sigmoid \
        --nolstm_baseline --output_dir=runs/brent_s0
    python bench/detector_probe.py --run_dir=runs/brent_s0 --targets=rise \
        --train_file=../shared/data/brent/phono_tr.txt \
        --test_file=../shared/data/brent/phono_te.txt

Figures: `docs/guides/hm-lstm.md`, "Words that nothing marks: unsegmented text".
"""

import json
import os

from absl import app
from absl import flags
from keras import ops
import numpy as np
from scipy.optimize import minimize

from hmkeras.analysis import word_discovery
from hmkeras.analysis.word_discovery_report import batch_one_pass
from hmkeras.analysis.word_discovery_report import stream_segmentation
from hmkeras.analysis.word_discovery_report import surprisal_signal
from hmkeras.analysis.word_discovery_report import utterance_values
from hmkeras.data.utterances import Utterances

from trained_run import CHUNK
from trained_run import load_model
from trained_run import read_steps

FLAGS = flags.FLAGS
flags.DEFINE_string("run_dir", None, "An --unsegmented hmlstm run of examples/ptb_char.py.")
flags.DEFINE_string("train_file", None, "The training utterances (words separated by spaces).")
flags.DEFINE_string("test_file", None, "The test utterances.")
flags.DEFINE_enum("targets", "surprisal", ["surprisal", "rise"],
                  "The placement whose targets are probed: the rises of Eq. 3's signal "
                  "(surprisal, the unsegmented default) or of the entropy (rise).")
flags.DEFINE_float("l2", 1e-3, "L2 penalty of the probes' weights (standardized features).",
                   lower_bound=0)
flags.mark_flags_as_required(["run_dir", "train_file", "test_file"])

def stream_boundaries(segmented, length):
    """0/1 per input step: 1 after the last symbol of every word."""
    boundaries, position = np.zeros(length), 0
    for line in segmented:
        for word in line.split(" "):
            position += len(word)
            if position - 1 < length:
                boundaries[position - 1] = 1
        position += 1  # the line end
    return boundaries


def features(lm, outputs, embedding):
    """The probes' feature sets (module docstring), one row per step."""
    units = lm.hierarchical_cell.units
    h = np.split(outputs[:, :sum(units)], np.cumsum(units)[:-1], axis=1)
    z = outputs[:, sum(units):]
    previous = lambda x: np.concatenate([np.zeros_like(x[:1]), x[:-1]])
    return {
        "detector inputs (h^1, h^2, z^1 at t-1; x_t)": np.concatenate(
            [previous(h[0]), previous(h[1]), previous(z[:, :1]), embedding], axis=1),
        "updated state (h^1_t)": h[0],
    }


def fit_probe(x, y, l2):
    """A logistic regression of `y` on standardized `x` (L-BFGS); returns
    the 0/1 decisions function."""
    mean, scale = x.mean(0), x.std(0) + 1e-6
    design = lambda x: np.concatenate([(x - mean) / scale, np.ones((len(x), 1))], 1)
    a = design(x)

    def loss(w):
        logits = a @ w
        value = np.mean(np.logaddexp(0.0, logits) - y * logits) + l2 * w[:-1] @ w[:-1]
        grad = a.T @ (1.0 / (1.0 + np.exp(-logits)) - y) / len(y)
        grad[:-1] += 2 * l2 * w[:-1]
        return value, grad

    w = minimize(loss, np.zeros(a.shape[1]), jac=True, method="L-BFGS-B",
                 options={"maxiter": 500}).x
    return lambda x: (design(x) @ w > 0).astype(float)


def main(_):
    lm, vocab = load_model(FLAGS.run_dir)
    splits = {}
    for name, path in (("train", FLAGS.train_file), ("test", FLAGS.test_file)):
        with open(path, encoding="utf-8") as f:
            utterances = Utterances.from_text(f.read())
        ids = vocab.encode(utterances.text)[:-1]  # the last symbol predicts nothing
        outputs, entropy, embedding = read_steps(lm, ids)
        if FLAGS.targets == "surprisal":  # Eq. 3 reads the symbol after each input
            text_ids = vocab.encode(utterances.text)
            entropy = surprisal_signal(batch_one_pass(lm, text_ids, CHUNK)[1], text_ids)
        unspaced = utterances.unspaced
        rises = word_discovery.entropy_segmentation(
            unspaced, utterance_values(utterances, entropy), rule="rise")
        splits[name] = dict(utterances=utterances, outputs=outputs,
                            features=features(lm, outputs, embedding),
                            rises=stream_boundaries(rises, len(entropy)))
    test = splits["test"]
    score = lambda b: word_discovery.score_segmentation(
        test["utterances"].segmented,
        stream_segmentation(test["utterances"], np.append(b, 0.0))).as_dict()
    z1 = ops.convert_to_numpy(lm.boundaries(test["outputs"]))[:, 0]
    rows = {"z^1 (the trained detector)": score(z1),
            f"{FLAGS.targets} rises (the targets)": score(test["rises"])}
    for name, x in splits["train"]["features"].items():
        decide = fit_probe(x, splits["train"]["rises"], FLAGS.l2)
        rows[f"probe of the rises: {name}"] = score(decide(test["features"][name]))
    print(f"{'test utterances':66s}  boundary P      R     F1  token F1")
    for name, s in rows.items():
        b = s["boundary"]
        print(f"{name:66s}  {b['precision']:10.3f} {b['recall']:6.3f} {b['f1']:6.3f}"
              f"  {s['token']['f1']:8.3f}")
    print(json.dumps({name: {"boundary_f1": s["boundary"]["f1"], "token_f1": s["token"]["f1"]}
                      for name, s in rows.items()}))


if __name__ == "__main__":
    app.run(main)
