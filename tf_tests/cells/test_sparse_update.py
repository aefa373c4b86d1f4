"""Sparse-update inference: a COPYing layer skips its update.

The sparse path must give exactly the dense path's outputs and states, and
must really skip: run eagerly, the layer updates that execute are counted
and checked against the COPY operations recomputed from the boundaries
(Chung et al. Eq. 2: layer l COPYs at t iff z^l_{t-1} = 0 and
z^{l-1}_t = 0, with z^0 = 1 and z_0 = 0), which `count_updates` must
also give.
"""

import types

import keras
import numpy as np
import pytest
import tensorflow as tf

from hmkeras.cells import HMLSTM
from hmkeras.cells import HMLSTMCell
from hmkeras.cells import HMRNN
from hmkeras.cells import HMRNNCell
from hmkeras.cells import sparse_update
from hmkeras.cells.layer_products import ProductInputs
from hmkeras.cells.layer_step import LayerStep
from hmkeras.cells.layer_step import layer_operations

T, FEATURES = 20, 3
UNITS = [6, 5, 4]


def _trained_like(layer, bias=-0.6):
    """Boundary columns scaled up and biased down: boundaries are sparse but
    do fire, so every operation occurs and COPY dominates above layer 1."""
    rng = np.random.default_rng(11)
    for weight in layer.cell.weights:
        name = weight.name
        if name.startswith(("kernel_", "recurrent_kernel_", "top_down_kernel_")):
            if int(name.rsplit("_", 1)[1]) < layer.cell.num_layers:
                value = weight.numpy()
                value[:, -1] *= 3.0
                weight.assign(value)
        if name.startswith("bias_") and int(name[5:]) < layer.cell.num_layers:
            value = weight.numpy()
            value[-1] = bias + 0.1 * rng.normal()
            weight.assign(value)


def make_pair(layer_class, batch=1, bias=-0.6, **kwargs):
    """A dense and a sparse layer with equal (trained-like) weights."""
    keras.utils.set_random_seed(3)
    dense = layer_class(UNITS, return_sequences=True, return_state=True, **kwargs)
    sparse = layer_class(UNITS, return_sequences=True, return_state=True,
                         sparse_updates=True, **kwargs)
    dense.build((batch, None, FEATURES))
    sparse.build((batch, None, FEATURES))
    _trained_like(dense, bias=bias)
    sparse.cell.set_weights(dense.cell.get_weights())
    return dense, sparse


def _inputs(batch=1, seed=0, steps=T):
    return np.random.default_rng(seed).normal(size=(batch, steps, FEATURES)).astype("float32")


def expected_copies(boundaries):
    """Per layer, the steps at which every row COPYs, from the boundaries.

    Args:
        boundaries: `(batch, T, L-1)` 0/1.

    Returns:
        `(L,)` counts of the steps where all rows COPY (0 for layer 1).
    """
    batch, steps, num_boundaries = boundaries.shape
    z = np.concatenate([np.ones((batch, steps, 1)), boundaries], axis=-1)  # z^0 = 1
    previous = np.concatenate([np.zeros((batch, 1, num_boundaries + 1)), z[:, :-1]], axis=1)
    counts = [0]
    for index in range(1, num_boundaries + 1):  # 0-based: layer l = index + 1
        # z^l_{t-1} (none above the top layer) and z^{l-1}_t.
        flush = previous[:, :, index + 1] if index < num_boundaries else 0.0
        copy = (1 - flush) * (1 - z[:, :, index])
        counts.append(int(np.sum(np.all(copy == 1, axis=0))))
    return np.array(counts)


def compiled_outputs_bit_for_bit(dense, sparse, x):
    """The dense layer's outputs on `x`, after checking that the sparse
    layer's equal them bit for bit.  Both run compiled, as in evaluation
    (eager and graph kernels may round differently; the comparison is of
    the paths, in the same mode)."""
    want = [np.asarray(t) for t in tf.function(lambda inputs: dense(inputs))(x)]
    got = [np.asarray(t) for t in tf.function(lambda inputs: sparse(inputs))(x)]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)  # bit for bit
    return want


def _boundaries(layer, outputs):
    return np.asarray(layer.split_outputs(outputs)[1])


@pytest.mark.slow
@pytest.mark.parametrize("layer_class", [HMLSTM, HMRNN])
@pytest.mark.parametrize("layer_norm", [True, False])
def test_sparse_equals_dense_and_skips(layer_class, layer_norm):
    dense, sparse = make_pair(layer_class, layer_norm=layer_norm)
    want = compiled_outputs_bit_for_bit(dense, sparse, _inputs())
    boundaries = _boundaries(dense, want[0])
    assert 0 < boundaries.mean() < 0.6  # boundaries fire, sparsely
    stats = sparse_update.count_updates(boundaries)
    copies = expected_copies(boundaries)
    assert copies[1] > 0 and copies[2] > T // 2  # many COPYs to skip
    np.testing.assert_array_equal(stats["per_layer_skipped"], copies)
    np.testing.assert_array_equal(stats["per_layer_executed"], T - copies)
    assert stats["skipped_fraction"] == pytest.approx(copies.sum() / (3 * T))


