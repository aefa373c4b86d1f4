"""Property-based tests over random configurations of the public layers.

Hypothesis draws random VALID configurations of the cells (`HMLSTMCell`,
`HMRNNCell`, `MultiplicativeLSTMCell` under `keras.layers.RNN`), of the
sequence layers (`HMLSTM`, `HMRNN`, `MultiplicativeLSTM`), of the wrappers
(`AveragingWrapper`, `AttentionWrapper` around a small cell) and of the
output heads (`GatedOutputEmbedding`, `SimpleOutputEmbedding`,
`MixtureDensityOutput` over a hierarchical sequence layer), in float32 or
float64 (a wrapper and its cell each drawing its own), on random inputs
(batch <= 3, steps <= 5, features <= 4), and checks for each one that the
model

* builds and runs eagerly with finite outputs of the documented shape and
  dtype (a hierarchical cell's step output is `sum(units) + L - 1` wide,
  its boundaries are 0 or 1 in the discrete modes, its hidden states in
  [-1, 1]; a returned final state equals the last step's output);
* survives `get_config` / `from_config` (the configuration is JSON-able
  and a fixed point) and gives equal outputs with the weights copied;
* survives a `.keras` save and load with equal outputs and slopes;
* (fewer examples: exporting is slow) survives `model.export` with equal
  outputs from `tf.saved_model.load` and from `keras.layers.TFSMLayer`.

The round trip runs for each public class on its own (a parameter), the
export for each family of classes.  The weights are moved off their
initial values and the slopes set before the round trips, so that a lost
or re-initialized weight shows in the outputs.

It also draws random INVALID argument values (outside the allowed sets,
the other arguments valid) and misspelled keywords, and checks that
construction raises a `ValueError` or `TypeError` whose message names the
argument.

Every test is deterministic (`derandomize=True`, no example database).
The number of configurations each property exercised is counted in
`CONFIGURATIONS` and printed by the last test (`pytest -s`); see it with
`--hypothesis-show-statistics` too.
"""

import collections
import copy
import json
import math
import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck
from hypothesis import event
from hypothesis import given
from hypothesis import note
from hypothesis import settings
from hypothesis import strategies as st

import hmkeras
from hmkeras.cells.hierarchical_cell import BOUNDARY_INPUTS
from hmkeras.cells.hierarchical_cell import BOUNDARY_MODES
from hmkeras.cells.straight_through import GRADIENTS
from hmkeras.cells.hierarchical_cell import HierarchicalCell
from hmkeras.cells.hierarchical_cell import find_hierarchical_cells
from hmkeras.cells import multiplicative_lstm_cell

# The mLSTM's weight-normalization scopes ("recurrent", "all"), where the
# cell has the option.
MLSTM_SCOPES = tuple(sorted(getattr(multiplicative_lstm_cell,
                                    "WEIGHT_NORMALIZATION_SCOPES", ())))

# Examples per property: per public class for the round trip, per family
# of classes for the (slow) export, in all for the invalid arguments. The
# whole file takes about half a minute of CPU time.
ROUND_TRIP_EXAMPLES = 5
EXPORT_EXAMPLES = 2
INVALID_EXAMPLES = 300

# Configurations each property ran to the end, by test name.
CONFIGURATIONS = collections.Counter()
# The least number of examples a property must have run (Hypothesis may
# stop early when its search space is exhausted; these spaces are not).
MINIMUM_FRACTION = 0.9


def _settings(max_examples):
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# ----------------------------------------------------------------------
# Valid configurations
# ----------------------------------------------------------------------
RATES = st.sampled_from([0.0, 0.25])
# A layer's `dtype` (None: the float32 default).
DTYPES = st.sampled_from([None, "float64"])
SEEDS = st.none() | st.integers(0, 2**16)


