"""The command line of the character language-model examples.

`examples/ptb_char.py` and `examples/xla_gpu_training.py` share it: the
presets and `--tiny`, the flags (model, data, training), their checks
(`resolve_settings`: single values while absl parses, combinations here,
before TensorFlow loads), the default run directory, the flags that define
a run (`MODEL_FLAGS`, compared when a rerun resumes it) and the corpora
they name (`load_texts`, `encode_texts`: data errors in the flags' words).
Importing it defines the flags.
"""

import math
import os

from absl import flags

from command_line import FlagError  # examples/command_line.py
from command_line import flag_errors
from command_line import settings_from_flags
from text_file_settings import text_file_parts  # examples/text_file_settings.py
from text_file_settings import three_text_files
import boundary_prior_flags  # examples/boundary_prior_flags.py
import run_directory  # examples/run_directory.py

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
    # Word discovery on the Brent corpus (the main job's model twice as
    # wide, more epochs and variational dropout: the corpus is 85,000
    # symbols; the width and the dropout each lower the validation bits per
    # symbol of both of its variants).
    "brent": dict(
        dataset="brent_phonemes", units=256, num_layers=3, embedding_dim=32,
        output_units=256, batch_size=32, seq_len=100, learning_rate=0.003,
        max_epochs=20, valid_batch_size=8, layer_norm=True,
        dropout=0.2, recurrent_dropout=0.2,
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
DATASETS = ("synthetic", "ptb_char", "text8", "enwik8", "wikitext2_raw", "brent_phonemes",
            "brent_text", "text_file")
# Word-discovery corpora (hmkeras.data.Brent): unsegmented unless
# --nounsegmented is given.
UNSEGMENTED_DATASETS = ("brent_phonemes", "brent_text")
# On unsegmented text z^1's rate is left to the rise placement; z^2's
# expected segment length, 3x longer per layer above (the spaced default's).
UNSEGMENTED_UPPER_SEGMENT_LENGTH = 15
# The choices of hmkeras.models.char_language_model (CELLS, OUTPUTS), of
# the hierarchical cells (hmkeras.cells.hierarchical_cell.BOUNDARY_MODES) and
# of their estimators (hmkeras.cells.straight_through.GRADIENTS), spelled out
# so that flags are checked before TensorFlow loads.
CELLS = ("hmlstm", "hmrnn", "lstm", "mlstm")
# hmkeras.cells.boundary_placement.FORMS and "none".
PLACEMENTS = ("entropy", "rise", "surprisal", "bidirectional", "none")
# hmkeras.cells.boundary_placement.RISE_FORMS: they set the rate of z^1.
RISE_PLACEMENTS = ("rise", "surprisal", "bidirectional")
# hmkeras.cells.boundary_placement.RISE_FRACTION: their threshold's default.
RISE_FRACTION = 0.5
OUTPUTS = ("gated", "simple", "none")
BOUNDARY_MODES = ("step", "sample", "soft")
BOUNDARY_GRADIENTS = ("hard_sigmoid", "sigmoid")
BOUNDARY_INPUTS = ("previous", "updated")
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
flags.DEFINE_string("text_file", None, "--dataset=text_file: a UTF-8 text file to train "
                    "on (validation and test cut from its end), or three comma-separated "
                    "files: train,valid,test.")
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
flags.DEFINE_bool("unsegmented", False, "Word discovery: every line is an utterance whose "
                  "words are separated by spaces; the model reads the lines without their "
                  "spaces, and the spaces are kept only as the gold words that its "
                  "segmentation is scored against (test_segmented.txt, results.json "
                  "word_discovery). Default for --dataset=brent_phonemes / brent_text.")
flags.DEFINE_bool("lstm_baseline", True, "--unsegmented with --cell=hmlstm / hmrnn: also "
                  "train a stacked LSTM of the same size on the same text (in "
                  "<output_dir>/lstm_baseline) and score the words read from its "
                  "predictions beside the model's.")
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
flags.DEFINE_enum("boundary_gradient", "hard_sigmoid", list(BOUNDARY_GRADIENTS),
                  "hmlstm, hmrnn: the straight-through estimator's backward pass: "
                  "hard_sigmoid (Chung et al.; 0 at a saturated detector) or sigmoid "
                  "(never 0, an extension; the default of --unsegmented runs).")
flags.DEFINE_enum("boundary_input", "previous", list(BOUNDARY_INPUTS),
                  "hmlstm, hmrnn: what the boundary detectors read: previous (Chung et "
                  "al.: the pre-activation, from the states before the update) or "
                  "updated (the layer's state after it, an extension; the default of "
                  "--unsegmented runs).")
flags.DEFINE_bool("nested_boundaries", True,
                  "hmlstm, hmrnn: a layer above the bottom ends a segment only where the "
                  "layer below ends one (z^l_t times z^{l-1}_t, an extension; not in the "
                  "papers' model, --boundary_prior=none, nor by default on --unsegmented "
                  "runs).")
flags.DEFINE_bool("slope_schedule", True, "Anneal a = min(slope_max, slope + slope_rate * epoch).")
flags.DEFINE_float("slope_max", 5.0, "Largest annealed slope.")
flags.DEFINE_float("slope_rate", 0.04, "Slope increase per epoch.")
flags.DEFINE_bool("layer_norm", True, "Layer normalization in the HM cells (hmlstm, hmrnn); "
                  "--nolayer_norm for Kadar et al.'s non-LN rows.")
flags.DEFINE_float("boundary_bias", 0.0, "Initial bias of the boundary detectors (extension).")
boundary_prior_flags.define_flags(flags, "characters")
flags.DEFINE_enum("boundary_placement", "entropy", list(PLACEMENTS),
                  "Where the prior's boundaries go (hmkeras.BoundaryPlacement, an "
                  "extension): entropy (where the next character is uncertain), rise "
                  "(z^1 where that uncertainty rises: text whose words nothing marks), "
                  "surprisal (z^1 where a signal that also reads the next character's "
                  "surprisal rises: the same text), bidirectional (that rise read "
                  "forwards and backwards, a backward LSTM LM trained beside the "
                  "model for the targets) or none. Needs a boundary prior; "
                  "--boundary_prior=none drops it too.")
flags.DEFINE_bool("placement_upper_layers", False, "Place z^2 .. too (Eq. 1 of "
                  "hmkeras.cells.boundary_placement for each layer above the bottom one; "
                  "the default of --unsegmented runs); without it z^1 is placed and the "
                  "layers above are left to the prior and the language model.")
flags.DEFINE_float("rise_fraction", RISE_FRACTION, "The threshold d of a rise placement "
                   "(--boundary_placement=rise, surprisal or bidirectional) as a fraction "
                   "of the signal's mean absolute change (hmkeras.BoundaryPlacement's "
                   "rise_fraction): larger, fewer and surer boundaries of z^1.",
                   lower_bound=0)
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
flags.DEFINE_bool("data_parallel", False, "JAX backend: split every training batch over "
                  "all local devices (keras.distribution.DataParallel); --batch_size must "
                  "be a multiple of their number.")
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


def _check_text_file_list(settings, flag_values):
    """--text_file of three comma-separated files: three non-empty paths,
    and no --valid_file / --test_file / fractions beside them."""
    parts = (settings["text_file"] or "").split(",")
    if len(parts) == 1:
        return
    if len(parts) != 3 or not all(part.strip() for part in parts):
        raise FlagError(
            "--text_file takes one file or three comma-separated files "
            f"(train,valid,test). Received: --text_file={settings['text_file']!r}")
    for name in ("valid_file", "test_file", "valid_fraction", "test_fraction"):
        if flag_values[name].present:
            raise FlagError(
                f"--{name} does not go with three files in --text_file (they are the "
                f"train, validation and test files). Received: --text_file="
                f"{settings['text_file']!r} --{name}={settings[name]!r}")


def _check_unsegmented_flags(settings, flag_values):
    """--unsegmented: on by default for the word-discovery corpora; for
    line-based text only (--dataset=text_file or those corpora).
    --lstm_baseline applies to an unsegmented run of a hierarchical cell."""
    dataset = settings["dataset"]
    if dataset in UNSEGMENTED_DATASETS and not flag_values["unsegmented"].present:
        settings["unsegmented"] = True
    if settings["unsegmented"] and dataset not in UNSEGMENTED_DATASETS + ("text_file",):
        raise FlagError(
            "--unsegmented reads one utterance per line: it applies to --dataset="
            f"{', '.join(UNSEGMENTED_DATASETS + ('text_file',))}. Received: "
            f"--dataset={dataset} --unsegmented")
    if settings["unsegmented"] and settings["test_batch_size"] != 1:
        raise FlagError(
            "--unsegmented scores the words found in one batch-1 pass over the test "
            f"lines: --test_batch_size must be 1. Received: --test_batch_size="
            f"{settings['test_batch_size']}")
    applies = settings["unsegmented"] and settings["cell"] in ("hmlstm", "hmrnn")
    if not applies:
        if flag_values["lstm_baseline"].present and settings["lstm_baseline"]:
            raise FlagError(
                "--lstm_baseline applies to --unsegmented runs of --cell=hmlstm or "
                f"hmrnn. Received: --cell={settings['cell']} --unsegmented="
                f"{settings['unsegmented']} --lstm_baseline")
        settings["lstm_baseline"] = False


def _unsegmented_boundary_defaults(settings, flag_values):
    """On unsegmented text the hierarchical cells' detectors read the
    updated state (--boundary_input=updated) and pass the logistic
    sigmoid's straight-through gradient (--boundary_gradient=sigmoid; not
    with --boundary_mode=soft), z^1 goes where a signal of the uncertainty
    and the next symbol's surprisal rises, read forwards and by a backward
    language model (--boundary_placement=bidirectional), and a rise
    placement (bidirectional, surprisal, or rise: the entropy's) sets z^1's
    number of boundaries (--segment_lengths=none,15,...: the prior holds
    the layers above), which are placed too (--placement_upper_layers)
    and not nested (`_nesting_default`), unless those flags are given;
    the papers' model (--boundary_prior=none) keeps the papers' detectors."""
    if not settings["unsegmented"] or settings["cell"] not in ("hmlstm", "hmrnn"):
        return
    if settings["boundary_placement"] != "none":
        if not flag_values["boundary_input"].present:
            settings["boundary_input"] = "updated"
        if settings["boundary_mode"] != "soft" and not flag_values["boundary_gradient"].present:
            settings["boundary_gradient"] = "sigmoid"
    if settings["boundary_placement"] == "none":
        return  # the papers' model (no prior)
    if not flag_values["boundary_placement"].present:
        settings["boundary_placement"] = "bidirectional"
    if not flag_values["placement_upper_layers"].present:
        settings["placement_upper_layers"] = True
    if settings["boundary_placement"] in RISE_PLACEMENTS and not flag_values[
            "segment_lengths"].present:
        upper = UNSEGMENTED_UPPER_SEGMENT_LENGTH
        settings["segment_lengths"] = ["none"] + [
            f"{upper * 3 ** layer:g}" for layer in range(settings["num_layers"] - 2)]


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
    _check_text_file_list(settings, flag_values)
    for part in ("valid", "test"):
        if settings[f"{part}_file"] and flag_values[f"{part}_fraction"].present:
            raise FlagError(
                f"--{part}_fraction applies only without --{part}_file. Received: "
                f"--{part}_file={settings[f'{part}_file']!r} "
                f"--{part}_fraction={settings[f'{part}_fraction']!r}"
            )


def _check_placement_flag(settings, flag_values):
    """--boundary_placement works beside a prior: with --boundary_prior=none
    (the papers' model) it is "none", and refused if given otherwise; for a
    cell without boundaries it is "none" (given, it was refused before)."""
    if settings["cell"] not in ("hmlstm", "hmrnn"):
        settings["boundary_placement"] = "none"
        return
    if settings["boundary_prior"] != "none":
        return
    if flag_values["boundary_placement"].present and settings["boundary_placement"] != "none":
        raise FlagError(
            "--boundary_placement needs a boundary prior (--boundary_prior=rate or "
            "binomial); --boundary_prior=none is the papers' model. Received: "
            f"--boundary_prior=none --boundary_placement={settings['boundary_placement']}")
    settings["boundary_placement"] = "none"


def _check_rise_fraction_flag(settings, flag_values):
    """--rise_fraction sets the threshold of a rise placement: refused,
    given, where the run has none."""
    placement = settings["boundary_placement"]
    if flag_values["rise_fraction"].present and placement not in RISE_PLACEMENTS:
        raise FlagError(
            f"--rise_fraction is the threshold of a rise placement: it needs "
            f"--boundary_placement={' or '.join(RISE_PLACEMENTS)}. Received: "
            f"--boundary_placement={placement} --rise_fraction={settings['rise_fraction']!r}")


def _check_upper_layers_flag(settings):
    """--placement_upper_layers extends a placement: refused where the run
    has none (--boundary_placement=none, or --boundary_prior=none)."""
    if settings["boundary_placement"] != "none" or not settings["placement_upper_layers"]:
        return
    cause = ("--boundary_prior=none" if settings["boundary_prior"] == "none"
             else "--boundary_placement=none")
    raise FlagError(
        "--placement_upper_layers places the layers above z^1 beside z^1's placement, "
        "and this run has no placement (--boundary_placement=none, or "
        "--boundary_prior=none: the papers' model). "
        f"Received: {cause} --placement_upper_layers")


def _nesting_default(settings, flag_values):
    """Nested boundaries (--nested_boundaries) unless given: on by default
    beside the boundary prior on text with spaces; off in the papers'
    model (--boundary_prior=none) and on --unsegmented runs, whose
    defaults were measured without it."""
    if flag_values["nested_boundaries"].present:
        return
    settings["nested_boundaries"] = (
        settings["boundary_prior"] != "none" and not settings["unsegmented"])


HIERARCHICAL_ONLY_FLAGS = (
    "layer_norm", "copy_last", "no_top_down", "top_down", "boundary_mode",
    "boundary_gradient", "boundary_input", "boundary_bias", "boundary_prior",
    "segment_lengths", "boundary_placement", "placement_upper_layers", "stop_on_collapse",
    "nested_boundaries", "rise_fraction",
)


def resolve_settings(flag_values):
    """The run's `Settings`: preset, then `--tiny`, then explicit flags.

    Single values were checked by absl while parsing (enums, bounds,
    `FLOAT_RANGES`); combinations are checked here (`FlagError`), before
    TensorFlow loads.
    """
    overrides = dict(PRESETS[flag_values.preset])
    if flag_values.tiny:
        overrides.update(TINY)
    settings = settings_from_flags(flag_values, _OWN_FLAGS, overrides)
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
        settings.update(without_hierarchy(flag_values))
    if settings["cell"] == "hmrnn" and settings["copy_last"]:
        raise FlagError(
            "--copy_last applies to --cell=hmlstm only (Kadar et al.'s CopyLast; "
            "hmrnn has no cell state). Received: --cell=hmrnn "
            f"--copy_last={settings['copy_last']!r}")
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
    _check_unsegmented_flags(settings, flag_values)
    boundary_prior_flags.check_flags(settings, flag_values, ("hmlstm", "hmrnn"))
    _check_placement_flag(settings, flag_values)
    _unsegmented_boundary_defaults(settings, flag_values)
    _check_rise_fraction_flag(settings, flag_values)
    _check_upper_layers_flag(settings)
    if settings["cell"] in ("hmlstm", "hmrnn"):
        _nesting_default(settings, flag_values)
    if settings["dataset"] != "text_file":
        for name in ("vocabulary", "text_chars"):  # --tiny's text_chars included
            settings[name] = flag_values[name].default
    if settings["output_dir"] is None:
        settings["output_dir"] = default_output_dir(flag_values.preset, settings)
    return settings


def without_hierarchy(flag_values):
    """The values of `HIERARCHICAL_ONLY_FLAGS` that a run of a cell without
    boundaries (lstm, mlstm) has: the flags' defaults, with top-down on and
    no placement and no nesting (which need boundaries)."""
    return {**{name: flag_values[name].default for name in HIERARCHICAL_ONLY_FLAGS},
            "top_down": True, "boundary_placement": "none", "nested_boundaries": False}


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
        stem = os.path.splitext(os.path.basename(text_file_parts(settings)["text_file"]))[0]
        parts.append("".join(c if c.isalnum() or c in "-." else "_" for c in stem))
    return os.path.join("runs", "_".join(parts + [settings["cell"]]))


# Flags that define the network (model_config.json), its data or its batches:
# a run in --output_dir made with other values cannot be resumed with these.
MODEL_FLAGS = (
    "dataset", "text_file", "valid_file", "test_file", "valid_fraction", "test_fraction",
    "vocabulary", "text_chars", "unsegmented", "seed", "synthetic_train_chars", "synthetic_valid_chars", "synthetic_test_chars",
    "cell", "units", "num_layers", "embedding_dim", "output", "output_units",
    "boundary_mode", "slope", "boundary_gradient", "boundary_input", "layer_norm", "top_down",
    "copy_last", "boundary_bias", "nested_boundaries", "boundary_prior", "segment_lengths", "boundary_placement",
    "placement_upper_layers", "rise_fraction", "weight_norm", "dropout", "recurrent_dropout",
    "multiplicative_units", "l2", "batch_size", "seq_len",
)
# Not compared: they only choose values of the flags above (--preset, --tiny,
# --no_top_down is --top_down) or name the run itself.
UNCOMPARED_FLAGS = ("preset", "tiny", "no_top_down", "overwrite", "output_dir")
# Flags whose change means other data: such a run is another job's, and the
# refusal does not suggest deleting it (--overwrite).
DATA_FLAGS = ("dataset", "text_file", "valid_file", "test_file", "text_chars")


# The flags that are options of each cell (`cell_options`, the cell's own
# arguments), by argument name; the other model flags are the model's.
_SHARED_OPTION_FLAGS = {"dropout": "dropout", "recurrent_dropout": "recurrent_dropout"}
_HIERARCHICAL_OPTION_FLAGS = {
    "boundary_mode": "boundary_mode", "slope": "slope",
    "boundary_gradient": "boundary_gradient", "boundary_input": "boundary_input",
    "layer_norm": "layer_norm",
    "top_down": "top_down", "boundary_bias": "boundary_bias",
    "nested_boundaries": "nested_boundaries", **_SHARED_OPTION_FLAGS,
}
CELL_OPTION_FLAGS = {
    "hmlstm": dict(_HIERARCHICAL_OPTION_FLAGS, copy_last="copy_last"),
    "hmrnn": _HIERARCHICAL_OPTION_FLAGS,
    "lstm": _SHARED_OPTION_FLAGS,
    "mlstm": dict(_SHARED_OPTION_FLAGS, weight_normalization="weight_norm",
                  multiplicative_units="multiplicative_units"),
}


def cell_options(s):
    """The `cell_options` of the settings `s`: the values of the flags that
    are the chosen cell's arguments (`CELL_OPTION_FLAGS`);
    --multiplicative_units=0 leaves the mLSTM's own default (`units`)."""
    options = {name: s[flag] for name, flag in CELL_OPTION_FLAGS[s["cell"]].items()}
    if options.get("multiplicative_units") == 0:
        del options["multiplicative_units"]
    return options


def model_config(s, vocab_size):
    """The `CharLanguageModelConfig` of the settings `s`."""
    from hmkeras.models.char_language_model import CharLanguageModelConfig

    return CharLanguageModelConfig(
        vocab_size=vocab_size, cell=s["cell"], units=s["units"],
        num_layers=s["num_layers"], embedding_dim=s["embedding_dim"],
        output=s["output"], output_units=s["output_units"],
        cell_options=cell_options(s), **boundary_prior_flags.prior_arguments(s),
        boundary_placement=None if s["boundary_placement"] == "none" else s["boundary_placement"],
        placement_upper_layers=s["placement_upper_layers"],
        rise_fraction=s["rise_fraction"], l2=s["l2"], seed=s["seed"],
    )


def data_parallel_distribution(s):
    """The `keras.distribution.DataParallel` over every local device that
    --data_parallel asks for, or None without it.

    Keras implements its distribution API on JAX: on another backend, or
    with a --batch_size that the devices do not divide, a `FlagError`.
    Training runs in its scope (the variables are made there, replicated
    on every device; each batch is split by rows); the evaluation runs on
    the same variables outside it, at any batch size.
    """
    if not s["data_parallel"]:
        return None
    import keras

    backend = keras.backend.backend()
    if backend != "jax":
        raise FlagError(
            "--data_parallel splits the batches with keras.distribution, which Keras "
            "runs on the JAX backend (KERAS_BACKEND=jax); on TensorFlow, "
            "examples/xla_gpu_training.py --strategy=mirrored splits them. "
            f"Received: --data_parallel on the {backend} backend")
    devices = keras.distribution.list_devices()
    if s["batch_size"] % len(devices):
        raise FlagError(
            f"--batch_size must be a multiple of the {len(devices)} devices that "
            f"--data_parallel splits each batch over ({', '.join(devices)}). "
            f"Received: --batch_size={s['batch_size']}")
    return keras.distribution.DataParallel(devices=devices)


def prepare_output_dir(s, kind):
    """`run_directory.prepare_output_dir` with the flags of the character
    LMs: a changed `MODEL_FLAGS` flag is refused (without suggesting
    --overwrite for a `DATA_FLAGS` one), other changes are printed and the
    run resumes. Returns the names of those other changed flags."""
    return run_directory.prepare_output_dir(
        s, kind, MODEL_FLAGS, data_flags=DATA_FLAGS, ignored=UNCOMPARED_FLAGS,
        defaults={**{name: FLAGS[name].default for name in FLAGS},
                  # A run made before the flag existed trained without it
                  # (before --nested_boundaries, with every layer placed;
                  # before --rise_fraction, at half the mean change).
                  "boundary_placement": "none", "nested_boundaries": False,
                  "placement_upper_layers": True, "rise_fraction": 0.5})


def check_model_config(s, config):
    """Refuses a saved model_config.json (with checkpoints) that `config`
    does not match: the same flags on other data (e.g. an edited
    --text_file). Returns `config`."""
    from hmkeras.training.run_directory import RunDirectoryError
    from hmkeras.training.run_directory import check_model_config as check

    with flag_errors(RunDirectoryError):
        check(s["output_dir"], config)
    return config


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
    from hmkeras import data
    from hmkeras.analysis import corpus_references
    from hmkeras.data.char_splits import word_separators

    separators = word_separators(s["dataset"])
    if s["dataset"] == "synthetic":
        corpus = data.SyntheticHierarchicalCorpus(
            seed=s["seed"], train_chars=s["synthetic_train_chars"],
            valid_chars=s["synthetic_valid_chars"], test_chars=s["synthetic_test_chars"],
        )
        texts = {split: corpus.text(split) for split in ("train", "validation", "test")}
        info = {"true_entropy_rate_bits_per_char": corpus.entropy_rate_bits_per_char,
                "true_test_bits_per_char": corpus.true_bits_per_char("test")}
        return texts, lambda split, text: corpus_references.synthetic_references(
            corpus, split, text, separators), info
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
    return texts, lambda _, text: corpus_references.word_references(text, separators), {}


def encode_texts(s, texts):
    """`(vocab, ids, unknown)` of `hmkeras.data.char_splits.encode_splits`:
    with --dataset=text_file (and --vocabulary=unknown) symbols the training
    text lacks map to an unknown symbol; elsewhere they raise."""
    from hmkeras.data.char_splits import encode_splits

    return encode_splits(texts, map_unknown=s["dataset"] == "text_file"
                         and s.get("vocabulary", "strict") == "unknown")


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

    files = text_file_parts(s)
    fractions = {name: s[name] for name in ("valid_fraction", "test_fraction")}
    try:
        if s.get("unsegmented") and not files["valid_file"] and not files["test_file"]:
            texts = _utterance_splits(files["text_file"], fractions, s.get("text_chars"))
        else:
            train, valid, test = data.read_text_splits(
                **files, **fractions, max_chars=s.get("text_chars") or None)
            texts = {"train": train, "validation": valid, "test": test}
    except (ValueError, OSError) as error:
        raise FlagError(_text_file_message(str(error), s)) from None
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


def _utterance_splits(path, fractions, max_chars):
    """The three splits of one --unsegmented file, cut between lines
    (`hmkeras.data.split_utterances`), each as its lines."""
    from hmkeras.data.text_file import read_text_file
    from hmkeras.data.utterances import Utterances
    from hmkeras.data.utterances import split_utterances

    text = read_text_file(path, "text_file")[: max_chars or None]
    parts = split_utterances(Utterances.from_text(text, "text_file"), **fractions)
    return {split: "".join(line + "\n" for line in part.segmented)
            for split, part in zip(("train", "validation", "test"), parts)}


def _text_file_message(message, s):
    """A `hmkeras.data` error about --dataset=text_file in the flags' words:
    `valid_file` is --valid_file, or the second of three --text_file files."""
    three = three_text_files(s)
    for position, name in enumerate(TEXT_FILE_FLAGS):
        flag = f"--{name}"
        if three and name in ("text_file", "valid_file", "test_file"):
            flag = f"the {('train', 'validation', 'test')[position]} file of --text_file"
        message = message.replace(f"`{name}`", flag)
    return message


def unsegmented_texts(s, texts):
    """`(texts, utterances)` of an --unsegmented run: what the model reads
    (every line without its spaces, then a line end) and the gold
    `hmkeras.data.Utterances` of each split. A line without a symbol is a
    `FlagError` naming the flag (or the corpus) and the line."""
    from hmkeras.data.utterances import Utterances

    if s["dataset"] == "text_file":
        files = text_file_parts(s)
        three = three_text_files(s)
        names = {split: (f"the {split} file of --text_file" if three else
                         f"--{key}" if files[key] else f"the {split} part of --text_file")
                 for split, key in (("train", "text_file"), ("validation", "valid_file"),
                                    ("test", "test_file"))}
    else:
        names = {split: f"the {split} split of --dataset={s['dataset']}" for split in texts}
    utterances = {}
    for split, text in texts.items():
        try:
            utterances[split] = Utterances.from_text(text, name="SOURCE")
        except ValueError as error:
            raise FlagError(str(error).replace("`SOURCE`", names[split])) from None
    return {split: u.text for split, u in utterances.items()}, utterances
