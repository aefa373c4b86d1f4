r"""Handwriting generation with the HM-LSTM (Chung et al. 2017, Section 4.2).

Trains `(dx, dy, pen_up) -> RNN(cell) -> gated output embedding ->
mixture density (Graves 2013)` on whole lines (mini-batches padded to their
longest line, every line starting from the zero state), with Adam and
slope annealing `a = min(3, 1 + 0.004 * epoch)` (Chung et al.'s IAM-OnDB
schedule). Then it reports the average log-likelihood per test sequence
(Table 3's measure, in nats, on the normalized offsets), the boundary rates
and how well the boundaries of z^1 and z^2 agree with the pen-ups (stroke
ends) and, on the embedded set, with the glyph ends (precision / recall /
F1, `hmkeras.analysis.boundary_metrics`, each with the reference placed on
the pen-up point and on the point before it; the best is the headline);
draws a validation line coloured by the segments of z^2 next to those of
the pen-ups (Fig. 5, `fig5_segments.png`); exports a stateless step model
(`step_model/`) and draws sampled handwriting from it (`samples.png`; more
with `examples/sample_handwriting.py`). On JAX (`KERAS_BACKEND=jax`, with
TensorFlow installed for the `tf.data` input) it trains and evaluates the
same way; a SavedModel is TensorFlow's, so there the samples are drawn from
the model itself (`HandwritingModel.draw`) and nothing is exported.

The HM-LSTM trains the papers' model by default (`--boundary_prior=none`);
`--boundary_prior=rate` or `binomial` adds the boundary prior
(`--segment_lengths` in pen points). It is not the default here: on the
embedded set the rate prior holds the rates at their targets but costs test
log-likelihood and puts z^2 no closer to the stroke ends
(docs/results/handwriting.md, "Handwriting on the embedded stroke set").

Data (`--dataset`):

* `embedded` (default, offline): `hmkeras.data.synthetic_strokes
  .SyntheticStrokes`, generated glyph lines with known stroke and glyph
  boundaries;
* `iam_ondb`: IAM-OnDB through the TFDS builder `hmkeras.data.iam_ondb`;
  register at https://fki.tic.heia-fr.ch/databases/iam-on-line-handwriting-database,
  download lineStrokes-all.tar.gz and pass its folder as --manual_dir.

Everything goes to `--output_dir` (default `runs/handwriting_<dataset>_<cell>`):
`checkpoints/` (resumed automatically at the last finished epoch:
weights, optimizer, slope, epoch), `logs/` (TensorBoard: loss, NLL per
sequence, z rates, slope), `model_config.json`, `settings.json`,
`results.json`, `fig5_segments.png`, `samples.png`, `step_model/`.

Examples:

    python examples/iam_ondb.py                       # embedded set, paper sizes
    python examples/iam_ondb.py --units=64 --output_units=64 --max_epochs=20
    python examples/iam_ondb.py --cell=lstm
    python examples/iam_ondb.py --tiny --output_dir=/tmp/smoke
    python examples/iam_ondb.py --dataset=iam_ondb --manual_dir=~/data/iam
    python examples/sample_handwriting.py --model_dir=runs/handwriting_embedded_hmlstm

Rerunning into the same --output_dir resumes that run (the flags that shape
the model must match; --overwrite starts afresh).
"""

import math
import os
import time

from absl import flags
import numpy as np

from command_line import FlagError  # examples/command_line.py
from command_line import absl_main
from command_line import flag_errors
from command_line import run_script
from command_line import settings_from_flags
from command_line import stop_if_non_finite
import boundary_prior_flags  # examples/boundary_prior_flags.py
from run_directory import prepare_output_dir
from run_directory import write_run_files

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# `--tiny` shrinks the run (tests and smoke runs).
TINY = dict(units=8, output_units=8, num_components=3, batch_size=4, max_epochs=1,
            embedded_train=16, embedded_valid=4, embedded_test=4, sample_steps=30,
            num_samples=2)
