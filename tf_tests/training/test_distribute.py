"""Training under `tf.distribute.MirroredStrategy` over two logical CPU devices.

The logical devices must be configured before TensorFlow initializes its
devices, which the test process has long done: every case runs in ONE
subprocess (`_SCRIPT`, a TensorFlow import costs seconds), which prints a
JSON report that the tests below check.

* The same model (the same initial weights, loaded from a file) trained on
  the same batches under the default strategy and under MirroredStrategy
  (each replica gets half of every batch, the gradients are summed) has
  the same per-batch losses, boundary rates and final weights.
* `SlopeAnnealing` sets the slope of every replica; `BoundaryMonitor` logs
  the rates of the whole batch.
* The HM-LSTM char LM (its recurrent layer is `HMLSTM`), `HMRNN` and
  `MultiplicativeLSTM` build and train under the strategy; mixed
  precision keeps float32 variables and finite losses.
* Truncated BPTT with the state carried across batches: over the two
  replicas (the batches name their rows) the per-batch losses, the final
  weights and the carried state are those of the default strategy, and
  differ from independent windows' (the state is really carried).
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from example_modules import ROOT
from worker_cluster import run_workers

# Every test here trains under a strategy (a subprocess report of about
# two minutes for the module, worker processes for the rest).
pytestmark = pytest.mark.slow

_SCRIPT = r"""
import json, os, sys
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import keras
import numpy as np

import hmkeras
from hmkeras.models.char_language_model import CharLanguageModel
from hmkeras.training.optimizer_on_compile import build_optimizer


weights_dir = sys.argv[1]
mirrored = tf.distribute.MirroredStrategy(
    [d.name for d in tf.config.list_logical_devices("CPU")])
default = tf.distribute.get_strategy()
tokens = np.random.default_rng(0).integers(0, 11, (8, 13)).astype("int32")


def dataset():
    # Two batches of 4 rows; the mirrored strategy gives 2 rows to each replica.
    return tf.data.Dataset.from_tensor_slices((tokens[:, :-1], tokens[:, 1:])).batch(4)


