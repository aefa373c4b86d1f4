"""The logical-inference task (Bowman et al. 2015; Jacob et al. 2018, Sec. 3.2).

Sentences of a propositional language over six variables ``a``-``f`` with
``and``, ``or`` (binary) and ``not`` (unary), fully bracketed, tokens
separated by spaces::

    ( ( not a ) and ( b or c ) )

The *number of operations* of a sentence is its count of ``and``, ``or``
and ``not``.  A pair of sentences is labelled with one of MacCartney's seven
relations (`RELATIONS`), computed exactly by model checking: the denotation
of a sentence is the set of its satisfying assignments among the 64
assignments of the six variables, held as a 64-bit integer (bit ``k`` is
assignment ``k``, variable ``i`` true in it when bit ``i`` of ``k`` is 1),
and for the denotations ``A`` and ``B`` of the left and right sentences:

======================  =======  =====================================
relation                symbol   condition
======================  =======  =====================================
equivalence             ``=``    ``A = B``
forward entailment      ``<``    ``A`` a proper subset of ``B``
reverse entailment      ``>``    ``A`` a proper superset of ``B``
negation                ``^``    ``A & B`` empty, ``A | B`` everything
alternation             ``|``    ``A & B`` empty, ``A | B`` not everything
cover                   ``v``    ``A & B`` not empty, ``A | B`` everything,
                                 neither contains the other
independence            ``#``    otherwise
======================  =======  =====================================

Choices of this implementation (the papers give the language, not the
generator):

* degenerate sentences, whose denotation is empty (a contradiction) or all
  64 assignments (a tautology), are never generated: with them the seven
  relations are no longer mutually exclusive (MacCartney's definitions
  assume non-empty, non-universal sets); `pair_relation` refuses them;
* a random sentence with ``n`` operations draws its top operation
  uniformly among ``not``, ``and``, ``or`` and, for a binary one, the
  number of operations of its left side uniformly in ``0..n-1``;
* the *number of operations of a pair* is the larger of its two sentences'
  counts (the longer sentence decides, as in Bowman et al.'s test bins):
  a pair of bin ``n`` has one sentence with ``n`` operations and the other
  with a uniform count in ``1..n``, in a random order;
* each random pair is assigned to a split by a hash of the seed and its
  two sentences (8/10 train, 1/10 validation, 1/10 test, the ratios of
  Jacob et al.), so the splits never share a pair whatever their sizes; a
  sentence may appear in pairs of several splits.  Pairs are unique within
  a split.

* `generate_pairs(operations, split, count, seed)`: a plain-Python,
  deterministic stream of `LogicPair`s.
* `write_pair_files(directory, config)` writes one tab-separated file per
  split and number of operations (``relation<TAB>left<TAB>right`` per
  line, the layout of Bowman et al.'s files); `read_pair_file` reads and
  checks such a file (a hand-written one too).
* `LogicInference`: the TFDS builder over those files (generated locally,
  nothing downloaded); splits ``train_1`` ... ``test_12``.
* `parse_sentence`, `denotation`, `pair_relation`, `encode_sentence`,
  `sentence_operations` (ground-truth tree operations for the RRNet:
  split at ``(``, merge at ``)``, recur otherwise).

Examples:

    >>> pair = next(generate_pairs(operations=2, split="train", count=1))
    >>> pair.relation in RELATIONS and max(pair.left_operations,
    ...                                    pair.right_operations) == 2
    True
    >>> RELATIONS[pair_relation("( a and b )", "( a or b )")]
    'forward_entailment'
"""

from __future__ import annotations

import collections
import dataclasses
import os
import random

import numpy as np
import tensorflow_datasets as tfds

from hmkeras.data.mee import bracket_operations
from hmkeras.data.unique_draws import SplitBuckets
from hmkeras.data.unique_draws import check_count
from hmkeras.data.unique_draws import unique_draws

__all__ = [
    "LogicPair", "LogicInference", "LogicInferenceConfig", "generate_pairs",
    "write_pair_files", "read_pair_file", "parse_sentence", "denotation",
    "pair_relation", "encode_sentence", "sentence_operations", "count_operations",
    "RELATIONS", "RELATION_SYMBOLS", "VOCABULARY", "VARIABLES", "LOGIC_SPLITS",
    "MAX_OPERATIONS",
]

