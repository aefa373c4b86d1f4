r"""Character-level language modelling as a compiled program for accelerators.

The model, the corpora, the presets and the flags of `examples/ptb_char.py`
(they live in `examples/char_lm_flags.py`; the model is
`embedding -> RNN(cell) -> output module -> softmax`, Chung et al.
Sec. 4.1), trained the way accelerators like it:

* the whole train step is compiled with XLA (`--jit_compile`, on by default);
* `--precision`: `float32`, `mixed_bfloat16` (TPUs, recent GPUs) or
  `mixed_float16` (GPUs; the optimizer is wrapped in
  `keras.optimizers.LossScaleOptimizer`). The variables stay float32 in
  every mode; results.json lists their dtypes;
* a `tf.data` pipeline that keeps the device fed: the batches of
  `hmkeras.data.TruncatedBPTTBatches` in their fixed, deterministic order,
  prefetched (`tf.data.AUTOTUNE`), sharded by data for several workers;
* `--strategy`: `default` (one device), `mirrored`
  (`tf.distribute.MirroredStrategy`, every local GPU), `multi_worker`
  (`tf.distribute.MultiWorkerMirroredStrategy`, the cluster from the
  `TF_CONFIG` environment variable) or `tpu` (`tf.distribute.TPUStrategy`
  through `TPUClusterResolver(--tpu)`). Variables are created in the
  strategy's scope; `--batch_size` is the global batch, split evenly over
  the replicas. `SlopeAnnealing` assigns the slope (a mirrored variable) for
  every replica at once; the `z_rate_l` that `BoundaryMonitor` reads are the
  means over the replicas' batches (TPUs: the first replica's).

As in `ptb_char.py`, the RNN state, boundaries included, is carried from
each batch to the next (truncated BPTT over the stream; reset at every
epoch, checkpointed with the weights), under every strategy: the batches
name their rows (`TruncatedBPTTBatches.dataset(row_ids=True)`), so each
replica continues the rows the strategy gives it, and after each step the
replicas' final states are combined into the one carried state
(`hmkeras.TruncatedBPTTModel`). The default strategy gives the same
losses as the others (which the tests check). `--nocarry_state` starts
every window from the zero state instead (independent windows).
Another difference that
comes from Keras: with several replicas `--clip_norm` clips each replica's
share of the gradient before the shares are summed. With
`--strategy=multi_worker` give every worker its own `--output_dir` (each
writes its checkpoints and results; the chief's are the run's).

Everything goes to `--output_dir` (default `runs/xla_<preset or dataset>_<cell>`):
`checkpoints/` (resumed automatically at the step where the run stopped:
weights, optimizer, slope, data position), `settings.json`,
`model_config.json`, `vocabulary.json` and `results.json` (training
chars/s measured after the compiling steps, the last batch's BPC and
the mean loss of the last epoch's batches, the validation BPC on windows of `--seq_len`, the strategy, the
replicas, the precision and the dtypes of the model's weights).

Examples:

    python examples/xla_gpu_training.py --preset=quick --tiny --output_dir=/tmp/xla
    python examples/xla_gpu_training.py --preset=ptb --manual_dir=~/data/ptb \
        --precision=mixed_bfloat16 --strategy=mirrored --batch_size=256
    TF_CONFIG='{"cluster": ..., "task": ...}' python examples/xla_gpu_training.py \
        --preset=ptb --manual_dir=~/data/ptb --strategy=multi_worker
    python examples/xla_gpu_training.py --preset=ptb --strategy=tpu --tpu=local \
        --precision=mixed_bfloat16 --manual_dir=gs://bucket/ptb
    # Two logical CPU devices, as the tests run it (without XLA, which
    # cannot span logical CPU devices):
    python examples/xla_gpu_training.py --preset=quick --tiny --strategy=mirrored \
        --cpu_replicas=2 --output_dir=/tmp/xla2

It runs on CPU too (slowly: XLA is a GPU feature). The flags of
`ptb_char.py` that drive its evaluation and learning-rate schedule
(`UNUSED_FLAGS`) are refused here.
"""

import json
import math
import os
import sys
import time

from absl import flags
from absl import logging

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from command_line import FlagError  # noqa: E402  (examples/command_line.py)
from command_line import absl_main  # noqa: E402
from command_line import non_finite_stop  # noqa: E402
from command_line import run_script  # noqa: E402
from run_directory import write_run_files  # noqa: E402
import char_lm_flags  # noqa: E402  (the model and data flags, presets, corpora)