@pytest.mark.parametrize("layer_class", [HMLSTM, HMRNN])
def test_sparse_really_skips(layer_class, monkeypatch):
    """Eagerly and unrolled, each step runs the branch it takes: the layer
    updates executed are those `count_updates` reads from `z`."""
    dense, sparse = make_pair(layer_class, layer_norm=True)
    executed = [0] * len(UNITS)
    layer_step = sparse.cell._layer_step

    def counting_step(step):
        executed[step.index] += 1
        return layer_step(step)

    monkeypatch.setattr(sparse.cell, "_layer_step", counting_step)
    sparse.unroll = True
    x = _inputs(seed=3)
    outputs = np.asarray(sparse(x)[0])
    np.testing.assert_array_equal(outputs, np.asarray(dense(x)[0]))
    stats = sparse_update.count_updates(_boundaries(sparse, outputs))
    assert stats["skipped"] > T // 2
    assert executed == stats["per_layer_executed"]


@pytest.mark.parametrize("layer_class", [HMLSTM, HMRNN])
def test_sparse_equals_dense_with_nested_boundaries(layer_class):
    # `nested_boundaries=True`: z^l_t is the detector's decision times
    # z^{l-1}_t, taken after either branch, so a COPYing layer (z^{l-1}_t
    # = 0) ends no segment in the sparse path as in the dense one, and the
    # top layer COPYs at every step where z^1_t = 0.
    dense, sparse = make_pair(layer_class, bias=0.3, nested_boundaries=True)
    want = compiled_outputs_bit_for_bit(dense, sparse, _inputs(seed=4, steps=40))
    boundaries = _boundaries(dense, want[0])
    assert np.all(boundaries[..., 1] <= boundaries[..., 0])  # nested
    assert boundaries[..., 1].sum() > 0  # z^2 does fire
    copies = expected_copies(boundaries)
    assert copies[1] > 0 and copies[2] > 0  # there were COPYs to skip
    stats = sparse_update.count_updates(boundaries)
    np.testing.assert_array_equal(stats["per_layer_skipped"], copies)
    np.testing.assert_array_equal(stats["per_layer_executed"], 40 - copies)


def test_batch_skips_only_when_every_row_copies():
    dense, sparse = make_pair(HMLSTM, batch=3, layer_norm=True)
    x = _inputs(batch=3, seed=1)
    want = [np.asarray(t) for t in dense(x)]
    got = [np.asarray(t) for t in sparse(x)]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    copies = expected_copies(_boundaries(dense, want[0]))
    single_row = expected_copies(_boundaries(dense, want[0])[:1])
    stats = sparse_update.count_updates(_boundaries(sparse, got[0]))
    np.testing.assert_array_equal(stats["per_layer_skipped"], copies)
    assert copies.sum() <= single_row.sum()


def test_rnn_of_cell_and_stateful_streaming():
    """Streaming one step per call (batch 1) through `RNN(cell)`, as in
    generation: the sparse cell's outputs equal the dense cell's."""
    dense, _ = make_pair(HMRNN, layer_norm=True)
    streams = []
    for sparse in (False, True):
        cell = HMRNNCell(UNITS, layer_norm=True, sparse_updates=sparse)
        stream = keras.layers.RNN(cell, stateful=True, return_sequences=True)
        stream.build((1, None, FEATURES))
        cell.set_weights(dense.cell.get_weights())
        streams.append(stream)
    x = _inputs(seed=2)
    boundaries = []
    for t in range(T):
        want, got = (np.asarray(stream(x[:, t : t + 1])) for stream in streams)
        np.testing.assert_array_equal(got, want)
        boundaries.append(_boundaries(streams[1].cell, got)[:, 0])
    stats = sparse_update.count_updates(np.stack(boundaries, axis=1))
    assert stats["executed"] + stats["skipped"] == 3 * T
    assert stats["skipped"] > T // 2


def test_training_runs_dense(monkeypatch):
    dense, sparse = make_pair(HMLSTM, layer_norm=False)

    def no_sparse_path(*args):
        raise AssertionError("the sparse path ran in training")

    monkeypatch.setattr(sparse_update, "skip_copying_layer", no_sparse_path)
    x = tf.constant(_inputs(seed=4))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        want = dense(x, training=True)[0]
        got = sparse(x, training=True)[0]
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    np.testing.assert_array_equal(
        tape.gradient(got, x).numpy(), tape.gradient(want, x).numpy()
    )


