"""BoundaryMonitor: rates in the logs, collapse warnings, stopping."""

import keras
import numpy as np
import pytest

import hmkeras
from hmkeras.training.boundary_monitor import BoundaryCollapseWarning
from one_trace import compile_built

pytestmark = pytest.mark.every_backend

VOCAB, T = 12, 15


# The monitor reads the boundaries whatever computes them: the cells here
# leave layer normalization out, which halves the time to compile a step.
def _model(boundary_bias=0.0):
    keras.utils.set_random_seed(0)
    cell = hmkeras.HMLSTMCell(6, num_layers=3, boundary_bias=boundary_bias,
                              layer_norm=False)
    model = keras.Sequential([
        keras.Input((T,), dtype="int32"),
        keras.layers.Embedding(VOCAB, 4),
        keras.layers.RNN(cell, return_sequences=True),
        keras.layers.Dense(VOCAB),
    ])
    compile_built(model, keras.optimizers.Adam(1e-3),
                  keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model, cell


def _data():
    x = np.random.default_rng(0).integers(0, VOCAB, (24, T))
    return x, np.roll(x, -1, axis=1)


def _rates(model, cell, probe):
    outputs = keras.Model(model.inputs[0], model.layers[1].output)(probe)
    _, z = cell.split_outputs(outputs)
    return np.asarray(z).reshape(-1, 2).mean(axis=0)


@pytest.mark.slow
def test_rates_in_history_match_a_direct_measurement():
    model, cell = _model()
    x, y = _data()
    monitor = hmkeras.BoundaryMonitor(probe=x[:8], interval=2, verbose=0)
    history = model.fit(x, y, batch_size=4, epochs=2, callbacks=[monitor], verbose=0)
    expected = _rates(model, cell, x[:8])
    np.testing.assert_allclose(
        [history.history["z_rate_1"][-1], history.history["z_rate_2"][-1]], expected, atol=1e-6)
    assert monitor.collapses == []


@pytest.mark.slow
def test_warns_naming_the_collapsed_layer_and_stops_when_asked():
    # A large negative detector bias pins every boundary at 0.
    model, _ = _model(boundary_bias=-50.0)
    x, y = _data()
    monitor = hmkeras.BoundaryMonitor(probe=x[:8], interval=1, patience=2,
                                      stop_on_collapse=True)
    with pytest.warns(BoundaryCollapseWarning, match=r"boundary layer 1 \(z_rate_1\).*below low"):
        model.fit(x, y, batch_size=4, epochs=3, callbacks=[monitor], verbose=0)
    # Stopped at the second check (patience 2), after 2 of 18 batches.
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 2
    assert [c[1] for c in monitor.collapses] == ["z_rate_1", "z_rate_2"]


@pytest.mark.slow
def test_warns_about_rates_stuck_at_one():
    model, _ = _model(boundary_bias=50.0)
    x, y = _data()
    monitor = hmkeras.BoundaryMonitor(probe=x[:8], interval=1, patience=3)
    with pytest.warns(BoundaryCollapseWarning, match="above high"):
        model.fit(x, y, batch_size=4, epochs=1, callbacks=[monitor], verbose=0)
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 6  # not stopped


@pytest.mark.slow
@pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                    reason="TruncatedBPTTModel is a TensorFlow training driver")
def test_uses_rates_reported_by_the_train_step():
    from hmkeras.models.char_language_model import CharLanguageModel

    lm = CharLanguageModel(vocab_size=VOCAB, cell="hmlstm", units=6, embedding_dim=4,
                           output_units=6, cell_options=dict(boundary_bias=-50.0),
                           seed=0)
    trainer = hmkeras.TruncatedBPTTModel(lm, batch_size=4)
    trainer.compile(keras.optimizers.Adam(1e-3), loss=trainer.loss_function())
    x, y = _data()
    monitor = hmkeras.BoundaryMonitor(interval=1, patience=1, verbose=0)
    history = trainer.fit(x, y, batch_size=4, epochs=1, callbacks=[monitor], verbose=0,
                          shuffle=False)
    assert history.history["z_rate_1"] == [0.0]
    assert monitor.collapses and monitor.collapses[0][1] == "z_rate_1"


