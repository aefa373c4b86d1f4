r"""Recovery after surprising characters of two char LMs (Krause et al. Fig. 3).

Krause et al. (2017, Section 4.2) take the 10% of test characters with the
largest average loss of two models and report each model's mean loss on
those characters and one to four steps after them (mLSTM 6.27 then 2.26,
2.04, 1.61, 1.51 bits/char; stacked LSTM 6.29 then 2.48, 2.25, 1.79, 1.67):
the faster the loss falls back, the better the model recovers from a
surprise.  This script does the same for two runs of `examples/ptb_char.py`
(e.g. an HM-LSTM and an LSTM trained on the same data):

1. each model is restored from its step export (`<run>/step_model`, see
   below) and scored on the same test text at batch 1 with the state
   carried over the whole text (`hmkeras.analysis.evaluation.evaluate_char_model`
   with `return_losses=True`: one loss per character, in bits);
2. `hmkeras.analysis.surprisal_analysis.surprisal_recovery` ranks the characters by
   the mean loss of both models and averages each model's loss at the
   surprising characters and `1..--max_offset` steps after;
3. the table is printed, the plot (`plot_surprisal_recovery`) written to
   `--output` and the figures to `--output_json` (default: `--output` with
   `.json`).

Which weights: the step export.  `examples/ptb_char.py` writes it last, from
the weights it reported the test BPC of (the best validation checkpoint),
and it holds the vocabulary and the model configuration as well as every
variable (the HM slope included), so one self-contained directory
identifies the model; `checkpoints/` may hold a later, unselected state or
belong to an interrupted run.  The network is rebuilt from the exported
configuration, the exported variables are assigned to it in order (count
and shapes checked) and the rebuilt network must reproduce the exported
step function on a probe sequence before it is used; scoring then runs the
chunked batch-1 evaluation instead of one SavedModel call per character.

The test text is loaded from each run's `settings.json` (dataset, seed,
synthetic sizes, data directories; `--data_dir` / `--manual_dir` override
the directories) and checked against the `test_text_sha256` in its
`results.json`.  Both runs must use the same dataset, test text and
vocabulary, else a `ValueError` (`FlagError`) says what differs. From the
command line, such errors and bad flag values are one line on stderr.

Example:

    python examples/ptb_char.py --preset=quick --output_dir=runs/quick_hmlstm
    python examples/ptb_char.py --preset=quick --cell=lstm \
        --output_dir=runs/quick_lstm
    python examples/compare_surprisal.py --run_a=runs/quick_hmlstm \
        --run_b=runs/quick_lstm --labels=HM-LSTM,LSTM \
        --output=runs/surprisal.png
"""

import json
import math
import os

from absl import flags
import numpy as np

from command_line import FlagError  # examples/command_line.py
from command_line import absl_main
from command_line import run_script
from run_directory import check_run_kind
from text_file_settings import text_file_parts  # examples/text_file_settings.py

# TensorFlow (imported lazily) reads this when it loads: no C++ start-up
# chatter unless the user asks for it.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REFERENCES = ("mean", "a", "b")

FLAGS = flags.FLAGS
flags.DEFINE_string("run_a", None, "Output dir of examples/ptb_char.py, model A.")
flags.DEFINE_string("run_b", None, "Output dir of examples/ptb_char.py, model B.")
flags.DEFINE_string("model_a", None, "Step model dir of A (default: "
                    "<run_a>/step_model; its parent is the run if --run_a is unset).")
flags.DEFINE_string("model_b", None, "Step model dir of B (as --model_a).")
flags.DEFINE_list("labels", None, "Two names for the table and plot "
                  "(default: the cells).")
flags.DEFINE_float("fraction", 0.1, "Share of characters taken as surprising.")
flags.DEFINE_integer("max_offset", 4, "Steps after a surprising character.",
                     lower_bound=1)
flags.DEFINE_integer("max_chars", 0, "Score only the first N test characters "
                     "(0: all; else at least 2).")
flags.DEFINE_enum("reference", "mean", list(REFERENCES), "Rank characters by "
                  "the mean loss of both models (Krause et al.) or by A's / B's.")
flags.DEFINE_integer("seq_len", 100, "Chunk length of the batch-1 pass.", lower_bound=1)
flags.DEFINE_string("data_dir", None, "Override the runs' TFDS data dir.")
flags.DEFINE_string("manual_dir", None, "Override the runs' raw-corpus dir.")
flags.DEFINE_string("output", None, "PNG of the plot (default: "
                    "surprisal_vs_<run B's name>.png in run A's directory).")
