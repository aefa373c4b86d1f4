"""Truncated BPTT with the RNN state carried across consecutive batches.

`TruncatedBPTTModel` wraps the stateless network of a
`hmkeras.models.char_language_model.CharLanguageModel` and keeps its RNN state in
non-trainable variables of a fixed batch size.  Each `train_step` starts
from the carried state, runs one `(batch, seq_len)` window, applies the
gradient (which stops at the window: truncated back-propagation through
time) and stores the final state for the next batch.  With
`hmkeras.data.TruncatedBPTTBatches` row `i` of batch `k + 1` continues row
`i` of batch `k`, so the carried state, boundaries `z` included, is the
right initial state (Chung et al. Sec. 4.1 train on windows of 100 with the
state carried over).

The step is written once and run by `hmkeras.training.backend_steps`:
a `tf.GradientTape` step on TensorFlow and, on JAX, the same computation
made stateless, as Keras' JAX trainer asks.

Because the carried state lives in variables it is part of
`model.weights`: `save_weights` / `hmkeras.training.training_state` checkpoint it
with the parameters, so a run resumes mid-epoch exactly.

Under a `tf.distribute` strategy with several replicas (data parallelism:
each replica gets a slice of the global batch) every replica must find
the carried state of its own rows, wherever the strategy sends them
(`MultiWorkerMirroredStrategy` does not hand out a batch's rows in
replica order).  So the batches name their rows: feed
`((tokens, row_ids), targets)`, as `TruncatedBPTTBatches.dataset(
row_ids=True)` gives, `row_ids` the `(batch,)` indices in `[0,
batch_size)` of the rows of the global batch.  A replica gathers its
rows' state from the carried state (one variable of `batch_size` rows,
the same on every replica), and after the step the replicas' final
states are summed into that variable, each scattered to its rows (one
all-reduce; a sum with zeros is exact, so the result is the
single-device one).  Without row ids a model with several replicas
refuses to carry the state (a `ValueError` at the first step); with one
replica they are optional.  `carry_state=False` instead starts every
window from the zero state (independent windows: no state variables, any
batch size).  The loss is computed the way Keras' own `train_step` does
under a strategy (each replica's loss divided by the number of replicas,
the gradients summed), and the logged `loss`, `bpc` and `z_rate_l` are
the means over the replicas.  Keras' own `fit` and `evaluate` fail under
`MultiWorkerMirroredStrategy` with several workers (keras-team/keras#20585:
they average a first batch of several tensors, and then scalar logs, along
an axis 0); this model builds from its known input specs instead and hands
Keras its logs as `(1,)` tensors there, so it trains on several workers
(tested with two worker processes against one device).
"""

import math

import keras

import tensorflow as tf

from hmkeras import argument_checks
from hmkeras.training import backend_steps
from hmkeras.training.optimizer_on_compile import BuildsOptimizerOnCompile

_LN2 = math.log(2.0)


