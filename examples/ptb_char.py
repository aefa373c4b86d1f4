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

Examples:

    # The embedded synthetic corpus, small model (its time: see README.md);
    # --tiny shrinks any preset to a smoke test of a few seconds:
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
    python examples/sample.py --model_dir=runs/quick_hmlstm/step_model
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
import json
import math
import os
import shutil
import time

from absl import flags
import numpy as np

from command_line import FlagError  # examples/command_line.py
from command_line import all_finite
from command_line import non_finite_stop
from command_line import absl_main
from command_line import run_script
from run_directory import check_run_kind
from run_directory import write_run_files

# TensorFlow (imported lazily, below) reads this when it loads: no C++
# start-up chatter unless the user asks for it.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# Presets: values for flags; explicit command-line flags win.
PRESETS = {
    "none": {},
    "quick": dict(
        dataset="synthetic", units=128, num_layers=3, embedding_dim=32,
        output_units=128, batch_size=32, seq_len=100, learning_rate=0.003,
        max_epochs=6, synthetic_train_chars=400_000, synthetic_valid_chars=10_000,
        synthetic_test_chars=20_000, valid_batch_size=8,
        layer_norm=True,
    ),
    "ptb": dict(
        dataset="ptb_char", units=512, num_layers=3, embedding_dim=128,
        output_units=512, batch_size=64, seq_len=100, learning_rate=0.002,
        layer_norm=True, max_epochs=500,
    ),
    "hutter_mlstm": dict(
        dataset="enwik8", cell="mlstm", units=1900, embedding_dim=400,
        output="none", weight_norm=True, dropout=0.2, recurrent_dropout=0.2,
        batch_size=128, seq_len=200, learning_rate=0.001, lr_schedule=False,
        slope_schedule=False, max_epochs=50,
    ),
}
# `--tiny` shrinks whatever preset is chosen (for tests and smoke runs).
TINY = dict(
    units=16, embedding_dim=8, output_units=16, batch_size=4, seq_len=20,
    max_epochs=1, synthetic_train_chars=3_000, synthetic_valid_chars=800,
    synthetic_test_chars=800, valid_batch_size=2, zrate_chars=400,
    excerpt_chars=120, multiplicative_units=0, text_chars=3_000,
)
DATASETS = ("synthetic", "ptb_char", "text8", "enwik8", "wikitext2_raw", "text_file")
# The choices of hmkeras.models.char_language_model (CELLS, OUTPUTS,
# BOUNDARY_MODES), spelled out so that flags are checked before TensorFlow loads.
CELLS = ("hmlstm", "hmrnn", "lstm", "mlstm")
OUTPUTS = ("gated", "simple", "none")
BOUNDARY_MODES = ("step", "sample", "soft")
# Flags of --dataset=text_file (the arguments of hmkeras.data.read_text_splits),
# and all the flags that apply to it only.
TEXT_FILE_FLAGS = ("text_file", "valid_file", "test_file", "valid_fraction", "test_fraction")
TEXT_FILE_ONLY_FLAGS = TEXT_FILE_FLAGS + ("vocabulary", "text_chars")
VOCABULARIES = ("unknown", "strict")

FLAGS = flags.FLAGS
_FLAGS_BEFORE = set(FLAGS)
flags.DEFINE_enum("preset", "none", list(PRESETS), "A set of flag values (PRESETS); "
                  "flags given explicitly win.")
flags.DEFINE_bool("tiny", False, "Shrink the model and the data (tests).")
flags.DEFINE_enum("dataset", "synthetic", list(DATASETS), "The corpus.")
flags.DEFINE_string("data_dir", None, "TFDS data directory.")
flags.DEFINE_string("manual_dir", None, "Directory with the raw corpus files.")
flags.DEFINE_bool("download", True, "Let TFDS builders download missing files.")
flags.DEFINE_string("output_dir", None, "Default: runs/<preset>_<cell>, with the "
                    "dataset (and a text file's stem) when not the preset's own.")
flags.DEFINE_bool("overwrite", False, "Delete the run in --output_dir (if any) and "
                  "start afresh; without it a rerun resumes that run.")
flags.DEFINE_integer("seed", 0, "Seed of the initialization and the synthetic corpus.",
                     lower_bound=0)
flags.DEFINE_integer("synthetic_train_chars", 1_000_000, "Synthetic corpus sizes.",
                     lower_bound=1)
flags.DEFINE_integer("synthetic_valid_chars", 50_000, "", lower_bound=1)
flags.DEFINE_integer("synthetic_test_chars", 50_000, "", lower_bound=1)
flags.DEFINE_string("text_file", None, "--dataset=text_file: a UTF-8 text file to train on.")
flags.DEFINE_string("valid_file", None, "Validation text file (default: cut from --text_file).")
flags.DEFINE_string("test_file", None, "Test text file (default: cut from --text_file).")
flags.DEFINE_float("valid_fraction", 0.05, "Share of --text_file for validation, "
                   "without --valid_file (after the training part).")
flags.DEFINE_float("test_fraction", 0.05, "Share of --text_file for the test, "
                   "without --test_file (the end of the file).")
flags.DEFINE_enum("vocabulary", "unknown", list(VOCABULARIES), "--dataset=text_file: "
                  "unknown: validation / test symbols the training text lacks map to "
                  "an unknown-symbol entry (counted in the results); strict: refuse them.")
flags.DEFINE_integer("text_chars", 0, "--dataset=text_file: use only the first N "
                     "characters of --text_file (0: all; --tiny: 3,000).", lower_bound=0)
# Model.
flags.DEFINE_enum("cell", "hmlstm", list(CELLS), "The recurrent cell.")
flags.DEFINE_integer("units", 512, "Units of every recurrent layer.", lower_bound=1)
flags.DEFINE_integer("num_layers", 3, "Recurrent layers (hmlstm, hmrnn: at least 2; "
                     "mlstm: 1).", lower_bound=1)
flags.DEFINE_integer("embedding_dim", 128, "Input embedding size.", lower_bound=1)
flags.DEFINE_enum("output", "gated", list(OUTPUTS), "Output module: gated (Chung "
                  "Eq. 11-12), simple (Kadar SimplerOut) or none.")
flags.DEFINE_integer("output_units", 512, "Output embedding size.", lower_bound=1)
flags.DEFINE_enum("boundary_mode", "step", list(BOUNDARY_MODES), "Boundary detector: "
                  "hard step, Bernoulli sample or soft.")
flags.DEFINE_float("slope", 1.0, "Initial hard-sigmoid slope a.")
flags.DEFINE_bool("slope_schedule", True, "Anneal a = min(slope_max, slope + slope_rate * epoch).")
flags.DEFINE_float("slope_max", 5.0, "Largest annealed slope.")
flags.DEFINE_float("slope_rate", 0.04, "Slope increase per epoch.")
flags.DEFINE_bool("layer_norm", True, "Layer normalization in the HM cells (hmlstm, hmrnn); "
                  "--nolayer_norm for Kadar et al.'s non-LN rows.")
flags.DEFINE_float("boundary_bias", 0.0, "Initial bias of the boundary detectors (extension).")
flags.DEFINE_enum("boundary_prior", "rate", ["rate", "binomial", "none"],
                  "Boundary prior of the HM cells (hmkeras.BoundaryPrior, an extension): "
                  "rate, binomial, or none for the papers' model.")
