"""`BoundaryLosses`: a hierarchical model's boundary losses, in its network.

The models of `hmkeras.models` with an HM-LSTM or HMRNN add the boundary
prior (`hmkeras.BoundaryPrior`) and, for the character models, the
placement (`hmkeras.BoundaryPlacement`) to the training loss.  Both are
losses of the model's network, added by this layer, so that `fit` on the
network (`lm.network.compile(...); lm.network.fit(...)`) trains the
model that the library's trainers train: they take the network's losses
as Keras' `compute_loss` does.
"""

import keras

from hmkeras import argument_checks


@keras.saving.register_keras_serializable(package="hmkeras")
class BoundaryLosses(keras.layers.Layer):
    """The identity on a hierarchical RNN's output that, while training,
    adds the model's boundary losses to the network's.

    Args:
        columns: `(start, stop)`: the boundaries `z^1 .. z^{L-1}` are the
            output's columns `start:stop` (last axis).
        prior: The `BoundaryPrior`, or None.
        placement: The `BoundaryPlacement`, or None; it needs the `logits`.
        pad_id: The padding token, or None: with `tokens`, the steps whose
            token is `pad_id` are masked out of both losses.
        backward_model: For `BoundaryPlacement(form="bidirectional")`, a
            model of the `tokens` giving the predictions of a language
            model that reads them reversed (in its reading order), or None.
            The layer runs it in training passes only and adds its own
            loss (`BoundaryPlacement.training_losses`).
        **kwargs: Keras layer arguments (`name`, ...).

    Call arguments:
        rnn_outputs: The `(batch, time, features)` output of the RNN.
        logits: The `(batch, time, classes)` predictions of the next step,
            for the placement.
        tokens: The `(batch, time)` input tokens, for the mask and the
            placement's surprisal (`BoundaryPlacement(form="surprisal")`).
        training: The losses are added only while training.

    Returns:
        `logits` where given, else `rnn_outputs`, unchanged: the layer
        stands on the path to the model's predictions, so a model built
        from them keeps the losses.

    Examples:

        >>> import numpy as np
        >>> from hmkeras.cells.boundary_prior import BoundaryPrior
        >>> losses = BoundaryLosses((4, 5), prior=BoundaryPrior((5,)))
        >>> rnn_outputs = np.zeros((2, 3, 5), "float32")
        >>> _ = losses(rnn_outputs, training=True)
        >>> len(losses.losses)
        1
    """

    def __init__(self, columns, prior=None, placement=None, pad_id=None,
                 backward_model=None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(prior, dict):  # from `get_config`
            prior = keras.saving.deserialize_keras_object(prior)
        if isinstance(placement, dict):
            placement = keras.saving.deserialize_keras_object(placement)
        if isinstance(backward_model, dict):
            backward_model = keras.saving.deserialize_keras_object(backward_model)
        self.columns = tuple(argument_checks.check_int(f"columns[{i}]", c, minimum=0)
                             for i, c in enumerate(columns))
        self.prior = prior
        self.placement = placement
        self.pad_id = pad_id
        self.backward_model = backward_model

    def call(self, rnn_outputs, logits=None, tokens=None, training=False):
        if training:
            start, stop = self.columns
            boundaries = rnn_outputs[..., start:stop]
            mask = None
            if tokens is not None and self.pad_id is not None:
                mask = keras.ops.not_equal(tokens, self.pad_id)
            if self.prior is not None:
                self.add_loss(self.prior(boundaries, mask=mask))
            if self.placement is not None:
                backward_logits = None
                if self.backward_model is not None:
                    backward_logits = self.backward_model(tokens, training=True)
                for loss in self.placement.training_losses(
                        boundaries, logits, mask=mask, tokens=tokens,
                        backward_logits=backward_logits):
                    self.add_loss(loss)
        return rnn_outputs if logits is None else logits

    def compute_output_shape(self, rnn_outputs_shape, logits_shape=None, tokens_shape=None):
        return rnn_outputs_shape if logits_shape is None else logits_shape

    def get_config(self):
        return {**super().get_config(),
                "columns": list(self.columns),
                "prior": keras.saving.serialize_keras_object(self.prior),
                "placement": keras.saving.serialize_keras_object(self.placement),
                "pad_id": self.pad_id,
                "backward_model": keras.saving.serialize_keras_object(self.backward_model)}
