"""Outputs and gradients of every public layer on the running backend.

`python tf_tests/backend_equality.py OUT.npz [WEIGHTS.npz]` builds each
case of the layer battery (`layer_battery.CASES`: every cell in
`keras.layers.RNN`, every sequence layer, head and wrapper), sets the
weights read from `WEIGHTS.npz` (else keeps its own and writes them), and
writes its training-mode outputs, its added losses and the gradients of
a fixed weighted sum of them with respect to every trainable weight,
computed with the backend's own differentiation (`tf.GradientTape`,
`jax.grad` of `stateless_call`, `torch.autograd`).
`tf_tests/test_backend_equality.py` runs it on TensorFlow and on JAX with
the same weights and compares.

Cases that draw random numbers in training (the REINFORCE policy's
samples) differ by backend: they run at inference (`INFERENCE_ONLY`).
"""

import os
import sys

import keras
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import backend_support  # noqa: E402
import layer_battery  # noqa: E402

#: Cases whose training step samples from a backend's random generator.
INFERENCE_ONLY = {
    "RecurrentRecursiveCell_between_tokens": "REINFORCE samples its operations",
    "RNN": "its cell draws dropout masks",
}


def _loss_weights(outputs):
    rng = np.random.default_rng(1)
    return [rng.normal(size=tuple(y.shape)).astype("float32") for y in outputs]


def _as_list(outputs):
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


def _objective(outputs, losses, weights):
    total = sum(keras.ops.sum(keras.ops.cast(y, "float32") * w)
                for y, w in zip(outputs, weights))
    return total + sum(keras.ops.cast(loss, "float32") for loss in losses)


def outputs_and_gradients(model, x, training):
    """`(outputs, losses, gradients)` as NumPy lists."""
    weights = _loss_weights(_as_list(model(x, training=training)))
    outputs, losses, gradients = backend_support.weight_gradients(
        model, lambda y, losses: _objective(_as_list(y), losses, weights),
        x, training=training)
    numpy = keras.ops.convert_to_numpy
    return [numpy(y) for y in _as_list(outputs)], [numpy(v) for v in losses], gradients


def main(out_path, weights_path=None):
    given = dict(np.load(weights_path)) if weights_path else None
    results, weights = {}, {}
    for case in layer_battery.CASES:
        keras.utils.set_random_seed(0)
        model, _ = layer_battery.model_of(case)
        x = layer_battery.case_inputs(case)
        if given is None:
            for i, value in enumerate(model.get_weights()):
                weights[f"{case.name}/{i}"] = value
        else:
            model.set_weights([given[f"{case.name}/{i}"]
                               for i in range(len(model.get_weights()))])
        outputs, losses, gradients = outputs_and_gradients(
            model, x, training=case.name not in INFERENCE_ONLY)
        for kind, values in (("y", outputs), ("loss", losses), ("grad", gradients)):
            for i, value in enumerate(values):
                results[f"{case.name}/{kind}/{i}"] = value
    np.savez(out_path, **results)
    if given is None:
        np.savez(out_path.replace(".npz", "_weights.npz"), **weights)


if __name__ == "__main__":
    main(*sys.argv[1:])
