"""AttentionWrapper against a NumPy reference over an explicit list of past states.

The reference is driven by the wrapped cell's own per-step outputs (read
with `return_cell_output=True`), recomputes every score from the stored
states (no cached keys), and softmaxes over the stored states only.  Its
output combination is Salton & Kelleher (2018) Eq. 11, `tanh(W [h; c] + b)`,
unless a test asks for the linear form: the activation is the reference's
own argument, never read from the wrapper.
"""

import backend_support
from backend_support import to_numpy
import keras
import numpy as np
import pytest
from keras import ops

import finite_differences
import hmkeras
from hmkeras.wrappers import AttentionWrapper

pytestmark = pytest.mark.every_backend

B, T, F, M = 3, 11, 4, 4
# float64 is float64 on TensorFlow; on JAX (float64 layers compute in
# float32) the references hold to float32 rounding: outputs, attention
# weights, and the finite differences of the float32 loss (a larger step).
OUTPUT_TOLERANCE = (dict(atol=1e-10) if backend_support.HAS_FLOAT64
                    else dict(rtol=2e-5, atol=1e-6))
ATTENTION_TOLERANCE = dict(atol=1e-12) if backend_support.HAS_FLOAT64 else dict(atol=1e-6)
FINITE_DIFFERENCES = ({} if backend_support.HAS_FLOAT64
                      else dict(eps=1e-2, rtol=1e-3, atol=1e-4))


def _np(x):
    return ops.convert_to_numpy(x)


def _run(wrapper, x):
    y = keras.layers.RNN(wrapper, return_sequences=True, dtype="float64")(x)
    return wrapper.split_outputs(to_numpy(y))


def _reference(wrapper, hs, resets=None, activation=np.tanh):
    """(outputs, weights) with weights laid out oldest slot first."""
    m = wrapper.memory_size
    w_out = _np(wrapper.output_kernel).astype(np.float64)
    b_out = _np(wrapper.output_bias).astype(np.float64)
    v = _np(wrapper.score_vector).astype(np.float64)[:, 0]
    w_key = _np(wrapper.key_kernel).astype(np.float64)
    batch, steps, size = hs.shape
    outputs = np.zeros((batch, steps, w_out.shape[1]))
    weights = np.zeros((batch, steps, m))
    for b in range(batch):
        memory = []
        for t in range(steps):
            h = hs[b, t]
            if memory:
                if wrapper.score == "single":
                    scores = np.array([v @ np.tanh(p @ w_key) for p in memory])
                else:
                    query = h @ _np(wrapper.query_kernel).astype(np.float64)
                    scores = np.array([v @ np.tanh(p @ w_key + query) for p in memory])
                a = np.exp(scores - scores.max())
                a /= a.sum()
                context = np.sum(a[:, None] * np.array(memory), axis=0)
                weights[b, t, m - len(memory):] = a
            else:
                context = np.zeros(size)
            outputs[b, t] = activation(np.concatenate([h, context]) @ w_out + b_out)
            memory = (memory + [h])[-m:]
            if resets is not None and resets[b, t]:
                memory = []
    return outputs, weights


@pytest.mark.parametrize("score", ["single", "combined"])
def test_matches_reference_lstm(score):
    keras.utils.set_random_seed(0)
    wrapper = AttentionWrapper(keras.layers.LSTMCell(5, dtype="float64"), M, score,
                               attention_units=3, return_cell_output=True,
                               return_attention=True, dtype="float64")
    x = np.random.default_rng(0).normal(size=(B, T, F))
    parts = _run(wrapper, x)
    expected, weights = _reference(wrapper, to_numpy(parts.cell_output))
    np.testing.assert_allclose(to_numpy(parts.output), expected, **OUTPUT_TOLERANCE)
    np.testing.assert_allclose(to_numpy(parts.attention), weights, **ATTENTION_TOLERANCE)
    # Unfilled slots get exactly zero; filled ones sum to one.
    got = to_numpy(parts.attention)
    for t in range(T):
        empty = M - min(t, M)
        assert np.all(got[:, t, :empty] == 0.0)
        np.testing.assert_allclose(got[:, t].sum(-1), 0.0 if t == 0 else 1.0,
                                   **ATTENTION_TOLERANCE)


@pytest.mark.parametrize("cls", [hmkeras.HMLSTMCell, hmkeras.HMRNNCell,
                                 hmkeras.MultiplicativeLSTMCell])
