"""Unique random examples, each in one split only (the MEE and logic data).

The generated tasks draw examples at random and keep the new ones.  An
example belongs to one split, chosen by a hash of the seed and the
example's key (its text): the key falls into one of `num_buckets` buckets
and each split owns some of them.  So the splits never share an example,
whatever their sizes, and a smaller `count` gives a prefix of a larger one.

Examples:

    >>> import random
    >>> splits = SplitBuckets({"train": range(0, 2), "test": range(2, 3)}, 3)
    >>> def draw(rng):
    ...     word = "".join(rng.choice("ab") for _ in range(3))
    ...     return word, word.upper()
    >>> def too_few(found, attempts):
    ...     return f"only {found} words after {attempts} draws"
    >>> train = list(unique_draws(draw, random.Random(0), splits, "train", 3, seed=0,
    ...                           max_attempts=1000, too_few=too_few))
    >>> test = list(unique_draws(draw, random.Random(0), splits, "test", 2, seed=0,
    ...                          max_attempts=1000, too_few=too_few))
    >>> len(set(train)), len(set(test)), set(train) & set(test)
    (3, 2, set())
    >>> list(unique_draws(draw, random.Random(0), splits, "test", 9, seed=0,
    ...                   max_attempts=1000, too_few=too_few))
    Traceback (most recent call last):
    ...
    ValueError: only 4 words after 1000 draws
"""

import dataclasses
import hashlib


@dataclasses.dataclass(frozen=True)
class SplitBuckets:
    """Which hash buckets each split owns (`{split: range}`), of `num_buckets`."""

    buckets: dict
    num_buckets: int

    def check_split(self, split):
        """`split`, or a `ValueError` naming it and the splits there are."""
        if split not in self.buckets:
            raise ValueError(f"`split` must be one of {list(self.buckets)}. "
                             f"Received: split={split!r}")
        return split

    def split_holds(self, split, seed, key):
        """Whether the example with text `key` belongs to `split` under `seed`."""
        digest = hashlib.blake2b(f"{seed}|{key}".encode(), digest_size=8).digest()
        return int.from_bytes(digest, "little") % self.num_buckets in self.buckets[split]


def check_count(count):
    """`count` as a non-negative int, or a `ValueError` naming it."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError(f"`count` must be a non-negative integer. Received: count={count!r}")
    return count


def unique_draws(draw, rng, splits, split, count, *, seed, max_attempts, too_few):
    """Yields `count` new examples of `split`, drawn by `draw(rng)`.

    Args:
        draw: `draw(rng) -> (key, example)`, or None for a draw to drop;
            `key` is the example's text (what makes it unique).
        rng: The `random.Random` that `draw` uses.
        splits: A `SplitBuckets`.
        split: The split whose examples are kept.
        count: Number of examples.
        seed: The seed of the split hashing (`SplitBuckets.split_holds`).
        max_attempts: Draws allowed before giving up.
        too_few: `too_few(found, attempts) -> message`, the error's message
            when `max_attempts` draws found fewer than `count` examples.

    Raises:
        ValueError: fewer than `count` examples in `max_attempts` draws.
    """
    seen = set()
    attempts = 0
    while len(seen) < count:
        if attempts >= max_attempts:
            raise ValueError(too_few(len(seen), attempts))
        attempts += 1
        drawn = draw(rng)
        if drawn is None:
            continue
        key, example = drawn
        if key in seen or not splits.split_holds(split, seed, key):
            continue
        seen.add(key)
        yield example
