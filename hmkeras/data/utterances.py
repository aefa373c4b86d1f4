"""`Utterances`: text whose words a model must find, one utterance per line.

Word discovery (unsupervised word segmentation) trains a model on text
from which the word boundaries have been removed and scores the
boundaries it finds against the ones removed. The field's protocol (Brent
1999; Goldwater et al. 2009; Kawakami et al. 2019) keeps the utterance
boundaries: each line of a file is one utterance, its words separated by
spaces; the model reads every utterance without its spaces, followed by a
line end, and the words between the spaces are the gold segmentation.

`Utterances.from_text` reads such a text: the words of a line are its
runs of characters other than spaces and tabs, so "the  dog" and "the
dog" are the same two words; a line that is empty or holds only spaces is
refused (an utterance of no symbol), and so is a text of no line.
`Utterances.text` is what the model reads (no spaces, a line end after
every utterance), `Utterances.segmented` the gold lines (words separated
by single spaces), `Utterances.unspaced` the lines a segmenter cuts (the
utterances without their spaces), `Utterances.has_words` whether any line has a space at
all (a text without spaces has no gold words to score against, and can
still be segmented).

`split_utterances` cuts one text's utterances into contiguous training,
validation and test parts by line (never inside an utterance).

Examples:

    >>> u = Utterances.from_text("yu want tu\\nsi D6 bUk\\n")
    >>> u.text
    'yuwanttu\\nsiD6bUk\\n'
    >>> u.segmented
    ('yu want tu', 'si D6 bUk')
    >>> Utterances.from_text("a b\\n\\nc\\n", name="text_file")
    Traceback (most recent call last):
    ...
    ValueError: `text_file` line 2 is empty: with unsegmented text every line is an utterance of at least one symbol.
"""

from __future__ import annotations

import dataclasses

from hmkeras.data.text_file import split_text

__all__ = ["Utterances", "split_utterances"]

_SPACES = " \t"


@dataclasses.dataclass(frozen=True)
class Utterances:
    """Utterances and their gold words.

    Attributes:
        segmented: The utterances, each as its words separated by single
            spaces (the gold segmentation; an utterance without a space is
            one word).

    Examples:

        >>> from hmkeras.data import Utterances
        >>> utterances = Utterances.from_text("you want it\\nlook\\n")
        >>> utterances.text  # what the model reads
        'youwantit\\nlook\\n'
        >>> utterances.segmented, len(utterances), utterances.has_words
        (('you want it', 'look'), 2, True)
        >>> utterances.unspaced  # what a segmenter cuts
        ('youwantit', 'look')
    """

    segmented: tuple

    @classmethod
    def from_text(cls, text, name="text"):
        """The utterances of `text`, one per line.

        Args:
            text: Lines of words separated by spaces or tabs; a final line
                end is optional, `"\\r\\n"` counts as one.
            name: The argument or flag `text` came from, named in errors.

        Raises:
            ValueError: naming `name`, for a text without lines or with a
                line that holds no symbol (the first such line is named).
        """
        lines = text.replace("\r\n", "\n").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if not lines:
            raise ValueError(f"`{name}` holds no line: unsegmented text needs one "
                             "utterance per line.")
        segmented = []
        for number, line in enumerate(lines, start=1):
            words = line.replace("\t", " ").split()
            if not words:
                raise ValueError(
                    f"`{name}` line {number} is {'empty' if not line else 'blank'}: "
                    "with unsegmented text every line is an utterance of at least "
                    "one symbol.")
            segmented.append(" ".join(words))
        return cls(tuple(segmented))

    @property
    def unspaced(self):
        """Every utterance without its spaces (the lines a segmenter cuts)."""
        return tuple(line.replace(" ", "") for line in self.segmented)

    @property
    def text(self):
        """What a model reads: every utterance without its spaces, then `"\\n"`."""
        return "".join(line + "\n" for line in self.unspaced)

    @property
    def has_words(self):
        """Whether any utterance has more than one word (gold boundaries to
        score against)."""
        return any(" " in line for line in self.segmented)

    def __len__(self):
        return len(self.segmented)


def split_utterances(utterances, valid_fraction=0.05, test_fraction=0.05,
                     name="text_file"):
    """Contiguous training, validation and test `Utterances`, cut by line.

    Args:
        utterances: An `Utterances`.
        valid_fraction, test_fraction: Shares of the utterances for the
            validation part (after the training part) and the test part
            (the last lines), each in (0, 1).
        name: The argument the utterances came from, named in errors.

    Returns:
        `(train, valid, test)`, three `Utterances`.

    Raises:
        ValueError: a fraction outside (0, 1), fractions summing to 1 or
            more, or a part that comes out empty (naming `name`).

    Examples:

        >>> u = Utterances.from_text("".join(f"w{i} x\\n" for i in range(10)))
        >>> [len(part) for part in split_utterances(u, 0.2, 0.1)]
        [7, 2, 1]
    """
    try:
        parts = split_text(list(utterances.segmented), valid_fraction, test_fraction, name)
    except ValueError as error:
        raise ValueError(str(error).replace("characters", "lines")) from None
    return tuple(Utterances(tuple(part)) for part in parts)
