"""The layer battery: every public layer class through the same checks.

The cases (one tiny instance per class, with the expectations computed
from the equations) are in `layer_battery.py`; each test below is one
check, parametrized over the cases (ids `check[case]`).  A check that does
not apply to a class is skipped with the reason the case gives.  The
checks run on every backend but the SavedModel exports, which are
TensorFlow's.
"""

import copy
import json
import os
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

import hmkeras
import layer_battery
from backend_support import BACKEND
from backend_support import to_numpy
from layer_battery import BATCH
from layer_battery import CASES
from layer_battery import MODEL_CASES
from one_trace import compile_built

pytestmark = pytest.mark.every_backend
ids = [case.name for case in CASES]
tensorflow_export = pytest.mark.skipif(
    BACKEND != "tensorflow", reason="a TensorFlow SavedModel needs the TensorFlow backend")


def _skip_if_not_applicable(case, check):
    if check in case.skips:
        pytest.skip(f"{case.name}: {check} does not apply: {case.skips[check]}")


def _as_json(config):
    return json.dumps(config, sort_keys=True, default=repr)


def _build_shape(case):
    """The shape `build` receives: one step for a cell, else the sequence."""
    shape = case.inputs.shape[1:] if case.is_cell else case.inputs.shape
    return (None, *shape)


def test_every_public_layer_class_has_a_case():
    """No public layer is left out, and every other public name is listed
    with the reason it is not a layer."""
    covered = {case.cls for case in CASES} | {case.cls for case in MODEL_CASES}
    for name in hmkeras.__all__:
        value = getattr(hmkeras, name)
        if isinstance(value, type) and issubclass(value, keras.layers.Layer):
            if value not in covered:
                assert name in layer_battery.NOT_LAYERS, f"{name} has no LayerCase"
        elif isinstance(value, type):
            assert name in layer_battery.NOT_LAYERS, name
    assert hmkeras.MLSTMCell is hmkeras.MultiplicativeLSTMCell


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_config(case):
    """`get_config` -> `from_config` (and Keras serialization) give an equal
    configuration, and with the same weights the same outputs."""
    _skip_if_not_applicable(case, "config")
    tested, runnable = layer_battery.as_layer(case)
    config = tested.get_config()
    json.dumps(config)  # JSON-able as it is
    revived = type(tested).from_config(copy.deepcopy(config))
    assert type(revived) is type(tested)
    assert _as_json(revived.get_config()) == _as_json(config)
    serialized = json.loads(json.dumps(keras.saving.serialize_keras_object(tested)))
    deserialized = keras.saving.deserialize_keras_object(serialized)
    assert type(deserialized) is type(tested)
    assert _as_json(deserialized.get_config()) == _as_json(config)

    x = layer_battery.case_inputs(case)
    expected = to_numpy(runnable(x, **case.call_kwargs))
    revived_runnable = (
        keras.layers.RNN(revived, return_sequences=True) if case.is_cell else revived
    )
    revived_runnable.build((None, *case.inputs.shape))
    revived_runnable.set_weights(runnable.get_weights())
    np.testing.assert_array_equal(
        to_numpy(revived_runnable(x, **case.call_kwargs)), expected)


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_weights(case):
    """After `build`, the weights are those of the equations: as many
    trainable and non-trainable tensors and scalars as the spec computes."""
    _skip_if_not_applicable(case, "weights")
    tested = case.make()
    tested.build(_build_shape(case))
    assert tested.built
    expected = case.weights
    found = layer_battery.WeightCount(
        len(tested.trainable_weights), layer_battery.scalars(tested.trainable_weights),
        len(tested.non_trainable_weights),
        layer_battery.scalars(tested.non_trainable_weights),
    )
    assert found == expected
    # No variable is counted twice, and the paths are unique (saving).
    paths = [w.path for w in tested.weights]
    assert len(set(paths)) == len(paths), paths


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_shapes(case):
    """Symbolic (`keras.Input`) and eager calls agree with the spec and with
    each other on shape and dtype; eager outputs are finite."""
    _skip_if_not_applicable(case, "shapes")
    _, runnable = layer_battery.as_layer(case)
    symbolic = runnable(
        keras.Input(case.inputs.shape, dtype=case.inputs.dtype), **case.call_kwargs)
    assert tuple(symbolic.shape) == (None, *case.output_shape)
    assert keras.backend.standardize_dtype(symbolic.dtype) == "float32"
    eager = runnable(layer_battery.case_inputs(case), **case.call_kwargs)
    assert tuple(eager.shape) == (BATCH, *case.output_shape)
    assert keras.backend.standardize_dtype(eager.dtype) == "float32"
    assert np.all(np.isfinite(to_numpy(eager)))


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=ids)
def test_xla_training(case):
    """One `train_on_batch` under `jit_compile=True`: a finite loss, every
    trainable weight moves (but those the spec names), no non-trainable
    weight does."""
    _skip_if_not_applicable(case, "xla_training")
    keras.utils.set_random_seed(0)
    model, tested = layer_battery.model_of(case)
    # The same weights on every backend (Keras' random draws are the
    # backend's; whether a hierarchical cell's upper layer updates at all
    # in the few steps depends on them): the matrices Glorot-uniform from
    # NumPy, the vectors as initialized (constants).
    rng = np.random.default_rng(0)
    for w in tested.trainable_weights:
        if len(w.shape) >= 2:
            limit = np.sqrt(6.0 / (np.prod(w.shape[:-1]) + w.shape[-1]))
            w.assign(rng.uniform(-limit, limit, w.shape).astype("float32"))
    compile_built(model, keras.optimizers.Adam(0.01), "mse", jit_compile=True)
    x = layer_battery.case_inputs(case)
    y = np.random.default_rng(1).normal(
        size=(BATCH, *case.output_shape)).astype("float32")
    before = {w.path: keras.ops.convert_to_numpy(w).copy() for w in tested.weights}
    with warnings.catch_warnings():
        if case.frozen_in_training:  # Keras warns of the unused weights
            warnings.filterwarnings("ignore", "Gradients do not exist")
        loss = model.train_on_batch(x, y)
    assert np.isfinite(loss)
    for w in tested.trainable_weights:
        moved = not np.array_equal(before[w.path], keras.ops.convert_to_numpy(w))
        frozen = w.name in case.frozen_in_training
        assert moved != frozen, (w.path, case.frozen_in_training.get(w.name))
    for w in tested.non_trainable_weights:
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(w), before[w.path],
                                      err_msg=w.path)


