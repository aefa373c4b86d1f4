"""How hmkeras' modules import: Keras' public API only, imports of the
library's own modules at module level, no import cycle.

Read with `ast` from the sources (nothing is imported), so a docstring
example may import anything.
"""

import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARY = os.path.join(ROOT, "hmkeras")


def _modules():
    """`{dotted module name: parsed tree}` of every module under hmkeras/."""
    modules = {}
    for directory, _, files in os.walk(LIBRARY):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(directory, name)
            parts = os.path.relpath(path, ROOT)[:-3].split(os.sep)
            if parts[-1] == "__init__":
                parts.pop()
            with open(path, encoding="utf-8") as f:
                modules[".".join(parts)] = ast.parse(f.read(), path)
    return modules


def _imported_names(node):
    """The dotted names an import statement imports (`from a import b` gives
    `a` and `a.b`: `b` may be a module)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return []


def _imports(tree):
    return [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def _is_under(name, package):
    return name == package or name.startswith(package + ".")


def test_modules_are_found():
    modules = _modules()
    assert {"hmkeras", "hmkeras.argument_checks", "hmkeras.cells.hm_lstm_cell"} <= set(modules)


def test_no_private_keras_import():
    """Keras' public API only: no `keras.src` import anywhere (also inside
    functions)."""
    found = [
        (module, node.lineno)
        for module, tree in _modules().items()
        for node in _imports(tree)
        if any(_is_under(name, "keras.src") for name in _imported_names(node))
        or (isinstance(node, ast.ImportFrom) and node.module == "keras"
            and any(alias.name == "src" for alias in node.names))
    ]
    assert not found, f"keras.src imported at (module, line): {found}"


def _module_level_statements(body):
    """The statements run at import: `body` and, recursively, the branches
    of its `if` and `try` blocks (a package imports its TensorFlow-only
    names under `if tensorflow_features.available():`)."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _module_level_statements(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            yield from _module_level_statements(
                node.body + node.orelse + node.finalbody
                + [n for handler in node.handlers for n in handler.body])


def test_own_modules_are_imported_at_module_level():
    """No function-local (or class-level) import of an hmkeras module."""
    found = []
    for module, tree in _modules().items():
        top_level = set(map(id, _module_level_statements(tree.body)))
        for node in _imports(tree):
            if id(node) not in top_level and any(
                _is_under(name, "hmkeras") for name in _imported_names(node)
            ):
                found.append((module, node.lineno))
    assert not found, f"hmkeras imported inside a function at (module, line): {found}"


def _dependency_graph():
    """`{module: {hmkeras modules it imports}}`; a package's `__init__` is
    the package's module."""
    modules = _modules()
    graph = {}
    for module, tree in modules.items():
        graph[module] = {
            name
            for node in _imports(tree)
            for name in _imported_names(node)
            if name in modules and name != module
        }
    return graph


def _cycle(graph):
    """One import cycle (a list of modules) or None; depth-first search."""
    state = {}
    path = []

    def visit(module):
        state[module] = "open"
        path.append(module)
        for child in sorted(graph[module]):
            if state.get(child) == "open":
                return path[path.index(child):] + [child]
            if child not in state:
                cycle = visit(child)
                if cycle:
                    return cycle
        path.pop()
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            cycle = visit(module)
            if cycle:
                return cycle
    return None


def _without_package_exports(graph):
    """The graph less the edges from a package's `__init__` into the package
    (it gathers its modules' public names) and from a module to its own
    package's `__init__` (never taken: modules import modules)."""
    pruned = {}
    for module, imported in graph.items():
        pruned[module] = {
            name for name in imported
            if not (_is_under(name, module) and name != module)
        }
    return pruned


def test_no_import_cycle():
    graph = _without_package_exports(_dependency_graph())
    assert _cycle(graph) is None, f"import cycle: {' -> '.join(_cycle(graph))}"


def test_the_cycle_check_finds_cycles():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None

