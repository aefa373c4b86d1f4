r"""Makes the documentation's figures (`docs/figures/*.png`) from runs' outputs.

Every figure on the site comes from a run of the project's own commands;
this script reads those runs' output directories and writes the PNGs the
guides and the results pages show. Give the runs you have: each flag makes
its figures, a missing flag skips them.

| flag | run (command) | figures |
| --- | --- | --- |
| `--char_lm_run` | `examples/ptb_char.py --preset=quick` (the main job) | `main-job-segmentation.png` |
| `--word_discovery_run` | `examples/ptb_char.py --preset=brent` (with its LSTM baseline) | `word-discovery.png`, `training-curves.png` |
| `--surprisal_json` | `examples/compare_surprisal.py` on the two runs above | `surprisal-recovery.png` |
| `--handwriting_run` | `examples/iam_ondb.py` | `handwriting-samples.png`, `handwriting-segments.png` |
| `--mee_run` | `examples/mee.py --encoder=rrnet_supervised` | `rrnet-trees.png` |
| `--mee_reinforce_run` | `examples/mee.py --encoder=rrnet_reinforce` | `rrnet-reinforce-trees.png` |

The figures the runs draw themselves (the segmentation, the handwriting
and the surprisal plots) are copied, scaled to at most `MAX_WIDTH` pixels
and reduced to a 64-colour palette, so the committed PNGs stay small; the
word-discovery, training-curve and tree figures are drawn here from the
runs' `results.json` and `checkpoints/latest/progress.json`.

Example (after the runs of `docs/results/index.md`, "Figures"):

    python docs/make_figures.py --char_lm_run=runs/quick_hmlstm \
        --word_discovery_run=runs/brent_phonemes --surprisal_json=runs/surprisal.json \
        --handwriting_run=runs/iam_ondb --mee_run=runs/mee_rrnet_supervised \
        --mee_reinforce_run=runs/mee_rrnet_reinforce
"""

import argparse
import json
import os
import sys

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from PIL import Image

from hmkeras.analysis import word_discovery

FIGURES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "figures")
MAX_WIDTH = 1400  # pixels of a copied figure
PALETTE_COLOURS = 64
# Colours of the drawn figures: the HM-LSTM, the LSTM, a gold reference.
HM_COLOUR, LSTM_COLOUR, GOLD_COLOUR = "#1f77b4", "#ff7f0e", "#333333"
HIT_COLOUR, MISS_COLOUR = "#2ca02c", "#d62728"


def read_json(path):
    """The JSON document at `path`; a `FileNotFoundError` names the file."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} does not exist: is this the right run directory?")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def save(figure, path):
    """Writes a matplotlib `figure` to `path` as a palette PNG."""
    FigureCanvasAgg(figure)
    figure.savefig(path, dpi=110)
    compact_png(path, path)
    return path


def compact_png(source, path, max_width=MAX_WIDTH):
    """Copies the PNG `source` to `path`, at most `max_width` pixels wide,
    with a `PALETTE_COLOURS`-colour palette."""
    image = Image.open(source).convert("RGB")
    if image.width > max_width:
        height = round(image.height * max_width / image.width)
        image = image.resize((max_width, height), Image.LANCZOS)
    image.quantize(colors=PALETTE_COLOURS, method=Image.Quantize.MEDIANCUT).save(
        path, optimize=True)
    return path


# --- word discovery --------------------------------------------------------

def boundary_positions(segmented):
    """`(positions, text)`: the positions between symbols (after symbol
    `t`: `t + 1`) where `segmented` ends a word, utterance end excluded,
    and the utterance without its spaces.

    >>> boundary_positions("ab c de")
    ({2, 3}, 'abcde')
    """
    text, ends = word_discovery.utterance_boundaries(segmented)
    return {int(t) + 1 for t in np.flatnonzero(ends[:-1])}, text


def word_discovery_results(run_dir):
    """The `word_discovery` section of an --unsegmented run's results."""
    return read_json(os.path.join(run_dir, "results.json"))["word_discovery"]


