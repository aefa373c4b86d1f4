r"""Training throughput and peak memory of every recurrent model of the library.

One command, one process: every cell and sequence layer of hmkeras
(`HMLSTMCell` / `HMLSTM` and `HMRNNCell` / `HMRNN` with and without layer
normalization, `MultiplicativeLSTMCell` / `MultiplicativeLSTM`, the
`AveragingWrapper` and `AttentionWrapper` around an `LSTMCell`) and the
Keras models they are measured against (`keras.layers.LSTM`,
`RNN(LSTMCell)`, `RNN(StackedRNNCells([LSTMCell] * L))`,
`RNN(StackedRNNCells([SimpleRNNCell] * L))`), each inside the char-LM
timing model of `bench/bench_cells.py` (`make_model`: embedding -> RNN ->
Dense over the vocabulary, Adam, cross entropy), with and without
`jit_compile`, at batch 64 x 100 and at batch 1 x 100.

How it measures:

* The models of one setting (batch size, jit) are built and warmed up
  (tracing, compiling, first allocations; `--warmup` steps and then one
  whole round, not timed), then timed in `--repeats` rounds; each round times `--steps / --repeats` train steps
  of every model in turn, the order rotating from round to round, so
  that machine load falls on all alike. The figure is the median over the
  rounds of the time per step; chars/s = batch x seq_len / that time.
* Ratio: the median step time over that of the matching Keras baseline
  (`BASELINES`), and the median of the per-round ratios (the steadier
  figure on a shared machine).
* A model whose loss turns non-finite is timed on (its steps do the same
  work) and flagged in the table and the JSON (`non_finite_loss_round`).
* Peak memory on a GPU only: `tf.config.experimental.get_memory_info`'s
  peak while the model is built and warmed up, above what was allocated
  before (its weights, optimizer slots, activations, XLA buffers). On a
  CPU TensorFlow's allocator keeps no such account and the process's
  peak RSS mixes every model of the process, so memory is reported as
  n/a there.
* On a GPU `keras.layers.LSTM` runs Keras' cuDNN kernel (default
  arguments); it is labelled so, and `keras.layers.LSTM(use_cudnn=False)`
  is measured beside it. cuDNN ops are not XLA-compatible, so Keras turns
  `jit_compile` off for that model: `jit_compile_effective` in the JSON,
  and "(XLA off)" in the table, say where a model ran without XLA.

Writes `--output` (JSON: settings, device, versions, every measurement
with its per-round times) and the same path with `.md` (a Markdown table
per setting).

    python bench/bench_throughput.py                    # the full table
    python bench/bench_throughput.py --quick            # a smoke run (tiny models,
                                                        # bench/results/throughput_quick.*)
    python bench/bench_throughput.py --only=hmlstm,mlstm --batch_sizes=64 --jit_modes=false

The flags of `bench/bench_cells.py` that give sizes and steps apply
(`--units` (0: 256), `--layers`, `--seq_len`, `--vocab`, `--embedding`,
`--steps`, `--warmup`, `--seed`, `--dropout`, `--recurrent_dropout`,
`--weight_normalization`); those it varies itself are refused
(`SWEPT_FLAGS`).
"""

import datetime
import os
import platform
import statistics
import sys
import time

from absl import app
from absl import flags
from absl import logging
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cells  # noqa: E402  (its flags and its timing model, make_model)
import results_files  # noqa: E402

FLAGS = flags.FLAGS
SWEPT_FLAGS = ("cell", "batch_size", "layer_norm", "jit_compile")
QUICK = dict(units=8, layers=2, seq_len=10, vocab=12, embedding=4, steps=2, warmup=1)
# The Keras model each of ours is compared with (same sizes).
BASELINES = {
    "hmlstm_cell": "keras_stacked_lstm", "hmlstm_cell_noln": "keras_stacked_lstm",
    "hmlstm": "keras_stacked_lstm", "hmlstm_noln": "keras_stacked_lstm",
    "hmrnn_cell": "keras_stacked_simplernn", "hmrnn_cell_noln": "keras_stacked_simplernn",
    "hmrnn": "keras_stacked_simplernn", "hmrnn_noln": "keras_stacked_simplernn",
    "mlstm_cell": "keras_lstm_cell", "mlstm": "keras_lstm",
    "averaging_lstm": "keras_lstm_cell", "attention_lstm": "keras_lstm_cell",
    "keras_lstm_no_cudnn": "keras_lstm",
}

flags.DEFINE_bool("quick", False, "Smoke run: tiny models (QUICK), batch 4 and 1, "
                  "few steps.")
