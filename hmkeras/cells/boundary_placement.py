"""`BoundaryPlacement`: where a boundary goes, from the model's own uncertainty.

An extension beyond Chung et al. (2017), used beside `BoundaryPrior`.  The
prior says how many boundaries each layer places; the language-modelling
loss alone does not say where.  Inside a unit whose rest is already
determined (the end of a long word), handing the bottom layer's state up
and flushing it costs the language model nothing, so every such step is an
optimum, and which one a training run finds depends on its initialization
(`docs/results/char-lm.md`, "Where the boundaries land: a diagnosis").

The placement term breaks that tie with the classic criterion of
unsupervised segmentation (Harris 1955; Elman 1990; the entropy spikes of
Nawrot et al. 2023): a unit ends where the next symbol is hard to predict.
With `H_t` the entropy, in nats, of the model's own predictive
distribution for step `t + 1` (held constant: no gradient flows into the
predictions), and for boundary layer `l` the steps `A^l` at which the
layer computes its boundary (every step for `z^1`; for `l > 1` the steps
at which the layer below hands up or the layer itself flushes, `z^{l-1}_t
= 1` or `z^l_{t-1} = 1`), with `m^l` the mean of `H` over `A^l`:

    P = weight * sum_l 1 / |A^l| * sum_{t in A^l} |z^l_t - [H_t > m^l]| * |H_t - m^l|
                                                                        (1)

in nats: for each layer, the mean over its decisions of the entropy
margin of a misplaced one, a boundary at a step more predictable than
the layer's average deciding step or none at a step less predictable.
Its gradient with respect to `z^l_t`, `weight * (m^l - H_t) / |A^l|`, is
linear in the margin: it raises the detector where the next symbol is
uncertain and lowers it where it is determined.  It has no target rate
of its own (the prior holds the rate), and each layer's decisions weigh
alike, so an upper layer, which decides at few steps (where the layer
below hands up), is pushed per decision as hard as the bottom one.

On text this puts `z^1` on the separator after a word (the next word's
first letter is the uncertain symbol) and `z^2`, among the steps where
`z^1` fires, on those before the less predictable words: on the embedded
corpus the spaces after a determiner, where a noun or adjective of a large
class follows, more than the phrase ends (`docs/results/char-lm.md`, "Why
z^2 does not mark the phrases").

On text whose words nothing marks (no space: `hmkeras.data.Utterances`)
the bottom layer is better placed by where the uncertainty *rises* than by
how high it is: after the last symbol of a word the next one is harder to
predict than the symbol just read was (Harris 1955; Elman 1990), whereas
a long word's middle and a short word's end can be equally uncertain.
The form `"rise"` uses that criterion for `z^1`: with `r_t = H_t - H_{t-1}
- d` the rise beyond `d`, half the mean absolute change `|H_t - H_{t-1}|`
over `A^1` (a rise smaller than the typical fluctuation of the
uncertainty, e.g. inside a word already determined, is no boundary),

    P = weight * (1 / |A^1| * sum_{t in A^1} |z^1_t - [r_t > 0]| * |r_t|
                  + sum_{l > 1} (the layer's term of Eq. 1)),                     (2)

with `A^1` every step but a window's first (whose `H_{t-1}` the window
does not hold). `H_t` and `H_{t-1}` are both known when `z^1_t` is
computed: the rule needs nothing that comes later
(`docs/results/word-discovery.md`, "Word discovery: words that nothing
marks", compares the rules and how closely z^1 follows them). The rise
also sets how many boundaries `z^1` places: give the prior no rate for
`z^1` (`BoundaryPrior((None, 15))`).

The form `"surprisal"` reads the rise of a signal that also knows which
symbol came next (a training target may look ahead; the detector cannot):
with `S_t = -log p_t(x_{t+1})` the surprisal of the symbol that does come
after step `t` (the next input of the window),

    v_t = H_t + (S_t - H_{t+1}) / 2                                              (3)

and `r_t = v_t - v_{t-1} - d`, `d` half the mean absolute change of `v`
over `A^1`, in Eq. (2) in place of the entropy's rise; `A^1` is every step
but a window's first and last (whose `v_{t-1}`, or `S_t` and `H_{t+1}`,
the window does not hold). A word ends before a symbol that was hard to
predict (`H_t`, and `S_t`: the model expected it less than on average)
and that, once read, leaves the rest of the word easier to predict than
the model was before it (`H_t - H_{t+1}`: the first symbols of a word say
the most about it). On Brent's phonemes and letters the surprisal form
trains `z^1` to more of the words than the entropy's rise does
(`docs/results/word-discovery.md`, "Better targets: the surprisal of the
next symbol"); it needs the window's input symbols (`tokens`).

The form `"bidirectional"` adds the same rise read in the other direction
(Eq. 4). A word's first symbol is hard to predict from what follows it as
much as its end is from what precedes it, and a backward language model
says where a word begins: with `v'_j` the signal of Eq. (3) of a
language model that reads the window reversed (`backward_logits`: its
predictions in its reading order, of `x_{T-2-j}` after reading `x_{T-1}
.. x_{T-1-j}`; `CharLanguageModel` trains one beside the hierarchy, on
the same windows) and `r'_j = v'_j - v'_{j-1} - d'` its rise, `d'` half
its mean absolute change, the rise between `x_t` and `x_{t+1}` read
backwards is `r'_{T-2-t}`, and `z^1` is trained towards

    [r_t + r'_{T-2-t} > 0],  weighted by |r_t + r'_{T-2-t}|,                      (4)

in Eq. (2), with `r'` taken as 0 at the steps it does not reach (the
window's last two). The targets read the whole window; `z^1` still
decides each boundary online, before the next symbol is read. On Brent's
phonemes the rise rule on the two directions' sum scores 0.85 against
the gold words where each direction alone scores 0.78-0.79
(`docs/results/word-discovery.md`, "Both directions").

With `upper_layers=False` only `z^1` is placed (the first term of Eq. 1
or 2, or Eq. 4's); the layers above are left to the prior and the
language model.  On the embedded corpus the terms of `z^2` are what
put `z^2` on the steps where `z^1` fires: without them the language
model moves `z^2` to the step after, a step at which the layer above
receives the same summary (layer 2 is copied there), and on one seed of
three to the step after the phrase ends (`docs/results/char-lm.md`,
"Without z^2's own placement term").  Beside nested boundaries (the
cells' `nested_boundaries`: `z^2` only where `z^1` fires) `z^1`'s term
alone lets `z^2` mark the phrases on four seeds of five, and the
character examples use that on text with spaces
(`docs/results/char-lm.md`, "Boundaries nested in the layer below's").

In the discrete boundary modes the gradient reaches each detector through
the straight-through estimator (Chung et al. Eq. 8-9).

Examples:

    Uniform predictions before step 3, certain ones elsewhere: a boundary
    at step 1 is misplaced, one at step 3 is not.

    >>> import numpy as np
    >>> logits = np.zeros((1, 4, 4), "float32"); logits[0, [0, 1, 3]] = [9, 0, 0, 0]
    >>> z = np.zeros((1, 4, 1), "float32")
    >>> placement = BoundaryPlacement()
    >>> z[0, 1] = 1; misplaced = float(placement(z, logits))
    >>> z[0] = 0; z[0, 2] = 1; placed = float(placement(z, logits))
    >>> misplaced > placed == 0.0
    True
"""

