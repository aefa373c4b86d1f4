r"""Character-level language modelling with the HM-LSTM (Chung et al. Sec. 4.1).

Trains `embedding -> RNN(cell) -> output module -> softmax` with truncated
BPTT (windows of `--seq_len`, the RNN state, boundaries included, carried
from batch to batch and reset at every epoch start), Adam with gradient-norm
clipping, the learning rate divided by 50 when the validation BPC stops
improving, early stopping and slope annealing `min(5, 1 + 0.04 * epoch)`.
Then it evaluates the test set the way Kadar et al. do (batch 1, state
carried over the whole text in chunks of 100), scores the boundaries of
every layer against the word boundaries (placed on the separator and on the
last character of each word; the better alignment is the headline, both are
in results.json) and, on the synthetic corpus, z^2 against the phrase ends,
draws the segmentation of a
validation excerpt (Chung et al. Fig. 3/4) and exports a stateless step
model for `examples/sample.py`.

Everything goes to `--output_dir` (default `runs/<preset>_<cell>` for a preset
on its own dataset, else with the dataset and a text file's stem too,
`default_output_dir`), nothing elsewhere: `run_kind.json` (which script
wrote the run),
`checkpoints/` (resumed automatically: weights, optimizer, slope, epoch, the
position inside the epoch and the carried RNN state), `logs/` (TensorBoard:
loss, BPC, validation BPC, learning rate, slope, per-layer z rates),
`segmentation.png`, `step_model/` (SavedModel), `vocabulary.json`,
`model_config.json`, `steps.jsonl` (per-step training BPC) and
`results.json` (with `word_level`: bits/char, bits/word and word perplexity,
Krause et al. Eq. 23, for `--dataset=wikitext2_raw`).

Word discovery (`--unsegmented`, the default for `--dataset=brent_phonemes`
and `brent_text`): every line is an utterance whose words are separated by
spaces; the model reads the lines without their spaces (a line end after
each), and the spaces are kept only as the gold words. The test lines
with the words the model found (z^1 of a hierarchical cell, the rises of
an LSTM's predictive entropy) go to `test_segmented.txt`, and
`results.json` gets `word_discovery`: boundary, token and lexicon scores
of the model beside the random, transitional-probability and (with
`--lstm_baseline`, the default) same-size LSTM baselines on the same lines
(`hmkeras.analysis.word_discovery_report`); the LSTM is a run of its own in
`lstm_baseline/`, and a finished run made with `--nolstm_baseline` gets it
when the same command is run again without that flag.

Examples:

    # The embedded synthetic corpus, small model (its time: README,
    # "Commands"); --tiny shrinks any preset to a smoke test of a few
    # seconds:
    python examples/ptb_char.py --preset=quick
    python examples/ptb_char.py --preset=quick --tiny --output_dir=/tmp/smoke
    python examples/ptb_char.py --preset=quick --cell=lstm
    # Chung et al.'s PTB setup (put ptb.char.*.txt in --manual_dir):
    python examples/ptb_char.py --preset=ptb --manual_dir=~/data/ptb
    # Kadar et al. Table 2 ablations, e.g. SimplerOut without top-down:
    python examples/ptb_char.py --preset=ptb --output=simple --top_down=false
    # Krause et al.'s mLSTM on enwik8 (GPU):
    python examples/ptb_char.py --preset=hutter_mlstm --manual_dir=~/data/enwik8
    # Your own UTF-8 text (the last 5% + 5% are validation and test; symbols
    # the training part lacks map to an unknown symbol; runs/quick_text_file_book_hmlstm):
    python examples/ptb_char.py --preset=quick --dataset=text_file --text_file=book.txt
    # Word discovery on Brent's phonemes (the files in --manual_dir), on
    # your own lines (train,valid,test files, or one file cut by lines;
    # up to 20 epochs, fewer when the validation figure stops improving):
    python examples/ptb_char.py --preset=brent --manual_dir=../shared/data/brent
    python examples/ptb_char.py --preset=quick --dataset=text_file \
        --text_file=train.txt,valid.txt,test.txt --unsegmented --max_epochs=20
    python examples/sample.py --model_dir=runs/quick_hmlstm/step_model
    # On JAX, every batch split over all local devices (GPUs, or here two
    # host CPU devices; --batch_size a multiple of their number):
    XLA_FLAGS=--xla_force_host_platform_device_count=2 KERAS_BACKEND=jax \
        python examples/ptb_char.py --preset=quick --data_parallel
    # Krause et al. Fig. 3, recovery after surprising characters:
    python examples/compare_surprisal.py --run_a=runs/quick_hmlstm \
        --run_b=runs/quick_lstm --output=runs/surprisal.png

Flags given on the command line override the preset's values. Rerunning
into the same --output_dir resumes that run (a finished one is reported,
nothing rewritten, unless a larger --max_epochs asks for more); flags that change the model
(`MODEL_FLAGS`: cell, sizes, data, batches, ...) are refused there with the
differences listed: choose a new --output_dir, or --overwrite to delete the
old run and start afresh. A bad flag value is one line on stderr, and so
is a non-finite training loss, which stops the run (naming the step and
the last good checkpoint, never overwritten by a NaN state).
"""

