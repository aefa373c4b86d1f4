r"""Long sequences in inference: memory of a stream, and the longest call.

Two measurements, for each layer named by `--layers` (units `--units`,
batch 1, `return_sequences=False`, inference):

1. Streaming.  A stateful layer reads `--steps` steps per pass in chunks
   of `--chunk` steps (one compiled function, the state carried from
   chunk to chunk and from pass to pass), `--passes` times.  The process's
   resident memory (`VmRSS` of `/proc/self/status`) is read after every
   pass; the script prints it per pass and whether it grew from the
   second pass on (the first pass includes tracing and Keras' caches).
2. One long call.  The layer, not stateful, reads one sequence of
   `--long_steps` steps in one compiled call; on an error (memory) the
   length is halved until a call works.  The longest length that worked,
   its time and the resident memory after it are printed.

Inputs are standard normal, drawn once (seed `--seed`).  This is a check
of memory, not a timing benchmark: the times are those of a shared
machine.

    python bench/long_sequence.py                        # hmlstm, hmrnn, mlstm
    python bench/long_sequence.py --layers=hmlstm --long_steps=100000 \
        --json_out=bench/results/long_sequence.json
"""

import gc
import json
import os
import time

from absl import app
from absl import flags

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import hmkeras  # noqa: E402

LAYERS = {
    "hmlstm": lambda units, **kw: hmkeras.HMLSTM(units, num_layers=3, **kw),
    "hmrnn": lambda units, **kw: hmkeras.HMRNN(units, num_layers=3, **kw),
    "mlstm": lambda units, **kw: hmkeras.MultiplicativeLSTM(units, **kw),
    "averaging": lambda units, **kw: keras.layers.RNN(
        hmkeras.AveragingWrapper(hmkeras.HMLSTMCell(units, num_layers=2)), **kw),
    "attention": lambda units, **kw: keras.layers.RNN(
        hmkeras.AttentionWrapper(hmkeras.HMLSTMCell(units, num_layers=2), 8), **kw),
}

FLAGS = flags.FLAGS
flags.DEFINE_list("layers", ["hmlstm", "hmrnn", "mlstm"],
                  f"Layers to run, among {sorted(LAYERS)}.")
flags.DEFINE_integer("units", 4, "Units per layer.", lower_bound=1)
flags.DEFINE_integer("features", 3, "Input features.", lower_bound=1)
flags.DEFINE_integer("steps", 10_000, "Steps per streaming pass.", lower_bound=1)
flags.DEFINE_integer("chunk", 500, "Steps per call while streaming.", lower_bound=1)
flags.DEFINE_integer("passes", 6, "Streaming passes.", lower_bound=2)
flags.DEFINE_integer("long_steps", 100_000, "Length of the one long call (0: skip).",
                     lower_bound=0)
flags.DEFINE_integer("seed", 0, "Seed of the inputs and weights.")
flags.DEFINE_string("json_out", None, "Also write the figures to this JSON file.")


def resident_mib():
    """The process's resident memory in MiB (`VmRSS`, Linux)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0  # kB
    raise RuntimeError("no VmRSS in /proc/self/status (not Linux?)")


def stream(name, rng):
    """RSS after each pass of a stateful layer streamed in chunks."""
    keras.utils.set_random_seed(FLAGS.seed)
    layer = LAYERS[name](FLAGS.units, stateful=True)
    layer(np.zeros((1, FLAGS.chunk, FLAGS.features), "float32"))  # build

    @tf.function(input_signature=[
        tf.TensorSpec((1, FLAGS.chunk, FLAGS.features), tf.float32)])
    def step(x):
        return layer(x, training=False)

    x = rng.normal(size=(1, FLAGS.steps, FLAGS.features)).astype("float32")
    chunks = [x[:, t:t + FLAGS.chunk] for t in range(0, FLAGS.steps, FLAGS.chunk)]
    chunks = [c for c in chunks if c.shape[1] == FLAGS.chunk]  # one signature
    rss, seconds = [], []
    finite = True
    for _ in range(FLAGS.passes):
        start = time.perf_counter()
        for chunk in chunks:
            y = step(chunk)
        finite &= bool(np.all(np.isfinite(y.numpy())))
        finite &= all(bool(np.all(np.isfinite(s.numpy()))) for s in layer.states)
        seconds.append(time.perf_counter() - start)
        gc.collect()
        rss.append(resident_mib())
    growth = rss[-1] - rss[1]
    return {
        "steps_per_pass": len(chunks) * FLAGS.chunk,
        "chunk": FLAGS.chunk,
        "rss_mib_per_pass": [round(r, 1) for r in rss],
        "seconds_per_pass": [round(s, 2) for s in seconds],
        "growth_mib_pass2_to_last": round(growth, 1),
        "finite": finite,
    }


def longest_call(name, rng):
    """The longest single call that works, from `--long_steps` down."""
    keras.utils.set_random_seed(FLAGS.seed)
    layer = LAYERS[name](FLAGS.units, return_state=True)
    run = tf.function(lambda x: layer(x, training=False))
    length, tried = FLAGS.long_steps, []
    while length >= 1:
        x = rng.normal(size=(1, length, FLAGS.features)).astype("float32")
        start = time.perf_counter()
        try:
            result = run(x)
        except (tf.errors.ResourceExhaustedError, MemoryError) as error:
            tried.append({"steps": length, "error": type(error).__name__})
            length //= 2
            continue
        seconds = time.perf_counter() - start
        finite = all(bool(np.all(np.isfinite(r.numpy()))) for r in result)
        tried.append({"steps": length, "seconds": round(seconds, 1),
                      "rss_mib": round(resident_mib(), 1), "finite": finite})
        return {"longest_steps": length, "tried": tried}
    return {"longest_steps": 0, "tried": tried}


def main(argv):
    del argv
    unknown = set(FLAGS.layers) - set(LAYERS)
    if unknown:
        raise app.UsageError(f"--layers: unknown {sorted(unknown)}; known {sorted(LAYERS)}")
    rng = np.random.default_rng(FLAGS.seed)
    figures = {"units": FLAGS.units, "features": FLAGS.features, "layers": {}}
    for name in FLAGS.layers:
        result = {"stream": stream(name, rng)}
        s = result["stream"]
        print(f"{name}: streamed {FLAGS.passes} x {s['steps_per_pass']} steps "
              f"in chunks of {s['chunk']}; RSS MiB per pass {s['rss_mib_per_pass']}; "
              f"seconds per pass {s['seconds_per_pass']}; finite={s['finite']}")
        grew = s["growth_mib_pass2_to_last"]
        print(f"{name}: RSS {'GREW' if grew > 5.0 else 'did not grow'} "
              f"({grew:+.1f} MiB from pass 2 to pass {FLAGS.passes})")
        if FLAGS.long_steps:
            result["long"] = longest_call(name, rng)
            last = result["long"]["tried"][-1]
            print(f"{name}: longest single call {result['long']['longest_steps']} steps "
                  f"({last})")
        figures["layers"][name] = result
    if FLAGS.json_out:
        with open(FLAGS.json_out, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    app.run(main)
