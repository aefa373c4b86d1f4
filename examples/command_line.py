"""Flag parsing shared by the example and benchmark scripts.

`parse_flags` is absl's parsing with one difference: a bad flag, several
bad flags or a stray argument end the program with ONE line on stderr
(naming the flags and what they allow) and exit status 1, never a
traceback. Use it as `app.run(main, flags_parser=parse_flags)`. It imports
nothing heavy, so flag errors come before TensorFlow loads.
"""

import os
import sys

from absl import flags

FLAGS = flags.FLAGS


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
