"""examples/ptb_char.py --unsegmented: the model never reads a space, the
words it finds are written and scored beside the baselines (and an LSTM of
the same size), the Brent corpus runs through its builder, and bad input
is one error naming the flag."""

import json
import os

from absl import flags
import numpy as np
import pytest

from example_modules import ROOT, example_settings, load_example, run_ptb_char
from hmkeras.cells.boundary_placement import RISE_FRACTION
from hmkeras.models.char_language_model import CharLanguageModel

ptb_char = load_example("ptb_char")
BRENT = os.path.join(os.path.dirname(ROOT), "shared", "data", "brent")
WORDS = ("yu", "want", "tu", "si", "D6", "bUk", "lUk", "hIz", "&nd", "dOgi")


def _lines(count, seed):
    rng = np.random.default_rng(seed)
    return "".join(" ".join(rng.choice(WORDS, size=rng.integers(1, 5))) + "\n"
                   for _ in range(count))


def _files(tmp_path, contents=None):
    contents = contents or [_lines(300, 0), _lines(40, 1), _lines(40, 2)]
    paths = []
    for name, content in zip(("tr.txt", "va.txt", "te.txt"), contents):
        if content is not None:
            (tmp_path / name).write_text(content, encoding="utf-8")
        paths.append(str(tmp_path / name))
    return ",".join(paths)


@pytest.mark.slow
def test_unsegmented_text_file_end_to_end(tmp_path, capsys):
    out = str(tmp_path / "run")
    files = _files(tmp_path)
    command = ("--preset=quick", "--tiny", "--dataset=text_file", f"--text_file={files}",
               "--unsegmented", f"--output_dir={out}", "--verbose=0")
    # Made without its baseline, the finished run gets it when the command is
    # run again without --nolstm_baseline; the hierarchy's results stay.
    alone = run_ptb_char(*command, "--nolstm_baseline")
    assert "lstm" not in alone["word_discovery"]
    assert not os.path.exists(os.path.join(out, "lstm_baseline"))
    capsys.readouterr()  # the first run's summary
    results = run_ptb_char(*command)
    assert {k: v for k, v in results["word_discovery"].items()
            if not k.startswith("lstm")} == alone["word_discovery"]
    assert results["test_bpc"] == alone["test_bpc"]
    # The model's vocabulary has no space: it never read one.
    vocab = json.load(open(os.path.join(out, "vocabulary.json")))
    assert " " not in vocab["symbols"] and "\n" in vocab["symbols"]
    gold = open(tmp_path / "te.txt").read().split("\n")[:-1]
    w = results["word_discovery"]
    assert w["primary"] == "z1" and w["scored"] and w["num_utterances"] == 40
    # test_segmented.txt: the test lines, the words found separated by spaces.
    found = open(os.path.join(out, "test_segmented.txt")).read().split("\n")[:-1]
    assert [line.replace(" ", "") for line in found] == [g.replace(" ", "") for g in gold]
    assert w["examples"][0] == {"gold": gold[0], "found": found[0]}
    from hmkeras.analysis.word_discovery import score_segmentation
    assert w["z1"]["boundary"] == score_segmentation(gold, found).as_dict()["boundary"]
    for name in ("z1", "z2", "entropy", "surprisal", "bidirectional", "random",
                 "transition_probability", "lstm", "lstm_surprisal"):
        assert 0.0 <= w[name]["boundary"]["f1"] <= 1.0 and "lexicon" in w[name]
    # The same-size LSTM is a run of its own, resumable, with its own words.
    lstm = json.load(open(os.path.join(out, "lstm_baseline", "results.json")))
    assert lstm["cell"] == "lstm" and w["lstm"]["test_bpc"] == lstm["test_bpc"]
    assert w["lstm"]["boundary"] == lstm["word_discovery"]["entropy"]["boundary"]
    assert w["lstm_surprisal"] == lstm["word_discovery"]["surprisal"]
    assert "lstm" not in lstm["word_discovery"]
    saved = json.load(open(os.path.join(out, "results.json")))
    assert saved["word_discovery"] == json.loads(json.dumps(w))
    assert saved["boundary_scores"] is None  # no spaces to score against
    printed = capsys.readouterr().out  # the second run's: the saved results and the baseline
    assert "made without its LSTM baseline (--nolstm_baseline): adding it" in printed
    assert "word discovery, 40 test utterances (gold boundary rate" in printed
    assert "z^1 (this model)" in printed and "transition probability" in printed
    assert "surprisal rises (this model)" in printed and "LSTM surprisal rises" in printed
    assert "both directions' rises" in printed
    assert f"  {found[0]}  ({gold[0]})" in printed


