"""Every Python snippet of the README runs as written."""

import os
import re

import keras
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _snippets():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_readme_has_python_snippets():
    assert _snippets()


@pytest.mark.parametrize("index", range(len(_snippets())))
def test_snippet_runs(index):
    keras.utils.set_random_seed(0)
    namespace = {"__name__": f"readme_snippet_{index}"}
    exec(compile(_snippets()[index], f"README.md snippet {index}", "exec"), namespace)