import contextlib
import os
import time

from absl import flags

from command_line import absl_main  # examples/command_line.py
from command_line import FlagError
from command_line import Settings
from command_line import run_script
from command_line import stop_if_non_finite
import char_lm_flags  # examples/char_lm_flags.py: presets, flags, corpora
from char_lm_flags import encode_texts
from char_lm_flags import load_texts
from char_lm_flags import resolve_settings
from char_lm_flags import unsegmented_texts
from run_directory import write_run_files

FLAGS = flags.FLAGS
# Test lines shown beside their gold words in an --unsegmented run's summary.
EXAMPLE_LINES = 5


def finished_results(s):
    """The results.json of a finished run in --output_dir that these flags
    ask no more training of (it stopped early, or has --max_epochs epochs),
    printed and returned as saved, nothing rewritten; None otherwise."""
    from hmkeras.analysis.char_lm_report import summary_lines
    from hmkeras.training import run_directory

    results = run_directory.finished_results(s["output_dir"], s["max_epochs"])
    if results is not None:
        print(f"{s['output_dir']} holds a finished run ({results.get('epochs')} epochs"
              f"{', stopped early' if results.get('stopped_early') else ''}); its "
              "results, unchanged (a larger --max_epochs trains on; --overwrite starts "
              "afresh):")
        print("\n".join(summary_lines(results)))
    return results


def _tfds_default_data_dir():
    return os.environ.get("TFDS_DATA_DIR") or os.path.join("~", "tensorflow_datasets")


def run(s):
    """The whole job; returns the results dict (also in results.json; a
    finished run's as saved, `finished_results`), or None when --max_steps
    interrupts it.

    First checks --output_dir against the flags
    (`char_lm_flags.prepare_output_dir`); a failed run leaves none of the
    empty directories it made (the output directory, TFDS' folders in the
    data directory).
    """
    from hmkeras.training.run_directory import removing_new_empty_dirs

    distribution = char_lm_flags.data_parallel_distribution(s)
    changed = char_lm_flags.prepare_output_dir(s, kind="char_lm")
    finished = finished_results(s)
    if finished is not None:
        return with_missing_baseline(s, finished)
    roots = [s["output_dir"]]
    if s["dataset"] not in ("synthetic", "text_file"):
        roots.append(s["data_dir"] or _tfds_default_data_dir())
    with removing_new_empty_dirs(roots):
        return _run(s, changed, distribution)


