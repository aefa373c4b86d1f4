"""Random draws at every step of a time loop, with a draw counter in the state.

A cell that samples at every step (the RRNet's policy in mode
`"reinforce"`) cannot take its seeds from its `keras.random.SeedGenerator`
inside the loop on every backend: TensorFlow's `while_loop` and a Python
loop see the generator's new state at the next step, but a traced JAX loop
(`lax.scan`) does not, and every step would draw the same numbers. So a
sequence's draws are numbered: the k-th draw of a sequence that starts at
seed `[s0, s1]` uses seed `[s0, s1 + k]`, the seed the generator itself
would give at its k-th draw. The start is fixed before the loop; the
counter `k` travels through the loop as a part of the cell's state, two
float columns `[k mod 256, k // 256]` (Keras' `RNN` casts every state to
the compute dtype, and float16 and bfloat16 hold these integers exactly up
to 65,536 draws per sequence); masked rows keep an older count, and the
newest is the largest.

Where the seeds of a sequence start:

* `reserve(generator, steps, draws_per_step)`: the library's loop
  (`hmkeras.RNN`) knows the number of steps before the loop and reserves
  their seeds: the generator moves past them, where drawing them one by
  one would have left it.
* `fresh_start(generator)`: a loop that reserves nothing (a bare
  `keras.layers.RNN`, `keras.ops.scan`) starts each sequence at a key
  drawn from the generator.

Examples:

    Two draws in a row, and the counter after them:

    >>> import keras, numpy as np
    >>> generator = keras.random.SeedGenerator(3)
    >>> start, counter = generator.state.value, keras.ops.zeros((2, 2))
    >>> log_probs = keras.ops.log(np.full((2, 3), 1 / 3, "float32"))
    >>> first, counter = categorical(log_probs, generator, start, counter)
    >>> second, counter = categorical(log_probs, generator, start, counter)
    >>> keras.ops.convert_to_numpy(counter).tolist(), tuple(first.shape)
    ([[2.0, 0.0], [2.0, 0.0]], (2,))
"""

import keras
from keras import ops

#: Columns of the counter in the state: `[k mod 256, k // 256]`.
COUNTER_SIZE = 2
_BASE = 256


def count(counter):
    """The newest draw count, an int32 scalar, of a `(batch, 2)` counter."""
    low, high = ops.split(ops.cast(ops.round(counter), "int32"), 2, axis=-1)
    return ops.max(high * _BASE + low)


def categorical(log_probs, generator, start, counter):
    """One draw per row from `log_probs` `(batch, classes)`.

    Args:
        log_probs: Log-probabilities (or logits) of the classes.
        generator: The cell's `keras.random.SeedGenerator`; its own state
            is left alone.
        start: The sequence's first seed `(2,)` (`reserve`, `fresh_start`).
        counter: The carried `(batch, 2)` draw counter.

    Returns:
        `(samples (batch,) int32, counter)`, the counter one draw further.
    """
    drawn = count(counter)
    seed = start + ops.cast(ops.stack([0, drawn]), start.dtype)
    with keras.StatelessScope(state_mapping=[(generator.state, seed)]):
        samples = keras.random.categorical(log_probs, 1, seed=generator, dtype="int32")
    drawn = drawn + 1
    new = ops.cast(ops.stack([drawn % _BASE, drawn // _BASE]), counter.dtype)
    return samples[:, 0], ops.zeros_like(counter) + new


def reserve(generator, steps, draws_per_step):
    """The first seed `(2,)` of a sequence of `steps` steps of
    `draws_per_step` draws each; the generator moves past them.

    The block reserved holds one step more, the first: Keras' TensorFlow
    loop steps the cell once before the loop (to learn the output's shape)
    and discards that step, so a generator drawn step by step gives the
    loop's k-th draw the seed `[s0, s1 + draws_per_step + k]`; the
    sequence starts there on every backend, and the TensorFlow draws are
    the ones a generator drawn inside the loop gives.
    """
    state = generator.state.value
    start = state + ops.cast(ops.stack([0, draws_per_step]), state.dtype)
    generator.state.assign(
        state + ops.cast(ops.stack([0, (steps + 1) * draws_per_step]), state.dtype))
    return start


def fresh_start(generator):
    """A first seed `(2,)` drawn from `generator`, for a loop that reserves
    no seeds."""
    key = keras.random.randint((2,), 0, 2**30, seed=generator, dtype="int32")
    return ops.cast(key, generator.state.dtype)