DATASETS = ("embedded", "iam_ondb")
CELLS = ("hmlstm", "lstm")
# Flags that shape the model or the data: a resumed run must keep them.
MODEL_FLAGS = ("cell", "units", "num_layers", "output_units", "num_components",
               "layer_norm", "boundary_prior", "segment_lengths", "dataset", "seed", "embedded_train", "embedded_valid",
               "embedded_test", "min_length", "batch_size", "learning_rate")

FLAGS = flags.FLAGS
_FLAGS_BEFORE = set(FLAGS)
flags.DEFINE_bool("tiny", False, "Shrink the model and the data (tests).")
flags.DEFINE_enum("dataset", "embedded", list(DATASETS), "The stroke data.")
flags.DEFINE_string("manual_dir", None, "--dataset=iam_ondb: the folder holding "
                    "lineStrokes-all.tar.gz or the extracted lineStrokes/.")
flags.DEFINE_string("data_dir", None, "TFDS data directory.")
flags.DEFINE_integer("min_length", 300, "IAM-OnDB: drop lines with fewer points.",
                     lower_bound=2)
flags.DEFINE_integer("embedded_train", 400, "Embedded set: training lines.", lower_bound=1)
flags.DEFINE_integer("embedded_valid", 50, "Embedded set: validation lines.", lower_bound=1)
flags.DEFINE_integer("embedded_test", 50, "Embedded set: test lines.", lower_bound=1)
flags.DEFINE_string("output_dir", None, "Default: runs/handwriting_<dataset>_<cell>.")
flags.DEFINE_bool("overwrite", False, "Delete the run in --output_dir and start afresh.")
flags.DEFINE_integer("seed", 0, "Seed of the initialization, data and sampling.",
                     lower_bound=0)
flags.DEFINE_enum("cell", "hmlstm", list(CELLS), "The recurrent cell.")
flags.DEFINE_integer("units", 400, "Units of every recurrent layer.", lower_bound=1)
flags.DEFINE_integer("num_layers", 3, "Recurrent layers.", lower_bound=2)
flags.DEFINE_integer("output_units", 400, "Gated output embedding size.", lower_bound=1)
flags.DEFINE_integer("num_components", 20, "Mixture components.", lower_bound=1)
flags.DEFINE_bool("layer_norm", True, "Layer normalization in the HM-LSTM.")
boundary_prior_flags.define_flags(flags, "pen points", default="none")  # see HandwritingModelConfig
flags.DEFINE_integer("batch_size", 32, "Lines per batch.", lower_bound=1)
flags.DEFINE_float("learning_rate", 3e-4, "Adam learning rate.")
flags.DEFINE_float("clip_norm", 10.0, "Global gradient-norm clipping.")
flags.DEFINE_integer("max_epochs", 200, "Epochs to train (in total).", lower_bound=1)
flags.DEFINE_bool("slope_schedule", True, "Anneal a = min(slope_max, 1 + slope_rate * epoch).")
flags.DEFINE_float("slope_max", 3.0, "Largest annealed slope (Chung et al.: 3).")
flags.DEFINE_float("slope_rate", 0.004, "Slope increase per epoch (Chung et al.: 0.004).")
flags.DEFINE_integer("monitor_interval", 50, "BoundaryMonitor interval (steps).",
                     lower_bound=1)
flags.DEFINE_integer("sample_steps", 400, "Steps of every sampled line.", lower_bound=1)
flags.DEFINE_integer("num_samples", 4, "Sampled lines in samples.png.", lower_bound=1)
flags.DEFINE_float("sample_bias", 1.0, "Graves' sampling bias (>= 0).")
flags.DEFINE_integer("verbose", 1, "Keras verbosity.", lower_bound=0, upper_bound=2)
_OWN_FLAGS = set(FLAGS) - _FLAGS_BEFORE