@pytest.mark.slow
def test_bad_arguments_and_missing_probe():
    for kwargs, name in ((dict(interval=0), "interval"), (dict(low=-0.1), "low"),
                         (dict(high=2), "high"), (dict(low=0.5, high=0.4), "low"),
                         (dict(patience=1.5), "patience"),
                         (dict(stop_on_collapse="yes"), "stop_on_collapse"),
                         (dict(verbose=3), "verbose")):
        with pytest.raises(ValueError, match=name):
            hmkeras.BoundaryMonitor(**kwargs)
    model, _ = _model()
    x, y = _data()
    with pytest.raises(ValueError, match="needs `probe`"):
        model.fit(x, y, batch_size=4, epochs=1, verbose=0,
                  callbacks=[hmkeras.BoundaryMonitor(interval=1)])


# ---------------------------------------------------------------------------
# Checks at every epoch's end, the default `high`, the advice, NaN rates
# ---------------------------------------------------------------------------
class _Reported(keras.metrics.Metric):
    """A metric that reports a fixed boundary rate (as a train step that
    logs `z_rate_l` would)."""

    def __init__(self, rate, name):
        super().__init__(name=name)
        self.rate = rate

    def update_state(self, *args, **kwargs):
        del args, kwargs

    def result(self):
        return keras.ops.convert_to_tensor(self.rate, "float32")


def _fit_reported(rates, epochs, monitor, steps=3):
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse", metrics=[
        _Reported(float(rate), f"z_rate_{i + 1}") for i, rate in enumerate(rates)])
    x = np.zeros((steps * 2, 1), "float32")
    return model.fit(x, x, batch_size=2, epochs=epochs, callbacks=[monitor],
                     verbose=0, shuffle=False)


@pytest.mark.slow
def test_a_run_shorter_than_interval_times_patience_warns_at_epoch_ends():
    # 6 steps per epoch, 12 in all, far fewer than interval * patience = 200:
    # only the two epoch-end checks can see the collapse.
    model, _ = _model(boundary_bias=-50.0)
    x, y = _data()
    monitor = hmkeras.BoundaryMonitor(probe=x[:8], interval=100, patience=2)
    with pytest.warns(BoundaryCollapseWarning,
                      match=r"at step 12 \(end of epoch 2\): boundary layer 1 "
                            r"\(z_rate_1\) fired on 0\.0000 .*below low=0\.01") as caught:
        history = model.fit(x, y, batch_size=4, epochs=2, callbacks=[monitor], verbose=0)
    assert history.history["z_rate_1"] == [0.0, 0.0]
    assert [(c[0], c[1]) for c in monitor.collapses] == [(12, "z_rate_1"), (12, "z_rate_2")]
    message = str(caught[0].message)
    for hint in ("boundary_prior", "segment_lengths", "hmkeras.HMLSTM", "hmkeras.HMRNN",
                 "hmkeras.BoundaryPrior", "shorter", "boundary_bias"):
        assert hint in message, (hint, message)


def test_an_epoch_end_that_is_also_an_interval_step_is_one_check():
    # 6 steps per epoch, interval 3: checks after steps 3, 6 (also the end of
    # epoch 1, counted once), 9, 12: the third check is step 9.  Counted
    # twice, step 6 would have been the third.
    monitor = hmkeras.BoundaryMonitor(interval=3, patience=3, verbose=0)
    _fit_reported([0.0], epochs=2, monitor=monitor, steps=6)
    assert monitor.collapses == [(9, "z_rate_1", 1, 0.0)]
    # Interval 4: checks after steps 4, 6 (end of epoch 1), 8.
    monitor = hmkeras.BoundaryMonitor(interval=4, patience=3, verbose=0)
    _fit_reported([0.0], epochs=2, monitor=monitor, steps=6)
    assert monitor.collapses == [(8, "z_rate_1", 1, 0.0)]


