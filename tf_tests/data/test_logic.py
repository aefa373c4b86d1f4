"""Tests of the logical-inference data (hmkeras.data.logic): relations
against a brute-force truth table, determinism, splits, bad input, files
and the TFDS builder."""

import itertools
import random

import numpy as np
import pytest

from hmkeras.data import logic

VARIABLES = "abcdef"
ASSIGNMENTS = list(itertools.product([False, True], repeat=6))


def _python_truth(sentence, assignment):
    """Independent reference: the sentence as a Python boolean expression,
    evaluated with Python's own `and` / `or` / `not` in one assignment."""
    tokens = sentence.split()
    assert set(tokens) <= set("()abcdef") | {"and", "or", "not"}
    names = dict(zip(VARIABLES, assignment))
    return eval(" ".join(tokens), {"__builtins__": {}}, names)  # noqa: S307


def _truth_set(sentence):
    return {k for k, assignment in enumerate(ASSIGNMENTS)
            if _python_truth(sentence, assignment)}


def _brute_force_relation(left, right):
    """MacCartney's seven relations from Python sets of assignments."""
    a, b, everything = _truth_set(left), _truth_set(right), set(range(64))
    if a == b:
        return "equivalence"
    if a < b:
        return "forward_entailment"
    if a > b:
        return "reverse_entailment"
    if not a & b:
        return "negation" if a | b == everything else "alternation"
    if a | b == everything:
        return "cover"
    return "independence"


def test_denotation_is_the_truth_table():
    # itertools.product puts variable "a" last; logic puts it on bit 0 of
    # the assignment's number: compare the sets of true *assignments*.
    for sentence in ["a", "( not f )", "( ( a and b ) or ( not c ) )",
                     "( ( ( d or e ) and ( not ( a or f ) ) ) or c )"]:
        bits = logic.denotation(sentence)
        expected = set()
        for assignment in ASSIGNMENTS:
            if _python_truth(sentence, assignment):
                k = sum(1 << i for i, value in enumerate(assignment) if value)
                expected.add(k)
        assert {k for k in range(64) if (bits >> k) & 1} == expected


@pytest.mark.parametrize("left, right, relation", [
    ("( a and b )", "( b and a )", "equivalence"),
    ("( not ( a or b ) )", "( ( not a ) and ( not b ) )", "equivalence"),
    ("( a and b )", "( a or c )", "forward_entailment"),
    ("( a or ( b and c ) )", "( a and d )", "reverse_entailment"),
    ("( a and b )", "( ( not a ) or ( not b ) )", "negation"),
    ("( not c )", "c", "negation"),
    ("( a and b )", "( not a )", "alternation"),
    ("( a or b )", "( ( not a ) or c )", "cover"),
    ("( a and b )", "( c or d )", "independence"),
])
def test_hand_made_pair_of_each_relation(left, right, relation):
    assert _brute_force_relation(left, right) == relation  # the reference agrees
    assert logic.RELATIONS[logic.pair_relation(left, right)] == relation


def test_generated_relations_against_brute_force():
    seen = set()
    for operations in (1, 3, 7, 12):
        for split in logic.LOGIC_SPLITS:
            for pair in logic.generate_pairs(operations, split, 40, seed=3):
                assert pair.relation == _brute_force_relation(pair.left, pair.right)
                seen.add(pair.relation)
    # Random pairs of random sentences, labelled by the reference too.
    rng = random.Random(0)
    for _ in range(300):
        left, _ = logic._random_sentence(rng, rng.randint(1, 12))
        right, _ = logic._random_sentence(rng, rng.randint(1, 12))
        expected = _brute_force_relation(left, right)
        assert logic.RELATIONS[logic.pair_relation(left, right)] == expected
    assert len(seen) >= 6  # the generated pairs cover (nearly) every relation


@pytest.mark.parametrize("operations", [1, 4, 12])
def test_every_constraint_of_a_bin(operations):
    pairs = list(logic.generate_pairs(operations, "train", 200, seed=1))
    assert len({(p.left, p.right) for p in pairs}) == 200  # unique
    for pair in pairs:
        assert max(pair.left_operations, pair.right_operations) == operations
        assert min(pair.left_operations, pair.right_operations) >= 1
        for sentence, count in ((pair.left, pair.left_operations),
                                (pair.right, pair.right_operations)):
            tokens = sentence.split()
            assert sum(t in ("and", "or", "not") for t in tokens) == count
            # Fully bracketed: one pair of brackets per operation.
            assert tokens.count("(") == tokens.count(")") == count
            # Never degenerate (neither a contradiction nor a tautology).
            assert 0 < len(_truth_set(sentence)) < 64
    if operations == 1:
        return
    # Both orders occur (the longer sentence is not always on the left).
    assert any(p.left_operations < p.right_operations for p in pairs)
    assert any(p.left_operations > p.right_operations for p in pairs)


