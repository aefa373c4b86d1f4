"""Attention weights of one sentence as a heatmap (PNG).

A memory-augmented word LM (`hmkeras.AttentionWrapper`, Salton et al.
2017; `hmkeras.AveragingWrapper`, Salton & Kelleher) reads, at every step,
a weighted sum of the hidden states of earlier steps. `plot_attention`
draws those weights for one sentence: row ``i`` is the step that reads the
token ``tokens[i]``, column ``j`` the earlier step whose hidden state (the
state after reading ``tokens[j]``) receives the weight ``matrix[i, j]``;
cells on and above the diagonal are the future and stay blank. Salton &
Kelleher observe that the learned attention spreads nearly uniformly over
the past, which the averaging model makes exact (`averaging_matrix`).

`memory_to_matrix` turns the wrapper's per-step weights over its memory
slots (``(T, memory_size)``, slot ``memory_size - 1`` = the most recent
past state) into that ``(T, T)`` matrix. `plot_word_lm_attention` draws
one sentence of a wrapped `hmkeras.models.WordLanguageModel`. It draws
with the Agg canvas directly (no pyplot state, no GUI backend).

Examples:

    >>> import numpy as np, os, tempfile
    >>> slots = np.array([[0.0, 0.0], [0.0, 1.0], [0.25, 0.75]])
    >>> memory_to_matrix(slots)
    array([[0.  , 0.  , 0.  ],
           [1.  , 0.  , 0.  ],
           [0.25, 0.75, 0.  ]])
    >>> path = os.path.join(tempfile.mkdtemp(), "attention.png")
    >>> plot_attention(path, ["<eos>", "a", "b"], memory_to_matrix(slots)) == path
    True
"""

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = ["plot_attention", "plot_word_lm_attention", "memory_to_matrix",
           "averaging_matrix"]


def memory_to_matrix(slot_weights):
    """``(T, T)`` weights over earlier steps from ``(T, M)`` slot weights.

    Slot ``M - k`` at step ``i`` holds the state of step ``i - k``; slots
    before the start of the sequence (weight 0 by construction) are dropped.
    """
    w = np.asarray(slot_weights, dtype=np.float64)
    if w.ndim != 2:
        raise ValueError(f"`slot_weights` must have shape (T, memory_size), got {w.shape}.")
    steps, size = w.shape
    matrix = np.zeros((steps, steps))
    for i in range(steps):
        for k in range(1, min(size, i) + 1):
            matrix[i, i - k] = w[i, size - k]
    return matrix


def averaging_matrix(steps):
    """The averaging wrapper's weights (Salton & Kelleher Eq. 10): at step
    ``t = i + 1`` each of the ``i`` earlier states gets ``1 / t`` (the zero
    `h_0` takes the remaining ``1 / t``, not drawn)."""
    matrix = np.zeros((steps, steps))
    for i in range(steps):
        matrix[i, :i] = 1.0 / (i + 1)
    return matrix


def plot_attention(path, tokens, matrix, title=None):
    """Writes the heatmap of `matrix` (``(T, T)``) labelled with `tokens`.

    Args:
        path: Output PNG path.
        tokens: The T input tokens (strings), in order.
        matrix: Weights, row = reading step, column = earlier step.
        title: Figure title.

    Returns:
        `path`.
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    tokens = [str(t) for t in tokens]
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"`matrix` must be square (T, T), got {matrix.shape}.")
    if len(tokens) != matrix.shape[0]:
        raise ValueError(
            f"`tokens` has {len(tokens)} entries but `matrix` is {matrix.shape}.")
    if not tokens:
        raise ValueError("`tokens` is empty.")
    steps = len(tokens)
    shown = np.ma.masked_where(np.triu(np.ones_like(matrix, dtype=bool)), matrix)
    side = 1.5 + 0.28 * steps
    figure = Figure(figsize=(side + 1.2, side))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    image = axes.imshow(shown, cmap="viridis", vmin=0.0,
                        vmax=max(float(matrix.max()), 1e-9), aspect="equal")
    axes.set_xticks(range(steps))
    axes.set_xticklabels(tokens, rotation=90, fontsize=7)
    axes.set_yticks(range(steps))
    axes.set_yticklabels(tokens, fontsize=7)
    axes.set_xlabel("earlier step (its token)")
    axes.set_ylabel("reading step (input token)")
    figure.colorbar(image, ax=axes, fraction=0.046, pad=0.04)
    if title:
        axes.set_title(title, fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    return path


def plot_word_lm_attention(path, lm, tokens, token_ids):
    """Writes the weights a wrapped word LM gives one sentence's past.

    With `lm.config.wrapper` ``"attention"``, the weights of its attention
    network (`lm.attention_network`); with ``"average"``, the exact
    uniform weights (`averaging_matrix`). The title names the cell and
    the wrapper.

    Args:
        path: Output PNG path.
        lm: A `hmkeras.models.WordLanguageModel` with a wrapper.
        tokens: The sentence's input tokens (strings), ``<eos>`` first.
        token_ids: Their ids in `lm`'s vocabulary.

    Returns:
        `path`.

    Examples:

        >>> import os, tempfile
        >>> from hmkeras.models.word_language_model import WordLanguageModel
        >>> lm = WordLanguageModel(vocab_size=6, units=4, num_layers=1, wrapper="average")
        >>> path = os.path.join(tempfile.mkdtemp(), "attention.png")
        >>> plot_word_lm_attention(path, lm, ["<eos>", "a", "b"], [1, 2, 3]) == path
        True
    """
    config = lm.config
    if config.wrapper == "attention":
        slots = np.asarray(lm.attention_network(np.asarray([token_ids]), training=False))[0]
        matrix = memory_to_matrix(slots)
        title = (f"{config.cell} + attention ({config.attention_score}, "
                 f"memory {config.memory_size})")
    elif config.wrapper == "average":
        matrix = averaging_matrix(len(tokens))
        title = f"{config.cell} + averaging: weight 1/t on each earlier state (and on h_0)"
    else:
        raise ValueError("`lm` must be a word LM with a wrapper (\"attention\" or "
                         f"\"average\"). Received: lm.config.wrapper={config.wrapper!r}")
    return plot_attention(path, tokens, matrix, title=title)