class BatchLogs(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.rows = []

    def on_train_batch_end(self, batch, logs=None):
        self.rows.append({k: float(v) for k, v in logs.items()
                          if k == "batch_bpc" or k.startswith("z_rate")})


def train_lm(strategy, cell, policy="float32", epochs=2):
    keras.config.set_dtype_policy(policy)
    path = os.path.join(weights_dir, f"{cell}.weights.h5")
    with strategy.scope():
        lm = CharLanguageModel(vocab_size=11, cell=cell, units=8, num_layers=2,
                               embedding_dim=4, output_units=8, seed=0)
        if os.path.exists(path):
            lm.network.load_weights(path)
        else:
            lm.network.save_weights(path)
        before = [w.numpy().copy() for w in lm.network.trainable_weights]
        trainer = hmkeras.TruncatedBPTTModel(lm, None, carry_state=False)
        optimizer = keras.optimizers.Adam(0.01)
        if policy == "mixed_float16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        trainer.compile(optimizer, loss=trainer.loss_function())
        logs = BatchLogs()
        callbacks = [logs]
        if lm.is_hierarchical:
            callbacks += [hmkeras.SlopeAnnealing(lambda epoch: 1.0 + epoch),
                          hmkeras.BoundaryMonitor(interval=1, verbose=0)]
        trainer.fit(dataset(), epochs=epochs, callbacks=callbacks, verbose=0,
                    shuffle=False)
    report = {
        "rows": logs.rows,
        "weights": [w.numpy().tolist() for w in lm.network.trainable_weights],
        "changed": [bool(np.any(w.numpy() != b))
                    for w, b in zip(lm.network.trainable_weights, before)],
        "dtypes": sorted({w.dtype for w in lm.network.weights}),
        "replicas": strategy.num_replicas_in_sync,
    }
    if lm.is_hierarchical:
        slope = lm.hierarchical_cell.slope.value
        report["slopes"] = [float(v.numpy())
                            for v in strategy.experimental_local_results(slope)]
    keras.config.set_dtype_policy("float32")
    return report


def train_layer(strategy, layer_factory):
    with strategy.scope():
        model = keras.Sequential([
            keras.Input((12,), dtype="int32"), keras.layers.Embedding(11, 4),
            layer_factory(), keras.layers.Dense(11)])
        model.compile(keras.optimizers.Adam(0.01),
                      keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        build_optimizer(model)  # not in the first trace: one trace (tf_tests/one_trace.py)
        before = [w.numpy().copy() for w in model.trainable_weights]
        history = model.fit(dataset(), epochs=1, verbose=0)
    return {"loss": history.history["loss"][-1],
            "changed": [bool(np.any(w.numpy() != b))
                        for w, b in zip(model.trainable_weights, before)]}


out = {"default": {}, "mirrored": {}, "mixed": {}, "layers": {}}
# The mirrored run equals the default one for the HM-LSTM (the HMRNN and
# the mLSTM train under the strategy as sequence layers below).
out["default"]["hmlstm"] = train_lm(default, "hmlstm")
out["mirrored"]["hmlstm"] = train_lm(mirrored, "hmlstm")
# Loss scaling over replicas (bfloat16 on one device:
# test_keras_integration.py's test_mixed_bfloat16_runs).
out["mixed"]["mixed_float16"] = train_lm(mirrored, "hmlstm", "mixed_float16", epochs=1)
# (The HM-LSTM's sequence layer is the char LM's recurrent layer, above.)
for name, factory in (
        ("HMRNN", lambda: hmkeras.cells.HMRNN(8, num_layers=2, return_sequences=True)),
        ("MultiplicativeLSTM",
         lambda: hmkeras.cells.MultiplicativeLSTM(8, return_sequences=True))):
    out["layers"][name] = train_layer(mirrored, factory)
with mirrored.scope():  # without row ids the carried state cannot be split
    lm = CharLanguageModel(vocab_size=11, cell="hmrnn", units=4, num_layers=2,
                           embedding_dim=3, output_units=4)
    carrying = hmkeras.TruncatedBPTTModel(lm, 4)
    carrying.compile("sgd", loss=carrying.loss_function())
    try:
        carrying.fit(dataset(), epochs=1, verbose=0)
        out["carry_error"] = None
    except ValueError as error:
        out["carry_error"] = str(error)


def train_carried(strategy, carry):
    # A stream of 3 batches of 4 rows x 6 steps; row i of batch k + 1
    # continues row i of batch k.
    stream = np.random.default_rng(1).integers(0, 11, 4 * 6 * 3 + 1)
    batches = hmkeras.data.TruncatedBPTTBatches(stream, 4, 6)
    path = os.path.join(weights_dir, "carried.weights.h5")
    with strategy.scope():
        lm = CharLanguageModel(vocab_size=11, cell="hmlstm", units=8, num_layers=2,
                               embedding_dim=4, output_units=8, seed=0)
        if os.path.exists(path):
            lm.network.load_weights(path)
        else:
            lm.network.save_weights(path)
        trainer = hmkeras.TruncatedBPTTModel(lm, 4 if carry else None, carry_state=carry)
        trainer.compile(keras.optimizers.Adam(0.01), loss=trainer.loss_function())
        logs = BatchLogs()
        trainer.fit(batches.dataset(row_ids=carry), epochs=1, callbacks=[logs],
                    verbose=0, shuffle=False)
    return {"rows": logs.rows,
            "weights": [w.numpy().tolist() for w in lm.network.trainable_weights],
            "state": [v.numpy().tolist() for v in trainer.carried_state]}


out["carried"] = {"default": train_carried(default, True),
                  "mirrored": train_carried(mirrored, True),
                  "windows": train_carried(default, False)}


def handwriting_update(strategy, prior):
    # One SGD step of HandwritingTrainer on 4 padded lines; each replica
    # gets two rows with 8 + 5 real steps.
    from hmkeras.models.handwriting_model import HandwritingModel, pad_sequences

    rng = np.random.default_rng(2)
    lines = [rng.normal(size=(n, 3)).astype("float32") for n in (9, 6, 9, 6)]
    for line in lines:
        line[:, 2] = line[:, 2] > 0.8
    x, y, w = pad_sequences(lines)
    path = os.path.join(weights_dir, "handwriting.weights.h5")
    with strategy.scope():
        model = HandwritingModel(units=5, output_units=4, num_components=2, seed=4,
                                 boundary_prior=prior)
        if os.path.exists(path):
            model.network.load_weights(path)
        else:
            model.network.save_weights(path)
        before = [v.numpy() for v in model.network.trainable_weights]
        trainer = hmkeras.HandwritingTrainer(model)
        trainer.compile(keras.optimizers.SGD(0.1))
    trainer.fit(tf.data.Dataset.from_tensor_slices((x, y, w)).batch(4), epochs=1,
                verbose=0, shuffle=False)
    return [(v.numpy() - b).tolist()
            for v, b in zip(model.network.trainable_weights, before)]


out["handwriting"] = {str(prior): {"default": handwriting_update(default, prior),
                                   "mirrored": handwriting_update(mirrored, prior)}
                      for prior in (None, "rate")}
print("REPORT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(tmp_path_factory.mktemp("weights"))],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    return _report(result.stdout)


def test_mirrored_training_equals_the_default_strategy(report):
    single, mirrored = report["default"]["hmlstm"], report["mirrored"]["hmlstm"]
    assert single["replicas"] == 1 and mirrored["replicas"] == 2
    assert len(single["rows"]) == len(mirrored["rows"]) == 4  # 2 epochs x 2 batches
    for a, b in zip(single["rows"], mirrored["rows"]):
        assert a.keys() == b.keys()
        for key in a:  # batch_bpc and, for hmlstm, z_rate_1: whole-batch means
            assert b[key] == pytest.approx(a[key], rel=1e-4, abs=1e-5), key
    for a, b in zip(single["weights"], mirrored["weights"]):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-4, atol=1e-5)
    # Adam moved every weight: the comparison is not between untrained models.
    assert all(mirrored["changed"])


# The rate form, whose value is the whole batch's (the binomial form is a
# per-step mean like the NLL's).
@pytest.mark.parametrize("prior", ["None", "rate"])
def test_handwriting_prior_scales_with_the_replicas_as_the_nll(report, prior):
    """`HandwritingTrainer`'s loss is every replica's own per-step mean, not
    divided by the replicas: over two replicas (equal real steps) the summed
    gradient, so the SGD step, is twice one device's. The boundary prior
    must scale alike (the rate form's whole-batch value and its gradient
    scaled by the replicas), or it would weigh differently against the NLL."""
    runs = report["handwriting"][prior]
    for single, mirrored in zip(runs["default"], runs["mirrored"]):
        single = np.asarray(single)
        np.testing.assert_allclose(mirrored, 2 * single, rtol=1e-3,
                                   atol=1e-3 * np.abs(single).max() + 1e-9)
    # The prior changes the step (its gradient is there).
    if prior != "None":
        assert not np.allclose(runs["default"][0], report["handwriting"]["None"]["default"][0])


def test_boundary_monitor_and_slope_annealing_on_every_replica(report):
    mirrored = report["mirrored"]["hmlstm"]
    assert all("z_rate_1" in row for row in mirrored["rows"])
    # SlopeAnnealing(1 + epoch), epoch index 1 last: both replicas' copies.
    assert mirrored["slopes"] == [2.0, 2.0]


def test_the_char_lm_trains_under_mirrored_strategy(report):
    result = report["mirrored"]["hmlstm"]
    assert result["replicas"] == 2
    assert all(result["changed"])
    assert all(np.isfinite(row["batch_bpc"]) for row in result["rows"])
    assert result["dtypes"] == ["float32"]


def test_mixed_precision_under_mirrored_strategy(report):
    result = report["mixed"]["mixed_float16"]
    assert result["dtypes"] == ["float32"]  # variables stay float32
    assert all(np.isfinite(row["batch_bpc"]) for row in result["rows"])
    assert all(0 < row["batch_bpc"] < 8 for row in result["rows"])


def test_carried_state_without_row_ids_is_refused_over_replicas(report):
    assert "row_ids" in report["carry_error"]
    assert "carry_state=False" in report["carry_error"]


def test_carried_state_over_replicas_equals_the_default_strategy(report):
    single, mirrored = report["carried"]["default"], report["carried"]["mirrored"]
    assert len(single["rows"]) == len(mirrored["rows"]) == 3
    for a, b in zip(single["rows"], mirrored["rows"]):
        for key in a:  # batch_bpc, z_rate_1
            assert b[key] == pytest.approx(a[key], rel=1e-4, abs=1e-5), key
    for a, b in zip(single["weights"] + single["state"],
                    mirrored["weights"] + mirrored["state"]):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-4, atol=1e-5)
    # Every row's state was carried (a row's state never stays zero) ...
    for state in mirrored["state"][:-1]:  # the last is z, legitimately 0 or 1
        assert np.all(np.any(np.asarray(state) != 0, axis=1))
    # ... and it matters: independent windows start batches 2 and 3 elsewhere.
    windows = report["carried"]["windows"]
    assert windows["rows"][0]["batch_bpc"] == pytest.approx(single["rows"][0]["batch_bpc"],
                                                            rel=1e-6)
    for a, b in zip(single["rows"][1:], windows["rows"][1:]):
        assert abs(a["batch_bpc"] - b["batch_bpc"]) > 1e-4


def test_sequence_layers_train_under_mirrored_strategy(report):
    assert sorted(report["layers"]) == ["HMRNN", "MultiplicativeLSTM"]
    for name, result in report["layers"].items():
        assert np.isfinite(result["loss"]), name
        assert all(result["changed"]), name


# ---------------------------------------------------------------------------
# In this process: TruncatedBPTTModel(carry_state=False), the mode used
# under strategies with several replicas.
# ---------------------------------------------------------------------------
def _tiny_lm():
    from hmkeras.models.char_language_model import CharLanguageModel

    return CharLanguageModel(vocab_size=7, cell="hmlstm", units=4, num_layers=2,
                             embedding_dim=3, output_units=4, seed=1)


def test_stateless_windows_start_from_the_zero_state():
    import keras

    import hmkeras

    lm = _tiny_lm()
    trainer = hmkeras.TruncatedBPTTModel(lm, None, carry_state=False)
    assert trainer.carried_state == [] and trainer.batch_size is None
    trainer.compile(keras.optimizers.SGD(0.0), loss=trainer.loss_function())
    x = np.random.default_rng(2).integers(0, 7, (3, 9)).astype("int32")
    y = np.roll(x, -1, axis=1)
    # Independent reference: the network from the zero state, NumPy cross entropy.
    logits = np.asarray(lm.network([x, *lm.zero_state(3)])[0], dtype="float64")
    logits -= logits.max(-1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected_bits = -np.take_along_axis(log_probs, y[..., None], -1).mean() / np.log(2)
    for _ in range(2):  # the same both times: nothing is carried (and lr = 0)
        logs = trainer.train_on_batch(x, y, return_dict=True)
        assert logs["batch_bpc"] == pytest.approx(expected_bits, rel=1e-5)
    # A batch of another size is accepted (no state variables of fixed size).
    trainer.train_on_batch(x[:2], y[:2])


def test_carry_state_arguments():
    import hmkeras

    lm = _tiny_lm()
    with pytest.raises(ValueError, match="batch_size"):
        hmkeras.TruncatedBPTTModel(lm, None)  # carrying needs a fixed batch size
    with pytest.raises(ValueError, match="carry_state"):
        hmkeras.TruncatedBPTTModel(lm, 2, carry_state="no")
    assert hmkeras.TruncatedBPTTModel(lm, 2, carry_state=False).batch_size == 2


def test_row_ids_select_the_rows_of_the_carried_state():
    import keras

    import hmkeras

    lm = _tiny_lm()
    trainer = hmkeras.TruncatedBPTTModel(lm, 4)
    trainer.compile(keras.optimizers.SGD(0.0), loss=trainer.loss_function())
    rng = np.random.default_rng(3)
    first, second = (rng.integers(0, 7, (4, 9)).astype("int32") for _ in range(2))
    trainer.train_on_batch(first, np.roll(first, -1, axis=1))
    carried = [v.numpy().copy() for v in trainer.carried_state]
    # Independent reference: the network from the carried rows' state.
    expected = lm.network([second, *carried])[2:]
    # Rows 3 and 1 only, in that order, named by their row ids.
    rows = np.array([3, 1], "int32")
    trainer.train_on_batch((second[rows], rows), np.roll(second[rows], -1, axis=1))
    for variable, before, after in zip(trainer.carried_state, carried, expected):
        np.testing.assert_allclose(variable.numpy()[rows], np.asarray(after)[rows],
                                   rtol=1e-6, atol=1e-6)
        # The rows that did not run keep their state exactly.
        np.testing.assert_array_equal(variable.numpy()[[0, 2]], before[[0, 2]])
    with pytest.raises(ValueError, match="row_ids"):
        trainer((second, rows, rows))


# ---------------------------------------------------------------------------
# MultiWorkerMirroredStrategy: two worker processes on this machine.
# ---------------------------------------------------------------------------
_WORKER_SCRIPT = r"""
import json, os, sys
import numpy as np
import tensorflow as tf

multi_worker = "TF_CONFIG" in os.environ
strategy = (tf.distribute.MultiWorkerMirroredStrategy() if multi_worker
            else tf.distribute.get_strategy())
import keras
import hmkeras
from hmkeras.models.char_language_model import CharLanguageModel

weights_path = sys.argv[1]
stream = np.random.default_rng(0).integers(0, 11, 4 * 6 * 4 + 1)
batches = hmkeras.data.TruncatedBPTTBatches(stream, 4, 6)
with strategy.scope():
    lm = CharLanguageModel(vocab_size=11, cell="hmlstm", units=8, num_layers=2,
                           embedding_dim=4, output_units=8, seed=0)
    if multi_worker:
        lm.network.load_weights(weights_path)
    else:
        lm.network.save_weights(weights_path)
    trainer = hmkeras.TruncatedBPTTModel(lm, 4)
    trainer.compile(keras.optimizers.Adam(0.01), loss=trainer.loss_function())
    rows = []

    class BatchLogs(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            rows.append({k: float(v) for k, v in logs.items()
                         if k == "batch_bpc" or k.startswith("z_rate")})

    trainer.fit(batches.dataset(row_ids=True), epochs=1, callbacks=[BatchLogs()],
                verbose=0, shuffle=False)
    valid = trainer.evaluate(batches.dataset(row_ids=True).take(1), verbose=0,
                             return_dict=True)
print("REPORT " + json.dumps({
    "replicas": strategy.num_replicas_in_sync, "rows": rows, "valid": valid,
    "weights": [w.numpy().tolist() for w in lm.network.trainable_weights],
    "state": [v.numpy().tolist() for v in trainer.carried_state]}), flush=True)
"""


def _report(output):
    lines = [line for line in output.splitlines() if line.startswith("REPORT ")]
    assert lines, output[-3000:]
    return json.loads(lines[-1][len("REPORT "):])


def test_carried_state_over_two_workers_equals_one_device(tmp_path):
    """Two `MultiWorkerMirroredStrategy` workers (one replica each) train
    the carried-state model of one device to the same losses, weights and
    carried state (Keras' own `fit` fails there, keras-team/keras#20585;
    `TruncatedBPTTModel` works around it)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    weights = str(tmp_path / "initial.weights.h5")
    single = subprocess.run([sys.executable, "-c", _WORKER_SCRIPT, weights],
                            capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert single.returncode == 0, single.stderr[-3000:]
    single = _report(single.stdout)
    done = run_workers(lambda index: [sys.executable, "-c", _WORKER_SCRIPT, weights],
                       cwd=ROOT, timeout=600)
    outputs = []
    for worker in done:
        assert worker.returncode == 0, worker.stderr[-3000:]
        outputs.append(_report(worker.stdout))
    for report in outputs:
        assert single["replicas"] == 1 and report["replicas"] == 2
        assert len(report["rows"]) == len(single["rows"]) == 4
        for a, b in zip(single["rows"], report["rows"]):
            for key in a:  # batch_bpc, z_rate_1: whole-batch means
                assert b[key] == pytest.approx(a[key], rel=1e-5, abs=1e-6), key
        assert report["valid"]["loss"] == pytest.approx(single["valid"]["loss"], rel=1e-5)
        # The weights after 4 Adam steps at 0.01 (each moves a weight by up
        # to 0.01): the two workers sum their gradients in another order than
        # one device, and Adam scales an element's update to about the
        # learning rate however small its gradient, so the rounding of a
        # near-cancelling gradient shows as up to a few 1e-5 (3e-5 measured).
        for a, b in zip(single["weights"] + single["state"],
                        report["weights"] + report["state"]):
            np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-4, atol=1e-4)
