"""backend_steps: one SGD step and one evaluation of a model whose step is
its own, against the same step computed in NumPy, on each backend."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import pytest

import backend_support
from hmkeras.training import backend_steps

pytestmark = [
    pytest.mark.every_backend,
    pytest.mark.skipif(backend_support.BACKEND == "torch",
                       reason="models with a step of their own train on TensorFlow and JAX"),
]

LEARNING_RATE = 0.1


class SquaredError(keras.Model):
    """`mean((x W + b - y)^2)`, with a layer the loss never reaches."""

    def __init__(self):
        super().__init__()
        self.used = keras.layers.Dense(1)
        self.unused = keras.layers.Dense(1)
        self.tracker = keras.metrics.Mean(name="loss")

    def build(self, input_shape):
        self.used.build(input_shape)
        self.unused.build(input_shape)

    def call(self, x):
        return self.used(x)

    def _forward(self, data):
        x, y = data
        return keras.ops.mean(keras.ops.square(self(x, training=True) - y)), ()

    def _logs(self, loss, aux):
        self.tracker.update_state(loss)
        return {"loss": self.tracker.result()}

    def train_step(self, *args):
        return backend_steps.train_step(self, args, self._forward, self._logs)

    def test_step(self, *args):
        return backend_steps.test_step(
            self, args, lambda data: self._logs(*self._forward(data)))


def numpy_loss_and_gradients(x, y, kernel, bias):
    error = x @ kernel + bias - y
    n = error.size
    return np.mean(error ** 2), 2.0 / n * x.T @ error, 2.0 / n * error.sum(axis=0)


def fitted_model():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 3)).astype("float32")
    y = rng.normal(size=(8, 1)).astype("float32")
    keras.utils.set_random_seed(0)
    model = SquaredError()
    model.build((None, 3))
    model.compile(keras.optimizers.SGD(LEARNING_RATE))
    return model, x, y


def test_train_step_is_an_sgd_step_and_skips_unreached_weights():
    model, x, y = fitted_model()
    kernel, bias = (np.asarray(w) for w in model.used.get_weights())
    unused = [np.array(w) for w in model.unused.get_weights()]
    loss, kernel_gradient, bias_gradient = numpy_loss_and_gradients(x, y, kernel, bias)

    history = model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)

    np.testing.assert_allclose(history.history["loss"][0], loss, rtol=1e-5)
    new_kernel, new_bias = model.used.get_weights()
    np.testing.assert_allclose(new_kernel, kernel - LEARNING_RATE * kernel_gradient,
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(new_bias, bias - LEARNING_RATE * bias_gradient,
                               rtol=1e-5, atol=1e-6)
    for before, after in zip(unused, model.unused.get_weights()):
        np.testing.assert_array_equal(after, before)


def test_test_step_reports_the_loss_and_changes_no_weight():
    model, x, y = fitted_model()
    weights = [np.array(w) for w in model.get_weights()]
    kernel, bias = model.used.get_weights()

    logs = model.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)

    np.testing.assert_allclose(logs["loss"], numpy_loss_and_gradients(x, y, kernel, bias)[0],
                               rtol=1e-5)
    for before, after in zip(weights, model.get_weights()):
        np.testing.assert_array_equal(after, before)