FLAGS = flags.FLAGS
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
STRATEGIES = ("default", "mirrored", "multi_worker", "tpu")
# Flags of ptb_char.py for its per-epoch validation, learning-rate schedule,
# test evaluation and plots, which this script does not do.
UNUSED_FLAGS = ("lr_schedule", "lr_divisor", "max_lr_divisions", "patience",
                "zrate_chars", "test_batch_size", "excerpt_chars", "lstm_baseline")

flags.DEFINE_enum("precision", "float32", list(PRECISIONS), "Compute precision "
                  "(the variables stay float32); mixed_float16 adds loss scaling.")
flags.DEFINE_enum("strategy", "default", list(STRATEGIES), "tf.distribute strategy.")
flags.DEFINE_string("tpu", "", "--strategy=tpu: the TPU's name or address "
                    "(TPUClusterResolver; '' or 'local' for a TPU VM).")
flags.DEFINE_bool("jit_compile", True, "Compile the train step with XLA.")
flags.DEFINE_integer("cpu_replicas", 0, "Split the CPU into this many logical "
                     "devices and mirror over them (--strategy=mirrored; for tests "
                     "without accelerators). 0: off.", lower_bound=0)
flags.DEFINE_integer("timing_warmup", 2, "Steps (compiling) not counted in chars/s.",
                     lower_bound=0)
flags.DEFINE_bool("carry_state", True, "Carry the RNN state from each batch to the "
                  "next (truncated BPTT; --nocarry_state: every window from the zero state).")
OWN_FLAGS = ("precision", "strategy", "tpu", "jit_compile", "cpu_replicas",
             "timing_warmup", "carry_state")


def resolve_settings(flag_values):
    """ptb_char.py's settings plus this script's flags, checked before
    TensorFlow loads (`FlagError` for combinations)."""
    for name in UNUSED_FLAGS:
        if flag_values[name].present:
            raise FlagError(f"--{name} is a flag of ptb_char.py's schedule or "
                            "evaluation, which this script does not run.")
    if flag_values["data_parallel"].present:
        raise FlagError("--data_parallel is ptb_char.py's (keras.distribution, on JAX); "
                        "this script splits the batches with --strategy.")
    explicit_dir = flag_values["output_dir"].present
    settings = char_lm_flags.resolve_settings(flag_values)
    settings.update({name: flag_values[name].value for name in OWN_FLAGS})
    settings["preset"] = flag_values.preset
    if not explicit_dir:
        settings["output_dir"] = os.path.join(
            os.path.dirname(settings["output_dir"]),
            "xla_" + os.path.basename(settings["output_dir"]))
    strategy = settings["strategy"]
    if settings["cpu_replicas"] and strategy != "mirrored":
        raise FlagError("--cpu_replicas goes with --strategy=mirrored. Received: "
                        f"--strategy={strategy}")
    if settings["cpu_replicas"] and settings["batch_size"] % settings["cpu_replicas"]:
        raise FlagError(
            f"--batch_size={settings['batch_size']} (the global batch) must split evenly "
            f"over --cpu_replicas={settings['cpu_replicas']}.")
    if strategy == "multi_worker" and not os.environ.get("TF_CONFIG"):
        raise FlagError("--strategy=multi_worker reads the cluster from the TF_CONFIG "
                        "environment variable, which is not set.")
    if settings["cpu_replicas"] > 1 and settings["jit_compile"]:
        # XLA compiles each replica's step for the CPU as a whole and then
        # meets the other logical devices' variables ("Trying to access
        # resource ... located in device CPU:1 from device CPU:0").
        if flag_values["jit_compile"].present:
            raise FlagError("--cpu_replicas > 1 runs without XLA (XLA on the CPU cannot "
                            "reach the variables of other logical devices): add "
                            "--nojit_compile.")
        print("--cpu_replicas: the train step runs without XLA (--nojit_compile).")
        settings["jit_compile"] = False
    if settings["tpu"] and strategy != "tpu":
        raise FlagError(f"--tpu goes with --strategy=tpu. Received: --strategy={strategy}")
    if strategy == "tpu" and settings["precision"] == "mixed_float16":
        raise FlagError("TPUs compute in bfloat16: use --precision=mixed_bfloat16 "
                        "with --strategy=tpu.")
    return settings