def test_matches_reference_other_cells(cls):
    keras.utils.set_random_seed(1)
    cell = cls([4, 3], dtype="float64") if cls is not hmkeras.MultiplicativeLSTMCell \
        else cls(4, dtype="float64")
    wrapper = AttentionWrapper(cell, 3, "combined", hierarchy_layers="top",
                               return_cell_output=True, return_attention=True,
                               dtype="float64")
    x = np.random.default_rng(1).normal(size=(2, 8, F))
    parts = _run(wrapper, x)
    cell_output = parts.cell_output
    hs = cell.split_outputs(cell_output)[0][-1] if hasattr(cell, "split_outputs") \
        else cell_output
    expected, weights = _reference(wrapper, to_numpy(hs))
    np.testing.assert_allclose(to_numpy(parts.output), expected, **OUTPUT_TOLERANCE)
    np.testing.assert_allclose(to_numpy(parts.attention), weights, **ATTENTION_TOLERANCE)


def _linear(z):
    return z


@pytest.mark.parametrize("activation", ["default", None, "linear"])
def test_output_activation_default_tanh_and_linear_option(activation):
    """The default output is tanh (Eq. 11); None and "linear" give W[h; c] + b."""
    keras.utils.set_random_seed(4)
    kwargs = {} if activation == "default" else {"activation": activation}
    wrapper = AttentionWrapper(keras.layers.LSTMCell(5, dtype="float64"), M, units=6,
                               return_cell_output=True, return_attention=True,
                               bias_initializer="ones", dtype="float64", **kwargs)
    x = 3.0 * np.random.default_rng(4).normal(size=(B, T, F))
    parts = _run(wrapper, x)
    hs = to_numpy(parts.cell_output)
    tanh_out, weights = _reference(wrapper, hs)
    linear_out, _ = _reference(wrapper, hs, activation=_linear)
    expected, other = (tanh_out, linear_out) if activation == "default" \
        else (linear_out, tanh_out)
    got = to_numpy(parts.output)
    np.testing.assert_allclose(got, expected, **OUTPUT_TOLERANCE)
    np.testing.assert_allclose(to_numpy(parts.attention), weights, **ATTENTION_TOLERANCE)
    assert np.max(np.abs(got - other)) > 1e-2  # the two forms are told apart
    if activation == "default":
        assert np.all(np.abs(got) < 1.0)
        assert wrapper.get_config()["activation"] == "tanh"
    else:
        assert np.max(np.abs(got)) > 1.0  # unbounded: not squashed
        assert wrapper.get_config()["activation"] == "linear"


@pytest.mark.parametrize("activation", ["default", None])
def test_activation_survives_get_config_round_trip(activation):
    kwargs = {} if activation == "default" else {"activation": activation}
    wrapper = AttentionWrapper(keras.layers.LSTMCell(5), M, **kwargs)
    config = wrapper.get_config()
    clone = AttentionWrapper.from_config(config)
    assert clone.get_config()["activation"] == config["activation"]
    assert config["activation"] == ("tanh" if activation == "default" else "linear")
    z = np.linspace(-3.0, 3.0, 7).astype("float32")
    expected = np.tanh(z) if activation == "default" else z
    np.testing.assert_allclose(to_numpy(clone.activation(z)), expected, atol=1e-6)


def test_reset_flag_empties_memory():
    keras.utils.set_random_seed(2)
    rng = np.random.default_rng(2)
    resets = np.zeros((B, T), bool)
    resets[0, 2] = resets[1, 6] = True
    x = np.concatenate([rng.normal(size=(B, T, F)), resets[..., None]], axis=-1)
    wrapper = AttentionWrapper(keras.layers.LSTMCell(5, dtype="float64"), M,
                               reset_flag=True, return_cell_output=True,
                               return_attention=True, dtype="float64")
    parts = _run(wrapper, x)
    expected, weights = _reference(wrapper, to_numpy(parts.cell_output), resets)
    np.testing.assert_allclose(to_numpy(parts.output), expected, **OUTPUT_TOLERANCE)
    np.testing.assert_allclose(to_numpy(parts.attention), weights, **ATTENTION_TOLERANCE)
    assert np.all(to_numpy(parts.attention)[0, 3] == 0.0)  # empty after the reset


