"""Runs the docstring example of every hmkeras module (they must work)."""

import doctest
import importlib
import os
import pkgutil

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest

import hmkeras

MODULES = sorted(
    name
    for _, name, _ in pkgutil.walk_packages(hmkeras.__path__, prefix="hmkeras.")
)


def test_every_module_is_collected():
    assert "hmkeras.cells.hm_lstm_cell" in MODULES and "hmkeras.data.pipeline" in MODULES


@pytest.mark.slow
@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed"