@st.composite
def hm_cell_arguments(draw, lstm, max_units=8):
    """Keyword arguments of `HMLSTMCell` (`lstm`) or `HMRNNCell`.

    `units` is an int or a per-layer list, a Python or a NumPy integer;
    `num_layers` is given, or left to its default (3, or `len(units)`).
    """
    num_layers = draw(st.integers(2, 3))
    integer = draw(st.sampled_from([int, np.int64]))
    if draw(st.booleans()):
        sizes = draw(st.lists(st.integers(1, max_units), min_size=num_layers,
                              max_size=num_layers))
        units = [integer(size) for size in sizes]
        layers_argument = draw(st.sampled_from([None, num_layers]))
    else:
        units = integer(draw(st.integers(1, max_units)))
        layers_argument = draw(st.sampled_from([None, num_layers]))
    mode = draw(st.sampled_from(BOUNDARY_MODES))
    arguments = {
        "units": units,
        "num_layers": layers_argument,
        "boundary_mode": mode,
        "slope": draw(st.floats(0.25, 5.0)),
        "boundary_gradient": "hard_sigmoid" if mode == "soft" else draw(
            st.sampled_from(GRADIENTS)),
        "boundary_input": draw(st.sampled_from(BOUNDARY_INPUTS)),
        "layer_norm": draw(st.booleans()),
        "layer_norm_gain": draw(st.floats(0.05, 2.0)),
        "top_down": draw(st.booleans()),
        "boundary_bias": draw(st.floats(-2.0, 2.0)),
        "kernel_initializer": draw(st.sampled_from(["glorot_uniform", "orthogonal",
                                                    "he_normal"])),
        "kernel_regularizer": draw(st.sampled_from([None, "l2"])),
        "dropout": draw(RATES),
        "recurrent_dropout": draw(RATES),
        "seed": draw(SEEDS),
        "sparse_updates": False if mode == "soft" else draw(st.booleans()),
    }
    if lstm:
        arguments["copy_last"] = draw(st.booleans())
        arguments["forget_bias"] = draw(st.floats(-1.0, 3.0))
    return arguments


@st.composite
def mlstm_cell_arguments(draw, max_units=8):
    """Keyword arguments of `MultiplicativeLSTMCell`."""
    scope = {"weight_normalization_scope": draw(st.sampled_from(MLSTM_SCOPES))
             } if MLSTM_SCOPES else {}
    return {
        **scope,
        "units": draw(st.integers(1, max_units)),
        "multiplicative_units": draw(st.none() | st.integers(1, max_units)),
        "activation": draw(st.sampled_from(["tanh", "softsign"])),
        "recurrent_activation": draw(st.sampled_from(["sigmoid", "hard_sigmoid"])),
        "use_bias": draw(st.booleans()),
        "forget_bias": draw(st.floats(-1.0, 3.0)),
        "recurrent_init_scale": draw(st.floats(0.1, 1.5)),
        "weight_normalization": draw(st.booleans()),
        "dropout": draw(RATES),
        "recurrent_dropout": draw(RATES),
        "seed": draw(SEEDS),
    }


CELL_CLASSES = {
    "HMLSTMCell": (hmkeras.HMLSTMCell, hm_cell_arguments(lstm=True)),
    "HMRNNCell": (hmkeras.HMRNNCell, hm_cell_arguments(lstm=False)),
    "MultiplicativeLSTMCell": (hmkeras.MultiplicativeLSTMCell, mlstm_cell_arguments()),
}
SEQUENCE_LAYERS = {
    "HMLSTM": (hmkeras.HMLSTM, hm_cell_arguments(lstm=True)),
    "HMRNN": (hmkeras.HMRNN, hm_cell_arguments(lstm=False)),
    "MultiplicativeLSTM": (hmkeras.MultiplicativeLSTM, mlstm_cell_arguments()),
}


@st.composite
def rnn_arguments(draw, sequence_layer):
    arguments = {
        "return_sequences": draw(st.booleans()),
        "return_state": draw(st.booleans()),
        "go_backwards": draw(st.booleans()),
        "unroll": draw(st.booleans()),
    }
    if sequence_layer:
        arguments["zero_output_for_mask"] = draw(st.booleans())
    return arguments


# A configuration: what to build, the input it runs on, and what the
# documentation says its outputs are.
Case = collections.namedtuple(
    "Case", ["kind", "description", "make_layers", "inputs", "output_shapes",
             "hm_cell_outputs", "state_check", "dtype"]
)
# `dtype`: the outputs' dtype.
# `make_layers()`: a fresh list of layers applied in turn to the input.
# `output_shapes`: the shape of every output (a list: `return_state`).
# `hm_cell_outputs`: whether output 0 is a hierarchical cell's step output
# (then `(units, boundary_mode)`), else None.
# `state_check`: `"hm"` / `"mlstm"` when the final states follow output 0
# and must equal its last step, else None.


def _inputs(draw, features, reset=None):
    batch = draw(st.integers(1, 3))
    steps = draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, steps, features)).astype("float32")
    if reset is not None:  # the wrappers' reset column: token ids or flags
        column = rng.integers(0, 3 if reset == "token" else 2, size=(batch, steps, 1))
        x = np.concatenate([x, column.astype("float32")], axis=-1)
    return x


def _layer_sizes(arguments):
    units = arguments["units"]
    if isinstance(units, list):
        return [int(u) for u in units]
    return [int(units)] * (arguments["num_layers"] or 3)


