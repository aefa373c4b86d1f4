r"""Word-level language modelling: plain, averaging and attentive LSTM-LMs.

Salton & Kelleher's setup (persistence averaging, Section 6), with the
model of `hmkeras.models.word_language_model`: a tied embedding, two
recurrent layers (`--cell=lstm|hmlstm|mlstm`), dropout on the non-recurrent
connections, and on the top layer `--wrapper=none` (the plain LSTM-LM),
`average` (`hmkeras.AveragingWrapper`, the paper's model) or `attention`
(`hmkeras.AttentionWrapper`, the learned-attention baseline of Salton et al.
2017). Training (`hmkeras.training.epoch_run`): SGD, gradient-norm
clipping, the learning rate divided by `--lr_decay` at every epoch after
`--decay_after` epochs, early stopping after `--patience` epochs without a
better validation perplexity; the best weights are evaluated on validation
and test. Every row is one sentence,
cut / padded to `--seq_len` (35) tokens, with ``<eos>`` as first input and
last target; batches of `--batch_size` (32) consecutive sentences; the RNN
state starts from zeros in every batch.

With `--cell=hmlstm` the script trains the papers' HM-LSTM
(`--boundary_prior=none`, the default here); `--boundary_prior=rate` or
`binomial` adds the boundary prior (`--segment_lengths` in words, default
5) on the real words only (never the padding). results.json records the
prior and the test set's boundary rates (`test_z_rates`). The prior is off
by default: with this script's SGD (learning rate 1.0) it drives z^1 to 0
in the first epoch and the perplexity ends far above the papers' model's
(docs/results/word-lm.md, "The HM-LSTM word LM and the boundary prior").

`--cell=rrnet` is the recurrent-recursive language model of Jacob et al.
(2018), Sec. 3.3 (`hmkeras.models.rrnet_language_model`): one layer of 350
units (`--num_layers` must be 1, no wrapper), a stack of `--max_depth` slots,
the tree policy trained by REINFORCE with ``log p(next word)`` as the
reward (returns discounted by `--reward_discount`), a learned baseline and
an entropy bonus (`--entropy_weight`); perplexity with greedy trees, and the
tree of one validation sentence printed and saved in results.json. One
operation per word by default; `--operations_per_token=3` lets the policy
split and merge up to twice between words (the paper's operations).

Presets, by `--dataset` (flags given on the command line win):

* ``embedded`` (default, offline): the generated word corpus of
  `hmkeras.data.SyntheticWordCorpus`, with the PTB model settings; its
  exact entropy-rate perplexity (the floor no model can beat) is printed
  and saved beside the results;
* ``ptb``: Section 6.1: 2 x 650 units, embeddings tied (650), dropout 0.5,
  SGD lr 1.0 halved every epoch after epoch 12, clip 5, early stopping
  after 10 epochs (put ``simple-examples.tgz`` or ``ptb.*.txt`` in
  `--manual_dir`);
* ``wikitext2``: Section 6.2: 2 x 1000, dropout 0.65, lr 1.0 divided by
  1.15 every epoch after epoch 14, early stopping 10
  (``wikitext-2-v1.zip`` or ``wiki.*.tokens``);
* ``text_file``: your own UTF-8 text, one sentence per line, words
  separated by spaces (`--text_file`, optional `--valid_file` /
  `--test_file`, otherwise the last `--valid_fraction` + `--test_fraction`
  of the file); a vocabulary of the `--vocab_size` most frequent words plus
  ``<unk>``.

Everything goes to `--output_dir` (default ``runs/word_<dataset>_<cell>_
<wrapper>``): ``checkpoints/`` (resumed automatically, per epoch: weights,
optimizer, epoch, best validation perplexity and its weights, history),
``run_kind.json``, ``vocabulary.json``,
``model_config.json``, ``settings.json``, ``results.json`` (validation and
test perplexity; on the embedded corpus the entropy-rate floor) and, for
the wrappers, ``attention.png`` (the weights over the earlier words of one
validation sentence; for ``average`` the exact uniform weights).

Examples:

    python examples/ptb_word.py --tiny --output_dir=/tmp/smoke
    python examples/ptb_word.py --units=128 --wrapper=average --max_epochs=4
    python examples/ptb_word.py --dataset=ptb --manual_dir=~/data/ptb \
        --wrapper=average
    python examples/ptb_word.py --dataset=wikitext2 --manual_dir=~/data/wt2
    python examples/ptb_word.py --dataset=text_file --text_file=book.txt

Rerunning into the same --output_dir resumes that run; flags that change the
model or its data (`MODEL_FLAGS`) are refused there (use a new
--output_dir, or --overwrite). A bad flag value is one line on stderr, and
so is a non-finite training loss, which stops the run (naming the step and
the last good checkpoint, never overwritten by a NaN state).
"""

