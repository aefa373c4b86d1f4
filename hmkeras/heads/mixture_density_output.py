"""Mixture-density output for pen offsets (Graves 2013, Section 4.1).

Graves, "Generating Sequences With Recurrent Neural Networks" (2013),
Eq. (17)-(26), the output used by Chung et al. (2017, Section 4.2) for
IAM-OnDB. Each step predicts the next pen offset `(dx, dy)` as a mixture of
M bivariate Gaussians and the next pen-up bit `p` as a Bernoulli:

    y_t = b_y + W h_t = (e^, pi^_j, mu_j, sigma^_j, rho^_j)       (Eq. 17)
    e_t = sigm(e^)        end-of-stroke probability             (Eq. 18)
    pi_j = softmax_j(pi^)                                       (Eq. 19)
    mu_j = mu^_j,  sigma_j = exp(sigma^_j),  rho_j = tanh(rho^_j) (Eq. 20-22)
    Pr(x | y) = sum_j pi_j N(dx, dy | mu_j, sigma_j, rho_j)
                * (e if p = 1 else 1 - e)                      (Eq. 23)
    N = exp(-Z / (2 (1 - rho^2))) / (2 pi s_x s_y sqrt(1 - rho^2)) (Eq. 24)
    Z = n_x^2 + n_y^2 - 2 rho n_x n_y,  n = (x - mu) / sigma     (Eq. 25)
    L = -sum_t log Pr(x_{t+1} | y_t)                            (Eq. 26)

(Graves writes Eq. 18 as `1 / (1 + exp(e^))`, i.e. `sigm(-e^)`; the sign
is a convention of the raw output, we use `sigm(e^)`.)

Packed layout. The layer outputs the *raw* (unconstrained) values, one
vector of `6 M + 1` per step, in float32, in this order::

    [ pi^ (M) | mu_x (M) | mu_y (M) | sigma^_x (M) | sigma^_y (M) | rho^ (M) | e^ (1) ]

`split_mixture_parameters` cuts it; `mixture_negative_log_likelihood`
computes `-log Pr(x | y)` per step in log space (log-softmax, log-sum-exp
over the components, `log sigma` used directly, `log(1 - rho^2)` by
`log1p`, `log e` by log-sigmoid); `rho` is `(1 - 1e-5) tanh(rho^)` so that
`1 - rho^2 >= 2e-5` and `log sigma` is clipped to [-15, 15], so extreme raw
values give a finite loss and finite gradients. Everything is computed in
float32, also under a `mixed_float16` / `mixed_bfloat16` policy.

Sampling (`sample_mixture`) with Graves' bias b (Eq. 61-62), which sharpens
the mixture, `pi = softmax(pi^ (1 + b))`, `sigma = exp(sigma^ - b)`, and a
temperature tau (an extension) that divides the mixture logits and
multiplies the variances: `pi = softmax(pi^ (1 + b) / tau)`,
`sigma = exp(sigma^ - b) sqrt(tau)`. The pen bit is drawn from `e` as is.
"""

import math

import keras
from keras import ops

from hmkeras import argument_checks

#: `rho = (1 - RHO_EPSILON) tanh(rho^)`: keeps `1 - rho^2` away from 0.
RHO_EPSILON = 1e-5
#: `log sigma` is clipped to `[-LOG_SIGMA_LIMIT, LOG_SIGMA_LIMIT]`.
LOG_SIGMA_LIMIT = 15.0
_LOG_2PI = math.log(2.0 * math.pi)


def num_components_of(params):
    """The number M of mixture components of a packed `(..., 6M+1)` tensor."""
    size = params.shape[-1]
    if size is None or (size - 1) % 6 or size < 7:
        raise ValueError(
            "The last axis of mixture parameters must have size 6 * M + 1 "
            f"(M >= 1 components). Received: shape={tuple(params.shape)}"
        )
    return (size - 1) // 6


