"""MixtureDensityOutput: loss vs a float64 NumPy mixture density, gradients
by finite differences, extreme values, sampling statistics, serialization."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import backend_support
import keras
import numpy as np
import pytest
from keras import ops

from hmkeras.heads import mixture_density_output as mdo
from hmkeras.heads.mixture_density_output import MixtureDensityOutput

pytestmark = pytest.mark.every_backend


def _np(x):
    return ops.convert_to_numpy(x)


def _dtype(x):
    return keras.backend.standardize_dtype(x.dtype)


def numpy_nll(params, targets):
    """Direct float64 evaluation of Graves Eq. (18)-(26): the density itself,
    not its logarithm, then -log."""
    params = np.asarray(params, np.float64)
    targets = np.asarray(targets, np.float64)
    m = (params.shape[-1] - 1) // 6
    pi_hat, mx, my, sx, sy, rh = (params[..., i * m : (i + 1) * m] for i in range(6))
    pi = np.exp(pi_hat - pi_hat.max(-1, keepdims=True))
    pi /= pi.sum(-1, keepdims=True)
    sx, sy = np.exp(sx), np.exp(sy)
    rho = (1 - mdo.RHO_EPSILON) * np.tanh(rh)
    x, y, pen = targets[..., :1], targets[..., 1:2], targets[..., 2]
    zx, zy = (x - mx) / sx, (y - my) / sy
    z = zx**2 + zy**2 - 2 * rho * zx * zy
    density = np.exp(-z / (2 * (1 - rho**2))) / (2 * np.pi * sx * sy * np.sqrt(1 - rho**2))
    e = 1 / (1 + np.exp(-params[..., 6 * m]))
    return -np.log((pi * density).sum(-1) * np.where(pen > 0.5, e, 1 - e))


def _random(rng, shape, m, scale=1.0):
    params = rng.normal(0, scale, shape + (6 * m + 1,))
    targets = np.concatenate(
        [rng.normal(0, 1, shape + (2,)), rng.integers(0, 2, shape + (1,))], -1)
    return params.astype(np.float32), targets.astype(np.float32)


def test_loss_matches_numpy_density():
    rng = np.random.default_rng(0)
    params, targets = _random(rng, (3, 7), m=4)
    got = _np(mdo.mixture_negative_log_likelihood(params, targets))
    np.testing.assert_allclose(got, numpy_nll(params, targets), rtol=1e-4, atol=1e-4)
    layer_loss = _np(MixtureDensityOutput(4).loss(targets, params))
    np.testing.assert_allclose(layer_loss, got)


def test_single_component_is_a_bivariate_gaussian():
    # M = 1, rho = 0.6: -log N against the closed form with the covariance
    # matrix (an independent formula: inverse and determinant).
    mu, sig, rho = np.array([0.3, -0.2]), np.array([0.5, 2.0]), 0.6
    params = np.array([[0.0, mu[0], mu[1], np.log(sig[0]), np.log(sig[1]),
                        np.arctanh(rho / (1 - mdo.RHO_EPSILON)), 0.0]], np.float32)
    target = np.array([[1.0, 0.5, 0.0]], np.float32)
    cov = np.array([[sig[0] ** 2, rho * sig[0] * sig[1]], [rho * sig[0] * sig[1], sig[1] ** 2]])
    d = target[0, :2] - mu
    expected = (np.log(2 * np.pi) + 0.5 * np.log(np.linalg.det(cov))
                + 0.5 * d @ np.linalg.solve(cov, d) + np.log(2))  # e = 0.5
    got = _np(mdo.mixture_negative_log_likelihood(params, target))[0]
    assert got == pytest.approx(expected, rel=1e-4)


def test_gradients_match_finite_differences():
    rng = np.random.default_rng(1)
    params, targets = _random(rng, (2, 3), m=3, scale=0.7)
    (grad,) = backend_support.input_gradients(
        lambda x: ops.sum(mdo.mixture_negative_log_likelihood(x, targets)),
        params.astype(np.float64))
    h = 1e-6
    flat = params.astype(np.float64).ravel()
    numeric = np.zeros_like(flat)
    for i in range(flat.size):
        up, down = flat.copy(), flat.copy()
        up[i] += h
        down[i] -= h
        numeric[i] = (numpy_nll(up.reshape(params.shape), targets).sum()
                      - numpy_nll(down.reshape(params.shape), targets).sum()) / (2 * h)
    np.testing.assert_allclose(grad.ravel(), numeric, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_extreme_values_give_finite_loss_and_gradients(dtype):
    m = 3
    rows = []
    for value in (-1e4, -80.0, 80.0, 1e4):
        rows.append(np.full(6 * m + 1, value))
    params = np.stack(rows).astype(np.float32)
    targets = np.array([[50.0, -50.0, 1.0], [0.0, 0.0, 0.0],
                        [1e3, 1e3, 1.0], [-3.0, 2.0, 0.0]], np.float32)
    # Half-precision inputs are computed in float32: the loss is finite. The
    # gradient is checked in float32, where the head's output lives under a
    # mixed policy (MixtureDensityOutput casts to float32); gradients flowing
    # further into half-precision layers are the loss scaler's business.
    half = ops.cast(params, dtype)
    loss = mdo.mixture_negative_log_likelihood(half, ops.cast(targets, dtype))
    assert _dtype(loss) == "float32"
    assert np.all(np.isfinite(_np(loss)))
    x = _np(ops.cast(half, "float32"))
    total = ops.sum(mdo.mixture_negative_log_likelihood(x, targets))
    assert np.isfinite(_np(total))
    (gradient,) = backend_support.input_gradients(
        lambda x: ops.sum(mdo.mixture_negative_log_likelihood(x, targets)), x)
    assert np.all(np.isfinite(gradient))


def test_mixed_precision_layer_outputs_float32_and_matches():
    rng = np.random.default_rng(2)
    inputs = rng.normal(size=(2, 5, 6)).astype(np.float32)
    mixed = MixtureDensityOutput(2, dtype="mixed_float16")
    plain = MixtureDensityOutput(2)
    mixed.build(inputs.shape)
    plain.build(inputs.shape)
    plain.set_weights(mixed.get_weights())
    out_mixed, out_plain = mixed(inputs), plain(inputs)
    assert _dtype(out_mixed) == "float32"
    np.testing.assert_allclose(_np(out_mixed), _np(out_plain), atol=2e-2)
    targets = np.zeros((2, 5, 3), np.float32)
    assert np.all(np.isfinite(_np(mixed.negative_log_likelihood(out_mixed, targets))))


def _two_component_params():
    # pi = (0.3, 0.7), means (1, -2) and (-1, 0.5), sigmas, rhos, e = 0.2.
    pi = np.array([0.3, 0.7])
    mu = np.array([[1.0, -2.0], [-1.0, 0.5]])
    sig = np.array([[0.5, 0.8], [1.2, 0.4]])
    rho = np.array([0.5, -0.7])
    e = 0.2
    params = np.concatenate([
        np.log(pi), mu[:, 0], mu[:, 1], np.log(sig[:, 0]), np.log(sig[:, 1]),
        np.arctanh(rho / (1 - mdo.RHO_EPSILON)), [np.log(e / (1 - e))]])
    return params.astype(np.float32), pi, mu, sig, rho, e


def _mixture_moments(pi, mu, sig, rho):
    mean = (pi[:, None] * mu).sum(0)
    second = np.zeros((2, 2))
    for j in range(len(pi)):
        cov = np.array([[sig[j, 0] ** 2, rho[j] * sig[j, 0] * sig[j, 1]],
                        [rho[j] * sig[j, 0] * sig[j, 1], sig[j, 1] ** 2]])
        second += pi[j] * (cov + np.outer(mu[j], mu[j]))
    return mean, second - np.outer(mean, mean)


def test_samples_match_the_mixture_moments():
    params, pi, mu, sig, rho, e = _two_component_params()
    n = 40_000
    samples = _np(mdo.sample_mixture(np.tile(params, (n, 1)), seed=3))
    assert samples.shape == (n, 3)
    mean, cov = _mixture_moments(pi, mu, sig, rho)
    np.testing.assert_allclose(samples[:, :2].mean(0), mean, atol=0.03)
    np.testing.assert_allclose(np.cov(samples[:, :2].T), cov, atol=0.05)
    assert set(np.unique(samples[:, 2])) <= {0.0, 1.0}
    assert samples[:, 2].mean() == pytest.approx(e, abs=0.01)


def test_bias_sharpens_and_temperature_widens():
    params, pi, mu, sig, rho, _ = _two_component_params()
    n, b = 40_000, 1.0
    biased = _np(mdo.sample_mixture(np.tile(params, (n, 1)), bias=b, seed=4))
    # Graves Eq. (61)-(62): pi ~ pi^(1 + b), sigma * exp(-b).
    pi_b = pi ** (1 + b) / (pi ** (1 + b)).sum()
    mean, cov = _mixture_moments(pi_b, mu, sig * np.exp(-b), rho)
    np.testing.assert_allclose(biased[:, :2].mean(0), mean, atol=0.03)
    np.testing.assert_allclose(np.cov(biased[:, :2].T), cov, atol=0.05)
    hot = _np(mdo.sample_mixture(np.tile(params, (n, 1)), temperature=2.0, seed=5))
    plain = _np(mdo.sample_mixture(np.tile(params, (n, 1)), seed=5))
    assert np.trace(np.cov(hot[:, :2].T)) > np.trace(np.cov(plain[:, :2].T)) * 1.1


def test_sampling_is_seeded_and_keeps_the_batch_shape():
    params = np.random.default_rng(6).normal(size=(2, 3, 13)).astype(np.float32)
    a = _np(mdo.sample_mixture(params, seed=7))
    b = _np(mdo.sample_mixture(params, seed=7))
    assert a.shape == (2, 3, 3)
    np.testing.assert_array_equal(a, b)
    generator = keras.random.SeedGenerator(8)
    first = _np(mdo.sample_mixture(params, seed=generator))
    second = _np(mdo.sample_mixture(params, seed=generator))
    assert not np.array_equal(first, second)


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="num_components"):
        MixtureDensityOutput(0)
    with pytest.raises(ValueError, match="bias"):
        mdo.sample_mixture(np.zeros((1, 7), np.float32), bias=-1.0)
    with pytest.raises(ValueError, match="temperature"):
        mdo.sample_mixture(np.zeros((1, 7), np.float32), temperature=0.0)
    with pytest.raises(ValueError, match="6 \\* M \\+ 1"):
        mdo.mixture_negative_log_likelihood(np.zeros((1, 8), np.float32),
                                            np.zeros((1, 3), np.float32))


def test_serialization_round_trip(tmp_path):
    inputs = keras.Input((None, 4))
    model = keras.Model(inputs, MixtureDensityOutput(3, name="mdn")(inputs))
    path = str(tmp_path / "m.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    x = np.random.default_rng(9).normal(size=(1, 5, 4)).astype(np.float32)
    np.testing.assert_allclose(_np(loaded(x)), _np(model(x)), rtol=1e-6)
    assert loaded.get_layer("mdn").get_config()["num_components"] == 3
