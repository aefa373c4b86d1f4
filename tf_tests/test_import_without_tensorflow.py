"""`import hmkeras` on JAX with TensorFlow hidden: the layers work, the
TensorFlow-only parts say in one line what they need.

The child process blocks `tensorflow` and `tensorflow_datasets` in
`sys.modules` before anything is imported, so any import of them fails
as it would where they are not installed.
"""

import os
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent("""
    import sys
    sys.modules["tensorflow"] = None
    sys.modules["tensorflow_datasets"] = None
    import keras, numpy as np
    import hmkeras
    assert keras.backend.backend() == "jax"
    x = np.random.default_rng(0).normal(size=(4, 6, 3)).astype("float32")
    for layer in (hmkeras.HMLSTM(4, num_layers=3, return_sequences=True),
                  hmkeras.HMRNN(4, num_layers=2, return_sequences=True),
                  hmkeras.MultiplicativeLSTM(4, return_sequences=True),
                  hmkeras.RNN(hmkeras.HMLSTMCell(4, dropout=0.2, seed=1),
                              return_sequences=True),
                  hmkeras.RNN(hmkeras.AveragingWrapper(hmkeras.HMRNNCell(4)),
                              return_sequences=True)):
        assert np.all(np.isfinite(keras.ops.convert_to_numpy(layer(x, training=True))))
    rnn = hmkeras.HMLSTM(4, num_layers=3, return_sequences=True)
    model = keras.Sequential([keras.Input((6, 3)), rnn,
                              hmkeras.GatedOutputEmbedding(4, layer_sizes=rnn.cell.units),
                              keras.layers.Dense(1)])
    model.compile("adam", "mse", jit_compile=True)
    history = model.fit(x, x[..., :1], epochs=2, verbose=0, callbacks=[
        hmkeras.SlopeAnnealing(lambda epoch: 1.0 + epoch),
        hmkeras.BoundaryMonitor(probe=x, verbose=0)])
    assert history.history["slope"] == [1.0, 2.0]
    assert "z_rate_1" in history.history
    for read in (lambda: hmkeras.CharLanguageModel, lambda: hmkeras.data,
                 lambda: hmkeras.export_step_model):
        try:
            read()
        except ImportError as error:
            print("REFUSED", error)
    try:
        from hmkeras.data import Brent
    except ImportError as error:
        print("REFUSED", error)
    print("OK")
""")


@pytest.mark.slow
def test_layers_and_callbacks_on_jax_without_tensorflow():
    pytest.importorskip("jax", reason="the jax extra: pip install -e '.[jax]'")
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    result = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[-1] == "OK"
    refused = [line for line in lines if line.startswith("REFUSED")]
    assert refused == [
        f"REFUSED {name} needs TensorFlow, which is not installed: "
        "pip install 'hmkeras[cpu]' (or 'hmkeras[gpu]')"
        for name in ("hmkeras.CharLanguageModel", "hmkeras.data",
                     "hmkeras.export_step_model", "hmkeras.data")
    ]