flags.DEFINE_list("segment_lengths", None, "The prior's expected segment length of "
                  "z^1 .. z^{L-1}, in characters, e.g. 5,15 (default: 5, 3x longer per layer).")
flags.DEFINE_integer("monitor_interval", 100, "BoundaryMonitor: check the z rates "
                     "every N steps.", lower_bound=1)
flags.DEFINE_bool("stop_on_collapse", False, "BoundaryMonitor: stop when a boundary "
                  "layer collapses to 0 or 1.")
flags.DEFINE_bool("top_down", True, "Top-down connections (false: Kadar NoTopDown).")
flags.DEFINE_bool("no_top_down", False, "Same as --top_down=false.")
flags.DEFINE_bool("copy_last", False, "Kadar CopyLast variant of the top layer.")
flags.DEFINE_bool("weight_norm", False, "mLSTM weight normalization.")
flags.DEFINE_float("dropout", 0.0, "Variational dropout on the cell input (every cell).")
flags.DEFINE_float("recurrent_dropout", 0.0, "Variational dropout on the hidden state.")
flags.DEFINE_integer("multiplicative_units", 0, "mLSTM m_t size (0: units).",
                     lower_bound=0)
flags.DEFINE_float("l2", 0.0, "L2 weight penalty on every kernel.")
# Training.
flags.DEFINE_integer("batch_size", 64, "Rows of every training batch.", lower_bound=1)
flags.DEFINE_integer("seq_len", 100, "Truncated-BPTT window.", lower_bound=1)
flags.DEFINE_float("learning_rate", 0.002, "Adam learning rate.")
flags.DEFINE_float("clip_norm", 1.0, "Global gradient-norm clipping threshold.")
flags.DEFINE_bool("lr_schedule", True, "Divide the learning rate when validation stalls.")
flags.DEFINE_float("lr_divisor", 50.0, "Factor of the division (Chung et al.: 50).")
flags.DEFINE_integer("max_lr_divisions", 2, "Divisions before early stopping can stop.",
                     lower_bound=0)
flags.DEFINE_integer("patience", 2, "Epochs without improvement before stopping.",
                     lower_bound=1)
flags.DEFINE_integer("max_epochs", 100, "Upper bound of epochs.", lower_bound=1)
flags.DEFINE_integer("max_steps", 0, "Stop (interrupt) after this many steps in "
                     "total; rerun to resume. 0: no limit.", lower_bound=0)
flags.DEFINE_integer("save_every", 200, "Checkpoint every N steps (and every epoch).",
                     lower_bound=1)
flags.DEFINE_integer("valid_batch_size", 16, "Rows of the per-epoch validation pass.",
                     lower_bound=1)
flags.DEFINE_integer("zrate_chars", 5000, "Validation slice for the per-epoch z rates.",
                     lower_bound=2)
flags.DEFINE_integer("test_batch_size", 1, "1: Kadar et al.'s protocol.", lower_bound=1)
flags.DEFINE_integer("excerpt_chars", 270, "Length of the segmentation excerpt.",
                     lower_bound=1)
flags.DEFINE_integer("verbose", 1, "Keras verbosity (0, 1 or 2).", lower_bound=0,
                     upper_bound=2)
_OWN_FLAGS = set(FLAGS) - _FLAGS_BEFORE

# Ranges of the float flags (the integer flags carry absl bounds). absl checks
# them while parsing and reports `flag --name=value: must be ...`.
FLOAT_RANGES = {
    "valid_fraction": ("in (0, 1)", lambda v: 0 < v < 1),
    "test_fraction": ("in (0, 1)", lambda v: 0 < v < 1),
    "slope": ("> 0", lambda v: v > 0),
    "slope_max": ("> 0", lambda v: v > 0),
    "slope_rate": (">= 0", lambda v: v >= 0),
    "boundary_bias": ("finite", lambda v: True),
    "dropout": ("in [0, 1)", lambda v: 0 <= v < 1),
    "recurrent_dropout": ("in [0, 1)", lambda v: 0 <= v < 1),
    "l2": (">= 0", lambda v: v >= 0),
    "learning_rate": ("> 0", lambda v: v > 0),
    "clip_norm": ("> 0", lambda v: v > 0),
    "lr_divisor": (">= 1", lambda v: v >= 1),
}
for _name, (_allowed, _check_value) in FLOAT_RANGES.items():
    flags.register_validator(
        _name, lambda v, ok=_check_value: v is None or (math.isfinite(v) and ok(v)),
        message=f"must be a number {_allowed}" if _allowed != "finite"
        else "must be a finite number")


def _lengths_ok(values):
    try:
        return values is None or all(math.isfinite(float(v)) and float(v) > 1 for v in values)
    except ValueError:
        return False


flags.register_validator(
    "segment_lengths", _lengths_ok,
    message="must be numbers > 1, one per boundary layer, e.g. 5,15")


def _check_text_file_flags(settings, flag_values):
    """--text_file and its companions go with --dataset=text_file only."""
    if settings["dataset"] != "text_file":
        for name in TEXT_FILE_ONLY_FLAGS:
            if flag_values[name].present:
                raise FlagError(
                    f"--{name} applies to --dataset=text_file only. Received: "
                    f"--dataset={settings['dataset']} --{name}={settings[name]!r}"
                )
        return
    if not settings["text_file"]:
        raise FlagError("--dataset=text_file needs --text_file=PATH, a UTF-8 text file.")
    for part in ("valid", "test"):
        if settings[f"{part}_file"] and flag_values[f"{part}_fraction"].present:
            raise FlagError(
                f"--{part}_fraction applies only without --{part}_file. Received: "
                f"--{part}_file={settings[f'{part}_file']!r} "
                f"--{part}_fraction={settings[f'{part}_fraction']!r}"
            )


HIERARCHICAL_ONLY_FLAGS = (
    "layer_norm", "copy_last", "no_top_down", "top_down", "boundary_mode",
    "boundary_bias", "boundary_prior", "segment_lengths", "stop_on_collapse",
)