for _name, _ok, _text in (
    ("learning_rate", lambda v: v > 0, "> 0"), ("clip_norm", lambda v: v > 0, "> 0"),
    ("slope_max", lambda v: v >= 1, ">= 1"), ("slope_rate", lambda v: v >= 0, ">= 0"),
    ("sample_bias", lambda v: v >= 0, ">= 0"),
):
    flags.register_validator(_name, lambda v, ok=_ok: math.isfinite(v) and ok(v),
                             message=f"must be a finite number {_text}")


def resolve_settings(flag_values):
    """The run's settings: the flags, then `--tiny` for flags not given."""
    settings = settings_from_flags(flag_values, _OWN_FLAGS, TINY if flag_values.tiny else {})
    if settings["dataset"] == "iam_ondb" and not settings["manual_dir"]:
        raise FlagError(
            "--dataset=iam_ondb needs --manual_dir=DIR, the folder with "
            "lineStrokes-all.tar.gz or lineStrokes/ (register at "
            "https://fki.tic.heia-fr.ch/databases/iam-on-line-handwriting-database); "
            "--dataset=embedded needs no files.")
    if settings["manual_dir"] and not os.path.isdir(os.path.expanduser(settings["manual_dir"])):
        raise FlagError(f"--manual_dir must be an existing directory. "
                        f"Received: --manual_dir={settings['manual_dir']!r}")
    boundary_prior_flags.check_flags(settings, flag_values, ("hmlstm",))
    if not settings["output_dir"]:
        settings["output_dir"] = os.path.join(
            "runs", f"handwriting_{settings['dataset']}_{settings['cell']}")
    return settings


def load_data(s):
    """`{split: [normalized (T, 3)]}`, `(mean, std)`, references, info."""
    if s["dataset"] == "embedded":
        from hmkeras.data.synthetic_strokes import SyntheticStrokes

        data = SyntheticStrokes(seed=s["seed"], num_train=s["embedded_train"],
                                num_valid=s["embedded_valid"], num_test=s["embedded_test"])
        splits = {name: data.normalized(name) for name in ("train", "validation", "test")}
        references = {name: {"strokes": data.stroke_ends(name), "glyphs": data.glyph_ends(name)}
                      for name in ("validation", "test")}
        return splits, (data.mean, data.std), references, {"source": "embedded"}
    from hmkeras.data.iam_ondb import load_iam_ondb
    from hmkeras.data.sources import DatasetFilesNotFoundError

    with flag_errors(DatasetFilesNotFoundError):
        splits, stats, info = load_iam_ondb(s["manual_dir"], s["data_dir"], s["min_length"])
    references = {name: {"strokes": [seq[:, 2].astype(np.int32) for seq in splits[name]]}
                  for name in ("validation", "test")}
    return splits, stats, references, info


def line_batches(sequences, batch_size, order=None):
    """Padded batches of whole lines in `order` (default: as given), a
    `tf.data.Dataset` of `(inputs, targets, weights)`
    (`hmkeras.models.handwriting_model.pad_sequences`) whose time axis is
    left unknown: every batch is padded to its own longest line. (A Keras
    `PyDataset` took the shapes of its first two batches, and a later batch
    of another length stopped the run.) On a backend other than
    TensorFlow, which compiles a train step for every shape it meets, the
    longest line is rounded up to a multiple of 64 steps (`padded_length`;
    padding has weight 0, so the loss is the same)."""
    import keras
    import tensorflow as tf

    from hmkeras.models.handwriting_model import STEP_FEATURES
    from hmkeras.models.handwriting_model import pad_sequences
    from hmkeras.models.handwriting_model import padded_length

    order = np.arange(len(sequences)) if order is None else order
    count = math.ceil(len(order) / batch_size)
    few_shapes = keras.backend.backend() != "tensorflow"

    def batches():
        for index in range(count):
            lines = [sequences[i] for i in order[index * batch_size : (index + 1) * batch_size]]
            longest = max(len(line) for line in lines) - 1
            yield pad_sequences(lines, padded_length(longest) if few_shapes else None)

    steps = tf.TensorSpec((None, None, STEP_FEATURES), tf.float32)
    dataset = tf.data.Dataset.from_generator(
        batches, output_signature=(steps, steps, tf.TensorSpec((None, None), tf.float32)))
    return dataset.apply(tf.data.experimental.assert_cardinality(count))