import keras
from keras import ops

from hmkeras import argument_checks
from hmkeras.cells.boundary_prior import whole_batch_sums

FORMS = ("entropy", "rise", "surprisal", "bidirectional")
# The forms whose `z^1` targets are rises of a signal (Eq. 2, 3, 4).
RISE_FORMS = ("rise", "surprisal", "bidirectional")
# The forms that read the symbol after each step (Eq. 3, 4).
LOOKAHEAD_FORMS = ("surprisal", "bidirectional")
# Eq. (2): `d` is by default this fraction of the mean absolute change of
# the signal (`BoundaryPlacement(rise_fraction=...)`).
RISE_FRACTION = 0.5


def predictive_entropy(logits, dtype="float32"):
    """`H_t = -sum_k p_k log p_k` of `softmax(logits)` over the last axis,
    in nats, as a constant (no gradient) of `dtype`.

    Examples:

        >>> import numpy as np
        >>> round(float(predictive_entropy(np.zeros((1, 4), "float32"))[0]), 4)  # log 4
        1.3863
    """
    logits = ops.stop_gradient(ops.cast(logits, dtype))
    log_p = ops.log_softmax(logits, axis=-1)
    return -ops.sum(ops.exp(log_p) * log_p, axis=-1)


def rise_signal(entropy, logits, tokens):
    """`v_t` of Eq. (3) for the steps `t = 0 .. T-2` of a window of `T`,
    `(batch, T - 1, 1)`, from `H_t` (`(batch, T, 1)`), the logits and the
    window's input `tokens` (`(batch, T)`: `x_{t+1}` is `tokens[:, t + 1]`);
    a constant (no gradient).

    Examples:

        >>> import numpy as np
        >>> logits = np.zeros((1, 3, 4), "float32")  # uniform: H = S = log 4
        >>> v = rise_signal(predictive_entropy(logits)[..., None], logits, np.zeros((1, 3), "int32"))
        >>> tuple(v.shape), round(float(v[0, 0, 0]), 4)
        ((1, 2, 1), 1.3863)
    """
    log_p = ops.log_softmax(ops.stop_gradient(ops.cast(logits[:, :-1], entropy.dtype)), axis=-1)
    following = ops.one_hot(ops.cast(tokens[:, 1:], "int32"), ops.shape(log_p)[-1],
                            dtype=log_p.dtype)
    surprisal = -ops.sum(log_p * following, axis=-1, keepdims=True)  # S_t
    return entropy[:, :-1] + (surprisal - entropy[:, 1:]) / 2  # Eq. (3)


