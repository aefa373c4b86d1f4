"""Arguments and inputs of the cells: NumPy scalars accepted, bad values
refused with the argument named, integer inputs and rank-2 sequences
explained, `split_outputs` on the list of an RNN with `return_state=True`.
"""

import json

import keras
import numpy as np
import pytest

import hmkeras
from hmkeras import argument_checks

pytestmark = pytest.mark.every_backend

NAN, INF = float("nan"), float("inf")

# The numeric arguments of every cell, by kind: NumPy scalars that must be
# accepted, and values that must be refused.
POSITIVE_INT = ([np.int64(3), np.int32(3), np.uint8(3)],
                [True, np.True_, "3", 3.0, np.float32(3), NAN, 0, -2, None])
FLOAT_ABOVE_ZERO = ([np.float32(0.5), np.float64(2), np.int64(2)],
                    [True, "1", NAN, INF, -INF, 0, -1.0, None])
FINITE_FLOAT = ([np.float32(-0.5), np.float64(2), np.int32(-1)],
                [True, "1", NAN, INF, -INF, None])
RATE = ([np.float32(0.25), np.float64(0.5), np.int64(0)],
        [True, "0.2", NAN, INF, -0.1, 1.0, 1.5, None])
SEED = ([np.int64(5), np.int32(0), None],
        [True, "1", 1.5, np.float32(1), NAN])
FLAG = ([np.True_, np.False_, True, False],
        [1, 0, "yes", None, np.int64(1)])

HM_ARGUMENTS = {
    "units": POSITIVE_INT,
    "slope": FLOAT_ABOVE_ZERO,
    "layer_norm_gain": FLOAT_ABOVE_ZERO,
    "boundary_bias": FINITE_FLOAT,
    "dropout": RATE,
    "recurrent_dropout": RATE,
    "seed": SEED,
    "layer_norm": FLAG,
    "top_down": FLAG,
}
CELL_ARGUMENTS = {
    hmkeras.HMLSTMCell: {**HM_ARGUMENTS, "forget_bias": FINITE_FLOAT,
                         "copy_last": FLAG},
    hmkeras.HMRNNCell: HM_ARGUMENTS,
    hmkeras.MultiplicativeLSTMCell: {
        "units": POSITIVE_INT,
        "multiplicative_units": (POSITIVE_INT[0] + [None], POSITIVE_INT[1][:-1]),
        "forget_bias": FINITE_FLOAT,
        "recurrent_init_scale": FLOAT_ABOVE_ZERO,
        "dropout": RATE,
        "recurrent_dropout": RATE,
        "seed": SEED,
        "use_bias": FLAG,
        "weight_normalization": FLAG,
    },
}
CASES = [(cls, name, value, good)
         for cls, arguments in CELL_ARGUMENTS.items()
         for name, (accepted, refused) in arguments.items()
         for good, values in ((True, accepted), (False, refused))
         for value in values]


def _make(cls, name, value):
    kwargs = {"units": 4, name: value}
    return cls(**kwargs)


@pytest.mark.parametrize(
    "cls, name, value",
    [(c, n, v) for c, n, v, good in CASES if good],
    ids=lambda x: getattr(x, "__name__", repr(x)),
)
def test_numpy_scalars_accepted_and_stored_as_python_values(cls, name, value):
    cell = _make(cls, name, value)
    config = cell.get_config()
    json.dumps(config)  # no NumPy scalar left
    stored = config[name]
    if isinstance(stored, list):  # HM cells keep one size per layer
        stored = stored[0]
    if value is None:
        return
    assert type(stored) in (int, float, bool)
    assert stored == value or (name == "multiplicative_units" and stored == 3)


@pytest.mark.parametrize(
    "cls, name, value",
    [(c, n, v) for c, n, v, good in CASES if not good],
    ids=lambda x: getattr(x, "__name__", repr(x)),
)
def test_bad_values_refused_naming_the_argument(cls, name, value):
    with pytest.raises(ValueError, match=rf"`{name}` must be .*Received: {name}="):
        _make(cls, name, value)


@pytest.mark.parametrize("cls", [hmkeras.HMLSTMCell, hmkeras.HMRNNCell])
def test_hm_layer_sizes_from_numpy(cls):
    assert cls(np.int64(8)).units == [8, 8, 8]
    assert cls(8, num_layers=np.int32(2)).units == [8, 8]
    cell = cls(units=[np.int64(4), 5])
    assert cell.units == [4, 5] and all(type(u) is int for u in cell.units)
    assert cls(np.array([3, 2, 1])).units == [3, 2, 1]
    assert type(cls(8, num_layers=np.int64(3)).get_config()["num_layers"]) is int


