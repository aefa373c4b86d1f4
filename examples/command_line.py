"""The command line shared by the example and benchmark scripts.

A bad flag, several bad flags or a stray argument end the program with ONE
line on stderr (naming the flags and what they allow) and exit status 1,
never a traceback; so does a `FlagError`, raised by a script for flags that
do not fit together, or with the data or the directories they name. A
script's end is

    main = command_line.absl_main(run_from_flags)  # its work, from FLAGS

    if __name__ == "__main__":
        command_line.run_script(main)

`parse_flags` alone (`app.run(main, flags_parser=parse_flags)`) serves the
benchmark scripts. This module imports nothing heavy, so flag errors come
before TensorFlow loads.
"""

import os
import sys

from absl import app
from absl import flags

FLAGS = flags.FLAGS


class FlagError(ValueError):
    """Flags that do not fit together, or with the data, the files or the
    output directory they name; `absl_main` reports it in one line (its
    message names the flags), without a traceback."""


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

    A `FlagError` from `command` ends the program with one line on stderr,
    `<script>: <message>`, and exit status 1. An argument left in `argv`
    (`parse_flags` refuses them; a caller that skipped it) is an
    `app.UsageError`.
    """

    def main(argv):
        if len(argv) > 1:
            raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
        try:
            command()
        except FlagError as error:
            sys.exit(f"{os.path.basename(sys.argv[0])}: {error}")

    main.__doc__ = f"`{command.__name__}()` with its flag errors in one line."
    return main


def run_script(main):
    """Runs `main` as absl's `app.run` does, its flags parsed by `parse_flags`."""
    app.run(main, flags_parser=parse_flags)
