"""The run directories of the example scripts, in the flags' words.

The library's `hmkeras.training.run_directory` owns a run directory's
files and what a rerun does with them; this module adds what only the
scripts know, which script writes which kind of run (`RUN_KINDS`), and
says the library's refusals as one-line `FlagError`s:

* `write_run_files`: the library's files (`model_config.json`,
  `settings.json`, `vocabulary.json`) and `run_kind.json`, the marker of
  the script that wrote the run;
* `check_run_kind`, `find_step_model`: a directory of another script's run,
  or without a step model, refused in one line;
* `prepare_output_dir`: every training script's check of --output_dir
  before any work (`prepare_run_directory`).

It imports nothing heavy (the library only inside the functions that run
after the flags are checked), so flag errors come before TensorFlow loads.
"""

import json
import os

from command_line import FlagError  # examples/command_line.py
from command_line import flag_errors

MARKER = "run_kind.json"
# The kind of run each training script writes, and what reads it.
RUN_KINDS = {
    "char_lm": "examples/ptb_char.py (a character language model with step_model/)",
    "char_lm_xla": "examples/xla_gpu_training.py (a character language model, no step_model/)",
    "handwriting": "examples/iam_ondb.py (a handwriting model)",
    "word_lm": "examples/ptb_word.py (a word language model)",
}


def write_run_files(output_dir, config, settings, vocabulary=None, kind=None):
    """Makes `output_dir` and writes its `run_kind.json` (when `kind`, a key
    of `RUN_KINDS`, is given) and the files that rebuild the run
    (`hmkeras.training.run_directory.write_run_files`)."""
    from hmkeras.training import run_directory

    os.makedirs(output_dir, exist_ok=True)
    if kind is not None:
        write_run_kind(output_dir, kind)
    run_directory.write_run_files(output_dir, config, settings, vocabulary)


def write_run_kind(output_dir, kind):
    """Writes the marker `output_dir/run_kind.json`: `{"kind": kind, "script": ...}`."""
    if kind not in RUN_KINDS:
        raise ValueError(f"`kind` must be one of {sorted(RUN_KINDS)}, got {kind!r}.")
    with open(os.path.join(output_dir, MARKER), "w") as f:
        json.dump({"kind": kind, "script": RUN_KINDS[kind].split(" ")[0]}, f)


def read_run_kind(path):
    """The kind recorded in `path/run_kind.json`, or in its parent's when
    `path` is a run's `step_model/`; None where neither has the marker (no
    run, or one written before the marker existed).

    Example:

    >>> import tempfile
    >>> run = tempfile.mkdtemp()
    >>> write_run_kind(run, "handwriting")
    >>> read_run_kind(run), read_run_kind(os.path.join(run, "step_model"))
    ('handwriting', 'handwriting')
    """
    path = os.path.expanduser(path)
    for directory in (path, os.path.dirname(os.path.normpath(path))):
        marker = os.path.join(directory, MARKER)
        if os.path.isfile(marker):
            with open(marker) as f:
                return json.load(f).get("kind")
    return None


def check_run_kind(path, flag, allowed):
    """Raises a one-line `FlagError` naming `flag` when the run in `path`
    (or the run holding `path`) is of a kind outside `allowed`.

    A directory without the marker passes (a new run, or an older one).

    Example:

    >>> import tempfile
    >>> run = tempfile.mkdtemp()
    >>> write_run_kind(run, "handwriting")
    >>> check_run_kind(run, "--model_dir", ["char_lm"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    command_line.FlagError: --model_dir=... holds a run of examples/iam_ondb.py ...
    """
    kind = read_run_kind(path)
    if kind is None or kind in allowed:
        return
    wanted = " or ".join(RUN_KINDS[k].split(" (")[0] for k in allowed)
    raise FlagError(
        f"{flag}={path!r} holds a run of {RUN_KINDS.get(kind, kind)} "
        f"({MARKER}: kind {kind!r}); this script reads runs of {wanted}.")


def find_step_model(path, kind):
    """The step-model directory of --model_dir=`path`: `path` itself, or
    `path/step_model` when `path` is the run directory; a run of another
    kind than `kind` (a key of `RUN_KINDS`), or no step model, is a
    one-line `FlagError`.

    Example:

    >>> import tempfile
    >>> run = tempfile.mkdtemp()
    >>> find_step_model(run, "handwriting")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    command_line.FlagError: --model_dir=... holds no step model: neither ... has a saved_model.pb (did the run of examples/iam_ondb.py finish?).
    """
    path = os.path.expanduser(path)
    check_run_kind(path, "--model_dir", [kind])
    for candidate in (path, os.path.join(path, "step_model")):
        if os.path.isfile(os.path.join(candidate, "saved_model.pb")):
            return candidate
    raise FlagError(
        f"--model_dir={path!r} holds no step model: neither {path!r} nor "
        f"{os.path.join(path, 'step_model')!r} has a saved_model.pb (did the run "
        f"of {RUN_KINDS[kind].split(' ')[0]} finish?).")


def prepare_output_dir(s, kind, model_flags, data_flags=(), ignored=None, defaults=None):
    """Checks --output_dir (`s["output_dir"]`) against the settings `s`
    before any work: a run of another script (its run_kind.json is not
    `kind`) or of another model (a changed flag of `model_flags`) is
    refused in one line (`FlagError`), other changes resume it (printed
    unless `ignored`); --overwrite deletes it
    (`hmkeras.training.run_directory.prepare_run_directory`).

    Args:
        s: The settings (a mapping).
        kind: The key of `RUN_KINDS` the script writes.
        model_flags, data_flags, defaults: As in `prepare_run_directory`.
        ignored: Settings not compared (None: those outside `model_flags`).

    Returns:
        The names of the changed flags that keep the model.
    """
    from hmkeras.training import run_directory

    check_run_kind(s["output_dir"], "--output_dir", [kind])
    if ignored is None:
        ignored = [name for name in s.keys() if name not in model_flags]
    with flag_errors(run_directory.RunDirectoryError):
        return run_directory.prepare_run_directory(
            s["output_dir"], s, model_flags, overwrite=s.get("overwrite", False),
            data_keys=data_flags, ignored=ignored, defaults=defaults)
