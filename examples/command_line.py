"""The command line shared by the example and benchmark scripts.

A bad flag, several bad flags or a stray argument end the program with ONE
line on stderr (naming the flags and what they allow) and exit status 1,
never a traceback; so does a `FlagError`, raised by a script for flags that
do not fit together, or with the data or the directories they name, and a
`RunStopped` (a run that stopped itself, e.g. on a non-finite loss). A
script's end is

    main = command_line.absl_main(run_from_flags)  # its work, from FLAGS

    if __name__ == "__main__":
        command_line.run_script(main)

`parse_flags` alone (`app.run(main, flags_parser=parse_flags)`) serves the
benchmark scripts. `Settings` holds a run's resolved flags; `flag_errors`
turns the library's errors about what the flags name (a run directory)
into `FlagError`s. This module imports nothing heavy, so flag errors come
before TensorFlow loads.
"""

import contextlib
import os
import sys

from absl import app
from absl import flags

FLAGS = flags.FLAGS


class FlagError(ValueError):
    """Flags that do not fit together, or with the data, the files or the
    output directory they name; `absl_main` reports it in one line (its
    message names the flags), without a traceback."""


class RunStopped(RuntimeError):
    """A run that stopped itself (a non-finite loss); `absl_main` reports it
    in one line (the step, and where the last good checkpoint is)."""


class Settings(dict):
    """A run's settings: one entry per flag of the script (its `--help` text
    documents each), resolved from the preset, `--tiny` and the command
    line (the script's `resolve_settings`), plus what the script records
    beside them (`preset`).

    A dict (`settings.json` is its JSON, and a rerun compares it with the
    one saved) whose entries read as attributes too: `settings.units` is
    `settings["units"]`.

    Example:

    >>> s = Settings(units=8, cell="lstm")
    >>> s.units, s["cell"], s.get("seed", 0)
    (8, 'lstm', 0)
    >>> s.seed = 3
    >>> s
    {'units': 8, 'cell': 'lstm', 'seed': 3}
    """

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"no setting {name!r}") from None

    def __setattr__(self, name, value):
        self[name] = value


def settings_from_flags(flag_values, own_flags, overrides=()):
    """The script's own flags as `Settings`, with the values of `overrides`
    (a preset, `--tiny`: a dict or pairs) for the flags not given on the
    command line.

    Example:

    >>> from absl import flags
    >>> values = flags.FlagValues()
    >>> _ = flags.DEFINE_integer("units", 64, "", flag_values=values)
    >>> _ = flags.DEFINE_integer("epochs", 8, "", flag_values=values)
    >>> _ = values(["script", "--epochs=3"])
    >>> settings_from_flags(values, {"units", "epochs"}, {"units": 8, "epochs": 1})
    {'units': 8, 'epochs': 3}
    """
    settings = Settings(**{name: flag_values[name].value for name in flag_values
                           if name in own_flags})
    for name, value in dict(overrides).items():
        if not flag_values[name].present:
            settings[name] = value
    return settings


@contextlib.contextmanager
def flag_errors(*errors, names=(), words=()):
    """Inside it, an exception of the classes `errors` (library errors about
    what the flags name, e.g. `hmkeras.training.run_directory
    .RunDirectoryError`) is raised as a `FlagError` with its message, in
    the flags' words: the argument `` `name` `` of each of `names` (an
    argument of the flag's name) reads `--name`, and each `(api, flag)`
    of `words` replaces the library's phrase `api` by `flag`.

    Example:

    >>> with flag_errors(ValueError, names=["text_file"], words=[("x=1", "--x")]):
    ...     raise ValueError("`text_file` is empty (x=1)")
    Traceback (most recent call last):
    ...
    command_line.FlagError: --text_file is empty (--x)
    """
    try:
        yield
    except errors as error:
        message = str(error)
        for name in names:
            message = message.replace(f"`{name}`", f"--{name}")
        for api, flag in words:
            message = message.replace(api, flag)
        raise FlagError(message) from None


def non_finite_stop(step, what, checkpoint_path, saved_step):
    """The `RunStopped` of a run whose step `step` gave `what` (e.g. "the
    training loss is nan"): one line with the step and the last good
    checkpoint (`checkpoint_path`, of step `saved_step`; None: none yet).

    Example:

    >>> print(non_finite_stop(7, "the training loss is nan", "run/checkpoints/latest", 5))
    Step 7: the training loss is nan; training stopped, nothing saved at this step; the last good checkpoint is run/checkpoints/latest (step 5), untouched: rerun with a smaller --learning_rate to resume from it.
    """
    if saved_step is None:
        where = "no checkpoint was saved before it: rerun with a smaller --learning_rate"
    else:
        where = (f"the last good checkpoint is {checkpoint_path} (step {saved_step}), "
                 "untouched: rerun with a smaller --learning_rate to resume from it")
    return RunStopped(f"Step {step}: {what}; training stopped, nothing saved at this "
                      f"step; {where}.")


def stop_if_non_finite(progress):
    """Raises the `non_finite_stop` of a training run whose progress dict
    (`hmkeras.training.epoch_run.train_epochs`,
    `hmkeras.training.truncated_bptt_run.train_truncated_bptt`) says it
    stopped on a non-finite loss or weight (`non_finite`); else nothing.

    Example:

    >>> stop_if_non_finite({"epoch": 2})
    >>> stop_if_non_finite({"non_finite": (7, "a weight is not finite", None),
    ...                     "checkpoint_path": "run/checkpoints/latest"})
    Traceback (most recent call last):
    ...
    command_line.RunStopped: Step 7: a weight is not finite; training stopped, ...
    """
    if progress.get("non_finite"):
        step, what, saved_step = progress["non_finite"]
        raise non_finite_stop(step, what, progress["checkpoint_path"], saved_step)


def parse_flags(argv):
    """absl's flag parsing (`app.run(main, flags_parser=parse_flags)`), but a
    bad flag or a stray argument is one line on stderr and exit status 1."""
    try:
        argv = FLAGS(argv)
    except flags.Error as error:  # several at once: one line too
        sys.exit(f"{os.path.basename(argv[0])}: {'; '.join(str(error).splitlines())}")
    if len(argv) > 1:
        sys.exit(f"{os.path.basename(argv[0])}: unexpected arguments {argv[1:]}; "
                 "flags are written --name=value.")
    return argv


def absl_main(command):
    """The absl `main(argv)` of a script whose work is `command()`.

    A `FlagError` or `RunStopped` from `command` ends the program with one
    line on stderr, `<script>: <message>`, and exit status 1. An argument left in `argv`
    (`parse_flags` refuses them; a caller that skipped it) is an
    `app.UsageError`.
    """

    def main(argv):
        if len(argv) > 1:
            raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
        try:
            command()
        except (FlagError, RunStopped) as error:
            sys.exit(f"{os.path.basename(sys.argv[0])}: {error}")

    main.__doc__ = f"`{command.__name__}()` with its flag errors in one line."
    return main


def run_script(main):
    """Runs `main` as absl's `app.run` does, its flags parsed by `parse_flags`."""
    app.run(main, flags_parser=parse_flags)
