"""Every cross-reference in the code points to a page and section that exist.

The docstrings, comments and messages of `hmkeras/`, `examples/` and
`bench/` send the reader to the documentation in these forms:

* `docs/<path>.md`, optionally followed by `#anchor` or by
  `, "Section name"`: a page of the site, from the repository root;
* `README.md` (also with `#anchor` or `, "Section name"`) and
  `README, "Section name"`: the README.

A reference may be wrapped over lines (of a docstring or of comments).  The
page must exist; a section must be a heading of that page (compared
without case and without Markdown formatting), an anchor the slug of one.
"""

import bisect
import collections
import os
import re
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCANNED = ("hmkeras", "examples", "bench")

Reference = collections.namedtuple("Reference", ["path", "anchor", "section", "line"])

# A page, then optionally (after a closing backtick) an anchor or a section.
_REFERENCE = re.compile(
    r"(?<![\w/.-])(?P<path>docs/[\w./-]+?\.md|README\.md|README(?=`?,\s*\\?\"))"
    r"(?:#(?P<anchor>[\w-]+))?`?"
    r"(?:,\s*\\?\"(?P<section>[^\"\\]+)\\?\")?"
)
# A line break and the next line's indentation and comment marker.
_LINE_BREAK = re.compile(r"[ \t]*\n[ \t]*(?:#[ \t]*)?")
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")


def _flatten(text):
    """`(flat, line_starts)`: `text` with each line break (and the next
    line's indentation and comment marker) replaced by one space, and the
    offset in `flat` at which each line starts."""
    pieces, line_starts, length, position = [], [0], 0, 0
    for match in _LINE_BREAK.finditer(text):
        piece = text[position:match.start()] + " "
        pieces.append(piece)
        length += len(piece)
        line_starts.append(length)
        position = match.end()
    pieces.append(text[position:])
    return "".join(pieces), line_starts


def find_references(text):
    """The `Reference`s in `text` (the source of one file), with the line
    each starts on (1-based)."""
    flat, line_starts = _flatten(text)
    references = []
    for match in _REFERENCE.finditer(flat):
        path = "README.md" if match["path"] == "README" else match["path"]
        section = match["section"] and " ".join(match["section"].split())
        line = bisect.bisect_right(line_starts, match.start())
        references.append(Reference(path, match["anchor"], section, line))
    return references


def plain_text(heading):
    """A heading or section name without Markdown formatting, lower case."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links
    text = re.sub(r"\{[^}]*\}\s*$", "", text)  # attribute lists
    text = re.sub(r"[`*_]", "", text)
    return " ".join(text.split()).lower()


def slug(heading):
    """The anchor Python-Markdown's `toc` extension gives a heading."""
    text = unicodedata.normalize("NFKD", plain_text(heading))
    text = text.encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip()
    return re.sub(r"[-\s]+", "-", text)


def headings(markdown):
    """The ATX headings of a Markdown text, outside fenced code blocks."""
    found, fence = [], None
    for line in markdown.splitlines():
        opening = _FENCE.match(line)
        if opening:
            if fence is None:
                fence = opening.group(1)
            elif opening.group(1) == fence:
                fence = None
            continue
        match = None if fence else _HEADING.match(line)
        if match:
            found.append(match.group(2))
    return found


def reference_problem(reference, root=ROOT):
    """Why `reference` does not resolve under `root`, or None."""
    page = os.path.join(root, reference.path)
    if not os.path.isfile(page):
        return f"{reference.path} does not exist"
    with open(page, encoding="utf-8") as f:
        titles = headings(f.read())
    if reference.section is not None:
        if plain_text(reference.section) not in {plain_text(t) for t in titles}:
            return f'{reference.path} has no heading "{reference.section}"'
    if reference.anchor is not None:
        if reference.anchor not in {slug(t) for t in titles}:
            return f"{reference.path} has no heading with the anchor #{reference.anchor}"
    return None


def source_files(root=ROOT):
    """The .py files of the scanned folders, relative to `root`."""
    for folder in SCANNED:
        for directory, _, names in sorted(os.walk(os.path.join(root, folder))):
            for name in sorted(names):
                if name.endswith(".py"):
                    yield os.path.relpath(os.path.join(directory, name), root)


def problems_of(text, where, root=ROOT):
    """`"where:line: problem"` for every reference of `text` that does not
    resolve."""
    found = []
    for reference in find_references(text):
        problem = reference_problem(reference, root)
        if problem:
            found.append(f"{where}:{reference.line}: {problem}")
    return found


def test_scan_finds_every_form():
    text = (
        'x = 1  # the table (docs/results/speed.md, "Speed: train-step\n'
        '# time")\n'
        '"""See `docs/guides/hm-lstm.md`, "Boundaries that\n'
        '    learn", README, "Commands", README.md and\n'
        '    docs/index.md#hmkeras."""\n'
        'print("(docs/results/char-lm.md, \\"The main job\\")")\n'
    )
    assert find_references(text) == [
        Reference("docs/results/speed.md", None, "Speed: train-step time", 1),
        Reference("docs/guides/hm-lstm.md", None, "Boundaries that learn", 3),
        Reference("README.md", None, "Commands", 4),
        Reference("README.md", None, None, 4),
        Reference("docs/index.md", "hmkeras", None, 5),
        Reference("docs/results/char-lm.md", None, "The main job", 6),
    ]


def test_headings_skip_code_and_formatting():
    markdown = "# Title\n\n```bash\n# a comment\n```\n\n## The `HMLSTM` *layer*\n"
    assert headings(markdown) == ["Title", "The `HMLSTM` *layer*"]
    assert plain_text("The `HMLSTM` *layer*") == "the hmlstm layer"
    assert slug("Speed: train-step time against Keras' own cells") == (
        "speed-train-step-time-against-keras-own-cells")


def test_checker_refuses_made_up_references(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# Page\n\n## Real section\n")
    (tmp_path / "README.md").write_text("# Project\n\n## Commands\n")
    good = ('"""See docs/page.md, "Real section", docs/page.md#real-section,\n'
            '    README, "commands" and README.md."""')
    assert problems_of(good, "good.py", tmp_path) == []
    bad = ('"""See docs/page.md, "Made-up section", docs/missing.md,\n'
           '    docs/page.md#made-up, README, "Nowhere"."""')
    assert problems_of(bad, "bad.py", tmp_path) == [
        'bad.py:1: docs/page.md has no heading "Made-up section"',
        "bad.py:1: docs/missing.md does not exist",
        "bad.py:2: docs/page.md has no heading with the anchor #made-up",
        'bad.py:2: README.md has no heading "Nowhere"',
    ]


def test_the_code_has_references_to_check():
    files = list(source_files())
    assert "hmkeras/cells/hm_lstm_cell.py" in files and "bench/gradient_norms.py" in files
    with open(os.path.join(ROOT, "hmkeras", "cells", "hm_lstm_cell.py"), encoding="utf-8") as f:
        assert find_references(f.read())


def test_every_reference_resolves():
    found = []
    for path in source_files():
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            found.extend(problems_of(f.read(), path))
    assert not found, "references to pages or sections that do not exist:\n" + "\n".join(found)