def _run(s, changed, distribution):
    started = time.time()
    import keras
    import tensorflow as tf

    from hmkeras.analysis import char_lm_report as report
    from hmkeras.analysis.evaluation import evaluate_char_model
    from hmkeras.data.char_splits import word_separators
    from hmkeras.models.char_language_model import CharLanguageModel
    from hmkeras.training import run_directory
    from hmkeras.training.step_export import export_step_model
    from hmkeras.training.truncated_bptt_run import TrainingSchedule
    from hmkeras.training.truncated_bptt_run import train_truncated_bptt

    texts, reference, info = load_texts(s)
    utterances = None
    if s["unsegmented"]:
        texts, utterances = unsegmented_texts(s, texts)
        if not utterances["test"].has_words:
            print("The test text has no spaces, so no gold words: its segmentation "
                  "is written to test_segmented.txt, unscored.")
    vocab, ids, unknown = encode_texts(s, texts)
    needed = s["batch_size"] * s["seq_len"] + 1
    if len(ids["train"]) < needed:
        raise FlagError(
            f"The training text has {len(ids['train']):,} symbols; --batch_size="
            f"{s['batch_size']} x --seq_len={s['seq_len']} needs at least {needed:,} "
            "(one batch and its last target). Use smaller batches or more text.")
    config = char_lm_flags.check_model_config(s, char_lm_flags.model_config(s, len(vocab)))
    write_run_files(s["output_dir"], config, s, vocabulary=vocab, kind="char_lm")
    tf.random.set_seed(s["seed"])
    # --data_parallel: the variables are made and trained in the
    # distribution's scope; the evaluation below runs outside it.
    devices = distribution.device_mesh.devices.size if distribution else None
    with distribution.scope() if distribution else contextlib.nullcontext():
        lm = CharLanguageModel(config)
        print(f"{s['cell']}: {lm.count_params():,} trainable parameters; "
              f"vocabulary {len(vocab)}; train {len(ids['train']):,} chars.")
        if distribution:
            print(f"Data parallel: every batch split over {devices} devices "
                  "(keras.distribution.DataParallel).")
        clock = run_directory.RunClock.of_run(s["output_dir"], started)
        progress = train_truncated_bptt(
            lm, ids["train"], TrainingSchedule.from_settings(s), s["output_dir"],
            validate=lambda lm: report.validation_logs(
                lm, ids["validation"], s["seq_len"], s["valid_batch_size"], s["zrate_chars"]),
            changed=changed, clock=clock)
    stop_if_non_finite(progress)
    if progress.get("interrupted"):
        return None
    print(f"Test set: batch {s['test_batch_size']}, state carried over "
          f"{len(ids['test']):,} characters (Kadar et al.).")
    batch1 = s["test_batch_size"] == 1
    references = (reference("test", texts["test"])
                  if batch1 and lm.is_hierarchical and utterances is None else None)
    test = evaluate_char_model(
        lm, ids["test"], batch_size=s["test_batch_size"], verbose=s["verbose"],
        reference=references["words"] if references else None,
        keep_boundaries=lm.is_hierarchical and batch1,
    )
    results = {
        "cell": s["cell"], "dataset": s["dataset"], "preset": s.get("preset"),
        "parameters": lm.count_params(), "epochs": progress["epoch"],
        "steps": None, "test_bpc": test.bpc, "test_targets": test.num_targets,
        "test_symbols": len(ids["test"]),
        "best_val_bpc": progress["best_val_bpc"], **info,
        "backend": keras.backend.backend(),
        "data_parallel_devices": devices,
    }
    if s["dataset"] == "text_file":
        results["unknown_symbols"] = unknown
    if s["dataset"] == "wikitext2_raw":
        results["word_level"] = report.word_level_results(test, texts["test"])
    if lm.is_hierarchical:
        results.update(z_rates=test.z_rates, z_ratio=test.z_ratio,
                       boundary_scores=test.boundary_scores)
        if references is not None:
            results.update(report.more_boundary_scores(test.boundaries, references))
            results.update(report.segment_figures(
                test.boundaries, report.as_text(texts["test"]),
                word_separators(s["dataset"]), s["excerpt_chars"]))
    if utterances is not None:
        results["word_discovery"] = discover_words(s, lm, vocab, utterances, test.boundaries)
    results["segmentation_png"] = report.plot_excerpt(
        lm, vocab, texts["validation"][: s["excerpt_chars"]],
        os.path.join(s["output_dir"], "segmentation.png"), s["cell"])
    results["step_model"] = None
    if keras.backend.backend() == "tensorflow":
        results["step_model"] = export_step_model(
            lm, vocab, os.path.join(s["output_dir"], "step_model"))
    else:
        print("The step model is a TensorFlow SavedModel: exported on the TensorFlow "
              f"backend only, not on {keras.backend.backend()}.")
    with open(os.path.join(s["output_dir"], "steps.jsonl")) as f:
        results["steps"] = sum(1 for _ in f)
    results["wall_seconds"] = clock.total()  # every process that trained it
    results["stopped_early"] = progress["done"]
    run_directory.write_results(s["output_dir"], results)
    print("\n".join(report.summary_lines(results)))
    return results


