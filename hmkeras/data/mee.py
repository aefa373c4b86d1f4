"""The math expression evaluation (MEE) task of Jacob et al. (2018), Sec. 3.1.

An example is a fully parenthesised expression over the digits 0-9 and the
operations ``+ - * %`` (every operation with its two operands inside one
pair of brackets), its value and the ground-truth tree operation of every
character: split at ``"("``, merge at ``")"``, recur otherwise::

    ((9+(2+6))+(1*3))  ->  20

The *length* of an expression is its number of operations.  Values are
restricted to positive two-digit integers (10..99); intermediate values are
not restricted.  ``%`` is Python's modulo (the result has the sign of the
divisor); an expression with a modulo by zero is never produced.

Generation is deterministic from a seed and lazy (a stream).  Each random
expression is assigned to a split by a hash of the seed and its text (10/12
train, 1/12 validation, 1/12 test), so the splits never overlap whatever
their sizes, each split can be generated on its own, and a smaller size
gives a prefix of a larger one.  Expressions are unique within a split.

* `generate_expressions(length, split, count, seed)`: a plain-Python stream
  of `MeeExample`s (no TFDS).
* `Mee`: the TFDS builder (generated locally, nothing downloaded) with one
  split per part and length, named ``train_4``, ``validation_4``,
  ``test_4``, ...; sizes from its `MeeConfig` (default: the paper's
  100,000 / 10,000 / 10,000 per length, lengths 4-7).
* `encode_expression`: character ids (0 is padding) for a model;
  `model_inputs`: a batch of them, with the operations and the digits.

Examples:

    >>> examples = list(generate_expressions(length=4, split="train", count=2))
    >>> all(10 <= e.value <= 99 and e.expression.count("(") == 4 for e in examples)
    True
    >>> e = examples[0]
    >>> evaluate_expression(e.expression) == e.value
    True
"""

from __future__ import annotations

import collections
import dataclasses
import math
import random

import numpy as np
import tensorflow_datasets as tfds

from hmkeras.data.unique_draws import SplitBuckets
from hmkeras.data.unique_draws import check_count
from hmkeras.data.unique_draws import unique_draws

__all__ = [
    "MeeExample", "Mee", "MeeConfig", "generate_expressions", "encode_expression",
    "model_inputs",
    "bracket_operations", "expression_operations", "evaluate_expression", "check_expression",
    "max_expressions", "VOCABULARY", "MEE_SPLITS",
    "SPLIT_OPERATION", "MERGE_OPERATION", "RECUR_OPERATION",
]

#: Symbols of the expressions; `encode_expression` maps them to 1..16.
VOCABULARY = "0123456789+-*%()"
OPERATORS = "+-*%"
MEE_SPLITS = ("train", "validation", "test")
#: Tree operation ids (the same as `hmkeras.cells.recurrent_recursive_cell`'s
#: SPLIT, MERGE, RECUR).
SPLIT_OPERATION, MERGE_OPERATION, RECUR_OPERATION = 0, 1, 2
# Share of the hash buckets of each split: 10/12, 1/12, 1/12.
_SPLITS = SplitBuckets(
    {"train": range(0, 10), "validation": range(10, 11), "test": range(11, 12)}, 12)

MeeExample = collections.namedtuple("MeeExample", ["expression", "value", "operations"])
MeeExample.__doc__ = """One MEE expression: its text, its value (10..99) and
the tuple of ground-truth operation ids, one per character."""


def check_expression(expression):
    """Raises a `ValueError` naming `expression` for a character outside
    `VOCABULARY` or unbalanced brackets; returns the expression.

    Examples:

        >>> check_expression("((1+2)*3)")
        '((1+2)*3)'
    """
    if not isinstance(expression, str):
        raise ValueError(f"`expression` must be a string. Received: {expression!r}")
    unknown = sorted(set(expression) - set(VOCABULARY))
    if unknown:
        raise ValueError(
            f"`expression` may hold only the characters {VOCABULARY!r}. Received: "
            f"expression={expression!r} (unknown: {''.join(unknown)!r})")
    depth = 0
    for char in expression:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            break
    if depth != 0:
        raise ValueError(
            f"`expression` must have balanced brackets. Received: expression={expression!r}")
    return expression


def max_expressions(length):
    """How many distinct expressions of `length` operations there are,
    whatever their values: Catalan(length) tree shapes times 10 digits per
    leaf and 4 operators per node (an upper bound of what a split holds).

    Examples:

        >>> max_expressions(1), max_expressions(2)
        (400, 32000)
    """
    shapes = math.comb(2 * length, length) // (length + 1)
    return shapes * 10 ** (length + 1) * len(OPERATORS) ** length


def bracket_operations(tokens):
    """Tree operations of bracketed tokens: split at "(", merge at ")", recur
    otherwise (the ground truth of every bracketed task: MEE, logic).

    Examples:

        >>> bracket_operations(["(", "not", "a", ")"])
        (0, 2, 2, 1)
    """
    table = {"(": SPLIT_OPERATION, ")": MERGE_OPERATION}
    return tuple(table.get(token, RECUR_OPERATION) for token in tokens)