import json
import math
import os
import time

from absl import flags

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

DATASETS = ("embedded", "ptb", "wikitext2", "text_file")
CELLS = ("lstm", "hmlstm", "mlstm", "rrnet")  # hmkeras.models.word_language_model
# (and rrnet_language_model). Jacob et al. (2018) Sec. 3.3: one layer, 350 units.
RRNET = dict(units=350, num_layers=1)
WRAPPERS = ("none", "average", "attention")  # (spelled out: checked before TF loads)
SCORES = ("single", "combined")
# Salton & Kelleher Section 6.1 (PTB; also the embedded corpus) and 6.2.
PAPER_PTB = dict(units=650, num_layers=2, dropout=0.5, learning_rate=1.0,
                 lr_decay=2.0, decay_after=12, clip_norm=5.0, patience=10,
                 batch_size=32, seq_len=35)
PRESETS = {
    "embedded": dict(PAPER_PTB),
    "ptb": dict(PAPER_PTB),
    "wikitext2": dict(PAPER_PTB, units=1000, dropout=0.65, lr_decay=1.15,
                      decay_after=14),
    "text_file": dict(PAPER_PTB),
}
TINY = dict(units=16, embedding_dim=0, batch_size=4, seq_len=12, max_epochs=1,
            memory_size=6, embedded_train_tokens=1_500, embedded_valid_tokens=300,
            embedded_test_tokens=300, vocab_size=200)
TEXT_FILE_FLAGS = ("text_file", "valid_file", "test_file", "valid_fraction",
                   "test_fraction", "vocab_size")
CORPUS = {"ptb": "ptb_word", "wikitext2": "wikitext2_word"}
# The library's words in its data errors, and the flags the user typed.
DATA_API_WORDS = (
    ("allow_download=False", "--nodownload"),
    ("load_word_corpus(..., manual_dir=DIR) or "
     "tfds.download.DownloadConfig(manual_dir=DIR)", "--manual_dir=DIR"),
    ("hmkeras.data.load_word_corpus('embedded', split) or "
     "hmkeras.data.SyntheticWordCorpus()", "--dataset=embedded"))

FLAGS = flags.FLAGS
_BEFORE = set(FLAGS)
flags.DEFINE_enum("dataset", "embedded", list(DATASETS), "The corpus (its preset "
                  "sets the model and training flags not given).")
flags.DEFINE_bool("tiny", False, "Shrink the model and the data (smoke tests).")
flags.DEFINE_string("data_dir", None, "TFDS data directory.")
flags.DEFINE_string("manual_dir", None, "Directory with the raw corpus files.")
flags.DEFINE_bool("download", True, "Let the TFDS builders download missing files.")
flags.DEFINE_string("text_file", None, "--dataset=text_file: UTF-8 text, a sentence "
                    "per line.")
flags.DEFINE_string("valid_file", None, "Validation text (default: cut from --text_file).")
flags.DEFINE_string("test_file", None, "Test text (default: cut from --text_file).")
flags.DEFINE_float("valid_fraction", 0.05, "Share of --text_file for validation.")
flags.DEFINE_float("test_fraction", 0.05, "Share of --text_file for the test.")
flags.DEFINE_integer("vocab_size", 10_000, "--dataset=text_file: largest vocabulary "
                     "(<pad>, <eos>, <unk> included).", lower_bound=3)
