"""Segmentation figure of a hierarchical RNN, after Chung et al. Fig. 3 and 4.

Chung et al. (2017, Section 4.1) show a 270-character text "partitioned into
three segments of length 90", with, under each character, the state of each
layer's boundary detector ("The white blocks indicate boundaries z^l_t = 1
while the black blocks indicate the non-boundaries z^l_t = 0", Fig. 3) and a
heatmap of the l2-norm of each layer's hidden state (Fig. 4), where COPY
shows up as runs of constant colour in the upper layers.

`plot_segmentation` draws the same picture, wrapped into rows of
`chars_per_row` characters. Per wrapped row, top to bottom: the characters,
z^1 .. z^{L-1} (white = 1, black = 0, grey for soft values), then
||h^1|| .. ||h^L||. Each norm row has its own colour scale, shared by all
wrapped rows, with the range printed at its right end. It draws with the Agg
canvas directly (no pyplot state, no GUI backend).
"""

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from hmkeras.analysis.boundary_metrics import split_hierarchical_outputs

# How characters that are hard to see are drawn.
_VISIBLE = {" ": "\u2423", "\n": "\u21b5", "\t": "\u2192"}

_CELL_WIDTH_IN = 0.115   # inches per character
_CELL_HEIGHT_IN = 0.17   # inches per row of cells
_LEFT_IN = 0.75          # room for row labels
_RIGHT_IN = 0.75         # room for the norm ranges
_GAP_ROWS = 0.7          # blank space between wrapped rows, in cell heights


def _as_layers(text, hiddens, boundaries, outputs, layer_sizes):
    """Checks the inputs; returns (hiddens, boundaries) as float arrays."""
    if outputs is not None:
        if hiddens is not None or boundaries is not None:
            raise ValueError(
                "Pass either `outputs` (with `layer_sizes`) or "
                "`hiddens`/`boundaries`, not both."
            )
        if layer_sizes is None:
            raise ValueError("`outputs` needs `layer_sizes` (e.g. cell.units).")
        outputs = np.asarray(outputs, dtype=np.float64)
        if outputs.ndim != 2:
            raise ValueError(
                "`outputs` must have shape (T, sum(layer_sizes)+L-1) for one "
                f"sequence (take `y[0]` of a batch). Received {outputs.shape}."
            )
        hiddens, boundaries = split_hierarchical_outputs(outputs, layer_sizes)
    if hiddens is None:
        raise ValueError("Pass `hiddens` (and `boundaries`) or `outputs`.")
    hiddens = [np.asarray(h, dtype=np.float64) for h in hiddens]
    if not hiddens:
        raise ValueError("`hiddens` must hold at least one layer.")
    length = len(text)
    if length == 0:
        raise ValueError("`text` is empty.")
    for i, h in enumerate(hiddens):
        if h.ndim != 2 or h.shape[0] != length:
            raise ValueError(
                f"hiddens[{i}] must have shape (T, units) with T = len(text) "
                f"= {length}. Received shape {h.shape}."
            )
    num_layers = len(hiddens)
    if boundaries is None:
        if num_layers != 1:
            raise ValueError(
                f"`boundaries` of shape (T, {num_layers - 1}) is required for "
                f"{num_layers} layers."
            )
        boundaries = np.zeros((length, 0))
    boundaries = np.asarray(boundaries, dtype=np.float64)
    if boundaries.ndim == 1 and num_layers == 2:
        boundaries = boundaries[:, None]
    if boundaries.shape != (length, num_layers - 1):
        raise ValueError(
            "`boundaries` must have shape (T, L-1) = "
            f"({length}, {num_layers - 1}) for len(text) = {length} and "
            f"{num_layers} layers. Received shape {boundaries.shape}."
        )
    return hiddens, boundaries


