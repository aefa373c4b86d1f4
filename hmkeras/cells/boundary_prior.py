"""`BoundaryPrior`: an expected segment length for every boundary layer.

An extension beyond Chung et al. (2017) and Kadar et al. (2018).  Trained
on the language-modelling loss alone, a hierarchical cell's boundary
detectors fire on most steps (z^1 on 80-95 % of the characters, Kadar et
al. Table 2): every layer then updates at nearly every step and nothing is
segmented.  The prior states what a boundary layer is for, in the user's
terms: layer `l` ends a segment about every `segment_lengths[l]` steps.

Two forms, `p_l = 1 / segment_lengths[l]` the target rate of layer `l`,
`k_bl = sum_t z^l_bt` the boundaries of row `b` of a `(batch, time)`
window, `n_b` its steps:

* `"rate"` (the default): the quadratic penalty on the batch's rate,

      R = weight * sum_l (sum_b k_bl / sum_b n_b - p_l) ** 2,            (1)

  weight 5 by default (a rate 0.3 away from its target costs 0.45 nats
  per step).  Near its target the batch's rate costs almost nothing, so
  the language model alone decides where the boundaries go.
* `"binomial"`: the negative log-likelihood of each row's boundary count
  under `Binomial(n_b, p_l)`, per step,

      R = weight * sum_l sum_b -log Binom(k_bl; n_b, p_l) / sum_b n_b,   (2)
      -log Binom(k; n, p) = -log C(n, k) - k log p - (n - k) log(1 - p)

  with `log C(n, k)` through `lgamma`, so `k` may be fractional
  (`boundary_mode="soft"`); a log-prior in nats per step, weight 1.  It
  holds every row to its own count: its gradient with respect to one
  boundary, `psi(n - k + 1) - psi(k + 1) + log(p / (1 - p))` over
  `sum_b n_b` (`psi` the digamma function), is the log-odds of the row's
  rate against the target, not zero when the batch is on target.

`"rate"` is the default form, of `BoundaryPrior` and of the sequence
layers' `boundary_prior`; the two forms are compared on the main job in
`docs/results/char-lm.md`, "The boundary prior on the main job".

In the discrete boundary modes `z` is binary and its gradient reaches each
detector through the straight-through estimator (Chung et al. Eq. 8-9):
the gradient of (1) or (2) with respect to `z^l_t` becomes that with
respect to `z~^l_t = hard_sigm(s_z)`, zero where the detector is
saturated.

The prior reads the last `len(segment_lengths)` columns of a hierarchical
cell's sequence output `[h^1 | ... | h^L | z^1 ... z^{L-1}]`.  The
sequence layers `hmkeras.HMLSTM` / `hmkeras.HMRNN` add it themselves
(`boundary_prior=`, on by default); around `RNN(HMLSTMCell(...))` give it
as the RNN's activity regularizer (the RNN returns its sequence and no
state).

Examples:

    >>> import keras, numpy as np, hmkeras
    >>> rnn = keras.layers.RNN(
    ...     hmkeras.HMLSTMCell(8), return_sequences=True,
    ...     activity_regularizer=hmkeras.BoundaryPrior((5, 15)))
    >>> y = rnn(np.random.default_rng(0).normal(size=(2, 6, 4)).astype("float32"))
    >>> len(rnn.losses)
    1
"""

import keras
import numpy as np
from keras import ops

from hmkeras import argument_checks

FORMS = ("rate", "binomial")
# Default weight of each form (see the module docstring).
DEFAULT_WEIGHTS = {"rate": 5.0, "binomial": 1.0}
# Default expected segment lengths: 5 steps for the bottom boundary layer
# (English words with their separator average 5-6 characters; the embedded
# corpus' 5.4), 3 times longer for each layer above.
BOTTOM_SEGMENT_LENGTH = 5.0
SEGMENT_LENGTH_GROWTH = 3.0


def default_segment_lengths(num_boundary_layers):
    """`(5, 15, 45, ...)`: the default expected segment length per layer.

    Examples:

        >>> default_segment_lengths(2)
        (5.0, 15.0)
    """
    return tuple(
        BOTTOM_SEGMENT_LENGTH * SEGMENT_LENGTH_GROWTH**layer
        for layer in range(num_boundary_layers)
    )


