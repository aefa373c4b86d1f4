"""Tests of examples/ptb_char.py and examples/sample.py (tiny runs)."""

import json
import os
import subprocess
import sys

import pytest
from example_modules import ROOT, load_example



ptb_char = load_example("ptb_char")
FLAGS = ptb_char.FLAGS


def _settings(*args):
    FLAGS.unparse_flags()
    FLAGS(["ptb_char", *args])
    return ptb_char.resolve_settings(FLAGS)


def _run(*args):
    settings = _settings(*args)
    settings["preset"] = FLAGS.preset
    return ptb_char.run(settings)


def _steps(output_dir):
    with open(os.path.join(output_dir, "steps.jsonl")) as f:
        return [json.loads(line) for line in f]


def _check_aligned(scores):
    """An `AlignedBoundaryScores.as_dict()`: headline = the best alignment."""
    by = scores["by_alignment"]
    assert set(by) == {"separator", "last_char"}
    assert scores["alignment"] in by
    assert scores["f1"] == by[scores["alignment"]]["f1"] == max(v["f1"] for v in by.values())
    assert scores["precision"] == by[scores["alignment"]]["precision"]


def test_quick_preset_end_to_end_and_sampling(tmp_path):
    out = str(tmp_path / "run")
    results = _run("--preset=quick", "--tiny", f"--output_dir={out}", "--verbose=0")
    with open(os.path.join(out, "results.json")) as f:
        saved = json.load(f)
    assert saved["test_bpc"] == pytest.approx(results["test_bpc"])
    assert 0 < saved["test_bpc"] < 6
    assert saved["true_entropy_rate_bits_per_char"] == pytest.approx(0.768, abs=0.01)
    assert len(saved["z_rates"]) == 2 and len(saved["boundary_scores"]) == 2
    for key in ("boundary_scores", "boundary_scores_tolerance_1"):
        for layer in saved[key]:  # every layer vs the words, both alignments
            _check_aligned(layer)
    for key in ("phrase_boundary_scores", "phrase_boundary_scores_tolerance_1"):
        assert saved[key]["layer"] == 2
        _check_aligned(saved[key])
    with open(os.path.join(out, "segmentation.png"), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    for name in ("vocabulary.json", "model_config.json", "step_model/saved_model.pb"):
        assert os.path.exists(os.path.join(out, name)), name
    assert os.listdir(os.path.join(out, "logs"))  # TensorBoard event file
    sample = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "sample.py"),
         f"--model_dir={out}/step_model", "--length=40", "--seed=1",
         "--temperature=0.8", "--prime=qi "],
        capture_output=True, text=True, check=True, cwd=ROOT)
    text = sample.stdout.strip("\n")
    assert text.startswith("qi ") and len(text) == 43


@pytest.mark.parametrize("cell", ["lstm", "mlstm"])
def test_non_hierarchical_cells_end_to_end(tmp_path, cell):
    out = str(tmp_path / cell)
    results = _run("--preset=quick", "--tiny", f"--cell={cell}", "--max_epochs=1",
                   "--synthetic_train_chars=900", f"--output_dir={out}", "--verbose=0")
    assert "z_rates" not in results and 0 < results["test_bpc"] < 6
    assert os.path.exists(os.path.join(out, "segmentation.png"))


@pytest.mark.parametrize("randomness", [
    [],
    # Random boundaries and dropout: the seed-generator states resume too.
    ["--boundary_mode=sample", "--dropout=0.1", "--recurrent_dropout=0.1"],
], ids=["deterministic", "sampled"])
def test_resume_reproduces_uninterrupted_run(tmp_path, randomness):
    """Stop at step 5 (mid epoch 1), resume in a new model to step 16 (into
    epoch 2: state reset, slope 1.5): the same per-step losses as a run
    that was never interrupted."""
    common = ["--preset=quick", "--tiny", "--synthetic_train_chars=900",
              "--max_epochs=2", "--verbose=0", "--save_every=1000", *randomness]
    straight, resumed = str(tmp_path / "a"), str(tmp_path / "b")
    assert _run(*common, "--max_steps=16", f"--output_dir={straight}") is None
    assert _run(*common, "--max_steps=5", f"--output_dir={resumed}") is None
    progress = json.load(open(os.path.join(resumed, "checkpoints/latest/progress.json")))
    assert (progress["epoch"], progress["batch"]) == (0, 5)
    assert _run(*common, "--max_steps=16", f"--output_dir={resumed}") is None
    a, b = _steps(straight), _steps(resumed)
    assert [s["step"] for s in b] == list(range(1, 17))
    assert [(s["epoch"], s["batch"]) for s in a] == [(s["epoch"], s["batch"]) for s in b]
    assert a[-1]["epoch"] == 1  # the runs crossed an epoch boundary
    for x, y in zip(a, b):
        assert x["bpc"] == pytest.approx(y["bpc"], rel=1e-5, abs=1e-6), x["step"]


