"""MkDocs hooks of the hmkeras site: the site name carries the version.

The version is read from `hmkeras/__init__.py` without importing the
package (as `setup.cfg` reads it), so building the site needs neither
TensorFlow nor Keras.
"""

import ast
import pathlib

PACKAGE_INIT = pathlib.Path(__file__).resolve().parent.parent / "hmkeras" / "__init__.py"


def package_version(path=PACKAGE_INIT):
    """The string assigned to `__version__` in `path`."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
                getattr(target, "id", None) == "__version__" for target in node.targets):
            return ast.literal_eval(node.value)
    raise ValueError(f"{path} assigns no __version__")


def on_config(config):
    """Appends the version to `site_name` (shown in the header and the title)."""
    config.site_name = f"{config.site_name} {package_version()}"
    return config