flags.DEFINE_list("only", None, "Measure only these model ids, or the ids that "
                  "begin with one of them and an underscore (their baselines come "
                  "along): e.g. hmlstm (hmlstm, hmlstm_noln, hmlstm_cell, "
                  "hmlstm_cell_noln), mlstm, averaging_lstm.")
flags.DEFINE_list("batch_sizes", ["64", "1"], "Batch sizes (each x --seq_len).")
flags.DEFINE_list("jit_modes", ["false", "true"], "jit_compile settings to measure.")
flags.DEFINE_integer("repeats", 5, "Interleaved timing rounds (--steps is split "
                     "over them).", lower_bound=1)
flags.DEFINE_integer("memory_size", 20, "AttentionWrapper's memory (past states).",
                     lower_bound=1)
flags.DEFINE_string("output", os.path.join("bench", "results", "throughput.json"),
                    "JSON path; the Markdown table goes beside it (.md).")


def _positive_ints(values):
    try:
        return all(int(v) > 0 for v in values)
    except ValueError:
        return False


flags.register_validator("batch_sizes", _positive_ints,
                         message="must be positive integers, e.g. 64,1")
flags.register_validator(
    "jit_modes", lambda v: bool(v) and all(m in ("false", "true") for m in v),
    message="must be false and/or true, e.g. false,true")


def model_specs(units, layers, gpu):
    """`{id: (label, factory)}` of every measured model; `factory()` gives a
    fresh cell or recurrent layer (`bench_cells.make_model` takes both)."""
    import keras

    import hmkeras
    from hmkeras import cells

    common = dict(dropout=FLAGS.dropout, recurrent_dropout=FLAGS.recurrent_dropout)

    def stack(cell_class):
        return lambda: keras.layers.StackedRNNCells(
            [cell_class(units, **common) for _ in range(layers)])

    specs = {
        "keras_lstm": ("keras.layers.LSTM" + (" (cuDNN)" if gpu else ""),
                       lambda: keras.layers.LSTM(units, return_sequences=True, **common)),
        "keras_lstm_cell": ("RNN(LSTMCell)", lambda: keras.layers.LSTMCell(units, **common)),
        "keras_stacked_lstm": (f"RNN(StackedRNNCells([LSTMCell] * {layers}))",
                               stack(keras.layers.LSTMCell)),
        "keras_stacked_simplernn": (f"RNN(StackedRNNCells([SimpleRNNCell] * {layers}))",
                                    stack(keras.layers.SimpleRNNCell)),
    }
    if gpu:
        specs["keras_lstm_no_cudnn"] = (
            "keras.layers.LSTM(use_cudnn=False)",
            lambda: keras.layers.LSTM(units, return_sequences=True, use_cudnn=False,
                                      **common))
    for name, cell_class, layer_name in (("hmlstm", hmkeras.HMLSTMCell, "HMLSTM"),
                                         ("hmrnn", hmkeras.HMRNNCell, "HMRNN")):
        layer_class = getattr(cells, layer_name, None)
        for norm, suffix in ((True, ""), (False, "_noln")):
            options = dict(num_layers=layers, layer_norm=norm, **common)
            specs[f"{name}_cell{suffix}"] = (
                f"RNN({cell_class.__name__}){'' if norm else ' no LN'}",
                lambda c=cell_class, o=options: c(units, **o))
            if layer_class is not None:
                specs[f"{name}{suffix}"] = (
                    f"{layer_name}{'' if norm else ' no LN'}",
                    lambda c=layer_class, o=options: c(units, return_sequences=True, **o))
    mlstm = dict(weight_normalization=FLAGS.weight_normalization, **common)
    specs["mlstm_cell"] = ("RNN(MultiplicativeLSTMCell)",
                           lambda: hmkeras.MultiplicativeLSTMCell(units, **mlstm))
    if hasattr(cells, "MultiplicativeLSTM"):
        specs["mlstm"] = ("MultiplicativeLSTM", lambda: cells.MultiplicativeLSTM(
            units, return_sequences=True, **mlstm))
    try:
        from hmkeras import wrappers
    except ImportError:
        wrappers = None
    if wrappers is not None:
        specs["averaging_lstm"] = ("RNN(AveragingWrapper(LSTMCell))",
                                   lambda: wrappers.AveragingWrapper(
                                       keras.layers.LSTMCell(units, **common)))
        specs["attention_lstm"] = (
            f"RNN(AttentionWrapper(LSTMCell, memory_size={FLAGS.memory_size}))",
            lambda: wrappers.AttentionWrapper(keras.layers.LSTMCell(units, **common),
                                              FLAGS.memory_size))
    return specs


