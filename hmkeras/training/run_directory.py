"""A training run's directory: compare, resume or refuse, and keep results.

A run directory holds what rebuilds and resumes a run (`settings.json`,
`model_config.json`, `checkpoints/`) and what it produced (`results.json`,
figures, exports). The helpers here decide, before any work, what a rerun
into the same directory does:

* `prepare_run_directory`: deletes the old run (`overwrite=True`), or
  compares the new settings with its `settings.json`
  (`settings_changes`): a changed model setting is refused, other changes
  resume the run.
* `write_run_files`: what rebuilds the run, written before training
  (`model_config.json`, `settings.json`, `vocabulary.json`).
* `check_model_config`: refuses a saved `model_config.json` that the new
  configuration does not match (the same settings on other data).
* `finished_results`: the `results.json` of a run that needs no more
  epochs (or steps), read back unchanged, so a rerun never loses results.
* `write_results`: results as strict JSON (NaN / inf written as null).
* `removing_new_empty_dirs`: a failed run leaves no empty directories.
* `RunClock`: the seconds of a run over every process that worked on it.

The errors are `RunDirectoryError`s whose messages name the settings as
`--name` flags (the command lines of `examples/` are their users).

Examples:

    >>> import json, os, tempfile
    >>> run = tempfile.mkdtemp()
    >>> with open(os.path.join(run, "settings.json"), "w") as f:
    ...     json.dump({"units": 8, "verbose": 1}, f)
    >>> settings_changes(run, {"units": 8, "verbose": 0}, model_keys=["units"])
    ({}, {'verbose': (1, 0)})
    >>> prepare_run_directory(run, {"units": 16}, model_keys=["units"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hmkeras.training.run_directory.RunDirectoryError: --output_dir=... holds a run of another model (--units 8 -> 16), ...
"""

import contextlib
import json
import math
import os
import shutil
import time

SETTINGS = "settings.json"
MODEL_CONFIG = "model_config.json"
VOCABULARY = "vocabulary.json"
RESULTS = "results.json"
CHECKPOINTS = "checkpoints"


class RunDirectoryError(ValueError):
    """A run directory that these settings cannot use; the message, one
    paragraph, names the settings as `--name` flags and what to do."""


class RunClock:
    """Seconds of a run over every process that worked on it: the seconds
    of the processes before this one (`before`) plus this process' since
    `start`.

    `before` comes from the run directory: `RunClock.of_run` starts from
    the `results.json` of a finished run that is now trained on (its
    evaluation and exports included), and `resume_from` raises it to the
    seconds saved with the checkpoint a process resumes from.

    Examples:

        >>> import tempfile
        >>> run = tempfile.mkdtemp()
        >>> write_results(run, {"wall_seconds": 30.0})
        >>> clock = RunClock.of_run(run, start=time.time() - 2.0)
        >>> clock.resume_from(10.0)  # checkpoint before the evaluation: earlier
        >>> 32.0 <= clock.total() < 33.0
        True
    """

    def __init__(self, start=None, before=0.0):
        self.start = time.time() if start is None else start
        self.before = before

    @classmethod
    def of_run(cls, run_dir, start=None):
        """A clock for a process working on the run in `run_dir`: `before` is
        the `wall_seconds` of its `results.json` (0 when it has none)."""
        path = os.path.join(run_dir, RESULTS)
        before = 0.0
        if os.path.isfile(path):
            with open(path) as f:
                before = json.load(f).get("wall_seconds") or 0.0
        return cls(start, before)

    def resume_from(self, seconds):
        """The run's seconds up to the checkpoint this process resumes from:
        `before` becomes the larger of the two (a finished run's results
        count the seconds after its last checkpoint too)."""
        self.before = max(self.before, seconds)

    def total(self):
        """The run's seconds so far."""
        return self.before + time.time() - self.start


def flag_text(value):
    """A setting's value as written on a command line (`true`, `5,15`, `unset`).

    Examples:

        >>> flag_text(True), flag_text([5, 15]), flag_text(None), flag_text(0.5)
        ('true', '5,15', 'unset', '0.5')
    """
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return "unset" if value is None else str(value)


def changes_text(changes):
    """`{name: (old, new)}` as `--name old -> new, ...`.

    Examples:

        >>> changes_text({"units": (8, 16), "layer_norm": (True, False)})
        '--units 8 -> 16, --layer_norm true -> false'
    """
    return ", ".join(f"--{name} {flag_text(old)} -> {flag_text(new)}"
                     for name, (old, new) in changes.items())


def is_run_dir(path):
    """Whether `path` holds a run (its `settings.json`, `checkpoints/` or
    `model_config.json`)."""
    return any(os.path.exists(os.path.join(path, name))
               for name in (SETTINGS, CHECKPOINTS, MODEL_CONFIG))