flags.DEFINE_integer("embedded_train_tokens", 200_000, "Embedded corpus sizes "
                     "(tokens, about).", lower_bound=1)
flags.DEFINE_integer("embedded_valid_tokens", 20_000, "", lower_bound=1)
flags.DEFINE_integer("embedded_test_tokens", 20_000, "", lower_bound=1)
flags.DEFINE_integer("seed", 0, "Seed of the initialization and the embedded corpus.",
                     lower_bound=0)
flags.DEFINE_enum("cell", "lstm", list(CELLS), "The recurrent cell.")
flags.DEFINE_enum("wrapper", "none", list(WRAPPERS), "Memory on the top layer.")
flags.DEFINE_integer("units", 650, "Units of every recurrent layer.", lower_bound=1)
flags.DEFINE_integer("num_layers", 2, "Recurrent layers.", lower_bound=1)
flags.DEFINE_integer("embedding_dim", 0, "Tied embedding size (0: --units).",
                     lower_bound=0)
flags.DEFINE_integer("operations_per_token", 1, "--cell=rrnet: the most operations "
                     "per word (1: each consumes its word; n > 1: up to n - 1 splits "
                     "and merges between words, then the recur that reads it).",
                     lower_bound=1)
flags.DEFINE_integer("max_depth", 10, "--cell=rrnet: stack slots (deepest nesting).",
                     lower_bound=1)
flags.DEFINE_float("reward_discount", 0.9, "--cell=rrnet: discount of the REINFORCE "
                   "returns (0: immediate reward, 1: rest of the sentence).")
flags.DEFINE_float("entropy_weight", 0.01, "--cell=rrnet: entropy bonus weight.")
flags.DEFINE_integer("memory_size", 35, "--wrapper=attention: past states attended.",
                     lower_bound=1)
flags.DEFINE_enum("attention_score", "single", list(SCORES), "--wrapper=attention: "
                  "score function.")
boundary_prior_flags.define_flags(flags, "words", default="none")  # see WordLanguageModelConfig
flags.DEFINE_float("dropout", 0.5, "Dropout on the non-recurrent connections.")
flags.DEFINE_float("init_scale", 0.05, "Uniform initialization range.")
flags.DEFINE_integer("batch_size", 32, "Sentences per batch.", lower_bound=1)
flags.DEFINE_integer("seq_len", 35, "Tokens per sentence row (cut / padded).",
                     lower_bound=1)
flags.DEFINE_float("learning_rate", 1.0, "SGD learning rate.")
flags.DEFINE_float("lr_decay", 2.0, "Divide the learning rate by this every epoch "
                   "after --decay_after.")
flags.DEFINE_integer("decay_after", 12, "Epochs at the full learning rate.",
                     lower_bound=0)
flags.DEFINE_float("clip_norm", 5.0, "Global gradient-norm clipping.")
flags.DEFINE_integer("patience", 10, "Early stopping: epochs without a better "
                     "validation perplexity.", lower_bound=1)
flags.DEFINE_integer("max_epochs", 60, "Upper bound of epochs.", lower_bound=1)
flags.DEFINE_integer("plot_sentence", 0, "Validation sentence of attention.png.",
                     lower_bound=0)
flags.DEFINE_string("output_dir", None, "Default: runs/word_<dataset>_<cell>_<wrapper>.")
flags.DEFINE_bool("overwrite", False, "Delete the run in --output_dir and start afresh.")
flags.DEFINE_integer("verbose", 1, "Keras verbosity (0, 1 or 2).", lower_bound=0,
                     upper_bound=2)
_OWN = set(FLAGS) - _BEFORE

FLOAT_RANGES = {
    "valid_fraction": ("in (0, 1)", lambda v: 0 < v < 1),
    "test_fraction": ("in (0, 1)", lambda v: 0 < v < 1),
    "dropout": ("in [0, 1)", lambda v: 0 <= v < 1),
    "init_scale": ("> 0", lambda v: v > 0),
    "learning_rate": ("> 0", lambda v: v > 0),
    "lr_decay": (">= 1", lambda v: v >= 1),
    "clip_norm": ("> 0", lambda v: v > 0),
    "reward_discount": ("in [0, 1]", lambda v: 0 <= v <= 1),
    "entropy_weight": (">= 0", lambda v: v >= 0),
}
for _name, (_allowed, _ok) in FLOAT_RANGES.items():
    flags.register_validator(
        _name, lambda v, ok=_ok: v is None or (math.isfinite(v) and ok(v)),
        message=f"must be a number {_allowed}")

