"""Models whose optimizer is built when they are compiled, not when they train.

Without a distribution strategy Keras builds a model's optimizer (its
slots, iteration counter, learning-rate variable) inside the first trace
of the train function. A `tf.function` that creates variables while it
traces is traced again, so every `fit` of a fresh model traces its
`train_step` twice: for the small recurrent models of this library that
second trace is about half of a short run's time. A model that is built
before `compile` (its layers and weights exist) can build its optimizer in
`compile` instead; the train function is then traced once. The optimizer's
variables and every training result are the same.
"""

import keras


class BuildsOptimizerOnCompile:
    """Mixin for a `keras.Model`: `compile` builds the optimizer of a built model.

    Put it before `keras.Model` in the bases. A model that is not built yet
    when it is compiled is left to Keras (its optimizer is built in the
    first train step, as usual).

    Examples:

        >>> import keras, numpy as np
        >>> from hmkeras.training.optimizer_on_compile import BuildsOptimizerOnCompile
        >>> class Regression(BuildsOptimizerOnCompile, keras.Model):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.dense = keras.layers.Dense(1)
        ...         self.dense.build((None, 2))
        ...         self.built = True
        ...     def call(self, x):
        ...         return self.dense(x)
        >>> model = Regression()
        >>> model.compile(keras.optimizers.Adam(0.1), "mse")
        >>> model.optimizer.built, len(model.optimizer.variables)
        (True, 6)
    """

    def compile(self, *args, **kwargs):
        super().compile(*args, **kwargs)
        build_optimizer(self)

    def compile_from_config(self, config):
        """Compiles a loaded model as it was saved (`keras.saving.load_model`),
        which Keras leaves undone for a model whose `compile` is its own."""
        self.compile(**keras.saving.deserialize_keras_object(config))


def build_optimizer(model):
    """Builds the optimizer of a compiled, built `model` now, for its
    trainable variables, so that its first `fit` traces the train step
    once; a model that is not built, or whose optimizer is built, is left
    as it is. Returns the model.

    For a model of one's own (`keras.Sequential`, functional), after
    `compile`.

    Examples:

        >>> import keras, numpy as np
        >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        >>> model.compile(keras.optimizers.SGD(0.1), "mse")
        >>> build_optimizer(model).optimizer.built
        True
    """
    optimizer = model.optimizer
    if model.built and optimizer is not None and not optimizer.built:
        optimizer.build(model.trainable_variables)
    return model
