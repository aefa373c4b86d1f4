"""Independent random draws for every weight matrix of a cell.

A Keras 3 initializer object holds its seed from the moment it is made: an
object created without a seed picks one random integer then and returns the
same values at every call.  A cell that builds several matrices of the same
shape from one initializer object (every layer's `U`, `V`, `W` and
boundary column of a hierarchical cell; the blocks of the mLSTM) would start
them all equal.  `independent_draw(initializer, draw_index, seed)` returns an
initializer for draw number `draw_index` that is independent of every other
draw:

* an initializer with an integer seed gets the seed `mix(seed, draw_index)`,
  so the whole cell stays reproducible from that seed;
* an initializer without a seed gets `mix(seed, draw_index)` when the cell
  has a `seed`, and otherwise a fresh random seed of its own (reproducible
  under `keras.utils.set_random_seed`);
* initializers without randomness (`"zeros"`, `Constant`), initializers
  seeded by a `keras.random.SeedGenerator` (which advances at every call)
  and plain functions are returned unchanged.

Examples:

    >>> import keras, numpy as np
    >>> base = keras.initializers.Orthogonal()
    >>> a = independent_draw(base, 0)((4, 4))
    >>> b = independent_draw(base, 1)((4, 4))
    >>> bool(np.allclose(a, b))
    False
    >>> seeded = keras.initializers.GlorotUniform(seed=3)
    >>> bool(np.allclose(independent_draw(seeded, 5)((3, 2)),
    ...                  independent_draw(seeded, 5)((3, 2))))
    True
"""

import keras

# A large odd multiplier spreads consecutive draw indices over the seed
# range (seeds must stay below 2**31 for TensorFlow's stateless ops).
_SEED_MULTIPLIER = 1_000_003
_SEED_RANGE = 2**31 - 1


def mix_seed(seed, draw_index):
    """The seed of draw `draw_index` of a cell seeded with `seed`."""
    return (int(seed) * _SEED_MULTIPLIER + 7919 * (int(draw_index) + 1)) % _SEED_RANGE


def independent_draw(initializer, draw_index, seed=None):
    """A copy of `initializer` whose values are independent of other draws.

    Args:
        initializer: A Keras initializer object (or any callable).
        draw_index: Non-negative int, unique per matrix (or block) of a cell.
        seed: Optional int, the cell's seed; used when `initializer` has no
            seed of its own.

    Returns:
        An initializer (a new object where a new seed is needed).
    """
    if not isinstance(initializer, keras.initializers.Initializer):
        return initializer
    config = initializer.get_config()
    if "seed" not in config or isinstance(config["seed"], dict):
        return initializer
    if config["seed"] is not None:
        config["seed"] = mix_seed(config["seed"], draw_index)
    elif seed is not None:
        config["seed"] = mix_seed(seed, draw_index)
    # With no seed anywhere, `from_config` makes a new object, which picks a
    # new random seed of its own.
    return initializer.__class__.from_config(config)