def resolve_settings(flag_values):
    """The run's settings: preset, then `--tiny`, then explicit flags.

    Single values were checked by absl while parsing (enums, bounds,
    `FLOAT_RANGES`); combinations are checked here (`FlagError`), before
    TensorFlow loads.
    """
    settings = {name: flag_values[name].value for name in flag_values
                if name in _OWN_FLAGS}
    overrides = dict(PRESETS[flag_values.preset])
    if flag_values.tiny:
        overrides.update(TINY)
    for name, value in overrides.items():
        if not flag_values[name].present:
            settings[name] = value
    if settings["no_top_down"]:
        settings["top_down"] = False
    _check_text_file_flags(settings, flag_values)
    manual_dir, data_dir = settings["manual_dir"], settings["data_dir"]
    if manual_dir and not os.path.isdir(os.path.expanduser(manual_dir)):
        raise FlagError(f"--manual_dir must be an existing directory, the one that "
                        f"holds the corpus files. Received: --manual_dir={manual_dir!r}")
    if data_dir and os.path.isfile(os.path.expanduser(data_dir)):
        raise FlagError(f"--data_dir must be a directory; {data_dir!r} is a file.")
    if settings["cell"] not in ("hmlstm", "hmrnn"):
        # Options of the hierarchical cells: an error when given explicitly
        # for another cell, dropped when they came from a preset.
        for name in HIERARCHICAL_ONLY_FLAGS:
            if flag_values[name].present:
                raise FlagError(
                    f"--{name} applies to the hierarchical cells (hmlstm, hmrnn) "
                    f"only. Received: --cell={settings['cell']} --{name}={settings[name]!r}"
                )
            settings[name] = flag_values[name].default
        settings["top_down"] = True
    if settings["cell"] == "mlstm":
        if flag_values["num_layers"].present and settings["num_layers"] != 1:
            raise FlagError(
                "--cell=mlstm is one layer: --num_layers must be 1. "
                f"Received: --num_layers={settings['num_layers']}"
            )
        settings["num_layers"] = 1
    if settings["cell"] in ("hmlstm", "hmrnn"):
        if settings["num_layers"] < 2:
            raise FlagError(
                f"--cell={settings['cell']} is a hierarchy: --num_layers must be at "
                f"least 2. Received: --num_layers={settings['num_layers']}")
        lengths = settings["segment_lengths"]
        if lengths is not None and len(lengths) != settings["num_layers"] - 1:
            raise FlagError(
                "--segment_lengths needs one length per boundary layer "
                f"(--num_layers - 1 = {settings['num_layers'] - 1}). Received: "
                f"--segment_lengths={','.join(lengths)}")
        if lengths is not None and settings["boundary_prior"] == "none":
            raise FlagError(
                "--segment_lengths needs a boundary prior (--boundary_prior=binomial "
                f"or rate). Received: --boundary_prior=none --segment_lengths={','.join(lengths)}")
    if settings["dataset"] != "text_file":
        for name in ("vocabulary", "text_chars"):  # --tiny's text_chars included
            settings[name] = flag_values[name].default
    if settings["output_dir"] is None:
        settings["output_dir"] = default_output_dir(flag_values.preset, settings)
    return settings


def default_output_dir(preset, settings):
    """`runs/<preset>_<cell>` for a preset on its own dataset (the main job:
    `runs/quick_hmlstm`); otherwise the dataset is named too, and a text
    file's stem: `runs/quick_text_file_book_hmlstm`, `runs/ptb_char_lstm`.

    Example:

    >>> default_output_dir("quick", {"dataset": "text_file", "text_file": "a/book.txt",
    ...                              "cell": "hmlstm"})
    'runs/quick_text_file_book_hmlstm'
    """
    parts = [] if preset == "none" else [preset]
    if PRESETS[preset].get("dataset") != settings["dataset"]:
        parts.append(settings["dataset"])
    if settings["dataset"] == "text_file":
        stem = os.path.splitext(os.path.basename(settings["text_file"]))[0]
        parts.append("".join(c if c.isalnum() or c in "-." else "_" for c in stem))
    return os.path.join("runs", "_".join(parts + [settings["cell"]]))


# ----------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------
def load_texts(s):
    """`(texts, reference, info)`: the three splits, a boundary-reference fn
    and corpus figures for results.json.

    `reference(split, text)` gives `{unit: {alignment: 0/1 array}}`: the word
    boundaries (`"words"`; on the synthetic corpus also the phrase ends,
    `"phrases"`), each placed on the separator that follows the unit
    (`"separator"`) and on its last character (`"last_char"`), on the
    synthetic corpus also on the last separator before the next unit
    (`"last_separator"`, after `", "`); a model may learn any, its
    boundaries are scored against each and headlined by the best.
    """
    from hmkeras.analysis import boundary_metrics
    from hmkeras import data

    if s["dataset"] == "synthetic":
        corpus = data.SyntheticHierarchicalCorpus(
            seed=s["seed"], train_chars=s["synthetic_train_chars"],
            valid_chars=s["synthetic_valid_chars"], test_chars=s["synthetic_test_chars"],
        )
        texts = {split: corpus.text(split) for split in ("train", "validation", "test")}
        info = {"true_entropy_rate_bits_per_char": corpus.entropy_rate_bits_per_char,
                "true_test_bits_per_char": corpus.true_bits_per_char("test")}
        # The corpus marks the last letter of every unit; the separator
        # alignment puts the boundary one step later, on the separator that
        # follows, as for real text (spaces, PTB's `_`) and as Chung et al.
        # observe their detectors fire ("after it sees a space").
        def reference(split, text):
            references = {}
            for unit, marks in (("words", corpus.word_boundaries(split)),
                                ("phrases", corpus.phrase_boundaries(split))):
                last_char = marks.astype(int)
                references[unit] = {
                    "separator": np.concatenate([[0], last_char[:-1]]),
                    "last_char": last_char,
                    "last_separator": boundary_metrics.before_next_unit(
                        last_char, text, word_separators("synthetic")),
                }
            return references

        return texts, reference, info
    if s["dataset"] == "text_file":
        texts = read_text_file_splits(s)
    else:
        try:
            texts = {
                split: data.load_char_corpus(
                    s["dataset"], split, data_dir=s["data_dir"],
                    manual_dir=s["manual_dir"], allow_download=s["download"],
                )
                for split in ("train", "validation", "test")
            }
        except (data.DatasetFilesNotFoundError, data.DatasetVerificationError) as error:
            raise FlagError(data_error_message(error, s)) from None
    separators = word_separators(s["dataset"])

    def reference(_, text):
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("latin-1")
        return {"words": {
            "separator": boundary_metrics.reference_boundaries(text, separators),
            "last_char": boundary_metrics.reference_boundaries(text, separators, "before"),
        }}

    return texts, reference, {}


def word_separators(dataset):
    """The characters between the words of `dataset`'s text (`_` in the
    character-level PTB; the embedded corpus also has `,` and `.`)."""
    return {"ptb_char": "_", "synthetic": " ,.\n"}.get(dataset, " \t\n")


def data_error_message(error, s):
    """The message of a data error of `hmkeras.data`, in the flags' words.

    The library names its arguments (`allow_download=False`,
    `load_char_corpus(..., manual_dir=DIR)`); the user typed `--nodownload`,
    `--manual_dir`, `--data_dir`, `--dataset`.
    """
    message = str(error)
    for api, flag in (
        ("allow_download=False", "--nodownload"),
        ("load_char_corpus(..., manual_dir=DIR) or "
         "tfds.download.DownloadConfig(manual_dir=DIR)", "--manual_dir=DIR"),
        ("hmkeras.data.load_char_corpus('synthetic', split) or "
         "hmkeras.data.SyntheticHierarchicalCorpus()", "--dataset=synthetic"),
    ):
        message = message.replace(api, flag)
    lines = message.split("\n")
    for name in ("manual_dir", "data_dir"):
        if s.get(name):
            path = os.path.abspath(os.path.expanduser(s[name]))
            lines = [f"{line}  (--{name})" if line.strip() == path else line
                     for line in lines]
    return "\n".join(lines)


