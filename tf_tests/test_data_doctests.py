"""Runs the docstring examples of every hmkeras.data module."""

import doctest
import importlib

import pytest

MODULES = [
    "hmkeras.data",
    "hmkeras.data.synthetic_corpus",
    "hmkeras.data.vocabulary",
    "hmkeras.data.pipeline",
    "hmkeras.data.sources",
    "hmkeras.data.char_stream_builder",
    "hmkeras.data.corpora",
    "hmkeras.data.ptb_char",
    "hmkeras.data.text8",
    "hmkeras.data.enwik8",
    "hmkeras.data.wikitext2_raw",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