VARIABLES = ("a", "b", "c", "d", "e", "f")
#: Tokens of the language; `encode_sentence` maps them to 1..11 (0: padding).
VOCABULARY = ("(", ")", "not", "and", "or") + VARIABLES
RELATIONS = ("equivalence", "forward_entailment", "reverse_entailment",
             "negation", "alternation", "cover", "independence")
RELATION_SYMBOLS = ("=", "<", ">", "^", "|", "v", "#")
LOGIC_SPLITS = ("train", "validation", "test")
#: The largest number of operations of the task (Jacob et al., Sec. 3.2).
MAX_OPERATIONS = 12
NUM_ASSIGNMENTS = 2 ** len(VARIABLES)
_EVERYTHING = (1 << NUM_ASSIGNMENTS) - 1
# Denotation of each variable: the assignments k whose bit i is set.
_VARIABLE_SETS = {
    name: sum(1 << k for k in range(NUM_ASSIGNMENTS) if (k >> i) & 1)
    for i, name in enumerate(VARIABLES)
}
_SPLITS = SplitBuckets(
    {"train": range(0, 8), "validation": range(8, 9), "test": range(9, 10)}, 10)

LogicPair = collections.namedtuple(
    "LogicPair", ["left", "right", "relation", "left_operations", "right_operations"])
LogicPair.__doc__ = """A labelled pair: the two sentences (text), the
relation's name (one of `RELATIONS`) and each sentence's number of
operations."""


# ---------------------------------------------------------------------------
# Parsing and model checking.
def parse_sentence(sentence, name="sentence"):
    """The tree of a sentence: a variable name, ``("not", x)`` or
    ``(op, left, right)``.

    Args:
        sentence: The text, tokens separated by spaces.
        name: The argument's name in error messages.

    Raises:
        ValueError: naming the argument, on an unknown token, unbalanced or
            misplaced brackets, or trailing tokens.

    Examples:

        >>> parse_sentence("( ( not a ) or b )")
        ('or', ('not', 'a'), 'b')
    """
    if not isinstance(sentence, str):
        raise ValueError(f"`{name}` must be a str. Received: {name}={sentence!r}")
    tokens = sentence.split()
    unknown = sorted(set(tokens) - set(VOCABULARY))
    if unknown:
        raise ValueError(
            f"`{name}` has unknown token(s) {unknown}; allowed: {list(VOCABULARY)} "
            f"separated by spaces. Received: {name}={sentence!r}")
    if tokens.count("(") != tokens.count(")"):
        raise ValueError(
            f"`{name}` has unbalanced brackets ({tokens.count('(')} '(' and "
            f"{tokens.count(')')} ')'). Received: {name}={sentence!r}")

    def fail(position, expected):
        found = repr(tokens[position]) if position < len(tokens) else "the end"
        raise ValueError(
            f"`{name}` is not a fully bracketed formula: expected {expected} at "
            f"token {position}, found {found}. Received: {name}={sentence!r}")

    def parse(position):
        if position >= len(tokens):
            fail(position, "a variable or '('")
        token = tokens[position]
        if token in VARIABLES:
            return token, position + 1
        if token != "(":
            fail(position, "a variable or '('")
        if position + 1 < len(tokens) and tokens[position + 1] == "not":
            operand, position = parse(position + 2)
            tree = ("not", operand)
        else:
            left, position = parse(position + 1)
            if position >= len(tokens) or tokens[position] not in ("and", "or"):
                fail(position, "'and' or 'or'")
            operator = tokens[position]
            right, position = parse(position + 1)
            tree = (operator, left, right)
        if position >= len(tokens) or tokens[position] != ")":
            fail(position, "')'")
        return tree, position + 1

    tree, end = parse(0)
    if end != len(tokens):
        fail(end, "the end")
    return tree


def _tree_denotation(tree):
    if isinstance(tree, str):
        return _VARIABLE_SETS[tree]
    if tree[0] == "not":
        return _EVERYTHING ^ _tree_denotation(tree[1])
    left, right = _tree_denotation(tree[1]), _tree_denotation(tree[2])
    return left & right if tree[0] == "and" else left | right