def read_text_file_splits(s):
    """The three splits of --dataset=text_file; bad input is a `FlagError`.

    `hmkeras.data.read_text_splits` names its arguments in its errors; they
    are the flags of the same names. A validation or test symbol that the
    training text lacks is refused here, naming where it comes from.
    """
    from hmkeras import data

    try:
        train, valid, test = data.read_text_splits(
            **{name: s[name] for name in TEXT_FILE_FLAGS},
            max_chars=s.get("text_chars") or None)
    except (ValueError, OSError) as error:
        message = str(error)
        for name in TEXT_FILE_FLAGS:
            message = message.replace(f"`{name}`", f"--{name}")
        raise FlagError(message) from None
    texts = {"train": train, "validation": valid, "test": test}
    # A settings.json older than --vocabulary: its runs refused unseen symbols.
    if s.get("vocabulary", "strict") != "strict":
        return texts  # unseen symbols map to the unknown symbol (encode_texts)
    known = set(train)
    for split, part in (("validation", "valid"), ("test", "test")):
        unknown = sorted(set(texts[split]) - known)
        if not unknown:
            continue
        if s[f"{part}_file"]:
            source, remedy = f"--{part}_file", "a --text_file that holds them"
        else:
            source = (f"The {split} part of --text_file "
                      f"(--{part}_fraction={s[f'{part}_fraction']})")
            remedy = f"a --text_file whose training part holds them, or a --{part}_file"
        raise FlagError(
            f"{source} holds {len(unknown)} symbol(s) absent from the training "
            f"text, which the vocabulary comes from: {unknown[:20]}"
            f"{' ...' if len(unknown) > 20 else ''}. Use {remedy}, or leave out "
            "--vocabulary=strict to map them to an unknown symbol."
        )
    return texts


def unknown_symbol_for(text):
    """A symbol absent from `text` for the unknown-symbol entry: U+FFFD
    (the replacement character), or the first private-use character the
    text lacks."""
    present = set(text)
    return next(c for c in map(chr, [0xFFFD, *range(0xE000, 0xF900)]) if c not in present)


def encode_texts(s, texts):
    """`(vocab, ids, unknown)`: the vocabulary of the training text, the ids
    of every split and `{split: {"count": n, "symbols": [...]}}` for the
    splits with symbols the training text lacks.

    With --dataset=text_file (and --vocabulary=unknown) the vocabulary has
    an unknown-symbol entry (`unknown_symbol_for`) those symbols map to;
    elsewhere an unknown symbol raises (never mapped silently).
    """
    from hmkeras import data

    mapped = s["dataset"] == "text_file" and s.get("vocabulary", "strict") == "unknown"
    train = texts["train"]
    vocab = data.CharVocabulary.from_text(
        train, unknown_symbol=unknown_symbol_for(train) if mapped else None)
    ids = {split: vocab.encode(text) for split, text in texts.items()}
    known, unknown = set(train), {}
    for split in ("validation", "test"):
        missing = [c for c in texts[split] if c not in known] if mapped else []
        if missing:
            unknown[split] = {"count": len(missing), "symbols": sorted(set(missing))}
    return vocab, ids, unknown


# ----------------------------------------------------------------------------
# Training
# ----------------------------------------------------------------------------
class RunClock:
    """Seconds of a run over every process that worked on it: those saved in
    the checkpoint's progress (`seconds`, up to its step) plus this
    process' since `start`."""

    def __init__(self, start=None):
        self.start = time.time() if start is None else start
        self.before = 0.0

    def total(self):
        return self.before + time.time() - self.start


def _make_callbacks(s, lm, trainer, checkpoint, progress, valid_ids, clock):
    import keras

    import hmkeras
    from hmkeras.analysis.evaluation import evaluate_char_model

    class Progress(keras.callbacks.Callback):
        """Counts batches, writes steps.jsonl, checkpoints, honours max_steps.

        `train` sets `interrupted` before each `fit` whose steps end before the
        epoch does (--max_steps): that epoch gets no validation or summary.
        A non-finite loss, or a non-finite weight where a checkpoint is due,
        stops the run before anything is saved (`progress["non_finite"]`).
        """

        interrupted = False
        saved_step = (int(trainer.optimizer.iterations.numpy())
                      if checkpoint.exists() else None)

        def on_train_batch_end(self, batch, logs=None):
            step = int(trainer.optimizer.iterations.numpy())
            bpc = float(logs["batch_bpc"])
            if not math.isfinite(bpc):
                return self._stop_non_finite(step, f"the training loss is {bpc}")
            progress["batch"] += 1
            # The epoch's BPC over all its batches, across resumptions (None:
            # resumed from a checkpoint that did not keep the sum).
            if progress.get("epoch_bpc_sum", 0.0) is not None:
                progress["epoch_bpc_sum"] = progress.get("epoch_bpc_sum", 0.0) + bpc
            with open(os.path.join(s["output_dir"], "steps.jsonl"), "a") as f:
                f.write(json.dumps({"step": step, "epoch": progress["epoch"],
                                    "batch": progress["batch"], "bpc": bpc}) + "\n")
            stop = Progress.interrupted and s["max_steps"] and step >= s["max_steps"]
            if stop or step % s["save_every"] == 0:
                if not all_finite(trainer.variables + trainer.optimizer.variables):
                    return self._stop_non_finite(step, "a weight is not finite")
                progress["seconds"] = clock.total()
                checkpoint.save(trainer, progress)
                Progress.saved_step = step
            if stop:
                trainer.stop_training = True

        def on_epoch_end(self, epoch, logs=None):
            # Keras' `bpc` is the mean over this fit's batches only; a resumed
            # epoch logs the mean over all of its batches.
            total = progress.get("epoch_bpc_sum")
            if logs is not None and progress["batch"] and total is not None:
                logs["bpc"] = total / progress["batch"]

        def _stop_non_finite(self, step, what):
            progress["non_finite"] = (step, what, Progress.saved_step)
            Progress.interrupted = True  # no validation, summary or checkpoint
            trainer.stop_training = True

    class Validation(keras.callbacks.Callback):
        """Validation BPC, per-layer z rates and the learning rate, into logs."""

        def on_epoch_end(self, epoch, logs=None):
            if Progress.interrupted or logs is None:
                return
            result = evaluate_char_model(
                lm, valid_ids, seq_len=s["seq_len"],
                batch_size=s["valid_batch_size"], verbose=0,
            )
            logs["val_bpc"] = result.bpc
            logs["learning_rate"] = float(trainer.optimizer.learning_rate.numpy())
            if lm.is_hierarchical:
                sliced = evaluate_char_model(
                    lm, valid_ids[: s["zrate_chars"]], seq_len=s["seq_len"], verbose=0
                )
                for layer, rate in enumerate(sliced.z_rates):
                    logs[f"val_z_rate_{layer + 1}"] = rate
                if sliced.z_ratio is not None:
                    logs["val_z_ratio"] = sliced.z_ratio

    validation = Validation()
    callbacks = [Progress(), validation]
    if lm.is_hierarchical:
        # Per-layer z rates of the training batches in the logs every
        # --monitor_interval steps, and a warning naming a collapsed layer.
        callbacks.insert(1, hmkeras.BoundaryMonitor(
            interval=s["monitor_interval"], stop_on_collapse=s["stop_on_collapse"]))
    if lm.is_hierarchical and s["slope_schedule"]:
        start, rate, top = s["slope"], s["slope_rate"], s["slope_max"]
        # Chung et al. Sec. 4.1: a = min(5, 1 + 0.04 * epoch).
        callbacks.insert(1, hmkeras.SlopeAnnealing(
            lambda epoch: min(top, start + rate * epoch)))
    summaries = EpochSummaries(os.path.join(s["output_dir"], "logs"),
                               when=lambda: not Progress.interrupted)
    callbacks.append(summaries)
    if s["verbose"]:
        callbacks.append(_epoch_progbar_class()())

    def finish_epoch(epoch):
        """The end of an epoch whose batches were all trained before (a
        checkpoint saved between its last batch and its end): validation
        and summaries, without `fit`."""
        logs = {}
        callbacks[0].on_epoch_end(epoch, logs)  # the epoch's training BPC
        validation.on_epoch_end(epoch, logs)
        summaries.on_epoch_end(epoch, logs)
        return logs

    return callbacks, callbacks[0], finish_epoch


