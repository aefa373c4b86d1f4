"""Straight-through boundary estimators (Chung et al. 2017, Section 3.3).

The boundary detector of a hierarchical multiscale RNN outputs a binary
value `z`.  The forward pass uses a step function (or a Bernoulli sample);
the backward pass replaces it by the derivative of the hard sigmoid

    hard_sigm(x) = max(0, min(1, (a * x + 1) / 2))        (Chung, Sec. 3.2)

where `a` is the slope.  Kadar et al. write the same function with
`alpha = a / 2`.  Annealing `a` upwards (the "slope annealing trick")
reduces the bias of the estimator.

That derivative, `a / 2` where `|a x| < 1` and 0 elsewhere, stops every
gradient at a saturated detector: a boundary placed with `|a x| >= 1` can
no longer be moved by any loss.  The estimator `gradient="sigmoid"` (an
extension beyond the papers) replaces it by the derivative of the logistic
sigmoid of the same slope,

    d z / d x = a / 2 * 2 sigm(a x) (1 - sigm(a x)),                     (1)

`a / 4` at `x = 0` (half the hard sigmoid's), never 0, so a misplaced
boundary is always pulled back.  The forward pass is the same.

The slope is always passed in as a tensor argument: the custom gradient
(`keras.ops.custom_gradient`, TensorFlow's `tf.custom_gradient` or JAX's
`jax.custom_gradient`) must not close over a Keras variable, and passing
it in lets a compiled (XLA) function see new slope values without
retracing.

Examples:

    >>> import keras, numpy as np
    >>> x = np.array([-2.0, -0.2, 0.3, 4.0], "float32")
    >>> keras.ops.convert_to_numpy(step_straight_through(x, slope=1.0))
    array([0., 0., 1., 1.], dtype=float32)
"""

import keras
from keras import ops

from hmkeras import argument_checks
from hmkeras.cells.custom_gradients import upstream_gradient

__all__ = [
    "GRADIENTS",
    "hard_sigmoid",
    "hard_sigmoid_derivative",
    "step_straight_through",
    "bernoulli_straight_through",
]

#: The backward passes of the estimators: Chung et al.'s hard sigmoid, or
#: the logistic sigmoid of the same slope (Eq. 1).
GRADIENTS = ("hard_sigmoid", "sigmoid")


def hard_sigmoid(x, slope):
    """`clip((slope * x + 1) / 2, 0, 1)`, Chung et al. Section 3.2."""
    slope = ops.cast(slope, x.dtype)
    return ops.clip((slope * x + 1.0) * 0.5, 0.0, 1.0)


def hard_sigmoid_derivative(x, slope):
    """d hard_sigm(x) / dx: `slope / 2` where `|slope * x| < 1`, else 0."""
    slope = ops.cast(slope, x.dtype)
    inside = ops.cast(ops.abs(slope * x) < 1.0, x.dtype)
    return 0.5 * slope * inside


def _straight_through_grads(upstream, x, slope, gradient):
    """Gradients of the surrogate (`GRADIENTS`) w.r.t. (x, slope), used by
    both estimators: `a / 2 * inside` w.r.t. `x`, `x / 2 * inside` w.r.t.
    `a`, with `inside` the hard sigmoid's 0/1 window or Eq. (1)'s
    `2 sigm(a x) (1 - sigm(a x))`."""
    slope_c = ops.cast(slope, x.dtype)
    if gradient == "sigmoid":  # Eq. (1)
        logistic = ops.sigmoid(slope_c * x)
        inside = 2.0 * logistic * (1.0 - logistic)
    else:
        inside = ops.cast(ops.abs(slope_c * x) < 1.0, x.dtype)
    grad_x = upstream * 0.5 * slope_c * inside
    grad_slope = ops.sum(upstream * 0.5 * x * inside)
    return grad_x, ops.cast(ops.reshape(grad_slope, ops.shape(slope)), slope.dtype)


def _estimators(gradient):
    """The step and Bernoulli estimators whose backward pass is `gradient`'s."""

    @ops.custom_gradient
    def step(x, slope):
        # Chung et al. Eq. (9): z = 1 if hard_sigm(x) > 0.5, i.e. if x > 0.
        z = ops.cast(x > 0.0, x.dtype)

        def grad(*args, upstream=None):
            return _straight_through_grads(upstream_gradient(args, upstream), x, slope, gradient)

        return z, grad

    @ops.custom_gradient
    def bernoulli(x, slope, uniform_noise):
        # Chung et al. Sec. 3.2: z ~ Bernoulli(hard_sigm(x)), realised as
        # z = 1[u < hard_sigm(x)] for u ~ U[0, 1) drawn by the caller.  The
        # comparison runs in float32 at least: in bfloat16 both sides would
        # take only 128 levels in [0.5, 1).
        dtypes = (keras.backend.standardize_dtype(x.dtype),
                  keras.backend.standardize_dtype(uniform_noise.dtype))
        compare = "float64" if "float64" in dtypes else "float32"
        probability = hard_sigmoid(ops.cast(x, compare), ops.cast(slope, compare))
        z = ops.cast(ops.cast(uniform_noise, compare) < probability, x.dtype)

        def grad(*args, upstream=None):
            grad_x, grad_slope = _straight_through_grads(
                upstream_gradient(args, upstream), x, slope, gradient)
            return grad_x, grad_slope, ops.zeros_like(uniform_noise)

        return z, grad

    return step, bernoulli


_ESTIMATORS = {gradient: _estimators(gradient) for gradient in GRADIENTS}


def _check_gradient(gradient):
    return argument_checks.check_choice("gradient", gradient, GRADIENTS)


def step_straight_through(x, slope, gradient="hard_sigmoid"):
    """Deterministic boundary: step forward, hard-sigmoid gradient backward.

    Args:
        x: pre-activation of the boundary detector, any shape.
        slope: scalar tensor, the hard-sigmoid slope `a` (> 0).
        gradient: The backward pass, `"hard_sigmoid"` (Chung et al.;
            default) or `"sigmoid"` (Eq. 1).

    Returns:
        A tensor like `x` holding exactly 0.0 or 1.0.
    """
    step, _ = _ESTIMATORS[_check_gradient(gradient)]
    x = ops.convert_to_tensor(x)
    slope = ops.cast(slope, x.dtype)
    return step(x, slope)


def bernoulli_straight_through(x, slope, uniform_noise, gradient="hard_sigmoid"):
    """Stochastic boundary: Bernoulli sample forward, hard-sigmoid gradient.

    Args:
        x: pre-activation of the boundary detector.
        slope: scalar tensor, the hard-sigmoid slope `a` (> 0).
        uniform_noise: tensor shaped like `x` of U[0, 1) draws. It is an
            argument (not drawn here) so that the caller owns the random
            state, e.g. a `keras.random.SeedGenerator`. Draw it in float32
            (or float64): the comparison with `hard_sigm(x)` runs in the
            wider of the two dtypes, at least float32, whatever the dtype
            of `x`.
        gradient: The backward pass, `"hard_sigmoid"` (Chung et al.;
            default) or `"sigmoid"` (Eq. 1).

    Returns:
        A tensor like `x` holding exactly 0.0 or 1.0, equal to 1.0 with
        probability `hard_sigmoid(x, slope)`.
    """
    _, bernoulli = _ESTIMATORS[_check_gradient(gradient)]
    x = ops.convert_to_tensor(x)
    slope = ops.cast(slope, x.dtype)
    uniform_noise = ops.convert_to_tensor(uniform_noise)
    return bernoulli(x, slope, uniform_noise)