def expression_operations(expression):
    """Ground-truth operations of an MEE expression (`bracket_operations`
    of its characters).

    Examples:

        >>> expression_operations("(1+2)")
        (0, 2, 2, 2, 1)
    """
    check_expression(expression)
    return bracket_operations(expression)


def _apply(operator, left, right):
    if operator == "+":
        return left + right
    if operator == "-":
        return left - right
    if operator == "*":
        return left * right
    if right == 0:
        return None
    return left % right


def evaluate_expression(expression):
    """Value of a fully parenthesised expression (None on a modulo by 0).

    Examples:

        >>> evaluate_expression("((7-2)%3)")
        2
    """
    check_expression(expression)
    def parse(position):
        if position >= len(expression):
            raise ValueError(f"`expression` ends early: {expression!r}.")
        char = expression[position]
        if char.isdigit():
            return int(char), position + 1
        if char != "(":
            raise ValueError(
                f"`expression`: unexpected {char!r} at {position} in {expression!r}.")
        left, position = parse(position + 1)
        if position >= len(expression) or expression[position] not in OPERATORS:
            raise ValueError(
                f"`expression`: expected an operator at {position} in {expression!r}.")
        operator = expression[position]
        right, position = parse(position + 1)
        if position >= len(expression) or expression[position] != ")":
            raise ValueError(f"`expression`: expected ')' at {position} in {expression!r}.")
        if left is None or right is None:
            return None, position + 1
        return _apply(operator, left, right), position + 1

    value, end = parse(0)
    if end != len(expression):
        raise ValueError(f"`expression`: trailing characters in {expression!r}.")
    return value


def _random_expression(rng, num_operations):
    """A random expression with `num_operations` operations and its value."""
    if num_operations == 0:
        digit = rng.randrange(10)
        return str(digit), digit
    left_ops = rng.randrange(num_operations)
    left, left_value = _random_expression(rng, left_ops)
    right, right_value = _random_expression(rng, num_operations - 1 - left_ops)
    operator = OPERATORS[rng.randrange(4)]
    value = None
    if left_value is not None and right_value is not None:
        value = _apply(operator, left_value, right_value)
    return f"({left}{operator}{right})", value


def _draw_example(rng, length):
    """`(expression, MeeExample)` of a random expression with a value in
    10..99, or None."""
    expression, value = _random_expression(rng, length)
    if value is None or not 10 <= value <= 99:
        return None
    return expression, MeeExample(expression, value, expression_operations(expression))


def generate_expressions(length, split, count, seed=0, max_attempts=None):
    """Streams `count` unique MEE examples of one length and split.

    Args:
        length: Number of operations (>= 1).
        split: "train", "validation" or "test".
        count: Number of examples.
        seed: Int; the same seed gives the same stream.
        max_attempts: Random draws allowed before giving up (default
            `2000 * count + 100_000`): short lengths have few distinct
            expressions.

    Yields:
        `MeeExample`s.

    Raises:
        ValueError: bad arguments, or fewer than `count` unique expressions
            found within `max_attempts` draws.

    Examples:

        >>> from hmkeras.data import generate_mee_expressions
        >>> examples = list(generate_mee_expressions(length=2, split="train", count=3))
        >>> len(examples), all(10 <= e.value <= 99 for e in examples)
        (3, True)
        >>> examples == list(generate_mee_expressions(2, "train", 3))  # same seed
        True
    """
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise ValueError(f"`length` must be a positive integer. Received: length={length!r}")
    _SPLITS.check_split(split)
    check_count(count)
    if count > max_expressions(length):
        raise ValueError(
            f"`count` must be at most {max_expressions(length):,}, the number of "
            f"distinct expressions of `length` {length}. Received: count={count}")
    if max_attempts is None:
        max_attempts = 2000 * count + 100_000

    def too_few(found, attempts):
        return (f"Found only {found} unique {split} expressions of length {length} "
                f"with a value in 10..99 after {attempts} draws (asked for {count}): "
                "use a smaller size or a longer length.")

    rng = random.Random(f"mee|{seed}|{length}|{split}")
    yield from unique_draws(lambda rng: _draw_example(rng, length), rng, _SPLITS, split,
                            count, seed=seed, max_attempts=max_attempts, too_few=too_few)


def encode_expression(expression):
    """Character ids of an expression (1..16; 0 is left for padding).

    Examples:

        >>> encode_expression("(1+2)").tolist()
        [15, 2, 11, 3, 16]
    """
    check_expression(expression)
    return np.array([VOCABULARY.index(char) + 1 for char in expression], np.int32)


