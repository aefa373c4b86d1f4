"""`BuildsOptimizerOnCompile`: one trace of the train step, the same training."""

import keras
import numpy as np

from hmkeras.models.char_language_model import CharLanguageModel
from hmkeras.models.expression_model import ExpressionModel
from hmkeras.training.stateful_training import TruncatedBPTTModel


def _counting(model_class):
    """`model_class` that counts the Python calls of its `train_step`: one
    per trace."""

    class Counting(model_class):
        traces = 0

        def train_step(self, data):
            self.traces += 1
            return super().train_step(data)

    Counting.__name__ = Counting.__qualname__ = f"Counting{model_class.__name__}"
    return Counting


_CountingModel = _counting(TruncatedBPTTModel)
_CountingExpressionModel = _counting(ExpressionModel)


def _model(build_on_compile):
    keras.utils.set_random_seed(0)  # the run's seed (`fit` shuffles the rows)
    lm = CharLanguageModel(vocab_size=5, cell="hmlstm", units=4, embedding_dim=3,
                           output_units=4, seed=1)
    model = _CountingModel(lm, batch_size=2)
    arguments = (keras.optimizers.Adam(0.01), model.loss_function())
    if build_on_compile:
        model.compile(*arguments)
    else:  # Keras' own compile: the optimizer is built in the first trace
        keras.Model.compile(model, *arguments)
    return model


def test_train_step_traced_once_and_training_unchanged():
    tokens = np.random.RandomState(0).randint(0, 5, (2, 6)).astype("int32")
    results = {}
    for build_on_compile in (True, False):
        model = _model(build_on_compile)
        assert model.optimizer.built == build_on_compile
        history = model.fit(tokens, tokens, batch_size=2, epochs=2, verbose=0)
        results[build_on_compile] = (model.traces, history.history["loss"],
                                     model.get_weights(),
                                     [v.numpy() for v in model.optimizer.variables])
    traces, losses, weights, slots = results[True]
    keras_traces, keras_losses, keras_weights, keras_slots = results[False]
    assert (traces, keras_traces) == (1, 2)
    assert losses == keras_losses
    for ours, theirs in zip(weights + slots, keras_weights + keras_slots, strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_expression_model_is_built_when_made_and_traced_once(tmp_path):
    # The REINFORCE encoder draws trees: building the weights when the model
    # is made leaves its seed states as they were, so the training is the
    # one of Keras' own compile (optimizer built in the first trace).
    rng = np.random.default_rng(0)
    inputs = {"tokens": rng.integers(1, 17, (4, 7)).astype("int32"),
              "operations": rng.integers(0, 3, (4, 7)).astype("int32")}
    digits = rng.integers(0, 10, (4, 2)).astype("int32")
    results = {}
    for build_on_compile in (True, False):
        keras.utils.set_random_seed(0)
        model = _CountingExpressionModel("rrnet_reinforce", units=4, embedding_dim=3,
                                         baseline="learned", seed=0)
        assert model.built and model.weights
        if build_on_compile:
            model.compile(keras.optimizers.Adam(0.01))
        else:
            keras.Model.compile(model, keras.optimizers.Adam(0.01))
        model.fit(inputs, digits, batch_size=2, epochs=1, verbose=0, shuffle=False)
        results[build_on_compile] = (model.traces, model.get_weights())
    assert (results[True][0], results[False][0]) == (1, 2)
    for ours, theirs in zip(results[True][1], results[False][1], strict=True):
        np.testing.assert_array_equal(ours, theirs)
    # A saved model loads compiled, its optimizer built (Keras skips the
    # compile of a model whose `compile` is its own; the mixin does it).
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(
        path, custom_objects={"CountingExpressionModel": _CountingExpressionModel})
    assert loaded.compiled and loaded.optimizer.built
    np.testing.assert_array_equal(np.asarray(loaded.optimizer.iterations),
                                  np.asarray(model.optimizer.iterations))
