"""One verdict on non-finite gradients for all replicas of a strategy.

Under mixed_float16 the optimizer is a `keras.optimizers.LossScaleOptimizer`:
a step whose gradients overflow is skipped and the loss scale lowered.
Under a `tf.distribute` strategy with several replicas it takes that
decision from the first replica's own gradients, before they are summed
over the replicas, so an overflow on another replica alone is applied: the
summed gradients are infinite and the weights become NaN.
`agree_on_finiteness` makes the gradients of every replica non-finite as
soon as those of any replica are, so the optimizer skips the step
everywhere.  With one replica it returns the gradients unchanged.

Examples:

    >>> import tensorflow as tf
    >>> [g.numpy().tolist() for g in agree_on_finiteness([tf.constant([1.0, 2.0])])]
    [[1.0, 2.0]]
"""

import keras


def agree_on_finiteness(gradients, optimizer=None):
    """The gradients, made non-finite on every replica if any replica's are.

    Args:
        gradients: a list of gradients (tensors, `tf.IndexedSlices` or
            `None`) of the calling replica.
        optimizer: the optimizer that will apply them; the agreement is
            needed only by a `keras.optimizers.LossScaleOptimizer` (which
            skips non-finite steps), so any other gets the gradients
            unchanged.  `None`: agree regardless.

    Returns:
        The list, unchanged with one replica, with an optimizer that does
        not skip steps, or when every replica's gradients are finite;
        otherwise with NaN added to each.
    """
    if optimizer is not None and not isinstance(
            optimizer, keras.optimizers.LossScaleOptimizer):
        return gradients
    import tensorflow as tf  # a strategy's replicas: TensorFlow only

    strategy = tf.distribute.get_strategy()
    context = tf.distribute.get_replica_context()
    if context is None or strategy.num_replicas_in_sync == 1:
        return gradients
    values = [g.values if isinstance(g, tf.IndexedSlices) else g
              for g in gradients if g is not None]
    finite = tf.reduce_all([tf.reduce_all(tf.math.is_finite(v)) for v in values])
    overflowing = context.all_reduce(
        tf.distribute.ReduceOp.SUM, tf.cast(tf.logical_not(finite), tf.float32)
    )
    poison = tf.where(overflowing > 0, float("nan"), 0.0)

    def poisoned(g):
        if g is None:
            return None
        if isinstance(g, tf.IndexedSlices):
            return tf.IndexedSlices(g.values + tf.cast(poison, g.values.dtype),
                                    g.indices, g.dense_shape)
        return g + tf.cast(poison, g.dtype)

    return [poisoned(g) for g in gradients]