def _recurrent_shapes(x, rnn, output_size, state_sizes):
    batch, steps = x.shape[0], x.shape[1]
    main = (batch, steps, output_size) if rnn["return_sequences"] else (batch, output_size)
    shapes = [main]
    if rnn["return_state"]:
        shapes += [(batch, size) for size in state_sizes]
    return shapes


def _documented_sizes(name, arguments):
    """(output size, state sizes) of a cell, from its documentation."""
    if name.startswith("HM"):
        sizes = _layer_sizes(arguments)
        per_layer = 2 if "LSTM" in name else 1  # h (and c) per layer
        states = [s for s in sizes for _ in range(per_layer)] + [len(sizes) - 1]
        return sum(sizes) + len(sizes) - 1, states
    units = arguments["units"]
    return units, [units, units]


@st.composite
def recurrent_cases(draw, name):
    """A cell `name` under `keras.layers.RNN`, or the sequence layer `name`."""
    sequence_layer = name in SEQUENCE_LAYERS
    table = SEQUENCE_LAYERS if sequence_layer else CELL_CLASSES
    cls, strategy = table[name]
    arguments = draw(strategy)
    rnn = draw(rnn_arguments(sequence_layer))
    dtype = draw(DTYPES)
    x = _inputs(draw, draw(st.integers(1, 4)))
    output_size, state_sizes = _documented_sizes(name, arguments)

    if sequence_layer:
        def make_layers():
            return [cls(**arguments, **rnn, dtype=dtype)]
    else:
        def make_layers():
            return [keras.layers.RNN(cls(**arguments, dtype=dtype), **rnn, dtype=dtype)]

    hierarchical = name.startswith("HM")
    return Case(
        kind=name if sequence_layer else f"RNN({name})",
        description={"class": name, **arguments, **rnn, "dtype": dtype},
        make_layers=make_layers,
        inputs=x,
        output_shapes=_recurrent_shapes(x, rnn, output_size, state_sizes),
        hm_cell_outputs=(_layer_sizes(arguments), arguments["boundary_mode"])
        if hierarchical else None,
        state_check=("hm" if hierarchical else "mlstm") if rnn["return_state"] else None,
        dtype=dtype or "float32",
    )


# A small cell to wrap, described (layers are made in the tests, not in
# the strategies: Keras seeds its initializers from the `random` module).
WrappedCell = collections.namedtuple(
    "WrappedCell", ["description", "make", "output_size", "remembered", "state_sizes"]
)


@st.composite
def wrapped_cells(draw):
    """A `WrappedCell`: Keras' LSTM or GRU cell, or one of the library's."""
    name = draw(st.sampled_from(["HMLSTMCell", "HMRNNCell", "MultiplicativeLSTMCell",
                                 "LSTMCell", "GRUCell"]))
    if name in ("LSTMCell", "GRUCell"):
        units = draw(st.integers(1, 6))
        cls = getattr(keras.layers, name)
        states = [units, units] if name == "LSTMCell" else [units]
        return WrappedCell({"class": name, "units": units},
                           lambda dtype: cls(units, dtype=dtype), units,
                           {"all": units, "top": units}, states)
    cls, _ = CELL_CLASSES[name]
    if name == "MultiplicativeLSTMCell":
        arguments = draw(mlstm_cell_arguments(max_units=6))
        size = arguments["units"]
        return WrappedCell({"class": name, **arguments},
                           lambda dtype: cls(**arguments, dtype=dtype), size,
                           {"all": size, "top": size}, [size, size])
    arguments = draw(hm_cell_arguments(lstm=name == "HMLSTMCell", max_units=5))
    sizes = _layer_sizes(arguments)
    output_size, states = _documented_sizes(name, arguments)
    return WrappedCell({"class": name, **arguments},
                       lambda dtype: cls(**arguments, dtype=dtype),
                       output_size, {"all": sum(sizes), "top": sizes[-1]}, states)