def test_context_manager_and_arguments():
    layer = HMLSTM(4, num_layers=2)
    model = keras.Sequential([keras.Input((None, 2)), layer])
    with sparse_update.sparse_updates(model) as cells:
        assert cells == [layer.cell] and layer.cell.sparse_updates
    assert not layer.cell.sparse_updates
    with pytest.raises(ValueError, match="boundary_mode"):
        HMLSTMCell(4, boundary_mode="soft", sparse_updates=True)
    with pytest.raises(ValueError, match="sparse_updates"):
        HMRNN(4, sparse_updates="yes")
    with pytest.raises(ValueError, match=r"`boundaries` must be \(batch, time"):
        sparse_update.count_updates(np.zeros((2, 3, 4, 1)))
    config = HMLSTM(4, sparse_updates=True).get_config()
    assert HMLSTM.from_config(config).cell.sparse_updates
    assert HMLSTMCell(4).get_config()["sparse_updates"] is False


def _char_model():
    from hmkeras.models.char_language_model import CharLanguageModel

    model = CharLanguageModel(vocab_size=5, cell="hmlstm", units=6, embedding_dim=3,
                              output_units=6, seed=1)
    _trained_like(types.SimpleNamespace(cell=model.hierarchical_cell), bias=-1.0)
    return model


def test_evaluation_sparse_equals_dense():
    from hmkeras.analysis.evaluation import evaluate_char_model

    model = _char_model()
    ids = np.random.default_rng(0).integers(0, 5, 61)
    options = dict(seq_len=20, verbose=0, keep_boundaries=True, return_losses=True)
    dense = evaluate_char_model(model, ids, **options)
    sparse = evaluate_char_model(model, ids, sparse_updates=True, **options)
    assert sparse.bpc == dense.bpc and dense.update_statistics is None
    np.testing.assert_array_equal(sparse.losses, dense.losses)
    np.testing.assert_array_equal(sparse.boundaries, dense.boundaries)
    assert not model.hierarchical_cell.sparse_updates  # restored
    # 3 chunks of 20 steps; the counts follow from the boundaries.
    stats = sparse.update_statistics
    copies = expected_copies(dense.boundaries[None])
    np.testing.assert_array_equal(stats["per_layer_skipped"], copies)
    np.testing.assert_array_equal(stats["per_layer_executed"], 60 - copies)
    assert stats["skipped_fraction"] > 0.3


@pytest.mark.slow
def test_step_export_sparse_equals_dense(tmp_path):
    from hmkeras.data import CharVocabulary
    from hmkeras.training.step_export import export_step_model

    model = _char_model()
    vocabulary = CharVocabulary.from_text("abcde")
    loaded = [
        tf.saved_model.load(export_step_model(model, vocabulary, str(tmp_path / str(sparse)),
                                              sparse_updates=sparse))
        for sparse in (False, True)
    ]
    states = [dict(m.zero_state(tf.constant(1))) for m in loaded]
    tokens = np.random.default_rng(1).integers(0, 5, 15)
    boundaries = []
    for token in tokens:
        outs = [
            m.step(tf.constant([token], tf.int32), *[s[f"state_{i}"] for i in range(len(s))])
            for m, s in zip(loaded, states)
        ]
        for key in outs[0]:
            np.testing.assert_array_equal(outs[1][key].numpy(), outs[0][key].numpy())
        states = [{k: v for k, v in o.items() if k.startswith("state_")} for o in outs]
        boundaries.append(outs[0]["boundaries"].numpy()[0])
    executed, skipped = (v.numpy() for v in loaded[1].update_counts)
    np.testing.assert_array_equal(skipped, expected_copies(np.array(boundaries)[None]))
    np.testing.assert_array_equal(executed + skipped, [len(tokens)] * 3)
    assert not hasattr(loaded[0], "update_counts")


# Detector biases with which, on these weights and inputs, the middle
# layer's detector both fires and stays silent at steps where it COPYs.
_DECIDING_BIAS = {
    ("HMLSTM", True): -0.5, ("HMLSTM", False): -0.12,
    ("HMRNN", True): -0.5, ("HMRNN", False): -0.6,
}


