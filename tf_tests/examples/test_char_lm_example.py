"""Tests of examples/ptb_char.py and examples/sample.py (tiny runs)."""

import dataclasses
import json
import os
import subprocess
import sys

from absl import flags
import h5py
import numpy as np
import pytest

import hmkeras
from hmkeras.models.char_language_model import CharLanguageModel
from example_modules import ROOT, example_settings, load_example, run_ptb_char

ptb_char = load_example("ptb_char")
# examples/char_lm_flags.py, the flags, presets and corpora of ptb_char.py
# (imported by it, with its flags).
char_lm_flags = sys.modules["char_lm_flags"]
FLAGS = ptb_char.FLAGS


def _settings(*args):
    return example_settings("ptb_char", *args)


_run = run_ptb_char


def _steps(output_dir):
    with open(os.path.join(output_dir, "steps.jsonl")) as f:
        return [json.loads(line) for line in f]


def _progress(output_dir):
    with open(os.path.join(output_dir, "checkpoints", "latest", "progress.json")) as f:
        return json.load(f)


# The embedded corpus' units are also scored on the last separator before
# the next unit (after ", ").
SYNTHETIC_ALIGNMENTS = ("separator", "last_char", "last_separator")


def saved_test_text(output_dir):
    """The test split of a --preset=quick --tiny run's embedded corpus."""
    with open(os.path.join(output_dir, "settings.json")) as f:
        s = json.load(f)
    corpus = hmkeras.data.SyntheticHierarchicalCorpus(
        seed=s["seed"], train_chars=s["synthetic_train_chars"],
        valid_chars=s["synthetic_valid_chars"], test_chars=s["synthetic_test_chars"])
    return corpus.text("test")


def _check_aligned(scores, alignments=("separator", "last_char")):
    """An `AlignedBoundaryScores.as_dict()`: headline = the best alignment."""
    by = scores["by_alignment"]
    assert set(by) == set(alignments)
    assert scores["alignment"] in by
    assert scores["f1"] == by[scores["alignment"]]["f1"] == max(v["f1"] for v in by.values())
    assert scores["precision"] == by[scores["alignment"]]["precision"]


@pytest.mark.slow
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
        for layer in saved[key]:  # every layer vs the words, every alignment
            _check_aligned(layer, SYNTHETIC_ALIGNMENTS)
    for key in ("phrase_boundary_scores", "phrase_boundary_scores_tolerance_1"):
        assert saved[key]["layer"] == 2
        _check_aligned(saved[key], SYNTHETIC_ALIGNMENTS)
    # Word tokens and the marked excerpt of the test text.
    assert 0 <= saved["token_scores"]["f1"] <= 1 and saved["token_scores"]["num_reference"] > 0
    assert saved["segment_excerpt"].replace("|", "").replace("\u2016", "") in saved_test_text(out)
    with open(os.path.join(out, "segmentation.png"), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    for name in ("vocabulary.json", "model_config.json", "step_model/saved_model.pb"):
        assert os.path.exists(os.path.join(out, name)), name
    assert os.listdir(os.path.join(out, "logs"))  # TensorBoard event file
    # sample.py takes the run directory (it finds step_model/ inside) ...
    sample = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "sample.py"),
         f"--model_dir={out}", "--length=40", "--seed=1",
         "--temperature=0.8", "--prime=qi "],
        capture_output=True, text=True, check=True, cwd=ROOT)
    text = sample.stdout.strip("\n")
    assert text.startswith("qi ") and len(text) == 43
    # ... or the step model itself; --length=0 prints nothing.
    nothing = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "sample.py"),
         f"--model_dir={out}/step_model", "--length=0"],
        capture_output=True, text=True, check=True, cwd=ROOT)
    assert nothing.stdout == ""
    # The handwriting sampler refuses a char-LM run in one line naming the
    # flag and what it found ...
    refused = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "sample_handwriting.py"),
         f"--model_dir={out}"], capture_output=True, text=True, cwd=ROOT)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
    assert (f"--model_dir={out!r} holds a run of examples/ptb_char.py" in refused.stderr
            and "reads runs of examples/iam_ondb.py" in refused.stderr)
    # ... and, without the marker (a run written before it), from the model.
    os.remove(os.path.join(out, "run_kind.json"))
    with pytest.raises(ptb_char.FlagError, match="without stroke offsets"):
        load_example("sample_handwriting").draw(out, 5, 1, 1.0, 1.0, 0)


