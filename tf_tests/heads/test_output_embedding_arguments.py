"""Arguments and inputs of the output embeddings: NumPy numbers accepted,
bad values refused with the argument named, inputs without a batch axis
refused."""

import json

import numpy as np
import pytest

from hmkeras import GatedOutputEmbedding
from hmkeras import SimpleOutputEmbedding

pytestmark = pytest.mark.every_backend

CLASSES = [GatedOutputEmbedding, SimpleOutputEmbedding]
NAN = float("nan")


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize(
    "kwargs",
    [dict(units=np.int64(6)), dict(units=np.int32(6), layer_sizes=[np.int64(4), 4]),
     dict(units=6, layer_sizes=np.array([4, 4])), dict(units=6, layer_sizes=(4, 4)),
     dict(units=6, use_bias=np.True_)],
)
def test_numpy_numbers_accepted(cls, kwargs):
    layer = cls(**kwargs)
    config = layer.get_config()
    json.dumps(config)
    assert type(config["units"]) is int and config["units"] == 6
    if config["layer_sizes"] is not None:
        assert config["layer_sizes"] == [4, 4]
        assert all(type(s) is int for s in config["layer_sizes"])
    assert type(config["use_bias"]) is bool
    inputs = np.ones((2, 3, 9 if "layer_sizes" in kwargs else 5), "float32")
    assert tuple(layer(inputs).shape) == (2, 3, 6)


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize(
    "kwargs, name",
    [(dict(units="a"), "units"), (dict(units=True), "units"),
     (dict(units=NAN), "units"), (dict(units=4.0), "units"),
     (dict(units=0), "units"), (dict(units=None), "units"),
     (dict(units=4, layer_sizes="44"), "layer_sizes"),
     (dict(units=4, layer_sizes=["4", 4]), "layer_sizes"),
     (dict(units=4, layer_sizes=[4, True]), "layer_sizes"),
     (dict(units=4, layer_sizes=[4, 2.0]), "layer_sizes"),
     (dict(units=4, layer_sizes=[4, NAN]), "layer_sizes"),
     (dict(units=4, layer_sizes=np.int64(4)), "layer_sizes"),
     (dict(units=4, layer_sizes=np.ones((2, 2), int)), "layer_sizes"),
     (dict(units=4, use_bias=1), "use_bias"),
     (dict(units=4, use_bias="yes"), "use_bias"),
     (dict(units=4, use_bias=None), "use_bias")],
)
def test_bad_arguments_refused_naming_the_argument(cls, kwargs, name):
    with pytest.raises(ValueError, match=rf"`{name}` must be .*Received: {name}="):
        cls(**kwargs)


@pytest.mark.parametrize("cls", CLASSES)
def test_rank1_inputs_refused(cls):
    layer = cls(4, layer_sizes=[3, 2])
    with pytest.raises(ValueError, match=r"rank >= 2.*shape=\(6,\)"):
        layer(np.ones((6,), "float32"))
    layer(np.ones((2, 6), "float32"))  # (batch, features) works
    with pytest.raises(ValueError, match=r"rank >= 2.*shape=\(6,\)"):
        layer(np.ones((6,), "float32"))  # also once built


def test_compute_gates_refuses_rank1_inputs():
    layer = GatedOutputEmbedding(4, layer_sizes=[3, 2])
    with pytest.raises(ValueError, match="rank >= 2"):
        layer.compute_gates(np.ones((6,), "float32"))
    assert tuple(layer.compute_gates(np.ones((2, 5, 6), "float32")).shape) == (2, 5, 2)
