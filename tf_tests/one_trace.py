"""Compiling a Keras model so that its first `fit` traces the train step once.

On TensorFlow, Keras builds a model's optimizer inside the first trace of
its train function, and a `tf.function` that makes variables while it
traces is traced a second time: a first `fit` of a small `Sequential`
with an `HMLSTMCell` took 12-14 s here, 7.5-8 s with the optimizer built
before (`hmkeras.training.optimizer_on_compile` does this for the
library's own models, and its `build_optimizer` for any other). The
training is the same either way: the optimizer's variables start at the
same values.

Tests that are about something else build the optimizer when they
compile; the doctests, the README snippets and the plain `fit` of
`test_keras_integration.py` keep Keras' own order.
"""

from hmkeras.training.optimizer_on_compile import build_optimizer


def compile_built(model, *args, **kwargs):
    """`model.compile(*args, **kwargs)`, then its optimizer built
    (`build_optimizer`). Returns the model."""
    model.compile(*args, **kwargs)
    return build_optimizer(model)
