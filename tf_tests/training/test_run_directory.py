"""Tests of hmkeras.training.run_directory (a run's directory on a rerun)."""

import json
import os

import pytest

from hmkeras.training import run_directory
from hmkeras.training.run_directory import RunDirectoryError


def _run_dir(tmp_path, **settings):
    path = tmp_path / "run"
    path.mkdir()
    (path / "settings.json").write_text(json.dumps(settings))
    return str(path)


def test_settings_changes_split_model_and_other(tmp_path):
    run = _run_dir(tmp_path, units=8, seed=0, verbose=1, segment_lengths=[5, 15])
    model, other = run_directory.settings_changes(
        run, {"units": 16, "seed": 0, "verbose": 0, "segment_lengths": (5, 15),
              "output_dir": "x", "new_flag": 3},
        model_keys=["units", "seed", "segment_lengths"], ignored=["output_dir"],
        defaults={"new_flag": 3})
    # A tuple equals the list saved; a setting the old file lacks counts as
    # its default; ignored settings are not compared.
    assert model == {"units": (8, 16)} and other == {"verbose": (1, 0)}
    assert run_directory.settings_changes(str(tmp_path), {"units": 1}, ["units"]) == ({}, {})


def test_prepare_refuses_another_model_and_names_other_data(tmp_path):
    run = _run_dir(tmp_path, units=8, dataset="a")
    with pytest.raises(RunDirectoryError, match=r"another model \(--units 8 -> 16\).*--overwrite"):
        run_directory.prepare_run_directory(run, {"units": 16, "dataset": "a"},
                                            ["units", "dataset"], data_keys=["dataset"])
    with pytest.raises(RunDirectoryError, match="other data") as refused:
        run_directory.prepare_run_directory(run, {"units": 16, "dataset": "b"},
                                            ["units", "dataset"], data_keys=["dataset"])
    assert "--overwrite" not in str(refused.value)
    assert os.listdir(run) == ["settings.json"]  # nothing touched


def test_prepare_resumes_with_other_changes_and_prints_them(tmp_path, capsys):
    run = _run_dir(tmp_path, units=8, verbose=1)
    assert run_directory.prepare_run_directory(
        run, {"units": 8, "verbose": 0}, ["units"]) == ("verbose",)
    assert "--verbose 1 -> 0" in capsys.readouterr().out


def test_overwrite_deletes_a_run_but_never_another_directory(tmp_path):
    run = _run_dir(tmp_path, units=8)
    assert run_directory.prepare_run_directory(run, {"units": 16}, ["units"],
                                               overwrite=True) == ()
    assert not os.path.exists(run)
    other = tmp_path / "photos"
    other.mkdir()
    (other / "a.jpg").write_text("x")
    with pytest.raises(RunDirectoryError, match="is not one"):
        run_directory.prepare_run_directory(str(other), {}, [], overwrite=True)
    assert (other / "a.jpg").exists()


class _Config:
    def __init__(self, **fields):
        self.fields = fields

    def to_json(self):
        return json.dumps(self.fields)


def test_check_model_config(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "model_config.json").write_text(json.dumps({"vocab_size": 30, "units": 8}))
    # Without checkpoints there is nothing to resume: no refusal.
    run_directory.check_model_config(str(run), _Config(vocab_size=31, units=8))
    (run / "checkpoints").mkdir()
    with pytest.raises(RunDirectoryError, match="model_config.json: vocab_size 30 -> 31"):
        run_directory.check_model_config(str(run), _Config(vocab_size=31, units=8))
    # A field the saved file lacks (an older hmkeras) is not compared.
    run_directory.check_model_config(str(run), _Config(vocab_size=30, units=8, new=1))


def test_check_model_config_names_the_cell_option(tmp_path):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    saved = {"vocab_size": 30, "cell_options": {"layer_norm": True, "slope": 1.0}}
    (run / "model_config.json").write_text(json.dumps(saved))
    run_directory.check_model_config(str(run), _Config(**saved))
    with pytest.raises(RunDirectoryError, match=r"model_config.json: "
                       r"cell_options.layer_norm true -> false;"):
        run_directory.check_model_config(str(run), _Config(
            vocab_size=30, cell_options={"layer_norm": False, "slope": 1.0}))
    with pytest.raises(RunDirectoryError, match=r"cell_options.dropout default -> 0.5, "
                       r"cell_options.slope 1.0 -> default;"):
        run_directory.check_model_config(str(run), _Config(
            vocab_size=30, cell_options={"layer_norm": True, "dropout": 0.5}))


def test_results_round_trip_and_finished_runs(tmp_path):
    run_directory.write_results(str(tmp_path), {"epochs": 2, "test_bpc": float("nan"),
                                                "stopped_early": False})
    with open(tmp_path / "results.json") as f:
        assert json.load(f)["test_bpc"] is None  # strict JSON
    assert run_directory.finished_results(str(tmp_path), max_epochs=3) is None
    assert run_directory.finished_results(str(tmp_path), max_epochs=2)["epochs"] == 2
    run_directory.write_results(str(tmp_path), {"epochs": 1, "stopped_early": True})
    assert run_directory.finished_results(str(tmp_path), max_epochs=5)["epochs"] == 1
    # A run of --max_steps steps is finished for that many steps, not more.
    run_directory.write_results(str(tmp_path), {"epochs": 0, "steps": 40})
    assert run_directory.finished_results(str(tmp_path), 2, max_steps=40)["steps"] == 40
    assert run_directory.finished_results(str(tmp_path), 2, max_steps=41) is None
    assert run_directory.finished_results(str(tmp_path), 2) is None


class _Vocabulary:
    def save(self, path):
        with open(path, "w") as f:
            f.write('{"symbols": "ab"}')


def test_run_files_are_what_a_rerun_reads(tmp_path):
    run = str(tmp_path / "new" / "run")
    settings = {"units": 8, "cell": "lstm", "segment_lengths": [5, 15]}
    run_directory.write_run_files(run, _Config(vocab_size=30, units=8), settings,
                                  vocabulary=_Vocabulary())
    with open(os.path.join(run, "settings.json")) as f:
        assert json.load(f) == settings
    with open(os.path.join(run, "model_config.json")) as f:
        assert json.load(f) == {"vocab_size": 30, "units": 8}
    with open(os.path.join(run, "vocabulary.json")) as f:
        assert json.load(f) == {"symbols": "ab"}
    assert run_directory.is_run_dir(run)
    assert run_directory.settings_changes(
        run, dict(settings, segment_lengths=(5, 15)), ["units"]) == ({}, {})
    os.mkdir(os.path.join(run, "checkpoints"))
    with pytest.raises(RunDirectoryError, match="units 8 -> 9"):
        run_directory.check_model_config(run, _Config(vocab_size=30, units=9))


def test_removing_new_empty_dirs_keeps_what_existed_and_what_has_files(tmp_path):
    (tmp_path / "old").mkdir()
    root = tmp_path / "old" / "new" / "run"
    with pytest.raises(RuntimeError):
        with run_directory.removing_new_empty_dirs([str(root)]):
            os.makedirs(root / "empty")
            os.makedirs(root / "full")
            (root / "full" / "f").write_text("x")
            raise RuntimeError
    assert (root / "full" / "f").exists() and not (root / "empty").exists()
    with pytest.raises(RuntimeError):
        with run_directory.removing_new_empty_dirs([str(tmp_path / "old" / "b")]):
            os.makedirs(tmp_path / "old" / "b" / "c")
            raise RuntimeError
    assert sorted(os.listdir(tmp_path / "old")) == ["new"]
