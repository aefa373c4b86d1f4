"""Bad flags of every example and benchmark script: one line on stderr that
names the flag and what it accepts, a non-zero exit, no traceback.

Each script runs in a subprocess whose `tensorflow` and `keras` cannot be
imported, so the checks are proven to happen before TensorFlow loads (and
each case takes a fraction of a second).
"""

import os
import subprocess
import sys

import pytest
from example_modules import ROOT

MISSING = os.path.join(ROOT, "no", "such", "dir")

# (script, flags, what the line must say)
CASES = [
    ("examples/ptb_char.py", ["--dataset=foo"],
     ["--dataset=foo",
      "<synthetic|ptb_char|text8|enwik8|wikitext2_raw|brent_phonemes|brent_text|text_file>"]),
    ("examples/ptb_char.py", ["--cell=gru"], ["--cell=gru", "hmlstm|hmrnn|lstm|mlstm"]),
    ("examples/ptb_char.py", ["--preset=fast"], ["--preset=fast", "quick"]),
    ("examples/ptb_char.py", ["--output=fancy"], ["--output=fancy", "gated|simple|none"]),
    ("examples/ptb_char.py", ["--units=0"], ["--units=0", "positive integer"]),
    ("examples/ptb_char.py", ["--learning_rate=-1"], ["--learning_rate=-1", "> 0"]),
    ("examples/ptb_char.py", ["--learning_rate=nan"], ["--learning_rate=nan", "> 0"]),
    ("examples/ptb_char.py", ["--verbose=7"], ["--verbose=7", "[0, 2]"]),
    ("examples/ptb_char.py", ["--max_steps=-1"], ["--max_steps=-1", "non-negative"]),
    ("examples/ptb_char.py", ["--dropout=1"], ["--dropout=1", "[0, 1)"]),
    ("examples/ptb_char.py", ["--valid_fraction=1.5"], ["--valid_fraction=1.5", "(0, 1)"]),
    ("examples/ptb_char.py", ["--segment_lengths=5,x"],
     ["--segment_lengths", "numbers > 1"]),
    ("examples/ptb_char.py", ["--segment_lengths=5,1"],
     ["--segment_lengths", "numbers > 1"]),
    ("examples/ptb_char.py", ["--boundary_prior=poisson"],
     ["--boundary_prior=poisson", "<rate|binomial|none>"]),
    ("examples/ptb_char.py", ["--unitz=3"], ["Unknown command line flag 'unitz'"]),
    ("examples/ptb_char.py", ["stray"], ["unexpected arguments ['stray']"]),
    # Combinations, checked after the preset is applied.
    ("examples/ptb_char.py", ["--cell=hmlstm", "--num_layers=1"],
     ["--num_layers must be at least 2"]),
    ("examples/ptb_char.py", ["--segment_lengths=5"],
     ["--segment_lengths needs one length per boundary layer"]),
    ("examples/ptb_char.py", ["--boundary_prior=none", "--segment_lengths=5,15"],
     ["--segment_lengths needs a boundary prior"]),
    ("examples/ptb_char.py", ["--boundary_placement=peak"],
     ["--boundary_placement=peak", "<entropy|rise|surprisal|bidirectional|none>"]),
    ("examples/ptb_char.py", ["--boundary_prior=none", "--boundary_placement=entropy"],
     ["--boundary_placement needs a boundary prior"]),
    ("examples/ptb_char.py", ["--cell=lstm", "--boundary_placement=entropy"],
     ["--boundary_placement applies to the hierarchical cells"]),
    ("examples/ptb_char.py", ["--boundary_placement=none", "--placement_upper_layers"],
     ["--placement_upper_layers places the layers above z^1"]),
    ("examples/ptb_char.py", ["--cell=lstm", "--nested_boundaries"],
     ["--nested_boundaries applies to the hierarchical cells"]),
    ("examples/ptb_char.py", ["--cell=lstm", "--noplacement_upper_layers"],
     ["--placement_upper_layers applies to the hierarchical cells"]),
    ("examples/ptb_char.py", ["--cell=lstm", "--layer_norm"], ["--layer_norm applies"]),
    ("examples/ptb_char.py", [f"--manual_dir={MISSING}"], ["--manual_dir must be an existing"]),
    ("examples/ptb_char.py", ["--vocabulary=loose"], ["--vocabulary=loose", "unknown|strict"]),
    ("examples/ptb_char.py", ["--vocabulary=strict"],
     ["--vocabulary applies to --dataset=text_file only"]),
    # The boundary-prior flags of the other models: the char example's
    # values and messages (examples/boundary_prior_flags.py).
    ("examples/iam_ondb.py", ["--boundary_prior=poisson"],
     ["--boundary_prior=poisson", "<rate|binomial|none>"]),
    ("examples/iam_ondb.py", ["--segment_lengths=5,x"], ["--segment_lengths", "numbers > 1"]),
    ("examples/iam_ondb.py", ["--segment_lengths=5,1"], ["--segment_lengths", "numbers > 1"]),
    ("examples/iam_ondb.py", ["--segment_lengths=5"],
     ["--segment_lengths needs one length per boundary layer", "--num_layers - 1 = 2"]),
    ("examples/iam_ondb.py", ["--boundary_prior=none", "--segment_lengths=5,15"],
     ["--segment_lengths needs a boundary prior"]),
    ("examples/iam_ondb.py", ["--segment_lengths=5,15"],  # the default: no prior
     ["--segment_lengths needs a boundary prior"]),
    ("examples/iam_ondb.py", ["--cell=lstm", "--boundary_prior=binomial"],
     ["--boundary_prior applies to the hierarchical cells (hmlstm) only", "--cell=lstm"]),
    ("examples/iam_ondb.py", ["--cell=lstm", "--segment_lengths=5,15"],
     ["--segment_lengths applies to the hierarchical cells (hmlstm) only"]),
    ("examples/ptb_word.py", ["--boundary_prior=poisson"],
     ["--boundary_prior=poisson", "<rate|binomial|none>"]),
    ("examples/ptb_word.py", ["--cell=hmlstm", "--segment_lengths=5,x"],
     ["--segment_lengths", "numbers > 1"]),
    ("examples/ptb_word.py", ["--cell=hmlstm", "--segment_lengths=5,15"],
     ["--segment_lengths needs one length per boundary layer", "--num_layers - 1 = 1"]),
    ("examples/ptb_word.py", ["--cell=hmlstm", "--boundary_prior=none",
                              "--segment_lengths=5"],
     ["--segment_lengths needs a boundary prior"]),
    ("examples/ptb_word.py", ["--operations_per_token=3"],
     ["--operations_per_token", "--cell=rrnet"]),
    ("examples/ptb_word.py", ["--cell=rrnet", "--num_layers=1", "--operations_per_token=0"],
     ["--operations_per_token=0"]),
    ("examples/ptb_word.py", ["--boundary_prior=binomial"],
     ["--boundary_prior applies to the hierarchical cells (hmlstm) only", "--cell=lstm"]),
    ("examples/sample.py", [], ["--model_dir"]),
    ("examples/sample.py", ["--model_dir=x", "--temperature=0"], ["--temperature=0", "> 0"]),
    ("examples/sample.py", ["--model_dir=x", "--length=-1"], ["--length=-1", "non-negative"]),
    ("examples/sample.py", [f"--model_dir={MISSING}"], ["--model_dir=", "no step model"]),
    ("examples/compare_surprisal.py", ["--run_a=a", "--run_b=b", "--fraction=0"],
     ["--fraction=0", "(0, 1]"]),
    ("examples/compare_surprisal.py", ["--run_a=a", "--run_b=b", "--reference=c"],
     ["--reference=c", "mean|a|b"]),
    ("examples/compare_surprisal.py", ["--run_a=a", "--run_b=b", "--labels=one"],
     ["--labels", "two models"]),
    ("examples/compare_surprisal.py", ["--run_a=a", "--run_b=b", "--max_chars=1"],
     ["--max_chars=1", "0 (all) or at least 2"]),
    ("examples/compare_surprisal.py", [], ["--run_a", "--model_a", "--run_b", "--model_b"]),
    ("examples/compare_surprisal.py", [f"--run_a={MISSING}", f"--run_b={MISSING}"],
     ["--run_a=", "no step export"]),
    ("examples/logic.py", ["--encoder=gru"], ["--encoder=gru", "lstm|rrnet_supervised"]),
    ("examples/logic.py", ["--test_max_operations=13"], ["--test_max_operations=13"]),
    ("examples/logic.py", ["--units=0"], ["--units=0"]),
    ("examples/mee.py", ["--encoder=gru"], ["--encoder=gru", "lstm|rrnet_supervised"]),
    ("examples/mee.py", ["--train_lengths=4,x"], ["--train_lengths", "positive integers"]),
    ("examples/mee.py", ["--units=0"], ["--units=0"]),
    ("examples/mee.py", ["--tiny", "--quick"], ["--tiny", "--quick"]),
    ("examples/mee.py", ["--operations_per_token=2"],
     ["--operations_per_token=2", "--encoder=rrnet_reinforce"]),
    ("examples/mee.py", ["--operations_per_token=0"], ["--operations_per_token=0"]),
    ("examples/mee.py", ["--memory=saved"], ["--memory=saved", "continued|tree"]),
    ("examples/mee.py", ["--encoder=lstm", "--memory=tree"],
     ["--memory=tree", "--encoder=lstm", "rrnet_supervised|rrnet_reinforce|rrnet_random"]),
    ("examples/mee.py", ["--encoder=rrnet_supervised", "--baseline=greedy"],
     ["--baseline=greedy", "--encoder=rrnet_reinforce only"]),
    ("examples/mee.py", ["--encoder=lstm", "--tree_samples=2"],
     ["--tree_samples=2", "--encoder=rrnet_reinforce only"]),
    ("examples/mee.py", ["--encoder=rrnet_reinforce", "--baseline=leave_one_out",
                         "--tree_samples=1"],
     ["--baseline=leave_one_out", "--tree_samples of at least 2"]),
    ("examples/mee.py", ["--baseline=average"], ["--baseline=average", "leave_one_out"]),
    ("examples/mee.py", ["--patience=0"], ["--patience=0"]),
    ("examples/mee.py", ["--encoder=rrnet_random", "--policy_inputs=token"],
     ["--policy_inputs=token", "--encoder=rrnet_supervised|rrnet_reinforce only"]),
    ("examples/mee.py", ["--policy_inputs=state"], ["--policy_inputs", "token"]),
    ("examples/mee.py", ["--encoder=rrnet_supervised", "--policy_warmup_epochs=1"],
     ["--policy_warmup_epochs=1", "--encoder=rrnet_reinforce only"]),
    ("examples/mee.py", ["--policy_warmup_epochs=-1"], ["--policy_warmup_epochs"]),
    ("examples/mee.py", ["--encoder=lstm", "--exploration=0.1"],
     ["--exploration=0.1", "--encoder=rrnet_reinforce only"]),
    ("examples/mee.py", ["--exploration=1"], ["--exploration"]),
    ("examples/mee.py", ["--encoder=lstm", "--subtree_start=fresh"],
     ["--subtree_start=fresh",
      "--encoder=rrnet_supervised|rrnet_reinforce|rrnet_random only"]),
    ("examples/mee.py", ["--subtree_start=zero"], ["--subtree_start"]),
    ("bench/bench_cells.py", ["--steps=0"], ["--steps=0", "positive integer"]),
    ("bench/bench_cells.py", ["--cell=gru"], ["--cell=gru", "hmlstm|hmrnn|mlstm"]),
    ("bench/bench_cells.py", ["--layers=1"], ["--layers=1", ">= 2"]),
    ("bench/bench_cells.py", ["--dropout=-0.1"], ["--dropout=-0.1", "[0, 1)"]),
    ("bench/boundaries.py", ["--steps=0"], ["--steps=0", "positive integer"]),
    ("bench/boundaries.py", ["--models=hmlstm,gru"], ["--models", "hmlstm_rate"]),
    ("bench/boundaries.py", ["--corpus=text_file"], ["--corpus=text_file needs --text_file"]),
    ("bench/boundaries.py", ["--segment_lengths=5"], ["--segment_lengths", "two numbers > 1"]),
    ("bench/gradient_norms.py", ["--models=hmrnn,gru"], ["--models", "hmrnn_noln|"]),
    ("bench/gradient_norms.py", ["--seeds=-1"], ["--seeds", "non-negative integers"]),
    ("bench/gradient_norms.py", ["--layers=1"], ["--layers=1", ">= 2"]),
]


@pytest.fixture(scope="module")
def no_tensorflow(tmp_path_factory):
    """A PYTHONPATH entry whose `tensorflow` and `keras` refuse to import."""
    root = tmp_path_factory.mktemp("no_tensorflow")
    for name in ("tensorflow", "keras"):
        (root / name).mkdir()
        (root / name / "__init__.py").write_text(
            f"raise ImportError('{name} imported before the flags were checked')\n")
    return str(root)


@pytest.mark.parametrize("script,args,expected", CASES,
                         ids=[f"{s.split('/')[-1][:-3]}:{' '.join(a) or 'none'}"
                              for s, a, _ in CASES])
def test_bad_flag_is_one_line_without_traceback(no_tensorflow, script, args, expected):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [no_tensorflow, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    done = subprocess.run([sys.executable, os.path.join(ROOT, script), *args],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(os.path.basename(script) + ": "), lines[0]
    for text in expected:
        assert text in lines[0], lines[0]
