"""The pages of the documentation, for the tests that read them."""

import glob
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the repository


def doc_pages():
    """`README.md` and every `docs/**/*.md`, relative to the repository."""
    return ["README.md"] + sorted(
        os.path.relpath(p, ROOT)
        for p in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True)
    )
