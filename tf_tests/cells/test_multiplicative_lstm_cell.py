"""Tests of hmkeras.MultiplicativeLSTMCell (Krause et al. 2017, Eq. 17-21)."""

import os

import backend_support
import keras
import numpy as np
import pytest

import hmkeras
from hmkeras.cells import MultiplicativeLSTM
from hmkeras.cells import weight_normalization
from hmkeras.cells.multiplicative_lstm_cell import MLSTMCell
from hmkeras.cells.multiplicative_lstm_cell import MultiplicativeLSTMCell

pytestmark = pytest.mark.every_backend

BATCH, STEPS, FEATURES = 3, 5, 4

# Which weights carry weight normalization, per scope, read off Krause et
# al. (Section 4.2: "weight normalization ... on recurrent weights"; the
# recurrent weights act on h_{t-1} and m_t: W_mh of Eq. 17 and W_hm, W_im,
# W_om, W_fm of Eq. 18-21) and, for "all", the earlier behaviour.
NORMALIZED = {
    None: set(),
    "recurrent": {"recurrent_kernel", "multiplicative_kernel"},
    "all": {"kernel", "recurrent_kernel", "multiplicative_kernel"},
}


def _scope(cell):
    return cell.weight_normalization_scope if cell.weight_normalization else None


def _np(x):
    return np.asarray(keras.ops.convert_to_numpy(x), dtype=np.float64)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _reference_matrices(cell):
    """The paper's matrices, read from the cell's documented weight layout.

    Under weight normalization the effective matrix is recomputed here,
    in float64, as g * v / ||v|| per column.
    """
    u, m = cell.units, cell.multiplicative_units

    def effective(name):
        v = _np(getattr(cell, name))
        if name in NORMALIZED[_scope(cell)]:
            g = _np(getattr(cell, f"{name}_g"))
            return g * v / np.sqrt((v**2).sum(axis=0))
        return v

    kernel = effective("kernel")
    w_m = effective("multiplicative_kernel")
    bias = _np(cell.bias) if cell.use_bias else np.zeros(4 * u)
    blocks = lambda a: [a[..., k * u : (k + 1) * u] for k in range(4)]  # noqa: E731
    w_ix, w_fx, w_ox, w_hx = blocks(kernel[:, m:])
    w_im, w_fm, w_om, w_hm = blocks(w_m)
    (b_i, b_f, b_o, b_h) = blocks(bias)
    return dict(
        W_mx=kernel[:, :m], W_mh=effective("recurrent_kernel"),
        W_hx=w_hx, W_hm=w_hm, W_ix=w_ix, W_im=w_im, W_ox=w_ox, W_om=w_om,
        W_fx=w_fx, W_fm=w_fm, b_i=b_i, b_f=b_f, b_o=b_o, b_h=b_h,
    )


def _reference_mlstm(cell, x, h0=None, c0=None, input_mask=None, hidden_mask=None):
    """Independent float64 mLSTM: Eq. (17)-(21) with Eq. (15)-(16).

    Row-vector convention: W x is written x @ W. With masks, x_t * input_mask
    is the input and the dropped h_t * hidden_mask is output and fed back.
    """
    w = _reference_matrices(cell)
    x = np.asarray(x, np.float64)
    h = np.zeros((x.shape[0], cell.units)) if h0 is None else h0
    c = np.zeros((x.shape[0], cell.units)) if c0 is None else c0
    outputs = []
    for t in range(x.shape[1]):
        x_t = x[:, t] if input_mask is None else x[:, t] * input_mask
        m = (x_t @ w["W_mx"]) * (h @ w["W_mh"])  # Eq. (17)
        h_hat = x_t @ w["W_hx"] + m @ w["W_hm"] + w["b_h"]  # Eq. (18)
        i = _sigmoid(x_t @ w["W_ix"] + m @ w["W_im"] + w["b_i"])  # Eq. (19)
        o = _sigmoid(x_t @ w["W_ox"] + m @ w["W_om"] + w["b_o"])  # Eq. (20)
        f = _sigmoid(x_t @ w["W_fx"] + m @ w["W_fm"] + w["b_f"])  # Eq. (21)
        c = f * c + i * np.tanh(h_hat)  # Eq. (15)
        h = np.tanh(c) * o  # Eq. (16)
        if hidden_mask is not None:
            h = h * hidden_mask
        outputs.append(h)
    return np.stack(outputs, axis=1), h, c


