"""`seeded_initializers`: a model's initial weights from its own seed.

The cells of a model of `hmkeras.models` take the model's `seed`
themselves.  Its other layers (the embedding, the output module, the
softmax) are Keras layers with unseeded initializers, and Keras draws an
unseeded initializer's seed from Python's `random` module when the
initializer is made.  A model built inside `seeded_initializers(seed)`
makes those draws from `random.seed(seed)`, and Python's random state is
restored afterwards: the initial weights follow from the model's
configuration alone (they are those that `keras.utils.set_random_seed(seed)`
before the model gave), and building the model leaves the program's
random state (Python's, NumPy's, TensorFlow's, Keras') as it was.
"""

import contextlib
import random


@contextlib.contextmanager
def seeded_initializers(seed):
    """Within the block, Python's `random` starts from `seed` (None: left
    as it is); on leaving, its state is what it was before.

    Examples:

        >>> import random, keras
        >>> with seeded_initializers(0):
        ...     first = keras.initializers.GlorotUniform().seed
        >>> with seeded_initializers(0):
        ...     again = keras.initializers.GlorotUniform().seed
        >>> state = random.getstate()
        >>> with seeded_initializers(1):
        ...     _ = keras.initializers.GlorotUniform()
        >>> first == again, random.getstate() == state
        (True, True)
    """
    if seed is None:
        yield
        return
    state = random.getstate()
    random.seed(seed)
    try:
        yield
    finally:
        random.setstate(state)
