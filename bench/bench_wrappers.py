r"""Train-step time of the wrapped cells against the bare cell, side by side.

Three word language models that differ only in their recurrent cell are
trained in one process on the same random batches:

* `LSTMCell(units)`,
* `AveragingWrapper(LSTMCell(units))` (persistence averaging),
* `AttentionWrapper(LSTMCell(units), --memory_size)` (`--score`).

Each is `Embedding(vocab, embedding) -> RNN -> Dense(vocab)`, the model of
`bench/bench_cells.py` (its `make_model` and its flags: `--batch_size`,
`--seq_len`, `--vocab`, `--embedding`, `--steps`, `--warmup`, `--units`,
`--jit_compile`, `--seed`); the defaults here are the averaging paper's
PTB step: batch 20 x 35 tokens, 650 units, embedding 650, vocabulary
10,000.  A train step is forward and backward.  The models' steps are
interleaved (the order rotates every step) so that machine load affects
them alike; warm-up steps are not timed.  Prints the median step of each
model and its ratio to the bare cell's, as the ratio of the medians and as
the median of the per-step ratios (steps taken back to back).

    python bench/bench_wrappers.py            # the PTB-sized step
    python bench/bench_wrappers.py --quick    # a tiny run, checks the script

Averaging adds the output projection `W_c [h_t; c_t]` (2 units x units per
token, half an LSTM step's recurrent matmul) and a running sum; attention
adds that, a key `W_1 h_t` and, per stored state, one score and one
weighted sum (`memory_size` x units per token).
"""

import os
import statistics
import sys
import time

from absl import app
from absl import flags
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cells  # noqa: E402  (its make_model and its flags)

FLAGS = flags.FLAGS
flags.DEFINE_integer("memory_size", 35, "Memory of the attention wrapper.", lower_bound=1)
flags.DEFINE_enum("score", "single", ["single", "combined"], "Attention score.")
flags.DEFINE_bool("quick", False, "A tiny run (16 units, vocab 50, batch 4 x 10, "
                  "3 steps) that only checks that the script works.")

# The averaging paper's PTB step (Salton & Kelleher Sec. 5).
for _name, _value in (("batch_size", 20), ("seq_len", 35), ("vocab", 10000),
                      ("embedding", 650), ("units", 650), ("steps", 20), ("warmup", 3)):
    FLAGS.set_default(_name, _value)


def time_interleaved(models, make_batch, warmup, steps):
    """Per-model train-step times, the models' steps interleaved.

    Args:
        models: Compiled Keras models taking the same batches.
        make_batch: `step -> (x, y)`.
        warmup: Untimed steps per model first.
        steps: Timed steps per model.

    Returns:
        One list of `steps` step times (seconds) per model.
    """
    times = [[] for _ in models]
    for step in range(warmup + steps):
        x, y = make_batch(step)
        shift = step % len(models)
        for index in list(range(len(models)))[shift:] + list(range(len(models)))[:shift]:
            start = time.perf_counter()
            loss = models[index].train_on_batch(x, y)
            elapsed = time.perf_counter() - start
            if not np.isfinite(loss):
                raise RuntimeError(f"model {index}: non-finite loss {loss}")
            if step >= warmup:
                times[index].append(elapsed)
    return times


def main(argv):
    del argv
    if FLAGS.quick:
        for name, value in (("batch_size", 4), ("seq_len", 10), ("vocab", 50),
                            ("embedding", 8), ("units", 16), ("steps", 3),
                            ("warmup", 1), ("memory_size", 5)):
            setattr(FLAGS, name, value)
    import keras

    import hmkeras  # noqa: F401  (registers the cells)
    from hmkeras.wrappers import AttentionWrapper
    from hmkeras.wrappers import AveragingWrapper

    keras.utils.set_random_seed(FLAGS.seed)
    units = FLAGS.units
    cells = {
        f"LSTMCell({units})": keras.layers.LSTMCell(units),
        "AveragingWrapper": AveragingWrapper(keras.layers.LSTMCell(units)),
        f"AttentionWrapper({FLAGS.memory_size}, {FLAGS.score})": AttentionWrapper(
            keras.layers.LSTMCell(units), FLAGS.memory_size, FLAGS.score),
    }
    labels = list(cells)
    models = [bench_cells.make_model(cell) for cell in cells.values()]
    rng = np.random.default_rng(FLAGS.seed)

    def make_batch(step):
        del step
        batch = rng.integers(0, FLAGS.vocab, size=(FLAGS.batch_size, FLAGS.seq_len + 1))
        batch = batch.astype("int32")
        return batch[:, :-1], batch[:, 1:]

    times = time_interleaved(models, make_batch, FLAGS.warmup, FLAGS.steps)
    tokens = FLAGS.batch_size * FLAGS.seq_len
    print(f"{units} units, batch {FLAGS.batch_size} x {FLAGS.seq_len}, embedding "
          f"{FLAGS.embedding}, vocab {FLAGS.vocab}, jit={FLAGS.jit_compile}, "
          f"{FLAGS.steps} timed train steps each (forward + backward), seed {FLAGS.seed}")
    medians = [statistics.median(t) for t in times]
    for index, (label, model, median) in enumerate(zip(labels, models, medians)):
        paired = statistics.median(a / b for a, b in zip(times[index], times[0]))
        print(f"  {label:30s} params {model.count_params():9d}  median step "
              f"{median * 1e3:8.1f} ms ({tokens / median:7.0f} tokens/s)  ratio "
              f"{medians[index] / medians[0]:.2f} (medians), {paired:.2f} (paired)")


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    os.pardir, "examples"))
    from command_line import parse_flags  # noqa: E402

    app.run(main, flags_parser=parse_flags)