def test_a_rate_of_0_93_warns_under_the_defaults():
    monitor = hmkeras.BoundaryMonitor()
    assert (monitor.low, monitor.high) == (0.01, 0.8)
    with pytest.warns(BoundaryCollapseWarning,
                      match=r"at step 9 \(end of epoch 3\): boundary layer 1 \(z_rate_1\) "
                            r"fired on 0\.9300 of the steps, above high=0\.8") as caught:
        _fit_reported([0.93, 0.5], epochs=3, monitor=monitor)
    assert monitor.collapses == [(9, "z_rate_1", 1, pytest.approx(0.93))]
    message = next(str(w.message) for w in caught  # not another library's warning
                   if issubclass(w.category, BoundaryCollapseWarning))
    for hint in ("not segmenting", "longer", "boundary_prior", "segment_lengths",
                 "hmkeras.HMLSTM", "hmkeras.HMRNN", "hmkeras.BoundaryPrior"):
        assert hint in message, (hint, message)
    assert "boundary_bias" not in message


def test_rates_between_low_and_high_do_not_warn():
    monitor = hmkeras.BoundaryMonitor(patience=1)
    _fit_reported([0.79, 0.011], epochs=3, monitor=monitor)
    assert monitor.collapses == []


@pytest.mark.slow
def test_nan_rates_are_logged_as_nan_and_are_no_collapse():
    # Reported in the logs.
    monitor = hmkeras.BoundaryMonitor(interval=1, patience=1)
    history = _fit_reported([float("nan")], epochs=2, monitor=monitor)
    assert np.isnan(history.history["z_rate_1"]).all()
    assert monitor.collapses == []
    # Measured on the probe of a model whose weights are NaN: its step-mode
    # boundaries are all 0, but the rates are NaN, not a collapse to 0.
    model, _ = _model()
    embedding = model.layers[0]
    embedding.embeddings.assign(np.full(embedding.embeddings.shape, np.nan, "float32"))
    x, y = _data()
    monitor = hmkeras.BoundaryMonitor(probe=x[:8], interval=1, patience=1)
    history = model.fit(x, y, batch_size=4, epochs=1, callbacks=[monitor], verbose=0)
    assert np.isnan(history.history["z_rate_1"]).all()
    assert np.isnan(history.history["z_rate_2"]).all()
    assert monitor.collapses == []


def _float_model():
    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.Input((T, 3)),
        keras.layers.RNN(hmkeras.HMLSTMCell(6, num_layers=3, layer_norm=False),
                         return_sequences=True),
        keras.layers.Dense(1),
    ])
    compile_built(model, keras.optimizers.Adam(1e-3), "mse")
    return model


@pytest.mark.slow
def test_nan_inputs_give_nan_rates_and_terminate_on_nan_stops():
    """A NaN in the training inputs makes the weights NaN: the rates read NaN,
    not 0 (a NaN state compares as no boundary); Keras' TerminateOnNaN,
    the README's guard for a plain fit, stops at that batch."""
    x = np.random.default_rng(0).normal(size=(24, T, 3)).astype("float32")
    probe = x[:4].copy()
    x[9, 3, 1] = np.nan  # in the third batch of 4
    y = np.zeros((24, T, 1), "float32")
    monitor = hmkeras.BoundaryMonitor(probe=probe, interval=1, verbose=0)
    history = _float_model().fit(x, y, batch_size=4, epochs=1, callbacks=[monitor],
                                 verbose=0, shuffle=False)
    assert np.isnan(history.history["loss"][-1])
    assert np.isnan(history.history["z_rate_1"][-1]) and np.isnan(history.history["z_rate_2"][-1])
    assert monitor.collapses == []  # NaN is no collapse
    batches = []
    _float_model().fit(x, y, batch_size=4, epochs=1, verbose=0, shuffle=False, callbacks=[
        keras.callbacks.TerminateOnNaN(),
        keras.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: batches.append(b))])
    assert batches == [0, 1, 2]
