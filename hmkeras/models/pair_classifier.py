"""Sentence-pair classifier for logical inference (Jacob et al. 2018, Sec. 3.2).

Both sentences of a pair are read by the same encoder (shared weights);
their final states `u` (left) and `v` (right) are combined as
`[u; v; u - v; u * v]`, then one tanh layer and a softmax over the seven
relations of `hmkeras.data.logic.RELATIONS`.  (Bowman et al. 2015 feed
`[u; v]` to a neural-tensor comparison layer; the four-part feature with
one dense layer is a lighter comparison that exposes the same
differences.)  Encoders (`ENCODERS`):

* `"lstm"`: a plain LSTM (the paper's baseline);
* `"rrnet_supervised"`: `RecurrentRecursiveCell(mode="fixed")` fed the
  ground-truth tree of each sentence (split at "(", merge at ")", recur
  otherwise; `hmkeras.data.logic.sentence_operations`), at training and
  at test time, as in the paper's Fig. 2 ("trained with ground-truth
  trees as input"); the tree is given, so there is no policy to train;
* `"rrnet_random"`: the same cell with a random but fixed operation per
  token id, drawn once from `seed` (Jacob et al.'s "random deterministic
  policies").

Inputs are a dict `{"left_tokens", "left_operations", "right_tokens",
"right_operations"}` of `(batch, T)` ints: token ids from
`hmkeras.data.logic.encode_sentence`, 0-padded at the end, and the
ground-truth operations (ignored by the LSTM and the random trees).
Output: `(batch, 7)` relation logits.

Examples:

    >>> import numpy as np
    >>> from hmkeras.data import logic
    >>> model = PairClassifier(encoder="rrnet_supervised", units=8, embedding_dim=4)
    >>> left, right = "( not a )", "( a or b )"
    >>> inputs = {"left_tokens": logic.encode_sentence(left)[None],
    ...           "left_operations": np.array([logic.sentence_operations(left)]),
    ...           "right_tokens": logic.encode_sentence(right)[None, :4],
    ...           "right_operations": np.array([logic.sentence_operations(right)])[:, :4]}
    >>> tuple(model(inputs).shape)
    (1, 7)
"""

import keras
import numpy as np
from keras import ops

from hmkeras.cells.sequence_rnn import RNN
from hmkeras import argument_checks
from hmkeras.cells.recurrent_recursive_cell import RECUR
from hmkeras.cells.recurrent_recursive_cell import RecurrentRecursiveCell
from hmkeras.training.optimizer_on_compile import BuildsOptimizerOnCompile

ENCODERS = ("lstm", "rrnet_supervised", "rrnet_random")
NUM_RELATIONS = 7
INPUT_KEYS = ("left_tokens", "left_operations", "right_tokens", "right_operations")


def _pad_to(tensor, width, value):
    """`(batch, T)` int32 padded at the end to `(batch, width)`."""
    tensor = ops.cast(tensor, "int32")
    return ops.pad(tensor, [[0, 0], [0, width - ops.shape(tensor)[1]]],
                   constant_values=value)


def _common_width(left, right):
    """The longer of two `(batch, T)` widths (a Python int where both are
    known when traced, as under JAX; a scalar tensor otherwise)."""
    a, b = ops.shape(left)[1], ops.shape(right)[1]
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    return ops.maximum(a, b)


