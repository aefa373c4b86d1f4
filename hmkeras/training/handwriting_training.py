"""Whole-sequence training of a `HandwritingModel` with Keras `fit`.

Chung et al. (2017, Section 4.2) train on whole IAM-OnDB lines (mini-batches
of 32). `HandwritingTrainer` wraps the stateless network of a
`hmkeras.models.handwriting_model.HandwritingModel`: every batch starts from
the zero state, its loss is the mixture negative log-likelihood (Graves
2013, Eq. 26) averaged over the real (weight 1) steps of the padded batch,
plus, while training, the model's boundary prior (`model.boundary_prior`,
`hmkeras.BoundaryPrior`, on by default for the hierarchical cells) on the
batch's boundaries with the step weights as its mask, so that padding
counts neither as steps nor as boundaries; and it logs

* `loss`: that per-step mean (nats), the prior included while training
  (as the char LM's `TruncatedBPTTModel` logs it; evaluation leaves the
  prior out),
* `nll_per_sequence`: the summed NLL divided by the number of sequences
  (the negative of Table 3's measure, for the batches seen),
* `z_rate_1 ... z_rate_{L-1}` (hierarchical cells): the batch's boundary
  rates over the real steps, read by `hmkeras.BoundaryMonitor`.

Batches are `(inputs, targets, weights)` as made by
`hmkeras.models.handwriting_model.pad_sequences`.

The steps are written in `keras.ops`, once, and run by
`hmkeras.training.backend_steps`: on TensorFlow a `tf.GradientTape` step
(under `tf.distribute` too), on JAX the same computation made stateless.
"""

import keras
from keras import ops

from hmkeras.heads.mixture_density_output import mixture_negative_log_likelihood
from hmkeras.training import backend_steps
from hmkeras.training.optimizer_on_compile import BuildsOptimizerOnCompile


class HandwritingTrainer(BuildsOptimizerOnCompile, keras.Model):
    """Trains a `HandwritingModel` on padded whole sequences.

    Args:
        handwriting_model: A `HandwritingModel`.
        **kwargs: Base model keyword arguments, such as `name`.

    Call arguments:
        inputs: `(batch, time, 3)` strokes. Returns the mixture parameters,
            the RNN starting from the zero state.

    Examples:

        >>> import keras, numpy as np
        >>> from hmkeras.models.handwriting_model import HandwritingModel, pad_sequences
        >>> from hmkeras.training import HandwritingTrainer
        >>> model = HandwritingModel(units=4, output_units=4, num_components=2)
        >>> trainer = HandwritingTrainer(model)
        >>> trainer.compile(keras.optimizers.Adam(0.01))
        >>> x, y, w = pad_sequences([np.zeros((6, 3), "float32")] * 2)
        >>> history = trainer.fit(x, y, sample_weight=w, batch_size=2, verbose=0)
        >>> sorted(history.history)
        ['loss', 'nll_per_sequence', 'z_rate_1', 'z_rate_2']
    """

    def __init__(self, handwriting_model, **kwargs):
        if not (isinstance(getattr(handwriting_model, "network", None), keras.Model)
                and hasattr(handwriting_model, "mixture")):
            raise ValueError(
                "`handwriting_model` must be a hmkeras HandwritingModel. "
                f"Received: handwriting_model={handwriting_model!r}"
            )
        super().__init__(**kwargs)
        self.handwriting_model = handwriting_model
        self.network = handwriting_model.network
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.sequence_tracker = keras.metrics.Mean(name="nll_per_sequence")
        self.built = True

    def _run(self, inputs, training):
        batch = ops.shape(inputs)[0]
        zeros = [ops.zeros((batch, size)) for size in self.handwriting_model.state_sizes]
        params, rnn_outputs, *_ = self.network([inputs, *zeros], training=training)
        return params, rnn_outputs

    def call(self, inputs, training=False):
        return self._run(inputs, training)[0]

    def _sequence_losses(self, data, training):
        """`(loss, per_sequence, rnn_outputs, weights)` of one padded batch.

        Under a `tf.distribute` strategy every replica's loss is its own
        rows' per-step mean, not divided by the number of replicas, so the
        summed gradients are that many times the whole batch's. The prior
        is added the same way: the rate form's value on every replica is
        the whole batch's and its gradient is scaled by the number of
        replicas (`hmkeras.cells.boundary_prior`), the binomial form's is
        the replica's own per-step mean; either way its summed gradient
        keeps the same weight against the NLL's as on one device.
        """
        inputs, targets, weights = keras.utils.unpack_x_y_sample_weight(data)
        if weights is None:
            weights = ops.ones(ops.shape(inputs)[:2])
        weights = ops.cast(weights, "float32")
        params, rnn_outputs = self._run(inputs, training)
        nll = mixture_negative_log_likelihood(params, targets) * weights
        total = ops.sum(nll)
        loss = total / ops.maximum(ops.sum(weights), 1.0)
        penalty = sum(self.network.losses) if self.network.losses else 0.0
        prior = self.handwriting_model.boundary_prior
        if training and prior is not None:
            # Padded steps (weight 0) count neither as steps nor as boundaries.
            penalty += ops.cast(prior(rnn_outputs, mask=weights), loss.dtype)
        per_sequence = total / ops.cast(ops.shape(inputs)[0], "float32")
        return loss + penalty, per_sequence, rnn_outputs, weights

    def _logs(self, loss, per_sequence, rnn_outputs, weights):
        self.loss_tracker.update_state(loss)
        self.sequence_tracker.update_state(per_sequence)
        logs = {"loss": self.loss_tracker.result(),
                "nll_per_sequence": self.sequence_tracker.result()}
        model = self.handwriting_model
        if model.is_hierarchical:
            z = ops.cast(model.boundaries(rnn_outputs), "float32")
            rates = ops.sum(z * weights[..., None], axis=(0, 1)) / ops.maximum(
                ops.sum(weights), 1.0)
            for index in range(model.hierarchical_cell.num_layers - 1):
                logs[f"z_rate_{index + 1}"] = rates[index]
        return logs

    def train_step(self, *args):
        """One step (`hmkeras.training.backend_steps`): Keras calls it with
        `(data)` on TensorFlow and with `(state, data)` on JAX."""
        def forward(data):
            loss, *aux = self._sequence_losses(data, True)
            return loss, aux

        return backend_steps.train_step(
            self, args, forward, lambda loss, aux: self._logs(loss, *aux))

    def test_step(self, *args):
        """One evaluation step: `(data)` on TensorFlow, `(state, data)` on JAX."""
        return backend_steps.test_step(
            self, args, lambda data: self._logs(*self._sequence_losses(data, False)))

    @property
    def metrics(self):
        return [self.loss_tracker, self.sequence_tracker]
