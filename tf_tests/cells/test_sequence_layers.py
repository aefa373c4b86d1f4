"""The sequence layers HMLSTM, HMRNN, MultiplicativeLSTM against RNN(cell).

Each layer must compute what `hmkeras.RNN` (`keras.layers.RNN` that opens
the cell's sequence) over a cell with the same weights computes: outputs, final states, and gradients with respect to the
inputs and every weight, in float64 (so that the different order of the
precomputed input products only shows as rounding), for every cell, with
and without layer / weight normalization, with masking, stateful and
backwards.  On JAX without x64 "float64" is float32: there the layer and
the RNN agree to float32 rounding.
"""

import inspect

import backend_support
from backend_support import to_numpy
import keras
import numpy as np
import pytest
from keras import ops

from hmkeras.cells import HMLSTM
from hmkeras.cells import RNN
from hmkeras.cells import HMLSTMCell
from hmkeras.cells import HMRNN
from hmkeras.cells import HMRNNCell
from hmkeras.cells import MultiplicativeLSTM
from hmkeras.cells import MultiplicativeLSTMCell
from hmkeras.cells.hierarchical_cell import find_hierarchical_cells

pytestmark = pytest.mark.every_backend

B, T, FEATURES = 3, 9, 4
TOLERANCE = dict(rtol=1e-9, atol=1e-11)
# Keras' JAX RNN, under a mask, holds the previous output on masked steps
# by reading the first state, which must then have the output's size: not
# so for the hierarchical cells (whose output is all layers' h and z).
JAX_MASKED_OUTPUT_IS_FIRST_STATE = (
    "Keras' JAX RNN with a mask assumes the output has the size of the first "
    "state (not so for HMLSTM / HMRNN)")

# (layer class, cell class, positional arguments, keyword arguments)
CASES = {
    "hmlstm_ln": (HMLSTM, HMLSTMCell, ([5, 4, 3],), {"layer_norm": True}),
    "hmlstm": (HMLSTM, HMLSTMCell, ([5, 4, 3],), {"layer_norm": False}),
    "hmlstm_copy_last": (HMLSTM, HMLSTMCell, ([4, 3],),
                         {"layer_norm": False, "copy_last": True, "top_down": False}),
    "hmrnn_ln": (HMRNN, HMRNNCell, ([5, 4, 3],), {"layer_norm": True}),
    "hmrnn": (HMRNN, HMRNNCell, ([5, 4, 3],), {"layer_norm": False}),
    "mlstm_wn": (MultiplicativeLSTM, MultiplicativeLSTMCell, (5, 3),
                 {"weight_normalization": True}),  # scope "recurrent"
    "mlstm_wn_all": (MultiplicativeLSTM, MultiplicativeLSTMCell, (5, 3),
                     {"weight_normalization": True,
                      "weight_normalization_scope": "all"}),
    "mlstm": (MultiplicativeLSTM, MultiplicativeLSTMCell, (5,), {}),
}


def _assert_close(got, want):
    """Equal to float64 rounding (`TOLERANCE`); where "float64" is float32
    (JAX without x64), to float32 rounding, relative to the array's scale
    (a gradient summed over steps cancels large terms: the layer-normalized
    HMRNN's gradient of a six-element weight differs by 1.3e-4 of its scale
    between the two loops on some CPUs, from the order of the sums alone)."""
    if backend_support.HAS_FLOAT64:
        np.testing.assert_allclose(got, want, **TOLERANCE)
    else:
        scale = float(np.max(np.abs(want), initial=1.0))
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=3e-4 * scale)


def _busy_boundaries(cell):
    """Scale the boundary columns up so that z switches often (both values)."""
    if not find_hierarchical_cells(cell):
        return
    rng = np.random.default_rng(5)
    for weight in cell.weights:
        if weight.name.startswith(("kernel_", "recurrent_kernel_", "top_down_kernel_")):
            n = int(weight.name.rsplit("_", 1)[1])
            if n < cell.num_layers:
                value = ops.convert_to_numpy(weight)
                value[:, -1] *= 4.0
                weight.assign(value)
        if weight.name.startswith("bias_") and int(weight.name[5:]) < cell.num_layers:
            value = ops.convert_to_numpy(weight)
            value[-1] = rng.normal() * 0.3
            weight.assign(value)


def make_pair(case, rnn_kwargs=None, **extra):
    """A sequence layer and an RNN over an equal cell, with equal weights."""
    layer_class, cell_class, args, kwargs = CASES[case]
    kwargs = {**kwargs, **extra}
    rnn_kwargs = {"return_sequences": True, "return_state": True, **(rnn_kwargs or {})}
    keras.utils.set_random_seed(1)
    layer = layer_class(*args, dtype="float64", **kwargs, **rnn_kwargs)
    reference = RNN(
        cell_class(*args, dtype="float64", **kwargs), dtype="float64", **rnn_kwargs
    )
    batch = B if rnn_kwargs.get("stateful") else None
    layer.build((batch, None, FEATURES))
    reference.build((batch, None, FEATURES))
    _busy_boundaries(layer.cell)
    reference.cell.set_weights(layer.cell.get_weights())
    return layer, reference