def discover_words(s, lm, vocab, utterances, boundaries):
    """The `word_discovery` section of an --unsegmented run's results: every
    segmenter's words on the test lines, scored
    (`hmkeras.analysis.word_discovery_report`), with --lstm_baseline the
    words of a stacked LSTM of the same size trained on the same text
    (`lstm` and `lstm_surprisal`, its entropy's and its surprisal signal's
    rises: its own run in <output_dir>/lstm_baseline, resumed like any
    run); the model's words go to test_segmented.txt."""
    from hmkeras.analysis import word_discovery_report

    found, segmentations = word_discovery_report.word_discovery_results(
        lm, vocab, utterances, boundaries, seed=s["seed"])
    found["segmented_file"] = word_discovery_report.write_segmented(
        os.path.join(s["output_dir"], "test_segmented.txt"), segmentations[found["primary"]])
    found["examples"] = [
        {"gold": gold, "found": line} for gold, line in
        zip(utterances["test"].segmented[:EXAMPLE_LINES],
            segmentations[found["primary"]])]
    if s["lstm_baseline"]:
        found.update(lstm_baseline(s))
    return found


def lstm_baseline(s):
    """`{"lstm": ..., "lstm_surprisal": ...}`: the words and test bits of the
    same-size LSTM trained on the same text (its own run in
    <output_dir>/lstm_baseline, resumed like any run); empty when --max_steps
    interrupts it (rerun to finish)."""
    lstm = run(Settings(s, cell="lstm", lstm_baseline=False, output_dir=os.path.join(
        s["output_dir"], "lstm_baseline"), **char_lm_flags.without_hierarchy(FLAGS)))
    if lstm is None:
        return {}
    found = {"lstm": dict(lstm["word_discovery"]["entropy"], test_bpc=lstm["test_bpc"],
                          parameters=lstm["parameters"])}
    if "surprisal" in lstm["word_discovery"]:  # not in a run finished before it was
        found["lstm_surprisal"] = lstm["word_discovery"]["surprisal"]
    return found


def with_missing_baseline(s, results):
    """A finished --unsegmented run's results with the LSTM baseline added
    when the flags ask for it and the run was made without it
    (--nolstm_baseline): the baseline is trained (or its run in
    <output_dir>/lstm_baseline resumed) and results.json rewritten with it."""
    from hmkeras.analysis.char_lm_report import summary_lines
    from hmkeras.training import run_directory

    found = results.get("word_discovery")
    if not (s["lstm_baseline"] and found is not None and "lstm" not in found):
        return results
    print("The run was made without its LSTM baseline (--nolstm_baseline): adding it.")
    baseline = lstm_baseline(s)
    if not baseline:
        return results
    results = dict(results, word_discovery=dict(found, **baseline))
    run_directory.write_results(s["output_dir"], results)
    print("\n".join(summary_lines(results)))
    return results


def run_from_flags():
    """The command: the settings from the flags (the preset applied), then
    the run; a `FlagError` is one line naming the flags."""
    settings = resolve_settings(FLAGS)
    settings["preset"] = FLAGS.preset
    run(settings)


main = absl_main(run_from_flags)

if __name__ == "__main__":
    run_script(main)