def word_discovery_figure(run_dir, discovery, path, max_lines=5):
    """The run's first test utterances (`discovery`, its
    `word_discovery_results`): the gold words above the HM-LSTM's z^1 and
    its LSTM baseline's words; a found boundary is green where the gold
    has one and red where it has none."""
    examples = discovery["examples"][:max_lines]
    lstm_file = os.path.join(run_dir, "lstm_baseline", "test_segmented.txt")
    with open(lstm_file, encoding="utf-8") as f:
        lstm_lines = f.read().splitlines()[:len(examples)]
    rows = []
    for example, lstm_line in zip(examples, lstm_lines):
        gold, text = boundary_positions(example["gold"])
        rows.append((text, [("gold words", gold),
                            ("HM-LSTM $z^1$", boundary_positions(example["found"])[0]),
                            ("LSTM, entropy rises", boundary_positions(lstm_line)[0])]))
    width = max(len(text) for text, _ in rows)
    figure = Figure(figsize=(1.6 + 0.17 * width, 0.9 * len(rows) + 0.9))
    axes = figure.add_axes([0.0, 0.0, 1.0, 1.0])
    axes.set_xlim(-9, width + 0.5)
    axes.set_ylim(-4.0 * len(rows) - 0.2, 2.4)
    axes.axis("off")
    axes.text(-8.8, 1.6, "A boundary after a symbol: green where the gold words have one, "
              "red where they have none", fontsize=9, va="center")
    for row, (text, marks) in enumerate(rows):
        top = -4.0 * row
        for i, symbol in enumerate(text):
            axes.text(i + 0.5, top, symbol, ha="center", va="center",
                      family="monospace", fontsize=10)
        gold = marks[0][1]
        for line, (label, positions) in enumerate(marks):
            y = top - 1.0 - 0.9 * line
            axes.text(-0.5, y, label, ha="right", va="center", fontsize=8)
            axes.plot([0, len(text)], [y, y], color="#dddddd", lw=0.8)
            for position in sorted(positions):
                colour = GOLD_COLOUR if line == 0 else (
                    HIT_COLOUR if position in gold else MISS_COLOUR)
                axes.plot([position, position], [y - 0.35, y + 0.35], color=colour, lw=2.2)
    return save(figure, path)


# --- training curves -------------------------------------------------------

def epoch_history(run_dir):
    """The per-epoch records of a run (`checkpoints/latest/progress.json`)."""
    return read_json(os.path.join(run_dir, "checkpoints", "latest", "progress.json"))["history"]


def training_curves_figure(runs, path, gold_rate=None):
    """Validation (solid) and training (dashed) BPC per epoch of each
    `(label, run_dir, colour)` in `runs`, and the HM-LSTM's boundary rates
    (with the gold words' boundary rate, if given, dashed)."""
    figure = Figure(figsize=(9.0, 3.4))
    bpc_axes, rate_axes = figure.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    for label, run_dir, colour in runs:
        history = epoch_history(run_dir)
        epochs = range(1, len(history) + 1)  # the records are in epoch order
        bpc_axes.plot(epochs, [r["val_bpc"] for r in history], color=colour,
                      marker="o", ms=3, label=f"{label}, validation")
        bpc_axes.plot(epochs, [r["bpc"] for r in history], color=colour, ls="--",
                      label=f"{label}, training")
        layers = sorted(key for key in history[0] if key.startswith("val_z_rate_"))
        for key, style in zip(layers, ("-", ":", "-.")):
            rate_axes.plot(epochs, [r[key] for r in history], color=colour, ls=style,
                           label=f"{label} $z^{key.rsplit('_', 1)[1]}$")
    if gold_rate is not None:
        rate_axes.axhline(gold_rate, color=GOLD_COLOUR, ls="--", lw=1, label="gold words")
    bpc_axes.set_xlabel("epoch")
    bpc_axes.set_ylabel("bits per character")
    bpc_axes.legend(fontsize=8)
    bpc_axes.grid(alpha=0.3)
    rate_axes.set_xlabel("epoch")
    rate_axes.set_ylabel("boundary rate (validation)")
    rate_axes.legend(fontsize=8)
    rate_axes.grid(alpha=0.3)
    for axes in (bpc_axes, rate_axes):
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    figure.tight_layout()
    return save(figure, path)