@pytest.mark.slow
@pytest.mark.parametrize("cell", ["lstm", "mlstm"])
def test_non_hierarchical_cells_end_to_end(tmp_path, cell):
    out = str(tmp_path / cell)
    results = _run("--preset=quick", "--tiny", f"--cell={cell}", "--max_epochs=1",
                   "--synthetic_train_chars=900", f"--output_dir={out}", "--verbose=0")
    assert "z_rates" not in results and 0 < results["test_bpc"] < 6
    assert os.path.exists(os.path.join(out, "segmentation.png"))


@pytest.mark.slow
# Random boundaries and dropout: the seed-generator states resume too (the
# deterministic run's resume: `test_char_lm_on_jax.py` and the kill test).
@pytest.mark.parametrize("randomness", [
    ["--boundary_mode=sample", "--dropout=0.1", "--recurrent_dropout=0.1"],
], ids=["sampled"])
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
    # The run's seconds add up over both processes.
    assert _progress(resumed)["seconds"] > progress["seconds"] > 0
    # Epoch 1's logged training BPC is the mean over its 11 batches, the
    # resumed one's too (not over the 6 after the resume).
    a, b = _steps(straight), _steps(resumed)
    epoch_1 = [x["bpc"] for x in a if x["epoch"] == 0]
    assert len(epoch_1) == 11
    for run_dir in (straight, resumed):
        assert _progress(run_dir)["history"][0]["bpc"] == pytest.approx(
            sum(epoch_1) / 11, rel=1e-5)
    assert [s["step"] for s in b] == list(range(1, 17))
    assert [(s["epoch"], s["batch"]) for s in a] == [(s["epoch"], s["batch"]) for s in b]
    assert a[-1]["epoch"] == 1  # the runs crossed an epoch boundary
    for x, y in zip(a, b):
        assert x["bpc"] == pytest.approx(y["bpc"], rel=1e-5, abs=1e-6), x["step"]


@pytest.mark.parametrize("flag,value,allowed", [
    ("cell", "gru", "hmlstm|hmrnn"),
    ("dataset", "wiki", "ptb_char"),
    ("preset", "fast", "quick"),
    ("output", "fancy", "simple"),
    ("boundary_mode", "round", "sample"),
])
def test_bad_flag_values_name_flag_and_choices(flag, value, allowed):
    # absl refuses them while parsing (DEFINE_enum); see test_example_flags.py
    # for the one line the script prints.
    with pytest.raises(flags.IllegalFlagValueError,
                       match=f"--{flag}={value}: value should be one of <.*{allowed}"):
        _settings(f"--{flag}={value}")


def test_enumerated_flags_match_the_library():
    from hmkeras.cells import boundary_placement
    from hmkeras.cells import hierarchical_cell
    from hmkeras.cells import straight_through
    from hmkeras.models import char_language_model

    assert char_lm_flags.CELLS == char_language_model.CELLS
    assert char_lm_flags.OUTPUTS == char_language_model.OUTPUTS
    assert char_lm_flags.BOUNDARY_MODES == hierarchical_cell.BOUNDARY_MODES
    assert char_lm_flags.BOUNDARY_GRADIENTS == straight_through.GRADIENTS
    assert char_lm_flags.BOUNDARY_INPUTS == hierarchical_cell.BOUNDARY_INPUTS
    assert char_lm_flags.RISE_PLACEMENTS == boundary_placement.RISE_FORMS
    assert char_lm_flags.RISE_FRACTION == boundary_placement.RISE_FRACTION
    assert set(char_lm_flags.MODEL_FLAGS) <= set(FLAGS)


def test_hierarchical_options_refused_for_other_cells():
    for flag in ("--layer_norm", "--nolayer_norm", "--boundary_prior=rate",
                 "--segment_lengths=5,15", "--boundary_bias=1", "--boundary_placement=none"):
        name = flag.lstrip("-").split("=")[0].replace("nolayer", "layer")
        with pytest.raises(ValueError, match=f"--{name} applies to the hierarchical cells"):
            _settings("--cell=lstm", flag)
    with pytest.raises(ValueError, match="--boundary_mode applies"):
        _settings("--cell=mlstm", "--boundary_mode=soft")
    with pytest.raises(ValueError, match="--num_layers must be 1"):
        _settings("--cell=mlstm", "--num_layers=2")
    # From a preset they are dropped (back to their defaults).
    s = _settings("--preset=quick", "--cell=lstm")
    assert s["top_down"] is True and s["segment_lengths"] is None
    assert s["boundary_prior"] == "rate" and s["boundary_placement"] == "none"