def backward_rise(backward_logits, tokens, dtype="float32"):
    """`(change, reached)` of Eq. (4): per step `t` of a window of `T`, the
    change `v'_{T-2-t} - v'_{T-3-t}` of the backward signal (Eq. 3 on the
    predictions of a language model reading the window reversed), and 1
    where it exists (`t <= T - 3`), 0 at the window's last two steps; both
    `(batch, T, 1)` constants of `dtype`.

    Args:
        backward_logits: `(batch, T, classes)`, in the backward model's
            reading order: row `j` predicts `x_{T-2-j}` after `x_{T-1} ..
            x_{T-1-j}`.
        tokens: The window's `(batch, T)` input symbols, in forward order.
    """
    tokens = _checked_tokens(tokens)
    if backward_logits is None:
        raise ValueError(
            "BoundaryPlacement(form='bidirectional') needs `backward_logits`, the "
            "predictions of a language model reading the window reversed.")
    entropy = predictive_entropy(backward_logits, dtype)[..., None]
    signal = rise_signal(entropy, backward_logits, ops.flip(tokens, axis=1))  # v'_j
    change = ops.flip(signal[:, 1:] - signal[:, :-1], axis=1)  # step t = T-2-j
    edges = [[0, 0], [0, 2], [0, 0]]
    return ops.pad(change, edges), ops.pad(ops.ones_like(change), edges)


def backward_cross_entropy(backward_logits, tokens):
    """The backward language model's loss: the mean cross entropy (nats)
    of its prediction of `x_{T-2-j}` at each reversed step `j < T - 1`."""
    following = ops.flip(ops.cast(tokens, "int32"), axis=1)[:, 1:]
    return ops.mean(ops.sparse_categorical_crossentropy(
        following, ops.cast(backward_logits[:, :-1], "float32"), from_logits=True))


def deciding_steps(boundaries, mask=None):
    """`A^l` of Eq. (1) as `(batch, time, layers)` 0/1 weights (constant).

    Layer 1 decides at every step; layer `l > 1` where `z^{l-1}_t = 1` or
    `z^l_{t-1} = 1`, read as `z > 1/2` for soft boundaries (before the
    window's first step the layer is taken not to have ended a segment).
    Masked steps decide nothing.
    """
    boundaries = ops.convert_to_tensor(boundaries)
    z = ops.cast(ops.stop_gradient(boundaries) > 0.5, boundaries.dtype)
    # `z^{l-1}_t`, with `z^0_t = 1`: the bottom layer's column is all ones.
    below = ops.concatenate([ops.ones_like(z[..., :1]), z[..., :-1]], axis=-1)
    previous = ops.pad(z[:, :-1], [[0, 0], [1, 0], [0, 0]])
    active = ops.maximum(below, previous)
    if mask is not None:
        active = active * ops.cast(mask, active.dtype)[..., None]
    return active


