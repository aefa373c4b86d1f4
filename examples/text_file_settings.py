"""The text files of a `--dataset=text_file` run, from its settings.

`--text_file` names one file (cut into train / validation / test by
fractions) or three comma-separated files used as given; the character
LM's flags (`char_lm_flags.py`) and the scripts that reload a run's test
text (`compare_surprisal.py`) read the settings through these functions.
This module defines no flags, so any script may import it.
"""


def text_file_parts(s):
    """`{"text_file": ..., "valid_file": ..., "test_file": ...}` of the
    settings: --text_file=train,valid,test gives all three, otherwise
    --text_file and the --valid_file / --test_file flags (None when not
    given).

    Example:

    >>> text_file_parts({"text_file": "tr.txt,va.txt,te.txt"})["test_file"]
    'te.txt'
    """
    if three_text_files(s):
        return dict(zip(("text_file", "valid_file", "test_file"), s["text_file"].split(",")))
    return {"text_file": s["text_file"], "valid_file": s.get("valid_file"),
            "test_file": s.get("test_file")}


def three_text_files(s):
    """Whether --text_file names three files (train,valid,test; checked by
    `char_lm_flags._check_text_file_list`)."""
    return len(s["text_file"].split(",")) == 3