# ----------------------------------------------------------------------------
# Devices and strategies
# ----------------------------------------------------------------------------
def make_strategy(s):
    """The `tf.distribute.Strategy` of --strategy; a missing device is a
    `FlagError` naming what was looked for."""
    import tensorflow as tf

    name = s["strategy"]
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        if s["cpu_replicas"]:
            # Before anything initializes the devices (hence a fresh process).
            cpu = tf.config.list_physical_devices("CPU")[0]
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration()] * s["cpu_replicas"])
            devices = [d.name for d in tf.config.list_logical_devices("CPU")]
            return tf.distribute.MirroredStrategy(devices=devices)
        if not tf.config.list_physical_devices("GPU"):
            print("--strategy=mirrored: no GPU found; mirroring over the CPU alone "
                  "(one replica).")
        return tf.distribute.MirroredStrategy()
    if name == "multi_worker":
        return tf.distribute.MultiWorkerMirroredStrategy()
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=s["tpu"] or None)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, RuntimeError, tf.errors.OpError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise FlagError(f"--strategy=tpu found no TPU (--tpu={s['tpu']!r}): {first}") from None
    return tf.distribute.TPUStrategy(resolver)


def fed_dataset(batches, start_batch=0, row_ids=False):
    """`batches.dataset(start_batch, row_ids)` in its fixed order, prefetched,
    and sharded by data (not by file) when several workers read it."""
    import tensorflow as tf

    options = tf.data.Options()
    options.deterministic = True
    options.experimental_distribute.auto_shard_policy = (
        tf.data.experimental.AutoShardPolicy.DATA)
    dataset = batches.dataset(start_batch, row_ids=row_ids)
    return dataset.prefetch(tf.data.AUTOTUNE).with_options(options)


# ----------------------------------------------------------------------------
# Training
# ----------------------------------------------------------------------------
def _progress_callback(s, trainer, checkpoint, progress, clock):
    import keras

    from hmkeras.training.truncated_bptt_run import all_finite

    class Progress(keras.callbacks.Callback):
        """Counts batches, times the steps after the warm-up, checkpoints,
        stops at --max_steps; a non-finite loss (or weight, where a
        checkpoint is due) stops the run before anything is saved."""

        saved_step = (int(trainer.optimizer.iterations.numpy())
                      if checkpoint.exists() else None)

        def on_train_batch_end(self, batch, logs=None):
            # Reading a value waits for the device: the clock sees finished steps.
            step = int(trainer.optimizer.iterations.numpy())
            if not math.isfinite(float(logs["batch_bpc"])):
                return self._stop(step, f"the training loss is {float(logs['batch_bpc'])}")
            progress["last_loss"] = float(logs["loss"])
            progress["last_bpc"] = float(logs["batch_bpc"])
            progress["batch"] += 1
            progress["steps_run"] += 1
            now = time.perf_counter()
            if progress["steps_run"] == s["timing_warmup"]:
                progress["_clock"] = now
            elif progress["steps_run"] > s["timing_warmup"]:
                progress["timed_seconds"] += now - progress["_clock"]
                progress["timed_steps"] += 1
                progress["_clock"] = now
            stop = s["max_steps"] and step >= s["max_steps"]
            if stop or step % s["save_every"] == 0:
                if not all_finite(trainer.variables + trainer.optimizer.variables):
                    return self._stop(step, "a weight is not finite")
                progress["seconds"] = clock.total()
                checkpoint.save(trainer, _saved(progress))
                Progress.saved_step = step
            if stop:
                trainer.stop_training = True

        def _stop(self, step, what):
            trainer.stop_training = True
            raise non_finite_stop(step, what, checkpoint.path, Progress.saved_step)

    return Progress()


def _saved(progress):
    return {k: v for k, v in progress.items() if not k.startswith("_")}


