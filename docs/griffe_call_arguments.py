"""Griffe extension of the hmkeras site: Keras' `Call arguments:` sections.

A Keras layer documents what its `call` takes in a `Call arguments:`
section of the class docstring, written like an `Args:` section:

    Call arguments:
        inputs: A `(batch, features)` tensor.
        training: Whether dropout is applied.

Griffe's Google-style parser knows no such section and keeps it as an
admonition of kind `"call-arguments"`, which the site would show as one
paragraph with the items run together.  `CallArguments` parses the
admonition's text as an `Args:` section and puts the resulting parameters
section, titled "Call arguments:", in its place, so that the site renders
it as it renders `Args:`.  The docstrings stay as Keras writes them.

The argument defaults and annotations come from the class's own `call`
(or `__call__`) when it has one; otherwise there are none (the class's
signature is its constructor's, not its call's).

The mkdocstrings python handler loads the extension (`extensions` in
mkdocs.yml).  It runs once the object tree is loaded (Griffe's
`on_object` event), when every signature is known.
"""

import textwrap

import griffe

TITLE = "Call arguments"
# The admonition kind Griffe gives an unknown "Call arguments:" section.
ADMONITION_KIND = "call-arguments"


def _call_method(owner):
    """The function whose arguments the section documents: `owner`'s own
    `call` or `__call__`, or None."""
    if owner is None or not owner.is_class:
        return None
    for name in ("call", "__call__"):
        member = owner.members.get(name)
        if member is not None and not member.is_alias and member.is_function:
            return member
    return None


def _header_lines(docstring):
    """Line offsets of the `Call arguments:` headers of `docstring`."""
    return [number for number, line in enumerate(docstring.lines)
            if line.strip() == f"{TITLE}:"]


def call_arguments_section(text, docstring, line_offset=0):
    """The parameters section of one `Call arguments:` block.

    Args:
        text: The block's items, dedented (the admonition's contents).
        docstring: The `griffe.Docstring` the block comes from (its parser
            options apply; its parent's `call` gives the defaults).
        line_offset: The line of the block's header in `docstring`, for
            the line numbers of parsing warnings.

    Returns:
        A `griffe.DocstringSectionParameters` titled "Call arguments:".
    """
    owner = docstring.parent
    call = _call_method(owner)
    # The leading newline keeps the items indented under "Args:" (a
    # docstring's lines after its first are dedented together).
    block = griffe.Docstring(
        "\nArgs:\n" + textwrap.indent(text, "    "),
        lineno=(docstring.lineno or 0) + line_offset,
        parent=call or owner,
    )
    options = dict(docstring.parser_options)
    # The constructor's parameters are not the call's: no warning about
    # names it lacks.
    options["warn_unknown_params"] = bool(call) and options.get("warn_unknown_params", True)
    section = griffe.parse_google(block, **options)[0]
    if call is None:
        for parameter in section.value:
            parameter.value = None  # not the constructor's default
            parameter.annotation = None
    section.title = f"{TITLE}:"
    return section


def replace_call_arguments(docstring):
    """Replaces, in `docstring.parsed`, every `Call arguments:` admonition by
    a parameters section; returns how many it replaced."""
    sections = docstring.parsed
    headers = iter(_header_lines(docstring))
    replaced = 0
    for index, section in enumerate(sections):
        if (section.kind is griffe.DocstringSectionKind.admonition
                and section.value.kind == ADMONITION_KIND):
            sections[index] = call_arguments_section(
                section.value.contents, docstring, next(headers, 0))
            replaced += 1
    return replaced


class CallArguments(griffe.Extension):
    """Renders Keras' `Call arguments:` sections as parameter lists."""

    def on_object(self, *, obj, loader, **kwargs):
        del loader, kwargs  # unused
        docstring = obj.docstring
        if docstring is not None and f"{TITLE}:" in docstring.value:
            replace_call_arguments(docstring)