def settings_changes(run_dir, settings, model_keys, ignored=(), defaults=None):
    """`(model_changes, other_changes)`: `{name: (old, new)}` between
    `settings` and the `settings.json` in `run_dir` (empty without one).

    Args:
        run_dir: The run directory.
        settings: The new settings, a mapping of name to value.
        model_keys: The names whose change means another model (or other
            data, or other batches): `model_changes`.
        ignored: Names not compared (e.g. those that only name the run).
        defaults: `{name: value}` for names the saved `settings.json`
            lacks; a name missing there too: None.
    """
    path = os.path.join(run_dir, SETTINGS)
    if not os.path.isfile(path):
        return {}, {}
    with open(path) as f:
        old = json.load(f)
    defaults = defaults or {}
    model, other = {}, {}
    for name, new in settings.items():
        if name in ignored:
            continue
        before = old.get(name, defaults.get(name))
        if isinstance(new, tuple):
            new = list(new)
        if before != new:
            (model if name in model_keys else other)[name] = (before, new)
    return model, other


def prepare_run_directory(run_dir, settings, model_keys, overwrite=False,
                          data_keys=(), ignored=(), defaults=None):
    """Checks `run_dir` against `settings` before any work; returns the
    names of the changed settings that keep the model (the run resumes).

    With `overwrite`, a run in `run_dir` is deleted (a non-empty directory
    that holds no run is refused, never deleted). Otherwise a change of a
    `model_keys` setting is refused (`RunDirectoryError`): with a
    `data_keys` one among them, without suggesting `--overwrite` (the run
    is another job's); other changes are printed in one line.

    Args:
        run_dir: The run directory (`--output_dir`).
        settings: The new settings.
        model_keys, ignored, defaults: As in `settings_changes`.
        overwrite: Delete the old run and start afresh.
        data_keys: The settings that choose the data.

    Returns:
        A tuple of names.
    """
    if overwrite and os.path.isdir(run_dir) and os.listdir(run_dir):
        if not is_run_dir(run_dir):
            raise RunDirectoryError(
                f"--overwrite deletes a run of this script (a directory with "
                f"settings.json or checkpoints/); --output_dir={run_dir!r} is not one. "
                "Choose another --output_dir, or empty that one yourself.")
        shutil.rmtree(run_dir)
        print(f"Deleted the previous run in {run_dir} (--overwrite).")
        return ()
    model, other = settings_changes(run_dir, settings, model_keys, ignored, defaults)
    if model and set(model) & set(data_keys):
        raise RunDirectoryError(
            f"--output_dir={run_dir!r} holds a run on other data ({changes_text(model)}), "
            "which cannot be resumed with these flags. Use a new --output_dir (or "
            "leave it out: the default names the dataset).")
    if model:
        raise RunDirectoryError(
            f"--output_dir={run_dir!r} holds a run of another model ({changes_text(model)}), "
            "which cannot be resumed with these flags. Use a new --output_dir, or "
            "--overwrite to delete that run and start afresh.")
    if other:
        print(f"{run_dir}: flags changed since the last run, the model is the same and "
              f"the run resumes: {changes_text(other)}.")
    return tuple(other)


def write_run_files(run_dir, config, settings, vocabulary=None):
    """Makes `run_dir` and writes what rebuilds the run: `model_config.json`
    (`config.to_json()`), `settings.json` (`settings`, keys sorted) and,
    with a `vocabulary`, `vocabulary.json` (`vocabulary.save`).

    Examples:

        >>> import tempfile
        >>> class Config:
        ...     def to_json(self):
        ...         return '{"units": 8}'
        >>> run = os.path.join(tempfile.mkdtemp(), "run")
        >>> write_run_files(run, Config(), {"units": 8, "cell": "lstm"})
        >>> sorted(os.listdir(run))
        ['model_config.json', 'settings.json']
        >>> settings_changes(run, {"units": 16, "cell": "lstm"}, model_keys=["units"])
        ({'units': (8, 16)}, {})
    """
    os.makedirs(run_dir, exist_ok=True)
    if vocabulary is not None:
        vocabulary.save(os.path.join(run_dir, VOCABULARY))
    with open(os.path.join(run_dir, MODEL_CONFIG), "w") as f:
        f.write(config.to_json())
    with open(os.path.join(run_dir, SETTINGS), "w") as f:
        json.dump(settings, f, indent=2, sort_keys=True)


