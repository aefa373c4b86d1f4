"""Tests of examples/compare_surprisal.py (Krause et al. Fig. 3 for two runs).
(The WikiText-2 word-level report of examples/ptb_char.py, Eq. 23, is
`hmkeras.analysis.char_lm_report.word_level_results`, tested in
tf_tests/analysis/test_char_lm_report.py.)

Two tiny runs of `examples/ptb_char.py --preset=quick --tiny` (an HM-LSTM and
an LSTM on the same synthetic corpus) are made once; the comparison script
runs in a subprocess (its flags `--output`, `--verbose`, ... share names with
ptb_char's, so the two cannot be imported into one process).
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from example_modules import ROOT, load_example, run_ptb_char

SCRIPT = os.path.join(ROOT, "examples", "compare_surprisal.py")


ptb_char = load_example("ptb_char")


def _tiny_run(output_dir, cell):
    return run_ptb_char("--preset=quick", "--tiny", f"--cell={cell}",
                        "--synthetic_train_chars=900", f"--output_dir={output_dir}",
                        "--verbose=0")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    paths = {cell: str(root / cell) for cell in ("hmlstm", "lstm")}
    results = {cell: _tiny_run(path, cell) for cell, path in paths.items()}
    return paths, results


def _compare(*args):
    return subprocess.run([sys.executable, SCRIPT, "--verbose=0", *args],
                          capture_output=True, text=True, cwd=ROOT)


@pytest.mark.slow
def test_compare_surprisal_end_to_end(runs, tmp_path):
    paths, results = runs
    png = str(tmp_path / "out" / "recovery.png")
    done = _compare(f"--run_a={paths['hmlstm']}", f"--run_b={paths['lstm']}",
                    "--labels=HM,LSTM", "--max_offset=3", f"--output={png}")
    assert done.returncode == 0, done.stderr[-3000:]
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    with open(str(tmp_path / "out" / "recovery.json")) as f:
        figures = json.load(f)
    assert figures["offsets"] == [0, 1, 2, 3]
    assert [m["label"] for m in figures["models"]] == ["HM", "LSTM"]
    assert figures["num_targets"] == results["lstm"]["test_targets"]
    assert figures["num_surprising"] == round(0.1 * figures["num_targets"])
    for model, cell in zip(figures["models"], ("hmlstm", "lstm")):
        # The restored step export reproduces the run's own test BPC.
        assert model["bpc"] == pytest.approx(results[cell]["test_bpc"], rel=1e-4)
        losses = model["loss_after_surprise"]
        assert len(losses) == 4 and losses[0] > model["bpc"]  # surprising = costly
    assert "surprising" in done.stdout and "HM" in done.stdout


@pytest.mark.slow
def test_default_output_goes_into_run_a(runs, tmp_path):
    """Without --output the figure and its JSON go into run A's directory,
    nothing into the current one."""
    paths, _ = runs
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    done = subprocess.run([sys.executable, SCRIPT, "--verbose=0", "--max_offset=2",
                           "--max_chars=300", f"--run_a={paths['hmlstm']}",
                           f"--run_b={paths['lstm']}"],
                          capture_output=True, text=True, cwd=cwd)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not os.listdir(cwd)
    for name in ("surprisal_vs_lstm.png", "surprisal_vs_lstm.json"):
        assert os.path.isfile(os.path.join(paths["hmlstm"], name)), name


@pytest.mark.slow
def test_step_model_flags_and_max_chars(runs, tmp_path):
    paths, _ = runs
    out = str(tmp_path / "r.png")
    done = _compare(f"--model_a={paths['lstm']}/step_model",
                    f"--model_b={paths['hmlstm']}/step_model", "--max_chars=300",
                    "--fraction=0.05", f"--output={out}",
                    f"--output_json={tmp_path / 'figures.json'}")
    assert done.returncode == 0, done.stderr[-3000:]
    with open(tmp_path / "figures.json") as f:
        figures = json.load(f)
    assert (figures["num_chars"], figures["num_targets"]) == (300, 299)
    assert figures["num_surprising"] == 15
    assert [m["label"] for m in figures["models"]] == ["lstm", "hmlstm"]


def _copy_run(paths, tmp_path, **settings):
    copy = str(tmp_path / "edited")
    shutil.copytree(paths["lstm"], copy, ignore=shutil.ignore_patterns(
        "checkpoints", "logs"))
    with open(os.path.join(copy, "settings.json")) as f:
        values = json.load(f)
    values.update(settings)
    with open(os.path.join(copy, "settings.json"), "w") as f:
        json.dump(values, f)
    return copy


@pytest.mark.slow
@pytest.mark.parametrize("settings,message", [
    (dict(dataset="ptb_char"), "use different datasets .*'synthetic'.*'ptb_char'"),
    (dict(seed=7), "different 'synthetic' test texts"),
])
def test_mismatched_runs_raise(runs, tmp_path, settings, message):
    paths, _ = runs
    other = _copy_run(paths, tmp_path, **settings)
    done = _compare(f"--run_a={paths['hmlstm']}", f"--run_b={other}",
                    f"--output={tmp_path / 'x.png'}")
    assert done.returncode != 0
    # One line that names the runs' flags, no traceback.
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("compare_surprisal.py: --run_a=")
    assert re.search(message, line), done.stderr[-2000:]
    assert not os.path.exists(tmp_path / "x.png")


def test_missing_run_names_the_flag(tmp_path):
    done = _compare(f"--run_a={tmp_path}", f"--run_b={tmp_path}")
    assert done.returncode != 0 and "--run_a=" in done.stderr
    assert "no step export" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_text_file_runs_compare(tmp_path):
    """A run on --dataset=text_file (the test text is cut from the run's
    file again), compared with itself to keep the test short."""
    book = tmp_path / "book.txt"
    book.write_text("the cat sat on the mat.\nA dog ran in the fog, then sat.\n" * 40)
    run = str(tmp_path / "lstm")
    run_ptb_char("--preset=quick", "--tiny", "--cell=lstm", "--dataset=text_file",
                 f"--text_file={book}", f"--output_dir={run}", "--verbose=0")
    done = _compare(f"--run_a={run}", f"--run_b={run}", "--fraction=0.2",
                    f"--output={tmp_path / 'r.png'}")
    assert done.returncode == 0, done.stderr[-3000:]
    with open(tmp_path / "r.json") as f:
        assert json.load(f)["dataset"] == "text_file"


@pytest.mark.slow
def test_unsegmented_runs_compare(tmp_path):
    """An --unsegmented run (three files) against its own LSTM baseline: the
    models read the lines without their spaces, and so does the comparison
    (the script checks that each model's BPC is the one its run reported)."""
    words = ["ba", "dogi", "ku", "tesa"]
    files = []
    for name, count in (("tr.txt", 200), ("va.txt", 20), ("te.txt", 20)):
        lines = [" ".join(words[(i + j) % 4] for j in range(1 + i % 3)) for i in range(count)]
        (tmp_path / name).write_text("\n".join(lines) + "\n")
        files.append(str(tmp_path / name))
    run = str(tmp_path / "run")
    run_ptb_char("--preset=quick", "--tiny", "--dataset=text_file", "--unsegmented",
                 f"--text_file={','.join(files)}", f"--output_dir={run}", "--verbose=0")
    done = _compare(f"--run_a={run}", f"--run_b={os.path.join(run, 'lstm_baseline')}",
                    "--fraction=0.2", f"--output={tmp_path / 'r.png'}")
    assert done.returncode == 0, done.stderr[-3000:]
    with open(tmp_path / "r.json") as f:
        figures = json.load(f)
    # Every symbol of the spaceless test lines and their line ends is scored.
    assert figures["num_chars"] == sum(len(line.replace(" ", "")) + 1 for line in
                                       (tmp_path / "te.txt").read_text().splitlines())


@pytest.mark.slow
def test_docstring_example_of_the_script():
    # In a subprocess: the script's flags would clash with ptb_char's here.
    # examples/ on sys.path, as for the script: it imports command_line.
    code = ("import doctest, importlib.util as u, sys; "
            f"sys.path.insert(0, {os.path.dirname(SCRIPT)!r}); "
            f"s = u.spec_from_file_location('compare_surprisal', {SCRIPT!r}); "
            "m = u.module_from_spec(s); s.loader.exec_module(m); "
            "r = doctest.testmod(m); print('DOCTEST', r.failed, r.attempted)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    failed, attempted = done.stdout.split("DOCTEST")[-1].split()
    assert failed == "0" and int(attempted) > 0
