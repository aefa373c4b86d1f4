"""hmkeras.data.exclusive_preparation: the lock that lets one process at a
time prepare a dataset (three processes preparing the Brent builder at
once: tf_tests/data/test_brent.py)."""

import os
import subprocess
import sys

from hmkeras.data import exclusive_preparation

# Exit 3 when another process holds the lock of the file argv[1].
PROBE = ("import fcntl, sys\n"
         "with open(sys.argv[1], 'a') as f:\n"
         "    try:\n"
         "        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
         "    except BlockingIOError:\n"
         "        sys.exit(3)\n")


def other_process_locks(folder):
    path = exclusive_preparation.lock_path(folder)
    return subprocess.run([sys.executable, "-c", PROBE, path]).returncode == 0


def test_lock_path_is_one_per_folder_however_written(tmp_path):
    folder = tmp_path / "data" / "brent" / "phonemes"
    assert exclusive_preparation.lock_path(str(folder)) == exclusive_preparation.lock_path(
        os.path.join(str(tmp_path), "data", ".", "brent", "phonemes"))
    assert exclusive_preparation.lock_path(folder) != exclusive_preparation.lock_path(
        tmp_path / "data" / "brent" / "text")


def test_the_lock_of_a_folder_is_exclusive_while_held(tmp_path):
    # While a process prepares a dataset, another cannot take its lock
    # (that process would wait); once done, it can; another folder's lock
    # is free throughout.
    folder, other = tmp_path / "data" / "brent" / "phonemes", tmp_path / "elsewhere"
    with exclusive_preparation.exclusive(folder):
        assert not other_process_locks(folder)
        assert other_process_locks(other)
    assert other_process_locks(folder)
