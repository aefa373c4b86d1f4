"""Arguments of `CharLanguageModelConfig` / `CharLanguageModel`: NumPy numbers
accepted and stored as Python values (the JSON stays writable), bad values
refused with the field (or, in `cell_options`, the cell's argument) named."""

import dataclasses
import json

import keras
import numpy as np
import pytest

from hmkeras.cells.boundary_placement import RISE_FRACTION
from hmkeras.cells.hm_lstm_cell import HMLSTMCell
from hmkeras.models.cell_options import MODEL_ARGUMENTS
from hmkeras.models.cell_options import allowed_options
from hmkeras.models.char_language_model import CharLanguageModel
from hmkeras.models.char_language_model import CharLanguageModelConfig

NAN, INF = float("nan"), float("inf")


def _python_values(value, name):
    """Every leaf of `value` is a Python number, string, bool or None."""
    if isinstance(value, dict):
        for key, item in value.items():
            _python_values(item, f"{name}.{key}")
    elif isinstance(value, list):
        for item in value:
            _python_values(item, name)
    else:
        assert value is None or type(value) in (int, float, bool, str), (name, type(value))


def test_numpy_numbers_accepted_and_json_written():
    config = CharLanguageModelConfig(
        vocab_size=np.int64(7), units=np.int32(4), num_layers=np.int64(3),
        embedding_dim=np.int64(3), output_units=np.int64(4),
        cell_options=dict(
            slope=np.float32(2.0), layer_norm=np.False_, top_down=np.True_,
            copy_last=np.False_, boundary_bias=np.float64(-1),
            dropout=np.float32(0.25), recurrent_dropout=np.float64(0.5)),
        segment_lengths=np.array([4.0, 16.0]), l2=np.float32(0.5), seed=np.int64(3))
    values = dataclasses.asdict(config)
    _python_values(values, "config")
    assert all(type(v) is float for v in values["segment_lengths"])
    again = CharLanguageModelConfig.from_json(config.to_json())
    assert again == config
    assert json.loads(config.to_json())["cell_options"]["slope"] == 2.0
    lm = CharLanguageModel(config)
    assert lm.hierarchical_cell.units == [4, 4, 4]
    cell = lm.hierarchical_cell
    assert (cell.initial_slope, cell.layer_norm, cell.boundary_bias, cell.dropout) == (
        2.0, False, -1.0, 0.25)


def test_rise_fraction_reaches_the_placement_and_reads_back():
    # The rise placements' threshold goes to the network's BoundaryPlacement
    # and through JSON; a configuration written before the field reads back
    # with the threshold of that time, half the mean change.
    config = CharLanguageModelConfig(
        vocab_size=7, units=4, num_layers=3, embedding_dim=3, output_units=4,
        boundary_placement="surprisal", segment_lengths=[None, 15],
        rise_fraction=np.float32(0.75))
    assert type(config.rise_fraction) is float
    assert CharLanguageModelConfig.from_json(config.to_json()) == config
    assert CharLanguageModel(config).boundary_placement.rise_fraction == 0.75
    assert CharLanguageModelConfig(vocab_size=7).rise_fraction == RISE_FRACTION
    old = json.loads(config.to_json())
    del old["rise_fraction"]
    assert CharLanguageModelConfig.from_json(json.dumps(old)).rise_fraction == 0.5


def test_mlstm_numpy_options():
    config = CharLanguageModelConfig(
        vocab_size=5, cell="mlstm", units=4,
        cell_options=dict(multiplicative_units=np.int64(6), weight_normalization=np.True_))
    _python_values(dataclasses.asdict(config), "config")
    assert config.cell_options == {"multiplicative_units": 6, "weight_normalization": True}
    cell = CharLanguageModel(config).network.get_layer("rnn_1").cell
    assert (cell.multiplicative_units, cell.weight_normalization) == (6, True)


@pytest.mark.parametrize(
    "name, values",
    [("vocab_size", [0, True, 5.0, "5", None]),
     ("units", [0, -1, True, 4.0, NAN]),
     ("num_layers", [0, True, 2.5]),
     ("embedding_dim", [0, True, "3"]),
     ("output_units", [-1, True, 4.5]),
     ("boundary_prior", ["poisson", True, 1]),
     ("l2", [-0.1, NAN, INF, True, None]),
     ("rise_fraction", [-0.5, NAN, INF, True, None, "half"]),
     ("seed", [1.5, True, "1"]),
     ("cell", ["gru", 1]),
     ("output", ["fancy", None])],
)
def test_bad_values_refused_naming_the_field(name, values):
    for value in values:
        with pytest.raises(ValueError, match=rf"`{name}` must be .*Received: {name}="):
            CharLanguageModelConfig(vocab_size=5, **{name: value}) if name != "vocab_size" \
                else CharLanguageModelConfig(vocab_size=value)