def plot_segmentation(path, text, hiddens=None, boundaries=None, *,
                      outputs=None, layer_sizes=None, chars_per_row=90,
                      title=None, cmap="viridis", dpi=150):
    """Writes a PNG of boundaries and hidden-state norms under a text.

    The figure of Chung et al. (2017) Fig. 3/4: the text along the x axis,
    each layer's boundary detector under it as white (z = 1) / black (z = 0)
    blocks, and each layer's hidden-state l2-norm as a heatmap row; long
    texts are wrapped into rows of `chars_per_row` characters. Spaces,
    newlines and tabs are drawn as light-grey `␣`, `↵`, `→`.

    Give either `hiddens` and `boundaries`, or `outputs` and `layer_sizes`.

    Args:
        path: File name of the PNG to write.
        text: The string the model read, one character per step (for
            character-level PTB the `_` word markers included).
        hiddens: List of L arrays `(T, units_l)`, hidden states bottom first
            (the first return value of `cell.split_outputs`), T = len(text).
        boundaries: Array `(T, L-1)` of boundary values z^1..z^{L-1}
            (`None` for L = 1).
        outputs: Alternatively, the hierarchical cell's output for this text,
            shape `(T, sum(layer_sizes) + L - 1)`.
        layer_sizes: Per-layer sizes for `outputs` (e.g. `cell.units`).
        chars_per_row: Characters per wrapped row. Default 90, as in Chung et
            al.
        title: Optional title above the figure.
        cmap: Matplotlib colormap name for the norm heatmaps.
        dpi: Resolution of the PNG.

    Returns:
        `path`.

    Examples:

        >>> import os, tempfile
        >>> text = "the cat sat on the mat"
        >>> rng = np.random.default_rng(0)
        >>> hiddens = [rng.normal(size=(len(text), n)) for n in (8, 8, 8)]
        >>> z = np.stack([[float(c == " ") for c in text],
        ...               [float(i % 8 == 7) for i in range(len(text))]], axis=1)
        >>> out = os.path.join(tempfile.mkdtemp(), "segmentation.png")
        >>> plot_segmentation(out, text, hiddens, z, chars_per_row=12) == out
        True
    """
    if isinstance(chars_per_row, bool) or int(chars_per_row) != chars_per_row \
            or chars_per_row <= 0:
        raise ValueError(
            "`chars_per_row` must be a positive integer. Received: "
            f"{chars_per_row!r}"
        )
    hiddens, boundaries = _as_layers(text, hiddens, boundaries, outputs,
                                     layer_sizes)
    length = len(text)
    num_layers = len(hiddens)
    norms = [np.linalg.norm(h, axis=-1) for h in hiddens]  # ||h^l_t||

    width = min(int(chars_per_row), length)
    num_blocks = -(-length // width)
    rows_per_block = 1 + (num_layers - 1) + num_layers  # text, z's, norms
    block_height = rows_per_block + _GAP_ROWS
    total_height = num_blocks * block_height - _GAP_ROWS
    title_in = 0.35 if title else 0.1

    fig_w = _LEFT_IN + width * _CELL_WIDTH_IN + _RIGHT_IN
    fig_h = total_height * _CELL_HEIGHT_IN + title_in + 0.1
    fig = Figure(figsize=(fig_w, fig_h))
    FigureCanvasAgg(fig)
    ax = fig.add_axes([_LEFT_IN / fig_w, 0.1 / fig_h,
                       width * _CELL_WIDTH_IN / fig_w,
                       total_height * _CELL_HEIGHT_IN / fig_h])
    ax.set_xlim(0, width)
    ax.set_ylim(total_height, 0)
    ax.set_axis_off()
    fontsize = 72 * _CELL_WIDTH_IN * 0.95
    labelsize = fontsize * 0.9

    ranges = [(float(n.min()), float(n.max())) for n in norms]
    for block in range(num_blocks):
        start = block * width
        stop = min(start + width, length)
        cols = np.arange(stop - start + 1)
        top = block * block_height
        # Characters.
        for i, char in enumerate(text[start:stop]):
            shown = _VISIBLE.get(char, char)
            ax.text(i + 0.5, top + 0.55, shown, ha="center", va="center",
                    fontsize=fontsize,
                    color="0.6" if char in _VISIBLE else "black")
        row = top + 1
        # Boundary detectors: white z = 1, black z = 0 (Chung et al. Fig. 3).
        for l in range(num_layers - 1):
            ax.pcolormesh(cols, [row, row + 1],
                          boundaries[start:stop, l][None, :], cmap="gray",
                          vmin=0.0, vmax=1.0, edgecolors="0.45",
                          linewidth=0.3)
            ax.text(-0.4, row + 0.5, f"$z^{{{l + 1}}}$", ha="right",
                    va="center", fontsize=labelsize)
            row += 1
        # Hidden-state norms (Chung et al. Fig. 4).
        for l in range(num_layers):
            lo, hi = ranges[l]
            ax.pcolormesh(cols, [row, row + 1], norms[l][start:stop][None, :],
                          cmap=cmap, vmin=lo, vmax=hi if hi > lo else lo + 1)
            ax.text(-0.4, row + 0.5, f"$\\|h^{{{l + 1}}}\\|$", ha="right",
                    va="center", fontsize=labelsize)
            if block == 0:
                ax.text(width + 0.4, row + 0.5, f"{lo:.2g}\u2013{hi:.2g}",
                        ha="left", va="center", fontsize=labelsize * 0.85,
                        color="0.3")
            row += 1
    if title:
        fig.suptitle(title, y=1.0 - 0.05 / fig_h, va="top",
                     fontsize=fontsize * 1.3)
    fig.savefig(path, dpi=dpi)
    return path
