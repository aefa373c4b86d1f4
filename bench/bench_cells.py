r"""Train-step time of an hmkeras cell against Keras' own cell, side by side.

Both models are the same character language model (embedding -> RNN ->
Dense over the vocabulary, Adam, sparse categorical cross-entropy) trained
in one process on the same random batches.  Their steps alternate (and
which goes first alternates too) so that machine load affects both alike;
warm-up steps (tracing, first allocations) are not timed.  Prints the
median train-step time of each model, the ratio of the medians and the
median ratio of back-to-back step pairs (the steadier figure on a shared
machine).

    python bench/bench_cells.py --cell=hmlstm   # HMLSTMCell(256, 3 layers) vs StackedRNNCells([LSTMCell(256)] * 3)
    python bench/bench_cells.py --cell=hmrnn    # HMRNNCell(256, 3 layers)  vs StackedRNNCells([SimpleRNNCell(256)] * 3)
    python bench/bench_cells.py --cell=mlstm    # MultiplicativeLSTMCell(512) vs LSTMCell(512)

At 3 x 256 the HM-LSTM does about 1.36 times the stacked LSTM's matrix
work (the two extra top-down products); the mLSTM does 1.25 times the
LSTM's recurrent matrix work.
"""

import math
import os
import statistics
import sys
import time

from absl import app
from absl import flags
import numpy as np

# TensorFlow (keras and hmkeras are imported in the functions, after the
# flags are checked) reads this when it loads.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

CELLS = ("hmlstm", "hmrnn", "mlstm")
DEFAULT_UNITS = {"hmlstm": 256, "hmrnn": 256, "mlstm": 512}

FLAGS = flags.FLAGS
flags.DEFINE_enum("cell", "hmlstm", CELLS, "The hmkeras cell to time.")
flags.DEFINE_integer("units", 0, "Units per layer (0: 256 for hmlstm/hmrnn, 512 for mlstm).",
                     lower_bound=0)
flags.DEFINE_integer("layers", 3, "Layers of the hierarchical cells and of their baseline "
                     "stack (at least 2).", lower_bound=2)
flags.DEFINE_integer("batch_size", 64, "Sequences per batch.", lower_bound=1)
flags.DEFINE_integer("seq_len", 100, "Characters per sequence.", lower_bound=1)
flags.DEFINE_integer("vocab", 50, "Vocabulary size.", lower_bound=2)
flags.DEFINE_integer("embedding", 128, "Embedding size.", lower_bound=1)
flags.DEFINE_integer("steps", 30, "Timed train steps per model.", lower_bound=1)
flags.DEFINE_integer("warmup", 3, "Untimed train steps per model first.", lower_bound=0)
flags.DEFINE_bool("layer_norm", True, "Layer normalization in the hierarchical cell (the "
                  "cells' default; --nolayer_norm for the non-normalized path).")
flags.DEFINE_bool("weight_normalization", False, "mLSTM with weight normalization.")
flags.DEFINE_float("dropout", 0.0, "Input dropout of both cells.")
flags.DEFINE_float("recurrent_dropout", 0.0, "Recurrent dropout of both cells.")
flags.DEFINE_bool("jit_compile", False, "Compile both train steps with XLA (on JAX "
                  "always give --jit_compile: without it JAX runs op by op).")
flags.DEFINE_enum("loop", "keras", ("keras", "hmkeras"), "The loop around both cells: "
                  "keras.layers.RNN, or hmkeras.RNN (which makes the cell's per-sequence "
                  "constants once, before the loop).")
flags.DEFINE_integer("seed", 0, "Random seed.", lower_bound=0)
for _name in ("dropout", "recurrent_dropout"):
    flags.register_validator(_name, lambda v: math.isfinite(v) and 0 <= v < 1,
                             message="must be a number in [0, 1)")