# The cell's options, refused by the cell's own checks (the cell whose
# argument each is).
@pytest.mark.parametrize(
    "cell, name, values",
    [("mlstm", "multiplicative_units", [-1, 0, True, 2.0]),
     ("hmlstm", "slope", [0, -1.0, NAN, INF, True, "1"]),
     ("hmlstm", "boundary_bias", [NAN, INF, True, "0", None]),
     ("hmlstm", "dropout", [1.0, -0.1, NAN, True]),
     ("hmrnn", "recurrent_dropout", [1.0, NAN, "0.1"]),
     ("mlstm", "dropout", [1.0, -0.1, NAN, True]),
     ("lstm", "dropout", [1.0, -0.1, NAN, True]),
     ("lstm", "recurrent_dropout", [1.0, NAN, "0.1"]),
     ("hmlstm", "layer_norm", [1, "yes", None]),
     ("hmlstm", "top_down", [0, "no"]),
     ("hmlstm", "copy_last", [1, None]),
     ("mlstm", "weight_normalization", [1, "yes"]),
     ("mlstm", "weight_normalization_scope", ["input", None]),
     ("hmrnn", "boundary_mode", ["hard", True])],
)
def test_bad_cell_options_refused_naming_the_argument(cell, name, values):
    for value in values:
        with pytest.raises(ValueError, match=rf"`{name}` must be .*Received: {name}="):
            CharLanguageModelConfig(vocab_size=5, cell=cell, cell_options={name: value})


def test_unknown_and_model_options_refused():
    with pytest.raises(ValueError) as error:
        CharLanguageModelConfig(vocab_size=5, cell="hmrnn", cell_options={"copy_last": True})
    message = str(error.value)
    assert "`cell_options` of cell='hmrnn' has no option 'copy_last'" in message
    assert f"Allowed: {list(allowed_options('hmrnn'))}" in message
    for cell, name in (("lstm", "layer_norm"), ("mlstm", "boundary_mode"),
                       ("hmlstm", "weight_normalization"), ("hmlstm", "boundary_prior")):
        with pytest.raises(ValueError, match=rf"`cell_options` of cell='{cell}' has no "
                                             rf"option '{name}'.*Allowed: \["):
            CharLanguageModelConfig(vocab_size=5, cell=cell, cell_options={name: True})
    for name, field in MODEL_ARGUMENTS.items():
        with pytest.raises(ValueError, match=rf"`cell_options` cannot hold '{name}': the "
                                             rf"model sets it from its `{field}` field"):
            CharLanguageModelConfig(vocab_size=5, cell_options={name: 1})
    for options in ([("layer_norm", False)], "layer_norm", {1: False}):
        with pytest.raises(ValueError, match="`cell_options` must be a dict"):
            CharLanguageModelConfig(vocab_size=5, cell_options=options)
    with pytest.raises(ValueError, match="`cell_options` must hold values that JSON"):
        CharLanguageModelConfig(vocab_size=5, cell="lstm", cell_options={"use_bias": np.True_})


def test_allowed_options_are_the_cell_arguments():
    # The hierarchical cells' constructor arguments besides sizes and seed,
    # and exactly those: a new cell argument is a new option, with no list
    # in the model to update.
    assert set(allowed_options("hmlstm")) == set(HMLSTMCell(4, 2).get_config()) - {
        "units", "num_layers", "seed", "kernel_regularizer", "recurrent_regularizer",
        "name", "trainable", "dtype"}
    assert "copy_last" not in allowed_options("hmrnn")
    assert "unit_forget_bias" in allowed_options("lstm")
    assert not set(MODEL_ARGUMENTS) & set(allowed_options("mlstm"))