def denotation(sentence):
    """Satisfying assignments of a sentence as a 64-bit int (bit k:
    assignment k, in which variable i is bit i of k).

    Examples:

        >>> denotation("a") == sum(1 << k for k in range(64) if k % 2)
        True
    """
    return _tree_denotation(parse_sentence(sentence))


def count_operations(sentence):
    """Number of ``and``, ``or`` and ``not`` of a sentence (checked).

    Examples:

        >>> count_operations("( ( not a ) and ( b or c ) )")
        3
    """
    parse_sentence(sentence)
    return sum(token in ("not", "and", "or") for token in sentence.split())


def _relation_of_sets(left, right):
    """Index in `RELATIONS` of two non-degenerate denotations."""
    if left == right:
        return 0
    if left & right == left:
        return 1
    if left & right == right:
        return 2
    exhaustive = (left | right) == _EVERYTHING
    if left & right == 0:
        return 3 if exhaustive else 4
    return 5 if exhaustive else 6


def pair_relation(left, right):
    """Index in `RELATIONS` of the relation between two sentences.

    Raises:
        ValueError: naming the argument whose sentence is malformed, a
            contradiction or a tautology (its relations are ambiguous).

    Examples:

        >>> RELATIONS[pair_relation("( not a )", "a")]
        'negation'
    """
    sets = []
    for name, sentence in (("left", left), ("right", right)):
        value = _tree_denotation(parse_sentence(sentence, name))
        if value in (0, _EVERYTHING):
            kind = "a contradiction" if value == 0 else "a tautology"
            raise ValueError(
                f"`{name}` is {kind}; the seven relations are defined for "
                f"sentences true in some but not all assignments. "
                f"Received: {name}={sentence!r}")
        sets.append(value)
    return _relation_of_sets(*sets)


def sentence_operations(sentence):
    """Ground-truth RRNet operations, one per token: split (0) at "(",
    merge (1) at ")", recur (2) otherwise.

    Examples:

        >>> sentence_operations("( not a )")
        (0, 2, 2, 1)
    """
    return bracket_operations(sentence.split())


def encode_sentence(sentence):
    """Token ids of a sentence (1..11; 0 is left for padding), checked.

    Examples:

        >>> encode_sentence("( not a )").tolist()
        [1, 3, 6, 2]
    """
    parse_sentence(sentence)
    return np.array([VOCABULARY.index(token) + 1 for token in sentence.split()],
                    np.int32)


# ---------------------------------------------------------------------------
# Generation.
def _random_tree(rng, num_operations):
    if num_operations == 0:
        return VARIABLES[rng.randrange(len(VARIABLES))]
    operator = ("not", "and", "or")[rng.randrange(3)]
    if operator == "not":
        return ("not", _random_tree(rng, num_operations - 1))
    left = rng.randrange(num_operations)
    return (operator, _random_tree(rng, left),
            _random_tree(rng, num_operations - 1 - left))


def _tree_text(tree):
    if isinstance(tree, str):
        return tree
    if tree[0] == "not":
        return f"( not {_tree_text(tree[1])} )"
    return f"( {_tree_text(tree[1])} {tree[0]} {_tree_text(tree[2])} )"


def _random_sentence(rng, num_operations):
    """A non-degenerate random sentence and its denotation."""
    while True:
        tree = _random_tree(rng, num_operations)
        value = _tree_denotation(tree)
        if value not in (0, _EVERYTHING):
            return _tree_text(tree), value


def _draw_pair(rng, operations):
    """`(key, LogicPair)` of a random pair whose larger sentence has
    `operations` operations (the other 1..`operations`, on either side)."""
    other = 1 + rng.randrange(operations)
    sides = [(operations, *_random_sentence(rng, operations)),
             (other, *_random_sentence(rng, other))]
    if rng.randrange(2):
        sides.reverse()
    (left_ops, left, left_set), (right_ops, right, right_set) = sides
    relation = RELATIONS[_relation_of_sets(left_set, right_set)]
    return f"{left}|{right}", LogicPair(left, right, relation, left_ops, right_ops)


def _check_operations(name, value):
    if (isinstance(value, bool) or not isinstance(value, int)
            or not 1 <= value <= MAX_OPERATIONS):
        raise ValueError(f"`{name}` must be an integer in 1..{MAX_OPERATIONS}. "
                         f"Received: {name}={value!r}")
    return value


