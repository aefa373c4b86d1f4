r"""Global gradient norms of the hierarchical cells during the first steps of training.

The straight-through estimator (Chung et al. Sec. 3.3) lets gradients flow
through every boundary decision `z`: into the copy / update / flush
mixture of the next step and into the gates of the products that `z`
switches (Chung Eq. 5-7; Kadar et al. Eq. 13-15).  Along a sequence these
paths form a recurrent loop whose gain grows with the hard-sigmoid slope,
and in some configurations the gradient grows exponentially with the
sequence length.  This script measures it: each model (the char-LM of
`bench/bench_cells.py`: embedding -> RNN -> Dense, Adam 1e-3 with each
gradient's norm clipped at 1.0 as Kadar et al.) trains for `--steps` steps
on random characters from `--seeds` seeds, and the global norm of the
unclipped gradient of every step is recorded (computed with a rescaling,
so that it does not overflow before the gradient itself does).  Writes
`--output` (JSON, every norm) and the same path with `.md` (a table: the
median over all steps and seeds, the largest norm of each seed, and the
steps whose gradient was not finite).

    python bench/gradient_norms.py      # docs/results/char-lm.md, "HMRNN gradient norms"
    python bench/gradient_norms.py --models=hmrnn_noln,hmrnn_noln_slope025 --steps=60
"""

import datetime
import math
import os
import statistics
import sys
import time

from absl import app
from absl import flags
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results_files  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# id -> (label, cell class name or Keras stack, cell keyword arguments)
MODELS = {
    "keras_stacked_lstm": ("RNN(StackedRNNCells([LSTMCell] * L))", "LSTMCell", {}),
    "keras_stacked_simplernn": ("RNN(StackedRNNCells([SimpleRNNCell] * L))",
                                "SimpleRNNCell", {}),
    "hmlstm": ("HMLSTMCell (layer norm)", "HMLSTMCell", {}),
    "hmlstm_noln": ("HMLSTMCell, no layer norm", "HMLSTMCell", {"layer_norm": False}),
    "hmrnn": ("HMRNNCell (layer norm)", "HMRNNCell", {}),
    "hmrnn_noln": ("HMRNNCell, no layer norm", "HMRNNCell", {"layer_norm": False}),
    "hmrnn_noln_slope05": ("HMRNNCell, no layer norm, slope 0.5", "HMRNNCell",
                           {"layer_norm": False, "slope": 0.5}),
    "hmrnn_noln_slope025": ("HMRNNCell, no layer norm, slope 0.25", "HMRNNCell",
                            {"layer_norm": False, "slope": 0.25}),
    "hmrnn_noln_no_top_down": ("HMRNNCell, no layer norm, top_down=False", "HMRNNCell",
                               {"layer_norm": False, "top_down": False}),
}

FLAGS = flags.FLAGS
flags.DEFINE_list("models", list(MODELS), f"Models to measure, of {','.join(MODELS)}.")
flags.DEFINE_list("seeds", ["0", "1", "2"], "Seeds (weights and data), non-negative integers.")
flags.DEFINE_integer("units", 256, "Units per layer.", lower_bound=1)
flags.DEFINE_integer("layers", 3, "Layers (at least 2).", lower_bound=2)
flags.DEFINE_integer("batch_size", 64, "Sequences per batch.", lower_bound=1)
flags.DEFINE_integer("seq_len", 100, "Characters per sequence.", lower_bound=1)
flags.DEFINE_integer("vocab", 50, "Vocabulary size.", lower_bound=2)
flags.DEFINE_integer("embedding", 128, "Embedding size.", lower_bound=1)
flags.DEFINE_integer("steps", 20, "Train steps per model and seed.", lower_bound=1)
flags.DEFINE_bool("jit_compile", False, "Compile the train step with XLA.")
flags.DEFINE_string("output", os.path.join("bench", "results", "gradient_norms.json"),
                    "Where to write the JSON (the Markdown table goes beside it).")
flags.register_validator(
    "models", lambda names: bool(names) and all(n in MODELS for n in names),
    message=f"must be a comma-separated list of {'|'.join(MODELS)}")
flags.register_validator(
    "seeds", lambda seeds: bool(seeds) and all(s.isdigit() for s in seeds),
    message="must be a comma-separated list of non-negative integers")


def global_norm(tensors):
    """The global L2 norm of `tensors` (dense or `IndexedSlices`), in float32.

    `tf.linalg.global_norm` squares the entries first, so in float32 it is
    infinite as soon as an entry passes about 1.8e19; here every tensor is
    divided by the largest magnitude first (`max * sqrt(sum((t / max)^2))`),
    so the norm is finite whenever every entry is and the norm itself is
    within float32's range.  Non-finite entries give a non-finite norm.
    """
    import tensorflow as tf

    tensors = [tf.cast(tf.convert_to_tensor(t), tf.float32) for t in tensors]
    largest = tf.reduce_max(tf.stack([tf.reduce_max(tf.abs(t)) for t in tensors]))
    scale = tf.where(largest > 0, largest, tf.ones_like(largest))
    total = tf.add_n([tf.reduce_sum(tf.square(t / scale)) for t in tensors])
    return scale * tf.sqrt(total)


