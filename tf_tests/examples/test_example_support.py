"""Tests of the modules the example scripts share: examples/command_line.py
(Settings, flag_errors), examples/run_directory.py (prepare_output_dir)
and their docstring examples; fast, no training."""

import doctest
import json
import os

import pytest

from example_modules import load_example

load_example("ptb_char")  # examples/ on sys.path; char_lm_flags with its flags
import boundary_prior_flags  # noqa: E402
import char_lm_flags  # noqa: E402
import command_line  # noqa: E402
import run_directory  # noqa: E402


@pytest.mark.parametrize("module", [command_line, run_directory, char_lm_flags,
                                    boundary_prior_flags],
                         ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_settings_are_a_dict_with_attributes():
    s = command_line.Settings(units=8)
    s.cell = "lstm"
    s["seed"] = 1
    assert s == {"units": 8, "cell": "lstm", "seed": 1}
    assert (s.units, s.cell, s.seed) == (8, "lstm", 1)
    assert json.loads(json.dumps(s)) == s
    with pytest.raises(AttributeError, match="no setting 'nope'"):
        s.nope  # noqa: B018


def test_flag_errors_turn_the_given_errors_into_flag_errors():
    with pytest.raises(command_line.FlagError, match="^bad --x$"):
        with command_line.flag_errors(KeyError, ValueError):
            raise ValueError("bad --x")
    with pytest.raises(TypeError):
        with command_line.flag_errors(ValueError):
            raise TypeError("not converted")


def _settings(tmp_path, **values):
    return command_line.Settings({"output_dir": str(tmp_path / "run"), "overwrite": False,
                                  "units": 8, "verbose": 1, **values})


def test_prepare_output_dir_refuses_another_model_and_another_script(tmp_path):
    s = _settings(tmp_path)
    os.makedirs(s.output_dir)
    run_directory.write_run_kind(s.output_dir, "word_lm")
    with open(os.path.join(s.output_dir, "settings.json"), "w") as f:
        json.dump(dict(s, units=4), f)
    with pytest.raises(command_line.FlagError, match="holds a run of examples/ptb_word.py"):
        run_directory.prepare_output_dir(s, "char_lm", ["units"])
    with pytest.raises(command_line.FlagError, match=r"another model \(--units 4 -> 8\)"):
        run_directory.prepare_output_dir(s, "word_lm", ["units"])
    # Other flags are not compared unless asked: the run resumes silently.
    s.units = 4
    s.verbose = 0
    assert run_directory.prepare_output_dir(s, "word_lm", ["units"]) == ()
    assert run_directory.prepare_output_dir(
        s, "word_lm", ["units"], ignored=["output_dir"]) == ("verbose",)


def test_overwrite_deletes_only_a_run(tmp_path):
    s = _settings(tmp_path, overwrite=True)
    os.makedirs(s.output_dir)
    with open(os.path.join(s.output_dir, "notes.txt"), "w") as f:
        f.write("mine")
    with pytest.raises(command_line.FlagError, match="is not one"):
        run_directory.prepare_output_dir(s, "char_lm", ["units"])
    os.remove(os.path.join(s.output_dir, "notes.txt"))
    run_directory.write_run_files(s.output_dir, _Config(), s, kind="char_lm")
    assert run_directory.prepare_output_dir(s, "char_lm", ["units"]) == ()
    assert not os.path.exists(s.output_dir)


class _Config:
    def to_json(self):
        return "{}"
