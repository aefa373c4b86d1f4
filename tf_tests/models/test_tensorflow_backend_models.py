"""The models whose training step is TensorFlow's alone (the MEE encoder-
decoder, the RRNet word LM) and their examples: built on TensorFlow,
refused in one line on another backend, before an example makes a file.
Runs on every backend."""

import keras
import pytest
from example_modules import example_settings
from example_modules import load_example

pytestmark = pytest.mark.every_backend

BACKEND = keras.backend.backend()
REFUSAL = ("trains on the TensorFlow backend only: set KERAS_BACKEND=tensorflow "
           r"\(with 'hmkeras\[cpu\]' or 'hmkeras\[gpu\]' installed\). "
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
def test_the_model_is_built_on_tensorflow_and_refused_elsewhere(name):
    make = _models()[name]
    if BACKEND == "tensorflow":
        assert isinstance(make(), keras.Model)
        return
    with pytest.raises(ValueError, match=f"^{name} {REFUSAL}$"):
        make()


@pytest.mark.parametrize("script, flags, feature", [
    ("mee", ["--encoder=lstm", "--tiny"], r"ExpressionModel \(examples/mee.py\)"),
    ("ptb_word", ["--cell=rrnet", "--tiny"],
     r"RecurrentRecursiveLanguageModel \(--cell=rrnet\)"),
])
def test_the_example_refuses_another_backend_before_any_file(script, flags, feature, tmp_path):
    load_example(script)
    import command_line  # examples/, on sys.path once an example is loaded

    out = tmp_path / "run"
    if BACKEND == "tensorflow":
        settings = example_settings(script, *flags, f"--output_dir={out}")
        assert settings["output_dir"] == str(out)
        return
    with pytest.raises(command_line.FlagError, match=f"^{feature} {REFUSAL}$"):
        example_settings(script, *flags, f"--output_dir={out}")
    assert not out.exists()