def build_model(model_id):
    import keras

    import hmkeras

    _, class_name, options = MODELS[model_id]
    if class_name in ("LSTMCell", "SimpleRNNCell"):
        cell_class = getattr(keras.layers, class_name)
        cell = keras.layers.StackedRNNCells(
            [cell_class(FLAGS.units) for _ in range(FLAGS.layers)])
    else:
        cell = getattr(hmkeras, class_name)(FLAGS.units, num_layers=FLAGS.layers, **options)
    return keras.Sequential([
        keras.Input((FLAGS.seq_len,), dtype="int32"),
        keras.layers.Embedding(FLAGS.vocab, FLAGS.embedding),
        keras.layers.RNN(cell, return_sequences=True),
        keras.layers.Dense(FLAGS.vocab),
    ])


def measure(model_id, seed):
    """The global gradient norm of each of `--steps` train steps."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(seed)
    model = build_model(model_id)
    optimizer = keras.optimizers.Adam(1e-3, clipnorm=1.0)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    variables = model.trainable_variables

    @tf.function(jit_compile=FLAGS.jit_compile)
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        gradients = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(gradients, variables))
        return loss, global_norm(gradients)

    rng = np.random.default_rng(seed)
    norms, losses = [], []
    for _ in range(FLAGS.steps):
        batch = rng.integers(0, FLAGS.vocab, size=(FLAGS.batch_size, FLAGS.seq_len + 1))
        batch = batch.astype("int32")
        loss, norm = train_step(batch[:, :-1], batch[:, 1:])
        norms.append(float(norm))
        losses.append(float(loss))
    keras.backend.clear_session()
    return norms, losses


def _format(value):
    if not math.isfinite(value):
        return str(value)
    return f"{value:.3g}"


def markdown(meta, results):
    lines = [
        f"Command: `{meta['command']}`",
        "",
        f"{meta['units']} units x {meta['layers']} layers, batch {meta['batch_size']} x "
        f"{meta['seq_len']}, random characters (vocabulary {meta['vocab']}), Adam 1e-3 with "
        f"clipnorm 1.0, {meta['steps']} steps x seeds {','.join(map(str, meta['seeds']))}"
        f"{', XLA' if meta['jit_compile'] else ''}. Global norm of the unclipped gradient.",
        "",
        "| model | median | largest, per seed | non-finite steps |",
        "| --- | ---: | --- | ---: |",
    ]
    for r in results:
        finite = [n for per_seed in r["norms"] for n in per_seed if math.isfinite(n)]
        median = statistics.median(finite) if finite else float("nan")
        largest = ", ".join(_format(max(per_seed)) if all(map(math.isfinite, per_seed))
                            else "inf/nan" for per_seed in r["norms"])
        bad = sum(not math.isfinite(n) for per_seed in r["norms"] for n in per_seed)
        lines.append(f"| {r['label']} | {_format(median)} | {largest} | {bad} |")
    lines.append("")
    return "\n".join(lines)


def main(argv):
    del argv
    import keras
    import tensorflow as tf

    seeds = [int(s) for s in FLAGS.seeds]
    meta = {
        "command": " ".join(["python", "bench/gradient_norms.py", *sys.argv[1:]]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "tensorflow": tf.__version__, "keras": keras.__version__,
        "units": FLAGS.units, "layers": FLAGS.layers, "batch_size": FLAGS.batch_size,
        "seq_len": FLAGS.seq_len, "vocab": FLAGS.vocab, "embedding": FLAGS.embedding,
        "steps": FLAGS.steps, "seeds": seeds, "jit_compile": FLAGS.jit_compile,
    }
    started = time.time()
    results = []
    for model_id in FLAGS.models:
        result = {"id": model_id, "label": MODELS[model_id][0], "norms": [], "losses": []}
        for seed in seeds:
            norms, losses = measure(model_id, seed)
            result["norms"].append(norms)
            result["losses"].append(losses)
            print(f"{model_id:26s} seed {seed}: median {_format(statistics.median(norms))}"
                  f", largest {_format(max(norms))}", flush=True)
        results.append(result)
    meta["wall_seconds"] = time.time() - started
    table_path = results_files.write_results(FLAGS.output, meta, results,
                                             markdown(meta, results))
    print(f"wrote {FLAGS.output} and {table_path} ({meta['wall_seconds']:.0f} s)")


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    os.pardir, "examples"))
    from command_line import parse_flags  # noqa: E402

    app.run(main, flags_parser=parse_flags)