def test_placement_flag_makes_the_model_field():
    # Default: the prior and its placement; --boundary_placement=none: the
    # prior alone; --boundary_prior=none: the papers' model, no placement.
    assert char_lm_flags.model_config(_settings(), 30).boundary_placement == "entropy"
    config = char_lm_flags.model_config(_settings("--boundary_placement=none"), 30)
    assert (config.boundary_prior, config.boundary_placement) == ("rate", None)
    s = _settings("--boundary_prior=none")
    assert s["boundary_placement"] == "none"
    config = char_lm_flags.model_config(s, 30)
    assert (config.boundary_prior, config.boundary_placement) == (None, None)


def test_upper_layers_flag_makes_the_model_field_and_needs_a_placement():
    # Default: z^1's placement only, in the configuration and the model;
    # --placement_upper_layers places the layers above too, refused without
    # a placement; --unsegmented runs place every layer unless told.
    from command_line import FlagError

    assert char_lm_flags.model_config(_settings(), 30).placement_upper_layers is False
    lm = CharLanguageModel(dataclasses.replace(
        char_lm_flags.model_config(_settings(), 30), units=4, output_units=4, embedding_dim=2))
    assert lm.boundary_placement.get_config()["upper_layers"] is False
    config = char_lm_flags.model_config(_settings("--placement_upper_layers"), 30)
    assert config.placement_upper_layers is True
    for flag in ("--boundary_placement=none", "--boundary_prior=none"):
        with pytest.raises(FlagError, match=f"no placement .*Received: {flag} --placement_upper"):
            _settings(flag, "--placement_upper_layers")
        assert _settings(flag)["placement_upper_layers"] is False
    assert _settings("--dataset=brent_phonemes")["placement_upper_layers"] is True
    assert _settings("--dataset=brent_phonemes", "--noplacement_upper_layers")[
        "placement_upper_layers"] is False


def test_nested_boundaries_flag_defaults_and_cell_option():
    # Nested beside the prior on text with spaces; not in the papers' model
    # nor on --unsegmented runs, unless given; a cell option of the model.
    from command_line import FlagError

    assert _settings()["nested_boundaries"] is True
    config = char_lm_flags.model_config(_settings(), 30)
    assert config.cell_options["nested_boundaries"] is True
    lm = CharLanguageModel(dataclasses.replace(config, units=4, output_units=4, embedding_dim=2))
    assert lm.hierarchical_cell.nested_boundaries is True
    assert _settings("--boundary_prior=none")["nested_boundaries"] is False
    assert _settings("--dataset=brent_phonemes")["nested_boundaries"] is False
    assert _settings("--dataset=brent_phonemes", "--nested_boundaries")["nested_boundaries"] is True
    assert _settings("--nonested_boundaries")["nested_boundaries"] is False
    with pytest.raises(FlagError, match="--nested_boundaries applies to the hierarchical"):
        _settings("--cell=lstm", "--nested_boundaries")
    assert "nested_boundaries" not in char_lm_flags.model_config(
        _settings("--cell=lstm"), 30).cell_options


def test_run_made_before_the_nesting_resumes_only_as_what_it_was(tmp_path):
    # settings.json of a run made before --nested_boundaries (and the
    # default of --placement_upper_layers) changed: every layer placed, not
    # nested. The defaults are another model (refused, naming the flags);
    # --placement_upper_layers --nonested_boundaries resumes it.
    from command_line import FlagError
    from run_directory import write_run_kind

    out = str(tmp_path / "old_run")
    old = _settings(f"--output_dir={out}", "--placement_upper_layers",
                    "--nonested_boundaries")
    os.makedirs(out)
    write_run_kind(out, "char_lm")
    with open(os.path.join(out, "settings.json"), "w") as f:
        json.dump({k: v for k, v in old.items()
                   if k not in ("placement_upper_layers", "nested_boundaries")}, f)
    with pytest.raises(FlagError, match="nested_boundaries|placement_upper_layers"):
        char_lm_flags.prepare_output_dir(_settings(f"--output_dir={out}"), kind="char_lm")
    assert char_lm_flags.prepare_output_dir(old, kind="char_lm") == ()


