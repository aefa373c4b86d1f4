"""Every Python block of the README and of docs/ runs and shows what it says.

The blocks are the ```python fences of `README.md` and of every
`docs/**/*.md` page (shell blocks, ```bash / ```sh / ```, are commands to
train or measure and are not run). Each block runs on its own, from a
fresh namespace, with Keras' seeds set to 0.

Convention for announcing a value: a comment line

    # ==> <python expression>

directly after an expression statement (on the line after the statement's
last line, nothing between) asserts that the statement's value equals the
expression, evaluated in the block's namespace. Before the comparison a
`TensorShape` becomes a tuple and a tensor or NumPy array a nested list;
`approx` (`pytest.approx`) is in the namespace for floats:

    layer(x).shape
    # ==> (2, 50, 3 * 64 + 2)
    float(loss)
    # ==> approx(3.9, abs=0.1)

A `# ==>` line anywhere else (after an assignment, at the top of a block,
separated by a blank line) is an error, and so is a comment that looks
like an announced value written another way (`# -> 0.5`, `# (2, 10, 64)`):
every value a block announces is checked.
"""

import ast
import os
import re

import keras
import numpy as np
import pytest

from doc_pages import doc_pages

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ANNOUNCE = re.compile(r"^\s*# ==> (.+?)\s*$")
# Comments that announce a value without the convention.
LOOSE_ANNOUNCEMENT = re.compile(r"#\s*(->|=>|\(\d)")


def _blocks():
    """(page, first line number, source) of every ```python fence."""
    blocks = []
    for page in doc_pages():
        with open(os.path.join(ROOT, page), encoding="utf-8") as f:
            text = f.read()
        for match in re.finditer(r"^```python\n(.*?)^```", text, flags=re.S | re.M):
            line = text.count("\n", 0, match.start(1)) + 1
            blocks.append((page, line, match.group(1)))
    return blocks


BLOCKS = _blocks()


def _plain(value):
    """What an announced value is compared with."""
    if hasattr(value, "as_list") and not hasattr(value, "numpy"):  # TensorShape
        return tuple(value.as_list())
    if hasattr(value, "numpy"):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _check(actual, expected, where):
    actual = _plain(actual)
    assert actual == expected, f"{where}: announced {expected!r}, got {actual!r}"


def _instrument(source, name):
    """The block's module, every announced expression wrapped in a check."""
    lines = source.split("\n")
    tree = ast.parse(source, name)
    announced = {}  # 0-based line index of the `# ==>` comment -> its text
    for index, line in enumerate(lines):
        match = ANNOUNCE.match(line)
        if match:
            announced[index] = match.group(1)
        elif "# ==>" not in line:
            comment = line.split("#", 1)[1] if "#" in line else ""
            assert not LOOSE_ANNOUNCEMENT.search("#" + comment), (
                f"{name}, line {index + 1}: a value announced without the "
                f"`# ==>` convention: {line.strip()!r}")
    used = set()
    body = []
    for statement in tree.body:
        comment = statement.end_lineno  # 0-based index of the next line
        if isinstance(statement, ast.Expr) and comment in announced:
            used.add(comment)
            where = f"{name}, line {comment + 1}"
            expected = ast.parse(announced[comment], where, mode="eval").body
            call = ast.Call(
                func=ast.Name("__snippet_check__", ast.Load()),
                args=[statement.value, expected, ast.Constant(where)],
                keywords=[])
            statement = ast.Expr(call)
        body.append(statement)
    stray = sorted(set(announced) - used)
    assert not stray, (
        f"{name}: `# ==>` not directly after an expression statement, "
        f"lines {[i + 1 for i in stray]}")
    module = ast.Module(body=body, type_ignores=[])
    return ast.fix_missing_locations(module)


def test_pages_have_python_blocks():
    pages = {page for page, _, _ in BLOCKS}
    assert "README.md" in pages
    assert any(page.startswith("docs") for page in pages)


def test_blocks_announce_values():
    assert sum(source.count("# ==>") for _, _, source in BLOCKS) >= 10


def test_a_wrong_announcement_fails():
    module = _instrument("1 + 1\n# ==> 3\n", "example")
    namespace = {"__snippet_check__": _check}
    with pytest.raises(AssertionError, match="announced 3, got 2"):
        exec(compile(module, "example", "exec"), namespace)


def test_a_misplaced_announcement_fails():
    with pytest.raises(AssertionError, match="not directly after"):
        _instrument("x = 2\n# ==> 2\n", "example")
    with pytest.raises(AssertionError, match="without the"):
        _instrument("x = (2, 3)  # (2, 3)\n", "example")


@pytest.mark.slow
@pytest.mark.parametrize(
    "page, line, source", BLOCKS, ids=[f"{p}:{n}" for p, n, _ in BLOCKS])
def test_block_runs_and_shows_its_values(page, line, source):
    keras.utils.set_random_seed(0)
    name = f"{page}, block at line {line}"
    module = _instrument(source, name)
    namespace = {
        "__name__": "snippet",
        "__snippet_check__": _check,
        "approx": pytest.approx,
    }
    exec(compile(module, name, "exec"), namespace)