@pytest.mark.slow
def test_text_without_spaces_trains_and_is_segmented_unscored(tmp_path, capsys):
    out = str(tmp_path / "run")
    unspaced = [_lines(300, 0).replace(" ", ""), _lines(40, 1).replace(" ", ""),
                _lines(40, 2).replace(" ", "")]
    results = run_ptb_char("--preset=quick", "--tiny", "--dataset=text_file",
                           f"--text_file={_files(tmp_path, unspaced)}", "--unsegmented",
                           "--nolstm_baseline", f"--output_dir={out}", "--verbose=0")
    assert results["word_discovery"]["scored"] is False
    assert "boundary" not in results["word_discovery"]["z1"]
    assert os.path.exists(os.path.join(out, "test_segmented.txt"))
    printed = capsys.readouterr().out
    assert "The test text has no spaces, so no gold words" in printed


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir(BRENT), reason="shared/data/brent is not beside the repository")
def test_brent_phonemes_through_the_builder(tmp_path):
    out = str(tmp_path / "run")
    results = run_ptb_char("--preset=quick", "--tiny", "--dataset=brent_phonemes",
                           f"--manual_dir={BRENT}", f"--data_dir={tmp_path / 'tfds'}",
                           "--nodownload", "--nolstm_baseline", "--batch_size=64",
                           "--seq_len=50", f"--output_dir={out}", "--verbose=0")
    w = results["word_discovery"]
    assert w["num_utterances"] == 978 and w["scored"]
    assert w["gold_rate"] == pytest.approx(0.28, abs=0.01)
    # The same test lines for every segmenter; the bigram statistic as measured.
    assert w["transition_probability"]["boundary"]["f1"] == pytest.approx(0.615, abs=0.005)


def _settings(*args):
    return example_settings("ptb_char", *args)