def config_changes(old, new):
    """`{name: (old value, new value)}` of the fields of two configurations
    (dicts) that differ; the entries of a dict field are named
    `field.entry`, an entry one side lacks is `"default"`. Fields `old`
    lacks are left out.

    Examples:

        >>> config_changes({"units": 8, "cell_options": {"slope": 1.0}},
        ...                {"units": 8, "cell_options": {"layer_norm": False}, "new": 1})
        {'cell_options.layer_norm': ('default', False), 'cell_options.slope': (1.0, 'default')}
    """
    changes = {}
    for name, value in new.items():
        if name not in old:
            continue
        before = old[name]
        if isinstance(value, dict) and isinstance(before, dict):
            for key in sorted(set(before) | set(value)):
                pair = (before.get(key, "default"), value.get(key, "default"))
                if pair[0] != pair[1]:
                    changes[f"{name}.{key}"] = pair
        elif before != value:
            changes[name] = (before, value)
    return changes


def check_model_config(run_dir, config):
    """Refuses (`RunDirectoryError`) a `model_config.json` in `run_dir`,
    saved beside checkpoints, that `config` (anything with `to_json()`)
    does not match: the same flags on other data, e.g. an edited text
    file. Fields the saved file lacks are not compared; a dict field
    (`cell_options`) is compared entry by entry, an entry one side lacks
    being the cell's default.
    """
    path = os.path.join(run_dir, MODEL_CONFIG)
    if not (os.path.isfile(path) and os.path.isdir(os.path.join(run_dir, CHECKPOINTS))):
        return
    with open(path) as f:
        old = json.load(f)
    changes = config_changes(old, json.loads(config.to_json()))
    if changes:
        described = ", ".join(f"{name} {flag_text(a)} -> {flag_text(b)}"
                              for name, (a, b) in changes.items())
        raise RunDirectoryError(
            f"--output_dir={run_dir!r} holds a model of another configuration "
            f"(model_config.json: {described}; vocab_size comes from the training "
            "text). Use a new --output_dir, or --overwrite to delete that run and "
            "start afresh.")


def finished_results(run_dir, max_epochs, max_steps=0):
    """The `results.json` of a finished run in `run_dir` that asks no more
    training (it stopped early, has `max_epochs` epochs or, given
    `max_steps`, that many `steps`), as saved; None otherwise (no results,
    or a larger `max_epochs` / `max_steps` trains on).

    Examples:

        >>> import tempfile
        >>> run = tempfile.mkdtemp()
        >>> write_results(run, {"epochs": 3, "steps": 30, "stopped_early": False})
        >>> finished_results(run, max_epochs=3)["epochs"], finished_results(run, max_epochs=4)
        (3, None)
        >>> finished_results(run, max_epochs=4, max_steps=30)["steps"]
        30
    """
    path = os.path.join(run_dir, RESULTS)
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        results = json.load(f)
    steps_done = max_steps and (results.get("steps") or 0) >= max_steps
    if (not results.get("stopped_early") and results.get("epochs", 0) < max_epochs
            and not steps_done):
        return None
    return results


def finite_json(value):
    """`value` with NaN / inf floats replaced by None (strict JSON).

    Examples:

        >>> finite_json({"a": [1.0, float("nan")], "b": float("inf")})
        {'a': [1.0, None], 'b': None}
    """
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_results(run_dir, results):
    """Writes `run_dir/results.json` (`finite_json(results)`, indented)."""
    with open(os.path.join(run_dir, RESULTS), "w") as f:
        json.dump(finite_json(results), f, indent=2)


@contextlib.contextmanager
def removing_new_empty_dirs(roots):
    """On an exception, removes the directories created under (and up to)
    each of `roots` meanwhile that are still empty; then re-raises.

    Examples:

        >>> import tempfile
        >>> base = tempfile.mkdtemp()
        >>> run = os.path.join(base, "a", "run")
        >>> try:
        ...     with removing_new_empty_dirs([run]):
        ...         os.makedirs(run)
        ...         raise KeyboardInterrupt
        ... except KeyboardInterrupt:
        ...     pass
        >>> os.listdir(base)
        []
    """
    before = []
    for root in roots:
        root = os.path.abspath(os.path.expanduser(root))
        existing = {d for d, _, _ in os.walk(root)} if os.path.isdir(root) else set()
        parent = root
        while parent != os.path.dirname(parent):
            parent = os.path.dirname(parent)
            if os.path.isdir(parent):
                existing.add(parent)
                break
        before.append((root, existing))
    try:
        yield
    except BaseException:
        for root, existing in before:
            created = [d for d, _, _ in os.walk(root, topdown=False) if d not in existing]
            parent = os.path.dirname(root)
            while parent not in existing and parent != os.path.dirname(parent):
                created.append(parent)
                parent = os.path.dirname(parent)
            for directory in created:  # deepest first
                try:
                    os.rmdir(directory)
                except OSError:  # not empty, or gone
                    pass
        raise
