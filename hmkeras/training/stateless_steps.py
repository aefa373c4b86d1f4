"""Train and test steps of a custom `keras.Model` on JAX, as Keras' JAX trainer asks.

Keras' JAX trainer calls `model.train_step(state, data)` and
`model.test_step(state, data)` with the values of the model's variables in
`state` and expects the logs and the updated values back: nothing may be
assigned in place. A model whose step is its own (a loss made from
several outputs, a carried state, logs of its own) runs it through these
two functions: the forward pass is the model's, in a
`keras.StatelessScope` over the values in `state`, which records what it
assigns and collects the losses its layers add; `jax.value_and_grad`
differentiates its loss; the optimizer applies the gradients with
`stateless_apply`; and the metrics are updated in a scope of their own.
The TensorFlow step of the same model (a `tf.GradientTape`) computes the
same values in place.

`hmkeras.training.backend_steps` runs them on JAX for every model with a
step of its own: `TruncatedBPTTModel`, `HandwritingTrainer`,
`ExpressionModel` and `RecurrentRecursiveLanguageModel`.

Examples:

    A variable assigned in a scope keeps its new value there; the
    variable itself is unchanged:

    >>> import keras
    >>> v = keras.Variable(1.0)
    >>> with keras.StatelessScope(state_mapping=[(v, keras.ops.convert_to_tensor(2.0))]) as scope:
    ...     _ = v.assign(v + 1.0)
    >>> [float(value) for value in scope_values(scope, [v])], float(v.value)
    ([3.0], 1.0)
"""

import keras


def train_step(model, state, forward, logs_of):
    """One train step of `model` on JAX.

    Args:
        model: The compiled `keras.Model`.
        state: `(trainable, non_trainable, optimizer, metrics)` values, in
            the order of the model's variable lists.
        forward: A function of no arguments that runs the training forward
            pass and returns `(loss, aux)`: the loss to differentiate
            (the losses the layers add included) and what `logs_of` needs.
            Variables it assigns (a carried state) keep their new values.
        logs_of: A function of `(loss, aux)` that updates the model's
            metrics and returns the step's logs.

    Returns:
        `(logs, state)`, the state updated.
    """
    import jax  # the backend's own

    trainable, non_trainable, optimizer_values, metrics_values = state

    def scaled_loss(trainable):
        mapping = (list(zip(model.trainable_variables, trainable))
                   + list(zip(model.non_trainable_variables, non_trainable)))
        with keras.StatelessScope(state_mapping=mapping, collect_losses=True) as scope:
            loss, aux = forward()
        updated = scope_values(scope, model.non_trainable_variables)
        optimizer_mapping = list(zip(model.optimizer.variables, optimizer_values))
        with keras.StatelessScope(state_mapping=optimizer_mapping):
            scaled = model.optimizer.scale_loss(loss)
        return scaled, (loss, aux, updated)

    (_, (loss, aux, non_trainable)), gradients = jax.value_and_grad(
        scaled_loss, has_aux=True)(trainable)
    trainable, optimizer_values = model.optimizer.stateless_apply(
        optimizer_values, gradients, trainable)
    logs, metrics_values = _metrics_step(model, metrics_values, lambda: logs_of(loss, aux))
    return logs, (trainable, non_trainable, optimizer_values, metrics_values)


def test_step(model, state, logs_of_forward):
    """One test step of `model` on JAX.

    Args:
        model: The `keras.Model`.
        state: `(trainable, non_trainable, metrics)` values.
        logs_of_forward: A function of no arguments that runs the
            evaluation forward pass, updates the model's metrics and
            returns the step's logs.

    Returns:
        `(logs, state)`, the metrics' values updated.
    """
    trainable, non_trainable, metrics_values = state
    # One scope: a scope inside another does not see the outer one's values.
    mapping = (list(zip(model.trainable_variables, trainable))
               + list(zip(model.non_trainable_variables, non_trainable))
               + list(zip(model.metrics_variables, metrics_values)))
    with keras.StatelessScope(state_mapping=mapping) as scope:
        logs = logs_of_forward()
    return logs, (trainable, non_trainable, scope_values(scope, model.metrics_variables))


def _metrics_step(model, metrics_values, update):
    """`(logs, metrics values)` of `update()` run in a scope over the
    model's metrics' `metrics_values`."""
    mapping = list(zip(model.metrics_variables, metrics_values))
    with keras.StatelessScope(state_mapping=mapping) as scope:
        logs = update()
    return logs, scope_values(scope, model.metrics_variables)


def scope_values(scope, variables):
    """The values a `keras.StatelessScope` holds for `variables`: the new
    value of each it assigned, else the value it was given."""
    values = []
    for variable in variables:
        value = scope.get_current_value(variable)
        values.append(variable.value if value is None else value)
    return values