def _epoch_progbar_class():
    import keras

    class EpochProgbar(keras.callbacks.ProgbarLogger):
        """Keras' progress bar without its own `Epoch i/n` line (`train`
        prints the true one, `fit` is called once per epoch) and, when an
        epoch stops early, ending at the steps really run."""

        def set_params(self, params):
            super().set_params(params)
            self.epochs = 1  # ProgbarLogger prints its line only when > 1

        def on_epoch_end(self, epoch, logs=None):
            if self.seen:
                self.target = self.seen
            super().on_epoch_end(epoch, logs)

    return EpochProgbar


def _scalar_metadata():
    from tensorflow.core.framework import summary_pb2

    return summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")
    )


def _epoch_summaries_class():
    import keras
    import tensorflow as tf

    class EpochSummaries(keras.callbacks.Callback):
        """Writes every epoch's logs as TensorBoard scalars (`log_dir/train`).

        Uses `tf.summary.write` with the scalar plugin's metadata, so the event
        files are read by TensorBoard although this needs no `tensorboard`
        package (Keras' TensorBoard callback does).
        """

        def __init__(self, log_dir, when=None):
            super().__init__()
            self.log_dir = log_dir
            self.when = when
            self._writer = None

        def on_epoch_end(self, epoch, logs=None):
            if not logs or (self.when is not None and not self.when()):
                return
            if self._writer is None:
                self._writer = tf.summary.create_file_writer(self.log_dir)
            with self._writer.as_default():
                for name, value in logs.items():
                    if name == "batch_bpc":
                        continue
                    tf.summary.write(
                        f"epoch_{name}", tf.constant(float(value)), step=epoch + 1,
                        metadata=_scalar_metadata(),
                    )
            self._writer.flush()

    return EpochSummaries


def EpochSummaries(log_dir, when=None):  # noqa: N802 (a class built lazily, after TF loads)
    """`when`: a callable; epochs for which it returns False are not written."""
    return _epoch_summaries_class()(log_dir, when)


def _epoch_header(s, epoch, start, steps, num_batches):
    """`Epoch 2/6: 94 steps`, or which batches this `fit` trains, and why."""
    line = f"Epoch {epoch + 1}/{s['max_epochs']}: "
    if steps == 0:
        return line + f"all {num_batches} batches trained; validation"
    if start == 0 and steps == num_batches:
        return line + f"{steps} steps"
    notes = [f"{steps} steps"] + (["resumed"] if start else [])
    if start + steps < num_batches:
        notes.append(f"then --max_steps={s['max_steps']} stops the run")
    return line + f"batches {start + 1}-{start + steps} of {num_batches} ({', '.join(notes)})"


def _stopped(s, progress, step):
    print(f"Stopped at step {step} (--max_steps={s['max_steps']}); rerun with a "
          "larger --max_steps (0: no limit) to go on.")
    progress["interrupted"] = True
    return progress


def train(s, lm, ids, changed=(), clock=None):
    """Trains (or resumes) `lm`; returns the progress dict.

    `changed`: names of flags whose values differ from the resumed run's
    (`prepare_output_dir`); a changed `--learning_rate` replaces the
    checkpoint's rate (divided as often as the run has divided it).
    `clock`: the run's `RunClock` (its seconds before this process are
    read from the checkpoint).
    """
    clock = clock or RunClock()
    import keras

    from hmkeras import data
    from hmkeras.training.stateful_training import TruncatedBPTTModel
    from hmkeras.training.training_state import TrainingCheckpoint

    batches = data.TruncatedBPTTBatches(ids["train"], s["batch_size"], s["seq_len"])
    trainer = TruncatedBPTTModel(lm, s["batch_size"])
    trainer.compile(
        keras.optimizers.Adam(s["learning_rate"], global_clipnorm=s["clip_norm"]),
        loss=trainer.loss_function(),
    )
    checkpoint = TrainingCheckpoint(os.path.join(s["output_dir"], "checkpoints"))
    best_path = os.path.join(s["output_dir"], "checkpoints", "best.weights.h5")
    os.makedirs(checkpoint.directory, exist_ok=True)
    progress = checkpoint.restore(trainer)
    if progress is None:
        progress = {"epoch": 0, "batch": 0, "best_val_bpc": None, "bad_epochs": 0,
                    "lr_divisions": 0, "done": False, "history": []}
    else:
        print(f"Resuming from {checkpoint.path}: epoch {progress['epoch'] + 1}, "
              f"batch {progress['batch']}, step "
              f"{int(trainer.optimizer.iterations.numpy())}.")
        if "learning_rate" in changed:
            divisions = progress["lr_divisions"]
            lr = s["learning_rate"] / s["lr_divisor"] ** divisions
            trainer.optimizer.learning_rate.assign(lr)
            print(f"Learning rate now {lr:.3g} (--learning_rate={s['learning_rate']:g}"
                  + (f", divided {divisions} time(s) by --lr_divisor)." if divisions
                     else ")."))
    clock.before = progress.get("seconds", 0.0)
    if progress["batch"] and "epoch_bpc_sum" not in progress:
        progress["epoch_bpc_sum"] = None  # a checkpoint older than the sum
    callbacks, progress_callback, finish_epoch = _make_callbacks(
        s, lm, trainer, checkpoint, progress, ids["validation"], clock)
    while not progress["done"] and progress["epoch"] < s["max_epochs"]:
        epoch = progress["epoch"]
        start = progress["batch"] = min(progress["batch"], batches.num_batches)
        step = int(trainer.optimizer.iterations.numpy())
        if s["max_steps"] and step >= s["max_steps"]:
            return _stopped(s, progress, step)
        if start == 0:
            trainer.reset_carried_state()  # a new epoch starts from zero state
        steps = batches.num_batches - start
        if s["max_steps"]:
            steps = min(steps, s["max_steps"] - step)
        # One fit per epoch; Keras' bar counts this fit's steps (EpochProgbar).
        progress_callback.__class__.interrupted = start + steps < batches.num_batches
        print(_epoch_header(s, epoch, start, steps, batches.num_batches))
        if steps == 0:
            logs = finish_epoch(epoch)
        else:
            history = trainer.fit(
                batches.dataset(start_batch=start), epochs=epoch + 1,
                initial_epoch=epoch, steps_per_epoch=steps, callbacks=callbacks,
                verbose=s["verbose"], shuffle=False,
            )
            logs = {k: float(v[-1]) for k, v in history.history.items()}
            if trainer.stop_training and not progress_callback.interrupted:
                # BoundaryMonitor(stop_on_collapse=True) ended the epoch early.
                print("A boundary layer collapsed (--stop_on_collapse): training stops.")
                progress["done"] = True
        if progress.get("non_finite"):
            step, what, saved_step = progress["non_finite"]
            raise non_finite_stop(step, what, checkpoint.path, saved_step)
        if progress_callback.interrupted:
            return _stopped(s, progress, s["max_steps"])
        progress["history"].append(logs)
        val = logs["val_bpc"]
        if progress["best_val_bpc"] is None or val < progress["best_val_bpc"]:
            progress["best_val_bpc"], progress["bad_epochs"] = val, 0
            lm.network.save_weights(best_path)
        else:
            progress["bad_epochs"] += 1
            if s["lr_schedule"] and progress["lr_divisions"] < s["max_lr_divisions"]:
                # Chung et al.: divide the learning rate by 50 when the
                # validation NLL stops decreasing.
                lr = trainer.optimizer.learning_rate
                lr.assign(lr.numpy() / s["lr_divisor"])
                progress["lr_divisions"] += 1
                progress["bad_epochs"] = 0
                print(f"Validation stalled: learning rate now {float(lr.numpy()):.3g}.")
            elif progress["bad_epochs"] >= s["patience"]:
                print("Early stopping.")
                progress["done"] = True
        progress["epoch"], progress["batch"] = epoch + 1, 0
        progress["epoch_bpc_sum"], progress["seconds"] = 0.0, clock.total()
        checkpoint.save(trainer, progress)
    progress["interrupted"] = False
    if os.path.exists(best_path):
        lm.network.load_weights(best_path)
    return progress


