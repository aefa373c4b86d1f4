"""Runs the docstring example of every hmkeras module (they must work),
checks that each sits in a Google-style `Examples:` section, the only place
the documentation site renders a doctest as code, and that every class and
function of the API pages (`docs/api/*.md`) has one."""

import ast
import doctest
import importlib
import inspect
import os
import pathlib
import pkgutil
import re

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest

import hmkeras

ROOT = pathlib.Path(__file__).resolve().parent.parent
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


def _doctest_lines(docstring):
    """`(inside, outside)`: line numbers (0-based) of the `>>>` lines of
    `docstring` indented under an `Examples:` header, and of the others."""
    header_indent = None
    inside, outside = [], []
    for number, line in enumerate((docstring or "").expandtabs().split("\n")):
        text = line.strip()
        indent = len(line) - len(text) if text else None
        if text == "Examples:":
            header_indent = indent
        elif text.startswith(">>>"):
            in_examples = header_indent is not None and indent > header_indent
            (inside if in_examples else outside).append(number)
        elif text and header_indent is not None and indent <= header_indent:
            header_indent = None
    return inside, outside


def _doctests_outside_examples(docstring):
    """Line numbers (0-based) of `>>>` lines that are not indented under an
    `Examples:` header of the same docstring."""
    return _doctest_lines(docstring)[1]


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


def api_page_names():
    """The dotted names of the `::: name` blocks of the API pages."""
    names = []
    for page in sorted((ROOT / "docs" / "api").glob("*.md")):
        names += re.findall(r"^::: ([\w.]+)\s*$", page.read_text(encoding="utf-8"), re.M)
    return names


def resolve(name):
    """The object a dotted name of an API page stands for: its longest
    importable module, then attributes."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part)
        return obj
    raise ImportError(name)


def has_doctest_example(docstring):
    """Whether `docstring` has an `Examples:` section with a `>>>` line."""
    return bool(_doctest_lines(docstring)[0])


def test_example_scan():
    assert has_doctest_example("Doc.\n\nExamples:\n\n    Prose.\n\n    >>> 1\n    1\n")
    assert not has_doctest_example("Doc.\n\nExamples:\n\n    python run.py\n")
    assert not has_doctest_example("Doc.\n\nExamples:\n\n    Text.\nArgs:\n    >>> 1\n")
    assert not has_doctest_example(None)


def test_every_class_and_function_of_the_api_pages_has_an_example():
    names = api_page_names()
    assert "hmkeras.cells.HMLSTMCell" in names and "hmkeras.data.CharVocabulary" in names
    missing = []
    for name in names:
        obj = resolve(name)
        # Constants have no docstring of their own.
        if inspect.isclass(obj) or inspect.isfunction(obj) or inspect.ismodule(obj):
            if not has_doctest_example(obj.__doc__):
                missing.append(name)
    assert not missing, f"API names without a doctest in an `Examples:` section: {missing}"