def test_never_looks_at_the_future():
    keras.utils.set_random_seed(3)
    wrapper = AttentionWrapper(keras.layers.LSTMCell(5, dtype="float64"), M, "combined",
                               return_attention=True, dtype="float64")
    rnn = keras.layers.RNN(wrapper, return_sequences=True, dtype="float64")
    x = np.random.default_rng(3).normal(size=(B, T, F))
    y = to_numpy(rnn(x))
    for cut in (1, 5, T - 1):
        changed = x.copy()
        changed[:, cut:] += 10.0
        z = to_numpy(rnn(changed))
        np.testing.assert_array_equal(y[:, :cut], z[:, :cut])
        assert not np.allclose(y[:, cut], z[:, cut])


def test_empty_memory_has_zero_context_and_finite_gradients():
    keras.utils.set_random_seed(4)
    wrapper = AttentionWrapper(keras.layers.LSTMCell(3, dtype="float64"), 2, "combined",
                               dtype="float64")
    rnn = keras.layers.RNN(wrapper, return_sequences=True, dtype="float64")
    x = ops.convert_to_tensor(np.random.default_rng(4).normal(size=(2, 3, F)), rnn.compute_dtype)
    rnn.build(x.shape)
    _, _, grads = backend_support.weight_gradients(
        rnn, lambda outputs, losses: ops.sum(outputs ** 2), x)
    assert all(np.all(np.isfinite(g)) for g in grads)
    # And they are the derivative: central differences in float64 (of the
    # float32 loss on JAX), the first step (empty memory) included in the
    # loss.
    variables = rnn.trainable_variables
    loss_of = finite_differences.variables_loss(
        variables, lambda: ops.sum(rnn(x) ** 2))
    largest = finite_differences.assert_gradients_match(
        loss_of, {v.path: _np(v) for v in variables},
        {v.path: g for v, g in zip(variables, grads)}, entries=1, seed=4,
        **FINITE_DIFFERENCES)
    loss_of.restore()
    assert largest > 1e-3
    # Step 1: c_1 = 0, so the output is tanh(W[:h] h_1 + b) (default tanh).
    states = wrapper.get_initial_state(batch_size=2)
    out, _ = wrapper(x[:, 0], states)
    cell_out, _ = wrapper.cell(x[:, 0], states[:2])
    size = 3
    expected = np.tanh(_np(cell_out) @ _np(wrapper.output_kernel)[:size]
                       + _np(wrapper.output_bias))
    np.testing.assert_allclose(_np(out), expected, atol=1e-6)


def test_state_and_output_layout():
    wrapper = AttentionWrapper(keras.layers.LSTMCell(6), 5, "single", units=2,
                               return_cell_output=True, return_attention=True)
    assert wrapper.state_size == [6, 6, 30, 5, 1]
    assert wrapper.output_size == 2 + 6 + 5
    combined = AttentionWrapper(keras.layers.LSTMCell(6), 5, "combined", attention_units=4)
    assert combined.state_size == [6, 6, 30, 20, 1]
    assert combined.output_size == 6


def test_weights_of_a_model_trained_without_return_attention():
    keras.utils.set_random_seed(5)
    x = np.random.default_rng(5).normal(size=(B, T, F))
    trained = keras.layers.RNN(AttentionWrapper(keras.layers.LSTMCell(5), M, "combined"),
                               return_sequences=True)
    y = to_numpy(trained(x))
    plotting = keras.layers.RNN(
        AttentionWrapper(keras.layers.LSTMCell(5), M, "combined", return_attention=True),
        return_sequences=True)
    plotting.build(x.shape)
    plotting.set_weights(trained.get_weights())
    parts = plotting.cell.split_outputs(plotting(x))
    np.testing.assert_allclose(to_numpy(parts.output), y, atol=1e-6)
    assert parts.attention.shape == (B, T, M)


def test_kernels_of_one_shape_start_different():
    wrapper = AttentionWrapper(keras.layers.LSTMCell(4), 3, "combined")
    keras.layers.RNN(wrapper)(np.zeros((1, 2, F), "float32"))
    assert not np.allclose(_np(wrapper.key_kernel), _np(wrapper.query_kernel))
    # A seeded initializer keeps the wrapper reproducible.
    seeded = [AttentionWrapper(keras.layers.LSTMCell(4), 3, "combined",
                               kernel_initializer=keras.initializers.GlorotUniform(seed=1))
              for _ in range(2)]
    for wrapper in seeded:
        wrapper.build((None, F))
    np.testing.assert_array_equal(_np(seeded[0].query_kernel),
                                  _np(seeded[1].query_kernel))