# Flags that define the model, its data or its batches: a run in
# --output_dir made with other values is not resumed with these.
MODEL_FLAGS = (
    "dataset", "text_file", "valid_file", "test_file", "valid_fraction",
    "test_fraction", "vocab_size", "embedded_train_tokens", "embedded_valid_tokens",
    "embedded_test_tokens", "seed", "cell", "wrapper", "units", "num_layers",
    "embedding_dim", "memory_size", "attention_score", "dropout", "init_scale",
    "batch_size", "seq_len", "max_depth", "reward_discount", "entropy_weight",
    "boundary_prior", "segment_lengths", "operations_per_token",
)


# Flags that apply to one value of another flag only: (flag, value, names).
ONLY_WITH = (
    ("dataset", "text_file", TEXT_FILE_FLAGS),
    ("dataset", "embedded", ("embedded_train_tokens", "embedded_valid_tokens",
                             "embedded_test_tokens")),
    ("wrapper", "attention", ("memory_size", "attention_score")),
    ("cell", "rrnet", ("max_depth", "reward_discount", "entropy_weight",
                       "operations_per_token")),
)


def resolve_settings(flag_values):
    """Settings: the dataset's preset, then --tiny, then explicit flags."""
    overrides = dict(PRESETS[flag_values.dataset])
    if flag_values.cell == "rrnet":
        overrides.update(RRNET)
    if flag_values.tiny:
        overrides.update(TINY)
    s = settings_from_flags(flag_values, _OWN, overrides)
    for flag, value, names in ONLY_WITH:
        given = [name for name in names if flag_values[name].present]
        if s[flag] != value and given:
            raise FlagError(f"--{given[0]} applies to --{flag}={value} only. Received: "
                            f"--{flag}={s[flag]} --{given[0]}={s[given[0]]!r}")
    if s["dataset"] == "text_file" and not s["text_file"]:
        raise FlagError("--dataset=text_file needs --text_file=PATH, a UTF-8 text file.")
    if s["cell"] == "rrnet" and (s["num_layers"] != 1 or s["wrapper"] != "none"):
        raise FlagError("--cell=rrnet has one layer and no wrapper (Jacob et al. 2018, "
                        f"Sec. 3.3). Received: --num_layers={s['num_layers']} "
                        f"--wrapper={s['wrapper']}")
    if s["cell"] == "rrnet":
        from hmkeras import tensorflow_features

        with flag_errors(ValueError):  # another backend: one line, before any file is made
            tensorflow_features.require_training_backend(
                "RecurrentRecursiveLanguageModel (--cell=rrnet)")
    if s["cell"] == "hmlstm" and s["num_layers"] < 2:
        raise FlagError("--cell=hmlstm is a hierarchy: --num_layers must be at least 2. "
                        f"Received: --num_layers={s['num_layers']}")
    boundary_prior_flags.check_flags(s, flag_values, ("hmlstm",))
    if s["manual_dir"] and not os.path.isdir(os.path.expanduser(s["manual_dir"])):
        raise FlagError("--manual_dir must be an existing directory, the one that "
                        f"holds the corpus files. Received: --manual_dir={s['manual_dir']!r}")
    if s["output_dir"] is None:
        s["output_dir"] = os.path.join(
            "runs", f"word_{s['dataset']}_{s['cell']}_{s['wrapper']}")
    return s