def model_inputs(examples, width=None):
    """`ExpressionModel` inputs and targets of `MeeExample`s.

    Args:
        examples: A list of `MeeExample`s.
        width: Columns of the arrays (default: the longest expression).

    Returns:
        `({"tokens": (n, width) int32, "operations": (n, width) int32},
        digits (n, 2) int32)`: the character ids, 0-padded at the end, the
        ground-truth operations (recur on the padding) and the value's two
        digits.

    Examples:

        >>> example = MeeExample("((1+2)*4)", 12, expression_operations("((1+2)*4)"))
        >>> inputs, digits = model_inputs([example], width=10)
        >>> inputs["tokens"][0].tolist(), digits.tolist()
        ([15, 15, 2, 11, 3, 16, 13, 5, 16, 0], [[1, 2]])
    """
    width = width or max(len(e.expression) for e in examples)
    tokens = np.zeros((len(examples), width), np.int32)
    operations = np.full((len(examples), width), RECUR_OPERATION, np.int32)
    for row, example in enumerate(examples):
        tokens[row, : len(example.expression)] = encode_expression(example.expression)
        operations[row, : len(example.expression)] = example.operations
    digits = np.array([[e.value // 10, e.value % 10] for e in examples], np.int32)
    return {"tokens": tokens, "operations": operations}, digits


@dataclasses.dataclass(eq=False)
class MeeConfig(tfds.core.BuilderConfig):
    """Sizes of the MEE builder.

    Attributes:
        lengths: The expression lengths (numbers of operations).
        train_size, valid_size, test_size: Expressions per length and split.
        seed: Seed of the generation.

    Examples:

        >>> from hmkeras.data import MeeConfig
        >>> config = MeeConfig(name="small", lengths=(4, 5), train_size=2000)
        >>> config.lengths, config.train_size, config.valid_size
        ((4, 5), 2000, 10000)
    """

    lengths: tuple = (4, 5, 6, 7)
    train_size: int = 100_000
    valid_size: int = 10_000
    test_size: int = 10_000
    seed: int = 0

    def __post_init__(self):
        if not self.lengths or any(
            isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in self.lengths
        ):
            raise ValueError(
                f"`lengths` must be a non-empty tuple of positive integers. "
                f"Received: lengths={self.lengths!r}")
        for field in ("train_size", "valid_size", "test_size"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"`{field}` must be a positive integer. Received: {field}={value!r}")
        largest = max(self.train_size, self.valid_size, self.test_size)
        short = [n for n in self.lengths if max_expressions(n) < largest]
        if short:
            raise ValueError(
                f"`lengths` {short} have fewer distinct expressions than the "
                f"largest split size {largest:,} (length 1: "
                f"{max_expressions(1):,}, length 2: {max_expressions(2):,}). "
                f"Received: lengths={self.lengths!r}")

    def size(self, split):
        return {"train": self.train_size, "validation": self.valid_size,
                "test": self.test_size}[split]


class Mee(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """TFDS builder of the MEE dataset, generated locally.

    Splits: ``train_n``, ``validation_n``, ``test_n`` for each length
    ``n``; the default config has the paper's sizes (`MeeConfig`).

    Examples:

        >>> import tempfile
        >>> from hmkeras.data import Mee, MeeConfig
        >>> config = MeeConfig(name="tiny", lengths=(4,), train_size=8, valid_size=2,
        ...                    test_size=2)
        >>> builder = Mee(config=config, data_dir=tempfile.mkdtemp())
        >>> builder.download_and_prepare()
        Downloading and preparing dataset ...
        Dataset mee downloaded and prepared to ...
        >>> sorted(builder.info.splits)
        ['test_4', 'train_4', 'validation_4']
        >>> example = next(iter(builder.as_dataset(split="test_4").as_numpy_iterator()))
        >>> int(example["length"]), 10 <= int(example["value"]) <= 99
        (4, True)
    """

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "Initial release."}
    BUILDER_CONFIGS = [MeeConfig(name="default", description="Jacob et al. sizes.")]

    def _info(self):
        return self.dataset_info_from_configs(
            description=__doc__.split("\n\n")[0],
            features=tfds.features.FeaturesDict({
                "expression": tfds.features.Text(),
                "value": tfds.features.Scalar(dtype=np.int32),
                "length": tfds.features.Scalar(dtype=np.int32),
                "operations": tfds.features.Tensor(shape=(None,), dtype=np.int32),
            }),
            citation="Jacob, Lin, Sordoni and Bengio (2018), Learning Hierarchical "
                     "Structures On-The-Fly with a Recurrent-Recursive Model for "
                     "Sequences.",
        )

    def _split_generators(self, dl_manager):
        del dl_manager  # nothing to download
        config = self.builder_config
        return {
            f"{split}_{length}": self._generate_examples(length, split)
            for length in config.lengths for split in MEE_SPLITS
        }

    def _generate_examples(self, length, split):
        config = self.builder_config
        stream = generate_expressions(length, split, config.size(split), config.seed)
        for index, example in enumerate(stream):
            yield f"{length}_{index}", {
                "expression": example.expression,
                "value": example.value,
                "length": length,
                "operations": np.array(example.operations, np.int32),
            }