@keras.saving.register_keras_serializable(package="hmkeras")
class PairClassifier(BuildsOptimizerOnCompile, keras.Model):
    """Shared sentence encoder + `[u; v; u - v; u * v]` comparison + softmax.

    Train it with `compile(loss=keras.losses.SparseCategoricalCrossentropy(
    from_logits=True), metrics=["accuracy"])` on integer relation labels.

    Args:
        encoder: One of `ENCODERS`.
        vocab_size: Number of token ids (0 is padding; the logic language
            has 11 tokens, so 12).
        units: Size of the encoder state.
        embedding_dim: Size of the token embedding.
        hidden_units: Size of the tanh comparison layer.
        max_depth: Stack slots of the RRNet cell (deepest nesting; a
            sentence with n operations nests at most n deep).
        seed: Optional int: weights and the random trees.
        **kwargs: Base-model arguments (`name`, ...).

    Examples:

        >>> import keras, numpy as np
        >>> from hmkeras.models import PairClassifier
        >>> model = PairClassifier(encoder="lstm", units=8, embedding_dim=4, hidden_units=8)
        >>> tokens = np.array([[1, 2, 3, 0], [4, 5, 0, 0]])  # 0 pads
        >>> inputs = {"left_tokens": tokens, "right_tokens": tokens[::-1],
        ...           "left_operations": np.zeros_like(tokens),
        ...           "right_operations": np.zeros_like(tokens)}
        >>> tuple(model(inputs).shape)  # logits over the seven relations
        (2, 7)
    """

    def __init__(self, encoder="lstm", vocab_size=12, units=64, embedding_dim=32,
                 hidden_units=64, max_depth=12, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.encoder_name = argument_checks.check_choice("encoder", encoder, ENCODERS)
        self.vocab_size = argument_checks.check_int("vocab_size", vocab_size, minimum=2)
        self.units = argument_checks.check_positive_int("units", units)
        self.embedding_dim = argument_checks.check_positive_int(
            "embedding_dim", embedding_dim)
        self.hidden_units = argument_checks.check_positive_int(
            "hidden_units", hidden_units)
        self.max_depth = argument_checks.check_positive_int("max_depth", max_depth)
        self.seed = argument_checks.check_int("seed", seed, allow_none=True)
        init = keras.initializers.GlorotUniform(seed=self.seed)
        self.embedding = keras.layers.Embedding(
            vocab_size, embedding_dim, embeddings_initializer=init, name="embedding")
        self.cell = None
        if encoder == "lstm":
            self.encoder = keras.layers.LSTM(units, name="encoder", seed=self.seed)
        else:
            self.cell = RecurrentRecursiveCell(units, max_depth, mode="fixed",
                                               seed=self.seed)
            # The state is read, never the output; zeros for masked steps'
            # outputs let a mask through Keras' JAX loop.
            self.encoder = RNN(self.cell, return_state=True, zero_output_for_mask=True,
                               name="encoder")
        if encoder == "rrnet_random":
            # One fixed operation per token id; padding (0) recurs.
            table = np.random.default_rng(self.seed).integers(0, 3, size=vocab_size)
            table[0] = RECUR
            self.random_operations = table.astype("int32")
        self.comparison = keras.layers.Dense(
            hidden_units, activation="tanh", kernel_initializer=init, name="comparison")
        self.readout = keras.layers.Dense(NUM_RELATIONS, kernel_initializer=init,
                                          name="readout")
        # Every weight now, from a dummy pair (the encoders draw nothing):
        # `compile` builds the optimizer too, and the train step is traced once.
        one = np.ones((1, 1), "int32")
        self({key: one * (RECUR if "operations" in key else 1) for key in INPUT_KEYS})

    def encode(self, tokens, operations, training=False):
        """Final encoder state `(batch, units)` of 0-padded sentences."""
        tokens = ops.cast(tokens, "int32")
        mask = tokens > 0
        embedded = self.embedding(tokens)
        if self.cell is None:
            return self.encoder(embedded, mask=mask, training=training)
        if self.encoder_name == "rrnet_random":
            operations = ops.take(self.random_operations, tokens)
        cell_inputs = self.cell.pack_inputs(embedded, operations)
        _, h, *_ = self.encoder(cell_inputs, mask=mask, training=training)
        return h

    def call(self, inputs, training=False):
        missing = [key for key in INPUT_KEYS if key not in inputs]
        if missing:
            raise ValueError(f"`inputs` must be a dict with keys {list(INPUT_KEYS)}; "
                             f"missing {missing}.")
        left, right = inputs["left_tokens"], inputs["right_tokens"]
        width = _common_width(left, right)
        # Both sentences in one batch through the shared encoder.
        tokens = ops.concatenate([_pad_to(left, width, 0), _pad_to(right, width, 0)], 0)
        operations = ops.concatenate(
            [_pad_to(inputs["left_operations"], width, RECUR),
             _pad_to(inputs["right_operations"], width, RECUR)], 0)
        u, v = ops.split(self.encode(tokens, operations, training=training), 2, axis=0)
        features = ops.concatenate([u, v, u - v, u * v], axis=-1)
        return self.readout(self.comparison(features))

    def get_config(self):
        return {
            **super().get_config(),
            "encoder": self.encoder_name, "vocab_size": self.vocab_size,
            "units": self.units, "embedding_dim": self.embedding_dim,
            "hidden_units": self.hidden_units, "max_depth": self.max_depth,
            "seed": self.seed,
        }
