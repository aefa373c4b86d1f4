"""BUILD declares a py_test for every test file and the package library."""

import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_text():
    with open(os.path.join(ROOT, "BUILD")) as f:
        return f.read()


def test_every_test_file_has_a_py_test():
    text = build_text()
    declared = set(re.findall(r'srcs = \["tf_tests/(test_\w+)\.py"\]', text))
    present = {
        os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "tf_tests", "test_*.py"))
    }
    assert present == declared, f"missing: {present - declared}, stale: {declared - present}"
    for name in present:
        assert f'name = "{name}"' in text


def test_library_and_support_targets():
    text = build_text()
    assert 'name = "hmkeras"' in text and 'glob(["hmkeras/**/*.py"])' in text
    for helper in ("hm_fixtures.py", "hm_reference.py", "run_pytest.py"):
        assert f'"tf_tests/{helper}"' in text
