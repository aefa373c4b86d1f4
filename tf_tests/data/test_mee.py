"""Tests of the MEE dataset (hmkeras.data.mee): every constraint of
Jacob et al. (2018) Sec. 3.1, determinism, and the TFDS builder."""

import re

import numpy as np
import pytest

from hmkeras.data import mee


def _python_value(expression):
    """Independent reference: Python's own evaluation of the text."""
    assert re.fullmatch(r"[0-9+\-*%()]+", expression)
    return eval(expression)  # noqa: S307 - only digits, operators, brackets


def _check_structure(expression, length):
    # Fully parenthesised: every operator has its own pair of brackets.
    assert sum(expression.count(op) for op in "+-*%") == length
    assert expression.count("(") == expression.count(")") == length
    depth = 0
    for position, char in enumerate(expression):
        depth += {"(": 1, ")": -1}.get(char, 0)
        assert depth >= 0
        if depth == 0:
            assert position == len(expression) - 1  # one outer expression
    # No two digits in a row (single-digit operands only).
    assert not re.search(r"[0-9][0-9]", expression)


@pytest.mark.parametrize("length", [3, 4, 7])
def test_every_constraint(length):
    splits = {split: list(mee.generate_expressions(length, split, count, seed=1))
              for split, count in (("train", 300), ("validation", 60), ("test", 60))}
    for split, examples in splits.items():
        assert len(examples) == {"train": 300}.get(split, 60)
        texts = [e.expression for e in examples]
        assert len(set(texts)) == len(texts)  # unique
        for example in examples:
            _check_structure(example.expression, length)
            assert 10 <= example.value <= 99
            assert example.value == _python_value(example.expression)
            assert mee.evaluate_expression(example.expression) == example.value
            # Operations: split at "(", merge at ")", recur otherwise.
            assert len(example.operations) == len(example.expression)
            for char, op in zip(example.expression, example.operations):
                assert op == {"(": 0, ")": 1}.get(char, 2)
    train, valid, test = (set(e.expression for e in splits[s])
                          for s in ("train", "validation", "test"))
    assert not train & valid and not train & test and not valid & test


def test_splits_never_overlap_whatever_their_sizes():
    big_test = {e.expression for e in mee.generate_expressions(4, "test", 400)}
    big_train = {e.expression for e in mee.generate_expressions(4, "train", 1500)}
    assert not big_test & big_train
    # A smaller size is a prefix of a larger one.
    small = [e.expression for e in mee.generate_expressions(4, "test", 50)]
    large = [e.expression for e in mee.generate_expressions(4, "test", 400)]
    assert small == large[:50]


def test_deterministic_from_the_seed():
    a = list(mee.generate_expressions(5, "train", 100, seed=3))
    b = list(mee.generate_expressions(5, "train", 100, seed=3))
    c = list(mee.generate_expressions(5, "train", 100, seed=4))
    assert a == b
    assert [e.expression for e in a] != [e.expression for e in c]


def test_values_cover_the_range():
    values = {e.value for e in mee.generate_expressions(4, "train", 1000)}
    assert len(values) > 60  # many two-digit values, not a few easy ones


def test_modulo_is_pythons_and_zero_divisors_are_refused():
    assert mee.evaluate_expression("((0-7)%3)") == (-7) % 3
    assert mee.evaluate_expression("(5%(1-1))") is None


def test_too_many_expressions_for_a_length_is_a_clear_error():
    with pytest.raises(ValueError, match="Found only .* length 1"):
        list(mee.generate_expressions(1, "train", 300, max_attempts=20_000))


@pytest.mark.parametrize("kwargs, name", [
    (dict(length=0, split="train", count=1), "length"),
    (dict(length=4, split="dev", count=1), "split"),
    (dict(length=4, split="train", count=-1), "count"),
])
def test_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=f"`{name}`"):
        list(mee.generate_expressions(**kwargs))


def test_count_beyond_the_distinct_expressions_of_a_length():
    # Length 1: 10 * 4 * 10 strings; length 2: 2 shapes * 10^3 * 4^2.
    assert [mee.max_expressions(n) for n in (1, 2, 3)] == [400, 32_000, 5 * 10**4 * 64]
    with pytest.raises(ValueError, match="`count` must be at most 400.*`length` 1"):
        next(mee.generate_expressions(1, "train", 401))
    with pytest.raises(ValueError, match=r"`lengths` \[2\]"):
        mee.MeeConfig(name="bad", lengths=(2, 4), train_size=40_000)


@pytest.mark.parametrize("expression, message", [
    ("(1+x)", "unknown: 'x'"),
    ("(1 + 2)", "unknown: ' '"),
    ("((1+2)", "balanced"),
    ("(1+2))(", "balanced"),
])
def test_bad_expressions_name_the_argument(expression, message):
    for function in (mee.encode_expression, mee.expression_operations,
                     mee.evaluate_expression):
        with pytest.raises(ValueError, match=f"`expression`.*{re.escape(message)}"):
            function(expression)


def test_malformed_but_balanced_expressions():
    for expression in ("(1+)", "(12+3)", "()"):
        with pytest.raises(ValueError, match="`expression`"):
            mee.evaluate_expression(expression)


def test_bad_config():
    with pytest.raises(ValueError, match="`train_size`"):
        mee.MeeConfig(name="bad", train_size=0)
    with pytest.raises(ValueError, match="`lengths`"):
        mee.MeeConfig(name="bad", lengths=())


def test_encode_expression():
    ids = mee.encode_expression("((1+2)%3)")
    assert ids.dtype == np.int32 and ids.min() >= 1
    assert "".join(mee.VOCABULARY[i - 1] for i in ids) == "((1+2)%3)"


def test_tfds_builder(tmp_path):
    config = mee.MeeConfig(name="tiny", lengths=(4, 6), train_size=40,
                           valid_size=8, test_size=8, seed=2)
    builder = mee.Mee(config=config, data_dir=str(tmp_path))
    builder.download_and_prepare()
    assert set(builder.info.splits) == {
        f"{split}_{length}" for split in ("train", "validation", "test")
        for length in (4, 6)}
    seen = {}
    for name in builder.info.splits:
        split, length = name.rsplit("_", 1)
        rows = list(builder.as_dataset(split=name).as_numpy_iterator())
        assert len(rows) == config.size(split)
        texts = {row["expression"].decode() for row in rows}
        expected = {e.expression for e in mee.generate_expressions(
            int(length), split, config.size(split), seed=2)}
        assert texts == expected
        for row in rows:
            text = row["expression"].decode()
            assert row["length"] == int(length)
            assert row["value"] == _python_value(text)
            assert row["operations"].tolist() == list(mee.expression_operations(text))
        for other, other_texts in seen.items():
            assert not texts & other_texts, (name, other)
        seen[name] = texts