def _inputs(seed=0, steps=T):
    return np.random.default_rng(seed).normal(size=(B, steps, FEATURES))


def _input_and_weight_gradients(layer, objective, x, **kwargs):
    """`(outputs, [dx], weight gradients)` of `objective(layer(x, **kwargs))`
    in one differentiation, the weights in `layer.trainable_variables`
    order, by the backend's own differentiation."""
    if backend_support.BACKEND == "tensorflow":
        import tensorflow as tf

        x = tf.convert_to_tensor(x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            outputs = layer(x, **kwargs)
            value = objective(outputs)
        gradients = tape.gradient(value, [x] + list(layer.trainable_variables))
        x_gradient, w_gradients = gradients[0], gradients[1:]
    elif backend_support.BACKEND == "torch":
        import torch

        x = torch.tensor(np.asarray(x), requires_grad=True)
        outputs = layer(x, **kwargs)
        weights = [v.value for v in layer.trainable_variables]
        x_gradient, *w_gradients = torch.autograd.grad(
            objective(outputs), [x] + weights, allow_unused=True)
        w_gradients = [torch.zeros_like(w) if g is None else g
                       for w, g in zip(weights, w_gradients)]
    else:
        import jax

        non_trainable = [v.value for v in layer.non_trainable_variables]

        def value_of(trainable, inputs):
            outputs, _ = layer.stateless_call(trainable, non_trainable, inputs, **kwargs)
            return objective(outputs), outputs

        (_, outputs), (w_gradients, x_gradient) = jax.value_and_grad(
            value_of, argnums=(0, 1), has_aux=True)(
                [v.value for v in layer.trainable_variables], ops.convert_to_tensor(x))
    return outputs, [ops.convert_to_numpy(x_gradient)], [
        ops.convert_to_numpy(g) for g in w_gradients]


def _run(rnn, x, mask=None, training=False):
    """Outputs, states and the gradients of a random projection of them."""
    assert [id(v) for v in rnn.trainable_variables] == [
        id(v) for v in rnn.cell.trainable_weights]

    def loss_of(result):
        loss = 0.0
        for k, tensor in enumerate(result):
            weights = np.random.default_rng(100 + k).normal(size=tensor.shape)
            loss += ops.sum(tensor * ops.cast(weights, tensor.dtype))
        return loss

    result, x_gradients, w_gradients = _input_and_weight_gradients(
        rnn, loss_of, x, mask=mask, training=training)
    return [backend_support.to_numpy(r) for r in result], x_gradients + w_gradients


@pytest.mark.parametrize("case", sorted(CASES))
def test_equals_rnn_of_cell(case):
    layer, reference = make_pair(case)
    x = _inputs()
    results, gradients = _run(layer, x)
    expected, expected_gradients = _run(reference, x)
    assert len(results) == len(expected)
    for got, want in zip(results, expected):
        _assert_close(got, want)
    for got, want in zip(gradients, expected_gradients):
        _assert_close(got, want)
    if find_hierarchical_cells(layer):  # the boundaries really switch
        boundaries = layer.split_outputs(results[0])[1]
        assert 0.0 < float(np.mean(backend_support.to_numpy(boundaries))) < 1.0


@pytest.mark.slow
@pytest.mark.skipif(backend_support.BACKEND != "tensorflow",
                    reason="a length unknown when traced is TensorFlow's tf.function "
                           "(JAX traces one function per length)")
@pytest.mark.parametrize("case", ["hmlstm_ln", "hmlstm"])
def test_training_over_steps_unknown_until_run_time(case):
    """A sequence whose length is not static (a `tf.function` traced for
    any length, as for padded batches of varying length) trains with
    RNN(cell)'s gradients at every length."""
    import tensorflow as tf

    layer, reference = make_pair(case)
    spec = tf.TensorSpec((None, None, FEATURES), tf.float64)

    def gradients_of(rnn):
        @tf.function(input_signature=[spec])
        def gradients(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                outputs = rnn(x, training=True)[0]
                loss = tf.reduce_sum(outputs * tf.cos(outputs))
            return tape.gradient(loss, [x] + rnn.cell.trainable_weights)
        return gradients

    layer_gradients, reference_gradients = gradients_of(layer), gradients_of(reference)
    for steps in (3, T):
        x = tf.constant(_inputs(seed=steps, steps=steps))
        for got, want in zip(layer_gradients(x), reference_gradients(x)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), **TOLERANCE)


@pytest.mark.parametrize("case", [
    pytest.param(case, marks=pytest.mark.skipif(
        backend_support.BACKEND == "jax" and not case.startswith("mlstm"),
        reason=JAX_MASKED_OUTPUT_IS_FIRST_STATE))
    for case in ["hmlstm_ln", "hmrnn", "mlstm_wn"]])
def test_masking_and_backwards(case):
    mask = np.ones((B, T), bool)
    mask[0, 6:] = False
    mask[2, 3:] = False
    x = _inputs(seed=1)
    for go_backwards in (False, True):
        layer, reference = make_pair(case, {"go_backwards": go_backwards})
        results, gradients = _run(layer, x, mask=mask)
        expected, expected_gradients = _run(reference, x, mask=mask)
        for got, want in zip(results + gradients, expected + expected_gradients):
            _assert_close(got, want)


@pytest.mark.parametrize("case", ["hmlstm_ln", "hmrnn_ln", "mlstm"])
def test_stateful_carries_state_across_calls(case):
    layer, reference = make_pair(case, {"stateful": True})
    for seed in (2, 3):
        x = _inputs(seed=seed, steps=5)
        got = [to_numpy(t) for t in layer(x)]
        want = [to_numpy(t) for t in reference(x)]
        for a, b in zip(got, want):
            _assert_close(a, b)
    # The second call started from the first one's final state.
    fresh, _ = make_pair(case, {"stateful": False})
    fresh.cell.set_weights(layer.cell.get_weights())
    restarted = to_numpy(fresh(_inputs(seed=3, steps=5))[0])
    assert not np.allclose(restarted, got[0])


@pytest.mark.slow
@pytest.mark.parametrize("case", ["hmlstm", "hmrnn_ln", "mlstm_wn"])
def test_dropout_masks_match_rnn_of_cell(case):
    layer, reference = make_pair(case, dropout=0.3, recurrent_dropout=0.2, seed=7)
    x = _inputs(seed=4)
    results, gradients = _run(layer, x, training=True)
    expected, expected_gradients = _run(reference, x, training=True)
    for got, want in zip(results + gradients, expected + expected_gradients):
        _assert_close(got, want)
    # Dropout is really on: inference differs.
    assert not np.allclose(_run(layer, x)[0][0], results[0])


def test_unroll_and_last_output():
    layer, reference = make_pair("hmlstm_ln", {"unroll": True, "return_sequences": False})
    x = _inputs(seed=5)
    for got, want in zip(layer(x), reference(x)):
        _assert_close(to_numpy(got), to_numpy(want))


@pytest.mark.parametrize("case", ["hmlstm_ln", "hmrnn", "mlstm_wn"])
def test_config_is_flat_and_round_trips(case, tmp_path):
    layer, _ = make_pair(case, {"return_state": False}, seed=3)
    config = layer.get_config()
    assert "cell" not in config
    assert config["return_sequences"] is True
    assert config["seed"] == 3
    clone = type(layer).from_config(config)
    assert clone.cell.get_config() == {**layer.cell.get_config(), "name": clone.cell.name}
    # Saved and loaded inside a model, with its weights.
    model = keras.Sequential([keras.Input((None, FEATURES), dtype="float64"), layer])
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    x = _inputs(seed=6)
    np.testing.assert_array_equal(to_numpy(loaded(x)), to_numpy(model(x)))
    assert type(loaded.layers[0]) is type(layer)


def test_owns_its_cell_and_exposes_its_arguments():
    layer = HMLSTM(4, num_layers=2, boundary_mode="soft", slope=2.0, layer_norm=False)
    assert isinstance(layer.cell, HMLSTMCell)
    assert layer.units == [4, 4] and layer.boundary_mode == "soft"
    assert find_hierarchical_cells(keras.Sequential([layer])) == [layer.cell]
    mlstm = MultiplicativeLSTM(6, 2, forget_bias=1.5)
    assert mlstm.multiplicative_units == 2 and mlstm.forget_bias == 1.5
    with pytest.raises(AttributeError):
        layer.units = 3
    with pytest.raises(ValueError, match="boundary_mode"):
        HMRNN(4, boundary_mode="hard")
    with pytest.raises(ValueError, match="HMLSTM"):
        HMLSTM(4)(np.zeros((1, 3, 2), "int32"))


def test_user_subclasses_build_with_or_without_a_docstring():
    """Subclassing a sequence layer (a user's own) keeps its arguments."""

    class Plain(HMLSTM):
        pass

    class Documented(MultiplicativeLSTM):
        """A user's layer.

        Args:
            units: As in MultiplicativeLSTM.
        """

    plain = Plain(4, num_layers=2, return_sequences=True)
    assert plain.cell.units == [4, 4] and plain.return_sequences
    assert inspect.getdoc(Plain) == inspect.getdoc(HMLSTM)  # inherited
    documented = Documented(3, weight_normalization=True)
    assert documented.cell.weight_normalization
    # A docstring is kept as written (the library's are written out in full).
    assert inspect.getdoc(Documented) == (
        "A user's layer.\n\nArgs:\n    units: As in MultiplicativeLSTM.")
    y = plain(np.zeros((1, 2, FEATURES), "float32"))
    assert y.shape == (1, 2, 4 + 4 + 1)