def train(s, lm, trainer, batches, checkpoint, clock):
    """Trains for --max_epochs (or up to --max_steps); returns the progress.

    The timed steps and seconds (`timed_steps`, `timed_seconds`) and the
    run's seconds (`seconds`, `clock`) add up over every resumption."""
    import hmkeras

    progress = checkpoint.restore(trainer)
    if progress is None:
        progress = {"epoch": 0, "batch": 0}
    else:
        print(f"Resuming from {checkpoint.path}: epoch {progress['epoch'] + 1}, "
              f"batch {progress['batch']}.")
    progress["steps_run"] = 0  # this process' (its first steps compile)
    progress.setdefault("timed_steps", 0)
    progress.setdefault("timed_seconds", 0.0)
    clock.resume_from(progress.get("seconds", 0.0))
    callbacks = [_progress_callback(s, trainer, checkpoint, progress, clock)]
    if lm.is_hierarchical:
        callbacks.append(hmkeras.BoundaryMonitor(
            interval=s["monitor_interval"], stop_on_collapse=s["stop_on_collapse"]))
        if s["slope_schedule"]:
            start, rate, top = s["slope"], s["slope_rate"], s["slope_max"]
            # Chung et al. Sec. 4.1: a = min(5, 1 + 0.04 * epoch).
            callbacks.insert(0, hmkeras.SlopeAnnealing(
                lambda epoch: min(top, start + rate * epoch)))
    while progress["epoch"] < s["max_epochs"] and not trainer.stop_training:
        step = int(trainer.optimizer.iterations.numpy())
        steps = batches.num_batches - progress["batch"]
        if s["max_steps"]:
            steps = min(steps, s["max_steps"] - step)
        if steps <= 0:
            break
        if progress["batch"] == 0 and trainer.carry_state:
            trainer.reset_carried_state()  # a new epoch starts from the zero state
        trainer.fit(fed_dataset(batches, progress["batch"], row_ids=trainer.carry_state),
                    epochs=progress["epoch"] + 1,
                    initial_epoch=progress["epoch"], steps_per_epoch=steps,
                    callbacks=callbacks, verbose=s["verbose"], shuffle=False)
        if progress["batch"] >= batches.num_batches:
            progress["epoch"], progress["batch"] = progress["epoch"] + 1, 0
            progress["seconds"] = clock.total()
            checkpoint.save(trainer, _saved(progress))
        elif s["max_steps"]:
            break
    return progress


def _validation_bpc(s, evaluator, ids, replicas):
    """Validation BPC on windows of --seq_len from the zero state
    (`evaluator`: a `TruncatedBPTTModel(carry_state=False)`)."""
    from hmkeras import data

    rows = min(s["valid_batch_size"], (len(ids) - 1) // s["seq_len"])
    rows -= rows % replicas
    if rows < 1:
        return None
    batches = data.TruncatedBPTTBatches(ids, rows, s["seq_len"])
    nats = evaluator.evaluate(fed_dataset(batches), verbose=0, return_dict=True)["loss"]
    return nats / math.log(2.0)


def _run(s):
    started = time.time()
    import keras
    import tensorflow as tf

    from hmkeras import data
    from hmkeras.models.char_language_model import CharLanguageModel
    from hmkeras.training import run_directory
    from hmkeras.training.stateful_training import TruncatedBPTTModel
    from hmkeras.training.training_state import TrainingCheckpoint

    strategy = make_strategy(s)
    replicas = strategy.num_replicas_in_sync
    if s["batch_size"] % replicas:
        raise FlagError(f"--batch_size={s['batch_size']} (the global batch) must split "
                        f"evenly over the {replicas} replicas of --strategy={s['strategy']}.")
    keras.config.set_dtype_policy(s["precision"])
    texts, _, _ = char_lm_flags.load_texts(s)
    if s["unsegmented"]:  # the lines without their spaces, as ptb_char.py trains
        texts, _ = char_lm_flags.unsegmented_texts(s, texts)
    vocab, ids, _ = char_lm_flags.encode_texts(s, texts)
    if len(ids["train"]) < s["batch_size"] * s["seq_len"] + 1:
        raise FlagError(f"The training text has {len(ids['train']):,} symbols, fewer than "
                        f"--batch_size x --seq_len + 1.")
    config = char_lm_flags.model_config(s, len(vocab))
    config = char_lm_flags.check_model_config(s, config)
    write_run_files(s["output_dir"], config, s, vocabulary=vocab, kind="char_lm_xla")
    tf.random.set_seed(s["seed"])
    batches = data.TruncatedBPTTBatches(ids["train"], s["batch_size"], s["seq_len"])
    checkpoint = TrainingCheckpoint(os.path.join(s["output_dir"], "checkpoints"))
    with strategy.scope():
        # Every variable (weights, slope, optimizer, metrics) is created here.
        lm = CharLanguageModel(config)
        carry = s["carry_state"]
        trainer = TruncatedBPTTModel(lm, s["batch_size"] if carry else None, carry_state=carry)
        optimizer = keras.optimizers.Adam(s["learning_rate"], global_clipnorm=s["clip_norm"])
        if s["precision"] == "mixed_float16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        trainer.compile(optimizer, loss=trainer.loss_function(),
                        jit_compile=s["jit_compile"])
        print(f"{s['cell']}: {lm.count_params():,} parameters; {s['strategy']} strategy, "
              f"{replicas} replica(s) of {s['batch_size'] // replicas} rows; "
              f"{s['precision']}; jit_compile={s['jit_compile']}.")
        clock = run_directory.RunClock.of_run(s["output_dir"], started)
        progress = train(s, lm, trainer, batches, checkpoint, clock)
        evaluator = TruncatedBPTTModel(lm, None, carry_state=False)
        evaluator.compile(loss=evaluator.loss_function(), jit_compile=s["jit_compile"])
    chars = progress["timed_steps"] * s["batch_size"] * s["seq_len"]
    results = {
        "cell": s["cell"], "dataset": s["dataset"], "preset": s["preset"],
        "strategy": s["strategy"], "replicas": replicas, "precision": s["precision"],
        "jit_compile": s["jit_compile"], "carry_state": s["carry_state"],
        "batch_size": s["batch_size"],
        "seq_len": s["seq_len"], "parameters": lm.count_params(),
        "devices": [d.name for d in tf.config.list_logical_devices()
                    if d.device_type != "CPU"] or ["CPU"],
        "steps": int(trainer.optimizer.iterations.numpy()),
        "steps_this_run": progress["steps_run"], "epochs": progress["epoch"],
        "timed_steps": progress["timed_steps"],
        "chars_per_second": (chars / progress["timed_seconds"]
                             if progress["timed_seconds"] > 0 else None),
        "last_epoch_mean_loss": progress.get("last_loss"),
        "final_bpc": progress.get("last_bpc"),
        "valid_bpc": _validation_bpc(s, evaluator, ids["validation"], replicas),
        "weight_dtypes": sorted({v.dtype for v in lm.network.weights}),
        "compute_dtype": keras.config.dtype_policy().compute_dtype,
    }
    if lm.is_hierarchical:
        results["slope"] = float(lm.hierarchical_cell.slope.numpy())
    results["wall_seconds"] = clock.total()  # every process that trained it
    run_directory.write_results(s["output_dir"], results)
    _print_results(results, s["output_dir"])
    return results