def _randomize(cell, seed=0):
    """Non-trivial weights (also gains != ||v||, biases != 0)."""
    rng = np.random.default_rng(seed)
    for variable in cell.weights:
        variable.assign(rng.normal(scale=0.5, size=variable.shape).astype("float32"))


def _inputs(seed=1, steps=STEPS):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(BATCH, steps, FEATURES)).astype("float32")


def _wn_kwargs(scope):
    if scope is None:
        return {}
    return {"weight_normalization": True, "weight_normalization_scope": scope}


@pytest.mark.parametrize("scope", [None, "recurrent", "all"])
@pytest.mark.parametrize("multiplicative_units", [None, 7])
def test_matches_numpy_reference(scope, multiplicative_units):
    cell = MultiplicativeLSTMCell(
        6, multiplicative_units=multiplicative_units, **_wn_kwargs(scope)
    )
    layer = keras.layers.RNN(cell, return_sequences=True, return_state=True)
    x = _inputs()
    layer(x)
    _randomize(cell)
    h0 = np.random.default_rng(2).normal(size=(BATCH, 6)).astype("float32")
    c0 = np.random.default_rng(3).normal(size=(BATCH, 6)).astype("float32")
    outputs, h, c = layer(x, initial_state=[h0, c0])
    ref_outputs, ref_h, ref_c = _reference_mlstm(
        cell, x, h0.astype(np.float64), c0.astype(np.float64)
    )
    np.testing.assert_allclose(_np(outputs), ref_outputs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(h), ref_h, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(c), ref_c, rtol=1e-5, atol=1e-5)


def test_default_scope_is_the_papers_recurrent_weights():
    cell = MultiplicativeLSTMCell(4, weight_normalization=True)
    assert cell.weight_normalization_scope == "recurrent"
    cell.build((None, FEATURES))
    names = [w.name for w in cell.weights]
    assert names == ["kernel", "recurrent_kernel", "recurrent_kernel_g",
                     "multiplicative_kernel", "multiplicative_kernel_g", "bias"]
    cell = MultiplicativeLSTMCell(4, weight_normalization=True,
                                  weight_normalization_scope="all")
    cell.build((None, FEATURES))
    assert [w.name for w in cell.weights] == [
        "kernel", "kernel_g", "recurrent_kernel", "recurrent_kernel_g",
        "multiplicative_kernel", "multiplicative_kernel_g", "bias"]
    # Without weight normalization the scope changes nothing.
    for scope in ("recurrent", "all"):
        cell = MultiplicativeLSTMCell(4, weight_normalization_scope=scope)
        cell.build((None, FEATURES))
        assert [w.name for w in cell.weights] == [
            "kernel", "recurrent_kernel", "multiplicative_kernel", "bias"]


@pytest.mark.parametrize("scope", ["recurrent", "all"])
def test_weight_normalization_keeps_initial_function(scope):
    x = _inputs()
    with_wn = MultiplicativeLSTMCell(6, **_wn_kwargs(scope))
    without = MultiplicativeLSTMCell(6)
    rnn_wn = keras.layers.RNN(with_wn, return_sequences=True)
    rnn = keras.layers.RNN(without, return_sequences=True)
    rnn_wn(x), rnn(x)
    for name in ("kernel", "recurrent_kernel", "multiplicative_kernel", "bias"):
        getattr(without, name).assign(getattr(with_wn, name))
        if name in NORMALIZED[scope]:  # gains start at ||v||
            np.testing.assert_allclose(
                _np(getattr(with_wn, f"{name}_g")),
                np.sqrt((_np(getattr(with_wn, name)) ** 2).sum(axis=0)),
                rtol=1e-6,
            )
    np.testing.assert_allclose(_np(rnn_wn(x)), _np(rnn(x)), rtol=1e-5, atol=1e-6)


def _count_normalizations(monkeypatch):
    calls = []
    original = weight_normalization.weight_normalize

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(weight_normalization, "weight_normalize", counting)
    return calls


