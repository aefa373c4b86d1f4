"""Train-step time of HM-LSTM vs Keras' stacked LSTM, side by side.

Both models see the same character-LM batches (embedding 128, batch 64 x
100 by default) and are trained alternately, one step each, so that both
share the machine's state.  Prints the median train-step time of each and
their ratio (HM-LSTM / LSTM).  At 3 x 256 the HM-LSTM does about 1.36 times
the LSTM's matrix work (the two extra top-down products).

    python bench/bench_hmlstm.py --units=256 --layers=3 --steps=30
"""

import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app
from absl import flags

import keras
import numpy as np

import hmkeras

FLAGS = flags.FLAGS
flags.DEFINE_integer("units", 256, "Units per layer.")
flags.DEFINE_integer("layers", 3, "Number of layers.")
flags.DEFINE_integer("batch_size", 64, "Batch size.")
flags.DEFINE_integer("seq_len", 100, "Sequence length.")
flags.DEFINE_integer("embedding", 128, "Embedding size.")
flags.DEFINE_integer("vocab", 50, "Vocabulary size.")
flags.DEFINE_integer("steps", 30, "Timed steps per model.")
flags.DEFINE_integer("warmup", 3, "Untimed steps per model.")
flags.DEFINE_boolean("jit", False, "Compile the train step with XLA.")
flags.DEFINE_string("cell", "hmlstm", "Cell to compare with the LSTM: hmlstm or hmrnn.")


def build_model(cell):
    model = keras.Sequential(
        [
            keras.Input((FLAGS.seq_len,), dtype="int32"),
            keras.layers.Embedding(FLAGS.vocab, FLAGS.embedding),
            keras.layers.RNN(cell, return_sequences=True),
            keras.layers.Dense(FLAGS.vocab),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(0.002, clipnorm=1.0),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=FLAGS.jit,
    )
    return model


def main(argv):
    del argv
    rng = np.random.default_rng(0)
    shape = (FLAGS.batch_size, FLAGS.seq_len)
    batches = [
        (rng.integers(0, FLAGS.vocab, shape), rng.integers(0, FLAGS.vocab, shape))
        for _ in range(4)
    ]
    if FLAGS.cell == "hmlstm":
        ours = hmkeras.HMLSTMCell(FLAGS.units, num_layers=FLAGS.layers)
        baseline = keras.layers.StackedRNNCells(
            [keras.layers.LSTMCell(FLAGS.units) for _ in range(FLAGS.layers)]
        )
        names = ("HMLSTMCell", "LSTMCell stack")
    elif FLAGS.cell == "hmrnn":
        ours = hmkeras.HMRNNCell(FLAGS.units, num_layers=FLAGS.layers)
        baseline = keras.layers.StackedRNNCells(
            [keras.layers.SimpleRNNCell(FLAGS.units) for _ in range(FLAGS.layers)]
        )
        names = ("HMRNNCell", "SimpleRNNCell stack")
    else:
        raise app.UsageError("--cell must be one of: hmlstm, hmrnn")
    models = [build_model(ours), build_model(baseline)]
    times = [[], []]
    for step in range(FLAGS.warmup + FLAGS.steps):
        x, y = batches[step % len(batches)]
        for index, model in enumerate(models):
            start = time.perf_counter()
            model.train_on_batch(x, y)
            elapsed = time.perf_counter() - start
            if step >= FLAGS.warmup:
                times[index].append(elapsed)
    medians = [statistics.median(t) for t in times]
    chars = FLAGS.batch_size * FLAGS.seq_len
    print(
        f"{FLAGS.layers} x {FLAGS.units}, batch {FLAGS.batch_size} x "
        f"{FLAGS.seq_len}, embedding {FLAGS.embedding}, jit={FLAGS.jit}, "
        f"{FLAGS.steps} timed steps each"
    )
    for name, median in zip(names, medians):
        print(f"  {name:20s} median step {median * 1e3:8.1f} ms  ({chars / median:8.0f} chars/s)")
    print(f"ratio {names[0]} / {names[1]}: {medians[0] / medians[1]:.2f}")


if __name__ == "__main__":
    app.run(main)