@st.composite
def wrapper_cases(draw, attention):
    """`keras.layers.RNN` over an averaging or attention wrapper."""
    wrapped = draw(wrapped_cells())
    cell_description, make_cell = wrapped.description, wrapped.make
    cell_output_size, remembered = wrapped.output_size, wrapped.remembered
    reset = draw(st.sampled_from([None, "token", "flag"]))
    arguments = {
        "units": draw(st.none() | st.integers(1, 6)),
        "hierarchy_layers": draw(st.sampled_from(["all", "top"])),
        "return_cell_output": draw(st.booleans()),
        "reset_token_id": draw(st.integers(0, 2)) if reset == "token" else None,
        "reset_flag": reset == "flag",
    }
    if attention:
        cls = hmkeras.AttentionWrapper
        memory_size = draw(st.integers(1, 4))
        arguments.update(
            memory_size=memory_size,
            score=draw(st.sampled_from(["single", "combined"])),
            attention_units=draw(st.none() | st.integers(1, 6)),
            activation=draw(st.sampled_from([None, "tanh"])),
            return_attention=draw(st.booleans()),
        )
    else:
        cls = hmkeras.AveragingWrapper
        arguments.update(
            include_current=draw(st.booleans()),
            activation=draw(st.sampled_from(["tanh", "relu"])),
        )
    rnn = draw(rnn_arguments(sequence_layer=False))
    x = _inputs(draw, draw(st.integers(1, 4)), reset=reset)

    # The wrapper's dtype and the wrapped cell's may differ.
    dtype, cell_dtype = draw(DTYPES), draw(DTYPES)

    def make_layers():
        wrapper = cls(make_cell(cell_dtype), **arguments, dtype=dtype)
        return [keras.layers.RNN(wrapper, **rnn, dtype=dtype)]

    # The documented output layout (hmkeras.wrappers.cell_wrapper).
    size = remembered[arguments["hierarchy_layers"]]
    output_size = (
        (arguments["units"] or size)
        + (cell_output_size if arguments["return_cell_output"] else 0)
        + (arguments["memory_size"] if attention and arguments["return_attention"] else 0)
    )
    # State: the cell's states, then the memory.
    if attention:
        keys = (arguments["attention_units"] or size) if arguments["score"] == "combined" else 1
        memory = [arguments["memory_size"] * size, arguments["memory_size"] * keys, 1]
    else:
        memory = [size, 1]
    return Case(
        kind=cls.__name__,
        description={"class": cls.__name__, "cell": {**cell_description, "dtype": cell_dtype},
                     **arguments, **rnn, "dtype": dtype},
        make_layers=make_layers,
        inputs=x,
        output_shapes=_recurrent_shapes(x, rnn, output_size, wrapped.state_sizes + memory),
        hm_cell_outputs=None,
        state_check=None,
        dtype=dtype or "float32",
    )


@st.composite
def head_cases(draw, head_name):
    """The output head `head_name` over a hierarchical sequence layer."""
    name = draw(st.sampled_from(["HMLSTM", "HMRNN"]))
    layer_class, strategy = SEQUENCE_LAYERS[name]
    arguments = draw(strategy)
    sizes = _layer_sizes(arguments)
    head_class = getattr(hmkeras, head_name)
    if head_name == "MixtureDensityOutput":
        components = draw(st.integers(1, 3))
        head_arguments = {"num_components": components}
        head_size = 6 * components + 1
    else:
        head_size = draw(st.integers(1, 6))
        head_arguments = {
            "units": head_size,
            "layer_sizes": draw(st.sampled_from([None, sizes])),
            "use_bias": draw(st.booleans()),
        }
    x = _inputs(draw, draw(st.integers(1, 4)))

    dtype = draw(DTYPES)

    def make_layers():
        return [layer_class(**arguments, return_sequences=True, dtype=dtype),
                head_class(**head_arguments, dtype=dtype)]

    return Case(
        kind=head_name,
        description={"class": name, **arguments, "head": head_name, **head_arguments,
                     "dtype": dtype},
        make_layers=make_layers,
        inputs=x,
        output_shapes=[(x.shape[0], x.shape[1], head_size)],
        hm_cell_outputs=None,
        state_check=None,
        # The mixture parameters are float32 whatever the layer's dtype.
        dtype="float32" if head_name == "MixtureDensityOutput" else dtype or "float32",
    )


# One strategy per public class under test (Hypothesis' own choice among
# alternatives is far from uniform: a parameter per class keeps every class
# exercised the same number of times).
KINDS = {
    **{f"RNN({name})": recurrent_cases(name) for name in CELL_CLASSES},
    **{name: recurrent_cases(name) for name in SEQUENCE_LAYERS},
    "AveragingWrapper": wrapper_cases(attention=False),
    "AttentionWrapper": wrapper_cases(attention=True),
    **{name: head_cases(name) for name in ("GatedOutputEmbedding",
                                           "SimpleOutputEmbedding",
                                           "MixtureDensityOutput")},
}
# The families that the export property draws from, a few examples each.
FAMILIES = {
    "hierarchical": st.one_of([KINDS[name] for name in (
        "RNN(HMLSTMCell)", "RNN(HMRNNCell)", "HMLSTM", "HMRNN")]),
    "multiplicative": st.one_of(KINDS["RNN(MultiplicativeLSTMCell)"],
                                KINDS["MultiplicativeLSTM"]),
    "wrappers": st.one_of(KINDS["AveragingWrapper"], KINDS["AttentionWrapper"]),
    "heads": st.one_of(KINDS["GatedOutputEmbedding"], KINDS["SimpleOutputEmbedding"],
                       KINDS["MixtureDensityOutput"]),
}


