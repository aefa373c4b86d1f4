"""A trained run of `examples/ptb_char.py` read back for the bench scripts:
its language model with the best weights, and one pass over a text at
batch 1 with the state carried, as the run's test pass reads it."""

import os

import numpy as np

CHUNK = 1000


def load_model(run_dir):
    """The run's `CharLanguageModel` with its best weights, and its vocabulary."""
    from hmkeras.data.vocabulary import CharVocabulary
    from hmkeras.models.char_language_model import CharLanguageModel
    from hmkeras.models.char_language_model import CharLanguageModelConfig

    with open(os.path.join(run_dir, "model_config.json")) as f:
        lm = CharLanguageModel(CharLanguageModelConfig.from_json(f.read()))
    lm.network.load_weights(os.path.join(run_dir, "checkpoints", "best.weights.h5"))
    with open(os.path.join(run_dir, "vocabulary.json")) as f:
        return lm, CharVocabulary.from_json(f.read())


def read_steps(lm, ids):
    """Per input step of the symbol ids `ids`: the network's raw outputs
    `[h^1|..|h^L|z^1..]`, the predictive entropy (nats) and the input
    embedding, at batch 1 with the state carried."""
    import keras
    import tensorflow as tf

    from hmkeras.cells.boundary_placement import predictive_entropy

    ids = np.asarray(ids, np.int32)
    step = tf.function(lambda x, state: lm.network([x, *state], training=False))
    state = [tf.constant(s) for s in lm.zero_state(1)]
    outputs, entropies = [], []
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start: start + CHUNK]
        padded = np.pad(chunk, [0, CHUNK - len(chunk)])[None]  # one trace
        logits, rnn_outputs, *state = step(tf.constant(padded), state)
        outputs.append(rnn_outputs[0, :len(chunk)].numpy())
        entropies.append(predictive_entropy(logits[0, :len(chunk)], "float64").numpy())
    embedding = next(layer for layer in lm.network.layers
                     if isinstance(layer, keras.layers.Embedding))
    return np.concatenate(outputs), np.concatenate(entropies), embedding(ids).numpy()