def _rsqrt_counts(layer, x):
    """`(outside, inside)`: how many reciprocal square roots the compiled
    `layer(x)` has outside its time loop and inside the loop body.

    TensorFlow: the ops of the `tf.function` graph (the layer first built
    inside it) and of its while loop's body; JAX: the primitives of the
    layer's jaxpr and of its `scan`'s body.
    """
    if backend_support.BACKEND == "tensorflow":
        import tensorflow as tf

        graph_def = (
            tf.function(layer)
            .get_concrete_function(tf.TensorSpec(x.shape))
            .graph.as_graph_def()
        )
        ops_of = lambda nodes: [node.op for node in nodes]  # noqa: E731
        (while_node,) = [n for n in graph_def.node if n.op in ("While", "StatelessWhile")]
        library = {f.signature.name: f for f in graph_def.library.function}
        body = library[while_node.attr["body"].func.name]
        return ops_of(graph_def.node).count("Rsqrt"), ops_of(body.node_def).count("Rsqrt")
    import jax

    layer(x)  # built
    jaxpr = jax.make_jaxpr(
        lambda trainable, non_trainable, inputs: layer.stateless_call(
            trainable, non_trainable, inputs)[0]
    )([v.value for v in layer.trainable_variables],
      [v.value for v in layer.non_trainable_variables], x).jaxpr

    def sub_jaxprs(eqn):
        for value in eqn.params.values():
            for item in value if isinstance(value, (list, tuple)) else [value]:
                if hasattr(item, "eqns"):  # a Jaxpr
                    yield item
                elif hasattr(getattr(item, "jaxpr", None), "eqns"):  # a ClosedJaxpr
                    yield item.jaxpr

    def count(jaxpr):
        return sum(
            (eqn.primitive.name == "rsqrt") + sum(count(j) for j in sub_jaxprs(eqn))
            for eqn in jaxpr.eqns
        )

    def count_outside_scans(jaxpr):
        return sum(
            (eqn.primitive.name == "rsqrt")
            + (0 if eqn.primitive.name == "scan"
               else sum(count_outside_scans(j) for j in sub_jaxprs(eqn)))
            for eqn in jaxpr.eqns
        )

    def scan_bodies(jaxpr):
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "scan":
                yield eqn.params["jaxpr"].jaxpr
            else:
                for j in sub_jaxprs(eqn):
                    yield from scan_bodies(j)

    (body,) = list(scan_bodies(jaxpr))
    return count_outside_scans(jaxpr), count(body)


@pytest.mark.parametrize("scope", ["recurrent", "all"])
def test_weight_normalization_computed_once_per_sequence(monkeypatch, scope):
    calls = _count_normalizations(monkeypatch)
    counts = {}
    for steps in (2, 9):
        layer = hmkeras.RNN(MultiplicativeLSTMCell(4, **_wn_kwargs(scope)))
        layer(_inputs(steps=steps))  # eager TF: the loop body runs once per step
        calls.clear()
        layer(_inputs(steps=steps), training=True)
        counts[steps] = len(calls)
    # Each normalized matrix once, whatever the sequence length.
    n = len(NORMALIZED[scope])
    assert counts == {2: n, 9: n}

    if backend_support.BACKEND == "torch":
        return  # PyTorch runs eagerly: no traced graph to read (the counts above)
    # Traced (TF: the layer first built inside tf.function): the loop body
    # has no normalization in it; the function has it once per matrix.
    layer = hmkeras.RNN(MultiplicativeLSTMCell(4, **_wn_kwargs(scope)))
    outside, inside = _rsqrt_counts(layer, _inputs(steps=6)[:2])
    assert inside == 0
    assert outside == n
    # Gains built that way also start at ||v||.
    cell = layer.cell
    for name in NORMALIZED[scope]:
        np.testing.assert_allclose(
            _np(getattr(cell, f"{name}_g")),
            np.sqrt((_np(getattr(cell, name)) ** 2).sum(axis=0)),
            rtol=1e-5,
        )


def test_called_directly_normalizes_per_call(monkeypatch):
    cell = MultiplicativeLSTMCell(4, weight_normalization=True)
    x, states = _inputs()[:, 0], cell.get_initial_state(BATCH)
    cell(x, states)
    calls = _count_normalizations(monkeypatch)
    cell(x, states)
    cell(x, states)
    assert len(calls) == 4  # the two recurrent matrices, at each call