@pytest.mark.parametrize("flag,value,allowed", [
    ("cell", "gru", "'hmlstm'"),
    ("dataset", "wiki", "'ptb_char'"),
    ("preset", "fast", "'quick'"),
    ("output", "fancy", "'simple'"),
    ("boundary_mode", "round", "'sample'"),
])
def test_bad_flag_values_name_flag_and_choices(flag, value, allowed):
    with pytest.raises(ValueError, match=f"--{flag} must be one of .*{allowed}"):
        _settings(f"--{flag}={value}")


def test_hierarchical_options_refused_for_other_cells():
    for flag in ("--layer_norm", "--nolayer_norm", "--boundary_rate_weight=1",
                 "--boundary_rate_targets=0.2,0.1", "--boundary_bias=1"):
        name = flag.lstrip("-").split("=")[0].replace("nolayer", "layer")
        with pytest.raises(ValueError, match=f"--{name} applies to the hierarchical cells"):
            _settings("--cell=lstm", flag)
    with pytest.raises(ValueError, match="--boundary_mode applies"):
        _settings("--cell=mlstm", "--boundary_mode=soft")
    with pytest.raises(ValueError, match="--num_layers must be 1"):
        _settings("--cell=mlstm", "--num_layers=2")
    # From a preset they are dropped (back to their defaults).
    s = _settings("--preset=quick", "--cell=lstm")
    assert s["top_down"] is True and s["boundary_rate_targets"] is None


def test_presets_and_explicit_flags():
    s = _settings("--preset=hutter_mlstm")
    assert (s["cell"], s["units"], s["embedding_dim"], s["weight_norm"],
            s["dropout"], s["dataset"], s["num_layers"]) == (
        "mlstm", 1900, 400, True, 0.2, "enwik8", 1)
    s = _settings("--preset=ptb", "--units=64", "--no_top_down")
    assert (s["units"], s["output_units"], s["top_down"], s["layer_norm"]) == (
        64, 512, False, True)
    assert s["output_dir"] == os.path.join("runs", "ptb_hmlstm")


# ------------------------------------------------------- --dataset=text_file

BOOK = "the cat sat on the mat.\nA dog ran in the fog, then sat.\n" * 40  # 2,200 chars


def _book(tmp_path, name="book.txt", content=BOOK):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return str(path)


def test_text_file_end_to_end(tmp_path, capsys):
    out = str(tmp_path / "run")
    results = _run("--preset=quick", "--tiny", "--dataset=text_file",
                   f"--text_file={_book(tmp_path)}", "--valid_fraction=0.1",
                   f"--output_dir={out}", "--verbose=0")
    with open(os.path.join(out, "results.json")) as f:
        saved = json.load(f)
    assert saved["dataset"] == "text_file" and 0 < saved["test_bpc"] < 8
    assert saved["test_symbols"] == round(len(BOOK) * 0.05)
    assert len(saved["boundary_scores"]) == 2
    for layer in saved["boundary_scores"] + saved["boundary_scores_tolerance_1"]:
        _check_aligned(layer)
    assert "phrase_boundary_scores" not in saved  # no phrase reference here
    assert results["boundary_scores"][0]["num_reference"] > 0
    printed = capsys.readouterr().out
    assert "z^1 vs words: P " in printed and "(aligned on: " in printed


