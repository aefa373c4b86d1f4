r"""Batch-1 streaming speed of sparse-update inference against the dense path.

Two modes.  With `--run_dir`, loads a trained character model from a run
directory of `examples/ptb_char.py` (its `model_config.json`,
`vocabulary.json`, `settings.json` and best weights) and streams its test
text.  With `--untrained_units` instead (one or more layer sizes), builds
an untrained character model of each size (`--untrained_cell`,
`--untrained_layer_norm`), sets each boundary detector's bias so that the
layer fires at the rate of `--boundary_rates` on the stream (bisection on
a calibration prefix, bottom layer first; the defaults are the boundary
prior's default segment lengths 5 and 15), and streams
`--untrained_chars` random characters (the speed of a step does not
depend on what the model predicts).

Either way the text goes through at batch 1, the state carried over the
whole text (Kadar et al.'s protocol), through two compiled scorers side
by side in one process: the dense path and the
sparse path (`sparse_updates`: a layer whose operation is COPY skips its
update, see `hmkeras.cells.sparse_update`).  The chunks alternate between
the two (and which goes first alternates too) so that machine load
affects both alike; the first chunk of each (tracing) is not timed.

Prints, and writes as JSON (`--json_out`): the characters per second of both
paths, the speed-up (the median ratio of back-to-back chunk times, and
the ratio of the total times), the fraction of layer updates skipped
(per layer, too), and whether both paths gave the same bits per character.
(The flags' names avoid those of `examples/ptb_char.py`, whose data
loading this script reuses.)

    python examples/ptb_char.py --preset=quick            # writes runs/quick_hmlstm
    python bench/sparse_inference.py --run_dir=runs/quick_hmlstm
    python bench/sparse_inference.py --untrained_units=128,512 --json_out=sparse_untrained.json

The ideal speed-up, were the layer updates all the work, would be
`1 / (1 - skipped fraction)`; the embedding, output module, softmax and
the per-step control flow are not skipped.
"""

import json
import os
import statistics
import sys
import time

from absl import app
from absl import flags

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

FLAGS = flags.FLAGS
flags.DEFINE_string("run_dir", None, "A run directory of examples/ptb_char.py.")
flags.DEFINE_list("untrained_units", None,
                  "Instead of --run_dir: untrained models of these layer sizes.")
flags.DEFINE_enum("untrained_cell", "hmlstm", ["hmlstm", "hmrnn"], "Untrained models' cell.")
flags.DEFINE_boolean("untrained_layer_norm", True, "Untrained models' layer normalization.")
flags.DEFINE_list("boundary_rates", ["0.2", "0.0667"],
                  "Untrained models: the rate of each boundary layer, bottom first.")
flags.DEFINE_integer("untrained_chars", 3000, "Untrained models: characters streamed.",
                     lower_bound=1)
flags.DEFINE_integer("untrained_seed", 0, "Untrained models: weights and text.")
flags.DEFINE_integer("chunk_len", 100, "Characters per compiled chunk.", lower_bound=1)
flags.DEFINE_integer("max_chars", 0, "Stream at most this many test characters (0: all).",
                     lower_bound=0)
flags.DEFINE_string("json_out", None, "Also write the figures to this JSON file.")

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
sys.path.insert(0, _ROOT)
_VOCAB_SIZE = 50  # untrained models: about a character vocabulary
_CALIBRATION_CHARS = 400


def load_run(run_dir):
    """`(language_model, test_ids)` of a run directory."""
    sys.path.insert(0, os.path.join(_ROOT, "examples"))
    import ptb_char  # noqa: E402 (the example's own data loading)

    from hmkeras import data
    from hmkeras.models.char_language_model import CharLanguageModel
    from hmkeras.models.char_language_model import CharLanguageModelConfig

    with open(os.path.join(run_dir, "settings.json")) as f:
        settings = json.load(f)
    with open(os.path.join(run_dir, "model_config.json")) as f:
        config = CharLanguageModelConfig.from_json(f.read())
    vocabulary = data.CharVocabulary.load(os.path.join(run_dir, "vocabulary.json"))
    model = CharLanguageModel(config)
    for name in ("best.weights.h5", "model.weights.h5"):
        path = os.path.join(run_dir, "checkpoints", name)
        if os.path.exists(path):
            model.network.load_weights(path)
            break
    else:
        raise FileNotFoundError(f"No weights under {run_dir}/checkpoints.")
    texts, _, _ = ptb_char.load_texts(settings)
    return model, vocabulary.encode(texts["test"])


def _boundary_biases(model):
    """The bias weights of the boundary layers, bottom first."""
    cell = model.hierarchical_cell
    return [next(w for w in cell.weights if w.name == f"bias_{n}")
            for n in range(1, cell.num_layers)]


def _boundary_rates(model, scorer, chunks):
    """Mean boundary rate per boundary layer over `chunks`, from zero state."""
    import numpy as np
    import tensorflow as tf

    state = [tf.constant(s) for s in model.zero_state(1)]
    rates = []
    for x, y, w in chunks:
        _, _, z, state = scorer(x, y, w, state)
        rates.append(np.asarray(z)[0])
    return np.concatenate(rates).mean(axis=0)


def calibrate(model, ids, seq_len, rates, iterations=12):
    """Sets each detector's bias so that its layer fires at `rates`.

    Bisection on the bias (a detector's rate grows with it), bottom
    layer first (a layer's rate depends on the boundaries below it).
    Returns the rates reached.
    """
    from hmkeras.analysis.evaluation import ChunkScorer
    from hmkeras.data.pipeline import EvaluationChunks

    chunks = list(EvaluationChunks(ids, seq_len=seq_len).dataset(remainder="pad"))
    scorer = ChunkScorer(model)
    for index, (bias, rate) in enumerate(zip(_boundary_biases(model), rates)):
        low, high = -4.0, 2.0
        for _ in range(iterations):
            middle = (low + high) / 2
            value = bias.numpy()
            value[-1] = middle
            bias.assign(value)
            if _boundary_rates(model, scorer, chunks)[index] > rate:
                high = middle
            else:
                low = middle
    return _boundary_rates(model, scorer, chunks).tolist()