@pytest.mark.slow
@pytest.mark.parametrize("compiled", [False, True])
@pytest.mark.parametrize("layer_norm", [True, False])
@pytest.mark.parametrize("layer_class", [HMLSTM, HMRNN])
def test_skipped_branch_decides_and_keeps_as_dense(layer_class, layer_norm, compiled):
    """Where the middle layer COPYs, the skipped branch's boundary (firing
    or not) and kept state are the dense path's, eagerly and compiled."""
    bias = _DECIDING_BIAS[layer_class.__name__, layer_norm]
    dense, sparse = make_pair(layer_class, bias=bias, layer_norm=layer_norm)
    x = _inputs(seed=6, steps=100)
    wrap = tf.function if compiled else (lambda function: function)
    want = [np.asarray(t) for t in wrap(lambda inputs: dense(inputs))(x)]
    got = [np.asarray(t) for t in wrap(lambda inputs: sparse(inputs))(x)]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)  # outputs (h and z per step), states
    z = _boundaries(dense, want[0])[0]  # (T, 2)
    z2_previous = np.concatenate([[0.0], z[:-1, 1]])
    copies = (z[:, 0] == 0) & (z2_previous == 0)  # layer 2 COPYs (Chung Eq. 2)
    # Both decisions of the skipped branch occur: a COPY that ends its
    # segment (the next step FLUSHes) and one that does not.
    assert np.any(copies & (z[:, 1] == 1)) and np.any(copies & (z[:, 1] == 0))
    stats = sparse_update.count_updates(z)
    np.testing.assert_array_equal(stats["per_layer_skipped"], expected_copies(z[None]))
    hiddens = np.asarray(dense.split_outputs(want[0])[0][1])[0]  # h^2, (T, units)
    kept = np.flatnonzero(copies[1:]) + 1
    np.testing.assert_array_equal(hiddens[kept], hiddens[kept - 1])  # COPY keeps h^2


@pytest.mark.parametrize("layer_norm", [True, False])
@pytest.mark.parametrize("layer_class", [HMLSTM, HMRNN])
def test_copy_boundary_column_equals_dense_column(layer_class, layer_norm):
    """A skipped layer's boundary pre-activation (its one column, with
    layer normalization the products' variances from the per-sequence
    constants) equals the last column of a dense step's products."""
    dense, sparse = make_pair(layer_class, batch=4, layer_norm=layer_norm)
    cell = sparse.cell
    rng = np.random.default_rng(5)
    below, recurrent, above = (
        tf.constant(rng.normal(size=(4, size)).astype("float32"))
        for size in (UNITS[0], UNITS[1], UNITS[2])
    )
    constants = cell.build_sequence_constants(below)
    products = constants["layer_products"]  # the COPY's column for sparse updates only
    assert products[0].copy_boundary is None and products[2].copy_boundary is None
    inputs = ProductInputs(below=below, recurrent=recurrent, above=above)
    column = products[1].copy_boundary_preactivation(inputs)
    # The dense path's products with the gates of a COPY (Chung Eq. 2).
    zeros = tf.zeros((4, 1))
    step = LayerStep(index=1, state=None, inputs=inputs, z_below=zeros,
                     z_previous=zeros, ops=layer_operations(zeros, zeros),
                     products=products[1])
    full = products[1].mixture(inputs, cell._product_gates(step)) + cell._layer_params[1]["bias"]
    assert column.shape == (4, 1)
    np.testing.assert_allclose(column.numpy(), full.numpy()[:, -1:], rtol=1e-5, atol=1e-6)
    dense_products = dense.cell.build_sequence_constants(below)["layer_products"]
    assert dense_products[1].copy_boundary is None


@pytest.mark.parametrize("layer_class", [HMLSTM, HMRNN])
def test_sparse_equals_dense_with_detectors_of_the_updated_state(layer_class):
    # `boundary_input="updated"`: a COPYing layer's detector reads the kept
    # h^l, so the skipped branch keeps no product column and the cell
    # computes the detector after it, as the dense path does.
    keras.utils.set_random_seed(3)
    layers = [layer_class(UNITS, return_sequences=True, return_state=True,
                          boundary_input="updated", sparse_updates=sparse)
              for sparse in (False, True)]
    for layer in layers:
        layer.build((1, None, FEATURES))
    dense, sparse = layers
    for weight in dense.cell.weights:  # sparse boundaries that do fire
        if weight.name.startswith("detector_kernel_"):
            weight.assign(3.0 * weight.numpy())
        elif weight.name.startswith("detector_bias_"):
            weight.assign(np.full((1,), -0.6, "float32"))
    sparse.cell.set_weights(dense.cell.get_weights())
    want = compiled_outputs_bit_for_bit(dense, sparse, _inputs(seed=6, steps=60))
    boundaries = _boundaries(dense, want[0])
    copies = expected_copies(boundaries)
    assert copies[1] > 0 and copies[2] > 0  # there were COPYs to skip
    stats = sparse_update.count_updates(boundaries)
    np.testing.assert_array_equal(stats["per_layer_skipped"], copies)
