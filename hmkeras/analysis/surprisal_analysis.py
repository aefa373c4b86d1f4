"""Recovery from surprising inputs: Krause et al. (2017) Section 4.2, Fig. 3.

Krause et al. test whether a model "recovers" quickly after a surprising
character: on the test set they take "the 10% characters with the largest
average loss taken by mLSTM and stacked LSTM" -- the ranking uses the mean of
the two models' per-character losses, so both models are judged on the same
positions -- and report each model's average loss on those characters (6.27
vs 6.29 bits/char) and one to four time steps after them ((2.26, 2.04, 1.61,
1.51) vs (2.48, 2.25, 1.79, 1.67) bits/char).

`surprisal_recovery` computes these numbers for any two models from their
per-character losses on the same text; `reference="mean"` (default) follows
the paper, `"a"` / `"b"` rank by one model's loss, or pass your own array.
`plot_surprisal_recovery` draws a Fig. 3-like PNG.

Indexing: `losses[t] = -log p(x_t | x_<t)`, the loss of predicting character
t. Character t is surprising when its loss ranks in the top `fraction`; "k
steps after" it is `losses[t + k]`. Offset 0 is the surprising character
itself. All results are in bits.
"""

import collections

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from hmkeras.analysis.bits import _to_bits


SurprisalRecovery = collections.namedtuple(
    "SurprisalRecovery",
    ["offsets", "loss_a", "loss_b", "counts", "positions", "overall_a",
     "overall_b"],
)
SurprisalRecovery.__doc__ = """Result of `surprisal_recovery` (all losses in bits).

Fields:
    offsets: Int array `(max_offset + 1,)`, `0, 1, ..., max_offset`.
    loss_a: Float array, model A's mean loss at `t + k` over the surprising
        positions t, for each offset k (k = 0: on the surprising characters).
    loss_b: The same for model B.
    counts: Int array, how many positions entered each mean (those with
        `t + k` inside the sequence).
    positions: Int array `(n, 1)` for 1-D losses or `(n, 2)` `(row, t)` for
        2-D losses: the surprising characters, in text order.
    overall_a: Model A's mean loss over all characters.
    overall_b: Model B's mean loss over all characters.
"""


def _check_losses(name, losses, unit):
    values = _to_bits(losses, unit)
    if values.ndim not in (1, 2):
        raise ValueError(
            f"`{name}` must have shape (T,) or (batch, T). Received shape "
            f"{values.shape}."
        )
    if values.size == 0:
        raise ValueError(f"`{name}` is empty.")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"`{name}` contains non-finite values.")
    return values