flags.DEFINE_string("output_json", None, "JSON of the figures (default: "
                    "--output with .json).")
flags.DEFINE_integer("verbose", 1, "1: progress bars of the scoring passes.",
                     lower_bound=0, upper_bound=2)
flags.register_validator("fraction", lambda v: math.isfinite(v) and 0 < v <= 1,
                         message="must be a number in (0, 1]")
flags.register_validator("max_chars", lambda v: v == 0 or v >= 2,
                         message="must be 0 (all) or at least 2")
flags.register_validator("labels", lambda v: v is None or len(v) == 2,
                         message="must name two models, e.g. HM-LSTM,LSTM")
for _side in ("a", "b"):
    flags.register_multi_flags_validator(
        [f"run_{_side}", f"model_{_side}"],
        lambda values, side=_side: bool(values[f"run_{side}"] or values[f"model_{side}"]),
        message=f"give --run_{_side} (a run directory of examples/ptb_char.py) or "
                f"--model_{_side} (its step_model directory)")


# ----------------------------------------------------------------------------
# Runs
# ----------------------------------------------------------------------------
def resolve_run(name, run_dir, model_dir):
    """`(run_dir, model_dir)` of model `name` ("a" or "b") from the flags."""
    if not run_dir and not model_dir:
        raise FlagError(f"Give --run_{name} (a run dir) or --model_{name} "
                        "(a step_model dir).")
    given = f"--model_{name}={model_dir!r}" if model_dir else f"--run_{name}={run_dir!r}"
    check_run_kind(model_dir or run_dir, given.split("=")[0], ["char_lm"])
    if not model_dir:
        model_dir = os.path.join(run_dir, "step_model")
    if not run_dir:
        run_dir = os.path.dirname(os.path.normpath(model_dir))
    if not os.path.exists(os.path.join(model_dir, "saved_model.pb")):
        raise FlagError(f"{given}: no step export at {model_dir!r} (no "
                        "saved_model.pb); did the run finish?")
    if not os.path.exists(os.path.join(run_dir, "settings.json")):
        raise FlagError(f"--run_{name}={run_dir!r} has no settings.json (the "
                        "run directory of examples/ptb_char.py is needed for "
                        "its test text).")
    return run_dir, model_dir


def _read_json(path):
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def load_step_model(model_dir):
    """`(language_model, vocabulary)` restored from a step export.

    Rebuilds `CharLanguageModel` from the exported configuration, assigns the
    exported variables in order and checks that it reproduces the exported
    `step` on a probe sequence.

    Example:

    >>> import tempfile
    >>> from hmkeras.models.char_language_model import CharLanguageModel
    >>> from hmkeras.data import CharVocabulary
    >>> from hmkeras.training.step_export import export_step_model
    >>> vocab = CharVocabulary.from_text("ab c")
    >>> lm = CharLanguageModel(vocab_size=4, cell="lstm", units=4,
    ...                        embedding_dim=3, output_units=4)
    >>> path = export_step_model(lm, vocab, tempfile.mkdtemp())
    >>> restored, restored_vocab = load_step_model(path)
    >>> restored_vocab == vocab, restored.config == lm.config
    (True, True)
    """
    import tensorflow as tf

    from hmkeras.models.char_language_model import CharLanguageModel
    from hmkeras.models.char_language_model import CharLanguageModelConfig
    from hmkeras.data import CharVocabulary

    loaded = tf.saved_model.load(model_dir)
    info = loaded.signatures["info"]()
    vocab = CharVocabulary.from_json(info["vocabulary_json"].numpy().decode("utf-8"))
    config = CharLanguageModelConfig.from_json(info["config_json"].numpy().decode("utf-8"))
    lm = CharLanguageModel(config)
    saved, target = list(loaded.variables_list), list(lm.network.variables)
    shapes = [tuple(v.shape) for v in saved]
    if shapes != [tuple(v.shape) for v in target]:
        raise FlagError(
            f"The step export {model_dir!r} does not fit the network rebuilt from "
            f"its configuration: {len(saved)} variables of shapes {shapes}, the "
            f"rebuilt network has {[tuple(v.shape) for v in target]}."
        )
    for variable, value in zip(target, saved):
        variable.assign(value)
    _check_reproduces_step(loaded, lm, model_dir)
    return lm, vocab


