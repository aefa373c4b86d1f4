"""Export a character LM as a stateless step function for generation.

`export_step_model` writes a SavedModel whose signatures carry the RNN state
explicitly, in and out, so that the exported model has no hidden mutable
state (a `stateful=True` Keras export would mutate its state at each call):

* `step(token_ids[batch], state_0[batch, s_0], ..., state_k[batch, s_k])
  -> {"probabilities": [batch, vocab], "logits": [batch, vocab],
      "state_0": ..., ..., "state_k": ...}`: reads one symbol per row and
  returns the distribution of the next one and the new state;
* `zero_state(batch_size) -> {"state_0": ..., ..., "state_k": ...}`: the
  initial state (zeros; for HM cells z_0 = 0);
* `info() -> {"vocabulary_json": ..., "config_json": ..., "num_states": ...}`:
  the `hmkeras.data.CharVocabulary` JSON (rebuild it with
  `CharVocabulary.from_json`) and the model configuration.

The same functions are attributes of the object `tf.saved_model.load`
returns (`loaded.step(...)` etc.); the signatures are there for serving.
For hierarchical cells the step also returns `"boundaries"` `[batch, L-1]`.
"""

import tensorflow as tf

from hmkeras.cells import sparse_update


def state_name(index):
    """The name of state tensor `index` in the signatures."""
    return f"state_{index}"


class _StepModule(tf.Module):
    """The traceable object that `export_step_model` saves."""

    def __init__(self, language_model, vocabulary, count_updates=False):
        super().__init__(name="char_lm_step")
        self.network = language_model.network
        self.variables_list = list(language_model.network.variables)
        sizes = list(language_model.state_sizes)
        vocabulary_json = vocabulary.to_json()
        config_json = language_model.config.to_json()
        hierarchical = language_model.is_hierarchical
        num_states = len(sizes)
        network = self.network

        if count_updates:
            layers = language_model.hierarchical_cell.num_layers
            self.update_counts = [
                tf.Variable(tf.zeros((layers,), tf.int64), trainable=False, name=name)
                for name in ("executed_updates", "skipped_updates")
            ]
        token_spec = tf.TensorSpec([None], tf.int32, name="token_ids")
        state_specs = [
            tf.TensorSpec([None, size], tf.float32, name=state_name(i))
            for i, size in enumerate(sizes)
        ]

        @tf.function(input_signature=[token_spec, *state_specs])
        def step(token_ids, *state):
            logits, rnn_outputs, *new_state = network(
                [token_ids[:, None], *state], training=False
            )
            logits = tf.cast(logits[:, 0], tf.float32)
            out = {"logits": logits, "probabilities": tf.nn.softmax(logits)}
            for i, value in enumerate(new_state):
                out[state_name(i)] = value
            if hierarchical:
                out["boundaries"] = language_model.boundaries(rnn_outputs)[:, 0]
            if count_updates:  # z_{t-1} is the last state entry
                skipped = sparse_update.skipped_layers(out["boundaries"], state[-1])
                skipped = tf.cast(skipped, tf.int64)
                self.update_counts[0].assign_add(1 - skipped)
                self.update_counts[1].assign_add(skipped)
            return out

        @tf.function(input_signature=[tf.TensorSpec([], tf.int32, name="batch_size")])
        def zero_state(batch_size):
            return {
                state_name(i): tf.zeros([batch_size, size], tf.float32)
                for i, size in enumerate(sizes)
            }

        @tf.function(input_signature=[])
        def info():
            return {
                "vocabulary_json": tf.constant(vocabulary_json),
                "config_json": tf.constant(config_json),
                "num_states": tf.constant(num_states),
            }

        self.step = step
        self.zero_state = zero_state
        self.info = info


def export_step_model(language_model, vocabulary, path, sparse_updates=False):
    """Writes the step SavedModel of `language_model` to `path`.

    Args:
        language_model: A `hmkeras.models.char_language_model.CharLanguageModel`.
        vocabulary: The `hmkeras.data.CharVocabulary` it was trained with.
        path: Output directory.
        sparse_updates: Hierarchical cells only: the exported step skips
            the update of a layer that COPYs in every row (at batch 1,
            generation: every COPY), with the dense step's results
            (`hmkeras.cells.sparse_update`). The counts of executed and
            skipped updates are saved with the model, from zero: the loaded
            object's `update_counts` (`[executed, skipped]`, one entry per
            layer).

    Returns:
        `path`.

    Examples:

        >>> import tempfile, numpy as np, tensorflow as tf
        >>> from hmkeras.models.char_language_model import CharLanguageModel
        >>> from hmkeras.data import CharVocabulary
        >>> from hmkeras.training import export_step_model
        >>> vocab = CharVocabulary.from_text("ab c")
        >>> lm = CharLanguageModel(vocab_size=len(vocab), cell="hmlstm", units=4,
        ...                        embedding_dim=3, output_units=4)
        >>> path = export_step_model(lm, vocab, tempfile.mkdtemp())
        >>> loaded = tf.saved_model.load(path)
        >>> state = loaded.signatures["zero_state"](batch_size=tf.constant(1))
        >>> out = loaded.signatures["step"](token_ids=tf.constant([0]), **state)
        >>> tuple(out["probabilities"].shape)
        (1, 4)
    """
    if len(vocabulary) != language_model.config.vocab_size:
        raise ValueError(
            f"The vocabulary has {len(vocabulary)} symbols but the model "
            f"predicts {language_model.config.vocab_size}."
        )
    if sparse_updates and not language_model.is_hierarchical:
        raise ValueError(
            "`sparse_updates=True` needs a hierarchical cell (hmlstm, hmrnn). "
            f"Received: cell={language_model.config.cell!r}"
        )
    with sparse_update.sparse_updates(language_model.network, enabled=sparse_updates):
        module = _StepModule(language_model, vocabulary, count_updates=sparse_updates)
        _save(module, path)
    return path


def _save(module, path):
    """Traces the module's functions and writes the SavedModel."""
    tf.saved_model.save(
        module,
        path,
        signatures={
            "step": module.step.get_concrete_function(),
            "serving_default": module.step.get_concrete_function(),
            "zero_state": module.zero_state.get_concrete_function(),
            "info": module.info.get_concrete_function(),
        },
    )