def untrained_model(units):
    """`(language_model, ids)`: an untrained model, rates set, random text."""
    import numpy as np

    from hmkeras.models.char_language_model import CharLanguageModel

    model = CharLanguageModel(
        vocab_size=_VOCAB_SIZE, cell=FLAGS.untrained_cell, units=units,
        cell_options=dict(layer_norm=FLAGS.untrained_layer_norm), output_units=units,
        seed=FLAGS.untrained_seed,
    )
    rates = [float(r) for r in FLAGS.boundary_rates]
    if len(rates) != model.hierarchical_cell.num_layers - 1:
        raise ValueError("--boundary_rates needs one rate per boundary layer.")
    rng = np.random.default_rng(FLAGS.untrained_seed)
    ids = rng.integers(0, _VOCAB_SIZE, FLAGS.untrained_chars + _CALIBRATION_CHARS)
    reached = calibrate(model, ids[:_CALIBRATION_CHARS], FLAGS.chunk_len, rates)
    return model, ids[_CALIBRATION_CHARS:], reached


def measure(model, ids, seq_len):
    """Alternating dense and sparse chunk timings; returns the figures."""
    import numpy as np
    import tensorflow as tf

    from hmkeras.analysis.evaluation import ChunkScorer
    from hmkeras.cells import sparse_update
    from hmkeras.data.pipeline import EvaluationChunks

    if not model.is_hierarchical:
        raise ValueError("Sparse updates need a hierarchical cell (hmlstm, hmrnn).")
    network = model.network
    chunks = list(EvaluationChunks(ids, seq_len=seq_len).dataset(remainder="pad"))
    states = {name: [tf.constant(s) for s in model.zero_state(1)]
              for name in ("dense", "sparse")}
    # The cells' flag is read when a scorer is traced: the dense one is
    # traced (untimed) outside the block, the sparse one inside it.
    dense = ChunkScorer(model)
    dense(*chunks[0], states["dense"])
    with sparse_update.sparse_updates(network):
        sparse = ChunkScorer(model)
        sparse(*chunks[0], states["sparse"])
        times = {"dense": [], "sparse": []}
        bits = {"dense": 0.0, "sparse": 0.0}
        boundaries = []
        for index, (x, y, w) in enumerate(chunks):
            order = ("dense", "sparse") if index % 2 == 0 else ("sparse", "dense")
            for name in order:
                scorer = dense if name == "dense" else sparse
                start = time.perf_counter()
                chunk_bits, _, z, states[name] = scorer(x, y, w, states[name])
                chunk_bits = float(chunk_bits)  # waits for the result
                times[name].append(time.perf_counter() - start)
                bits[name] += chunk_bits
                if name == "dense":
                    boundaries.append(np.asarray(z)[0, : int(np.sum(w))])
    # The skipped updates follow from the boundaries (Chung Eq. 2).
    stats = sparse_update.count_updates(np.concatenate(boundaries, axis=0))
    targets = float(sum(float(np.sum(w)) for _, _, w in chunks))
    steps = len(chunks) * seq_len
    ratios = [d / s for d, s in zip(times["dense"], times["sparse"])]
    return {
        "chunks": len(chunks),
        "chunk_len": seq_len,
        "characters": len(ids),
        "dense_chars_per_second": steps / sum(times["dense"]),
        "sparse_chars_per_second": steps / sum(times["sparse"]),
        "speedup_median_chunk_ratio": statistics.median(ratios),
        "speedup_total_time": sum(times["dense"]) / sum(times["sparse"]),
        "skipped_fraction": stats["skipped_fraction"],
        "per_layer_skipped_fraction": [
            s / (s + e) if s + e else 0.0
            for s, e in zip(stats["per_layer_skipped"], stats["per_layer_executed"])
        ],
        "ideal_speedup": 1.0 / (1.0 - stats["skipped_fraction"]),
        "boundary_rates": np.concatenate(boundaries).mean(axis=0).tolist(),
        "dense_bpc": bits["dense"] / targets,
        "sparse_bpc": bits["sparse"] / targets,
        "same_bpc": bits["dense"] == bits["sparse"],
    }


def _report(figures):
    for key, value in figures.items():
        print(f"{key}: {value}")
    print(flush=True)


def main(argv):
    del argv
    if (FLAGS.run_dir is None) == (FLAGS.untrained_units is None):
        raise app.UsageError("Give either --run_dir or --untrained_units.")
    if FLAGS.run_dir is not None:
        model, ids = load_run(FLAGS.run_dir)
        if FLAGS.max_chars:
            ids = ids[: FLAGS.max_chars]
        results = measure(model, ids, FLAGS.chunk_len)
        results["run_dir"] = FLAGS.run_dir
        _report(results)
    else:
        results = []
        for units in (int(u) for u in FLAGS.untrained_units):
            model, ids, reached = untrained_model(units)
            figures = {
                "units": units, "cell": FLAGS.untrained_cell,
                "layer_norm": FLAGS.untrained_layer_norm,
                "target_boundary_rates": [float(r) for r in FLAGS.boundary_rates],
                "calibrated_boundary_rates": reached,
                **measure(model, ids, FLAGS.chunk_len),
            }
            _report(figures)
            results.append(figures)
    if FLAGS.json_out:
        with open(FLAGS.json_out, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    app.run(main)
