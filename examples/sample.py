r"""Samples text from a step model exported by `examples/ptb_char.py`.

The SavedModel (`hmkeras.training.step_export`) has no hidden state: this script
asks it for the zero state, feeds one symbol at a time and carries the
returned state itself.  Only TensorFlow and NumPy are needed to run it.

    python examples/sample.py --model_dir=runs/quick_hmlstm/step_model \
        --temperature=0.8 --length=300 --seed=1 --prime="qi "
"""

from absl import app
from absl import flags
import numpy as np

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "The exported step SavedModel.")
flags.DEFINE_float("temperature", 0.8, "Softmax temperature (> 0).")
flags.DEFINE_integer("length", 300, "Number of symbols to generate.")
flags.DEFINE_integer("seed", 0, "Seed of the sampler.")
flags.DEFINE_string("prime", "", "Text read before sampling (must use the "
                    "training vocabulary).")


def sample(model_dir, length=300, temperature=0.8, seed=0, prime=""):
    """Returns `prime` followed by `length` sampled symbols (str or bytes)."""
    import tensorflow as tf

    from hmkeras.data import CharVocabulary

    if not temperature > 0:
        raise ValueError(f"--temperature must be > 0. Received: {temperature!r}")
    if length < 0:
        raise ValueError(f"--length must be >= 0. Received: {length!r}")
    loaded = tf.saved_model.load(model_dir)
    info = loaded.signatures["info"]()
    vocab = CharVocabulary.from_json(info["vocabulary_json"].numpy().decode("utf-8"))
    step = loaded.signatures["step"]
    state = loaded.signatures["zero_state"](batch_size=tf.constant(1))
    if vocab.kind == "bytes" and isinstance(prime, str):
        prime = prime.encode("utf-8")
    # Unknown symbols in the prime raise (CharVocabulary never maps silently).
    rng = np.random.default_rng(seed)
    # Without a prime, the first symbol is drawn uniformly.
    context = [int(t) for t in vocab.encode(prime)] if prime else [int(rng.integers(len(vocab)))]
    generated = []
    out = None
    for token in context:
        out = step(token_ids=tf.constant([token], tf.int32), **state)
        state = {k: v for k, v in out.items() if k.startswith("state_")}
    for _ in range(length):
        logits = out["logits"].numpy()[0].astype(np.float64) / temperature
        p = np.exp(logits - logits.max())
        token = int(rng.choice(len(p), p=p / p.sum()))
        generated.append(token)
        out = step(token_ids=tf.constant([token], tf.int32), **state)
        state = {k: v for k, v in out.items() if k.startswith("state_")}
    head = prime if prime else vocab.decode(np.asarray(context, np.int32))
    return head + vocab.decode(np.asarray(generated, np.int32))


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    if not FLAGS.model_dir:
        raise app.UsageError("--model_dir is required.")
    text = sample(FLAGS.model_dir, FLAGS.length, FLAGS.temperature, FLAGS.seed,
                  FLAGS.prime)
    print(text if isinstance(text, str) else text.decode("utf-8", "replace"))


if __name__ == "__main__":
    app.run(main)