# ----------------------------------------------------------------------------
# After training
# ----------------------------------------------------------------------------
def plot_excerpt(s, lm, vocab, text, path):
    """Chung et al. Fig. 3/4 for the first `excerpt_chars` of `text`."""
    from hmkeras.analysis.segmentation_plot import plot_segmentation

    excerpt = text[: s["excerpt_chars"]]
    ids = vocab.encode(excerpt)[None]
    _, rnn_outputs, *_ = lm.network([ids, *lm.zero_state(1)], training=False)
    hiddens = [np.asarray(h)[0] for h in lm.hiddens(rnn_outputs)]
    if isinstance(excerpt, (bytes, bytearray)):
        excerpt = bytes(excerpt).decode("latin-1")
    if lm.is_hierarchical:
        boundaries = np.asarray(lm.boundaries(rnn_outputs))[0]
        title = f"{s['cell']}: boundaries z^l (white = 1) and ||h^l||"
    else:
        hiddens, boundaries = [hiddens[-1]], None
        title = f"{s['cell']}: no boundary detectors; ||h|| of the top layer"
    plot_segmentation(path, excerpt, hiddens, boundaries, title=title)
    return path


def prior_arguments(s):
    """`boundary_prior` and `segment_lengths` of `CharLanguageModelConfig`
    from --boundary_prior and --segment_lengths (checked while parsing)."""
    lengths = s["segment_lengths"]
    return dict(
        boundary_prior=None if s["boundary_prior"] == "none" else s["boundary_prior"],
        segment_lengths=None if lengths is None else [float(v) for v in lengths],
    )


# Flags that define the network (model_config.json), its data or its batches:
# a run in --output_dir made with other values cannot be resumed with these.
MODEL_FLAGS = (
    "dataset", "text_file", "valid_file", "test_file", "valid_fraction", "test_fraction",
    "vocabulary", "text_chars", "seed", "synthetic_train_chars", "synthetic_valid_chars", "synthetic_test_chars",
    "cell", "units", "num_layers", "embedding_dim", "output", "output_units",
    "boundary_mode", "slope", "layer_norm", "top_down", "copy_last", "boundary_bias",
    "boundary_prior", "segment_lengths", "weight_norm", "dropout",
    "recurrent_dropout", "multiplicative_units", "l2", "batch_size", "seq_len",
)
# Not compared: they only choose values of the flags above (--preset, --tiny,
# --no_top_down is --top_down) or name the run itself.
UNCOMPARED_FLAGS = ("preset", "tiny", "no_top_down", "overwrite", "output_dir")


def _flag_text(value):
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return "unset" if value is None else str(value)


def _changes_text(changes):
    return ", ".join(f"--{name} {_flag_text(old)} -> {_flag_text(new)}"
                     for name, (old, new) in changes.items())


def previous_run_changes(s):
    """`(model_changes, other_changes)`: `{flag: (old, new)}` between `s` and
    the settings.json of the run in --output_dir (empty without one).

    `model_changes` are `MODEL_FLAGS`; a flag the old run's settings.json
    lacks (an older version of this script) counts as its default.
    """
    path = os.path.join(s["output_dir"], "settings.json")
    if not os.path.isfile(path):
        return {}, {}
    with open(path) as f:
        old = json.load(f)
    model, other = {}, {}
    for name, new in s.items():
        if name in UNCOMPARED_FLAGS:
            continue
        before = old.get(name, FLAGS[name].default if name in FLAGS else None)
        if isinstance(new, tuple):
            new = list(new)
        if before != new:
            (model if name in MODEL_FLAGS else other)[name] = (before, new)
    return model, other


def _is_run_dir(path):
    return any(os.path.exists(os.path.join(path, name))
               for name in ("settings.json", "checkpoints", "model_config.json"))


# Flags whose change means other data: such a run is another job's, and the
# refusal does not suggest deleting it (--overwrite).
DATA_FLAGS = ("dataset", "text_file", "valid_file", "test_file", "text_chars")


def prepare_output_dir(s, kind="char_lm"):
    """Compares the flags with the run already in --output_dir, before any work.

    A run of another script (its `run_kind.json` is not `kind`) is refused;
    so is another model (`MODEL_FLAGS`; `FlagError`: a new --output_dir, or
    --overwrite, which is not suggested for a run on other data); other
    changes are printed in one line and the run resumes. With --overwrite
    the old run is deleted first.

    Returns:
        The names of the changed flags that keep the model.
    """
    out = s["output_dir"]
    check_run_kind(out, "--output_dir", [kind])
    if s.get("overwrite") and os.path.isdir(out) and os.listdir(out):
        if not _is_run_dir(out):
            raise FlagError(
                f"--overwrite deletes a run of this script (a directory with "
                f"settings.json or checkpoints/); --output_dir={out!r} is not one. "
                "Choose another --output_dir, or empty that one yourself.")
        shutil.rmtree(out)
        print(f"Deleted the previous run in {out} (--overwrite).")
        return ()
    model, other = previous_run_changes(s)
    if model and set(model) & set(DATA_FLAGS):
        raise FlagError(
            f"--output_dir={out!r} holds a run on other data ({_changes_text(model)}), "
            "which cannot be resumed with these flags. Use a new --output_dir (or "
            "leave it out: the default names the dataset).")
    if model:
        raise FlagError(
            f"--output_dir={out!r} holds a run of another model ({_changes_text(model)}), "
            "which cannot be resumed with these flags. Use a new --output_dir, or "
            "--overwrite to delete that run and start afresh.")
    if other:
        print(f"{out}: flags changed since the last run, the model is the same and "
              f"the run resumes: {_changes_text(other)}.")
    return tuple(other)