# --- RRNet trees -----------------------------------------------------------

def parse_brackets(text):
    """A bracketed tree (`hmkeras.cells.recurrent_recursive_cell.bracketed_tree`:
    "[" opens a sub-tree, "]" closes one, tokens between spaces) as nested
    lists of tokens; an empty sub-tree "[]" is left out.

    >>> parse_brackets("1 + [2 * [3 - 4]]")
    ['1', '+', ['2', '*', ['3', '-', '4']]]
    >>> parse_brackets("[]1 + 2")
    ['1', '+', '2']
    """
    stack, token = [[]], ""
    for char in text + " ":
        if char in "[] " and token:
            stack[-1].append(token)
            token = ""
        if char == "[":
            stack.append([])
        elif char == "]" and len(stack) > 1:
            node = stack.pop()
            if node:
                stack[-1].append(node)
        elif char not in "[] ":
            token += char
    while len(stack) > 1:  # sub-trees still open at the end close there
        node = stack.pop()
        if node:
            stack[-1].append(node)
    return stack[0]


def tree_spans(tree):
    """`(leaves, spans)`: the tokens of `tree` (nested lists) in reading
    order, and `(first leaf, last leaf, height)` of every sub-tree, the
    innermost first.

    >>> tree_spans(['1', '+', ['2', '*', '3']])
    (['1', '+', '2', '*', '3'], [(2, 4, 1)])
    """
    leaves, spans = [], []

    def visit(node):  # -> (first, last, height) of `node`
        if isinstance(node, str):
            leaves.append(node)
            return len(leaves) - 1, len(leaves) - 1, 0
        children = [visit(child) for child in node]
        span = (children[0][0], children[-1][1], 1 + max(child[2] for child in children))
        spans.append(span)
        return span

    for child in tree:
        visit(child)
    return leaves, spans


def draw_tree(axes, tree, y, colour):
    """Draws the leaves of `tree` on the row `y` and every sub-tree as a
    bracket over its span, higher for a taller sub-tree."""
    leaves, spans = tree_spans(tree)
    for i, leaf in enumerate(leaves):
        axes.text(i, y, leaf, ha="center", va="center", family="monospace", fontsize=10)
    for first, last, height in spans:
        top = y + 0.45 + 0.35 * height
        axes.plot([first - 0.35, first - 0.35, last + 0.35, last + 0.35],
                  [y + 0.3, top, top, y + 0.3], color=colour, lw=1.6)


def tree_height(tree):
    """Height above its row of a tree drawn by `draw_tree`.

    >>> round(tree_height(['1', '+', ['2', '*', '3']]), 2)
    1.15
    """
    spans = tree_spans(tree)[1]
    return 0.45 + 0.35 * max((height for _, _, height in spans), default=0) + 0.35


