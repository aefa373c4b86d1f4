"""`ExpressionModel` and the RRNet word LM on JAX train and evaluate as on
TensorFlow.

The child process builds each model, the JAX run from the TensorFlow
run's initial weights (Keras' random draws are the backend's):

* the supervised RRNet encoder (given trees, its policy's log-likelihood
  in the loss) trains three epochs of SGD; the logged losses, the
  evaluation and the trained weights must agree to float32 rounding;
* the REINFORCE encoder (self-critical baseline, operations between
  tokens) and the RRNet LM are evaluated before training, greedy trees,
  which must agree too; then each trains two epochs, sampling its trees
  from its backend's generator, so only the shape of the run is compared:
  finite losses, weights that moved, a seed generator that advanced by
  the reserved draws.
(SGD, not Adam: Adam's first steps are `lr * sign(g)` where a gradient
is rounding noise.)
"""

import textwrap

import backend_support
import numpy as np
import pytest

CHILD = textwrap.dedent("""
    import sys
    import keras, numpy as np
    from hmkeras.models import ExpressionModel, RecurrentRecursiveLanguageModel

    out_path, weights_path = sys.argv[1], sys.argv[2]
    tensorflow = keras.backend.backend() == "tensorflow"
    rng = np.random.default_rng(0)
    tokens = rng.integers(1, 17, size=(16, 7))
    inputs = {"tokens": tokens, "operations": rng.integers(0, 3, size=(16, 7))}
    digits = rng.integers(0, 10, size=(16, 2))
    words = rng.integers(1, 12, size=(8, 6))
    following = np.roll(words, -1, axis=1)
    models = {
        "supervised": ExpressionModel(encoder="rrnet_supervised", units=6,
                                      embedding_dim=4, max_depth=3, seed=1),
        "reinforce": ExpressionModel(encoder="rrnet_reinforce", units=6,
                                     embedding_dim=4, max_depth=3, seed=2),
        "lm": RecurrentRecursiveLanguageModel(vocab_size=12, units=6, max_depth=3,
                                              operations_per_token=3, dropout=0.0, seed=3),
    }
    saved = {} if tensorflow else np.load(weights_path)
    initial = {}
    for name, model in models.items():
        if tensorflow:
            initial.update({f"{name}/{i}": w for i, w in enumerate(model.get_weights())})
        else:
            count = len(model.get_weights())
            model.set_weights([saved[f"{name}/{i}"] for i in range(count)])
        model.compile(keras.optimizers.SGD(0.1))
    if tensorflow:
        np.savez(weights_path, **initial)
    data = {"supervised": (inputs, digits), "reinforce": (inputs, digits),
            "lm": (words, following)}
    found = {}
    for name, model in models.items():
        x, y = data[name]
        logs = model.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
        found.update({f"before/{name}/{k}": np.float64(v) for k, v in logs.items()})
        seed = keras.ops.convert_to_numpy(model.cell.seed_generator.state.value)
        epochs = 3 if name == "supervised" else 2
        history = model.fit(x, y, batch_size=8, epochs=epochs, shuffle=False, verbose=0)
        found[f"seed_moved/{name}"] = np.float64(
            keras.ops.convert_to_numpy(model.cell.seed_generator.state.value)[1] - seed[1])
        weights = model.get_weights()
        moved = max(float(np.max(np.abs(w - v))) for w, v in zip(
            weights, [initial[f"{name}/{i}"] if tensorflow else saved[f"{name}/{i}"]
                      for i in range(len(weights))]))
        found[f"moved/{name}"] = np.float64(moved)
        found[f"loss/{name}"] = np.asarray(history.history["loss"], "float64")
        if name == "supervised":
            found.update({f"weight/{i}": w for i, w in enumerate(weights)})
            logs = model.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
            found.update({f"after/{k}": np.float64(v) for k, v in logs.items()})
    np.savez(out_path, **found)
""")


@pytest.mark.slow
def test_rrnet_models_on_jax_train_as_on_tensorflow(tmp_path):
    pytest.importorskip("jax", reason="the jax extra: pip install -e '.[jax]'")
    want, got = backend_support.jax_run_against_tensorflow(CHILD, tmp_path)
    same = [k for k in want.files if k.split("/")[0] in ("before", "weight", "after")
            or k == "loss/supervised"]
    assert {"before/reinforce/accuracy", "before/lm/loss", "after/policy_loss"} <= set(same)
    for key in same:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-4, atol=5e-5, err_msg=key)
    for run in (want, got):
        for name in ("supervised", "reinforce", "lm"):
            assert np.all(np.isfinite(run[f"loss/{name}"])), name
            assert run[f"moved/{name}"] > 1e-4, name
        # Two epochs of two batches, each reserving (7 steps + 1) * 2 draws
        # (operations between tokens: two draws per step).
        assert run["seed_moved/reinforce"] == 2 * 2 * (7 + 1) * 2
        assert run["seed_moved/lm"] == 2 * 1 * (6 + 1) * 2
        assert run["seed_moved/supervised"] == 0
