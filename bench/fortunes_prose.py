r"""English prose for the segmentation measurements, from Debian's `fortunes`.

The package `fortunes` (`apt-get install fortunes`) installs quotations,
aphorisms and short anecdotes in English under `/usr/share/games/fortunes`,
one file per topic, the entries separated by lines holding `%`. This
script writes a plain-text corpus of them: each entry on one line, its
white space (the indentation and line breaks of the attributions) folded
to single spaces, the topics in the order given, cut at the first line end
after `--chars` characters.

    sudo apt-get install fortunes
    python bench/fortunes_prose.py --output=fortunes_prose.txt
    python examples/ptb_char.py --preset=quick --dataset=text_file --text_file=fortunes_prose.txt

The default topics and size (480,068 characters, 3,262 entries) are those
of the prose of `docs/results/char-lm.md`, "The boundary prior on English
prose", and of `docs/results/word-discovery.md`, "Word discovery: words
that nothing marks".
"""

import os
import re

from absl import app
from absl import flags

TOPICS = ("people", "politics", "work", "men-women", "wisdom", "literature",
          "humorists", "platitudes", "love", "education", "food", "science")

FLAGS = flags.FLAGS
flags.DEFINE_string("fortunes_dir", "/usr/share/games/fortunes",
                    "The folder of the fortune files (Debian's `fortunes`).")
flags.DEFINE_list("topics", list(TOPICS), "The fortune files to read, in order.")
flags.DEFINE_integer("chars", 480_000, "Cut at the first line end after this many "
                     "characters.", lower_bound=1)
flags.DEFINE_string("output", "fortunes_prose.txt", "The text file to write.")


def entries(text):
    """The entries of one fortune file, each on one line.

    Examples:

        >>> entries("A saying.\n\t\t-- Someone\n%\n  Two\nlines.\n%\n")
        ['A saying. -- Someone', 'Two lines.']
    """
    folded = (re.sub(r"\s+", " ", entry.replace("%", " ")).strip()
              for entry in text.split("\n%\n"))
    return [entry for entry in folded if entry]


def prose(fortunes_dir, topics, chars):
    """The corpus: the entries of `topics`, one per line, cut at the first
    line end after `chars` characters (all of them if shorter).

    Raises:
        ValueError: naming `--fortunes_dir` or `--topics` when a file is
            missing.
    """
    if not os.path.isdir(fortunes_dir):
        raise ValueError(f"--fortunes_dir must be the folder of the fortune files "
                         f"(apt-get install fortunes). Received: {fortunes_dir!r}")
    lines = []
    for topic in topics:
        path = os.path.join(fortunes_dir, topic)
        if not os.path.isfile(path):
            raise ValueError(f"--topics: no fortune file {topic!r} in {fortunes_dir}.")
        with open(path, encoding="latin-1") as f:
            lines.extend(entries(f.read()))
    text = "\n".join(lines) + "\n"
    end = text.find("\n", chars)
    return text if end < 0 else text[: end + 1]


def main(argv):
    del argv
    try:
        text = prose(FLAGS.fortunes_dir, FLAGS.topics, FLAGS.chars)
    except ValueError as error:
        raise SystemExit(f"fortunes_prose.py: {error}") from None
    with open(FLAGS.output, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {FLAGS.output}: {len(text):,} characters, {text.count(chr(10)):,} entries")


if __name__ == "__main__":
    app.run(main)