def test_run_made_before_the_placement_resumes_only_as_what_it_was(tmp_path):
    # settings.json of a run made before --boundary_placement existed: it
    # trained the prior alone. The default flags are another model (refused,
    # naming the flag); --boundary_placement=none resumes it.
    from command_line import FlagError
    from run_directory import write_run_kind

    out = str(tmp_path / "old_run")
    s = _settings(f"--output_dir={out}")
    os.makedirs(out)
    write_run_kind(out, "char_lm")
    old = {k: v for k, v in s.items() if k != "boundary_placement"}
    with open(os.path.join(out, "settings.json"), "w") as f:
        json.dump(old, f)
    with pytest.raises(FlagError, match=r"boundary_placement.*none.*entropy"):
        char_lm_flags.prepare_output_dir(s, kind="char_lm")
    resumed = _settings(f"--output_dir={out}", "--boundary_placement=none")
    assert char_lm_flags.prepare_output_dir(resumed, kind="char_lm") == ()


def test_flags_fill_the_cell_options_of_the_chosen_cell():
    """The model flags that are the cell's arguments become `cell_options`,
    those of the chosen cell only; the model's own stay fields."""
    hm = dict(boundary_mode="step", slope=1.0, boundary_gradient="hard_sigmoid",
              boundary_input="previous", layer_norm=True, top_down=True, boundary_bias=0.0,
              nested_boundaries=True, dropout=0.0, recurrent_dropout=0.0)
    config = char_lm_flags.model_config(
        _settings("--cell=hmrnn", "--nolayer_norm", "--slope=2", "--dropout=0.1",
                  "--boundary_mode=soft", "--l2=0.5"), 30)
    assert config.cell_options == dict(hm, slope=2.0, layer_norm=False, dropout=0.1,
                                       boundary_mode="soft")
    assert (config.cell, config.vocab_size, config.l2) == ("hmrnn", 30, 0.5)
    config = char_lm_flags.model_config(_settings("--copy_last", "--no_top_down"), 30)
    assert config.cell_options == dict(hm, copy_last=True, top_down=False)
    config = char_lm_flags.model_config(_settings("--preset=hutter_mlstm"), 30)
    assert config.cell_options == dict(weight_normalization=True, dropout=0.2,
                                       recurrent_dropout=0.2)
    config = char_lm_flags.model_config(
        _settings("--cell=mlstm", "--multiplicative_units=6"), 30)
    assert config.cell_options["multiplicative_units"] == 6
    config = char_lm_flags.model_config(_settings("--cell=lstm", "--recurrent_dropout=0.3"), 30)
    assert config.cell_options == dict(dropout=0.0, recurrent_dropout=0.3)
    # CopyLast is the HM-LSTM's: refused for the HM-RNN before TensorFlow loads.
    with pytest.raises(ValueError, match="--copy_last applies to --cell=hmlstm only"):
        _settings("--cell=hmrnn", "--copy_last")
    assert char_lm_flags.model_config(
        _settings("--cell=hmrnn", "--copy_last=false"), 30).cell_options == hm


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