def _distance(z, target):
    """`|z - target|` of Eq. (1), whose gradient with respect to `z` is
    `sign(z - target)`: 0 where a boundary is where it belongs.

    TensorFlow's (and PyTorch's) `abs` has that gradient; JAX's is 1 at 0,
    which would push every well-placed `z = 1` down, so elsewhere it is
    `sign(d) * d`, the same value with the gradient `sign(d)`.
    """
    difference = z - target
    if keras.backend.backend() == "tensorflow":
        return ops.abs(difference)
    return ops.sign(difference) * difference


def _checked_tokens(tokens):
    if tokens is None:
        raise ValueError(
            "BoundaryPlacement(form='surprisal') needs `tokens`, the window's input "
            "symbols (batch, time), to read the surprisal of the next symbol.")
    tokens = ops.convert_to_tensor(tokens)
    if len(tokens.shape) != 2:
        raise ValueError(
            "BoundaryPlacement: `tokens` must be the (batch, time) input symbols. "
            f"Received a tensor of shape {tuple(tokens.shape)}.")
    return tokens


@keras.saving.register_keras_serializable(package="hmkeras")
class BoundaryPlacement:
    """Boundaries where the next symbol is uncertain, as a loss (Eq. 1).

    Args:
        weight: Finite factor >= 0 of the loss (nats per deciding step,
            the unit of the language-modelling loss); default 1.
        form: `"entropy"` (Eq. 1: every layer where the next symbol is
            more uncertain than at the layer's average deciding step) or
            `"rise"` (Eq. 2: `z^1` where the uncertainty rises, for text
            whose words nothing marks; the layers above as in Eq. 1) or
            `"surprisal"` (Eq. 3: `z^1` where a signal that also reads the
            next symbol's surprisal rises; needs `tokens`) or
            `"bidirectional"` (Eq. 4: that rise read forwards and backwards;
            needs `tokens` and `backward_logits`).
        upper_layers: Place the layers above the bottom one too (default);
            False places `z^1` only and leaves `z^2 ..` to the prior and
            the language-modelling loss.
        rise_fraction: Finite `d` >= 0 of the rise forms (Eq. 2-4) as a
            fraction of the signal's mean absolute change (of each
            direction's, Eq. 4); default `RISE_FRACTION`. A larger
            fraction asks a larger rise: fewer, surer boundaries. Ignored
            by the form `"entropy"`.

    Call arguments:
        boundaries: The `(batch, time, layers)` boundaries `z^1 ..
            z^{L-1}` of a hierarchical cell (`cell.split_outputs(y)[1]`).
        logits: The `(batch, time, classes)` logits of the model's
            prediction of the next step.
        mask: Optional `(batch, time)` mask; masked steps decide nothing
            (not with the form `"bidirectional"`, whose backward model
            reads every step).
        tokens: The `(batch, time)` input symbols of the window, for the
            forms `"surprisal"` and `"bidirectional"` (the symbol after
            step `t` is the input of step `t + 1`); ignored by the others.
        backward_logits: For the form `"bidirectional"`, the `(batch,
            time, classes)` predictions of a language model reading the
            window reversed, in its reading order (`backward_rise`).

    Returns:
        The scalar loss, float32 (float64 for float64 boundaries).

    Examples:

        >>> BoundaryPlacement(weight=2.0).get_config()
        {'weight': 2.0, 'form': 'entropy', 'upper_layers': True, 'rise_fraction': 0.5}
    """

    def __init__(self, weight=1.0, form="entropy", upper_layers=True,
                 rise_fraction=RISE_FRACTION):
        self.weight = argument_checks.check_float("weight", weight, minimum=0)
        self.form = argument_checks.check_choice("form", form, FORMS)
        self.upper_layers = argument_checks.check_bool("upper_layers", upper_layers)
        self.rise_fraction = argument_checks.check_float(
            "rise_fraction", rise_fraction, minimum=0)

    def __call__(self, boundaries, logits, mask=None, tokens=None, backward_logits=None):
        boundaries = ops.convert_to_tensor(boundaries)
        float64 = keras.backend.standardize_dtype(boundaries.dtype) == "float64"
        dtype = "float64" if float64 else "float32"
        z = ops.cast(boundaries, dtype)
        if len(z.shape) != 3:
            raise ValueError(
                "BoundaryPlacement needs the (batch, time, layers) boundaries of a "
                f"hierarchical cell. Received a tensor of shape {tuple(z.shape)}."
            )
        entropy = predictive_entropy(logits, dtype)[..., None]
        active = deciding_steps(z, mask)
        if self.form in RISE_FORMS:
            change, active = self._rise(entropy, logits, tokens, active)
        # Under a strategy `m^l`, `|A^l|` (and `d`) are the whole batch's;
        # each replica's loss is its share of Eq. (1) times the replicas,
        # which Keras divides back out before it sums the gradients.
        sums = [ops.sum(active, axis=(0, 1)),            # |A^l|
                ops.sum(active * entropy, axis=(0, 1))]  # sum of H over A^l
        if self.form in RISE_FORMS:  # sum of |H_t - H_{t-1}| (|v_t - v_{t-1}|) over A^1
            sums.append(ops.sum(active[..., 0] * ops.abs(change[..., 0])))
        if self.form == "bidirectional":  # the steps of r' and the sum of |v'_j - v'_{j-1}|
            if mask is not None:
                raise ValueError(
                    "BoundaryPlacement(form='bidirectional') takes no `mask`: its backward "
                    "model reads every step of the window. Received a mask.")
            backward, reached = backward_rise(backward_logits, tokens, dtype)
            sums += [ops.sum(reached), ops.sum(ops.abs(backward))]
        (steps, total, *spread), replicas = whole_batch_sums(sums)
        steps = ops.maximum(steps, 1.0)
        margin = entropy - total / steps  # H_t - m^l
        if self.form in RISE_FORMS:  # Eq. (2): H_t - H_{t-1} - d (v_t - v_{t-1} - d) for z^1
            rise = change - self.rise_fraction * spread[0] / steps[0]
            if self.form == "bidirectional":  # Eq. (4): r_t + r'_{T-2-t}
                typical = self.rise_fraction * spread[2] / ops.maximum(spread[1], 1.0)
                rise = rise + reached * (backward - typical)
            margin = ops.concatenate([rise, margin[..., 1:]], axis=-1)
        target = ops.cast(margin > 0.0, dtype)
        if not self.upper_layers:  # z^1's term only
            active = ops.concatenate(
                [active[..., :1], ops.zeros_like(active[..., 1:])], axis=-1)
        misplaced = _distance(z, target) * ops.abs(margin) * active  # Eq. (1)
        return self.weight * replicas * ops.sum(ops.sum(misplaced, axis=(0, 1)) / steps)

    def training_losses(self, boundaries, logits, mask=None, tokens=None,
                        backward_logits=None):
        """The losses a model adds while training: this placement and, with
        `backward_logits`, the backward model's own cross entropy
        (`backward_cross_entropy`), which trains it on its own task."""
        losses = [self(boundaries, logits, mask=mask, tokens=tokens,
                       backward_logits=backward_logits)]
        if backward_logits is not None:
            losses.append(backward_cross_entropy(backward_logits, tokens))
        return losses

    def _rise(self, entropy, logits, tokens, active):
        """`(change, active)` of the rise forms: the signal's change
        `H_t - H_{t-1}` (Eq. 2) or `v_t - v_{t-1}` (Eq. 3, 4) per step, 0
        where `z^1` decides nothing, and `A` with `z^1`'s column limited to
        the steps that have a change: not the window's first, nor, for
        Eq. 3, its last or a step before a masked one (no `x_{t+1}`)."""
        signal, ahead = entropy, 0
        if self.form in LOOKAHEAD_FORMS:
            signal, ahead = rise_signal(entropy, logits, _checked_tokens(tokens)), 1
        edges = [[0, 0], [1, ahead], [0, 0]]  # the steps without a change
        change = ops.pad(signal[:, 1:] - signal[:, :-1], edges)
        deciding = ops.pad(active[:, 1:ops.shape(active)[1] - ahead, :1], edges)
        if ahead:  # the next step must be one: x_{t+1} is a symbol of the text
            following = ops.pad(active[:, 1:, :1], [[0, 0], [0, 1], [0, 0]])
            deciding = deciding * following
        return change, ops.concatenate([deciding, active[..., 1:]], axis=-1)

    def get_config(self):
        return {"weight": self.weight, "form": self.form, "upper_layers": self.upper_layers,
                "rise_fraction": self.rise_fraction}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


