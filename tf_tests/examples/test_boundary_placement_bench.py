"""`bench/boundary_placement.py`: its corpus has the structure the
diagnosis relies on, and a tiny run records consistent figures."""

import collections
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from example_modules import ROOT, load_script

SCRIPT = os.path.join(ROOT, "bench", "boundary_placement.py")


def _script():
    return load_script("bench", "boundary_placement")


def test_words_are_known_only_at_their_last_letter():
    bench = _script()
    text = bench.last_letter_corpus(20_000, seed=3)
    words = text.split()
    assert text == " ".join(words) + " " and len(text) >= 20_000
    assert all(len(w) == 4 and w[:3] in bench.STEMS and w[3] in bench.ENDINGS
               for w in words)
    followers = collections.defaultdict(set)
    for word, following in zip(words, words[1:]):
        followers[word].add(following)
    for word, nexts in followers.items():
        # Two followers, one stem: the stem is known, the last letter is not.
        assert len(nexts) == 2 and len({n[:3] for n in nexts}) == 1, (word, nexts)
    # Each of the two is drawn about half the time (1 bit per word).
    pairs = collections.Counter(zip(words, words[1:]))
    shares = [pairs[(w, n)] / sum(pairs[(w, m)] for m in followers[w])
              for w in followers for n in followers[w]]
    assert 0.4 < min(shares) and max(shares) < 0.6
    short = bench.last_letter_corpus(500, seed=3)  # deterministic from the seed
    assert text.startswith(short) and short != bench.last_letter_corpus(500, seed=4)


@pytest.mark.slow
def test_tiny_run_records_consistent_figures(tmp_path):
    output = tmp_path / "placement.jsonl"
    done = subprocess.run(
        [sys.executable, SCRIPT, "--seeds=0", "--epochs=1", "--units=4",
         "--train_chars=800", f"--output={output}"],
        capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(output.read_text().splitlines()[0])
    assert result["seed"] == 0 and result["boundary_prior"] == "rate"
    assert result["bits_per_char"] > result["entropy_rate"] == 0.2
    # The rate of each layer is the mean of its rates by position (the
    # held-out text is whole words, so every position is as frequent).
    for layer in (1, 2):
        by_position = result[f"z{layer}_by_position"]
        assert len(by_position) == 5 and all(0 <= r <= 1 for r in by_position)
        np.testing.assert_allclose(np.mean(by_position), result["z_rates"][layer - 1],
                                   atol=2e-3)
    assert "z^1 fires at:" in done.stdout and "seed 0:" in done.stdout