def _check_model_config(s, config):
    """Refuses a saved model_config.json (with checkpoints) that `config`
    does not match: the same flags on other data (e.g. an edited --text_file).

    Returns:
        `config`.
    """
    path = os.path.join(s["output_dir"], "model_config.json")
    if not (os.path.isfile(path) and os.path.isdir(os.path.join(s["output_dir"],
                                                                 "checkpoints"))):
        return config
    with open(path) as f:
        old = json.load(f)
    new = json.loads(config.to_json())
    # Fields an older hmkeras did not write are not compared.
    changes = {name: (old[name], value) for name, value in new.items()
               if name in old and old[name] != value}
    if changes:
        described = ", ".join(f"{name} {_flag_text(a)} -> {_flag_text(b)}"
                              for name, (a, b) in changes.items())
        raise FlagError(
            f"--output_dir={s['output_dir']!r} holds a model of another configuration "
            f"(model_config.json: {described}; vocab_size comes from the training "
            "text). Use a new --output_dir, or --overwrite to delete that run and "
            "start afresh.")
    return config


def finished_results(s):
    """The results.json of a finished run in --output_dir that these flags
    ask no more training of (it stopped early, or has --max_epochs epochs),
    printed and returned as saved, nothing rewritten; None otherwise."""
    path = os.path.join(s["output_dir"], "results.json")
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        results = json.load(f)
    if not results.get("stopped_early") and results.get("epochs", 0) < s["max_epochs"]:
        return None  # a larger --max_epochs trains on
    print(f"{s['output_dir']} holds a finished run ({results.get('epochs')} epochs"
          f"{', stopped early' if results.get('stopped_early') else ''}); its results, "
          "unchanged (a larger --max_epochs trains on; --overwrite starts afresh):")
    _print_summary(results)
    return results


def _tfds_default_data_dir():
    return os.environ.get("TFDS_DATA_DIR") or os.path.join("~", "tensorflow_datasets")


@contextlib.contextmanager
def removing_new_empty_dirs(roots):
    """On an exception, removes the directories created under (and up to)
    each of `roots` meanwhile that are still empty; then re-raises."""
    before = []
    for root in roots:
        root = os.path.abspath(os.path.expanduser(root))
        existing = {d for d, _, _ in os.walk(root)} if os.path.isdir(root) else set()
        parent = root
        while parent != os.path.dirname(parent):
            parent = os.path.dirname(parent)
            if os.path.isdir(parent):
                existing.add(parent)
                break
        before.append((root, existing))
    try:
        yield
    except BaseException:
        for root, existing in before:
            created = [d for d, _, _ in os.walk(root, topdown=False) if d not in existing]
            parent = os.path.dirname(root)
            while parent not in existing and parent != os.path.dirname(parent):
                created.append(parent)
                parent = os.path.dirname(parent)
            for directory in created:  # deepest first
                try:
                    os.rmdir(directory)
                except OSError:  # not empty, or gone
                    pass
        raise


def run(s):
    """The whole job; returns the results dict (also in results.json; a
    finished run's as saved, `finished_results`), or None when --max_steps
    interrupts it.

    First checks --output_dir against the flags (`prepare_output_dir`); a
    failed run leaves none of the empty directories it made (the output
    directory, TFDS' folders in the data directory).
    """
    changed = prepare_output_dir(s)
    finished = finished_results(s)
    if finished is not None:
        return finished
    roots = [s["output_dir"]]
    if s["dataset"] not in ("synthetic", "text_file"):
        roots.append(s["data_dir"] or _tfds_default_data_dir())
    with removing_new_empty_dirs(roots):
        return _run(s, changed)


def _run(s, changed):
    started = time.time()
    import tensorflow as tf

    from hmkeras.models.char_language_model import CharLanguageModel
    from hmkeras.models.char_language_model import CharLanguageModelConfig
    from hmkeras.analysis.evaluation import evaluate_char_model
    from hmkeras.training.step_export import export_step_model

    texts, reference, info = load_texts(s)
    vocab, ids, unknown = encode_texts(s, texts)
    needed = s["batch_size"] * s["seq_len"] + 1
    if len(ids["train"]) < needed:
        raise FlagError(
            f"The training text has {len(ids['train']):,} symbols; --batch_size="
            f"{s['batch_size']} x --seq_len={s['seq_len']} needs at least {needed:,} "
            "(one batch and its last target). Use smaller batches or more text.")
    config = CharLanguageModelConfig(
        vocab_size=len(vocab), cell=s["cell"], units=s["units"],
        num_layers=s["num_layers"], embedding_dim=s["embedding_dim"],
        output=s["output"], output_units=s["output_units"],
        boundary_mode=s["boundary_mode"], slope=s["slope"],
        layer_norm=s["layer_norm"], top_down=s["top_down"], copy_last=s["copy_last"],
        boundary_bias=s["boundary_bias"],
        **prior_arguments(s),
        weight_normalization=s["weight_norm"], dropout=s["dropout"],
        recurrent_dropout=s["recurrent_dropout"],
        multiplicative_units=s["multiplicative_units"], l2=s["l2"], seed=s["seed"],
    )
    config = _check_model_config(s, config)
    write_run_files(s["output_dir"], config, s, vocabulary=vocab, kind="char_lm")
    tf.random.set_seed(s["seed"])
    lm = CharLanguageModel(config)
    print(f"{s['cell']}: {lm.count_params():,} trainable parameters; "
          f"vocabulary {len(vocab)}; train {len(ids['train']):,} chars.")
    clock = RunClock(started)
    progress = train(s, lm, ids, changed, clock)
    if progress.get("interrupted"):
        return None
    print(f"Test set: batch {s['test_batch_size']}, state carried over "
          f"{len(ids['test']):,} characters (Kadar et al.).")
    batch1 = s["test_batch_size"] == 1
    references = reference("test", texts["test"]) if batch1 and lm.is_hierarchical else None
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
    }
    if s["dataset"] == "text_file":
        results["unknown_symbols"] = unknown
    if s["dataset"] == "wikitext2_raw":
        results["word_level"] = word_level_results(test, texts["test"])
    if lm.is_hierarchical:
        results.update(z_rates=test.z_rates, z_ratio=test.z_ratio,
                       boundary_scores=test.boundary_scores)
        if test.boundaries is not None:
            results.update(more_boundary_scores(test.boundaries, references))
            results.update(segment_figures(
                test.boundaries, _as_text(texts["test"]), word_separators(s["dataset"]),
                s["excerpt_chars"]))
    results["segmentation_png"] = plot_excerpt(
        s, lm, vocab, texts["validation"], os.path.join(s["output_dir"], "segmentation.png"))
    results["step_model"] = export_step_model(
        lm, vocab, os.path.join(s["output_dir"], "step_model"))
    with open(os.path.join(s["output_dir"], "steps.jsonl")) as f:
        results["steps"] = sum(1 for _ in f)
    results["wall_seconds"] = clock.total()  # every process that trained it
    results["stopped_early"] = progress["done"]
    with open(os.path.join(s["output_dir"], "results.json"), "w") as f:
        json.dump(_finite(results), f, indent=2)
    _print_summary(results)
    return results