def _check_reproduces_step(loaded, lm, model_dir, length=6, atol=1e-4):
    """Raises unless `lm` gives the exported step's probabilities."""
    import tensorflow as tf

    tokens = np.arange(length, dtype=np.int32) % lm.config.vocab_size
    logits, *_ = lm.network([tokens[None], *lm.zero_state(1)], training=False)
    expected = tf.nn.softmax(tf.cast(logits, tf.float32))[0].numpy()
    state = loaded.signatures["zero_state"](batch_size=tf.constant(1))
    for t, token in enumerate(tokens):
        out = loaded.signatures["step"](token_ids=tf.constant([token]), **state)
        state = {k: v for k, v in out.items() if k.startswith("state_")}
        error = np.abs(out["probabilities"].numpy()[0] - expected[t]).max()
        if error > atol:
            raise FlagError(
                f"The network rebuilt from {model_dir!r} differs from the exported "
                f"step at probe step {t} (max |dp| = {error:.3g}); the export is "
                "from an incompatible hmkeras version."
            )


def _data_key(settings, data_dir, manual_dir):
    keys = ("dataset", "seed", "synthetic_train_chars", "synthetic_valid_chars",
            "synthetic_test_chars")
    return (tuple(settings.get(k) for k in keys),
            data_dir or settings.get("data_dir"), manual_dir or settings.get("manual_dir"))


def load_test_text(settings, data_dir=None, manual_dir=None):
    """The test text a run of `examples/ptb_char.py` was evaluated on: its
    test split, and for an --unsegmented run the utterances without their
    spaces (what the model read)."""
    text = _load_test_split(settings, data_dir, manual_dir)
    if not settings.get("unsegmented"):
        return text
    from hmkeras.data.utterances import Utterances

    try:
        return Utterances.from_text(text, name="the run's test split").text
    except ValueError as error:
        raise FlagError(str(error)) from None


def _load_test_split(settings, data_dir=None, manual_dir=None):
    """The test split of a run's corpus, as it is on disk."""
    from hmkeras import data

    sizes = ("train_chars", "valid_chars", "test_chars")
    if settings["dataset"] == "text_file":
        names = ("valid_fraction", "test_fraction")
        try:
            return data.read_text_splits(**text_file_parts(settings),
                                         **{name: settings.get(name) for name in names
                                            if settings.get(name) is not None},
                                         max_chars=settings.get("text_chars") or None)[2]
        except (ValueError, OSError) as error:
            raise FlagError(f"The run's --dataset=text_file: {error}") from None
    try:
        return data.load_char_corpus(
            settings["dataset"], "test", data_dir=data_dir or settings.get("data_dir"),
            manual_dir=manual_dir or settings.get("manual_dir"),
            allow_download=settings.get("download", True), seed=settings["seed"],
            synthetic_sizes={k: settings[f"synthetic_{k}"] for k in sizes},
        )
    except (data.DatasetFilesNotFoundError, data.DatasetVerificationError) as error:
        # The library names its arguments; say it in this script's flags.
        message = str(error)
        for api, words in (
            ("allow_download=False", "the run was made with --nodownload"),
            ("load_char_corpus(..., manual_dir=DIR) or "
             "tfds.download.DownloadConfig(manual_dir=DIR)", "--manual_dir=DIR"),
        ):
            message = message.replace(api, words)
        raise FlagError(message.split("\nNo download is needed")[0]) from None


class Run:
    """One side of the comparison: settings, model, vocabulary, test text."""

    def __init__(self, name, run_dir, model_dir):
        self.name = name
        self.run_dir, self.model_dir = resolve_run(name, run_dir, model_dir)
        self.settings = _read_json(os.path.join(self.run_dir, "settings.json"))
        self.results = _read_json(os.path.join(self.run_dir, "results.json"))
        self.language_model, self.vocabulary = load_step_model(self.model_dir)
        self.text = None

    @property
    def flag(self):
        return f"--run_{self.name}={self.run_dir!r}"


