"""`TruncatedBPTTModel` on JAX trains as on TensorFlow.

The child process trains the default char LM (HM-LSTM, the prior and the
placement in its network) for three epochs of carried-state truncated
BPTT (nine steps of SGD), with and without row ids; the JAX run starts
from the TensorFlow run's initial weights (Keras' random draws are the
backend's).  The logged losses, BPC and boundary rates, the trained
weights and the carried state must agree to float32 rounding.  (Adam
would not do: its first steps are `lr * sign(g)` where a gradient is
rounding noise around 0, and the two backends' noise has other signs.)
"""

import textwrap

import backend_support
import numpy as np
import pytest

CHILD = textwrap.dedent("""
    import sys
    import keras, numpy as np
    from hmkeras.models.char_language_model import CharLanguageModel
    from hmkeras.training.stateful_training import TruncatedBPTTModel

    out_path, weights_path = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(5)
    stream = rng.integers(0, 7, size=(4, 3 * 10 + 1)).astype("int32")
    x = np.concatenate([stream[:, k * 10:(k + 1) * 10] for k in range(3)])
    y = np.concatenate([stream[:, k * 10 + 1:(k + 1) * 10 + 1] for k in range(3)])
    rows = np.tile(np.arange(4, dtype="int32"), 3)
    found = {}
    for name, inputs in (("plain", x), ("row_ids", (x, rows))):
        lm = CharLanguageModel(vocab_size=7, units=8, num_layers=3, embedding_dim=4,
                               output_units=8, seed=1)
        if keras.backend.backend() == "tensorflow":
            np.savez(weights_path.replace(".npz", f"_{name}.npz"), *lm.network.get_weights())
        else:
            saved = np.load(weights_path.replace(".npz", f"_{name}.npz"))
            lm.network.set_weights([saved[f"arr_{i}"] for i in range(len(saved.files))])
        model = TruncatedBPTTModel(lm, batch_size=4)
        model.compile(keras.optimizers.SGD(0.1), loss=model.loss_function())
        history = model.fit(inputs, y, batch_size=4, epochs=3, shuffle=False, verbose=0)
        for key, values in history.history.items():
            found[f"{name}/history/{key}"] = np.asarray(values, "float64")
        for i, weight in enumerate(lm.network.get_weights()):
            found[f"{name}/weight/{i}"] = weight
        for i, value in enumerate(model.carried_state):
            found[f"{name}/carried/{i}"] = keras.ops.convert_to_numpy(value)
    np.savez(out_path, **found)
""")


@pytest.mark.slow
def test_jax_training_equals_tensorflow(tmp_path):
    pytest.importorskip("jax", reason="the jax extra: pip install -e '.[jax]'")
    want, got = backend_support.jax_run_against_tensorflow(CHILD, tmp_path)
    assert {"plain/history/z_rate_1", "row_ids/history/bpc"} <= set(want.files)
    backend_support.assert_runs_agree(want, got)
    # The steps trained and carried a state.
    assert not np.allclose(want["plain/history/loss"][0], want["plain/history/loss"][-1])
    assert np.abs(want["plain/carried/0"]).sum() > 0