def test_wrapped_cells_give_the_same_results():
    """Under StackedRNNCells (hooks forwarded) and a plain wrapper cell
    (hooks not forwarded: per-call fallback) the outputs are unchanged."""
    x = _inputs()
    cell = MultiplicativeLSTMCell(5, weight_normalization=True)
    plain = hmkeras.RNN(cell, return_sequences=True)
    expected = _np(plain(x))

    if backend_support.BACKEND == "tensorflow":
        # (Keras' JAX RNN cannot step a StackedRNNCells of one cell.)
        stacked = hmkeras.RNN(
            keras.layers.StackedRNNCells([cell]), return_sequences=True
        )
        np.testing.assert_allclose(_np(stacked(x)), expected, rtol=1e-6, atol=1e-6)
    # Stacked under a second cell: the first cell's outputs are unchanged,
    # and so the second's, which its own loop gives from them.
    second = MultiplicativeLSTMCell(3, weight_normalization=True)
    expected_second = _np(hmkeras.RNN(second, return_sequences=True)(expected))
    stacked = hmkeras.RNN(
        keras.layers.StackedRNNCells([cell, second]), return_sequences=True
    )
    np.testing.assert_allclose(_np(stacked(x)), expected_second, rtol=1e-6, atol=1e-6)

    class Wrapper(keras.layers.Layer):
        def __init__(self, inner, **kwargs):
            super().__init__(**kwargs)
            self.inner = inner
            self.state_size = inner.state_size
            self.output_size = inner.output_size

        def call(self, inputs, states, training=False):
            return self.inner(inputs, states, training=training)

    wrapped = hmkeras.RNN(Wrapper(cell), return_sequences=True)
    np.testing.assert_allclose(_np(wrapped(x)), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("scope", ["recurrent", "all"])
def test_gradients_match_per_call_computation(scope):
    """Gradients through the per-sequence (captured) weights equal those of
    the same cell computing its weights at every step."""
    x = _inputs()
    cell = MultiplicativeLSTMCell(5, **_wn_kwargs(scope))
    per_sequence = hmkeras.RNN(cell, return_sequences=True)
    per_sequence(x)
    _randomize(cell)

    class PerStep(MultiplicativeLSTMCell):
        def sequence_constants(self, inputs):
            return self.build_sequence_constants(inputs)

    step_cell = PerStep(5, **_wn_kwargs(scope))
    per_step = hmkeras.RNN(step_cell, return_sequences=True)
    per_step(x)
    for mine, theirs in zip(step_cell.weights, cell.weights):
        mine.assign(theirs)

    def gradients(layer):
        _, _, grads = backend_support.weight_gradients(
            layer, lambda outputs, losses: keras.ops.sum(keras.ops.square(outputs)), x)
        return grads

    for a, b in zip(gradients(per_sequence), gradients(per_step)):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-5, atol=1e-6)


class _MaskRecordingCell(MultiplicativeLSTMCell):
    """Reads back, through the public mixin API, the masks of each sequence."""

    recorded = []

    def begin_sequence(self, step_input):
        super().begin_sequence(step_input)
        self.recorded.append(
            (
                self.input_dropout_mask(step_input, training=True),
                self.recurrent_dropout_mask(step_input, training=True),
            )
        )


def test_dropout_matches_reference_with_the_same_masks():
    _MaskRecordingCell.recorded = []
    cell = _MaskRecordingCell(6, dropout=0.4, recurrent_dropout=0.3, seed=5)
    layer = hmkeras.RNN(cell, return_sequences=True, return_state=True)
    x = _inputs(steps=6)
    layer(x)
    _randomize(cell)
    _MaskRecordingCell.recorded = []
    outputs, h, c = layer(x, training=True)
    (input_mask, hidden_mask), = _MaskRecordingCell.recorded
    input_mask, hidden_mask = _np(input_mask), _np(hidden_mask)
    assert input_mask.shape == (BATCH, FEATURES) and hidden_mask.shape == (BATCH, 6)
    assert len({row.tobytes() for row in hidden_mask}) > 1  # per batch row
    ref_outputs, ref_h, ref_c = _reference_mlstm(
        cell, x, input_mask=input_mask, hidden_mask=hidden_mask
    )
    np.testing.assert_allclose(_np(outputs), ref_outputs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(c), ref_c, rtol=1e-5, atol=1e-5)
    # The dropped h is output: zeros where the mask is zero, at every step.
    dropped = np.broadcast_to(hidden_mask[:, None] == 0, ref_outputs.shape)
    assert dropped.any() and (_np(outputs)[dropped] == 0).all()
    # The dropped h recurs: feeding back the undropped h gives another result.
    undropped_feedback, _, _ = _reference_mlstm(cell, x, input_mask=input_mask)
    assert not np.allclose(
        ref_outputs, undropped_feedback * hidden_mask[:, None], atol=1e-4
    )

    # A new sequence draws new masks; inference uses none.
    layer(x, training=True)
    assert not np.array_equal(_np(_MaskRecordingCell.recorded[-1][1]), hidden_mask)
    np.testing.assert_allclose(
        _np(layer(x)[0]), _reference_mlstm(cell, x)[0], rtol=1e-5, atol=1e-5
    )


