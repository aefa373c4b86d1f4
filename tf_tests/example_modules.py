"""Imports the scripts under examples/ as modules, for the tests."""

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the repository
_LOADED = {}


def load_example(name):
    """The module `examples/<name>.py`, loaded once per process.

    An example defines absl flags at import; a second import would define
    them again, which absl refuses.
    """
    if name in _LOADED:
        return _LOADED[name]
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(ROOT, "examples", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _LOADED[name] = module
    return module