# ----------------------------------------------------------------------
# The properties' machinery
# ----------------------------------------------------------------------
def _model(case):
    inputs = keras.Input(case.inputs.shape[1:])
    y = inputs
    for layer in case.make_layers():
        y = layer(y)
    return keras.Model(inputs, y)


def _as_list(outputs):
    if isinstance(outputs, dict):
        outputs = list(outputs.values())
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    return [np.asarray(keras.ops.convert_to_numpy(y)) for y in outputs]


def _assert_equal_outputs(actual, expected, what):
    actual, expected = _as_list(actual), _as_list(expected)
    assert len(actual) == len(expected), what
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6, err_msg=what)


def _perturb(model, rng, slope):
    """Moves every trainable weight away from its initial value and sets
    every hierarchical cell's slope, so that a round trip that loses a
    weight (or re-initializes it) changes the outputs."""
    for variable in model.trainable_weights:
        noise = rng.normal(scale=0.1, size=variable.shape)
        variable.assign(variable.numpy() + noise.astype(variable.dtype))
    for cell in find_hierarchical_cells(model):
        cell.slope.assign(slope)


def _unbuilt(config):
    """A configuration without the `build_config` that a built nested
    layer (an RNN's cell) records: an unbuilt copy has none."""
    if isinstance(config, dict):
        return {k: _unbuilt(v) for k, v in config.items() if k != "build_config"}
    if isinstance(config, (list, tuple)):
        return type(config)(_unbuilt(v) for v in config)
    return config


def _slopes(model):
    return [float(cell.slope.numpy()) for cell in find_hierarchical_cells(model)]


def _check_documented_outputs(case, outputs):
    outputs = _as_list(outputs)
    assert [y.shape for y in outputs] == [tuple(s) for s in case.output_shapes]
    assert [y.dtype.name for y in outputs] == [case.dtype] * len(outputs)
    for y in outputs:
        assert np.all(np.isfinite(y))
    if case.hm_cell_outputs is not None:
        sizes, mode = case.hm_cell_outputs
        y = outputs[0]
        hidden, z = y[..., : sum(sizes)], y[..., sum(sizes):]
        assert z.shape[-1] == len(sizes) - 1
        # |h| <= 1: h = o * tanh(c) (HM-LSTM) or tanh(.) (HMRNN), or a copy.
        assert np.all(np.abs(hidden) <= 1.0 + 1e-6)
        if mode == "soft":
            assert np.all((z >= 0.0) & (z <= 1.0))
        else:  # "step", and "sample" at inference
            assert np.all((z == 0.0) | (z == 1.0))
    if case.state_check is not None:
        last = outputs[0] if outputs[0].ndim == 2 else outputs[0][:, -1]
        states = outputs[1:]
        if case.state_check == "mlstm":
            np.testing.assert_allclose(states[0], last, rtol=1e-6, atol=1e-6)
        else:
            sizes, _ = case.hm_cell_outputs
            per_layer = len(states[:-1]) // len(sizes)
            hiddens = states[:-1][::per_layer]
            np.testing.assert_allclose(np.concatenate(hiddens + [states[-1]], -1), last,
                                       rtol=1e-6, atol=1e-6)


def _built_case(case):
    """The model of `case`, run once eagerly, with perturbed weights."""
    note(f"configuration: {case.description}")
    note(f"inputs: {case.inputs.shape}")
    event(f"kind: {case.kind}")
    keras.utils.set_random_seed(0)
    model = _model(case)
    _check_documented_outputs(case, model(case.inputs))
    _perturb(model, np.random.default_rng(1), slope=1.75)
    expected = model(case.inputs)
    _check_documented_outputs(case, expected)
    return model, expected