def load_texts(run_a, run_b, data_dir=None, manual_dir=None):
    """Sets `run.text` of both runs (loaded once if their data settings agree)."""
    key_a = _data_key(run_a.settings, data_dir, manual_dir)
    run_a.text = load_test_text(run_a.settings, data_dir, manual_dir)
    if _data_key(run_b.settings, data_dir, manual_dir) == key_a:
        run_b.text = run_a.text
    else:
        run_b.text = load_test_text(run_b.settings, data_dir, manual_dir)


def check_same_test(run_a, run_b):
    """Raises a `ValueError` unless both runs share dataset, vocabulary and
    (once loaded, `load_texts`) test text."""
    dataset_a, dataset_b = run_a.settings["dataset"], run_b.settings["dataset"]
    if dataset_a != dataset_b:
        raise FlagError(
            f"{run_a.flag} and {run_b.flag} use different datasets "
            f"({dataset_a!r} and {dataset_b!r}); the comparison needs both models "
            "scored on the same test text."
        )
    if run_a.vocabulary != run_b.vocabulary:
        raise FlagError(
            f"{run_a.flag} and {run_b.flag} have different vocabularies "
            f"({len(run_a.vocabulary)} and {len(run_b.vocabulary)} symbols); the "
            "per-character losses must be of the same symbols."
        )
    if run_a.text is None or run_b.text is None:
        return
    if run_a.text != run_b.text:
        raise FlagError(
            f"{run_a.flag} and {run_b.flag} have different {dataset_a!r} test texts "
            f"({len(run_a.text):,} and {len(run_b.text):,} characters; for the "
            "synthetic corpus the seed and --synthetic_*_chars must agree)."
        )
    if len(run_a.text) < 2:
        raise FlagError(f"The test text of {run_a.flag} is too short to score.")


def _check_reproduces_run(run, evaluation):
    """Raises unless the whole-text BPC is the one the run reported."""
    reported = run.results.get("test_bpc")
    if (reported is None or run.settings.get("test_batch_size", 1) != 1
            or evaluation.num_symbols != len(run.text)):
        return
    if not math.isclose(evaluation.bpc, reported, rel_tol=1e-3):
        raise FlagError(
            f"{run.flag}: the restored model scores {evaluation.bpc:.5f} bits/char "
            f"on the test text loaded now, but the run reported {reported:.5f} "
            "(results.json test_bpc): the data files differ from the run's "
            "(check --data_dir / --manual_dir) or the step export is not the "
            "model the run tested."
        )


# ----------------------------------------------------------------------------
# Comparison
# ----------------------------------------------------------------------------
def compare(run_a, run_b, fraction=0.1, max_offset=4, max_chars=0,
            reference="mean", seq_len=100, verbose=1):
    """Scores both runs' models on the shared test text; returns the recovery.

    Args:
        run_a, run_b: `Run`s whose texts are loaded (`load_texts`).
        fraction, max_offset, reference: See `surprisal_recovery`.
        max_chars: Score only the first `max_chars` characters (0: all).
        seq_len: Chunk length of the batch-1 pass.
        verbose: Progress bars of `evaluate_char_model`.

    Returns:
        `(recovery, evaluations)`: a `SurprisalRecovery` and the two
        `EvaluationResult`s (with `losses`).
    """
    from hmkeras.analysis.evaluation import evaluate_char_model
    from hmkeras.analysis.surprisal_analysis import surprisal_recovery

    check_same_test(run_a, run_b)
    if max_chars < 0 or max_chars == 1:
        raise FlagError(f"--max_chars must be 0 (all) or at least 2. Received: "
                        f"--max_chars={max_chars!r}")
    if reference not in REFERENCES:
        raise FlagError(f"--reference must be one of {list(REFERENCES)}. "
                        f"Received: --reference={reference!r}")
    ids = run_a.vocabulary.encode(run_a.text)
    if max_chars:
        ids = ids[:max_chars]
    evaluations = []
    for run in (run_a, run_b):
        evaluation = evaluate_char_model(run.language_model, ids, seq_len=seq_len,
                                         return_losses=True, verbose=verbose)
        _check_reproduces_run(run, evaluation)
        evaluations.append(evaluation)
    # Krause et al. Section 4.2: top `fraction` by the mean of both losses.
    recovery = surprisal_recovery(evaluations[0].losses, evaluations[1].losses,
                                  fraction=fraction, max_offset=max_offset,
                                  reference=reference)
    return recovery, evaluations


def _nan_to_none(values):
    return [None if not math.isfinite(v) else float(v) for v in values]