def generate_pairs(operations, split, count, seed=0, max_attempts=None):
    """Streams `count` unique labelled pairs of one bin and split.

    Args:
        operations: The pair's number of operations (the larger of its
            sentences'), in 1..`MAX_OPERATIONS`.
        split: "train", "validation" or "test".
        count: Number of pairs.
        seed: Int; the same seed gives the same stream, and a smaller
            `count` a prefix of a larger one.
        max_attempts: Random draws allowed before giving up (default
            `200 * count + 10_000`): short sentences make few pairs.

    Yields:
        `LogicPair`s.

    Raises:
        ValueError: bad arguments, or fewer than `count` unique pairs found
            within `max_attempts` draws (naming `count`).

    Examples:

        >>> from hmkeras.data import generate_logic_pairs
        >>> pairs = list(generate_logic_pairs(operations=3, split="train", count=2))
        >>> [max(p.left_operations, p.right_operations) for p in pairs]
        [3, 3]
        >>> pairs[0] == next(generate_logic_pairs(3, "train", 1))  # a prefix
        True
    """
    _check_operations("operations", operations)
    _SPLITS.check_split(split)
    check_count(count)
    if max_attempts is None:
        max_attempts = 200 * count + 10_000

    def too_few(found, attempts):
        return (f"`count` is too large: found only {found} unique {split} pairs "
                f"with {operations} operation(s) after {attempts} draws (asked for "
                f"count={count}); short sentences make few distinct pairs.")

    rng = random.Random(f"logic|{seed}|{operations}|{split}")
    yield from unique_draws(lambda rng: _draw_pair(rng, operations), rng, _SPLITS, split,
                            count, seed=seed, max_attempts=max_attempts, too_few=too_few)


# ---------------------------------------------------------------------------
# Files and the TFDS builder.
def _file_name(split, operations):
    return f"{split}_{operations}.tsv"


@dataclasses.dataclass(eq=False)
class LogicInferenceConfig(tfds.core.BuilderConfig):
    """Sizes of the logical-inference builder.

    Attributes:
        operations: The pairs' numbers of operations (bins), in 1..12.
        train_size, valid_size, test_size: Pairs per bin and split.
        seed: Seed of the generation.

    Examples:

        >>> from hmkeras.data import LogicInferenceConfig
        >>> config = LogicInferenceConfig(name="small", operations=(1, 2, 3), train_size=500)
        >>> config.size("train"), config.size("test")
        (500, 250)
    """

    operations: tuple = tuple(range(1, MAX_OPERATIONS + 1))
    train_size: int = 2000
    valid_size: int = 250
    test_size: int = 250
    seed: int = 0

    def __post_init__(self):
        if not self.operations:
            raise ValueError("`operations` must be a non-empty tuple of integers "
                             f"in 1..{MAX_OPERATIONS}. Received: operations=()")
        for value in self.operations:
            _check_operations("operations", value)
        for field in ("train_size", "valid_size", "test_size"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"`{field}` must be a positive integer. Received: {field}={value!r}")

    def size(self, split):
        return getattr(self, self.size_field(split))

    @staticmethod
    def size_field(split):
        """The attribute holding the size of `split`."""
        return {"train": "train_size", "validation": "valid_size",
                "test": "test_size"}[split]


def write_pair_files(directory, config):
    """Writes ``{split}_{operations}.tsv`` for every split and bin of a
    `LogicInferenceConfig`; returns `{split name: path}` (``train_3``...).

    Each line is ``symbol<TAB>left<TAB>right`` (symbols: `RELATION_SYMBOLS`).

    Raises:
        ValueError: naming the size field (``test_size``, ...) when a bin
            has fewer distinct pairs than asked for.
    """
    os.makedirs(directory, exist_ok=True)
    paths = {}
    for operations in config.operations:
        for split in LOGIC_SPLITS:
            path = os.path.join(directory, _file_name(split, operations))
            pairs = generate_pairs(operations, split, config.size(split), config.seed)
            try:
                _write_pairs(path, pairs)
            except ValueError as error:
                field = config.size_field(split)
                raise ValueError(
                    f"`{field}`={config.size(split)} is more than the {split} pairs "
                    f"with {operations} operation(s) can give: {error}") from None
            paths[f"{split}_{operations}"] = path
    return paths


