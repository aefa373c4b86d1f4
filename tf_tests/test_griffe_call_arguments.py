"""The site's Griffe extension (`docs/griffe_call_arguments.py`) turns
Keras' `Call arguments:` sections into parameter lists, in every docstring
of hmkeras.

Needs Griffe, which the `docs` extra installs (skipped without it).
"""

import importlib.util
import os
import textwrap

import pytest

griffe = pytest.importorskip("griffe")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPTIONS = {"warn_missing_types": False, "warn_unknown_params": False}


def extension_module():
    path = os.path.join(ROOT, "docs", "griffe_call_arguments.py")
    spec = importlib.util.spec_from_file_location("griffe_call_arguments", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load(name, search_path):
    """`name` loaded by Griffe as the site loads it, with the extension."""
    extensions = griffe.load_extensions(extension_module().CallArguments)
    return griffe.load(name, search_paths=[search_path], extensions=extensions,
                       docstring_parser="google", docstring_options=OPTIONS,
                       allow_inspection=False)


def call_arguments(obj):
    """`[(name, description, default)]` of the "Call arguments:" sections."""
    return [(p.name, p.description, p.default)
            for section in obj.docstring.parsed
            if section.kind is griffe.DocstringSectionKind.parameters
            and section.title == "Call arguments:"
            for p in section.value]


def documented_objects(obj):
    """`obj` and the objects defined under it (aliases left out)."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from documented_objects(member)


def test_a_section_becomes_parameters_with_the_call_defaults(tmp_path):
    (tmp_path / "toy.py").write_text(textwrap.dedent('''
        class Toy:
            """A toy layer.

            Args:
                units: Size.

            Call arguments:
                inputs: A `(batch, features)` tensor,
                    one step.
                training: Whether dropout applies.

            Returns:
                The output.
            """

            def __init__(self, units, training=None):
                pass

            def call(self, inputs, training=False):
                pass
        '''))
    toy = load("toy", tmp_path)["Toy"]
    assert call_arguments(toy) == [
        ("inputs", "A `(batch, features)` tensor,\none step.", None),
        ("training", "Whether dropout applies.", "False"),  # the call's default
    ]
    kinds = [section.kind.value for section in toy.docstring.parsed]
    assert kinds == ["text", "parameters", "parameters", "returns"]


def test_without_a_call_method_no_constructor_defaults(tmp_path):
    (tmp_path / "cell.py").write_text(textwrap.dedent('''
        class Cell:
            """A cell.

            Call arguments:
                training: Whether dropout applies.
            """

            def __init__(self, training=True):
                pass
        '''))
    assert call_arguments(load("cell", tmp_path)["Cell"]) == [
        ("training", "Whether dropout applies.", None)]


def test_every_call_arguments_section_of_hmkeras():
    package = load("hmkeras", ROOT)
    converted = {}
    for obj in documented_objects(package):
        if obj.docstring is None or "Call arguments:" not in obj.docstring.value:
            continue
        sections = obj.docstring.parsed
        assert not [s for s in sections if s.kind is griffe.DocstringSectionKind.admonition
                    and s.value.kind == "call-arguments"], obj.path
        converted[obj.path] = [name for name, _, _ in call_arguments(obj)]
    assert converted["hmkeras.cells.boundary_prior.BoundaryPrior"] == ["outputs", "mask"]
    assert converted["hmkeras.cells.hm_lstm_cell.HMLSTMCell"] == ["inputs", "states", "training"]
    assert converted["hmkeras.cells.hm_lstm.HMLSTM"] == [
        "sequences", "initial_state", "mask", "training"]
    assert len(converted) >= 15 and all(converted.values())