# ----------------------------------------------------------------------
# Properties
# ----------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
@_settings(ROUND_TRIP_EXAMPLES)
@given(data=st.data())
def test_random_configurations_build_run_and_round_trip(kind, data):
    """Build, run, `get_config`/`from_config`, `.keras` save and load."""
    case = data.draw(KINDS[kind], label="case")
    model, expected = _built_case(case)
    x = case.inputs

    # Every layer's configuration is JSON-able and a fixed point.
    for layer in model.layers[1:]:
        config = layer.get_config()
        json.dumps(config)
        rebuilt = type(layer).from_config(copy.deepcopy(config))  # RNN pops "cell"
        assert _unbuilt(rebuilt.get_config()) == _unbuilt(config)
    # The whole model from its configuration, with the weights copied.
    clone = keras.Model.from_config(json.loads(json.dumps(model.get_config())))
    clone.set_weights(model.get_weights())
    _assert_equal_outputs(clone(x), expected, "from_config")
    assert _slopes(clone) == _slopes(model)

    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "model.keras")
        model.save(path)
        loaded = keras.models.load_model(path)
    _assert_equal_outputs(loaded(x), expected, ".keras")
    assert _slopes(loaded) == _slopes(model)
    CONFIGURATIONS[f"round_trip[{kind}]"] += 1


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(FAMILIES))
@_settings(EXPORT_EXAMPLES)
@given(data=st.data())
def test_random_configurations_export(family, data):
    """`model.export` (SavedModel): equal outputs when reloaded."""
    case = data.draw(FAMILIES[family], label="case")
    model, expected = _built_case(case)
    x = tf.constant(case.inputs)
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "exported")
        model.export(path, verbose=False)
        reloaded = tf.saved_model.load(path)
        _assert_equal_outputs(reloaded.serve(x), expected, "tf.saved_model.load")
        layer = keras.layers.TFSMLayer(path, call_endpoint="serve")
        _assert_equal_outputs(layer(x), expected, "TFSMLayer")
    CONFIGURATIONS[f"export[{family}]"] += 1


# ----------------------------------------------------------------------
# Invalid configurations
# ----------------------------------------------------------------------
TEXT = st.text(max_size=4)
NAN_OR_INFINITE = st.sampled_from([math.nan, math.inf, -math.inf])


def bad_int(minimum, allow_none=False):
    """Values `check_int(minimum=minimum)` refuses."""
    values = st.one_of(
        st.integers(max_value=minimum - 1), st.floats(), st.booleans(), TEXT,
        st.just(np.float32(2.0)), st.just([2]),
    )
    return values if allow_none else values | st.none()


BAD_FLOAT_ABOVE_ZERO = st.one_of(st.floats(max_value=0.0), NAN_OR_INFINITE,
                                 st.booleans(), TEXT, st.none())
BAD_FINITE_FLOAT = st.one_of(NAN_OR_INFINITE, st.booleans(), TEXT, st.none())
BAD_RATE = st.one_of(st.floats(max_value=0.0, exclude_max=True), st.floats(min_value=1.0),
                     NAN_OR_INFINITE, st.booleans(), TEXT, st.none())
BAD_BOOL = st.one_of(st.integers(), st.floats(), TEXT, st.none())
BAD_SEED = st.one_of(st.floats(), st.booleans(), TEXT)
BAD_INT_LIST = st.one_of(
    st.just([]),
    st.lists(st.integers(max_value=0), min_size=1, max_size=3),
    st.lists(st.integers(1, 4), min_size=1, max_size=2).map(lambda v: v + [2.5]),
    st.lists(st.integers(1, 4), min_size=1, max_size=2).map(lambda v: v + [True]),
)


def bad_choice(allowed):
    return st.one_of(TEXT.filter(lambda s: s not in allowed), st.integers(),
                     st.booleans(), st.none())


HM_BAD = {
    "units": bad_int(1) | BAD_INT_LIST,
    "num_layers": bad_int(2, allow_none=True),
    "boundary_mode": bad_choice(BOUNDARY_MODES),
    "slope": BAD_FLOAT_ABOVE_ZERO,
    "boundary_gradient": bad_choice(GRADIENTS),
    "boundary_input": bad_choice(BOUNDARY_INPUTS),
    "layer_norm": BAD_BOOL,
    "layer_norm_gain": BAD_FLOAT_ABOVE_ZERO,
    "top_down": BAD_BOOL,
    "boundary_bias": BAD_FINITE_FLOAT,
    "dropout": BAD_RATE,
    "recurrent_dropout": BAD_RATE,
    "seed": BAD_SEED,
    "sparse_updates": BAD_BOOL,
}
HM_LSTM_BAD = {**HM_BAD, "copy_last": BAD_BOOL, "forget_bias": BAD_FINITE_FLOAT}
MLSTM_BAD = {
    "units": bad_int(1),
    "multiplicative_units": bad_int(1, allow_none=True),
    "use_bias": BAD_BOOL,
    "forget_bias": BAD_FINITE_FLOAT,
    "recurrent_init_scale": BAD_FLOAT_ABOVE_ZERO,
    "weight_normalization": BAD_BOOL,
    "dropout": BAD_RATE,
    "recurrent_dropout": BAD_RATE,
    "seed": BAD_SEED,
    **({"weight_normalization_scope": bad_choice(MLSTM_SCOPES)} if MLSTM_SCOPES else {}),
}
RNN_BAD = {name: BAD_BOOL for name in ("return_sequences", "return_state", "go_backwards",
                                       "unroll", "zero_output_for_mask")}
