r"""Samples text from a step model exported by `examples/ptb_char.py`.

The SavedModel (`hmkeras.training.step_export`) has no hidden state: this script
asks it for the zero state, feeds one symbol at a time and carries the
returned state itself.  Only TensorFlow and NumPy are needed to run it.

    python examples/sample.py --model_dir=runs/quick_hmlstm/step_model \
        --temperature=0.8 --length=300 --seed=1 --prime="qi "
    python examples/sample.py --model_dir=runs/quick_hmlstm   # a run directory

A bad flag, a directory without a step model or a prime with symbols the
model does not know is one line on stderr.
"""

import math
import os

from absl import flags
import numpy as np

from command_line import FlagError  # examples/command_line.py
from command_line import absl_main
from command_line import run_script
from run_directory import find_step_model

# TensorFlow (imported lazily) reads this when it loads: no C++ start-up
# chatter unless the user asks for it.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "The exported step SavedModel, or the run "
                    "directory of examples/ptb_char.py that holds it (step_model/).")
flags.DEFINE_float("temperature", 0.8, "Softmax temperature (> 0).")
flags.DEFINE_integer("length", 300, "Number of symbols to generate (0: none).",
                     lower_bound=0)
flags.DEFINE_integer("seed", 0, "Seed of the sampler.", lower_bound=0)
flags.DEFINE_string("prime", "", "Text read before sampling (must use the "
                    "training vocabulary).")
flags.register_validator("temperature", lambda v: math.isfinite(v) and v > 0,
                         message="must be a number > 0")
flags.mark_flag_as_required("model_dir")


def sample(model_dir, length=300, temperature=0.8, seed=0, prime=""):
    """Returns `prime` followed by `length` sampled symbols (str or bytes).

    Without a prime, the first symbol is drawn uniformly (it is the first of
    the `length`). `model_dir` is the step model or a run directory.
    """
    import tensorflow as tf

    from hmkeras.data import CharVocabulary

    if not temperature > 0:
        raise FlagError(f"--temperature must be > 0. Received: {temperature!r}")
    if length < 0:
        raise FlagError(f"--length must be >= 0. Received: {length!r}")
    loaded = tf.saved_model.load(find_step_model(model_dir, "char_lm"))
    info = loaded.signatures["info"]()
    if "vocabulary_json" not in info:  # a run older than run_kind.json
        raise FlagError(
            f"--model_dir={model_dir!r} holds a step model without a vocabulary "
            f"(its info: {sorted(info)}), not one of examples/ptb_char.py; for "
            "handwriting use examples/sample_handwriting.py.")
    vocab = CharVocabulary.from_json(info["vocabulary_json"].numpy().decode("utf-8"))
    step = loaded.signatures["step"]
    state = loaded.signatures["zero_state"](batch_size=tf.constant(1))
    if vocab.kind == "bytes" and isinstance(prime, str):
        prime = prime.encode("utf-8")
    # Unknown symbols in the prime are refused (CharVocabulary never maps
    # them silently).
    unknown = sorted(set(prime) - set(vocab.symbols)) if vocab.unknown_id is None else []
    if unknown:
        raise FlagError(
            f"--prime holds {len(unknown)} symbol(s) the model's vocabulary lacks: "
            f"{[chr(u) if isinstance(u, int) else u for u in unknown][:20]}. "
            f"Its {len(vocab)} symbols: {vocab.symbols!r}")
    primed = [int(t) for t in vocab.encode(prime)] if prime else []
    rng = np.random.default_rng(seed)
    # Without a prime, the first symbol is drawn uniformly.
    generated = [] if primed or not length else [int(rng.integers(len(vocab)))]
    context = primed or generated
    out = None
    for token in context:
        out = step(token_ids=tf.constant([token], tf.int32), **state)
        state = {k: v for k, v in out.items() if k.startswith("state_")}
    while len(generated) < length:
        logits = out["logits"].numpy()[0].astype(np.float64) / temperature
        p = np.exp(logits - logits.max())
        token = int(rng.choice(len(p), p=p / p.sum()))
        generated.append(token)
        out = step(token_ids=tf.constant([token], tf.int32), **state)
        state = {k: v for k, v in out.items() if k.startswith("state_")}
    text = vocab.decode(np.asarray(generated, np.int32))
    return prime + text if prime else text


def sample_from_flags():
    """The command: find the step model, sample, print the text."""
    model_dir = find_step_model(FLAGS.model_dir, "char_lm")
    if FLAGS.length == 0:
        return  # nothing to generate, nothing to print
    text = sample(model_dir, FLAGS.length, FLAGS.temperature, FLAGS.seed,
                  FLAGS.prime)
    print(text if isinstance(text, str) else text.decode("utf-8", "replace"))


main = absl_main(sample_from_flags)

if __name__ == "__main__":
    run_script(main)