def _write_pairs(path, pairs):
    with open(path + ".part", "w", encoding="utf-8") as f:
        for pair in pairs:
            symbol = RELATION_SYMBOLS[RELATIONS.index(pair.relation)]
            f.write(f"{symbol}\t{pair.left}\t{pair.right}\n")
    os.replace(path + ".part", path)


def read_pair_file(path):
    """Reads a ``symbol<TAB>left<TAB>right`` file as `LogicPair`s.

    Every sentence is parsed and every label checked against the relation
    computed by model checking.

    Raises:
        ValueError: naming the file and line, on a bad layout, an unknown
            symbol, a malformed or degenerate sentence or a wrong label.
    """
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            where = f"{path}, line {number}"
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 3:
                raise ValueError(f"{where}: expected 'relation<TAB>left<TAB>right', "
                                 f"found {len(fields)} field(s).")
            symbol, left, right = fields
            if symbol not in RELATION_SYMBOLS:
                raise ValueError(f"{where}: unknown relation {symbol!r}; allowed: "
                                 f"{list(RELATION_SYMBOLS)}.")
            try:
                relation = pair_relation(left, right)
            except ValueError as error:
                raise ValueError(f"{where}: {error}") from None
            if RELATION_SYMBOLS[relation] != symbol:
                raise ValueError(f"{where}: labelled {symbol!r} but the relation is "
                                 f"{RELATION_SYMBOLS[relation]!r} ({RELATIONS[relation]}).")
            yield LogicPair(left, right, RELATIONS[relation],
                            count_operations(left), count_operations(right))


class LogicInference(tfds.core.GeneratorBasedBuilder, skip_registration=True):
    """TFDS builder of the logical-inference pairs, over files it generates.

    `download_and_prepare` writes the tab-separated files of its config
    (`write_pair_files`, into the download directory; nothing is fetched)
    and reads them back with `read_pair_file`.  Splits: ``train_n``,
    ``validation_n``, ``test_n`` for each number of operations ``n``.

    The default config has 2,000 / 250 / 250 pairs for each of the 12 bins
    (`LogicInferenceConfig`).

    Examples:

        >>> import tempfile
        >>> from hmkeras.data import LogicInference, LogicInferenceConfig
        >>> config = LogicInferenceConfig(name="tiny", operations=(1, 2), train_size=8,
        ...                               valid_size=2, test_size=2)
        >>> builder = LogicInference(config=config, data_dir=tempfile.mkdtemp())
        >>> builder.download_and_prepare()
        Downloading and preparing dataset ...
        Dataset logic_inference downloaded and prepared to ...
        >>> builder.info.splits["train_1"].num_examples
        8
        >>> builder.info.features["relation"].names[:2]
        ['equivalence', 'forward_entailment']
    """

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "Initial release."}
    BUILDER_CONFIGS = [LogicInferenceConfig(name="default",
                                            description="Bins 1-12, 2000/250/250.")]

    def _info(self):
        return self.dataset_info_from_configs(
            description=__doc__.split("\n\n")[0],
            features=tfds.features.FeaturesDict({
                "left": tfds.features.Text(),
                "right": tfds.features.Text(),
                "relation": tfds.features.ClassLabel(names=list(RELATIONS)),
                "operations": tfds.features.Scalar(dtype=np.int32),
            }),
            citation="Bowman, Manning and Potts (2015), Tree-structured composition "
                     "in neural networks without tree-structured architectures; "
                     "Jacob, Lin, Sordoni and Bengio (2018), Sec. 3.2.",
        )

    def _split_generators(self, dl_manager):
        directory = os.path.join(os.fspath(dl_manager.download_dir),
                                 f"logic_inference_{self.builder_config.name}")
        paths = write_pair_files(directory, self.builder_config)
        return {name: self._generate_examples(path) for name, path in paths.items()}

    def _generate_examples(self, path):
        for index, pair in enumerate(read_pair_file(path)):
            yield index, {
                "left": pair.left, "right": pair.right, "relation": pair.relation,
                "operations": max(pair.left_operations, pair.right_operations),
            }