@keras.saving.register_keras_serializable(package="hmkeras")
class BoundaryPlacementLoss(keras.layers.Layer):
    """Adds `BoundaryPlacement` to a model of your own; the identity on the logits.

    `CharLanguageModel` adds the placement itself. In a model of your own,
    put this layer after the logits: it reads the boundaries (the last
    `boundary_layers` columns of a hierarchical layer's sequence output)
    and the logits, adds Eq. (1) to the model's losses while training, and
    returns the logits unchanged.

    Args:
        boundary_layers: Number of boundary columns at the end of the
            hierarchical output (`num_layers - 1`); default 2.
        weight: As in `BoundaryPlacement`; default 1.
        form: As in `BoundaryPlacement`: `"entropy"` (default), `"rise"`,
            `"surprisal"` or `"bidirectional"` (text whose words nothing
            marks; the last two need the tokens, the last also a backward
            language model's logits).
        upper_layers: As in `BoundaryPlacement`: False places `z^1` only.
        rise_fraction: As in `BoundaryPlacement`: the rise forms' `d` as a
            fraction of the signal's mean absolute change.
        **kwargs: Keras layer arguments (`name`, ...).

    Call arguments:
        inputs: `[outputs, logits]`, `[outputs, logits, tokens]` or
            `[outputs, logits, tokens, backward_logits]`: the `(batch,
            time, features)` sequence output of `hmkeras.HMLSTM` / `HMRNN`
            (or `RNN(HMLSTMCell(...))`), the `(batch, time, classes)`
            logits of the next step, for the forms `"surprisal"` and
            `"bidirectional"` the `(batch, time)` input symbols, and for
            `"bidirectional"` the logits of a language model reading the
            window reversed, in its reading order (e.g.
            `keras.layers.LSTM(..., go_backwards=True)` and a `Dense`); the
            layer then adds that model's own loss too
            (`backward_cross_entropy`).
        training: Adds the loss only while training.

    Examples:

        >>> import keras, numpy as np, hmkeras
        >>> tokens = keras.Input((None,), dtype="int32")
        >>> rnn = hmkeras.HMLSTM(8, return_sequences=True)
        >>> outputs = rnn(keras.layers.Embedding(20, 4)(tokens))
        >>> logits = keras.layers.Dense(20)(outputs)
        >>> logits = hmkeras.BoundaryPlacementLoss(boundary_layers=2)([outputs, logits])
        >>> model = keras.Model(tokens, logits)
        >>> _ = model(np.zeros((2, 6), "int32"), training=True)
        >>> len(model.losses)  # the layer's prior and the placement
        2
    """

    def __init__(self, boundary_layers=2, weight=1.0, form="entropy", upper_layers=True,
                 rise_fraction=RISE_FRACTION, **kwargs):
        super().__init__(**kwargs)
        self.boundary_layers = argument_checks.check_int("boundary_layers", boundary_layers, minimum=1)
        self.placement = BoundaryPlacement(weight=weight, form=form, upper_layers=upper_layers,
                                           rise_fraction=rise_fraction)

    def call(self, inputs, training=False):
        outputs, logits, *extra = inputs
        extra = [*extra, None, None]
        if training:
            for loss in self.placement.training_losses(
                    outputs[..., -self.boundary_layers:], logits, tokens=extra[0],
                    backward_logits=extra[1]):
                self.add_loss(loss)
        return logits

    def compute_output_shape(self, input_shape):
        return input_shape[1]

    def get_config(self):
        return {**super().get_config(), "boundary_layers": self.boundary_layers,
                "weight": self.placement.weight, "form": self.placement.form,
                "upper_layers": self.placement.upper_layers,
                "rise_fraction": self.placement.rise_fraction}