@pytest.fixture(params=["mixed_float16", "mixed_bfloat16"])
def policy(request):
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(request.param)
    try:
        yield keras.config.dtype_policy()
    finally:
        keras.config.set_dtype_policy(previous)


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_mixed_precision(case, policy):
    """Under a global mixed policy: outputs in the compute dtype (float32
    where the class promises it), float variables in float32, and the
    values those of the float32 layer with the same weights, to the
    precision of the compute dtype."""
    _skip_if_not_applicable(case, "mixed_precision")
    x = layer_battery.case_inputs(case)
    tested, runnable = layer_battery.as_layer(case)
    assert tested.compute_dtype == policy.compute_dtype
    mixed = runnable(x, **case.call_kwargs)
    expected_dtype = "float32" if case.float32_output else policy.compute_dtype
    assert keras.backend.standardize_dtype(mixed.dtype) == expected_dtype
    for w in tested.weights:
        assert keras.backend.standardize_dtype(w.dtype) == "float32", w.path
    keras.config.set_dtype_policy("float32")
    try:
        _, reference = layer_battery.as_layer(case)
        reference.build((None, *case.inputs.shape))
        reference.set_weights(runnable.get_weights())
        expected = to_numpy(reference(x, **case.call_kwargs))
    finally:
        keras.config.set_dtype_policy(policy)
    mixed = keras.ops.convert_to_numpy(keras.ops.cast(mixed, "float32"))
    assert np.all(np.isfinite(mixed))
    tolerance = 2e-2 if policy.compute_dtype == "float16" else 8e-2
    mixed, expected = _until_boundaries_disagree(runnable, mixed, expected)
    np.testing.assert_allclose(mixed, expected, atol=tolerance, rtol=tolerance)


