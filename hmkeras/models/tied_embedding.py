"""`TiedEmbedding`: one matrix for the input embedding and the softmax.

Weight tying (Press & Wolf 2016; Salton & Kelleher Section 6.1 tie the
softmax weight `W_s` of their Eq. 12 to the embedding matrix): the layer
holds one `(vocab_size, embedding_dim)` matrix `E` and a `(vocab_size,)`
output bias `b`, and is called twice in a model:

* ``layer(token_ids)`` looks the ids up: ``E[ids]``;
* ``layer(h, reverse=True)`` gives the logits ``h E^T + b`` of vectors `h`
  of size `embedding_dim` (project `h` first when its size differs).

Examples:

    >>> import keras, numpy as np
    >>> tied = TiedEmbedding(vocab_size=5, embedding_dim=3)
    >>> ids = keras.Input((None,), dtype="int32")
    >>> logits = tied(tied(ids), reverse=True)
    >>> model = keras.Model(ids, logits)
    >>> tuple(model(np.zeros((2, 4), "int32")).shape)
    (2, 4, 5)
    >>> len(model.trainable_weights)  # E and b, shared by both calls
    2
"""

import keras

from hmkeras import argument_checks

__all__ = ["TiedEmbedding"]


@keras.saving.register_keras_serializable(package="hmkeras")
class TiedEmbedding(keras.layers.Layer):
    """An embedding whose transpose is also the output layer.

    Args:
        vocab_size: Number of token ids.
        embedding_dim: Size of the embedding vectors.
        embeddings_initializer: Initializer of `E` (uniform in
            [-0.05, 0.05] by default, as in Salton & Kelleher).
        use_bias: Whether the logits get a bias `b` (Eq. 12's `+ b`).
        **kwargs: Base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: Integer ids `(...)` (other dtypes are cast to int32, as
            by `keras.layers.Embedding`), or with `reverse=True`
            floating-point vectors `(..., embedding_dim)` (integer vectors
            or another size are refused with a `ValueError`).
        reverse: False: embed; True: logits over the vocabulary.

    Examples:

        >>> import numpy as np
        >>> from hmkeras.models import TiedEmbedding
        >>> tied = TiedEmbedding(vocab_size=6, embedding_dim=4)
        >>> vectors = tied(np.array([[1, 2, 3]]))
        >>> tuple(vectors.shape), tuple(tied(vectors, reverse=True).shape)
        ((1, 3, 4), (1, 3, 6))
    """

    def __init__(self, vocab_size, embedding_dim, embeddings_initializer=None,
                 use_bias=True, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = argument_checks.check_positive_int("vocab_size", vocab_size)
        self.embedding_dim = argument_checks.check_positive_int(
            "embedding_dim", embedding_dim
        )
        self.embeddings_initializer = keras.initializers.get(
            embeddings_initializer
            or keras.initializers.RandomUniform(-0.05, 0.05)
        )
        self.use_bias = argument_checks.check_bool("use_bias", use_bias)
        # Per position in both directions: a sequence's mask goes through.
        self.supports_masking = True

    def build(self, input_shape=None):
        if self.built:
            return
        self.embeddings = self.add_weight(
            name="embeddings", shape=(self.vocab_size, self.embedding_dim),
            initializer=self.embeddings_initializer,
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                name="bias", shape=(self.vocab_size,), initializer="zeros"
            )
        self.built = True

    def call(self, inputs, reverse=False):
        if not reverse:
            return keras.ops.take(self.embeddings, keras.ops.cast(inputs, "int32"), axis=0)
        argument_checks.check_float_inputs("TiedEmbedding(reverse=True)", inputs)
        if inputs.shape[-1] not in (None, self.embedding_dim):
            raise ValueError(
                "TiedEmbedding(reverse=True) maps vectors of size "
                f"embedding_dim={self.embedding_dim} to logits: project them "
                "to that size first. Received: inputs.shape="
                f"{tuple(inputs.shape)}"
            )
        # Salton & Kelleher Eq. (12) with W_s = E (tied): logits = h E^T + b.
        logits = keras.ops.matmul(inputs, keras.ops.transpose(self.embeddings))
        if self.bias is not None:
            logits = logits + self.bias
        return logits

    def get_config(self):
        return {
            **super().get_config(),
            "vocab_size": self.vocab_size,
            "embedding_dim": self.embedding_dim,
            "embeddings_initializer": keras.initializers.serialize(
                self.embeddings_initializer),
            "use_bias": self.use_bias,
        }