def rrnet_trees_figure(run_dir, path, label="RRNet", max_trees=3):
    """The encoder's trees (blue, named `label`) above the true ones (black)
    for the first test expressions of an `examples/mee.py` run; each row
    is as tall as its tree."""
    results = read_json(os.path.join(run_dir, "results.json"))
    learned = [line.split("   = ")[0] for line in results["trees"][:max_trees]]
    true = results["true_trees"][:max_trees]
    longest = max(len(parse_line.split()) for parse_line in learned + true)
    rows, y = [], 0.0  # (tree, colour, name, y) from the top
    for learned_line, true_line in zip(learned, true):
        for line, colour, name in ((learned_line, HM_COLOUR, label),
                                   (true_line, GOLD_COLOUR, "true")):
            tree = parse_brackets(line)
            y -= tree_height(tree) + 0.6
            rows.append((tree, colour, name, y))
        y -= 0.6
    figure = Figure(figsize=(1.8 + 0.42 * longest, 0.47 * -y))
    axes = figure.add_axes([0.02, 0.02, 0.96, 0.96])
    axes.axis("off")
    axes.set_xlim(-3.0, longest)
    axes.set_ylim(y, 0.0)
    for tree, colour, name, row_y in rows:
        draw_tree(axes, tree, row_y, colour)
        axes.text(-0.8, row_y, name, ha="right", va="center", fontsize=8,
                  color=colour if colour == HM_COLOUR else "black")
    return save(figure, path)


# --- the command -----------------------------------------------------------

def make_figures(args):
    """Writes every figure whose run is given; returns the paths written."""
    os.makedirs(args.output_dir, exist_ok=True)
    out = lambda name: os.path.join(args.output_dir, name)  # noqa: E731
    written = []
    if args.char_lm_run:
        written.append(compact_png(os.path.join(args.char_lm_run, "segmentation.png"),
                                   out("main-job-segmentation.png")))
    if args.word_discovery_run:
        discovery = word_discovery_results(args.word_discovery_run)
        written.append(word_discovery_figure(args.word_discovery_run, discovery,
                                             out("word-discovery.png")))
        written.append(training_curves_figure(
            [("HM-LSTM", args.word_discovery_run, HM_COLOUR),
             ("LSTM", os.path.join(args.word_discovery_run, "lstm_baseline"), LSTM_COLOUR)],
            out("training-curves.png"), gold_rate=discovery["gold_rate"]))
    if args.surprisal_json:
        png = read_json(args.surprisal_json)["png"]
        written.append(compact_png(png, out("surprisal-recovery.png")))
    if args.handwriting_run:
        for name, figure in (("samples.png", "handwriting-samples.png"),
                             ("fig5_segments.png", "handwriting-segments.png")):
            written.append(compact_png(os.path.join(args.handwriting_run, name), out(figure)))
    if args.mee_run:
        written.append(rrnet_trees_figure(args.mee_run, out("rrnet-trees.png")))
    if args.mee_reinforce_run:
        written.append(rrnet_trees_figure(args.mee_reinforce_run,
                                          out("rrnet-reinforce-trees.png"), "REINFORCE"))
    return written


def build_parser():
    """The command line's parser: one flag per run, and `--output_dir`."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--char_lm_run", help="A main-job run directory (ptb_char.py).")
    parser.add_argument("--word_discovery_run",
                        help="An --unsegmented ptb_char.py run with its lstm_baseline.")
    parser.add_argument("--surprisal_json", help="The JSON compare_surprisal.py wrote.")
    parser.add_argument("--handwriting_run", help="An iam_ondb.py run directory.")
    parser.add_argument("--mee_run", help="An mee.py run directory of an RRNet encoder.")
    parser.add_argument("--mee_reinforce_run",
                        help="An mee.py run directory of the REINFORCE encoder.")
    parser.add_argument("--output_dir", default=FIGURES_DIR,
                        help="Where the PNGs go (default: docs/figures).")
    return parser


def parse_args(argv):
    """The flags of `argv`; at least one run must be given."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not any((args.char_lm_run, args.word_discovery_run, args.surprisal_json,
                args.handwriting_run, args.mee_run, args.mee_reinforce_run)):
        parser.error("give at least one run: --char_lm_run, --word_discovery_run, "
                     "--surprisal_json, --handwriting_run, --mee_run or "
                     "--mee_reinforce_run")
    return args


def main(argv=None):
    for path in make_figures(parse_args(argv)):
        print(f"wrote {path} ({os.path.getsize(path) / 1024:.0f} kB)")


if __name__ == "__main__":
    sys.exit(main())