def train(s, model, splits):
    """Adam with gradient-norm clipping and slope annealing, one `fit` per
    epoch over the lines reshuffled with the seed
    (`hmkeras.training.epoch_run`: validation logs, TensorBoard scalars in
    logs/, resumable checkpoints); returns the epochs trained in all."""
    import keras

    import hmkeras
    from hmkeras.training.epoch_run import EpochSchedule
    from hmkeras.training.epoch_run import train_epochs
    from hmkeras.training.epoch_summaries import EpochSummaries

    trainer = hmkeras.HandwritingTrainer(model)
    trainer.compile(keras.optimizers.Adam(s["learning_rate"], global_clipnorm=s["clip_norm"]))
    callbacks = []
    if model.is_hierarchical:
        rate, top = s["slope_rate"], s["slope_max"]
        if s["slope_schedule"]:  # Chung et al. Sec. 4.2: min(3, 1 + 0.004 epoch)
            callbacks.append(hmkeras.SlopeAnnealing(lambda epoch: min(top, 1.0 + rate * epoch)))
        callbacks.append(hmkeras.BoundaryMonitor(interval=s["monitor_interval"],
                                                 verbose=int(s["verbose"] > 0)))
    # Last: the scalars of every epoch's logs, the slope and z rates included.
    callbacks.append(EpochSummaries(os.path.join(s["output_dir"], "logs"), skip=()))
    valid = line_batches(splits["validation"], s["batch_size"])

    def shuffled(epoch):  # the training lines in the seed's order of this epoch
        order = np.random.default_rng([s["seed"], epoch]).permutation(len(splits["train"]))
        return line_batches(splits["train"], s["batch_size"], order)

    def validate(trainer):  # the logs of Keras' validation_data
        logs = trainer.evaluate(valid, verbose=0, return_dict=True)
        return {f"val_{name}": value for name, value in logs.items()}

    schedule = EpochSchedule(max_epochs=s["max_epochs"], learning_rate=s["learning_rate"],
                             verbose=s["verbose"])
    progress = train_epochs(trainer, shuffled, schedule, s["output_dir"], validate, callbacks)
    stop_if_non_finite(progress)
    return progress["epoch"]