def check_segment_lengths(segment_lengths, num_boundary_layers=None):
    """`segment_lengths` as a tuple of floats > 1 or None, one per boundary layer.

    A list, tuple or 1-D NumPy array of Python or NumPy numbers; None for
    a layer whose number of boundaries the prior leaves free (another
    loss, e.g. `BoundaryPlacement(form="rise")`, sets it), as long as one
    layer has a length.

    Raises:
        ValueError: naming `segment_lengths`, for anything but a non-empty
            list or tuple of finite numbers > 1 and None, with at least one
            number (or, when `num_boundary_layers` is given, a list of
            another length).

    Examples:

        >>> check_segment_lengths([None, 15])
        (None, 15.0)
    """
    if isinstance(segment_lengths, np.ndarray) and segment_lengths.ndim == 1:
        segment_lengths = segment_lengths.tolist()
    allowed = ("a list or tuple with one expected segment length > 1 (in steps) per boundary "
               "layer, or None for a layer left free (at least one length)")
    if num_boundary_layers is not None:
        allowed += f" (num_layers - 1 = {num_boundary_layers} values)"
    if not isinstance(segment_lengths, (list, tuple)) or not segment_lengths or (
        num_boundary_layers is not None and len(segment_lengths) != num_boundary_layers
    ) or all(length is None for length in segment_lengths):
        raise ValueError(
            f"`segment_lengths` must be {allowed}. Received: segment_lengths={segment_lengths!r}"
        )
    try:
        return tuple(
            None if length is None else argument_checks.check_float(
                "segment_lengths", length, minimum=1, exclusive_minimum=True
            )
            for length in segment_lengths
        )
    except ValueError:
        raise ValueError(
            f"`segment_lengths` must be {allowed}. Received: segment_lengths={segment_lengths!r}"
        ) from None


def prior_for(form, segment_lengths, num_layers):
    """The `BoundaryPrior` of `form` (None for None) for a hierarchy of
    `num_layers` layers; `segment_lengths=None` takes the defaults.

    Raises:
        ValueError: naming `boundary_prior` or `segment_lengths`.
    """
    if form is None:
        if segment_lengths is not None:
            raise ValueError(
                "`segment_lengths` needs a boundary prior: give boundary_prior="
                f"one of {list(FORMS)}, or leave segment_lengths=None. "
                f"Received: segment_lengths={segment_lengths!r}, boundary_prior=None"
            )
        return None
    form = argument_checks.check_choice("boundary_prior", form, FORMS + (None,))
    if segment_lengths is None:
        segment_lengths = default_segment_lengths(num_layers - 1)
    return BoundaryPrior(check_segment_lengths(segment_lengths, num_layers - 1), form=form)


def check_prior_fields(config, hierarchical_cells):
    """Checks and normalizes, in place, the prior fields of a model
    configuration: `config.boundary_prior` and `config.segment_lengths`.

    The configurations of the models with a boundary prior
    (`CharLanguageModelConfig`, `HandwritingModelConfig`,
    `WordLanguageModelConfig`) share this check. For a cell in
    `hierarchical_cells` the fields must make a prior (`prior_for` with
    `config.num_layers`; given lengths are stored as a list of floats);
    for another cell `boundary_prior` must still be one of the forms or
    None (it is then unused) and `segment_lengths` must be None.

    Raises:
        ValueError: naming `boundary_prior` or `segment_lengths`.

    Examples:

        >>> import types
        >>> config = types.SimpleNamespace(cell="lstm", num_layers=2,
        ...                                boundary_prior="rate", segment_lengths=[4])
        >>> check_prior_fields(config, ("hmlstm",))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: `segment_lengths` applies to the hierarchical cells ['hmlstm']. ...
    """
    if config.cell in hierarchical_cells:
        prior = prior_for(config.boundary_prior, config.segment_lengths, config.num_layers)
        if prior is not None and config.segment_lengths is not None:
            config.segment_lengths = list(prior.segment_lengths)
        return
    if config.boundary_prior is not None:
        argument_checks.check_choice("boundary_prior", config.boundary_prior, FORMS + (None,))
    if config.segment_lengths is not None:
        raise ValueError(
            "`segment_lengths` applies to the hierarchical cells "
            f"{list(hierarchical_cells)}. Received: cell={config.cell!r}, "
            f"segment_lengths={config.segment_lengths!r}"
        )