def test_unsegmented_flags():
    s = _settings("--dataset=brent_phonemes")
    assert s["unsegmented"] is True and s["lstm_baseline"] is True
    assert _settings("--dataset=brent_text", "--nounsegmented")["unsegmented"] is False
    assert _settings("--dataset=brent_text", "--cell=lstm")["lstm_baseline"] is False
    # The Brent preset: 3 x 256, regularized (variational dropout on the
    # inputs and the states); explicit flags win, and the datasets alone
    # do not bring it.
    brent = _settings("--preset=brent")
    assert (brent["dropout"], brent["recurrent_dropout"], brent["max_epochs"]) == (0.2, 0.2, 20)
    assert (brent["units"], brent["output_units"], brent["num_layers"]) == (256, 256, 3)
    assert _settings("--preset=brent", "--dropout=0")["dropout"] == 0
    assert _settings("--preset=brent", "--units=128")["units"] == 128
    assert (s["dropout"], s["recurrent_dropout"]) == (0, 0)
    # Unsegmented text: z^1 placed by the surprisal signal's rise read both
    # ways, its rate left to it.
    assert (s["boundary_placement"], s["segment_lengths"]) == ("bidirectional", ["none", "15"])
    config = ptb_char.char_lm_flags.model_config(s, 50)
    assert (config.boundary_placement, config.segment_lengths) == (
        "bidirectional", [None, 15.0])
    # The detectors read the updated state and pass the logistic sigmoid's
    # straight-through gradient, unless asked otherwise.
    assert config.cell_options["boundary_input"] == "updated"
    assert config.cell_options["boundary_gradient"] == "sigmoid"
    cell = CharLanguageModel(ptb_char.char_lm_flags.model_config(
        _settings("--dataset=brent_phonemes", "--tiny"), 50)).hierarchical_cell
    assert (cell.boundary_input, cell.boundary_gradient) == ("updated", "sigmoid")
    given = _settings("--dataset=brent_phonemes", "--boundary_input=previous",
                      "--boundary_gradient=hard_sigmoid")
    assert (given["boundary_input"], given["boundary_gradient"]) == ("previous", "hard_sigmoid")
    spaced = _settings("--dataset=brent_phonemes", "--nounsegmented")
    assert (spaced["boundary_input"], spaced["boundary_gradient"]) == ("previous", "hard_sigmoid")
    soft = _settings("--dataset=brent_phonemes", "--boundary_mode=soft")
    assert (soft["boundary_input"], soft["boundary_gradient"]) == ("updated", "hard_sigmoid")
    four = _settings("--dataset=brent_phonemes", "--num_layers=4")
    assert four["segment_lengths"] == ["none", "15", "45"]
    given = _settings("--dataset=brent_phonemes", "--segment_lengths=3,9")
    assert (given["boundary_placement"], given["segment_lengths"]) == ("bidirectional", ["3", "9"])
    given = _settings("--dataset=brent_phonemes", "--boundary_placement=surprisal")
    assert (given["boundary_placement"], given["segment_lengths"]) == ("surprisal", ["none", "15"])
    given = _settings("--dataset=brent_phonemes", "--boundary_placement=rise")
    assert (given["boundary_placement"], given["segment_lengths"]) == ("rise", ["none", "15"])
    given = _settings("--dataset=brent_phonemes", "--boundary_placement=entropy")
    assert (given["boundary_placement"], given["segment_lengths"]) == ("entropy", None)
    papers = _settings("--dataset=brent_phonemes", "--boundary_prior=none")
    assert (papers["boundary_placement"], papers["segment_lengths"]) == ("none", None)
    assert (papers["boundary_input"], papers["boundary_gradient"]) == ("previous", "hard_sigmoid")
    with pytest.raises(flags.IllegalFlagValueError,
                       match=r"must be numbers > 1 or none, .*\(at least one number\)"):
        _settings("--dataset=brent_phonemes", "--segment_lengths=none,none")
    spaced = _settings("--dataset=brent_phonemes", "--nounsegmented")
    assert (spaced["boundary_placement"], spaced["segment_lengths"]) == ("entropy", None)
    # The rise's threshold: the library's default unless given.
    assert config.rise_fraction == RISE_FRACTION
    config = ptb_char.char_lm_flags.model_config(
        _settings("--dataset=brent_phonemes", "--rise_fraction=0.75"), 50)
    assert config.rise_fraction == 0.75
    with pytest.raises(flags.IllegalFlagValueError,
                       match=r"--rise_fraction=-1: -1.0 is not a non-negative number"):
        _settings("--dataset=brent_phonemes", "--rise_fraction=-1")
    s = _settings("--dataset=text_file", "--text_file=a.txt,b.txt,c.txt")
    assert ptb_char.char_lm_flags.text_file_parts(s) == {
        "text_file": "a.txt", "valid_file": "b.txt", "test_file": "c.txt"}
    assert s["output_dir"] == os.path.join("runs", "text_file_a_hmlstm")