def _until_boundaries_disagree(runnable, mixed, expected):
    """The steps of `(batch, time, ...)` outputs to compare, flattened.

    A hierarchical cell's boundaries are decisions: where a detector's
    pre-activation lies within the lower precision's rounding of zero, the
    mixed-precision run may decide the other way, and from that step on
    its row legitimately follows another trajectory.  Each row is compared
    up to its first differing boundary; at least half of all steps must be
    compared, so a systematic error (decisions flipped everywhere) fails.
    Other layers are compared at every step.
    """
    cell = getattr(runnable, "cell", None)
    if not isinstance(cell, hmkeras.HierarchicalCell):
        return mixed, expected
    boundaries = cell.num_layers - 1
    differs = np.any(mixed[..., -boundaries:] != expected[..., -boundaries:], axis=-1)
    steps = mixed.shape[1]
    first = np.where(differs.any(axis=1), differs.argmax(axis=1), steps)
    keep = np.arange(steps)[None, :] < first[:, None]
    assert keep.mean() >= 0.5, f"boundaries differ early in most rows: {first}"
    return mixed[keep], expected[keep]


def _mask_data(case):
    x = layer_battery.case_inputs(case)
    mask = np.ones(x.shape[:2], bool)
    mask[1, [2, 4]] = False  # a hole in the middle and a masked last step
    return x, mask


# Keras' JAX loop repeats a masked step's output from the cell's first
# state, so on JAX the loops zero it (`hmkeras.RNN` refuses the other).
ZERO_OUTPUT_FOR_MASK = BACKEND == "jax"