def figures(run_a, run_b, labels, recovery, evaluations, fraction, reference):
    """The JSON-able figures of the comparison."""
    models = []
    for run, label, loss, evaluation in zip(
            (run_a, run_b), labels, (recovery.loss_a, recovery.loss_b), evaluations):
        models.append({
            "label": label, "run_dir": run.run_dir, "step_model": run.model_dir,
            "cell": run.language_model.config.cell,
            "bpc": evaluation.bpc,
            "loss_after_surprise": _nan_to_none(loss),
        })
    return {
        "paper": "Krause et al. 2017, Section 4.2 / Fig. 3",
        "dataset": run_a.settings["dataset"],
        "num_chars": evaluations[0].num_symbols,
        "num_targets": evaluations[0].num_targets,
        "fraction": fraction, "reference": reference,
        "num_surprising": int(len(recovery.positions)),
        "offsets": [int(k) for k in recovery.offsets],
        "counts": [int(c) for c in recovery.counts],
        "models": models,
    }


def format_table(result):
    """The table of `figures(...)`: mean loss at / after surprising chars."""
    offsets = result["offsets"]
    head = ["surprising" if k == 0 else f"+{k}" for k in offsets]
    width = max(12, *(len(m["label"]) + 1 for m in result["models"]))
    ranked_by = ("mean loss of both models" if result["reference"] == "mean"
                 else f"loss of model {result['reference'].upper()}")
    lines = [
        f"Recovery after surprising characters (Krause et al. Fig. 3): the "
        f"{result['num_surprising']:,} characters ({result['fraction']:.0%}) of "
        f"{result['num_targets']:,} with the largest {ranked_by}, "
        f"{result['dataset']} test; bits/char",
        f"{'model':<{width}}{'all':>8}" + "".join(f"{h:>12}" for h in head),
    ]
    for m in result["models"]:
        cells = "".join(f"{'-' if v is None else format(v, '.4f'):>12}"
                        for v in m["loss_after_surprise"])
        lines.append(f"{m['label']:<{width}}{m['bpc']:>8.4f}{cells}")
    return "\n".join(lines)


def default_labels(run_a, run_b):
    """The cells' names, made distinct when both runs use the same cell."""
    a, b = run_a.language_model.config.cell, run_b.language_model.config.cell
    return [a, b] if a != b else [f"{a} (A)", f"{b} (B)"]


def compare_from_flags():
    """The command: compare, print, plot and write the JSON."""
    for side in ("a", "b"):  # the directories, before TensorFlow loads
        resolve_run(side, FLAGS[f"run_{side}"].value, FLAGS[f"model_{side}"].value)
    from hmkeras.analysis.surprisal_analysis import plot_surprisal_recovery

    run_a = Run("a", FLAGS.run_a, FLAGS.model_a)
    run_b = Run("b", FLAGS.run_b, FLAGS.model_b)
    check_same_test(run_a, run_b)  # before loading any text
    load_texts(run_a, run_b, FLAGS.data_dir, FLAGS.manual_dir)
    labels = FLAGS.labels or default_labels(run_a, run_b)
    recovery, evaluations = compare(
        run_a, run_b, fraction=FLAGS.fraction, max_offset=FLAGS.max_offset,
        max_chars=FLAGS.max_chars, reference=FLAGS.reference,
        seq_len=FLAGS.seq_len, verbose=FLAGS.verbose)
    result = figures(run_a, run_b, labels, recovery, evaluations,
                     FLAGS.fraction, FLAGS.reference)
    print(format_table(result))
    output = FLAGS.output or default_output(run_a, run_b)
    output_json = FLAGS.output_json or os.path.splitext(output)[0] + ".json"
    for path in (output, output_json):
        if os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
    plot_surprisal_recovery(
        output, recovery, labels=labels,
        title=f"Recovery after surprising characters ({result['dataset']})")
    result["png"] = output
    with open(output_json, "w") as f:
        json.dump(result, f, indent=2)
    print(f"wrote {output} and {output_json}")


def default_output(run_a, run_b):
    """`surprisal_vs_<run B's directory name>.png` in run A's directory."""
    name = os.path.basename(os.path.normpath(run_b.run_dir))
    return os.path.join(run_a.run_dir, f"surprisal_vs_{name}.png")


main = absl_main(compare_from_flags)

if __name__ == "__main__":
    run_script(main)