def split_mixture_parameters(params):
    """Cuts packed raw parameters into a dict of float32 tensors.

    Args:
        params: Tensor `(..., 6M+1)` in the packed layout (module docstring).

    Returns:
        `{"pi_logits", "mu_x", "mu_y", "log_sigma_x", "log_sigma_y",
        "rho", "eos_logit"}`: six `(..., M)` tensors and one `(...,)`.
        `log_sigma_*` are clipped and `rho` is squashed (Eq. 21-22).
    """
    params = ops.cast(params, "float32")
    m = num_components_of(params)
    pieces = [params[..., i * m : (i + 1) * m] for i in range(6)]
    pi_hat, mu_x, mu_y, s_x, s_y, rho_hat = pieces
    limit = LOG_SIGMA_LIMIT
    return {
        "pi_logits": pi_hat,
        "mu_x": mu_x,
        "mu_y": mu_y,
        "log_sigma_x": ops.clip(s_x, -limit, limit),  # Graves Eq. (21), log
        "log_sigma_y": ops.clip(s_y, -limit, limit),
        "rho": (1.0 - RHO_EPSILON) * ops.tanh(rho_hat),  # Graves Eq. (22)
        "eos_logit": params[..., 6 * m],
    }


def mixture_negative_log_likelihood(params, targets):
    """`-log Pr(targets | params)` per step (Graves Eq. 23-26), float32.

    Args:
        params: `(..., 6M+1)` raw packed parameters.
        targets: `(..., 3)`: `(dx, dy, pen_up)`, `pen_up` 0 or 1.

    Returns:
        `(...)` float32 tensor of negative log-likelihoods (nats).
    """
    p = split_mixture_parameters(params)
    targets = ops.cast(targets, "float32")
    x = targets[..., 0:1]
    y = targets[..., 1:2]
    pen = targets[..., 2]
    n_x = (x - p["mu_x"]) * ops.exp(-p["log_sigma_x"])  # Eq. (25)
    n_y = (y - p["mu_y"]) * ops.exp(-p["log_sigma_y"])
    rho = p["rho"]
    one_minus_rho2 = 1.0 - ops.square(rho)
    z = ops.square(n_x) + ops.square(n_y) - 2.0 * rho * n_x * n_y  # Eq. (25)
    log_gauss = (  # log of Eq. (24)
        -_LOG_2PI
        - p["log_sigma_x"]
        - p["log_sigma_y"]
        - 0.5 * ops.log1p(-ops.square(rho))
        - z / (2.0 * one_minus_rho2)
    )
    log_pi = ops.log_softmax(p["pi_logits"], axis=-1)  # Eq. (19)
    log_mixture = ops.logsumexp(log_pi + log_gauss, axis=-1)  # Eq. (23)
    eos = p["eos_logit"]
    # log e = log sigm(e^), log(1 - e) = log sigm(-e^)  (Eq. 18, 23)
    log_pen = pen * ops.log_sigmoid(eos) + (1.0 - pen) * ops.log_sigmoid(-eos)
    return -(log_mixture + log_pen)  # Eq. (26), one step


def sample_mixture(params, bias=0.0, temperature=1.0, seed=None):
    """Draws `(dx, dy, pen_up)` from packed parameters (Graves Eq. 61-62).

    Args:
        params: `(..., 6M+1)` raw packed parameters.
        bias: Graves' sampling bias b >= 0 (0: the model's distribution;
            larger: neater, less varied strokes).
        temperature: tau > 0 (1: no change), see the module docstring.
        seed: None, an int, or a `keras.random.SeedGenerator` (pass one
            generator to successive calls to get fresh draws each step).

    Returns:
        `(..., 3)` float32 samples.
    """
    bias = argument_checks.check_float("bias", bias, minimum=0)
    temperature = argument_checks.check_float(
        "temperature", temperature, minimum=0, exclusive_minimum=True
    )
    if seed is None or isinstance(seed, int):
        seed = keras.random.SeedGenerator(seed)
    p = split_mixture_parameters(params)
    m = p["pi_logits"].shape[-1]
    out_shape = list(ops.shape(p["eos_logit"])) + [3]
    flat = lambda t: ops.reshape(t, (-1, m))  # noqa: E731
    logits = flat(p["pi_logits"]) * (1.0 + bias) / temperature  # Graves Eq. (61)-(62), bias
    component = keras.random.categorical(logits, 1, seed=seed)[:, 0]
    choose = lambda t: ops.take_along_axis(  # noqa: E731
        flat(t), ops.expand_dims(component, -1), axis=-1)[:, 0]
    scale = math.sqrt(temperature)
    sigma_x = ops.exp(choose(p["log_sigma_x"]) - bias) * scale  # Graves Eq. (61)-(62)
    sigma_y = ops.exp(choose(p["log_sigma_y"]) - bias) * scale
    rho = choose(p["rho"])
    count = ops.shape(component)[0]
    eps = keras.random.normal((count, 2), seed=seed)
    # Correlated pair through the Cholesky factor of the 2x2 covariance.
    dx = choose(p["mu_x"]) + sigma_x * eps[:, 0]
    dy = choose(p["mu_y"]) + sigma_y * (
        rho * eps[:, 0] + ops.sqrt(1.0 - ops.square(rho)) * eps[:, 1]
    )
    e = ops.sigmoid(ops.reshape(p["eos_logit"], (-1,)))  # Eq. (18)
    pen = ops.cast(keras.random.uniform((count,), seed=seed) < e, "float32")
    out = ops.stack([dx, dy, pen], axis=-1)
    return ops.reshape(out, out_shape)


