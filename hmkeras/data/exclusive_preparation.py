"""Preparing a TFDS dataset once when several processes ask for it at once.

TFDS prepares a dataset in a folder of its own (`incomplete.*`) and renames
it into place at the end. Two processes that prepare the same dataset at
the same time, for instance three seeds of an example started together on
a fresh data directory, both rename, and the second fails
(`FileExistsError` or `OSError: Directory not empty`). `prepared` makes
the builder and runs `download_and_prepare` under an exclusive lock, one
per dataset folder: the first process prepares, the others wait for it
and then find the dataset ready. The lock is a file in the system's
temporary directory (`flock`, released when the process ends, however it
ends), so a failed preparation leaves nothing in the data directory;
where `fcntl` does not exist (Windows) the preparation runs unlocked.

Examples:

    >>> import tempfile
    >>> with exclusive(os.path.join(tempfile.mkdtemp(), "demo")):
    ...     pass  # the dataset is prepared here
"""

import contextlib
import hashlib
import os
import tempfile

try:
    import fcntl
except ImportError:  # not a POSIX system
    fcntl = None


def lock_path(dataset_dir):
    """The lock file of the dataset folder `dataset_dir` (any path: it is
    made absolute and hashed into a name in the temporary directory)."""
    key = hashlib.sha256(os.path.abspath(os.fspath(dataset_dir)).encode()).hexdigest()[:24]
    return os.path.join(tempfile.gettempdir(), f"hmkeras-tfds-{key}.lock")


@contextlib.contextmanager
def exclusive(dataset_dir):
    """Holds the lock of `dataset_dir` while the block runs; blocks until
    no other process holds it."""
    if fcntl is None:
        yield
        return
    with open(lock_path(dataset_dir), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def prepared(make_builder, download_config):
    """The builder that `make_builder()` returns, made and prepared
    (`download_and_prepare(download_config=...)`) under the lock of its
    dataset folder (the parent of its versioned `data_dir`).

    A builder reads what is prepared when it is made, so the one returned
    is made under the lock: made before, it would not see the splits that
    another process prepared while this one waited.
    """
    with exclusive(os.path.dirname(make_builder().data_dir)):
        builder = make_builder()
        builder.download_and_prepare(download_config=download_config)
    return builder
