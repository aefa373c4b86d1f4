r"""Do the default cells learn, and do their boundaries mean something?

Trains, side by side on the same batches and for the same number of steps,
character language models that differ only in their recurrent layer:

* `hmlstm`: `hmkeras.HMLSTM(units)`, the defaults (3 layers, layer
  normalization, the binomial boundary prior with `--segment_lengths`);
* `hmlstm_rate`: the same layer with `boundary_prior="rate"`;
* `hmlstm_papers`: the papers' model, `boundary_prior=None`;
* `hmlstm_noln`: the papers' model with `layer_norm=False`;
* `hmlstm_bias`: the papers' model with `boundary_bias=--boundary_bias`;
* `hmlstm_slope`: the papers' model with the slope annealed per step,
  `SlopeAnnealing(lambda step: min(5, 1 + --slope_per_step * step), unit="step")`;
* `lstm`: `keras.layers.RNN(keras.layers.StackedRNNCells([LSTMCell(units)] * 3))`.

Each model is `Embedding(vocab, 32) -> RNN -> Dense(vocab)` trained with a
plain `fit` (Adam 2e-3, `clipnorm=1`, batch 32 x 100 windows, shuffled,
state reset per window) for `--steps` steps, then evaluated on held-out
text in windows of `--eval_len` characters: bits per character, per-layer
boundary rates, and the F1 of z^1 against word boundaries (headlined for
the better of two placements: on the separator after the word or on its
last character), on the embedded corpus also of z^2 against its phrase
boundaries.  Every seed gets the same batches for every model.

    python bench/boundaries.py --corpus=synthetic                 # embedded corpus
    python bench/boundaries.py --corpus=text_file \
        --text_file=../shared/papers/chung2017_hmrnn.txt,...      # real English prose

Writes one JSON line per (seed, model) to `--output` and prints the mean
and spread over seeds.
"""

import json
import math
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

import numpy as np  # noqa: E402

MODELS = ("hmlstm", "hmlstm_rate", "hmlstm_papers", "hmlstm_noln", "hmlstm_bias", "hmlstm_slope", "lstm")

FLAGS = flags.FLAGS
flags.DEFINE_enum("corpus", "synthetic", ["synthetic", "text_file"], "Training text.")
flags.DEFINE_list("text_file", [], "UTF-8 files, concatenated (--corpus=text_file).")
flags.DEFINE_list("models", list(MODELS), f"Models among {list(MODELS)}.")
flags.DEFINE_list("seeds", ["0", "1", "2"], "Seeds.")
flags.DEFINE_integer("steps", 300, "Train steps per model.", lower_bound=1)
flags.DEFINE_integer("units", 128, "Units of every layer.", lower_bound=1)
flags.DEFINE_integer("batch_size", 32, "Windows per batch.", lower_bound=1)
flags.DEFINE_integer("seq_len", 100, "Characters per window.", lower_bound=2)
flags.DEFINE_integer("eval_len", 500, "Characters per evaluation window.", lower_bound=2)
flags.DEFINE_integer("eval_chars", 20_000, "Held-out characters evaluated.", lower_bound=2)
flags.DEFINE_list("segment_lengths", ["5", "15"], "hmlstm, hmlstm_rate: the prior's "
                  "expected segment lengths of z^1, z^2.")
flags.DEFINE_float("boundary_bias", -1.0, "hmlstm_bias: initial detector bias.")
flags.DEFINE_float("slope_per_step", 0.0133, "hmlstm_slope: slope increase per step.",
                   lower_bound=0)
flags.DEFINE_string("output", None, "JSON-lines file of the results (appended).")


def _numbers(values, kind, check=lambda v: True):
    try:
        return all(check(kind(v)) for v in values)
    except ValueError:
        return False


flags.register_validator("models", lambda v: bool(v) and set(v) <= set(MODELS),
                         message=f"must be among {list(MODELS)}, comma-separated")
flags.register_validator("seeds", lambda v: bool(v) and _numbers(v, int, lambda s: s >= 0),
                         message="must be integers >= 0, comma-separated, e.g. 0,1,2")
