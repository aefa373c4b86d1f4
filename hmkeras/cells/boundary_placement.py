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

FORMS = ("entropy", "rise")
# Eq. (2): `d` is this fraction of the mean absolute change of the entropy.
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


@keras.saving.register_keras_serializable(package="hmkeras")
class BoundaryPlacement:
    """Boundaries where the next symbol is uncertain, as a loss (Eq. 1).

    Args:
        weight: Finite factor >= 0 of the loss (nats per deciding step,
            the unit of the language-modelling loss); default 1.
        form: `"entropy"` (Eq. 1: every layer where the next symbol is
            more uncertain than at the layer's average deciding step) or
            `"rise"` (Eq. 2: `z^1` where the uncertainty rises, for text
            whose words nothing marks; the layers above as in Eq. 1).

    Call arguments:
        boundaries: The `(batch, time, layers)` boundaries `z^1 ..
            z^{L-1}` of a hierarchical cell (`cell.split_outputs(y)[1]`).
        logits: The `(batch, time, classes)` logits of the model's
            prediction of the next step.
        mask: Optional `(batch, time)` mask; masked steps decide nothing.

    Returns:
        The scalar loss, float32 (float64 for float64 boundaries).

    Examples:

        >>> BoundaryPlacement(weight=2.0).get_config()
        {'weight': 2.0, 'form': 'entropy'}
    """

    def __init__(self, weight=1.0, form="entropy"):
        self.weight = argument_checks.check_float("weight", weight, minimum=0)
        self.form = argument_checks.check_choice("form", form, FORMS)

    def __call__(self, boundaries, logits, mask=None):
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
        if self.form == "rise":  # Eq. (2): z^1 decides where H_{t-1} is known
            change = ops.pad(entropy[:, 1:] - entropy[:, :-1], [[0, 0], [1, 0], [0, 0]])
            active = ops.concatenate([ops.pad(active[:, 1:, :1], [[0, 0], [1, 0], [0, 0]]),
                                      active[..., 1:]], axis=-1)
        # Under a strategy `m^l`, `|A^l|` (and `d`) are the whole batch's;
        # each replica's loss is its share of Eq. (1) times the replicas,
        # which Keras divides back out before it sums the gradients.
        sums = [ops.sum(active, axis=(0, 1)),            # |A^l|
                ops.sum(active * entropy, axis=(0, 1))]  # sum of H over A^l
        if self.form == "rise":  # sum of |H_t - H_{t-1}| over A^1
            sums.append(ops.sum(active[..., 0] * ops.abs(change[..., 0])))
        (steps, total, *spread), replicas = whole_batch_sums(sums)
        steps = ops.maximum(steps, 1.0)
        margin = entropy - total / steps  # H_t - m^l
        if self.form == "rise":  # Eq. (2): H_t - H_{t-1} - d for z^1
            typical = RISE_FRACTION * spread[0] / steps[0]
            margin = ops.concatenate([change - typical, margin[..., 1:]], axis=-1)
        target = ops.cast(margin > 0.0, dtype)
        misplaced = _distance(z, target) * ops.abs(margin) * active  # Eq. (1)
        return self.weight * replicas * ops.sum(ops.sum(misplaced, axis=(0, 1)) / steps)

    def get_config(self):
        return {"weight": self.weight, "form": self.form}

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
        form: As in `BoundaryPlacement`: `"entropy"` (default) or
            `"rise"` (text whose words nothing marks).
        **kwargs: Keras layer arguments (`name`, ...).

    Call arguments:
        inputs: `[outputs, logits]`: the `(batch, time, features)` sequence
            output of `hmkeras.HMLSTM` / `HMRNN` (or `RNN(HMLSTMCell(...))`)
            and the `(batch, time, classes)` logits of the next step.
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

    def __init__(self, boundary_layers=2, weight=1.0, form="entropy", **kwargs):
        super().__init__(**kwargs)
        self.boundary_layers = argument_checks.check_int("boundary_layers", boundary_layers, minimum=1)
        self.placement = BoundaryPlacement(weight=weight, form=form)

    def call(self, inputs, training=False):
        outputs, logits = inputs
        if training:
            self.add_loss(self.placement(outputs[..., -self.boundary_layers:], logits))
        return logits

    def compute_output_shape(self, input_shape):
        return input_shape[1]

    def get_config(self):
        return {**super().get_config(), "boundary_layers": self.boundary_layers,
                "weight": self.placement.weight, "form": self.placement.form}