@pytest.mark.slow
def test_text_file_end_to_end(tmp_path, capsys, monkeypatch):
    """A text file whose test part holds symbols the training text lacks:
    it trains and is scored (default --vocabulary=unknown, the mapped
    symbols counted), writes nothing outside its --output_dir, and a rerun
    returns the finished run unless a flag asks for more training."""
    tail = "Xe! the cat sat. \u00e9t\u00e9!\n"
    content = BOOK + tail  # the test part (5 %) ends with the new symbols
    out, cwd = str(tmp_path / "run"), tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    command = ["--preset=quick", "--tiny", "--dataset=text_file",
               f"--text_file={_book(tmp_path, content=content)}", "--valid_fraction=0.1",
               f"--output_dir={out}", "--verbose=0"]
    results = _run(*command)
    assert os.listdir(cwd) == [] and sorted(os.listdir(tmp_path)) == ["book.txt", "cwd", "run"]
    with open(os.path.join(out, "results.json")) as f:
        saved = json.load(f)
    assert saved == json.loads(json.dumps(results))
    assert saved["dataset"] == "text_file" and 0 < saved["test_bpc"] < 20
    cut = len(content) - round(len(content) * 0.05)
    train, test = content[: cut - round(len(content) * 0.1)], content[cut:]
    assert saved["test_symbols"] == len(test)
    new = [c for c in test if c not in set(train)]
    assert len(new) == 5 and set(new) == {"X", "!", "\u00e9"}
    assert saved["unknown_symbols"]["test"] == {"count": 5, "symbols": ["!", "X", "\u00e9"]}
    vocab = json.load(open(os.path.join(out, "vocabulary.json")))
    assert vocab["unknown_symbol"] == "\ufffd" and "\ufffd" in vocab["symbols"]
    assert len(saved["boundary_scores"]) == 2
    for layer in saved["boundary_scores"] + saved["boundary_scores_tolerance_1"]:
        _check_aligned(layer)
    assert "phrase_boundary_scores" not in saved  # no phrase reference here
    assert results["boundary_scores"][0]["num_reference"] > 0
    printed = capsys.readouterr().out
    assert "z^1 vs words: P " in printed and "(aligned on: " in printed
    assert (f"test BPC {saved['test_bpc']:.4f} (5 of the {len(test)} test symbols are "
            "unknown to the training text, scored as the unknown symbol)") in printed
    assert "unknown symbols in test: 5 mapped to the unknown symbol" in printed
    assert 0 < saved["wall_seconds"] and saved["stopped_early"] is False
    # A rerun of the finished run reports it and rewrites nothing ...
    before = open(os.path.join(out, "results.json"), "rb").read()
    again = _run(*command)
    assert open(os.path.join(out, "results.json"), "rb").read() == before
    assert again == saved
    printed = capsys.readouterr().out
    assert f"{out} holds a finished run (1 epochs); its results, unchanged" in printed
    assert f"test BPC {saved['test_bpc']:.4f}" in printed and "Epoch " not in printed
    # ... unless a flag asks for more training; the run's seconds add up.
    more = _run(*command, "--max_epochs=2")
    assert more["epochs"] == 2 and more["wall_seconds"] > saved["wall_seconds"]
    assert "Epoch 2/2: " in capsys.readouterr().out


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
    assert s["output_dir"] == os.path.join("runs", "text_file_a_hmlstm")


def test_default_output_dir_names_the_data():
    """The main job keeps runs/quick_hmlstm; own text with the same preset
    gets a directory of its own (the file's stem in it), so does another
    dataset under a preset."""
    main = _settings("--preset=quick")["output_dir"]
    assert main == os.path.join("runs", "quick_hmlstm")
    own = _settings("--preset=quick", "--dataset=text_file", "--text_file=d/my book.txt")
    assert own["output_dir"] == os.path.join("runs", "quick_text_file_my_book_hmlstm")
    other = _settings("--preset=quick", "--dataset=ptb_char", "--cell=lstm")
    assert other["output_dir"] == os.path.join("runs", "quick_ptb_char_lstm")
    assert _settings("--preset=ptb")["output_dir"] == os.path.join("runs", "ptb_hmlstm")


def test_tiny_shrinks_a_text_file(tmp_path):
    book = _book(tmp_path, content=BOOK * 4)  # 8,800 characters
    texts, _, _ = ptb_char.load_texts(_settings(
        "--preset=quick", "--tiny", "--dataset=text_file", f"--text_file={book}"))
    assert "".join(texts[k] for k in ("train", "validation", "test")) == (BOOK * 4)[:3000]
    texts, _, _ = ptb_char.load_texts(_settings(
        "--preset=quick", "--dataset=text_file", f"--text_file={book}"))
    assert sum(len(t) for t in texts.values()) == len(BOOK) * 4
    with pytest.raises(ValueError, match="--text_chars applies to --dataset=text_file"):
        _settings("--preset=quick", "--text_chars=10")


