"""`bench/fortunes_prose.py`: the prose corpus of the segmentation
measurements, from fortune files (made here, in Debian's format)."""

import pytest
from example_modules import load_script

BENCH = load_script("bench", "fortunes_prose")


def test_entries_one_per_line_in_topic_order_cut_at_a_line_end(tmp_path):
    bench = BENCH
    (tmp_path / "wisdom").write_text(
        "Look before\nyou leap.\n\t\t-- Proverb\n%\nHaste makes waste.\n%\n", encoding="latin-1")
    (tmp_path / "people").write_text("Caf\xe9 society.\n%\n", encoding="latin-1")
    text = bench.prose(str(tmp_path), ["people", "wisdom"], chars=10_000)
    assert text == "Caf\xe9 society.\nLook before you leap. -- Proverb\nHaste makes waste.\n"
    # Cut at the first line end after `chars` characters.
    assert bench.prose(str(tmp_path), ["people", "wisdom"], chars=16) == (
        "Caf\xe9 society.\nLook before you leap. -- Proverb\n")


def test_missing_folder_or_topic_is_named(tmp_path):
    bench = BENCH
    with pytest.raises(ValueError, match="--fortunes_dir.*apt-get install fortunes"):
        bench.prose(str(tmp_path / "absent"), ["people"], 100)
    with pytest.raises(ValueError, match="--topics: no fortune file 'people'"):
        bench.prose(str(tmp_path), ["people"], 100)
