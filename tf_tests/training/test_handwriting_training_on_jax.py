"""`HandwritingTrainer` on JAX trains and evaluates as on TensorFlow.

The child process trains a small HM-LSTM handwriting model with its
boundary prior for three epochs of SGD on padded lines (six steps) and
evaluates it; the JAX run starts from the TensorFlow run's initial
weights (Keras' random draws are the backend's). The logged losses,
per-sequence NLL and boundary rates, the evaluation's logs and the
trained weights must agree to float32 rounding. (SGD, not Adam: Adam's
first steps are `lr * sign(g)` where a gradient is rounding noise.)
"""

import textwrap

import backend_support
import numpy as np
import pytest

CHILD = textwrap.dedent("""
    import sys
    import keras, numpy as np
    from hmkeras.models.handwriting_model import HandwritingModel, pad_sequences
    from hmkeras.training.handwriting_training import HandwritingTrainer

    out_path, weights_path = sys.argv[1], sys.argv[2]
    rng = np.random.default_rng(4)
    lines = []
    for n in (9, 5, 7, 12):
        line = rng.normal(size=(n, 3)).astype("float32")
        line[:, 2] = rng.random(n) < 0.3
        lines.append(line)
    x, y, w = pad_sequences(lines)
    model = HandwritingModel(units=6, output_units=5, num_components=2, seed=3,
                             boundary_prior="rate", segment_lengths=[4.0, 9.0])
    if keras.backend.backend() == "tensorflow":
        np.savez(weights_path, *model.network.get_weights())
    else:
        saved = np.load(weights_path)
        model.network.set_weights([saved[f"arr_{i}"] for i in range(len(saved.files))])
    trainer = HandwritingTrainer(model)
    trainer.compile(keras.optimizers.SGD(0.05))
    history = trainer.fit(x, y, sample_weight=w, batch_size=2, epochs=3, shuffle=False,
                          verbose=0)
    found = {f"history/{k}": np.asarray(v, "float64") for k, v in history.history.items()}
    logs = trainer.evaluate(x, y, sample_weight=w, batch_size=4, verbose=0, return_dict=True)
    found.update({f"evaluate/{k}": np.float64(v) for k, v in logs.items()})
    found.update({f"weight/{i}": v for i, v in enumerate(model.network.get_weights())})
    np.savez(out_path, **found)
""")


@pytest.mark.slow
def test_jax_training_equals_tensorflow(tmp_path):
    pytest.importorskip("jax", reason="the jax extra: pip install -e '.[jax]'")
    want, got = backend_support.jax_run_against_tensorflow(CHILD, tmp_path)
    assert {"history/z_rate_2", "history/nll_per_sequence", "evaluate/loss"} <= set(want.files)
    backend_support.assert_runs_agree(want, got)
    # The steps trained: the loss moved, and so did the weights.
    assert not np.allclose(want["history/loss"][0], want["history/loss"][-1])