def test_deterministic_prefixes_and_splits_never_overlap():
    first = list(logic.generate_pairs(3, "train", 300, seed=7))
    assert first == list(logic.generate_pairs(3, "train", 300, seed=7))
    assert first[:50] == list(logic.generate_pairs(3, "train", 50, seed=7))
    assert first != list(logic.generate_pairs(3, "train", 300, seed=8))
    for operations in (1, 2, 5):
        splits = {split: {(p.left, p.right) for p in logic.generate_pairs(
                      operations, split, count, seed=7)}
                  for split, count in (("train", 400), ("validation", 50), ("test", 50))}
        assert not splits["train"] & splits["validation"]
        assert not splits["train"] & splits["test"]
        assert not splits["validation"] & splits["test"]


def test_ground_truth_operations_and_encoding():
    sentence = "( ( not a ) and b )"
    assert logic.sentence_operations(sentence) == (0, 0, 2, 2, 1, 2, 2, 1)
    ids = logic.encode_sentence(sentence)
    assert [logic.VOCABULARY[i - 1] for i in ids] == sentence.split()
    assert ids.dtype == np.int32 and ids.min() >= 1


@pytest.mark.parametrize("sentence, words", [
    ("( a xor b )", ["sentence", "unknown token", "'xor'"]),
    ("( a and g )", ["sentence", "unknown token", "'g'"]),
    ("( a and b", ["sentence", "unbalanced brackets"]),
    ("( a and b ) )", ["sentence", "unbalanced brackets"]),
    ("( a b )", ["sentence", "'and' or 'or'"]),
    ("( a and b ) ( c )", ["sentence", "the end"]),
    ("a)", ["sentence", "unknown token"]),  # tokens must be space-separated
])
def test_bad_sentences_name_the_argument(sentence, words):
    with pytest.raises(ValueError) as error:
        logic.parse_sentence(sentence)
    for word in words:
        assert word in str(error.value)


def test_bad_generator_and_config_arguments():
    with pytest.raises(ValueError, match=r"`operations` must be an integer in 1\.\.12"):
        next(logic.generate_pairs(13, "train", 1))
    with pytest.raises(ValueError, match="`operations`"):
        logic.LogicInferenceConfig(name="x", operations=(0, 2))
    with pytest.raises(ValueError, match="`split`"):
        next(logic.generate_pairs(2, "dev", 1))
    with pytest.raises(ValueError, match="`train_size`"):
        logic.LogicInferenceConfig(name="x", train_size=0)
    # More test pairs with one operation than the language has.
    with pytest.raises(ValueError, match="`count` is too large"):
        list(logic.generate_pairs(1, "test", 2000, max_attempts=20_000))
    with pytest.raises(ValueError, match="`left` is a tautology"):
        logic.pair_relation("( a or ( not a ) )", "b")
    with pytest.raises(ValueError, match="`right` is a contradiction"):
        logic.pair_relation("b", "( a and ( not a ) )")


def test_files_round_trip_and_bad_files(tmp_path):
    config = logic.LogicInferenceConfig(name="t", operations=(1, 3), train_size=20,
                                        valid_size=5, test_size=5, seed=2)
    paths = logic.write_pair_files(str(tmp_path), config)
    assert sorted(paths) == sorted(f"{s}_{n}" for s in logic.LOGIC_SPLITS for n in (1, 3))
    for name, path in paths.items():
        split, n = name.rsplit("_", 1)
        assert list(logic.read_pair_file(path)) == list(
            logic.generate_pairs(int(n), split, config.size(split), seed=2))
    # A bin of one operation has about 570 distinct test pairs.
    too_big = logic.LogicInferenceConfig(name="big", operations=(1,), train_size=5,
                                         valid_size=5, test_size=3000)
    with pytest.raises(ValueError, match="`test_size`=3000 is more than the test pairs"):
        logic.write_pair_files(str(tmp_path / "big"), too_big)
    bad = tmp_path / "bad.tsv"
    for text, message in [("<\t( a and b )\t( a and c )\n", "labelled '<'"),
                          ("?\t( a and b )\ta\n", "unknown relation"),
                          ("<\t( a and b )\n", "expected 'relation"),
                          ("<\t( a and z )\ta\n", "`left` has unknown token")]:
        bad.write_text(text)
        with pytest.raises(ValueError, match="bad.tsv, line 1") as error:
            list(logic.read_pair_file(str(bad)))
        assert message in str(error.value)


def test_tfds_builder_over_generated_files(tmp_path):
    config = logic.LogicInferenceConfig(name="tiny", operations=(2, 5), train_size=30,
                                        valid_size=6, test_size=6, seed=4)
    builder = logic.LogicInference(config=config, data_dir=str(tmp_path / "tfds"))
    builder.download_and_prepare(download_dir=str(tmp_path / "downloads"))
    for n in (2, 5):
        for split in logic.LOGIC_SPLITS:
            rows = list(builder.as_dataset(split=f"{split}_{n}").as_numpy_iterator())
            expected = list(logic.generate_pairs(n, split, config.size(split), seed=4))
            assert len(rows) == len(expected)
            # TFDS may reorder the examples: compare as sets.
            got = {(r["left"].decode(), r["right"].decode(),
                    logic.RELATIONS[r["relation"]], int(r["operations"])) for r in rows}
            assert got == {(p.left, p.right, p.relation, n) for p in expected}
    assert (tmp_path / "downloads" / "logic_inference_tiny" / "train_5.tsv").exists()
