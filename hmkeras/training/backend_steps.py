"""A custom model's train and test steps, on TensorFlow or on JAX.

A `keras.Model` whose step is its own (a loss made of several terms, logs
of its own) writes it once, as two functions of the batch, and lets these
steps run them as the backend's trainer asks: on TensorFlow, Keras calls
`train_step(data)` and the step differentiates the forward pass under a
`tf.GradientTape`; on JAX, Keras calls `train_step(state, data)` and the
step is made stateless (`hmkeras.training.stateless_steps`). On
TensorFlow the loss is scaled and the gradients unscaled under mixed
precision (the optimizer's `scale_loss`), and under a `tf.distribute`
strategy every replica skips a step whose gradients overflow on any
(`hmkeras.training.replica_finiteness`). Gradients that are `None` (a
variable the batch did not reach, such as a learned baseline under a
greedy one) are left out of the update.

`TruncatedBPTTModel`, `HandwritingTrainer`, `ExpressionModel` and
`RecurrentRecursiveLanguageModel` use them.

Examples:

    >>> import keras
    >>> from hmkeras.training import backend_steps
    >>> class Regression(keras.Model):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.dense = keras.layers.Dense(1)
    ...         self.tracker = keras.metrics.Mean(name="loss")
    ...     def call(self, x):
    ...         return self.dense(x)
    ...     def _forward(self, data):
    ...         x, y = data
    ...         loss = keras.ops.mean(keras.ops.square(self(x, training=True) - y))
    ...         return loss, ()
    ...     def _logs(self, loss, aux):
    ...         self.tracker.update_state(loss)
    ...         return {"loss": self.tracker.result()}
    ...     def train_step(self, *args):
    ...         return backend_steps.train_step(self, args, self._forward, self._logs)
    >>> model = Regression()
    >>> model.compile(optimizer="sgd")
    >>> x = keras.ops.ones((8, 2))
    >>> history = model.fit(x, 2.0 * x[:, :1], epochs=2, verbose=0)
    >>> history.history["loss"][1] < history.history["loss"][0]
    True
"""

import keras

from hmkeras.training import replica_finiteness
from hmkeras.training import stateless_steps


def train_step(model, args, forward, logs_of):
    """One train step of `model` on the backend in use.

    Args:
        model: The compiled `keras.Model`.
        args: The arguments Keras gave the model's `train_step`: `(data,)`
            on TensorFlow, `(state, data)` on JAX.
        forward: A function of the batch that runs the training forward
            pass and returns `(loss, aux)`: the loss to differentiate and
            what `logs_of` needs.
        logs_of: A function of `(loss, aux)` that updates the model's
            metrics and returns the step's logs.

    Returns:
        The logs on TensorFlow; `(logs, state)` on JAX.
    """
    data = args[-1]
    if keras.backend.backend() == "jax":
        return stateless_steps.train_step(
            model, args[0], lambda: forward(data), logs_of)
    import tensorflow as tf  # the backend's own

    with tf.GradientTape() as tape:
        loss, aux = forward(data)
        scaled = model.optimizer.scale_loss(loss)  # the loss itself without a loss scale
    variables = model.trainable_variables
    gradients = tape.gradient(scaled, variables)
    gradients = replica_finiteness.agree_on_finiteness(gradients, model.optimizer)
    reached = [(g, v) for g, v in zip(gradients, variables) if g is not None]
    model.optimizer.apply([g for g, _ in reached], [v for _, v in reached])
    return logs_of(loss, aux)


def test_step(model, args, logs_of_forward):
    """One evaluation step of `model` on the backend in use.

    Args:
        model: The `keras.Model`.
        args: The arguments Keras gave the model's `test_step`.
        logs_of_forward: A function of the batch that runs the evaluation
            forward pass, updates the model's metrics and returns the
            step's logs.

    Returns:
        The logs on TensorFlow; `(logs, state)` on JAX.
    """
    data = args[-1]
    if keras.backend.backend() == "jax":
        return stateless_steps.test_step(model, args[0], lambda: logs_of_forward(data))
    return logs_of_forward(data)
