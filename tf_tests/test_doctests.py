"""Runs the docstring example of every hmkeras module (they must work), and
checks that each sits in a Google-style `Examples:` section, the only place
the documentation site renders a doctest as code."""

import ast
import doctest
import importlib
import os
import pathlib
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


def _doctests_outside_examples(docstring):
    """Line numbers (0-based) of `>>>` lines that are not indented under an
    `Examples:` header of the same docstring."""
    header_indent = None
    loose = []
    for number, line in enumerate(docstring.expandtabs().split("\n")):
        text = line.strip()
        indent = len(line) - len(text) if text else None
        if text == "Examples:":
            header_indent = indent
        elif text.startswith(">>>"):
            if header_indent is None or indent <= header_indent:
                loose.append(number)
        elif text and header_indent is not None and indent <= header_indent:
            header_indent = None
    return loose


def test_section_scan_finds_loose_doctests():
    assert _doctests_outside_examples("Doc.\n\n>>> 1\n1\n") == [2]
    assert _doctests_outside_examples("Doc.\n\nExamples:\n\n    >>> 1\n    1\n") == []
    assert _doctests_outside_examples(
        "Examples:\n\n    >>> 1\n    1\n\nArgs:\n    x: y.\n\n>>> 2\n2") == [8]


def test_every_doctest_is_in_an_examples_section():
    root = pathlib.Path(hmkeras.__file__).parent
    loose = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)):
                docstring = ast.get_docstring(node, clean=False)
                if docstring and _doctests_outside_examples(docstring):
                    loose.append(f"{path.relative_to(root)}:{getattr(node, 'name', '')}")
    assert not loose, f"doctests outside an `Examples:` section: {loose}"