def _print_results(results, output_dir):
    rate = results["chars_per_second"]
    last = results["final_bpc"]
    print(f"{results['steps']} steps; last batch "
          f"{'-' if last is None else f'{last:.4f}'} bits/char, "
          f"validation {results['valid_bpc'] or float('nan'):.4f}; "
          f"{f'{rate:,.0f} chars/s' if rate else 'too few steps to time'}; "
          f"results in {output_dir}/results.json")


def _check_carry_state(s):
    """Refuses to resume a run in --output_dir under the other --carry_state:
    the carried state is part of the trainer's checkpointed variables."""
    path = os.path.join(s["output_dir"], "settings.json")
    if s.get("overwrite") or not os.path.isfile(path):
        return
    with open(path) as f:
        # Runs written before the flag existed trained independent windows.
        before = json.load(f).get("carry_state", False)
    if before != s["carry_state"]:
        old_flag, new_flag = (("--carry_state", "--nocarry_state") if before
                              else ("--nocarry_state", "--carry_state"))
        raise FlagError(
            f"--output_dir={s['output_dir']!r} holds a run trained with {old_flag} "
            f"(its checkpoints {'hold' if before else 'lack'} the carried state), "
            f"which {new_flag} cannot resume: resume it with {old_flag}, or use a "
            "new --output_dir (or --overwrite).")


def run(s):
    """Checks --output_dir against the flags (a changed model is refused,
    `char_lm_flags.prepare_output_dir`; so is a changed --carry_state), then
    trains; returns the results dict."""
    from hmkeras.training.run_directory import removing_new_empty_dirs

    _check_carry_state(s)
    char_lm_flags.prepare_output_dir(s, kind="char_lm_xla")
    finished = finished_results(s)
    if finished is not None:
        return finished
    with removing_new_empty_dirs([s["output_dir"]]):
        return _run(s)


def finished_results(s):
    """The results.json of a run in --output_dir that has the epochs (or
    the --max_steps) these flags ask for: printed and returned as saved,
    nothing rewritten; None otherwise."""
    from hmkeras.training import run_directory

    results = run_directory.finished_results(s["output_dir"], s["max_epochs"],
                                             s["max_steps"])
    if results is None:
        return None
    print(f"{s['output_dir']} holds a finished run ({results.get('steps')} steps, "
          f"{results.get('epochs')} epochs); its results, unchanged (a larger "
          "--max_epochs or --max_steps trains on):")
    _print_results(results, s["output_dir"])
    return results


def run_from_flags():
    """The command: the settings from the flags, then the run."""
    logging.set_verbosity(logging.WARNING)  # tf.distribute's INFO lines
    run(resolve_settings(FLAGS))


main = absl_main(run_from_flags)

if __name__ == "__main__":
    run_script(main)