def run(s):
    """Trains, evaluates, draws and exports; returns the results dict."""
    started = time.time()
    out_dir = s["output_dir"]
    # A settings.json older than the prior flags resumes with their
    # defaults (the papers' model, as it was trained).
    prepare_output_dir(s, "handwriting", MODEL_FLAGS,
                       defaults=boundary_prior_flags.old_run_defaults(FLAGS))
    finished = finished_results(s)
    if finished is not None:
        return finished
    splits, (mean, std), references, info = load_data(s)
    import keras

    from hmkeras.analysis import handwriting_report as report
    from hmkeras.training.run_directory import RunClock
    from hmkeras.training.run_directory import write_results
    from hmkeras.analysis.handwriting_plot import plot_handwriting, plot_segments
    from hmkeras.data.stroke_offsets import denormalize_offsets
    from hmkeras.models.handwriting_model import HandwritingModel
    from hmkeras.models.handwriting_model import HandwritingModelConfig
    from hmkeras.training.handwriting_step_export import (
        export_handwriting_step_model, generate_strokes)

    keras.utils.set_random_seed(s["seed"])
    # --layer_norm is an option of the HM-LSTM (`cell_options`); the LSTM has none.
    options = dict(layer_norm=s["layer_norm"]) if s["cell"] == "hmlstm" else {}
    config = HandwritingModelConfig(
        cell=s["cell"], units=s["units"], num_layers=s["num_layers"],
        output_units=s["output_units"], num_components=s["num_components"],
        cell_options=options, **boundary_prior_flags.prior_arguments(s), seed=s["seed"])
    model = HandwritingModel(config)
    write_run_files(out_dir, model.config, s, kind="handwriting")
    print(f"{s['cell']}: {model.count_params():,} parameters; "
          f"{len(splits['train'])} training lines.")
    epochs = train(s, model, splits)
    test_ll = model.sequence_log_likelihoods(splits["test"], batch_size=s["batch_size"])
    valid_ll = model.sequence_log_likelihoods(splits["validation"],
                                              batch_size=s["batch_size"])
    results = {
        "cell": s["cell"], "dataset": s["dataset"], "parameters": model.count_params(),
        "epochs": epochs, "seed": s["seed"],
        **boundary_prior_flags.prior_results(model.boundary_prior),
        "test_log_likelihood_per_sequence": float(test_ll.mean()),
        "valid_log_likelihood_per_sequence": float(valid_ll.mean()),
        "test_sequences": len(test_ll),
        "test_mean_length": float(np.mean([len(q) for q in splits["test"]])),
        "offset_mean": np.asarray(mean).tolist(), "offset_std": np.asarray(std).tolist(),
        **info,
    }
    # Fig. 5: a randomly picked validation line, segments of z^2 vs pen-ups.
    pick = int(np.random.default_rng(s["seed"]).integers(len(splits["validation"])))
    line = splits["validation"][pick]
    raw_line = denormalize_offsets(line, mean, std)
    segmentations = {"pen-up": line[:, 2]}
    if model.is_hierarchical:
        results["boundaries"] = report.boundary_agreement(
            [model.boundaries(model.read(seq)[1]) for seq in splits["test"]],
            references["test"])
        z = model.boundaries(model.read(line)[1])
        segmentations["z^2"] = z[:, 1]
    results["fig5_png"] = plot_segments(os.path.join(out_dir, "fig5_segments.png"),
                                        raw_line, segmentations)
    if keras.backend.backend() == "tensorflow":
        # The step SavedModel, and the samples drawn from it as a user would.
        step_dir = export_handwriting_step_model(model, os.path.join(out_dir, "step_model"),
                                                 mean, std)
        import tensorflow as tf

        lines = generate_strokes(tf.saved_model.load(step_dir), s["sample_steps"],
                                 s["num_samples"], bias=s["sample_bias"], seed=s["seed"])
        results["step_model"] = step_dir
    else:  # a SavedModel is TensorFlow's: the samples come from the model itself
        lines = model.draw(s["sample_steps"], s["num_samples"], offsets=(mean, std),
                           sampler={"bias": s["sample_bias"], "seed": s["seed"]})
        results["step_model"] = None
    results["backend"] = keras.backend.backend()
    results["samples_png"] = plot_handwriting(
        os.path.join(out_dir, "samples.png"), lines,
        [f"sample {i + 1} (bias {s['sample_bias']})" for i in range(len(lines))])
    # A finished run trained on counts the seconds of its results too.
    results["wall_seconds"] = RunClock.of_run(out_dir, started).total()
    write_results(out_dir, results)
    print("\n".join(report.summary_lines(results)))
    return results


def finished_results(s):
    """The results.json of a run in --output_dir that has the --max_epochs
    these flags ask for: printed and returned as saved, nothing rewritten;
    None otherwise."""
    from hmkeras.analysis.handwriting_report import summary_lines
    from hmkeras.training import run_directory

    results = run_directory.finished_results(s["output_dir"], s["max_epochs"])
    if results is not None:
        print(f"{s['output_dir']} holds a finished run ({results['epochs']} epochs); its "
              "results, unchanged (a larger --max_epochs trains on):")
        print("\n".join(summary_lines(results)))
    return results


def run_from_flags():
    """The command: the settings from the flags, then the run."""
    run(resolve_settings(FLAGS))


main = absl_main(run_from_flags)

if __name__ == "__main__":
    run_script(main)
