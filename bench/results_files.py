"""Writes a benchmark's figures: JSON, and its Markdown table beside it."""

import json
import os


def write_results(path, meta, results, table):
    """Writes `{"meta": meta, "results": results}` to `path` (JSON) and
    `table` to the same path with `.md`; returns the table's path."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=2)
    table_path = os.path.splitext(path)[0] + ".md"
    with open(table_path, "w") as f:
        f.write(table)
    return table_path
