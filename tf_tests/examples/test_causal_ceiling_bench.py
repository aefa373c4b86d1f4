"""`bench/causal_ceiling.py`: its cuts and counts by hand, and its ceilings on
constructed corpora whose word ends are decided by the symbol just read, or
only by the next one."""

import os
import subprocess
import sys

import numpy as np
from example_modules import ROOT
from example_modules import load_script

BENCH = load_script("bench", "causal_ceiling")
SCRIPT = os.path.join(ROOT, "bench", "causal_ceiling.py")


def test_cuts_and_counts_by_hand():
    symbols, cuts = BENCH.unspaced_with_cuts("ab c de")
    assert symbols == "abcde"
    assert cuts.tolist() == [0, 1, 1, 0]  # after b and after c; the edge is not counted
    table = BENCH.count_table(["ab c de", "ab cd"], lookahead=0)
    # After "b" (k = 1): a word ends both times; after "c": once of twice.
    assert table["b|"] == [2, 2]
    assert table["c|"] == [1, 2]
    # k = 3 reaches the utterance's start marker.
    assert table[BENCH.START + "ab|"] == [2, 2]
    one_ahead = BENCH.count_table(["ab c de", "ab cd"], lookahead=1)
    assert one_ahead["c|d"] == [1, 2]  # "c d" and "cd": the next symbol does not tell
    assert one_ahead["bc|d"] == [1, 2]


def test_a_word_end_told_by_the_symbol_just_read():
    # Every word ends with "z" and "z" occurs nowhere else: reading x_t is enough.
    rng = np.random.default_rng(0)
    words = ["az", "bbz", "cz", "abcz"]
    lines = [" ".join(rng.choice(words, size=rng.integers(2, 6))) for _ in range(300)]
    _, _, _, scores, _ = BENCH.ceiling(lines[:200], lines[200:250], lines[250:], lookahead=0)
    assert scores.boundary.f1 == 1.0 and scores.token.f1 == 1.0


def test_a_word_end_told_only_by_the_next_symbol():
    # "ab" and "abc" are both words, and "c" also starts "cd": after "ab" a
    # word ends unless "c" comes, and whether it ends after "abc" depends on
    # whether "d" follows. Nothing read so far tells; one symbol ahead does.
    rng = np.random.default_rng(1)
    words = ["ab", "abc", "cd"]
    lines = [" ".join(rng.choice(words, size=rng.integers(2, 7))) for _ in range(400)]
    train, valid, test = lines[:250], lines[250:320], lines[320:]
    _, _, _, causal, _ = BENCH.ceiling(train, valid, test, lookahead=0)
    _, _, _, ahead, _ = BENCH.ceiling(train, valid, test, lookahead=1)
    assert causal.boundary.f1 < 0.95
    assert ahead.boundary.f1 > causal.boundary.f1


def test_agreement_by_hand():
    test = ["ab c de", "ab cd", "abc d", "a bc"]    # gold cuts [0 1 1 0], [0 1 0], [0 0 1], [1 0]
    causal = [[0, 1, 0, 1], [1, 0, 0], [0, 0, 1], [1, 0]]
    segmented = ["ab cde", "a bcd", "a bc d", "abc"]  # cuts [0 1 0 0], [1 0 0], [1 0 1], [0 0]
    shares = BENCH.agreement(test, causal, segmented)
    # The table finds three gold boundaries (line 1 after b, line 3 after c,
    # line 4 after a); the segmenter two of them.
    assert shares["decided_recall"] == 2 / 3
    # The table misses two of five (line 1 after c, line 2 after b): the segmenter both.
    assert shares["undecided_recall"] == 0.0
    assert shares["undecided_share"] == 2 / 5
    # The table's false boundaries: line 1 after d (not placed), line 2 after a (placed).
    assert shares["false_shared"] == 0.5
    # The segmenter's false boundaries: line 2 after a (the table's too), line 3 after a.
    assert shares["false_explained"] == 0.5
    # Its misses: line 1 after c and line 2 after b (the table's too), line 4 after a.
    assert shares["misses_explained"] == 2 / 3


def test_tagger_inputs_put_each_label_after_its_look_ahead():
    ids, labels, weights = BENCH.tagger_inputs(["ab c", "d"], {"a": 3, "b": 4, "c": 5, "d": 6}, 1)
    assert ids.tolist() == [[1, 3, 4, 5], [1, 6, 0, 0]]
    # "abc": cuts after a (0) and after b (1); read one symbol past each:
    # the label of the cut after symbol t sits on input step t + 2.
    assert labels.tolist()[0] == [0, 0, 0, 1] and weights.tolist()[0] == [0, 0, 1, 1]
    assert weights.tolist()[1] == [0, 0, 0, 0]  # one symbol: no internal position


def test_the_tagger_learns_a_word_end_told_by_the_symbol_just_read():
    rng = np.random.default_rng(0)
    words = ["az", "bbz", "cz", "abcz"]
    lines = [" ".join(rng.choice(words, size=rng.integers(2, 6))) for _ in range(300)]
    _, _, scores = BENCH.tagger_ceiling(lines[:200], lines[200:250], lines[250:], lookahead=0)
    assert scores.boundary.f1 > 0.95


def _run(tmp_path, *flags):
    files = {}
    for name, text in (("train", "ab c\nd ef\n"), ("valid", "ab d\n"), ("test", "c ab\n")):
        files[name] = tmp_path / f"{name}.txt"
        files[name].write_text(text)
    return subprocess.run(
        [sys.executable, SCRIPT, f"--train_file={files['train']}",
         f"--valid_file={files['valid']}", f"--test_file={files['test']}", *flags],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))


def test_bad_flags_are_refused_in_one_line(tmp_path):
    done = _run(tmp_path, "--lookahead=0,-1")
    assert done.returncode != 0
    assert "--lookahead must list integers >= 0" in done.stderr
    other = tmp_path / "other.txt"
    other.write_text("c ab\nc ab\n")  # two lines where the test split has one
    done = _run(tmp_path, "--lookahead=0", f"--segmented={other}")
    assert done.returncode != 0
    assert f"--segmented={other}: `gold` and `predicted` must hold as many" in done.stderr