@pytest.mark.parametrize("cls", [hmkeras.HMLSTMCell, hmkeras.HMRNNCell])
@pytest.mark.parametrize(
    "kwargs, name",
    [(dict(units=[4, True]), "units"), (dict(units=[4, 2.0]), "units"),
     (dict(units=["4", 4]), "units"), (dict(units=[]), "units"),
     (dict(units=np.zeros((2, 2), int)), "units"),
     (dict(units=4, num_layers=True), "num_layers"),
     (dict(units=4, num_layers=2.0), "num_layers"),
     (dict(units=4, num_layers="3"), "num_layers"),
     (dict(units=4, num_layers=1), "num_layers"),
     (dict(units=4, boundary_mode=1), "boundary_mode"),
     (dict(units=4, boundary_mode="STEP"), "boundary_mode"),
     (dict(units=4, boundary_gradient="tanh"), "boundary_gradient"),
     (dict(units=4, boundary_gradient=None), "boundary_gradient"),
     (dict(units=4, boundary_input="next"), "boundary_input"),
     (dict(units=4, boundary_input=True), "boundary_input")],
)
def test_hm_bad_sizes_and_modes(cls, kwargs, name):
    with pytest.raises(ValueError, match=rf"`{name}` must be"):
        cls(**kwargs)


@pytest.mark.parametrize("cls", [hmkeras.HMLSTMCell, hmkeras.HMRNNCell,
                                 hmkeras.HMLSTM, hmkeras.HMRNN])
def test_boundary_gradient_kept_in_the_config_and_refused_in_soft_mode(cls):
    layer = cls(4, boundary_mode="sample", boundary_gradient="sigmoid")
    config = layer.get_config()
    assert config["boundary_gradient"] == "sigmoid"
    assert cls.from_config(config).get_config() == config
    # A configuration written before the argument existed: Chung et al.'s.
    del config["boundary_gradient"]
    rebuilt = cls.from_config(config)
    assert getattr(rebuilt, "cell", rebuilt).boundary_gradient == "hard_sigmoid"
    with pytest.raises(ValueError, match=r"^`boundary_gradient='sigmoid'` needs boundary_mode "
                                         r"\"step\" or \"sample\" .* Received: "
                                         r"boundary_mode=\"soft\"$"):
        cls(4, boundary_mode="soft", boundary_gradient="sigmoid")


@pytest.mark.parametrize("cls", [hmkeras.HMLSTMCell, hmkeras.HMRNNCell,
                                 hmkeras.HMLSTM, hmkeras.HMRNN])
def test_boundary_input_kept_in_the_config_and_its_weights(cls):
    layer = cls([4, 3, 2], boundary_input="updated")
    config = layer.get_config()
    assert config["boundary_input"] == "updated"
    assert cls.from_config(config).get_config() == config
    # A configuration written before the argument existed: Chung et al.'s.
    del config["boundary_input"]
    assert getattr(cls.from_config(config), "cell", cls.from_config(config)).boundary_input \
        == "previous"
    # Each detector below the top reads its layer's h^l_t through weights of
    # its own; the products lose their boundary column.
    layer.build((None, 5, 6) if hasattr(layer, "cell") else (None, 6))
    shapes = {w.name: tuple(w.shape) for w in layer.weights}
    assert shapes["detector_kernel_1"] == (4, 1) and shapes["detector_kernel_2"] == (3, 1)
    assert shapes["detector_bias_1"] == (1,) and "detector_kernel_3" not in shapes
    previous = cls([4, 3, 2])
    previous.build((None, 5, 6) if hasattr(previous, "cell") else (None, 6))
    before = {w.name: tuple(w.shape) for w in previous.weights}
    assert shapes["recurrent_kernel_1"][1] == before["recurrent_kernel_1"][1] - 1
    assert shapes["recurrent_kernel_3"] == before["recurrent_kernel_3"]


@pytest.mark.parametrize("cls", [hmkeras.HMLSTM, hmkeras.HMRNN])
def test_detectors_of_the_updated_state_survive_a_keras_file(cls, tmp_path):
    model = keras.Sequential([keras.Input((5, 6)),
                              cls([4, 3], boundary_input="updated", return_sequences=True)])
    x = np.random.default_rng(0).normal(size=(2, 5, 6)).astype("float32")
    path = str(tmp_path / "model.keras")
    model.save(path)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(keras.models.load_model(path)(x)),
                                  keras.ops.convert_to_numpy(model(x)))


# ---------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------
CELLS = [lambda: hmkeras.HMLSTMCell(4), lambda: hmkeras.HMRNNCell(4),
         lambda: hmkeras.MultiplicativeLSTMCell(4)]


@pytest.mark.parametrize("make", CELLS)
@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_integer_inputs_refused_with_a_hint(make, dtype):
    cell = make()
    # JAX (without x64) holds an int64 array as int32.
    named = "int(32|64)" if dtype == "int64" else dtype
    with pytest.raises(ValueError, match=rf"{named}.*keras\.layers\.Embedding"):
        keras.layers.RNN(cell)(np.zeros((2, 5, 3), dtype))
    # The same cell works on floats, and called by hand it refuses ints too.
    keras.layers.RNN(cell)(np.zeros((2, 5, 3), "float32"))
    states = cell.get_initial_state(batch_size=2)
    with pytest.raises(ValueError, match="floating-point inputs"):
        cell(np.zeros((2, 3), dtype), states)