class Made:
    """A layer to make in the test body: `Made(factory)`."""

    def __init__(self, factory):
        self.factory = factory

    def __repr__(self):
        return "Made(...)"


def _made(arguments):
    return {k: v.factory() if isinstance(v, Made) else v for k, v in arguments.items()}


WRAPPER_BAD = {
    "cell": st.one_of(st.integers(), TEXT, st.none(),
                      st.integers(1, 3).map(lambda n: Made(lambda: keras.layers.Dense(n)))),
    "units": bad_int(1, allow_none=True),
    "hierarchy_layers": bad_choice(("all", "top")),
    "reset_token_id": bad_int(0, allow_none=True),
    "reset_flag": BAD_BOOL,
    "return_cell_output": BAD_BOOL,
}
AVERAGING_BAD = {**WRAPPER_BAD, "include_current": BAD_BOOL}
ATTENTION_BAD = {
    **WRAPPER_BAD,
    "memory_size": bad_int(1),
    "score": bad_choice(("single", "combined")),
    "attention_units": bad_int(1, allow_none=True),
    "return_attention": BAD_BOOL,
}
EMBEDDING_BAD = {"units": bad_int(1), "layer_sizes": BAD_INT_LIST | TEXT | st.integers(),
                 "use_bias": BAD_BOOL}


def _mlstm_valid(draw):
    arguments = draw(mlstm_cell_arguments())
    del arguments["activation"], arguments["recurrent_activation"]
    return arguments


@st.composite
def _wrapper_valid(draw, attention):
    make_cell = draw(wrapped_cells()).make
    arguments = {"cell": Made(lambda: make_cell(None)),
                 "units": draw(st.none() | st.integers(1, 6))}
    if attention:
        arguments["memory_size"] = draw(st.integers(1, 4))
    return arguments


# Constructor -> (valid keyword arguments, invalid values by argument).
INVALID_TARGETS = {
    "HMLSTMCell": (hmkeras.HMLSTMCell, hm_cell_arguments(lstm=True), HM_LSTM_BAD),
    "HMRNNCell": (hmkeras.HMRNNCell, hm_cell_arguments(lstm=False), HM_BAD),
    "MultiplicativeLSTMCell": (hmkeras.MultiplicativeLSTMCell,
                               st.composite(_mlstm_valid)(), MLSTM_BAD),
    "HMLSTM": (hmkeras.HMLSTM, hm_cell_arguments(lstm=True), {**HM_LSTM_BAD, **RNN_BAD}),
    "HMRNN": (hmkeras.HMRNN, hm_cell_arguments(lstm=False), {**HM_BAD, **RNN_BAD}),
    "MultiplicativeLSTM": (hmkeras.MultiplicativeLSTM, st.composite(_mlstm_valid)(),
                           {**MLSTM_BAD, **RNN_BAD}),
    "AveragingWrapper": (hmkeras.AveragingWrapper, _wrapper_valid(attention=False),
                         AVERAGING_BAD),
    "AttentionWrapper": (hmkeras.AttentionWrapper, _wrapper_valid(attention=True),
                         ATTENTION_BAD),
    "GatedOutputEmbedding": (hmkeras.GatedOutputEmbedding,
                             st.fixed_dictionaries({"units": st.integers(1, 6)}),
                             EMBEDDING_BAD),
    "SimpleOutputEmbedding": (hmkeras.SimpleOutputEmbedding,
                              st.fixed_dictionaries({"units": st.integers(1, 6)}),
                              EMBEDDING_BAD),
    "MixtureDensityOutput": (hmkeras.MixtureDensityOutput,
                             st.fixed_dictionaries({"num_components": st.integers(1, 3)}),
                             {"num_components": bad_int(1)}),
}


@st.composite
def invalid_cases(draw):
    """(class name, constructor, keyword arguments, the invalid argument)."""
    name = draw(st.sampled_from(sorted(INVALID_TARGETS)))
    cls, valid, bad = INVALID_TARGETS[name]
    arguments = dict(draw(valid))
    argument = draw(st.sampled_from(sorted(bad)))
    arguments[argument] = draw(bad[argument])
    if argument == "boundary_mode":
        arguments["sparse_updates"] = False  # only the mode is wrong
    return name, cls, arguments, argument


