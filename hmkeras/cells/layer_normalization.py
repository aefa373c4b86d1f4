"""Layer normalization in the hierarchical cells, with its gradient by hand.

With layer normalization every product of a hierarchical cell's step is
`LN(h M)` (Ba et al. 2016, Eq. 20-21), and the HM-LSTM normalizes its
cell before the output tanh (Eq. 22).  A product's kernel is centred over
its columns once per sequence (`layer_products`), so `y = h M_c` has mean
0 over its columns and the step computes

    out = y * s * gain,    s = a / sqrt(mean(y ** 2) + eps)          (1)

with `a` the product's per-row gate `(batch, 1)` (Chung et al. Eq. 5-7),
`gain` the normalization's `(columns,)` gain and `s` 0 where
`mean(y ** 2) == 0` (`inverse_deviation`); `layer_normalize` centres its
input and adds the bias.  A three-layer HM-LSTM normalizes ten times
per step, and the automatic gradient of Eq. (1), op by op with its
broadcasts, has several times the operations of its closed form (the
figures: `docs/results/speed.md`).  `normalize_centred` computes Eq. (1)
and its gradient in closed form, with
`q = sum_c(G * gain * y)` per row for the output gradient `G`,
`r = 1 / sqrt(mean(y ** 2) + eps)` and `C` columns:

    d/dy    = G * gain * s  -  a q r^3 y / C                          (2)
    d/da    = q r                                                     (3)
    d/dgain = sum over the rows of G * y * s                          (4)

(`r^3` is 0 where `r` is; Eq. 2's second term is the gradient through
the variance, `d r / d mean(y^2) = -r^3 / 2`).  The statistics, `q` and
`r` are in `statistics_dtype` (float32 under float16 / bfloat16), the
rest in the dtype of `y`.

Examples:

    >>> import numpy as np
    >>> from keras import ops
    >>> y = np.array([[3.0, -3.0]], "float32")  # mean 0, mean(y^2) = 9
    >>> out = normalize_centred(y, np.ones(2, "float32"), None, "float32", epsilon=0.0)
    >>> ops.convert_to_numpy(out).tolist()
    [[1.0, -1.0]]
"""

from keras import ops

from hmkeras.cells.custom_gradients import tensor_value
from hmkeras.cells.custom_gradients import upstream_gradient

LAYER_NORM_EPSILON = 1e-5


def inverse_deviation(variance, epsilon=LAYER_NORM_EPSILON):
    """`1 / sqrt(variance + eps)`, and 0 (with no gradient) where `variance == 0`.

    A row of zero variance is constant (all zeros once centred): its
    normalized value is 0 either way, so the forward pass is unchanged.
    The 0 changes the gradient there, which would be `gain / sqrt(eps)`
    (about 316 x): `eps` guards the division, it should not set a gain.
    Such rows are hidden states that are exactly zero: the zero initial
    state, and a layer updated from all-zero inputs (with zero biases,
    tanh(0) = 0 keeps it zero).  Through the bottom-up, recurrent and
    top-down normalizations these rows chain that gain from link to link;
    in `"sample"` mode, whose boundaries fire on them (hard_sigm(0) = 0.5),
    the gradient of the first steps from the zero state grows by 1e2 to 1e4
    per step, past float32's range within a 100-step window.
    """
    return ops.where(variance > 0.0, ops.rsqrt(variance + epsilon), ops.zeros_like(variance))


def normalize_centred(y, gain, factor, statistics_dtype, epsilon=LAYER_NORM_EPSILON):
    """Eq. (1): `y * s * gain` with `s = factor / sqrt(mean(y^2) + eps)`.

    Args:
        y: `(batch, columns)`, a product with a centred kernel (its mean
            over the columns is 0, so it is not subtracted).
        gain: `(columns,)` tensor, the normalization's gain.
        factor: `(batch, 1)` gate of the product, or `None` for 1.
        statistics_dtype: The dtype of `mean(y^2)` and of `s`.
        epsilon: The variance's guard.

    Returns:
        `(batch, columns)` in the dtype of `y`; its gradients with respect
        to `y`, `gain` and `factor` are Eq. (2)-(4).
    """
    columns = ops.shape(y)[-1]

    def forward(y, gain, factor):
        y_statistics = ops.cast(y, statistics_dtype)
        variance = ops.mean(ops.square(y_statistics), axis=-1, keepdims=True)
        inverse = inverse_deviation(variance, epsilon)  # r
        scale = inverse if factor is None else inverse * ops.cast(factor, statistics_dtype)
        scaled = y * ops.cast(scale, y.dtype)
        return scaled * gain, (y_statistics, inverse, scale, scaled)

    def backward(upstream, y, gain, factor, saved):
        y_statistics, inverse, scale, scaled = saved
        upstream_gain = upstream * gain
        q = ops.sum(ops.cast(upstream_gain, statistics_dtype) * y_statistics,
                    axis=-1, keepdims=True)
        through_variance = q * ops.power(inverse, 3) / ops.cast(columns, statistics_dtype)
        if factor is not None:
            through_variance = through_variance * ops.cast(factor, statistics_dtype)
        grad_y = (upstream_gain * ops.cast(scale, y.dtype)
                  - ops.cast(through_variance * y_statistics, y.dtype))  # Eq. (2)
        grad_gain = ops.sum(upstream * scaled, axis=0)  # Eq. (4)
        if factor is None:
            return grad_y, grad_gain
        return grad_y, grad_gain, ops.cast(q * inverse, factor.dtype)  # Eq. (3)

    @ops.custom_gradient
    def normalized(y, gain, *factor):  # `factor`: the gate, where there is one
        gate = factor[0] if factor else None
        out, saved = forward(y, gain, gate)

        def gradient(*args, upstream=None):
            return backward(upstream_gradient(args, upstream), y, gain, gate, saved)

        return out, gradient

    return normalized(y, gain) if factor is None else normalized(y, gain, factor)


def layer_normalize(x, gain_and_bias, options):
    """Layer normalization of `x` over its last axis (Ba et al. Eq. 20-22).

    `(x - mean) / sqrt(var + eps) * gain + bias`: the centred `x` through
    `normalize_centred` (no gradient through a constant row); statistics in
    `options.statistics_dtype`, the result in `options.compute_dtype`.
    """
    gain, bias = gain_and_bias
    dtype = options.statistics_dtype
    x = ops.cast(x, dtype)
    centred = x - ops.mean(x, axis=-1, keepdims=True)
    y = normalize_centred(centred, ops.cast(tensor_value(gain), dtype), None, dtype)
    return ops.cast(y + ops.cast(bias, dtype), options.compute_dtype)
