"""Runs the docstring examples of the char-LM modules."""

import doctest
import importlib

import pytest

MODULES = [
    "hmkeras.char_language_model",
    "hmkeras.evaluation",
    "hmkeras.stateful_training",
    "hmkeras.training_state",
    "hmkeras.step_export",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, name
