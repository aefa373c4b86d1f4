"""Arguments of `CharLanguageModelConfig` / `CharLanguageModel`: NumPy numbers
accepted and stored as Python values (the JSON stays writable), bad values
refused with the field named."""

import dataclasses
import json

import numpy as np
import pytest

from hmkeras.models.char_language_model import CharLanguageModel
from hmkeras.models.char_language_model import CharLanguageModelConfig

NAN, INF = float("nan"), float("inf")


def test_numpy_numbers_accepted_and_json_written():
    config = CharLanguageModelConfig(
        vocab_size=np.int64(7), units=np.int32(4), num_layers=np.int64(3),
        embedding_dim=np.int64(3), output_units=np.int64(4),
        slope=np.float32(2.0), layer_norm=np.False_, top_down=np.True_,
        copy_last=np.False_, boundary_bias=np.float64(-1),
        segment_lengths=np.array([4.0, 16.0]), dropout=np.float32(0.25),
        recurrent_dropout=np.float64(0.5), multiplicative_units=np.int64(0),
        weight_normalization=np.False_, l2=np.float32(0.5), seed=np.int64(3))
    values = dataclasses.asdict(config)
    for name, value in values.items():
        if isinstance(value, list):
            assert all(type(v) is float for v in value), name
        elif value is not None:
            assert type(value) in (int, float, bool, str), (name, type(value))
    again = CharLanguageModelConfig.from_json(config.to_json())
    assert again == config
    assert json.loads(config.to_json())["slope"] == 2.0
    lm = CharLanguageModel(config)
    assert lm.hierarchical_cell.units == [4, 4, 4]


@pytest.mark.parametrize(
    "name, values",
    [("vocab_size", [0, True, 5.0, "5", None]),
     ("units", [0, -1, True, 4.0, NAN]),
     ("num_layers", [0, True, 2.5]),
     ("embedding_dim", [0, True, "3"]),
     ("output_units", [-1, True, 4.5]),
     ("multiplicative_units", [-1, True, 2.0]),
     ("slope", [0, -1.0, NAN, INF, True, "1"]),
     ("boundary_bias", [NAN, INF, True, "0", None]),
     ("boundary_prior", ["poisson", True, 1]),
     ("l2", [-0.1, NAN, INF, True, None]),
     ("dropout", [1.0, -0.1, NAN, True]),
     ("recurrent_dropout", [1.0, NAN, "0.1"]),
     ("seed", [1.5, True, "1"]),
     ("layer_norm", [1, "yes", None]),
     ("top_down", [0, "no"]),
     ("copy_last", [1, None]),
     ("weight_normalization", [1, "yes"]),
     ("cell", ["gru", 1]),
     ("output", ["fancy", None]),
     ("boundary_mode", ["hard", True])],
)
def test_bad_values_refused_naming_the_field(name, values):
    for value in values:
        with pytest.raises(ValueError, match=rf"`{name}` must be .*Received: {name}="):
            CharLanguageModelConfig(vocab_size=5, **{name: value}) if name != "vocab_size" \
                else CharLanguageModelConfig(vocab_size=value)


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