def test_forget_bias_in_forget_slice():
    cell = MultiplicativeLSTMCell(3)
    cell.build((None, 2))
    np.testing.assert_array_equal(_np(cell.bias), [0] * 3 + [3] * 3 + [0] * 6)
    cell = MultiplicativeLSTMCell(3, forget_bias=1.0, bias_initializer="ones")
    cell.build((None, 2))
    np.testing.assert_array_equal(_np(cell.bias), [1] * 3 + [2] * 3 + [1] * 6)
    cell = MultiplicativeLSTMCell(3, use_bias=False)
    cell.build((None, 2))
    assert cell.bias is None and len(cell.weights) == 3


@pytest.mark.parametrize("scale", [0.7, 0.3])
def test_scaled_orthogonal_hidden_matrices(scale):
    cell = MultiplicativeLSTMCell(8, multiplicative_units=8, recurrent_init_scale=scale)
    cell.build((None, 3))
    blocks = [_np(cell.recurrent_kernel)]
    blocks += np.split(_np(cell.multiplicative_kernel), 4, axis=1)
    for block in blocks:
        singular_values = np.linalg.svd(block, compute_uv=False)
        np.testing.assert_allclose(singular_values, scale, rtol=1e-4)
    # Blocks are independent draws, not copies.
    assert not np.allclose(blocks[1], blocks[2])
    assert not np.allclose(blocks[0], blocks[1])


def test_config_round_trip_and_alias():
    assert MLSTMCell is MultiplicativeLSTMCell
    for scope in ("recurrent", "all"):
        cell = MultiplicativeLSTMCell(
            5, multiplicative_units=3, weight_normalization=True, dropout=0.1,
            recurrent_dropout=0.2, seed=4, forget_bias=2.0, recurrent_init_scale=0.5,
            kernel_regularizer="l2", recurrent_constraint="non_neg",
            weight_normalization_scope=scope,
        )
        config = cell.get_config()
        clone = MultiplicativeLSTMCell.from_config(config)
        assert clone.get_config() == config
        assert config["multiplicative_units"] == 3 and config["forget_bias"] == 2.0
        assert config["weight_normalization_scope"] == scope


def _char_model(cell, steps=6, vocab=11):
    """Embedding -> `cell` under hmkeras.RNN (or a sequence layer as it is) -> Dense."""
    if not isinstance(cell, keras.layers.RNN):
        cell = hmkeras.RNN(cell, return_sequences=True)
    return keras.Sequential(
        [
            keras.Input((steps,), dtype="int32"),
            keras.layers.Embedding(vocab, 8),
            cell,
            keras.layers.Dense(vocab),
        ]
    )


def _tokens(batch=4, steps=6, vocab=11, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, vocab, size=(batch, steps)).astype("int32")