def cells(name, units):
    """`(ours, baseline, labels)` for `--cell`."""
    import keras

    import hmkeras

    dropout = dict(dropout=FLAGS.dropout, recurrent_dropout=FLAGS.recurrent_dropout)
    if name == "mlstm":
        ours = hmkeras.MultiplicativeLSTMCell(
            units, weight_normalization=FLAGS.weight_normalization, **dropout
        )
        return ours, keras.layers.LSTMCell(units, **dropout), ("mLSTM", "LSTM")
    cls, base = {
        "hmlstm": (hmkeras.HMLSTMCell, keras.layers.LSTMCell),
        "hmrnn": (hmkeras.HMRNNCell, keras.layers.SimpleRNNCell),
    }[name]
    ours = cls(units, num_layers=FLAGS.layers, layer_norm=FLAGS.layer_norm, **dropout)
    stack = keras.layers.StackedRNNCells([base(units, **dropout) for _ in range(FLAGS.layers)])
    return ours, stack, (cls.__name__, f"{base.__name__} stack")


def make_model(cell, jit_compile=None):
    """The timed model around `cell` (or around a whole recurrent layer, such
    as `keras.layers.LSTM`, given with `return_sequences=True`);
    `jit_compile` None: `--jit_compile`."""
    import keras

    import hmkeras

    loop = hmkeras.RNN if FLAGS.loop == "hmkeras" else keras.layers.RNN
    rnn = cell if isinstance(cell, keras.layers.RNN) else loop(cell, return_sequences=True)
    model = keras.Sequential(
        [
            keras.Input((FLAGS.seq_len,), dtype="int32"),
            keras.layers.Embedding(FLAGS.vocab, FLAGS.embedding),
            rnn,
            keras.layers.Dense(FLAGS.vocab),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3, clipnorm=1.0),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=FLAGS.jit_compile if jit_compile is None else jit_compile,
    )
    return model


def main(argv):
    del argv
    import keras

    keras.utils.set_random_seed(FLAGS.seed)
    units = FLAGS.units or DEFAULT_UNITS[FLAGS.cell]
    ours, baseline, labels = cells(FLAGS.cell, units)
    models = [make_model(ours), make_model(baseline)]
    rng = np.random.default_rng(FLAGS.seed)
    shape = (FLAGS.batch_size, FLAGS.seq_len + 1)
    times = [[], []]
    for step in range(FLAGS.warmup + FLAGS.steps):
        batch = rng.integers(0, FLAGS.vocab, size=shape).astype("int32")
        x, y = batch[:, :-1], batch[:, 1:]
        order = [0, 1] if step % 2 else [1, 0]
        for index in order:
            start = time.perf_counter()
            loss = models[index].train_on_batch(x, y)
            elapsed = time.perf_counter() - start
            if not np.isfinite(loss):
                raise RuntimeError(f"{labels[index]}: non-finite loss {loss}")
            if step >= FLAGS.warmup:
                times[index].append(elapsed)

    chars = FLAGS.batch_size * FLAGS.seq_len
    layers = "" if FLAGS.cell == "mlstm" else f"{FLAGS.layers} x "
    print(
        f"{layers}{units} units, batch {FLAGS.batch_size} x {FLAGS.seq_len}, "
        f"embedding {FLAGS.embedding}, vocab {FLAGS.vocab}, jit={FLAGS.jit_compile}, "
        f"loop={FLAGS.loop}, backend={keras.backend.backend()}, "
        f"layer_norm={FLAGS.layer_norm}, wn={FLAGS.weight_normalization}, "
        f"dropout={FLAGS.dropout}/{FLAGS.recurrent_dropout}, {FLAGS.steps} timed steps each"
    )
    medians = [statistics.median(t) for t in times]
    for label, model, median in zip(labels, models, medians):
        print(
            f"  {label:22s} params {model.count_params():9d}  median step "
            f"{median * 1e3:8.1f} ms ({chars / median:8.0f} chars/s)"
        )
    paired = statistics.median(a / b for a, b in zip(*times))
    print(f"ratio {labels[0]} / {labels[1]}: {medians[0] / medians[1]:.2f} (medians), "
          f"{paired:.2f} (median of paired steps)")


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    os.pardir, "examples"))
    from command_line import parse_flags  # noqa: E402

    app.run(main, flags_parser=parse_flags)
