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
TensorFlow's alone (the RRNet language model, `ExpressionModel`) refuse
another Keras backend in one line too (`require_tensorflow_backend`).

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


def require_tensorflow_backend(feature):
    """Raises a one-line `ValueError` naming `feature` unless Keras runs
    on the TensorFlow backend (for a model whose training step is
    TensorFlow's alone).

    On JAX, `ExpressionModel()` raises `ValueError: ExpressionModel
    trains on the TensorFlow backend only: set KERAS_BACKEND=tensorflow
    (...). The backend is 'jax'.`
    """
    import keras

    backend = keras.backend.backend()
    if backend != "tensorflow":
        raise ValueError(
            f"{feature} trains on the TensorFlow backend only: set KERAS_BACKEND=tensorflow "
            f"(with 'hmkeras[cpu]' or 'hmkeras[gpu]' installed). The backend is {backend!r}.")