def test_keras_file_round_trip(tmp_path):
    model = _char_model(
        MultiplicativeLSTMCell(
            5, weight_normalization=True, dropout=0.2, recurrent_dropout=0.2
        )
    )
    tokens = _tokens()
    expected = _np(model(tokens))
    path = os.path.join(tmp_path, "mlstm.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    cell = loaded.layers[1].cell
    assert isinstance(cell, MultiplicativeLSTMCell) and cell.weight_normalization
    np.testing.assert_allclose(_np(loaded(tokens)), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.skipif(backend_support.BACKEND != "tensorflow",
                    reason="SavedModel export is TensorFlow's")
def test_saved_model_export_round_trip(tmp_path):
    import tensorflow as tf

    model = _char_model(
        MultiplicativeLSTMCell(5, weight_normalization=True, recurrent_dropout=0.2)
    )
    tokens = _tokens()
    expected = _np(model(tokens))
    path = os.path.join(tmp_path, "exported")
    model.export(path, verbose=False)
    reloaded = tf.saved_model.load(path)
    np.testing.assert_allclose(
        _np(reloaded.serve(tokens)), expected, rtol=1e-6, atol=1e-6
    )


@pytest.mark.slow
def test_jit_compiled_fit():
    model = _char_model(
        MultiplicativeLSTMCell(
            6, weight_normalization=True, dropout=0.1, recurrent_dropout=0.1
        )
    )
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=True,
    )
    tokens = _tokens(batch=8)
    history = model.fit(tokens, tokens, batch_size=4, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_stateful_rnn_carries_state():
    x = _inputs()
    layer = keras.layers.RNN(
        MultiplicativeLSTMCell(4), stateful=True, return_sequences=True
    )
    first = _np(layer(x[:, :2]))
    second = _np(layer(x[:, 2:]))
    whole = _np(keras.layers.RNN(layer.cell, return_sequences=True)(x))
    np.testing.assert_allclose(
        np.concatenate([first, second], axis=1), whole, rtol=1e-5, atol=1e-6
    )
    layer.reset_state()
    np.testing.assert_allclose(_np(layer(x[:, :2])), first, rtol=1e-6, atol=1e-6)


def test_masking_holds_state_on_masked_steps():
    x = _inputs()
    mask = np.ones((BATCH, STEPS), bool)
    mask[0, 2:4] = False
    layer = keras.layers.RNN(
        MultiplicativeLSTMCell(4), return_sequences=True, return_state=True
    )
    outputs, h, c = layer(x, mask=mask)
    outputs = _np(outputs)
    # Masked steps repeat the last output; the final state skips them.
    np.testing.assert_array_equal(outputs[0, 2], outputs[0, 1])
    np.testing.assert_array_equal(outputs[0, 3], outputs[0, 1])
    _, h_ref, c_ref = layer(x[:1][:, [0, 1, 4]])
    np.testing.assert_allclose(_np(h)[0], _np(h_ref)[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(c)[0], _np(c_ref)[0], rtol=1e-5, atol=1e-6)


def test_mixed_bfloat16_runs():
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        cell = MultiplicativeLSTMCell(
            4, weight_normalization=True, dropout=0.1, recurrent_dropout=0.1
        )
        layer = hmkeras.RNN(cell, return_sequences=True)
        out = layer(_inputs(), training=True)
        assert keras.backend.standardize_dtype(out.dtype) == "bfloat16"
        assert cell.kernel.dtype == "float32"
        assert np.isfinite(_np(out)).all()
    finally:
        keras.config.set_dtype_policy(previous)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"units": 0}, "units"),
        ({"units": -3}, "units"),
        ({"units": 2.5}, "units"),
        ({"units": True}, "units"),
        ({"units": 4, "multiplicative_units": 0}, "multiplicative_units"),
        ({"units": 4, "multiplicative_units": "8"}, "multiplicative_units"),
        ({"units": 4, "dropout": 1.0}, "dropout"),
        ({"units": 4, "dropout": -0.1}, "dropout"),
        ({"units": 4, "recurrent_dropout": 1.2}, "recurrent_dropout"),
        ({"units": 4, "recurrent_init_scale": 0.0}, "recurrent_init_scale"),
        ({"units": 4, "recurrent_init_scale": float("inf")}, "recurrent_init_scale"),
        ({"units": 4, "forget_bias": float("nan")}, "forget_bias"),
        ({"units": 4, "weight_normalization": "yes"}, "weight_normalization"),
        ({"units": 4, "weight_normalization_scope": "input"},
         "weight_normalization_scope"),
        ({"units": 4, "weight_normalization_scope": None}, "weight_normalization_scope"),
        ({"units": 4, "weight_normalization_scope": True}, "weight_normalization_scope"),
        ({"units": 4, "weight_normalization_scope": "Recurrent"},
         "weight_normalization_scope"),
        ({"units": 4, "use_bias": 1}, "use_bias"),
    ],
)
def test_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=rf"`{name}` must be"):
        MultiplicativeLSTMCell(**kwargs)
    with pytest.raises(ValueError, match=rf"`{name}` must be"):
        MultiplicativeLSTM(**kwargs)


def test_bad_scope_message_names_the_allowed_values():
    with pytest.raises(ValueError, match=r"one of \['recurrent', 'all'\]"):
        MultiplicativeLSTMCell(4, weight_normalization_scope="inputs")


def test_docstring_example():
    import doctest

    from hmkeras.cells import multiplicative_lstm_cell

    results = doctest.testmod(multiplicative_lstm_cell)
    assert results.attempted > 0 and results.failed == 0
