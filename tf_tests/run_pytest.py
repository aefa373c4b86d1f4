"""Entry point of the Bazel `py_test` targets: runs pytest on the given files.

    python tf_tests/run_pytest.py tf_tests/test_hm_lstm_cell.py
"""

import sys

import pytest

if __name__ == "__main__":
    sys.exit(pytest.main(["-q", "-p", "no:cacheprovider"] + sys.argv[1:]))
