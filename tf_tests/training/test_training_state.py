"""TrainingCheckpoint: optimizer state restored, a mismatched optimizer refused."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import pytest

from hmkeras.training.training_state import TrainingCheckpoint


def fitted(optimizer):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer, "mse")
    return model


def test_restores_adam_moments_and_refuses_another_optimizer(tmp_path):
    model = fitted(keras.optimizers.Adam(0.1))
    model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=3, verbose=0)
    checkpoint = TrainingCheckpoint(tmp_path)
    checkpoint.save(model, {"epoch": 3, "batch": 0})
    assert os.listdir(checkpoint.path) and not os.path.exists(checkpoint.path + ".tmp")

    clone = fitted(keras.optimizers.Adam(0.1))
    assert checkpoint.restore(clone) == {"epoch": 3, "batch": 0}
    for saved, restored in zip(model.optimizer.variables, clone.optimizer.variables):
        np.testing.assert_array_equal(saved.numpy(), restored.numpy())
    assert int(clone.optimizer.iterations.numpy()) == 3

    with pytest.raises(ValueError, match="optimizer variables"):
        checkpoint.restore(fitted(keras.optimizers.SGD(0.1)))