@pytest.mark.parametrize("make", CELLS)
def test_integer_ids_in_a_model_refused_at_the_first_call(make):
    model = keras.Sequential([keras.Input((None, 1), dtype="int32"),
                              keras.layers.RNN(make())])
    with pytest.raises(ValueError, match="Embedding"):
        model(np.zeros((2, 5, 1), "int32"))


@pytest.mark.parametrize("make", CELLS)
@pytest.mark.parametrize("inputs", [np.zeros((2, 5), "float32"),
                                    keras.Input((5,)), keras.Input((5,), dtype="int32")],
                         ids=["eager", "symbolic", "symbolic_ids"])
def test_rank2_sequence_explained(make, inputs):
    cell = make()
    with pytest.raises(ValueError) as info:
        keras.layers.RNN(cell)(inputs)
    message = str(info.value)
    assert type(cell).__name__ in message
    batch = inputs.shape[0]
    assert f"shape=({batch},)" in message
    assert "(batch, features)" in message and "(batch, time, features)" in message
    assert "keras.layers.Embedding" in message


@pytest.mark.parametrize("make", CELLS)
def test_rank4_sequence_refused_at_build(make):
    with pytest.raises(ValueError, match=r"rank 3.*shape=\(2, 4, 5\)"):
        keras.layers.RNN(make())(np.zeros((2, 3, 4, 5), "float32"))


@pytest.mark.parametrize("cls", [hmkeras.HMLSTMCell, hmkeras.HMRNNCell])
def test_split_outputs_of_return_state_list(cls):
    cell = cls([3, 2, 2], seed=0)
    x = np.random.default_rng(0).normal(size=(2, 4, 3)).astype("float32")
    result = keras.layers.RNN(cell, return_sequences=True, return_state=True)(x)
    assert isinstance(result, (list, tuple)) and len(result) == 1 + len(cell.state_size)
    hiddens, boundaries = cell.split_outputs(result)
    expected_h, expected_z = cell.split_outputs(result[0])
    assert [tuple(h.shape) for h in hiddens] == [(2, 4, 3), (2, 4, 2), (2, 4, 2)]
    for h, e in zip(hiddens + [boundaries], expected_h + [expected_z]):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(h),
                                      keras.ops.convert_to_numpy(e))
    hiddens, boundaries = cell.split_outputs(tuple(result))
    assert tuple(boundaries.shape) == (2, 4, 2)
    with pytest.raises(ValueError, match="return_state=True"):
        cell.split_outputs([])
    # The states alone are not an output: the first one has the wrong width.
    with pytest.raises(ValueError, match="output_size"):
        cell.split_outputs(list(result[1:]))


# ---------------------------------------------------------------------------
# The helpers themselves
# ---------------------------------------------------------------------------
def test_helpers_convert_numpy_scalars():
    assert type(argument_checks.check_int("n", np.int64(3))) is int
    assert type(argument_checks.check_float("x", np.float32(0.5))) is float
    assert type(argument_checks.check_rate("r", np.float64(0.5))) is float
    assert type(argument_checks.check_bool("b", np.True_)) is bool
    assert argument_checks.check_int_list("s", np.array([2, 3])) == [2, 3]
    assert argument_checks.check_int("n", None, allow_none=True) is None


@pytest.mark.parametrize(
    "call, message",
    [(lambda: argument_checks.check_positive_int("n", 0),
      "`n` must be a positive integer. Received: n=0"),
     (lambda: argument_checks.check_int("n", 5, minimum=0, maximum=1),
      "`n` must be an integer in [0, 1]. Received: n=5"),
     (lambda: argument_checks.check_float("x", np.float32("nan"), minimum=0,
                                          exclusive_minimum=True),
      "`x` must be a finite number > 0. Received: x=np.float32(nan)"),
     (lambda: argument_checks.check_fraction("p", 2, allow_none=True),
      "`p` must be None or a finite number in [0, 1]. Received: p=2"),
     (lambda: argument_checks.check_rate("r", 1.0),
      "`r` must be a float in [0, 1) (0 disables it). Received: r=1.0"),
     (lambda: argument_checks.check_bool("b", 1),
      "`b` must be True or False. Received: b=1"),
     (lambda: argument_checks.check_choice("c", "x", ("a", "b")),
      "`c` must be one of ['a', 'b']. Received: c='x'"),
     (lambda: argument_checks.check_int_list("s", [2, 0]),
      "`s` must be a non-empty list of positive integers. Received: s=[2, 0]")],
)
def test_helper_messages(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value) == message
