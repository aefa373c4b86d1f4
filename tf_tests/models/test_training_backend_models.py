"""The models whose training step is their own (the MEE encoder-decoder,
the RRNet word LM) and their examples: built on TensorFlow and JAX,
refused in one line on another backend, before an example makes a file.
Runs on every backend."""

import keras
import pytest
from example_modules import example_settings
from example_modules import load_example

from hmkeras import tensorflow_features

pytestmark = pytest.mark.every_backend

BACKEND = keras.backend.backend()
SUPPORTED = BACKEND in tensorflow_features.TRAINING_BACKENDS
REFUSAL = ("trains on the TensorFlow and JAX backends only: set "
           "KERAS_BACKEND=tensorflow or KERAS_BACKEND=jax. "
           f"The backend is '{BACKEND}'.")


def _models():
    from hmkeras.models import ExpressionModel
    from hmkeras.models import RecurrentRecursiveLanguageModel

    return {
        "ExpressionModel": lambda: ExpressionModel(units=4, embedding_dim=4),
        "RecurrentRecursiveLanguageModel":
            lambda: RecurrentRecursiveLanguageModel(vocab_size=10, units=4),
    }


@pytest.mark.parametrize("name", ["ExpressionModel", "RecurrentRecursiveLanguageModel"])
def test_the_model_is_built_on_its_backends_and_refused_elsewhere(name):
    make = _models()[name]
    if SUPPORTED:
        assert isinstance(make(), keras.Model)
        return
    with pytest.raises(ValueError, match=f"^{name} {REFUSAL}$"):
        make()


def test_the_refusal_names_the_feature_and_the_backends(monkeypatch):
    monkeypatch.setattr(keras.backend, "backend", lambda: "torch")
    with pytest.raises(ValueError) as error:
        tensorflow_features.require_training_backend("ExpressionModel")
    assert str(error.value) == (
        "ExpressionModel trains on the TensorFlow and JAX backends only: set "
        "KERAS_BACKEND=tensorflow or KERAS_BACKEND=jax. The backend is 'torch'.")


@pytest.mark.parametrize("script, flags, feature", [
    ("mee", ["--encoder=lstm", "--tiny"], r"ExpressionModel \(examples/mee.py\)"),
    ("ptb_word", ["--cell=rrnet", "--tiny"],
     r"RecurrentRecursiveLanguageModel \(--cell=rrnet\)"),
])
def test_the_example_refuses_another_backend_before_any_file(script, flags, feature, tmp_path):
    load_example(script)
    import command_line  # examples/, on sys.path once an example is loaded

    out = tmp_path / "run"
    if SUPPORTED:
        settings = example_settings(script, *flags, f"--output_dir={out}")
        assert settings["output_dir"] == str(out)
        return
    with pytest.raises(command_line.FlagError, match=f"^{feature} {REFUSAL}$"):
        example_settings(script, *flags, f"--output_dir={out}")
    assert not out.exists()