@pytest.mark.parametrize("content,flags,match", [
    (None, [], r"^--text_file not found: '.*missing.txt' does not exist"),
    ("dir", [], r"^--text_file must be a file; '.*' is a directory"),
    (b"", [], r"^--text_file '.*' is empty"),
    (b"abc\xe9def", [], r"^--text_file must be UTF-8 text; .*at byte offset 3"),
    (BOOK, ["--valid_fraction=0.5", "--test_fraction=0.5"],
     r"^--valid_fraction \+ --test_fraction must be below 1"),
    (BOOK, ["--test_fraction=0.0001"], r"^The test part of --text_file is empty"),
    (BOOK + "\u00e9", ["--vocabulary=strict"],
     r"^The test part of --text_file \(--test_fraction=0.05\) holds "
     r"1 symbol\(s\) absent from the training text.*\['\u00e9'\]"),
], ids=["missing", "directory", "empty", "not_utf8", "sum", "empty_split",
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
                  f"--test_file={test}", "--vocabulary=strict")
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
    FLAGS(["ptb_char", "--cell=hmrnn", "--num_layers=1"])
    with pytest.raises(SystemExit, match="--num_layers must be at least 2"):
        ptb_char.main(["ptb_char"])
    # keras.distribution is JAX's: refused on TensorFlow before any file is made.
    FLAGS.unparse_flags()
    FLAGS(["ptb_char", "--preset=quick", "--tiny", "--data_parallel",
           f"--output_dir={tmp_path / 'split'}"])
    with pytest.raises(SystemExit) as exit_info:
        ptb_char.main(["ptb_char"])
    message = str(exit_info.value.code)
    assert ": --data_parallel splits the batches with keras.distribution" in message
    assert "tensorflow backend" in message and "\n" not in message
    assert not (tmp_path / "split").exists()


# ------------------------------------------------ reruns, failures, progress

def _main(*args):
    """The command line, in this process: the message it exits with, or None."""
    FLAGS.unparse_flags()
    FLAGS(["ptb_char", *args])
    try:
        ptb_char.main(["ptb_char"])
    except SystemExit as done:
        return str(done.code)
    return None


TINY_RUN = ["--preset=quick", "--tiny", "--synthetic_train_chars=900", "--max_epochs=2",
            "--save_every=1000"]


@pytest.mark.slow
def test_rerun_with_another_model_is_refused_until_overwrite(tmp_path):
    out = str(tmp_path / "run")
    assert _main(*TINY_RUN, "--max_steps=2", "--verbose=0", f"--output_dir={out}") is None
    settings = json.load(open(os.path.join(out, "settings.json")))
    for flags_now, listed in [
        (["--units=8"], "--units 16 -> 8"),
        (["--cell=hmrnn", "--nolayer_norm"], "--cell hmlstm -> hmrnn, --layer_norm true -> false"),
        (["--batch_size=2", "--learning_rate=0.01"], "--batch_size 4 -> 2"),
    ]:
        message = _main(*TINY_RUN, "--max_steps=4", "--verbose=0", f"--output_dir={out}",
                        *flags_now)
        assert message is not None and "\n" not in message, message
        assert listed in message and "--learning_rate" not in message
        assert "new --output_dir" in message and "--overwrite" in message
    # Nothing was touched: the run still resumes where it stopped.
    assert json.load(open(os.path.join(out, "settings.json"))) == settings
    assert [s["step"] for s in _steps(out)] == [1, 2]
    # --overwrite deletes the old run and starts afresh with the new model.
    assert _main(*TINY_RUN, "--max_steps=3", "--verbose=0", f"--output_dir={out}",
                 "--units=8", "--overwrite") is None
    assert json.load(open(os.path.join(out, "settings.json")))["units"] == 8
    assert [s["step"] for s in _steps(out)] == [1, 2, 3]
    # --overwrite refuses to delete a directory that is not a run.
    other = tmp_path / "not_a_run"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    message = _main(*TINY_RUN, f"--output_dir={other}", "--overwrite")
    assert "is not one" in message and (other / "notes.txt").exists()
    # A run on other data is another job's: no suggestion to delete it.
    book = _book(tmp_path)
    message = _main(*TINY_RUN, "--dataset=text_file", f"--text_file={book}",
                    f"--output_dir={out}")
    assert (f"--output_dir={out!r} holds a run on other data "
            "(--dataset synthetic -> text_file") in message
    assert "--overwrite" not in message and "\n" not in message


@pytest.mark.slow
def test_rerun_with_training_flags_resumes_with_true_epoch_headers(tmp_path, capsys):
    """11 batches per epoch: stop at step 5, resume with another learning rate
    up to step 16 (into epoch 2); every epoch line says what it trains."""
    out = str(tmp_path / "run")
    assert _main(*TINY_RUN, "--max_steps=5", "--verbose=2", f"--output_dir={out}") is None
    first = capsys.readouterr().out
    assert "Epoch 1/2: batches 1-5 of 11 (5 steps, then --max_steps=5 stops the run)" in first
    assert "\n5/5 - " in first and "11/11" not in first  # Keras' bar: the steps run
    assert "Stopped at step 5 (--max_steps=5)" in first
    assert _main(*TINY_RUN, "--max_steps=16", "--verbose=2", "--learning_rate=0.001",
                 f"--output_dir={out}") is None
    second = capsys.readouterr().out
    assert ("flags changed since the last run, the model is the same and the run "
            "resumes: --learning_rate 0.003 -> 0.001, --max_steps 5 -> 16.") in second
    assert "Learning rate now 0.001" in second
    assert "Epoch 1/2: batches 6-11 of 11 (6 steps, resumed)" in second
    assert "\n6/6 - " in second
    assert "Epoch 2/2: batches 1-5 of 11 (5 steps, then --max_steps=16 stops the run)" in second
    lines = second.splitlines()
    assert not [line for line in lines if line.startswith("Epoch 2/2") and ":" not in line]
    assert sum(line.startswith("Epoch ") for line in lines) == 2  # one per epoch
    assert [s["step"] for s in _steps(out)] == list(range(1, 17))
    assert json.load(open(os.path.join(out, "settings.json")))["learning_rate"] == 0.001


@pytest.mark.slow
def test_non_finite_loss_stops_with_the_last_good_checkpoint_intact(tmp_path):
    """A learning rate of 1e30 makes step 2's loss NaN: the run stops in one
    line naming the step and the checkpoint of step 1, which stays as saved
    (finite, at batch 1); no NaN reaches steps.jsonl or a checkpoint."""
    out = str(tmp_path / "run")
    message = _main(*TINY_RUN, "--learning_rate=1e30", "--save_every=1", "--verbose=0",
                    f"--output_dir={out}")
    latest = os.path.join(out, "checkpoints", "latest")
    assert message is not None and "\n" not in message, message
    assert "Step 2: the training loss is nan; training stopped" in message
    assert f"the last good checkpoint is {latest} (step 1), untouched" in message
    assert "--learning_rate" in message
    assert [s["step"] for s in _steps(out)] == [1]
    progress = json.load(open(os.path.join(latest, "progress.json")))
    assert (progress["epoch"], progress["batch"]) == (0, 1)
    for name in os.listdir(latest):
        if name.endswith(".h5"):
            with h5py.File(os.path.join(latest, name), "r") as f:
                arrays = []
                f.visititems(lambda _, item: arrays.append(item[()])
                             if isinstance(item, h5py.Dataset) else None)
            assert arrays and all(np.all(np.isfinite(a)) for a in arrays
                                  if np.issubdtype(np.asarray(a).dtype, np.floating))
    assert not os.path.exists(os.path.join(out, "results.json"))


def test_failed_data_load_names_the_flags_and_leaves_no_empty_dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("HMKERAS_OFFLINE", "1")
    root = tmp_path / "new"
    message = _main("--tiny", "--dataset=ptb_char", "--nodownload",
                    f"--data_dir={root / 'data'}", f"--output_dir={root / 'out'}")
    assert "raw files not found" in message
    assert "(--nodownload)" in message and "--manual_dir=DIR" in message
    assert f"{root / 'data'}  (--data_dir)" in message
    assert "allow_download" not in message and "load_char_corpus" not in message
    assert not root.exists()  # neither the output nor TFDS' folders are left


@pytest.mark.slow
def test_rerun_on_changed_data_is_refused(tmp_path):
    """Same flags, but the --text_file gained symbols: model_config.json
    (vocab_size) differs, so the checkpoint cannot be resumed."""
    out, book = str(tmp_path / "run"), _book(tmp_path)
    common = ["--preset=quick", "--tiny", "--dataset=text_file", f"--text_file={book}",
              "--verbose=0", f"--output_dir={out}"]
    assert _main(*common, "--max_steps=1") is None
    _book(tmp_path, content="XYZ " + BOOK)
    message = _main(*common, "--max_steps=2")
    assert "model_config.json: vocab_size " in message and "--overwrite" in message
    assert "\n" not in message and [s["step"] for s in _steps(out)] == [1]