@pytest.mark.parametrize("cell", ["hmlstm", "hmrnn", "lstm", "mlstm"])
def test_defaults_are_the_cell_defaults(cell):
    """Without `cell_options` every cell option has the cell's own default,
    and the values the models always used: `layer_norm=True`,
    `boundary_mode="step"`, slope 1, top-down on, no CopyLast, boundary bias
    0, no dropout, no weight normalization, `multiplicative_units=units`."""
    lm = CharLanguageModel(vocab_size=5, cell=cell, units=4, num_layers=2,
                           embedding_dim=3, output_units=4, seed=1)
    built = lm.network.get_layer("rnn_1").cell.get_config()
    expected = dict(dropout=0.0, recurrent_dropout=0.0)
    if cell in ("hmlstm", "hmrnn"):
        expected.update(boundary_mode="step", slope=1.0, layer_norm=True, top_down=True,
                        boundary_bias=0.0)
    if cell == "hmlstm":
        expected.update(copy_last=False)
    if cell == "mlstm":
        expected.update(weight_normalization=False, weight_normalization_scope="recurrent",
                        multiplicative_units=4)
    assert {name: built[name] for name in expected} == expected
    bare = lm.network.get_layer("rnn_1").cell.__class__
    reference = (bare(4, 2) if cell in ("hmlstm", "hmrnn") else bare(4)).get_config()
    for name in allowed_options(cell):
        assert built[name] == reference[name], name


def test_checking_the_options_takes_no_automatic_name():
    # The configuration checks the options on a cell of its own; the cells
    # the model builds keep Keras' automatic names (the weight paths of
    # `RNN(cell)`).
    before = keras.layers.LSTMCell(2).name
    CharLanguageModelConfig(vocab_size=5, cell="lstm", cell_options={"dropout": 0.1})
    after = keras.layers.LSTMCell(2).name
    number = lambda name: int(name.rsplit("_", 1)[1]) if name[-1].isdigit() else 0
    assert number(after) == number(before) + 1


@pytest.mark.parametrize("lengths", [[NAN, 10], [1.0, 10], [True, 10], ["5", 10], [5], 5.0])
def test_bad_segment_lengths(lengths):
    with pytest.raises(ValueError, match="`segment_lengths` must be"):
        CharLanguageModelConfig(vocab_size=5, segment_lengths=lengths)


def test_segment_lengths_need_a_hierarchical_cell_and_a_prior():
    with pytest.raises(ValueError, match="`segment_lengths` applies to the hierarchical"):
        CharLanguageModelConfig(vocab_size=5, cell="lstm", segment_lengths=[5, 15])
    with pytest.raises(ValueError, match="`segment_lengths` needs a boundary prior"):
        CharLanguageModelConfig(vocab_size=5, boundary_prior=None, segment_lengths=[5, 15])


def test_language_model_config_argument():
    with pytest.raises(ValueError, match="`config` must be a CharLanguageModelConfig"):
        CharLanguageModel({"vocab_size": 5})
    with pytest.raises(ValueError, match="not both"):
        CharLanguageModel(CharLanguageModelConfig(vocab_size=5), units=4)
    with pytest.raises(TypeError):
        CharLanguageModel(vocab_size=5, unknown_option=1)


def _models_with_a_seed(seed):
    from hmkeras.models.handwriting_model import HandwritingModel
    from hmkeras.models.word_language_model import WordLanguageModel

    return {
        "char hmlstm": CharLanguageModel(vocab_size=9, units=6, embedding_dim=3,
                                         output_units=6, seed=seed),
        "char lstm": CharLanguageModel(vocab_size=9, cell="lstm", units=6,
                                       embedding_dim=3, output_units=6, seed=seed),
        "word lstm": WordLanguageModel(vocab_size=9, cell="lstm", units=6, seed=seed),
        "word hmlstm": WordLanguageModel(vocab_size=9, cell="hmlstm", units=6, seed=seed),
        "handwriting": HandwritingModel(units=6, seed=seed),
    }


def _random_state():
    import random

    return random.getstate(), np.random.get_state()[1].tobytes()


def test_a_models_seed_sets_its_weights_and_leaves_the_program_random_state():
    # Every initial weight follows from the model's seed, whatever the
    # program's random state; building a model does not reseed the program.
    keras.utils.set_random_seed(11)
    first = _models_with_a_seed(4)
    keras.utils.set_random_seed(12)
    before = _random_state()
    again = _models_with_a_seed(4)
    assert _random_state() == before
    other = _models_with_a_seed(5)
    for name, model in first.items():
        weights = [np.asarray(w) for w in model.network.weights]
        assert weights and all(
            np.array_equal(a, np.asarray(b)) for a, b in zip(weights, again[name].network.weights)
        ), name
        assert not all(
            np.array_equal(a, np.asarray(b)) for a, b in zip(weights, other[name].network.weights)
        ), name
