"""BoundaryRateRegularizer: value, gradient (finite differences), use in fit."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import hmkeras
from hm_fixtures import FEATURES, inputs, make_cell


def test_value_is_the_squared_distance_of_the_rates():
    rng = np.random.default_rng(0)
    z = (rng.random((3, 10, 2)) < [0.7, 0.1]).astype("float32")
    outputs = np.concatenate([rng.normal(size=(3, 10, 5)), z], axis=-1).astype("float32")
    regularizer = hmkeras.BoundaryRateRegularizer([0.2, None], weight=2.5)
    expected = 2.5 * (z[..., 0].mean() - 0.2) ** 2
    assert float(regularizer(outputs)) == pytest.approx(expected, rel=1e-6)
    np.testing.assert_allclose(regularizer.rates(outputs), z.mean(axis=(0, 1)), rtol=1e-6)


def test_gradient_matches_finite_differences():
    # In "soft" mode z = z~ = hard_sigm(s_z): the penalty is a smooth
    # function of the weights inside the linear region of hard_sigm.
    cell = make_cell(boundary_mode="soft", units=[4, 3, 3])
    rnn = keras.layers.RNN(cell, return_sequences=True, dtype="float64")
    x = inputs()
    regularizer = hmkeras.BoundaryRateRegularizer([0.3, 0.6], weight=1.7)
    weight = next(w for w in cell.weights if w.name == "kernel_1")
    with tf.GradientTape() as tape:
        penalty = regularizer(rnn(x))
    gradient = tape.gradient(penalty, weight.value).numpy()
    original = weight.numpy()
    column = cell._columns_per_unit * cell.units[0]  # the boundary column of W_1
    for row in range(FEATURES):
        numeric = []
        for sign in (1.0, -1.0):
            value = original.copy()
            value[row, column] += sign * 1e-6
            weight.assign(value)
            numeric.append(float(regularizer(rnn(x))))
        weight.assign(original)
        finite_difference = (numeric[0] - numeric[1]) / 2e-6
        assert gradient[row, column] == pytest.approx(finite_difference, rel=1e-4, abs=1e-9)
    assert np.abs(gradient[:, column]).max() > 1e-4  # the penalty does reach W


def test_pulls_the_rate_toward_its_target_in_fit():
    # One-step sequences: z^1_1 depends on x_1 alone (z_0 = 0, h_0 = 0), so
    # the penalty is the only force on the detector and must move its rate
    # toward the target, from either side; without it the rate stays.
    x = np.random.default_rng(1).normal(size=(64, 1, 3)).astype("float32")

    def rate_after_fit(weight, target, bias):
        keras.utils.set_random_seed(0)
        cell = hmkeras.HMLSTMCell(8, num_layers=3, boundary_bias=bias)
        regularizer = hmkeras.BoundaryRateRegularizer([target, None], weight=weight)
        model = keras.Sequential([
            keras.Input((1, 3)),
            keras.layers.RNN(cell, return_sequences=True, activity_regularizer=regularizer),
        ])
        model.compile(keras.optimizers.Adam(0.02), loss=lambda y, p: 0.0 * tf.reduce_sum(p))
        before = float(regularizer.rates(model(x))[0])
        model.fit(x, x, epochs=20, batch_size=64, verbose=0)
        return before, float(regularizer.rates(model(x))[0])

    before, after = rate_after_fit(10.0, target=0.9, bias=-0.5)
    assert before < 0.5 and after > before + 0.1
    before, after = rate_after_fit(10.0, target=0.1, bias=1.0)
    assert before > 0.5 and after < before - 0.1
    before, after = rate_after_fit(0.0, target=0.9, bias=-0.5)
    assert after == before


def test_serializes_and_refuses_bad_arguments():
    regularizer = hmkeras.BoundaryRateRegularizer([0.2, 0.05], weight=0.5)
    again = keras.regularizers.deserialize(keras.regularizers.serialize(regularizer))
    assert again.get_config() == {"target_rates": [0.2, 0.05], "weight": 0.5}
    for kwargs, name in (
        (dict(target_rates=[]), "target_rates"),
        (dict(target_rates=0.2), "target_rates"),
        (dict(target_rates=[1.5]), "target_rates"),
        (dict(target_rates=[True]), "target_rates"),
        (dict(target_rates=[0.2], weight=-1.0), "weight"),
        (dict(target_rates=[0.2], weight=float("nan")), "weight"),
    ):
        with pytest.raises(ValueError, match=name):
            hmkeras.BoundaryRateRegularizer(**kwargs)
    with pytest.raises(ValueError, match="return_sequences=True"):
        regularizer(np.zeros((2, 5), "float32"))
