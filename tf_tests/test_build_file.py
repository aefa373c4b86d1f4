"""BUILD declares a library per package and a py_test for every test file."""

import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("analysis", "cells", "data", "heads", "models", "training", "wrappers")


def build_text():
    with open(os.path.join(ROOT, "BUILD")) as f:
        return f.read()


def test_every_test_file_has_a_py_test():
    text = build_text()
    declared = set(re.findall(r'srcs = \["(tf_tests/(?:\w+/)?test_\w+\.py)"\]', text))
    present = {
        os.path.relpath(p, ROOT)
        for p in glob.glob(os.path.join(ROOT, "tf_tests", "**", "test_*.py"), recursive=True)
    }
    assert present == declared, f"missing: {present - declared}, stale: {declared - present}"
    for path in present:
        assert f'name = "{os.path.basename(path)[:-3]}"' in text


def test_library_per_package_with_its_real_dependencies():
    text = build_text()
    found = set(re.findall(r'glob\(\["hmkeras/(\w+)/\*\.py"\]\)', text))
    on_disk = {os.path.basename(os.path.dirname(p))
               for p in glob.glob(os.path.join(ROOT, "hmkeras", "*", "__init__.py"))}
    assert found == on_disk == set(PACKAGES)
    for package in PACKAGES:
        block = re.search(rf'name = "{package}",\n    srcs = .*?\n    deps = \[(.*?)\]', text, re.S)
        declared = set(re.findall(r'":(\w+)"', block.group(1)))
        imported = set()
        for path in glob.glob(os.path.join(ROOT, "hmkeras", package, "*.py")):
            with open(path) as f:
                code = f.read()
            # Imports only (docstring examples may use any package).
            imported |= set(re.findall(r"^\s*(?:from|import) hmkeras\.(\w+)", code, re.M))
            imported |= set(re.findall(r"^\s*from hmkeras import (\w+)", code, re.M))
        imported.discard(package)
        assert imported == declared, (package, imported, declared)
    for helper in ("hm_fixtures.py", "hm_reference.py", "run_pytest.py", "conftest.py"):
        assert f'"tf_tests/{helper}"' in text


def test_package_neutral_modules_have_their_own_library():
    """A module directly under hmkeras/ (the argument checks, the
    TensorFlow-only imports) is a library of its own that depends on no
    package of hmkeras."""
    text = build_text()
    modules = {os.path.basename(p)[:-3]
               for p in glob.glob(os.path.join(ROOT, "hmkeras", "*.py"))} - {"__init__"}
    assert modules == {"argument_checks", "tensorflow_features"}
    for module in modules:
        block = re.search(
            rf'name = "{module}",\n    srcs = \["hmkeras/{module}\.py"\],\n.*?deps = \[(.*?)\]',
            text, re.S)
        assert block is not None, module
        assert block.group(1) == ""
        with open(os.path.join(ROOT, "hmkeras", f"{module}.py")) as f:
            assert not re.search(r"^\s*(?:from|import) hmkeras", f.read(), re.M)