@pytest.mark.parametrize("flags,match", [
    (["--dataset=synthetic", "--unsegmented"],
     r"^--unsegmented reads one utterance per line: it applies to --dataset=brent_phonemes"),
    (["--dataset=brent_phonemes", "--cell=lstm", "--lstm_baseline"],
     r"^--lstm_baseline applies to --unsegmented runs of --cell=hmlstm"),
    (["--dataset=brent_phonemes", "--test_batch_size=4"],
     r"^--unsegmented scores the words .* --test_batch_size must be 1"),
    (["--dataset=text_file", "--text_file=a.txt,b.txt"],
     r"^--text_file takes one file or three comma-separated files"),
    (["--dataset=text_file", "--text_file=a.txt,,c.txt"],
     r"^--text_file takes one file or three comma-separated files"),
    (["--dataset=text_file", "--text_file=a.txt,b.txt,c.txt", "--test_file=d.txt"],
     r"^--test_file does not go with three files in --text_file"),
    (["--dataset=brent_phonemes", "--boundary_placement=entropy", "--rise_fraction=0.75"],
     r"^--rise_fraction is the threshold of a rise placement: it needs "
     r"--boundary_placement=rise or surprisal or bidirectional. Received: "
     r"--boundary_placement=entropy --rise_fraction=0.75"),
    (["--dataset=brent_phonemes", "--nounsegmented", "--rise_fraction=0.75"],
     r"^--rise_fraction is the threshold of a rise placement"),
    (["--dataset=brent_phonemes", "--cell=lstm", "--rise_fraction=0.75"],
     r"^--rise_fraction applies to the hierarchical cells"),
])
def test_unsegmented_flag_errors(flags, match):
    with pytest.raises(ptb_char.FlagError, match=match):
        _settings(*flags)


@pytest.mark.parametrize("contents,match", [
    ([_lines(5, 0), None, _lines(5, 2)],
     r"^the validation file of --text_file not found: '.*va.txt' does not exist"),
    ([_lines(5, 0), _lines(5, 1), ""], r"^the test file of --text_file '.*te.txt' is empty"),
    (["a b\n\nc\n", _lines(5, 1), _lines(5, 2)],
     r"^the train file of --text_file line 2 is empty: with unsegmented text"),
])
def test_unsegmented_bad_files_name_the_flag(tmp_path, contents, match):
    s = _settings("--dataset=text_file", f"--text_file={_files(tmp_path, contents)}",
                  "--unsegmented")
    with pytest.raises(ptb_char.FlagError, match=match):
        texts, _, _ = ptb_char.load_texts(s)
        ptb_char.unsegmented_texts(s, texts)


def test_one_unsegmented_file_is_split_between_lines(tmp_path):
    (tmp_path / "all.txt").write_text(_lines(100, 0), encoding="utf-8")
    s = _settings("--dataset=text_file", f"--text_file={tmp_path / 'all.txt'}",
                  "--unsegmented", "--valid_fraction=0.1", "--test_fraction=0.2")
    texts, _, _ = ptb_char.load_texts(s)
    model_texts, utterances = ptb_char.unsegmented_texts(s, texts)
    assert [len(utterances[k]) for k in ("train", "validation", "test")] == [70, 10, 20]
    assert all(" " not in t for t in model_texts.values())
    assert "".join(texts[k] for k in ("train", "validation", "test")) == _lines(100, 0)
    (tmp_path / "bad.txt").write_text("a b\n" * 50 + "\n" + "c\n" * 49, encoding="utf-8")
    s = _settings("--dataset=text_file", f"--text_file={tmp_path / 'bad.txt'}", "--unsegmented")
    with pytest.raises(ptb_char.FlagError, match=r"^--text_file line 51 is empty"):
        ptb_char.load_texts(s)


def test_brent_without_its_files_names_the_manual_dir(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    s = _settings("--dataset=brent_phonemes", f"--manual_dir={empty}",
                  f"--data_dir={tmp_path / 'tfds'}", "--nodownload")
    with pytest.raises(ptb_char.FlagError, match=r"phono_tr.txt(.|\n)*--manual_dir"):
        ptb_char.load_texts(s)
