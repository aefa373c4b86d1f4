"""Data parallelism on JAX through `keras.distribution`: the HM-LSTM with
its prior and placement trains on two devices as on one.

Under `keras.distribution.DataParallel` JAX runs the step over the whole
batch, sharded (`jax.jit` with sharded inputs): the prior's rate and the
placement's means are the whole batch's, with no all-reduce of the
library's own (`boundary_prior.whole_batch_sums` passes them on).  The
child process makes two host CPU devices
(`--xla_force_host_platform_device_count=2`, before JAX starts) and
compares a step of `fit` on both with the same step on one device.
"""

import json
import subprocess
import sys
import textwrap

import pytest
from backend_support import host_devices_environment

CHILD = textwrap.dedent("""
    import json
    import jax, keras, numpy as np
    import hmkeras
    assert keras.backend.backend() == "jax" and len(jax.devices("cpu")) == 2

    def trained(tokens):
        keras.utils.set_random_seed(0)
        inputs = keras.Input((tokens.shape[1],), dtype="int32")
        rnn = hmkeras.HMLSTM(8, return_sequences=True)  # the rate prior is on
        outputs = rnn(keras.layers.Embedding(7, 4)(inputs))
        logits = keras.layers.Dense(7)(outputs)
        logits = hmkeras.BoundaryPlacementLoss(boundary_layers=2)([outputs, logits])
        model = keras.Model(inputs, logits)
        model.compile(keras.optimizers.SGD(0.5),
                      keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model(tokens, training=True)
        losses = [float(v) for v in model.losses]
        initial = [keras.ops.convert_to_numpy(w) for w in model.weights]
        history = model.fit(tokens, tokens, batch_size=8, epochs=2, shuffle=False,
                            verbose=0)
        weights = [keras.ops.convert_to_numpy(w) for w in model.weights]
        moved = max(float(np.max(np.abs(a - b))) for a, b in zip(weights, initial))
        return weights, losses, history.history["loss"], moved

    tokens = np.random.default_rng(3).integers(0, 7, size=(8, 12)).astype("int32")
    one, one_losses, one_history, moved = trained(tokens)
    keras.distribution.set_distribution(
        keras.distribution.DataParallel(devices=jax.devices("cpu")))
    two, two_losses, two_history, _ = trained(tokens)
    print(json.dumps({
        "difference": max(float(np.max(np.abs(a - b))) for a, b in zip(one, two)),
        "losses": [one_losses, two_losses],
        "history": [one_history, two_history],
        "moved": moved,
    }))
""")


@pytest.mark.slow
def test_hm_lstm_with_prior_and_placement_trains_on_two_devices_as_on_one():
    pytest.importorskip("jax", reason="the jax extra: pip install -e '.[jax]'")
    env = host_devices_environment(2)
    result = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    one_losses, two_losses = found["losses"]
    assert len(one_losses) == 2 and min(one_losses) > 0  # the prior and the placement
    assert two_losses == pytest.approx(one_losses, rel=1e-5)
    assert found["history"][1] == pytest.approx(found["history"][0], rel=1e-5)
    assert found["moved"] > 1e-2  # the steps trained
    assert found["difference"] < 1e-5