def _with_state(case, tested, runnable):
    """The same weights in a layer that also returns its final state."""
    if case.is_cell:
        return keras.layers.RNN(tested, return_sequences=True, return_state=True,
                                zero_output_for_mask=ZERO_OUTPUT_FOR_MASK)
    runnable.build((None, *case.inputs.shape))
    config = {**runnable.get_config(), "return_state": True}
    if "zero_output_for_mask" in config:
        config["zero_output_for_mask"] = ZERO_OUTPUT_FOR_MASK
    layer = type(runnable).from_config(config)
    layer.build((None, *case.inputs.shape))
    layer.set_weights(runnable.get_weights())
    return layer


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_masking(case):
    """RNN rule: a masked step carries the whole state exactly and repeats
    the previous output, so the kept steps equal a run without the masked
    steps.  Position-wise rule: the mask is passed on unchanged."""
    _skip_if_not_applicable(case, "masking")
    tested, runnable = layer_battery.as_layer(case)
    x, mask = _mask_data(case)
    if case.masking == "propagate":
        assert tested.supports_masking
        masked = keras.layers.Masking(0.0)(np.where(mask[..., None], x, 0.0))
        y = runnable(masked, **case.call_kwargs)
        if BACKEND == "tensorflow":  # an eager tensor carries its `_keras_mask`
            np.testing.assert_array_equal(to_numpy(y._keras_mask), mask)
        np.testing.assert_array_equal(
            to_numpy(tested.compute_mask(masked, keras.ops.convert_to_tensor(mask))), mask)
        np.testing.assert_allclose(
            to_numpy(y)[mask], to_numpy(runnable(x, **case.call_kwargs))[mask],
            rtol=1e-6, atol=1e-6)
        return
    layer = _with_state(case, tested, runnable)
    outputs, *states = layer(x, mask=mask)
    outputs = to_numpy(outputs)
    kept = np.flatnonzero(mask[1])
    short, *short_states = layer(x[1:, kept])
    np.testing.assert_allclose(outputs[1, kept], to_numpy(short)[0], rtol=1e-5, atol=1e-6)
    for state, expected in zip(states, short_states):  # the whole state, carried
        np.testing.assert_allclose(to_numpy(state)[1], to_numpy(expected)[0],
                                   rtol=1e-5, atol=1e-6)
    for t in np.flatnonzero(~mask[1]):  # a masked step repeats the last output
        expected = 0.0 * outputs[1, t] if ZERO_OUTPUT_FOR_MASK else outputs[1, t - 1]
        np.testing.assert_array_equal(outputs[1, t], expected)
    full, *_ = layer(x[:1])
    np.testing.assert_allclose(outputs[0], to_numpy(full)[0], rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module")
def saved_models(tmp_path_factory):
    """One model per case, its outputs, and where it was saved: shared by
    the `.keras` and the export checks."""
    cache = {}

    def get(case):
        if case.name not in cache:
            keras.utils.set_random_seed(3)
            model, tested = layer_battery.model_of(case)
            x = layer_battery.case_inputs(case, seed=4)
            cache[case.name] = (model, tested, x, to_numpy(model(x)),
                                tmp_path_factory.mktemp(case.name.replace("-", "_")))
        return cache[case.name]

    return get


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_keras_file(case, saved_models):
    """`.keras` save and load: same class, same configuration, same outputs."""
    _skip_if_not_applicable(case, "keras_file")
    model, tested, x, expected, folder = saved_models(case)
    path = os.path.join(folder, "model.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    layer = loaded.layers[1]
    loaded_tested = layer.cell if case.is_cell else layer
    assert type(loaded_tested) is type(tested)
    assert _as_json(loaded_tested.get_config()) == _as_json(tested.get_config())
    for a, b in zip(loaded_tested.weights, tested.weights):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(a),
                                      keras.ops.convert_to_numpy(b), err_msg=b.path)
    np.testing.assert_array_equal(to_numpy(loaded(x)), expected)


@pytest.mark.slow
@tensorflow_export
@pytest.mark.parametrize("case", CASES, ids=ids)
def test_export(case, saved_models):
    """`model.export()` SavedModel, reloaded with TensorFlow alone, serves
    the same outputs."""
    _skip_if_not_applicable(case, "export")
    model, _, x, expected, folder = saved_models(case)
    path = os.path.join(folder, "exported")
    model.export(path, verbose=False)
    reloaded = tf.saved_model.load(path)
    served = reloaded.serve(tf.constant(x))
    np.testing.assert_allclose(to_numpy(served), expected, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------
# The public keras.Model subclasses: the saving checks only.
# ----------------------------------------------------------------------
model_ids = [case.name for case in MODEL_CASES]


@pytest.fixture(scope="module")
def built_models():
    cache = {}

    def get(case):
        if case.name not in cache:
            model = case.make()
            x = case.inputs()
            cache[case.name] = (model, x, to_numpy(model(x)))
        return cache[case.name]

    return get


tensorflow_models = pytest.mark.skipif(
    BACKEND != "tensorflow",
    reason="the models of hmkeras.models need the TensorFlow backend (docs/guides/backends.md)")


@tensorflow_models
@pytest.mark.parametrize("case", MODEL_CASES, ids=model_ids)
def test_model_config(case, built_models):
    """`from_config(get_config())`: an equal configuration and, with the
    same weights, the same outputs."""
    model, x, expected = built_models(case)
    config = model.get_config()
    json.dumps(config)
    clone = case.cls.from_config(copy.deepcopy(config))
    assert _as_json(clone.get_config()) == _as_json(config)
    clone(x)
    clone.set_weights(model.get_weights())
    np.testing.assert_array_equal(to_numpy(clone(x)), expected)


@tensorflow_models
@pytest.mark.parametrize("case", MODEL_CASES, ids=model_ids)
def test_model_keras_file(case, built_models, tmp_path):
    model, x, expected = built_models(case)
    path = os.path.join(tmp_path, "model.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert type(loaded) is case.cls
    assert _as_json(loaded.get_config()) == _as_json(model.get_config())
    np.testing.assert_array_equal(to_numpy(loaded(x)), expected)


@pytest.mark.slow
@tensorflow_models
@pytest.mark.parametrize("case", MODEL_CASES, ids=model_ids)
def test_model_export(case, built_models, tmp_path):
    """A subclassed model is exported with an explicit input signature."""
    model, x, expected = built_models(case)
    path = os.path.join(tmp_path, "exported")
    model.export(path, verbose=False,
                 input_signature=layer_battery.export_signature(case))
    reloaded = tf.saved_model.load(path)
    served = reloaded.serve(tf.nest.map_structure(tf.constant, x))
    np.testing.assert_allclose(to_numpy(served), expected, rtol=1e-5, atol=1e-6)