def test_text_file_flags(tmp_path):
    with pytest.raises(ValueError, match="--dataset=text_file needs --text_file=PATH"):
        _settings("--dataset=text_file")
    with pytest.raises(ValueError, match="--text_file applies to --dataset=text_file only. "
                                         "Received: --dataset=synthetic --text_file='a.txt'"):
        _settings("--preset=quick", "--text_file=a.txt")
    with pytest.raises(ValueError, match="--test_fraction applies to --dataset=text_file"):
        _settings("--dataset=ptb_char", "--test_fraction=0.1")
    with pytest.raises(ValueError, match="--valid_fraction applies only without --valid_file"):
        _settings("--dataset=text_file", "--text_file=a.txt", "--valid_file=b.txt",
                  "--valid_fraction=0.1")
    s = _settings("--dataset=text_file", "--text_file=a.txt")
    assert (s["valid_fraction"], s["test_fraction"]) == (0.05, 0.05)
    assert s["output_dir"] == os.path.join("runs", "text_file_hmlstm")


@pytest.mark.parametrize("content,flags,match", [
    (None, [], r"^--text_file not found: '.*missing.txt' does not exist"),
    ("dir", [], r"^--text_file must be a file; '.*' is a directory"),
    (b"", [], r"^--text_file '.*' is empty"),
    (b"abc\xe9def", [], r"^--text_file must be UTF-8 text; .*at byte offset 3"),
    (BOOK, ["--valid_fraction=1.5"], r"^--valid_fraction must be in \(0, 1\). Received: 1.5"),
    (BOOK, ["--valid_fraction=0.5", "--test_fraction=0.5"],
     r"^--valid_fraction \+ --test_fraction must be below 1"),
    (BOOK, ["--test_fraction=0.0001"], r"^The test part of --text_file is empty"),
    (BOOK + "\u00e9", [], r"^The test part of --text_file \(--test_fraction=0.05\) holds "
                         r"1 symbol\(s\) absent from the training text.*\['\u00e9'\]"),
], ids=["missing", "directory", "empty", "not_utf8", "fraction", "sum", "empty_split",
        "unknown_symbol"])
def test_text_file_bad_input_names_the_flag(tmp_path, content, flags, match):
    if content is None:
        path = str(tmp_path / "missing.txt")
    elif content == "dir":
        path = str(tmp_path)
    else:
        path = _book(tmp_path, content=content)
    s = _settings("--dataset=text_file", f"--text_file={path}", *flags)
    with pytest.raises(ptb_char.FlagError, match=match):
        ptb_char.load_texts(s)


def test_text_file_separate_files(tmp_path):
    valid = _book(tmp_path, "valid.txt", "the dog sat.\n")
    s = _settings("--dataset=text_file", f"--text_file={_book(tmp_path)}",
                  f"--valid_file={valid}")
    texts, reference, _ = ptb_char.load_texts(s)
    assert texts["validation"] == "the dog sat.\n"
    assert texts["train"] + texts["test"] == BOOK
    words = reference("test", "ab cd\n")["words"]
    assert words["separator"].tolist() == [0, 0, 1, 0, 0, 1]
    assert words["last_char"].tolist() == [0, 1, 0, 0, 1, 0]
    test = _book(tmp_path, "test.txt", "the \u00fc cat.\n")
    s = _settings("--dataset=text_file", f"--text_file={_book(tmp_path)}",
                  f"--test_file={test}")
    with pytest.raises(ptb_char.FlagError, match=r"^--test_file holds 1 symbol\(s\)"):
        ptb_char.load_texts(s)


def test_main_reports_a_bad_flag_in_one_line(tmp_path):
    FLAGS.unparse_flags()
    FLAGS(["ptb_char", "--dataset=text_file", f"--text_file={tmp_path / 'nope.txt'}"])
    with pytest.raises(SystemExit) as exit_info:
        ptb_char.main(["ptb_char"])
    message = str(exit_info.value.code)
    assert "--text_file not found" in message and "\n" not in message
    FLAGS.unparse_flags()
    FLAGS(["ptb_char", "--cell=gru"])
    with pytest.raises(SystemExit, match="--cell must be one of"):
        ptb_char.main(["ptb_char"])