@keras.saving.register_keras_serializable(package="hmkeras")
class MixtureDensityOutput(keras.layers.Layer):
    """Mixture-density output for pen strokes - Graves 2013.

    An affine map (Graves Eq. 17) from an RNN output (or an output
    embedding) to `6 * num_components + 1` raw parameters per step, in the
    packed layout of the module docstring, returned in float32 whatever the
    layer's dtype policy. `negative_log_likelihood(params, targets)` (also
    usable as a Keras loss, `loss`) and `sample(params, ...)` read them.

    Args:
        num_components: Positive int, the number M of bivariate Gaussians
            (Graves uses 20).
        kernel_initializer: Initializer of the `(features, 6M+1)` kernel.
            Default: `"glorot_uniform"`.
        bias_initializer: Initializer of the bias. Default: `"zeros"`.
        kernel_regularizer: Optional regularizer of the kernel.
        **kwargs: Base layer keyword arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: `(..., features)` floating-point tensor.

    Returns:
        `(..., 6 * num_components + 1)` float32 raw parameters.

    Examples:

        >>> import numpy as np
        >>> head = MixtureDensityOutput(2)
        >>> params = head(np.zeros((1, 4, 8), "float32"))
        >>> tuple(params.shape)
        (1, 4, 13)
        >>> targets = np.zeros((1, 4, 3), "float32")
        >>> nll = head.negative_log_likelihood(params, targets)
        >>> bool(np.allclose(nll, np.log(2 * np.pi) + np.log(2)))
        True
        >>> tuple(head.sample(params, bias=1.0, seed=0).shape)
        (1, 4, 3)
    """

    def __init__(self, num_components, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, **kwargs):
        super().__init__(**kwargs)
        self.num_components = argument_checks.check_positive_int(
            "num_components", num_components
        )
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        # Per step, as keras.layers.Dense: a sequence's mask goes through.
        self.supports_masking = True

    @property
    def params_size(self):
        """`6 * num_components + 1`."""
        return 6 * self.num_components + 1

    def build(self, input_shape):
        features = input_shape[-1]
        if features is None:
            raise ValueError(
                "MixtureDensityOutput needs the last input axis to be known. "
                f"Received: input_shape={tuple(input_shape)}"
            )
        self.kernel = self.add_weight(
            name="kernel", shape=(int(features), self.params_size),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
        )
        self.bias = self.add_weight(
            name="bias", shape=(self.params_size,), initializer=self.bias_initializer
        )

    def call(self, inputs):
        argument_checks.check_float_inputs("MixtureDensityOutput", inputs)
        params = ops.matmul(inputs, self.kernel) + self.bias  # Graves Eq. (17)
        return ops.cast(params, "float32")

    def compute_output_shape(self, input_shape):
        return (*tuple(input_shape)[:-1], self.params_size)

    def compute_output_spec(self, inputs):
        return keras.KerasTensor(
            self.compute_output_shape(inputs.shape), dtype="float32"
        )

    def split(self, params):
        """`split_mixture_parameters(params)`."""
        return split_mixture_parameters(params)

    def negative_log_likelihood(self, params, targets):
        """Per-step `-log Pr(targets | params)` (Graves Eq. 26), float32."""
        return mixture_negative_log_likelihood(params, targets)

    def loss(self, targets, params):
        """Keras loss signature `(y_true, y_pred)`: the per-step NLL."""
        return mixture_negative_log_likelihood(params, targets)

    def sample(self, params, bias=0.0, temperature=1.0, seed=None):
        """`sample_mixture(params, bias, temperature, seed)`."""
        return sample_mixture(params, bias=bias, temperature=temperature, seed=seed)

    def get_config(self):
        config = super().get_config()
        config.update(
            num_components=self.num_components,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
            bias_initializer=keras.initializers.serialize(self.bias_initializer),
            kernel_regularizer=keras.regularizers.serialize(self.kernel_regularizer),
        )
        return config
