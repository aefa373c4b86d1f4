"""The public names: importable from hmkeras and from their package."""

import importlib
import os
import re

import hmkeras

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("cells", "heads", "wrappers", "training", "analysis", "models")


def _readme_table():
    """`{package: [names]}` from the architecture page's table of names."""
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
        text = f.read()
    rows = re.findall(r"^\| `hmkeras\.(\w+)` \| (.*?) \|", text, re.M)
    return {package: re.findall(r"`(\w+)`", names) for package, names in rows}


def test_all_matches_the_readme_table():
    table = _readme_table()
    listed = [name for package in PACKAGES for name in table[package]]
    assert sorted(listed) == sorted(hmkeras.__all__)


def test_every_name_from_hmkeras_and_from_its_package():
    table = _readme_table()
    for package in PACKAGES:
        module = importlib.import_module(f"hmkeras.{package}")
        assert sorted(module.__all__) == sorted(table[package])
        for name in module.__all__:
            assert getattr(module, name) is getattr(hmkeras, name)


def test_help_lists_the_public_classes():
    import pydoc

    text = pydoc.render_doc(hmkeras, renderer=pydoc.plaintext)
    for name in ("HMLSTMCell", "BoundaryMonitor", "GatedOutputEmbedding"):
        assert name in text
