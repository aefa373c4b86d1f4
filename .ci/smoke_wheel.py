"""Smoke test of an installed hmkeras (a wheel or an sdist in a fresh venv).

    python .ci/smoke_wheel.py [EXPECTED_VERSION]

Run it from outside the checkout (or with -I) so that `import hmkeras`
finds the installed package, not the source tree. It checks that the
package imports from site-packages, that `hmkeras.__version__` matches the
installed distribution's metadata (and EXPECTED_VERSION when given), and
that an `HMLSTMCell(8)` in `keras.layers.RNN` runs forward over a tiny
batch, takes one training step with a finite loss and survives a `.keras`
save and reload with equal outputs. Exit status 0 on success.
"""

import importlib.metadata
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main(argv):
    import numpy as np
    import keras
    import hmkeras

    installed = importlib.metadata.version("hmkeras")
    assert hmkeras.__version__ == installed, (hmkeras.__version__, installed)
    if len(argv) > 1:
        assert hmkeras.__version__ == argv[1], (hmkeras.__version__, argv[1])
    assert "site-packages" in hmkeras.__file__, hmkeras.__file__

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 5, 3)).astype("float32")
    y = rng.normal(size=(2, 4)).astype("float32")
    cell = hmkeras.HMLSTMCell(8)
    model = keras.Sequential([
        keras.Input((5, 3)),
        keras.layers.RNN(cell),
        keras.layers.Dense(4),
    ])
    hidden = model.layers[0](x)
    assert tuple(hidden.shape) == (2, cell.output_size), hidden.shape
    assert np.all(np.isfinite(keras.ops.convert_to_numpy(hidden)))

    model.compile(optimizer="adam", loss="mse")
    loss = model.train_on_batch(x, y)
    assert np.isfinite(loss), loss

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "smoke.keras")
        model.save(path)
        reloaded = keras.models.load_model(path)
    np.testing.assert_allclose(reloaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6, atol=1e-6)
    print(f"hmkeras {hmkeras.__version__} from {os.path.dirname(hmkeras.__file__)}: "
          f"RNN(HMLSTMCell(8)) output {tuple(hidden.shape)}, one training step "
          f"(loss {float(loss):.4f}), .keras round trip equal: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