# ----------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------
def load_sentences(s):
    """`({split: token lists}, info)`; a data problem is a `FlagError`."""
    from hmkeras import data

    splits = ("train", "validation", "test")
    if s["dataset"] == "embedded":
        corpus = data.SyntheticWordCorpus(
            seed=s["seed"], train_tokens=s["embedded_train_tokens"],
            valid_tokens=s["embedded_valid_tokens"], test_tokens=s["embedded_test_tokens"])
        info = {"entropy_rate_bits_per_token": corpus.entropy_rate_bits_per_token,
                "entropy_rate_perplexity": corpus.entropy_rate_perplexity,
                "true_test_perplexity": corpus.true_perplexity("test")}
        return {split: corpus.sentences(split) for split in splits}, info
    if s["dataset"] == "text_file":
        with flag_errors(ValueError, OSError, names=TEXT_FILE_FLAGS):
            texts = data.read_text_splits(**{name: s[name] for name in TEXT_FILE_FLAGS[:-1]})
        return {split: [line.split() for line in text.split("\n") if line.strip()]
                for split, text in zip(splits, texts)}, {}
    with flag_errors(data.DatasetFilesNotFoundError, data.DatasetVerificationError,
                     words=DATA_API_WORDS):
        return {split: data.load_word_corpus(
            CORPUS[s["dataset"]], split, data_dir=s["data_dir"],
            manual_dir=s["manual_dir"], allow_download=s["download"])
            for split in splits}, {}


# ----------------------------------------------------------------------------
# Model, training, report
# ----------------------------------------------------------------------------
def make_model(s, vocab_size):
    """The word LM of the flags (`--cell=rrnet`: the RRNet LM)."""
    from hmkeras.models.rrnet_language_model import RecurrentRecursiveLanguageModel
    from hmkeras.models.rrnet_language_model import RecurrentRecursiveLanguageModelConfig
    from hmkeras.models.word_language_model import WordLanguageModel
    from hmkeras.models.word_language_model import WordLanguageModelConfig

    common = {name: s[name] for name in ("units", "embedding_dim", "dropout",
                                         "init_scale", "seed")}
    if s["cell"] == "rrnet":
        return RecurrentRecursiveLanguageModel(RecurrentRecursiveLanguageModelConfig(
            vocab_size=vocab_size, max_depth=s["max_depth"],
            operations_per_token=s["operations_per_token"],
            entropy_weight=s["entropy_weight"], reward_discount=s["reward_discount"],
            **common))
    return WordLanguageModel(WordLanguageModelConfig(
        vocab_size=vocab_size, cell=s["cell"], num_layers=s["num_layers"],
        wrapper=s["wrapper"], memory_size=s["memory_size"],
        attention_score=s["attention_score"], **boundary_prior_flags.prior_arguments(s),
        **common))


def train(s, lm, batches):
    """SGD with gradient-norm clipping, one `fit` per epoch
    (`hmkeras.training.epoch_run`: the Sec. 6.1/6.2 learning-rate schedule,
    early stopping on the validation perplexity, its best weights kept,
    resumable checkpoints); returns the progress."""
    import keras

    from hmkeras.models.word_language_model import sentence_perplexity
    from hmkeras.training.epoch_run import EpochSchedule
    from hmkeras.training.epoch_run import train_epochs
    from hmkeras.training.optimizer_on_compile import build_optimizer

    network = getattr(lm, "network", lm)  # --cell=rrnet: the model itself
    network.compile(
        keras.optimizers.SGD(s["learning_rate"], global_clipnorm=s["clip_norm"]),
        loss=keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight"),
    )
    build_optimizer(network)  # now, not in the first trace: one trace of the step
    schedule = EpochSchedule(
        max_epochs=s["max_epochs"], learning_rate=s["learning_rate"],
        lr_decay=s["lr_decay"], decay_after=s["decay_after"], monitor="val_perplexity",
        patience=s["patience"], verbose=s["verbose"])
    progress = train_epochs(
        network, batches["train"].dataset(), schedule, s["output_dir"],
        validate=lambda _: {"val_perplexity": sentence_perplexity(
            lm, batches["validation"])["perplexity"]})
    stop_if_non_finite(progress)
    return progress


def shown_sentence(s, sentences):
    """The tokens of validation sentence --plot_sentence, <eos> first."""
    candidates = [x for x in sentences if x]
    sentence = candidates[min(s["plot_sentence"], len(candidates) - 1)]
    return ["<eos>"] + list(sentence[: s["seq_len"] - 1])