flags.register_validator(
    "segment_lengths", lambda v: len(v) == 2 and _numbers(v, float, lambda r: r > 1),
    message="must be two numbers > 1 (z^1, z^2), e.g. 5,15")
for _name in ("boundary_bias", "slope_per_step"):
    flags.register_validator(_name, math.isfinite, message="must be a finite number")
flags.register_multi_flags_validator(
    ["corpus", "text_file"],
    lambda v: v["corpus"] != "text_file" or bool(v["text_file"]),
    message="--corpus=text_file needs --text_file=PATH[,PATH...]")
flags.register_validator(
    "text_file", lambda v: all(os.path.isfile(os.path.expanduser(p)) for p in v),
    message="must name existing files")
flags.register_multi_flags_validator(
    ["eval_chars", "eval_len"], lambda v: v["eval_chars"] >= v["eval_len"],
    message="--eval_chars must be at least --eval_len (one evaluation window)")


def corpus():
    """`(train_text, heldout_text, references_fn)`."""
    from hmkeras.analysis import boundary_metrics
    from hmkeras import data

    if FLAGS.corpus == "synthetic":
        c = data.SyntheticHierarchicalCorpus(seed=0, train_chars=1_000_000)
        train, heldout = c.text("train"), c.text("validation")[: FLAGS.eval_chars]

        def references():
            out = {}
            for name, marks in (("words", c.word_boundaries("validation")),
                                ("phrases", c.phrase_boundaries("validation"))):
                last = np.asarray(marks[: len(heldout)]).astype(int)
                # The corpus marks last letters; the separator follows them.
                out[name] = {"last_char": last,
                             "separator": np.concatenate([[0], last[:-1]])}
            return out

        return train, heldout, references
    text = "".join(open(os.path.expanduser(path), encoding="utf-8").read()
                   for path in FLAGS.text_file)
    split = int(0.9 * len(text))
    train, heldout = text[:split], text[split:][: FLAGS.eval_chars]

    def references():
        return {"words": {
            "separator": boundary_metrics.reference_boundaries(heldout),
            "last_char": boundary_metrics.reference_boundaries(heldout, align="before"),
        }}

    return train, heldout, references


def build(name, vocab_size, seed):
    import keras

    import hmkeras

    keras.utils.set_random_seed(seed)
    units = FLAGS.units
    if name == "lstm":
        cell = keras.layers.StackedRNNCells([keras.layers.LSTMCell(units) for _ in range(3)])
        rnn = keras.layers.RNN(cell, return_sequences=True)
    else:
        prior = {"hmlstm": "binomial", "hmlstm_rate": "rate"}.get(name)
        rnn = hmkeras.HMLSTM(
            units, return_sequences=True, layer_norm=name != "hmlstm_noln",
            boundary_bias=FLAGS.boundary_bias if name == "hmlstm_bias" else 0.0,
            boundary_prior=prior,
            segment_lengths=[float(v) for v in FLAGS.segment_lengths] if prior else None)
        cell = rnn.cell
    tokens = keras.Input((None,), dtype="int32")
    outputs = rnn(keras.layers.Embedding(vocab_size, 32)(tokens))
    logits = keras.layers.Dense(vocab_size)(outputs)
    model = keras.Model(tokens, logits)
    model.compile(keras.optimizers.Adam(2e-3, clipnorm=1.0),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model, keras.Model(tokens, outputs), (cell if name != "lstm" else None)


def windows(ids, length):
    count = (len(ids) - 1) // length
    x = ids[: count * length].reshape(count, length)
    y = ids[1: count * length + 1].reshape(count, length)
    return x, y


def evaluate(model, rnn_model, cell, heldout, heldout_ids, references):
    from hmkeras.analysis import boundary_metrics

    x, y = windows(heldout_ids, FLAGS.eval_len)
    logits = model.predict(x, batch_size=8, verbose=0)
    log_probs = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(
        -1, keepdims=True)) - logits.max(-1, keepdims=True)
    nll = -np.take_along_axis(log_probs, y[..., None], -1).mean()
    result = {"bpc": float(nll / np.log(2))}
    if cell is None:
        return result
    _, z = cell.split_outputs(rnn_model.predict(x, batch_size=8, verbose=0))
    z = np.asarray(z).reshape(-1, cell.num_layers - 1)  # windows back to back
    result["z_rates"] = z.mean(axis=0).tolist()
    refs = references()
    for layer, target in ((0, "words"), (1, "phrases")):
        if target not in refs:
            continue
        trimmed = {k: np.asarray(v)[: len(z)] for k, v in refs[target].items()}
        scores = boundary_metrics.aligned_boundary_scores(z[:, layer], trimmed)
        result[f"z{layer + 1}_vs_{target}"] = scores.as_dict()
    separators = " ,.\n" if FLAGS.corpus == "synthetic" else " \t\n"
    tokens = boundary_metrics.token_scores(z[:, 0], heldout[: len(z)], separators)
    result["z1_token_f1"] = float(tokens.f1)
    return result


