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
    embedding, at batch 1 with the state carried
    (`word_discovery_report.batch_one_pass`)."""
    import keras

    from hmkeras.analysis.word_discovery_report import batch_one_pass
    from hmkeras.analysis.word_discovery_report import entropies_of

    ids = np.asarray(ids, np.int32)
    outputs, log_probs = batch_one_pass(lm, ids, CHUNK)
    entropies = entropies_of(log_probs)
    embedding = next(layer for layer in lm.network.layers
                     if isinstance(layer, keras.layers.Embedding))
    return outputs, entropies, embedding(ids).numpy()