class TruncatedBPTTModel(BuildsOptimizerOnCompile, keras.Model):
    """Trains a `CharLanguageModel` with its state carried across batches.

    Args:
        language_model: A `CharLanguageModel` (an object with its `network`
            and `state_sizes`).
        batch_size: Positive int (a NumPy integer too), the fixed number of
            rows of every batch; None only with `carry_state=False` (then
            batches of any size are accepted).
        carry_state: `True` (default): carry the final state of every
            batch to the next (truncated BPTT over a stream; under a
            strategy with several replicas the batches must name their
            rows, see above). `False`: every batch starts from the zero
            state (independent windows).
        **kwargs: Base model keyword arguments, such as `name`.

    Call arguments:
        tokens: `(batch_size, time)` int ids, or `(tokens, row_ids)` with
            the `(batch,)` rows of the carried state that the tokens
            continue. Returns the logits.

    Training data: `(tokens, targets)` or `((tokens, row_ids), targets)`;
    a train step starts from the carried state of those rows and carries
    its final state to the next step.

    Examples:

        >>> import keras, numpy as np
        >>> from hmkeras.models.char_language_model import CharLanguageModel
        >>> from hmkeras.training import TruncatedBPTTModel
        >>> lm = CharLanguageModel(vocab_size=5, cell="hmlstm", units=4,
        ...                        embedding_dim=3, output_units=4)
        >>> model = TruncatedBPTTModel(lm, batch_size=2)
        >>> model.compile(keras.optimizers.Adam(0.01), loss=model.loss_function())
        >>> x = np.zeros((2, 6), "int32")
        >>> history = model.fit(x, x, batch_size=2, epochs=1, verbose=0)
        >>> [tuple(v.shape) for v in model.carried_state][-1]
        (2, 2)
        >>> model.reset_carried_state()
        >>> float(np.abs(model.carried_state[0].numpy()).sum())
        0.0
    """

    def __init__(self, language_model, batch_size, carry_state=True, **kwargs):
        if not (
            isinstance(getattr(language_model, "network", None), keras.Model)
            and hasattr(language_model, "state_sizes")
        ):
            raise ValueError(
                "`language_model` must be a hmkeras CharLanguageModel (with "
                "a Keras `network` and its `state_sizes`). "
                f"Received: language_model={language_model!r}"
            )
        carry_state = argument_checks.check_bool("carry_state", carry_state)
        if batch_size is not None or carry_state:
            batch_size = argument_checks.check_positive_int("batch_size", batch_size)
        super().__init__(**kwargs)
        self.language_model = language_model
        self.network = language_model.network
        self.batch_size = batch_size
        self.carry_state = carry_state
        self.bpc_tracker = keras.metrics.Mean(name="bpc")
        self.carried_state = [
            self.add_weight(
                name=f"carried_state_{i}", shape=(self.batch_size, size),
                initializer="zeros", trainable=False,
                # Every replica assigns the same all-reduced value (see
                # `_store_state`); under a strategy the first one's is kept.
                aggregation="only_first_replica",
            )
            for i, size in enumerate(language_model.state_sizes)
        ] if carry_state else []
        self.built = True  # the network is built; the state variables exist

    @staticmethod
    def loss_function():
        """Mean cross entropy in nats of the logits."""
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def reset_carried_state(self):
        """Zeroes the carried state (at the start of every epoch)."""
        for variable in self.carried_state:
            variable.assign(keras.ops.zeros(variable.shape, variable.dtype))

    @staticmethod
    def _tokens_and_rows(inputs):
        """`(tokens, row_ids or None)` of `tokens` or `(tokens, row_ids)`."""
        if isinstance(inputs, (tuple, list)):
            if len(inputs) != 2:
                raise ValueError(
                    "TruncatedBPTTModel inputs must be `tokens` or `(tokens, row_ids)`. "
                    f"Received a sequence of {len(inputs)} items."
                )
            return inputs[0], inputs[1]
        return inputs, None

    def _initial_state(self, tokens, row_ids):
        """The carried state of the rows (all rows without `row_ids`), or
        zeros for the rows of `tokens`."""
        if not self.carry_state:
            rows = keras.ops.shape(tokens)[0]
            return [keras.ops.zeros((rows, size)) for size in self.language_model.state_sizes]
        if row_ids is None:
            replicas = _replicas()
            if replicas > 1:
                raise ValueError(
                    "TruncatedBPTTModel(carry_state=True) carries the state across "
                    f"batches split over {replicas} replicas only when each batch names "
                    "its rows: feed ((tokens, row_ids), targets), as "
                    "TruncatedBPTTBatches.dataset(row_ids=True) gives, or use "
                    "carry_state=False."
                )
            return [v.value for v in self.carried_state]
        row_ids = keras.ops.cast(row_ids, "int32")
        return [keras.ops.take(v.value, row_ids, axis=0) for v in self.carried_state]

    def _store_state(self, state, row_ids):
        """Carries `state` (the final state of the rows) to the next step.

        With `row_ids`, each replica scatters its rows' state into a
        zero `(batch_size, size)` tensor, the replicas' tensors are summed
        (every row comes from exactly one replica), and the rows that no
        replica ran keep their carried state.
        """
        # The gradient is truncated here: the next window starts from a
        # constant state (truncated BPTT).
        state = [keras.ops.stop_gradient(value) for value in state]
        if row_ids is None:
            for variable, value in zip(self.carried_state, state):
                variable.assign(value)
            return
        if keras.backend.backend() != "tensorflow":  # one device, or a sharded step
            indices = keras.ops.cast(row_ids, "int32")[:, None]
            for variable, value in zip(self.carried_state, state):
                variable.assign(keras.ops.scatter_update(
                    variable.value, indices, keras.ops.cast(value, variable.dtype)))
            return
        indices = tf.cast(row_ids, tf.int32)[:, None]
        scattered = [
            tf.scatter_nd(indices, tf.cast(value, v.dtype), tuple(v.shape))
            for v, value in zip(self.carried_state, state)
        ]
        covered = tf.scatter_nd(
            indices, tf.ones_like(indices, tf.float32), (self.batch_size, 1)
        )
        context = tf.distribute.get_replica_context()
        if context is not None and tf.distribute.get_strategy().num_replicas_in_sync > 1:
            *scattered, covered = context.all_reduce(
                tf.distribute.ReduceOp.SUM, [*scattered, covered]
            )
        for variable, value in zip(self.carried_state, scattered):
            variable.assign(tf.where(covered > 0, value, variable.value))

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        # Keras' TensorFlow trainer builds the loss container and the
        # optimizer from a first batch, which under a strategy it takes from
        # the distributed dataset and averages over the replicas; under
        # MultiWorkerMirroredStrategy that average fails for a batch of
        # several tensors (keras-team/keras#20585), so every `fit` would.
        # This model's inputs are known: it builds from their specs instead.
        if iterator is not None and data_batch is None:
            tokens = tf.TensorSpec((None, None), tf.int32)
            inputs = (tokens, tf.TensorSpec((None,), tf.int32)) if self.carry_state else tokens
            data_batch = (inputs, tokens)
        super()._maybe_symbolic_build(data_batch=data_batch)

    def call(self, inputs, training=False):
        tokens, row_ids = self._tokens_and_rows(inputs)
        logits, _, *state = self.network(
            [tokens, *self._initial_state(tokens, row_ids)], training=training
        )
        return logits

    def train_step(self, *args):
        """One step of truncated BPTT (`hmkeras.training.backend_steps`):
        Keras calls it with `(data)` on TensorFlow and with `(state, data)`
        on JAX, whose step is stateless (the carried state's assignment is
        recorded, the network's losses collected). Under a `tf.distribute`
        strategy Keras' losses divide each replica's loss by the number of
        replicas (the gradients are summed over them); under
        `keras.distribution` the JAX step sees the whole batch, sharded, so
        nothing is all-reduced there.
        """
        (x, row_ids), y = self._tokens_and_rows(args[-1][0]), args[-1][1]

        def forward(data):
            logits, rnn_outputs, *final = self.network(
                [x, *self._initial_state(x, row_ids)], training=True)
            # The cross entropy and the network's losses: the weight
            # penalties, the boundary prior and placement (`BoundaryLosses`).
            loss = self.compute_loss(x=x, y=y, y_pred=logits, training=True)
            if self.carry_state:
                self._store_state(final, row_ids)
            return loss, (logits, rnn_outputs)

        def logs_of(loss, aux):
            # `loss` includes any weight penalty; `bpc` is the bare training
            # cross entropy in bits per character.
            return _for_keras_reduction(self._update_metrics(loss, y, *aux, _replicas()))

        return backend_steps.train_step(self, args, forward, logs_of)

    def _update_metrics(self, loss, y, logits, rnn_outputs, replicas):
        """The step's logs: the metrics updated with this batch (`loss`,
        the replica's loss times the replicas, and `bpc` are epoch means),
        this batch's own `batch_bpc` and, for a hierarchical cell, its
        boundary rates `z_rate_l` (read by `hmkeras.BoundaryMonitor`)."""
        lm = self.language_model
        cross_entropy = keras.ops.mean(keras.ops.sparse_categorical_crossentropy(
            keras.ops.cast(y, "int32"), keras.ops.cast(logits, "float32"), from_logits=True))
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss * replicas)
            elif metric.name == "bpc":
                metric.update_state(cross_entropy / _LN2)
            else:
                metric.update_state(y, logits)
        logs = {m.name: m.result() for m in self.metrics}
        logs["batch_bpc"] = cross_entropy / _LN2
        if lm.is_hierarchical:
            boundaries = keras.ops.cast(lm.boundaries(rnn_outputs), "float32")
            rates = keras.ops.mean(boundaries, axis=(0, 1))
            for index in range(lm.hierarchical_cell.num_layers - 1):
                logs[f"z_rate_{index + 1}"] = rates[index]
        return logs

    def test_step(self, *args):
        return _for_keras_reduction(super().test_step(*args))

    @property
    def metrics(self):
        metrics = list(super().metrics)
        if self.bpc_tracker not in metrics:
            metrics.append(self.bpc_tracker)
        return metrics


def _replicas():
    """The replicas of the `tf.distribute` strategy in scope (1 elsewhere)."""
    if keras.backend.backend() != "tensorflow":
        return 1
    return tf.distribute.get_strategy().num_replicas_in_sync


def _for_keras_reduction(logs):
    """`logs`, as Keras can average them over the workers of a strategy.

    Under `MultiWorkerMirroredStrategy` with several workers Keras'
    TensorFlow trainer averages each replica's logs along their axis 0
    (`reduce_per_replica`), which a scalar does not have
    (keras-team/keras#20585); there every log becomes a `(1,)` tensor, which
    that average turns back into the scalar.  Elsewhere the logs are
    unchanged.
    """
    if keras.backend.backend() != "tensorflow":
        return logs
    strategy = tf.distribute.get_strategy()
    in_multi_worker_mode = getattr(strategy.extended, "_in_multi_worker_mode", None)
    if not (isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
            and in_multi_worker_mode is not None and in_multi_worker_mode()):
        return logs
    return {name: tf.reshape(value, [1]) for name, value in logs.items()}
