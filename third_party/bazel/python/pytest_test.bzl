"""`pytest_test`: a py_test that runs one test file with pytest.

Every test file of tf_tests/ is one target; tf_tests/run_pytest.py is the
entry point and receives the file's path:

    pytest_test(
        name = "test_hm_lstm_cell",
        srcs = ["tf_tests/cells/test_hm_lstm_cell.py"],
        data = [":examples"],  # files the test reads, if any
    )
"""

load("@rules_python//python:defs.bzl", "py_test")

_MAIN = "tf_tests/run_pytest.py"

def pytest_test(name, srcs, size = "medium", deps = ["//:test_support"], **kwargs):
    py_test(
        name = name,
        size = size,
        srcs = srcs + [_MAIN],
        main = _MAIN,
        args = ["$(location %s)" % src for src in srcs],
        deps = deps,
        **kwargs
    )