def binomial_negative_log_likelihood(counts, steps, probability):
    """`-log Binom(counts; steps, probability)` (Eq. 2), elementwise.

    `counts` may be fractional (`lgamma` extends the binomial coefficient).

    Examples:

        >>> import math
        >>> round(float(binomial_negative_log_likelihood(1.0, 2.0, 0.5)), 6) == round(-math.log(0.5), 6)
        True
    """
    counts = ops.convert_to_tensor(counts)
    steps = ops.cast(steps, counts.dtype)
    probability = ops.cast(probability, counts.dtype)
    log_choose = (
        _lgamma(steps + 1.0)
        - _lgamma(counts + 1.0)
        - _lgamma(steps - counts + 1.0)
    )
    return -(
        log_choose
        + counts * ops.log(probability)
        + (steps - counts) * ops.log1p(-probability)
    )


def _lgamma(x):
    """`log |Gamma(x)|` elementwise, with its gradient (the digamma function).

    `keras.ops` has no log-gamma function, so each backend's own:
    `tf.math.lgamma`, `jax.scipy.special.gammaln`, `torch.lgamma`, and
    SciPy's `gammaln` (or `math.lgamma`) on the NumPy backend.
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.math.lgamma(x)
    if backend == "jax":
        import jax.scipy.special

        return jax.scipy.special.gammaln(x)
    if backend == "torch":
        import torch

        return torch.lgamma(x)
    if backend == "numpy":
        x = np.asarray(x)
        try:
            from scipy.special import gammaln
        except ImportError:  # SciPy is optional: the standard library's, element by element
            import math

            return np.vectorize(math.lgamma, otypes=[x.dtype])(x)
        return gammaln(x).astype(x.dtype)
    raise NotImplementedError(f"No log-gamma function for the {backend!r} backend.")


def whole_batch_sums(sums):
    """`(sums, replicas)`: the tensors of the list `sums`, summed over the
    replicas of a `tf.distribute` strategy (unchanged on one replica), and
    the number of replicas (a float).

    Only the TensorFlow backend has replicas (a `tf.distribute` replica
    context); on the other backends a step sees the whole batch, and the
    sums come back unchanged with one replica.  The prior's rate form and
    `BoundaryPlacement` read the whole batch's statistics through it.
    """
    if keras.backend.backend() != "tensorflow":
        return sums, 1.0
    import tensorflow as tf

    context = tf.distribute.get_replica_context()
    replicas = 1 if context is None else context.num_replicas_in_sync
    if replicas == 1:
        return sums, 1.0
    return context.all_reduce(tf.distribute.ReduceOp.SUM, sums), float(replicas)


def _rate_loss(counts, steps, rates):
    """Eq. (1) without its weight, from this batch's boundary `counts`
    `(layers,)` and `steps`.

    Under a `tf.distribute` strategy with several replicas the rate is the
    whole batch's: the replicas' counts are summed, and each replica's
    value is the whole batch's loss, whose gradient with respect to this
    replica's counts is scaled by the number of replicas, as Keras scales
    every replica's loss by its reciprocal before it sums the gradients.
    """
    (all_counts, all_steps), replicas = whole_batch_sums(
        [ops.stop_gradient(counts), ops.stop_gradient(steps)])
    if replicas == 1:
        return ops.sum(ops.square(counts / steps - rates))
    all_rates = all_counts / all_steps
    value = ops.sum(ops.square(all_rates - rates))
    # d value / d counts = 2 (rate - target) / all_steps, times the replicas.
    slope = 2.0 * (all_rates - rates) / all_steps * replicas
    return value + ops.sum(slope * (counts - ops.stop_gradient(counts)))


@keras.saving.register_keras_serializable(package="hmkeras")
class BoundaryPrior(keras.regularizers.Regularizer):
    """An expected segment length per boundary layer, as a loss (Eq. 1 or 2).


    Args:
        segment_lengths: One expected segment length > 1, in steps, per
            boundary layer (`num_layers - 1` values, bottom first); the
            target boundary rate of layer `l` is `1 / segment_lengths[l]`.
            None leaves a layer's rate free (no term for it: another loss
            sets it, as `BoundaryPlacement(form="rise")` does for `z^1` on
            unsegmented text). Default `(5, 15)`, for three layers.
        form: `"rate"` (Eq. 1, default) or `"binomial"` (Eq. 2).
        weight: Finite factor >= 0 of the loss; default 5 for `"rate"`,
            1 for `"binomial"` (a log-prior in nats per step, the unit of
            the language-modelling loss).

    Call arguments:
        outputs: The `(batch, time, features)` sequence output of a
            hierarchical cell (its boundaries are the last
            `len(segment_lengths)` columns).
        mask: Optional `(batch, time)` boolean mask; masked steps count
            neither as boundaries nor as steps.

    Returns:
        The scalar loss, float32 (float64 for float64 outputs).

    Examples:

        >>> import numpy as np
        >>> prior = BoundaryPrior((5, 15))
        >>> z = np.zeros((2, 10, 2), "float32"); z[:, ::5, 0] = 1  # z^1 every 5 steps
        >>> round(float(prior(z)), 4)  # only z^2 (rate 0, target 1/15) costs: 5 / 225
        0.0222
    """

    def __init__(self, segment_lengths=(5, 15), form="rate", weight=None):
        self.segment_lengths = check_segment_lengths(segment_lengths)
        self.form = argument_checks.check_choice("form", form, FORMS)
        if weight is None:
            weight = DEFAULT_WEIGHTS[self.form]
        self.weight = argument_checks.check_float("weight", weight, minimum=0)

    @property
    def target_rates(self):
        """`1 / segment_lengths`: the target boundary rate of every layer
        (None for a free one)."""
        return tuple(None if length is None else 1.0 / length
                     for length in self.segment_lengths)

    @property
    def _held_layers(self):
        """The columns (of the boundaries) of the layers with a target rate."""
        return [layer for layer, rate in enumerate(self.target_rates) if rate is not None]

    def counts(self, outputs, mask=None):
        """`(k, n)`: boundaries `(batch, layers)` and steps `(batch,)` per row."""
        outputs = ops.convert_to_tensor(outputs)
        if len(outputs.shape) != 3:
            raise ValueError(
                "BoundaryPrior needs the (batch, time, features) sequence output "
                "of a hierarchical cell: use the RNN with return_sequences=True "
                f"and return_state=False. Received a tensor of shape {tuple(outputs.shape)}."
            )
        float64 = keras.backend.standardize_dtype(outputs.dtype) == "float64"
        dtype = "float64" if float64 else "float32"
        boundaries = ops.cast(outputs[..., -len(self.segment_lengths):], dtype)
        if mask is None:
            batch, time = ops.shape(boundaries)[:2]
            steps = ops.full((batch,), ops.cast(time, dtype), dtype=dtype)
            return ops.sum(boundaries, axis=1), steps
        weights = ops.cast(mask, dtype)
        counts = ops.sum(boundaries * weights[..., None], axis=1)
        return counts, ops.sum(weights, axis=1)

    def __call__(self, outputs, mask=None):
        counts, steps = self.counts(outputs, mask)
        held = self._held_layers
        if len(held) < len(self.segment_lengths):  # free layers have no term
            counts = ops.take(counts, held, axis=1)
        total_steps = ops.maximum(ops.sum(steps), 1.0)
        rates = ops.convert_to_tensor([self.target_rates[layer] for layer in held], counts.dtype)
        if self.form == "rate":  # Eq. (1)
            loss = _rate_loss(ops.sum(counts, axis=0), total_steps, rates)
        else:  # Eq. (2)
            nll = binomial_negative_log_likelihood(counts, steps[:, None], rates)
            loss = ops.sum(nll) / total_steps
        return self.weight * loss

    def get_config(self):
        return {
            "segment_lengths": list(self.segment_lengths),
            "form": self.form,
            "weight": self.weight,
        }
