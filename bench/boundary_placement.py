r"""Where do the boundaries of a default `HMLSTM` land inside a word?

A diagnosis of boundary placement on a corpus where it has one right
answer. The words are four letters and a space; a word's stem (its first
three letters) follows from the word before it, and its last letter is one
of two, drawn at random. So the last letter is the only character that
carries information (1 bit per word: the corpus' entropy rate is 0.2
bits/char), and a word is known only there. The model is the one a user
writes,

    Embedding(vocab, 8) -> hmkeras.HMLSTM(units) -> Dense(vocab)
        -> hmkeras.BoundaryPlacementLoss

with the defaults (the rate prior, segment lengths 5 and 15: one z^1 per
word of five characters; the placement where the next character is
uncertain), trained with a plain `fit`. For every seed the
script prints the bits per character on held-out text, the boundary rates,
how often z^1 and z^2 fire at each position of a word (its letters 1-4 and
the space) and the F1 of z^1 against the words' last letters and against
the spaces.

    python bench/boundary_placement.py                      # seeds 0, 1, 2
    python bench/boundary_placement.py --boundary_placement=none  # the prior alone
    python bench/boundary_placement.py --boundary_prior=none  # the papers' model

Writes one JSON line per seed to `--output` (optional).
"""

import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

import numpy as np  # noqa: E402

STEMS = ("kap", "mur", "sol", "tin")
ENDINGS = "eiou"
WORD_LENGTH = 5  # four letters and the space

FLAGS = flags.FLAGS
flags.DEFINE_list("seeds", ["0", "1", "2"], "Seeds (model and corpus).")
flags.DEFINE_integer("units", 16, "Units of every HMLSTM layer.", lower_bound=1)
flags.DEFINE_integer("epochs", 12, "Epochs over the training text.", lower_bound=1)
flags.DEFINE_integer("train_chars", 19_200, "Training characters.", lower_bound=80)
flags.DEFINE_enum("boundary_prior", "rate", ["rate", "binomial", "none"],
                  "The HMLSTM's boundary prior (none: the papers' model).")
flags.DEFINE_enum("boundary_placement", "entropy", ["entropy", "none"],
                  "hmkeras.BoundaryPlacementLoss after the logits (none: the prior "
                  "alone); none whenever --boundary_prior=none.")
flags.DEFINE_string("output", None, "JSON-lines file of the results (appended).")


def last_letter_corpus(num_chars, seed):
    """Words of `STEMS` + one of `ENDINGS` and a space: a word's stem
    follows from the previous word, its last letter is one of two.

    Examples:

        >>> text = last_letter_corpus(40, seed=0)
        >>> len(text) >= 40 and text.split()[0]
        'kape'
    """
    rng = np.random.default_rng(seed)
    words, word = [], STEMS[0] + ENDINGS[0]
    while len(words) * WORD_LENGTH < num_chars:
        words.append(word)
        stem, ending = STEMS.index(word[:3]), ENDINGS.index(word[3])
        next_stem = STEMS[(stem + ending + 1) % len(STEMS)]
        choice = (stem * 4 + ending + rng.integers(2)) % len(ENDINGS)
        word = next_stem + ENDINGS[choice]
    return " ".join(words) + " "


def placement_on():
    """Whether the model adds `BoundaryPlacementLoss` (never without a prior)."""
    return FLAGS.boundary_placement == "entropy" and FLAGS.boundary_prior != "none"


def train_and_place(seed):
    """One seed: the trained model's figures on held-out text (a dict)."""
    import keras

    import hmkeras
    from hmkeras.analysis import boundary_metrics

    text = last_letter_corpus(FLAGS.train_chars + 2_100, seed)
    symbols = sorted(set(text))
    ids = np.array([symbols.index(c) for c in text])
    window = 40
    count = (FLAGS.train_chars // window) * window
    x, y = ids[:count].reshape(-1, window), ids[1:count + 1].reshape(-1, window)
    keras.utils.set_random_seed(seed)
    prior = {} if FLAGS.boundary_prior == "rate" else {
        "boundary_prior": None if FLAGS.boundary_prior == "none" else FLAGS.boundary_prior}
    layer = hmkeras.HMLSTM(FLAGS.units, return_sequences=True, **prior)
    tokens = keras.Input((None,), dtype="int32")
    outputs = layer(keras.layers.Embedding(len(symbols), 8)(tokens))
    logits = keras.layers.Dense(len(symbols))(outputs)
    if placement_on():
        logits = hmkeras.BoundaryPlacementLoss()([outputs, logits])
    model = keras.Model(tokens, logits)
    model.compile(keras.optimizers.Adam(0.01, clipnorm=1.0),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    started = time.time()
    model.fit(x, y, batch_size=16, epochs=FLAGS.epochs, shuffle=False, verbose=0)
    # Held out: 2,000 characters from a word start after the training text.
    start = count + 1 + (-(count + 1)) % WORD_LENGTH
    held_out = text[start:start + 2_000]
    inputs = np.array([symbols.index(c) for c in held_out])[None]
    out, held_logits = keras.Model(tokens, [outputs, logits]).predict_on_batch(inputs[:, :-1])
    log_probs = keras.ops.convert_to_numpy(keras.ops.log_softmax(held_logits, axis=-1))[0]
    bits = -np.mean(log_probs[np.arange(len(held_out) - 1), inputs[0, 1:]]) / np.log(2)
    z = np.asarray(layer.split_outputs(out)[1])[0]
    position = np.arange(len(z)) % WORD_LENGTH  # 0-3 the letters, 4 the space
    text_seen = held_out[:-1]
    f1 = {align: boundary_metrics.boundary_scores(
              z[:, 0], boundary_metrics.reference_boundaries(text_seen, align=align)).f1
          for align in ("before", "separator")}
    return {
        "seed": seed, "boundary_prior": FLAGS.boundary_prior,
        "boundary_placement": "entropy" if placement_on() else "none",
        "bits_per_char": float(bits), "entropy_rate": 1.0 / WORD_LENGTH,
        "z_rates": z.mean(axis=0).tolist(),
        "z1_by_position": [float(z[position == p, 0].mean()) for p in range(WORD_LENGTH)],
        "z2_by_position": [float(z[position == p, 1].mean()) for p in range(WORD_LENGTH)],
        "f1_last_letter": float(f1["before"]), "f1_space": float(f1["separator"]),
        "train_seconds": time.time() - started,
    }


def main(argv):
    del argv
    print("position in the word:   1     2     3     4   space")
    for seed in (int(s) for s in FLAGS.seeds):
        result = train_and_place(seed)
        rates = ", ".join(f"{r:.3f}" for r in result["z_rates"])
        print(f"seed {seed}: {result['bits_per_char']:.3f} bits/char (entropy rate "
              f"0.200), z rates {rates}; F1 of z^1 vs last letters "
              f"{result['f1_last_letter']:.2f}, vs spaces {result['f1_space']:.2f}")
        for layer in (1, 2):
            shares = "  ".join(f"{r:.2f}" for r in result[f"z{layer}_by_position"])
            print(f"  z^{layer} fires at:       {shares}")
        if FLAGS.output:
            with open(FLAGS.output, "a") as f:
                f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    flags.register_validator(
        "seeds", lambda v: bool(v) and all(s.isdigit() for s in v),
        message="must be integers >= 0, comma-separated, e.g. 0,1,2")
    app.run(main)