def surprisal_recovery(losses_a, losses_b, fraction=0.1, max_offset=4,
                       reference="mean", unit="bits"):
    """Mean losses of two models on and after their most surprising inputs.

    Args:
        losses_a: Per-character losses of model A, shape `(T,)` or
            `(batch, T)` (rows are independent sequences; offsets never cross
            from one row into the next).
        losses_b: Per-character losses of model B on the same characters,
            same shape.
        fraction: Share of characters taken as surprising, in (0, 1].
            Default 0.1 as in the paper. `round(fraction * size)` characters
            are taken (at least one); ties are broken in favour of earlier
            positions.
        max_offset: Largest number of steps after a surprising character to
            average over. Default 4 as in the paper.
        reference: What "surprising" is measured by: `"mean"` (default, the
            average loss of both models, as in Krause et al.), `"a"`, `"b"`,
            or an array of the same shape (only its order matters).
        unit: Unit of `losses_a` and `losses_b`: `"bits"` (default) or
            `"nats"` (e.g. Keras' crossentropy). Results are in bits.

    Returns:
        A `SurprisalRecovery` namedtuple.

    Examples:

        >>> a = np.array([1., 1., 9., 2., 1., 1., 1., 1., 1., 1.])
        >>> b = np.array([1., 1., 9., 4., 3., 1., 1., 1., 1., 1.])
        >>> r = surprisal_recovery(a, b, fraction=0.1, max_offset=2)
        >>> r.positions[:, 0].tolist(), r.loss_a.tolist(), r.loss_b.tolist()
        ([2], [9.0, 2.0, 1.0], [9.0, 4.0, 3.0])
    """
    a = _check_losses("losses_a", losses_a, unit)
    b = _check_losses("losses_b", losses_b, unit)
    if a.shape != b.shape:
        raise ValueError(
            "`losses_a` and `losses_b` must have the same shape. Received "
            f"{a.shape} and {b.shape}."
        )
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"`fraction` must be in (0, 1]. Received: {fraction}")
    if isinstance(max_offset, bool) or int(max_offset) != max_offset or (
        max_offset < 0
    ):
        raise ValueError(
            f"`max_offset` must be a non-negative integer. Received: "
            f"{max_offset!r}"
        )
    max_offset = int(max_offset)

    if isinstance(reference, str):
        if reference == "mean":
            ref = 0.5 * (a + b)  # Krause et al.: "largest average loss"
        elif reference == "a":
            ref = a
        elif reference == "b":
            ref = b
        else:
            raise ValueError(
                "`reference` must be 'mean', 'a', 'b' or an array. "
                f"Received: {reference!r}"
            )
    else:
        ref = np.asarray(reference, dtype=np.float64)
        if ref.shape != a.shape:
            raise ValueError(
                f"An array `reference` must have shape {a.shape}. Received "
                f"shape {ref.shape}."
            )

    a2, b2, ref2 = np.atleast_2d(a), np.atleast_2d(b), np.atleast_2d(ref)
    length = a2.shape[1]
    count = max(1, int(round(fraction * ref2.size)))
    # Stable sort of -ref: equal losses keep text order, earlier ones first.
    chosen = np.argsort(-ref2.reshape(-1), kind="stable")[:count]
    chosen.sort()
    rows, cols = np.divmod(chosen, length)

    offsets = np.arange(max_offset + 1)
    loss_a = np.full(offsets.shape, np.nan)
    loss_b = np.full(offsets.shape, np.nan)
    counts = np.zeros(offsets.shape, dtype=np.int64)
    for k in offsets:
        valid = cols + k < length
        counts[k] = int(valid.sum())
        if counts[k]:
            loss_a[k] = a2[rows[valid], cols[valid] + k].mean()
            loss_b[k] = b2[rows[valid], cols[valid] + k].mean()

    positions = (cols[:, None] if a.ndim == 1
                 else np.stack([rows, cols], axis=1))
    return SurprisalRecovery(offsets, loss_a, loss_b, counts, positions,
                             float(a.mean()), float(b.mean()))


def plot_surprisal_recovery(path, result, labels=("model A", "model B"),
                            include_surprising=False, title=None, dpi=120):
    """Writes a PNG like Krause et al. Fig. 3: loss after surprising inputs.

    Plots each model's mean loss (bits/char) against the number of steps
    after a surprising character, with each model's overall mean loss as a
    dashed line of the same colour for comparison.

    Args:
        path: File name of the PNG to write.
        result: A `SurprisalRecovery` from `surprisal_recovery`.
        labels: Names of model A and model B for the legend.
        include_surprising: Whether to plot offset 0 (the loss on the
            surprising characters themselves, much larger than the rest).
            Default: `False`.
        title: Optional figure title.
        dpi: Resolution of the PNG.

    Returns:
        `path`.

    Examples:

        >>> import os, tempfile
        >>> rng = np.random.default_rng(0)
        >>> r = surprisal_recovery(rng.gamma(2.0, size=500),
        ...                        rng.gamma(2.0, size=500))
        >>> out = os.path.join(tempfile.mkdtemp(), "recovery.png")
        >>> plot_surprisal_recovery(out, r, labels=("mLSTM", "LSTM")) == out
        True
    """
    if len(labels) != 2:
        raise ValueError(f"`labels` must name two models. Received: {labels!r}")
    start = 0 if include_surprising else 1
    offsets = np.asarray(result.offsets)[start:]
    if offsets.size == 0:
        raise ValueError("`result` has no offsets to plot (max_offset=0).")
    fig = Figure(figsize=(5.0, 3.6))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    series = ((result.loss_a, result.overall_a, "tab:blue", "o"),
              (result.loss_b, result.overall_b, "tab:orange", "s"))
    for label, (loss, overall, color, marker) in zip(labels, series):
        ax.plot(offsets, np.asarray(loss)[start:], color=color, marker=marker,
                label=label)
        ax.axhline(overall, color=color, linestyle="--", linewidth=1.0,
                   label=f"{label}, all characters")
    ax.set_xticks(offsets)
    ax.set_xlabel("time steps after a surprising character")
    ax.set_ylabel("cross entropy (bits/char)")
    if title:
        ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    return path
