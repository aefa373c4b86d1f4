"""The parts of hmkeras that need TensorFlow, and the error without it.

The layers (`hmkeras.cells`, `hmkeras.heads`, `hmkeras.wrappers`) and the
callbacks run on every Keras backend; the data builders (TFDS), the
`tf.data` pipelines, the models and training drivers, SavedModel export
and the analysis helpers that run compiled TensorFlow functions need
TensorFlow. A package imports those names only when TensorFlow is
installed (`available()`); without it, reading one of them raises an
`ImportError` of one line that names the feature and what to install
(`missing_names`), and so does importing a package that needs TensorFlow
throughout (`require_tensorflow`). The models whose training step is
their own and written for TensorFlow and JAX (the RRNet language model,
`ExpressionModel`) refuse another Keras backend in one line too
(`require_training_backend`).

Examples:

    >>> import hmkeras
    >>> hmkeras.tensorflow_features.missing_tensorflow("hmkeras.data.Brent").args[0]
    "hmkeras.data.Brent needs TensorFlow, which is not installed: pip install 'hmkeras[cpu]' (or 'hmkeras[gpu]')"
"""

import functools

INSTALL = "pip install 'hmkeras[cpu]' (or 'hmkeras[gpu]')"


def missing_tensorflow(feature):
    """The one-line `ImportError` for `feature` without TensorFlow."""
    return ImportError(f"{feature} needs TensorFlow, which is not installed: {INSTALL}")


@functools.cache
def available():
    """Whether TensorFlow and TensorFlow Datasets can be imported."""
    try:
        import tensorflow  # noqa: F401
        import tensorflow_datasets  # noqa: F401
    except ImportError as error:
        if (error.name or "").split(".")[0] in ("tensorflow", "tensorflow_datasets"):
            return False
        raise
    return True


def require_tensorflow(feature):
    """Raises `missing_tensorflow(feature)` unless TensorFlow is installed
    (for a package that needs it throughout)."""
    if not available():
        raise missing_tensorflow(feature)


def missing_names(package, names):
    """A module `__getattr__` for `package` without TensorFlow: reading one
    of `names` raises `missing_tensorflow`, any other name the usual
    `AttributeError`."""

    def __getattr__(name):
        if name in names:
            raise missing_tensorflow(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__


#: The backends on which the models with a training step of their own
#: train: a `tf.GradientTape` step on TensorFlow, a stateless step on JAX
#: (`hmkeras.training.backend_steps`).
TRAINING_BACKENDS = ("tensorflow", "jax")


def require_training_backend(feature):
    """Raises a one-line `ValueError` naming `feature` unless Keras runs
    on one of `TRAINING_BACKENDS` (for a model whose training step is its
    own).

    On PyTorch, `ExpressionModel()` raises `ValueError: ExpressionModel
    trains on the TensorFlow and JAX backends only: set
    KERAS_BACKEND=tensorflow or KERAS_BACKEND=jax. The backend is
    'torch'.`
    """
    import keras

    backend = keras.backend.backend()
    if backend not in TRAINING_BACKENDS:
        raise ValueError(
            f"{feature} trains on the TensorFlow and JAX backends only: set "
            f"KERAS_BACKEND=tensorflow or KERAS_BACKEND=jax. The backend is {backend!r}.")