def more_boundary_scores(boundaries, references):
    """Boundary figures beyond `evaluate_char_model`'s, for results.json.

    `boundary_scores_tolerance_1`: every layer against the words, one step
    of tolerance. With phrase references (synthetic corpus) and a second
    boundary layer, `phrase_boundary_scores` and
    `phrase_boundary_scores_tolerance_1`: z^2 against the phrase ends. Each
    entry is an `AlignedBoundaryScores.as_dict()`: the scores of every
    alignment, the best one (`alignment`) and its figures.

    Args:
        boundaries: The `(T, L-1)` boundaries of the test text.
        references: `{unit: {alignment: array}}` of `load_texts`' reference.

    Returns:
        A JSON-able dict.
    """
    from hmkeras.analysis import boundary_metrics

    def cut(unit):
        return {name: values[: boundaries.shape[0]]
                for name, values in references[unit].items()}

    out = {"boundary_scores_tolerance_1": [
        scores.as_dict()
        for scores in boundary_metrics.layer_boundary_scores(boundaries, cut("words"), 1)
    ]}
    if "phrases" in references and boundaries.shape[1] >= 2:
        for tolerance, key in ((0, "phrase_boundary_scores"),
                               (1, "phrase_boundary_scores_tolerance_1")):
            scores = boundary_metrics.aligned_boundary_scores(
                boundaries[:, 1], cut("phrases"), tolerance)
            out[key] = {"layer": 2, **scores.as_dict()}
    return out


def _as_text(text):
    """A split's text as a string (byte corpora read as Latin-1)."""
    if isinstance(text, (bytes, bytearray)):
        return bytes(text).decode("latin-1")
    return text


def segment_figures(boundaries, text, separators, excerpt_chars):
    """Word-token scores of z^1 and a marked excerpt, for results.json.

    Args:
        boundaries: The `(T, L-1)` boundaries of the test text, step `t`
            after reading `text[t]`.
        text: The test text (at least `T` characters).
        separators: The characters between its words.
        excerpt_chars: Length of the excerpt.

    Returns:
        `{"token_scores": BoundaryScores._asdict() of z^1 against the
        words, "segment_excerpt": the first characters with "|" after
        every z^1 and "‖" after every higher boundary}`.
    """
    from hmkeras.analysis import boundary_metrics
    from hmkeras.analysis.segment_marks import mark_segments

    text = text[: boundaries.shape[0]]
    scores = boundary_metrics.token_scores(boundaries[:, 0], text, separators)
    return {
        "token_scores": {name: value.item() if hasattr(value, "item") else value
                         for name, value in scores._asdict().items()},
        "segment_excerpt": mark_segments(text[:excerpt_chars], boundaries[:excerpt_chars]),
    }


def word_level_results(test, test_text):
    """Bits/char, bits/word and word perplexity of WikiText-2 (Krause Eq. 23).

    The word count is the published 245,569 words when `test_text` is the
    whole test set (1,256,449 bytes, Krause et al. Section 4.4), else
    `hmkeras.data.wikitext2_raw.count_words(test_text)`; `num_words_source`
    says which.

    Args:
        test: The `EvaluationResult` of `test_text`.
        test_text: The evaluated bytes.

    Returns:
        A JSON-able dict.
    """
    from hmkeras.data import wikitext2_raw

    if len(test_text) == wikitext2_raw.WIKITEXT2_TEST_BYTES:
        num_words = wikitext2_raw.WIKITEXT2_TEST_WORDS
        source = "published (Krause et al. 2017, Section 4.4): the whole test set"
    else:
        num_words = wikitext2_raw.count_words(bytes(test_text))
        source = f"count_words over the {len(test_text):,} evaluated bytes"
    figures = test.word_level(num_words, num_symbols=len(test_text))
    return {**figures.as_dict(), "num_words_source": source}


def _finite(value):
    """`value` with NaN / inf floats replaced by None (strict JSON)."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _print_summary(r):
    print("\n=== results ===")
    print(f"cell {r['cell']}, {r['parameters']:,} parameters, {r['epochs']} epochs, "
          f"{r['wall_seconds']:.0f} s")
    line = f"test BPC {r['test_bpc']:.4f}"
    test_unknown = (r.get("unknown_symbols") or {}).get("test")
    if test_unknown:
        line += (f" ({test_unknown['count']:,} of the {r['test_symbols']:,} test symbols "
                 "are unknown to the training text, scored as the unknown symbol)")
    if "true_entropy_rate_bits_per_char" in r:
        line += (f"  vs true entropy rate {r['true_entropy_rate_bits_per_char']:.4f}"
                 f" (this test sample: {r['true_test_bits_per_char']:.4f})")
    print(line)
    for split, found in (r.get("unknown_symbols") or {}).items():
        print(f"unknown symbols in {split}: {found['count']:,} mapped to the unknown "
              f"symbol ({len(found['symbols'])} distinct: {found['symbols'][:20]})")
    if r.get("word_level"):
        w = r["word_level"]
        print(f"Krause Eq. 23: {w['bits_per_char']:.4f} bits/char x "
              f"{w['num_symbols']:,} bytes / {w['num_words']:,} words "
              f"({w['num_words_source']}) = {w['bits_per_word']:.4f} bits/word, "
              f"word perplexity {w['word_perplexity']:.2f}")
    if r.get("z_rates") is not None:
        print("z rates " + ", ".join(f"z^{i + 1} {v:.3f}" for i, v in enumerate(r["z_rates"]))
              + (f"; z-ratio {r['z_ratio']:.3f}" if r.get("z_ratio") is not None else ""))
    for layer, scores in enumerate(r.get("boundary_scores") or []):
        loose = r.get("boundary_scores_tolerance_1")
        print(_boundary_line(f"z^{layer + 1} vs words", scores,
                             loose[layer] if loose else None))
    if r.get("phrase_boundary_scores"):
        print(_boundary_line(f"z^{r['phrase_boundary_scores']['layer']} vs phrases",
                             r["phrase_boundary_scores"],
                             r.get("phrase_boundary_scores_tolerance_1")))
    if r.get("token_scores"):
        t = r["token_scores"]
        print(f"z^1 segments vs words (tokens): P {t['precision']:.3f} R {t['recall']:.3f} "
              f"F1 {t['f1']:.3f}")
    if r.get("segment_excerpt"):
        print("test text, | after z^1, \u2016 after z^2 and above:")
        print(r["segment_excerpt"])
    print(f"wrote {r['segmentation_png']} and {r['step_model']}")


ALIGNMENT_NAMES = {"separator": "separator", "last_char": "last character",
                   "last_separator": "last separator"}


def _boundary_line(label, scores, loose=None):
    """`z^1 vs words: P .. R .. F1 .. (aligned on: last character; separator
    F1 ..; tolerance 1: F1 ..)` from `AlignedBoundaryScores.as_dict()`s."""
    notes = [f"aligned on: {ALIGNMENT_NAMES.get(scores['alignment'], scores['alignment'])}"]
    notes += [f"{ALIGNMENT_NAMES.get(name, name)} F1 {other['f1']:.3f}"
              for name, other in scores["by_alignment"].items()
              if name != scores["alignment"]]
    if loose is not None:
        notes.append(f"tolerance 1: F1 {loose['f1']:.3f}")
    return (f"{label}: P {scores['precision']:.3f} R {scores['recall']:.3f} "
            f"F1 {scores['f1']:.3f} ({'; '.join(notes)})")


def run_from_flags():
    """The command: the settings from the flags (the preset applied), then
    the run; a `FlagError` is one line naming the flags."""
    settings = resolve_settings(FLAGS)
    settings["preset"] = FLAGS.preset
    run(settings)


main = absl_main(run_from_flags)

if __name__ == "__main__":
    run_script(main)