def run(s):
    """The whole job; returns the results dict (also in results.json)."""
    # A settings.json older than the prior flags or --operations_per_token
    # resumes with their defaults (the model it was trained as).
    prepare_output_dir(s, "word_lm", MODEL_FLAGS,
                       defaults={**boundary_prior_flags.old_run_defaults(FLAGS),
                                 "operations_per_token": 1})
    started = time.time()
    sentences, info = load_sentences(s)
    import keras
    import tensorflow as tf

    from hmkeras import data
    from hmkeras.analysis.attention_plot import plot_word_lm_attention
    from hmkeras.models.word_language_model import sentence_boundary_rates
    from hmkeras.models.word_language_model import sentence_perplexity
    from hmkeras.training.run_directory import RunClock
    from hmkeras.training.run_directory import write_results

    vocab = data.WordVocabulary.from_splits(
        sentences["train"], [sentences["validation"], sentences["test"]],
        max_size=s["vocab_size"] if s["dataset"] == "text_file" else None)
    batches = {split: data.SentenceBatches(
        [vocab.encode(x) for x in part], s["seq_len"], s["batch_size"],
        overflow="truncate" if split == "train" else "split")
        for split, part in sentences.items()}
    tf.random.set_seed(s["seed"])
    lm = make_model(s, len(vocab))
    write_run_files(s["output_dir"], lm.config, s, vocabulary=vocab, kind="word_lm")
    print(f"{s['cell']} + {s['wrapper']}: {lm.count_params():,} parameters; vocabulary "
          f"{len(vocab):,}; {batches['train'].num_rows:,} training sentences.")
    if "entropy_rate_perplexity" in info:
        print(f"Embedded corpus: entropy-rate perplexity {info['entropy_rate_perplexity']:.3f}"
              " (the floor).")
    progress = train(s, lm, batches)
    results = {
        "dataset": s["dataset"], "cell": s["cell"], "wrapper": s["wrapper"],
        "backend": keras.backend.backend(),
        "units": s["units"], "parameters": lm.count_params(),
        "epochs": progress["epoch"],
        "best_val_perplexity": progress["best_val_perplexity"],
        "validation": sentence_perplexity(lm, batches["validation"]),
        "test": sentence_perplexity(lm, batches["test"]),
        "train_targets_dropped_by_truncation": batches["train"].num_dropped_targets,
        "history": progress["history"], **info,
    }
    if s["cell"] == "hmlstm":  # the prior and the test set's boundary rates
        results.update(boundary_prior_flags.prior_results(lm.boundary_prior))
        results["test_z_rates"] = sentence_boundary_rates(lm, batches["test"])
    words = shown_sentence(s, sentences["validation"])
    if s["cell"] == "rrnet":  # the greedy tree of one validation sentence
        results["tree"] = lm.tree_of(vocab.encode(words), words)
        print(f"Greedy tree of validation sentence {s['plot_sentence']}: {results['tree']}")
    if s["wrapper"] != "none":
        results["attention_png"] = plot_word_lm_attention(
            os.path.join(s["output_dir"], "attention.png"), lm, words, vocab.encode(words))
    # A finished run trained on counts the seconds of its results too.
    results["wall_seconds"] = RunClock.of_run(s["output_dir"], started).total()
    write_results(s["output_dir"], results)
    line = (f"\n=== {s['cell']} + {s['wrapper']}: validation perplexity "
            f"{results['validation']['perplexity']:.3f}, test perplexity "
            f"{results['test']['perplexity']:.3f}")
    if "entropy_rate_perplexity" in info:
        line += f" (floor {info['entropy_rate_perplexity']:.3f})"
    if "test_z_rates" in results:
        line += ("; test z rates " + ", ".join(
            f"z^{i + 1} {v:.3f}" for i, v in enumerate(results["test_z_rates"]))
            + f" (boundary prior {results['boundary_prior']})")
    print(line)
    return results


def run_from_flags():
    """The command: the settings from the flags, then the run."""
    run(resolve_settings(FLAGS))


main = absl_main(run_from_flags)

if __name__ == "__main__":
    run_script(main)
