"""Imports the scripts under examples/ as modules, for the tests."""

import functools
import importlib.util
import inspect
import os
import sys
import types

import absl
from absl import flags as absl_flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the repository
EXAMPLES = os.path.join(ROOT, "examples")
_LOADED = {}


def _own_flags_module(flag_values):
    """`absl.flags` as an example module sees it: every `DEFINE_*`,
    validator and `FLAGS` goes to `flag_values` instead of the process'
    global flags."""
    module = types.ModuleType("absl.flags")
    for name in dir(absl_flags):
        value = getattr(absl_flags, name)
        if callable(value) and not inspect.isclass(value):
            try:
                parameters = inspect.signature(value).parameters
            except (TypeError, ValueError):
                parameters = {}
            if "flag_values" in parameters:
                value = functools.partial(value, flag_values=flag_values)
        setattr(module, name, value)
    module.FLAGS = flag_values
    return module


def load_example(name):
    """The module `examples/<name>.py`, loaded once per process (`load_script`)."""
    return load_script("examples", name)


def load_script(folder, name):
    """The module `<folder>/<name>.py` (`examples`, `bench`), loaded once
    per process.

    Each example gets flags of its own (a fresh `absl.flags.FlagValues`,
    its `FLAGS`), so that examples whose flags share names (`--tiny`,
    `--output_dir`, ...) load side by side in one test process. The
    examples import their siblings (`command_line`, ...) as a script does,
    from examples/ on `sys.path`, and a bench script its siblings from
    bench/; `command_line` is imported first, with the process' own flags,
    and shared by every example.
    """
    if (folder, name) in _LOADED:
        return _LOADED[folder, name]
    for path in (EXAMPLES, os.path.join(ROOT, folder)):
        if path not in sys.path:
            sys.path.append(path)
    importlib.import_module("command_line")
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(ROOT, folder, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    own = _own_flags_module(absl_flags.FlagValues())
    # `from absl import flags` in the example reads the attribute below.
    absl.flags = own
    try:
        spec.loader.exec_module(module)
    finally:
        absl.flags = absl_flags
    _LOADED[folder, name] = module
    return module


def example_settings(name, *args):
    """The settings of `examples/<name>.py` for the flags `args`, parsed and
    resolved as its command line would (the module's `resolve_settings`)."""
    module = load_example(name)
    module.FLAGS.unparse_flags()
    module.FLAGS([name, *args])
    return module.resolve_settings(module.FLAGS)


def run_ptb_char(*args):
    """Runs `examples/ptb_char.py` in this process with the flags `args`
    (e.g. `"--preset=quick", "--tiny"`), as its command line would, and
    returns what its `run` returns."""
    ptb_char = load_example("ptb_char")
    settings = example_settings("ptb_char", *args)
    settings["preset"] = ptb_char.FLAGS.preset
    return ptb_char.run(settings)