@pytest.mark.slow
@_settings(INVALID_EXAMPLES)
@given(case=invalid_cases())
def test_random_invalid_arguments_are_refused_by_name(case):
    name, cls, arguments, argument = case
    note(f"{name}({arguments!r}); invalid: {argument}")
    event(f"invalid: {name}")
    with pytest.raises((ValueError, TypeError)) as error:
        cls(**_made(arguments))
    assert argument in str(error.value)
    CONFIGURATIONS["invalid"] += 1


@_settings(INVALID_EXAMPLES // 10)
@given(
    name=st.sampled_from(sorted(INVALID_TARGETS)),
    keyword=st.from_regex(r"[a-z]{2,8}_zq", fullmatch=True),
    data=st.data(),
)
def test_random_unknown_keywords_are_refused_by_name(name, keyword, data):
    cls, valid, _ = INVALID_TARGETS[name]
    arguments = dict(data.draw(valid))
    arguments[keyword] = 1
    note(f"{name}({arguments!r})")
    with pytest.raises((ValueError, TypeError)) as error:
        cls(**_made(arguments))
    assert keyword in str(error.value)
    CONFIGURATIONS["unknown_keyword"] += 1


# ----------------------------------------------------------------------
# Two cross-checks of the strategies themselves
# ----------------------------------------------------------------------
def test_hm_strategy_sizes_match_the_cells():
    """`_documented_sizes` agrees with the cells on a few fixed configurations."""
    for cls, name in ((hmkeras.HMLSTMCell, "HMLSTMCell"), (hmkeras.HMRNNCell, "HMRNNCell")):
        for arguments in ({"units": 3, "num_layers": None}, {"units": [2, 5], "num_layers": 2},
                          {"units": np.int64(4), "num_layers": 2}):
            cell = cls(**arguments)
            assert isinstance(cell, HierarchicalCell)
            output_size, states = _documented_sizes(name, arguments)
            assert cell.output_size == output_size
            assert list(cell.state_size) == states


@pytest.mark.parametrize("wrapper_class", [hmkeras.AveragingWrapper, hmkeras.AttentionWrapper])
def test_wrapper_in_another_dtype_than_its_cell(wrapper_class):
    """A float64 wrapper over a float32 cell (found by the properties: the
    wrapper concatenated the cell's float32 `h_t` with its float64 context).
    The float64 output equals that of the float64 wrapper over a float64
    cell with the same weights, up to the cell's float32 rounding."""
    x = np.random.default_rng(0).normal(size=(2, 4, 3))
    extra = {"memory_size": 2} if wrapper_class is hmkeras.AttentionWrapper else {}
    outputs, weights = [], None
    for cell_dtype in ("float32", "float64"):
        wrapper = wrapper_class(
            hmkeras.HMRNNCell(3, num_layers=2, dtype=cell_dtype, seed=3),
            dtype="float64", **extra,
        )
        rnn = keras.layers.RNN(wrapper, return_sequences=True, dtype="float64")
        rnn.build(x.shape)
        if weights is None:
            weights = rnn.get_weights()
        rnn.set_weights(weights)
        outputs.append(np.asarray(rnn(x)))
    assert outputs[0].dtype == outputs[1].dtype == np.float64
    np.testing.assert_allclose(outputs[0], outputs[1], rtol=1e-5, atol=1e-5)


def test_configuration_counts():
    """Prints how many configurations each property ran (`pytest -s`) and
    checks that none ran fewer than it was asked to, by much."""
    expected = {
        **{f"round_trip[{kind}]": ROUND_TRIP_EXAMPLES for kind in KINDS},
        **{f"export[{family}]": EXPORT_EXAMPLES for family in FAMILIES},
        "invalid": INVALID_EXAMPLES,
        "unknown_keyword": INVALID_EXAMPLES // 10,
    }
    ran = {name: CONFIGURATIONS[name] for name in expected if CONFIGURATIONS[name]}
    if not ran:
        pytest.skip("no property test ran in this session")
    totals = collections.Counter()
    for name, count in ran.items():
        totals[name.split("[")[0]] += count
    print("\nconfigurations exercised:")
    for name, count in sorted(ran.items()):
        print(f"  {name}: {count}")
    print(f"  totals: {dict(totals)}; all: {sum(totals.values())}")
    for name, count in ran.items():
        assert count >= MINIMUM_FRACTION * expected[name], (name, count)