def select(specs, only):
    """The ids to measure: those matching `only` (all without it) and their
    baselines, in `specs`' order."""
    if not only:
        return list(specs)
    chosen = {i for i in specs
              if any(i == word or i.startswith(word + "_") for word in only)}
    if not chosen:
        raise app.UsageError(f"--only={','.join(only)} matches none of {sorted(specs)}")
    chosen |= {BASELINES[i] for i in chosen if BASELINES.get(i) in specs}
    return [i for i in specs if i in chosen]


def _peak_memory(gpu, before):
    import tensorflow as tf

    if not gpu:
        return None
    return (tf.config.experimental.get_memory_info("GPU:0")["peak"] - before) / 2**20


def measure_setting(specs, ids, batch, jit, gpu, rng):
    """Builds, warms up and times the models `ids` at one setting; returns
    one result dict per model."""
    import keras
    import tensorflow as tf

    models, memory, effective_jit = {}, {}, {}
    shape = (batch, FLAGS.seq_len + 1)
    for model_id in ids:
        before = 0
        if gpu:
            tf.config.experimental.reset_memory_stats("GPU:0")
            before = tf.config.experimental.get_memory_info("GPU:0")["current"]
        keras.utils.set_random_seed(FLAGS.seed)
        model = bench_cells.make_model(specs[model_id][1](), jit_compile=jit)
        for _ in range(max(FLAGS.warmup, 1)):  # the first step compiles
            data = rng.integers(0, FLAGS.vocab, size=shape).astype("int32")
            model.train_on_batch(data[:, :-1], data[:, 1:])
        memory[model_id] = _peak_memory(gpu, before)
        effective_jit[model_id] = bool(model.jit_compile)
        models[model_id] = model
    per_round = max(1, FLAGS.steps // FLAGS.repeats)
    times = {model_id: [] for model_id in ids}
    diverged = {}  # model id -> round of its first non-finite loss
    # Round -1 is not timed: the first steps after the warm-ups of all the
    # models were seen to be slow (hundreds of ms for tiny models).
    for round_index in range(-1, FLAGS.repeats):
        batches = [rng.integers(0, FLAGS.vocab, size=shape).astype("int32")
                   for _ in range(per_round)]
        shift = round_index % len(ids)
        for model_id in ids[shift:] + ids[:shift]:
            model = models[model_id]
            start = time.perf_counter()
            for data in batches:
                loss = model.train_on_batch(data[:, :-1], data[:, 1:])
            elapsed = (time.perf_counter() - start) / per_round
            if not np.isfinite(loss) and model_id not in diverged:
                # Timed on (the step's work is the same), flagged in the table.
                diverged[model_id] = round_index
                print(f"  {model_id}: non-finite loss in round {round_index}")
            if round_index >= 0:
                times[model_id].append(elapsed)
    chars = batch * FLAGS.seq_len
    results = []
    for model_id in ids:
        median = statistics.median(times[model_id])
        baseline = BASELINES.get(model_id)
        if baseline not in times:
            baseline = None
        result = {
            "id": model_id, "label": specs[model_id][0], "batch_size": batch,
            "seq_len": FLAGS.seq_len, "jit_compile": jit,
            "jit_compile_effective": effective_jit[model_id],
            "parameters": models[model_id].count_params(),
            "step_seconds_median": median, "chars_per_second": chars / median,
            "step_seconds_per_round": times[model_id], "baseline": baseline,
            "ratio_to_baseline": None, "paired_ratio_to_baseline": None,
            "peak_memory_mib": memory[model_id],
            "non_finite_loss_round": diverged.get(model_id),
        }
        if baseline:
            result["ratio_to_baseline"] = median / statistics.median(times[baseline])
            result["paired_ratio_to_baseline"] = statistics.median(
                a / b for a, b in zip(times[model_id], times[baseline]))
        results.append(result)
        print(f"  {result['label']:58s} {median * 1e3:9.2f} ms/step "
              f"{result['chars_per_second']:10.0f} chars/s"
              + (f"  x{result['ratio_to_baseline']:.2f} (paired "
                 f"x{result['paired_ratio_to_baseline']:.2f})" if baseline else ""))
    del models
    keras.backend.clear_session()
    return results


def markdown(meta, results, labels):
    """The Markdown tables, one per (batch, jit) setting."""
    lines = [f"Command: `{meta['command']}`", "",
             f"Device: {meta['device']}; TensorFlow {meta['tensorflow']}, Keras "
             f"{meta['keras']}; {meta['units']} units, {meta['layers']} layers, "
             f"embedding {meta['embedding']}, vocabulary {meta['vocab']}; median of "
             f"{meta['repeats']} interleaved rounds of {meta['steps_per_round']} steps. "
             "Ratio: step time over the baseline's (paired: median of the per-round "
             "ratios)." + ("" if meta["gpu"] else " Peak memory: GPU only (n/a on CPU)."),
             ""]
    settings = sorted({(r["batch_size"], r["jit_compile"]) for r in results},
                      key=lambda s: (-s[0], s[1]))
    for batch, jit in settings:
        lines += [f"Batch {batch} x {meta['seq_len']}, jit_compile={jit}:", "",
                  "| model | parameters | ms / step | chars/s | ratio (paired) | baseline "
                  "| peak MiB |", "| --- | ---: | ---: | ---: | ---: | --- | ---: |"]
        for r in results:
            if (r["batch_size"], r["jit_compile"]) != (batch, jit):
                continue
            ratio = (f"{r['ratio_to_baseline']:.2f} ({r['paired_ratio_to_baseline']:.2f})"
                     if r["baseline"] else "")
            memory = "n/a" if r["peak_memory_mib"] is None else f"{r['peak_memory_mib']:.0f}"
            label = r["label"] + (" (XLA off)" if jit and not r["jit_compile_effective"]
                                  else "")
            if r.get("non_finite_loss_round") is not None:
                label += f" (loss non-finite from round {r['non_finite_loss_round']})"
            lines.append(
                f"| {label} | {r['parameters']:,} | {r['step_seconds_median'] * 1e3:.2f} "
                f"| {r['chars_per_second']:,.0f} | {ratio} | "
                f"{labels.get(r['baseline'], '')} | {memory} |")
        lines.append("")
    return "\n".join(lines)


def main(argv):
    del argv
    for name in SWEPT_FLAGS:
        if FLAGS[name].present:
            sys.exit(f"{os.path.basename(sys.argv[0])}: --{name} is varied by this "
                     "benchmark itself (the model list; --batch_sizes, --jit_modes).")
    command = " ".join(["python", "bench/bench_throughput.py", *sys.argv[1:]])
    logging.set_verbosity(logging.ERROR)  # one retracing warning per model otherwise
    if FLAGS.quick:
        if not FLAGS["output"].present:
            FLAGS.output = os.path.join("bench", "results", "throughput_quick.json")
        for name, value in QUICK.items():
            if not FLAGS[name].present:
                FLAGS[name].value = value
        if not FLAGS["batch_sizes"].present:
            FLAGS.batch_sizes = ["4", "1"]
        if not FLAGS["repeats"].present:
            FLAGS.repeats = 2
        if not FLAGS["memory_size"].present:
            FLAGS.memory_size = 4
    units = FLAGS.units or 256
    import keras
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    gpu = bool(gpus)
    specs = model_specs(units, FLAGS.layers, gpu)
    ids = select(specs, FLAGS.only)
    device = (tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU")
              if gpu else f"CPU ({os.cpu_count()} cores, {platform.processor() or 'cpu'})")
    meta = {
        "command": command, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "device": device, "gpu": gpu, "tensorflow": tf.__version__,
        "keras": keras.__version__, "units": units, "layers": FLAGS.layers,
        "seq_len": FLAGS.seq_len, "vocab": FLAGS.vocab, "embedding": FLAGS.embedding,
        "repeats": FLAGS.repeats, "steps_per_round": max(1, FLAGS.steps // FLAGS.repeats),
        "warmup": FLAGS.warmup, "seed": FLAGS.seed, "dropout": FLAGS.dropout,
        "recurrent_dropout": FLAGS.recurrent_dropout,
        "memory": "GPU peak above the allocation before each model" if gpu
        else "not measured on CPU",
    }
    rng = np.random.default_rng(FLAGS.seed)
    results = []
    started = time.time()
    for batch in [int(b) for b in FLAGS.batch_sizes]:
        for jit in [m == "true" for m in FLAGS.jit_modes]:
            print(f"batch {batch} x {FLAGS.seq_len}, jit_compile={jit}: "
                  f"{len(ids)} models")
            results += measure_setting(specs, ids, batch, jit, gpu, rng)
    meta["wall_seconds"] = time.time() - started
    table_path = results_files.write_results(FLAGS.output, meta, results,
                                             markdown(meta, results, {i: label for i, (label, _) in specs.items()}))
    print(f"wrote {FLAGS.output} and {table_path} ({meta['wall_seconds']:.0f} s)")


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    os.pardir, "examples"))
    from command_line import parse_flags  # noqa: E402

    app.run(main, flags_parser=parse_flags)