def summarize(rows):
    print(f"\n=== {FLAGS.corpus}: {FLAGS.steps} steps, 3 x {FLAGS.units}, "
          f"{len(FLAGS.seeds)} seeds (mean, min-max) ===")
    for name in FLAGS.models:
        mine = [r for r in rows if r["model"] == name]
        if not mine:
            continue

        def stat(values, fmt="{:.3f}"):
            values = np.asarray(values, dtype=float)
            return (fmt.format(values.mean()) + " (" + fmt.format(values.min()) + "-"
                    + fmt.format(values.max()) + ")")

        line = f"{name:12s} bpc {stat([r['bpc'] for r in mine])}"
        if "z_rates" in mine[0]:
            for layer in range(len(mine[0]["z_rates"])):
                line += f"  z^{layer + 1} {stat([r['z_rates'][layer] for r in mine])}"
            for key in ("z1_vs_words", "z2_vs_phrases"):
                if key in mine[0]:
                    line += f"  F1 {key} {stat([r[key]['f1'] for r in mine])}"
                    line += " [" + ",".join(r[key]["alignment"] for r in mine) + "]"
            line += f"  token F1 {stat([r['z1_token_f1'] for r in mine])}"
        print(line, flush=True)


def main(argv):
    del argv
    import hmkeras
    from hmkeras import data

    train, heldout, references = corpus()
    # The symbols of both parts (a rare symbol of real text may occur in
    # the held-out part only).
    vocab = data.CharVocabulary.from_text(train + heldout)
    train_ids = np.asarray(vocab.encode(train), np.int32)
    heldout_ids = np.asarray(vocab.encode(heldout), np.int32)
    x, y = windows(train_ids, FLAGS.seq_len)
    rows = []
    for seed in (int(s) for s in FLAGS.seeds):
        order = np.random.default_rng(seed).permutation(len(x))
        needed = FLAGS.steps * FLAGS.batch_size
        order = np.resize(order, needed)  # repeats the shuffled windows if short
        for name in FLAGS.models:
            model, rnn_model, cell = build(name, len(vocab), seed)
            start = time.time()
            callbacks = []
            if name == "hmlstm_slope":
                callbacks.append(hmkeras.SlopeAnnealing(
                    lambda step: min(5.0, 1.0 + FLAGS.slope_per_step * step), unit="step"))
            model.fit(x[order], y[order], batch_size=FLAGS.batch_size, epochs=1,
                      shuffle=False, verbose=0, callbacks=callbacks)
            row = {"corpus": FLAGS.corpus, "model": name, "seed": seed,
                   "steps": FLAGS.steps, "units": FLAGS.units,
                   "train_seconds": round(time.time() - start, 1)}
            row.update(evaluate(model, rnn_model, cell, heldout, heldout_ids, references))
            rows.append(row)
            print(json.dumps(row), flush=True)
            if FLAGS.output:
                with open(FLAGS.output, "a") as f:
                    f.write(json.dumps(row) + "\n")
    summarize(rows)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    os.pardir, "examples"))
    from command_line import parse_flags  # noqa: E402

    app.run(main, flags_parser=parse_flags)
