r"""Train-step time of RNN(MultiplicativeLSTMCell) against RNN(LSTMCell).

Both models are the same character language model (embedding -> RNN ->
softmax over the vocabulary, Adam, sparse categorical cross-entropy) and are
trained side by side in one process on the same random batches: the steps of
the two models alternate (and which goes first alternates too), so that
machine load affects both alike. Warm-up
steps (tracing, first allocations) are not timed. Prints the median train-step
time of each model and their ratio (mLSTM / LSTM), and the median ratio of
back-to-back step pairs, which is the steadier figure on a shared machine.

    python bench/bench_mlstm.py --units=512 --batch_size=64 --seq_len=100 \
        --steps=20 --warmup=3

Flags --weight_normalization, --dropout, --recurrent_dropout time the
regularised mLSTM; --jit_compile turns XLA on for both models.
"""

import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

import keras  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from hmkeras.multiplicative_lstm_cell import MultiplicativeLSTMCell  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_integer("units", 512, "Hidden units of both cells.")
flags.DEFINE_integer("batch_size", 64, "Sequences per batch.")
flags.DEFINE_integer("seq_len", 100, "Characters per sequence.")
flags.DEFINE_integer("vocab", 50, "Vocabulary size.")
flags.DEFINE_integer("embedding", 128, "Embedding size.")
flags.DEFINE_integer("steps", 20, "Timed train steps per model.")
flags.DEFINE_integer("warmup", 3, "Untimed train steps per model first.")
flags.DEFINE_bool("weight_normalization", False, "mLSTM with weight normalization.")
flags.DEFINE_float("dropout", 0.0, "mLSTM input dropout.")
flags.DEFINE_float("recurrent_dropout", 0.0, "mLSTM hidden-state dropout.")
flags.DEFINE_bool("jit_compile", False, "Compile both train steps with XLA.")
flags.DEFINE_integer("seed", 0, "Random seed.")


def make_model(cell, name):
    model = keras.Sequential(
        [
            keras.Input((FLAGS.seq_len,), dtype="int32"),
            keras.layers.Embedding(FLAGS.vocab, FLAGS.embedding),
            keras.layers.RNN(cell, return_sequences=True),
            keras.layers.Dense(FLAGS.vocab),
        ],
        name=name,
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=FLAGS.jit_compile,
    )
    return model


def main(argv):
    del argv
    keras.utils.set_random_seed(FLAGS.seed)
    rng = np.random.default_rng(FLAGS.seed)
    shape = (FLAGS.batch_size, FLAGS.seq_len + 1)
    batches = [
        rng.integers(0, FLAGS.vocab, size=shape).astype("int32")
        for _ in range(FLAGS.warmup + FLAGS.steps)
    ]
    models = {
        "mLSTM": make_model(
            MultiplicativeLSTMCell(
                FLAGS.units,
                weight_normalization=FLAGS.weight_normalization,
                dropout=FLAGS.dropout,
                recurrent_dropout=FLAGS.recurrent_dropout,
            ),
            "mlstm",
        ),
        "LSTM": make_model(keras.layers.LSTMCell(FLAGS.units), "lstm"),
    }
    times = {name: [] for name in models}
    for step, batch in enumerate(batches):
        x, y = batch[:, :-1], batch[:, 1:]
        # Alternate which model goes first, so neither always follows the other.
        order = list(models.items())
        for name, model in order if step % 2 else order[::-1]:
            start = time.perf_counter()
            loss = model.train_on_batch(x, y)
            elapsed = time.perf_counter() - start
            if not np.isfinite(loss):
                raise RuntimeError(f"{name}: non-finite loss {loss}")
            if step >= FLAGS.warmup:
                times[name].append(elapsed)

    chars = FLAGS.batch_size * FLAGS.seq_len
    print(
        f"units={FLAGS.units} batch={FLAGS.batch_size}x{FLAGS.seq_len} "
        f"vocab={FLAGS.vocab} embedding={FLAGS.embedding} steps={FLAGS.steps} "
        f"warmup={FLAGS.warmup} wn={FLAGS.weight_normalization} "
        f"dropout={FLAGS.dropout}/{FLAGS.recurrent_dropout} jit={FLAGS.jit_compile}"
    )
    for name, model in models.items():
        median = statistics.median(times[name])
        print(
            f"{name:6s} params={model.count_params():9d} "
            f"median step {median * 1e3:8.1f} ms  ({chars / median:8.0f} chars/s)"
        )
    ratio = statistics.median(times["mLSTM"]) / statistics.median(times["LSTM"])
    # Steps of the two models taken back to back see the same machine load:
    # the median of their ratios is robust to load that changes over the run.
    paired = statistics.median(a / b for a, b in zip(times["mLSTM"], times["LSTM"]))
    print(f"ratio mLSTM/LSTM (median train step): {ratio:.3f}")
    print(f"ratio mLSTM/LSTM (median of paired steps): {paired:.3f}")


if __name__ == "__main__":
    app.run(main)
