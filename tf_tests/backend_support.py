"""What the tests need to run on every Keras backend.

`compiled(layer)` is the compiled call a user of the backend would make:
`tf.function(jit_compile=True)` on TensorFlow, `jax.jit` of the layer's
`stateless_call` on JAX (the seed generators' new state written back, as
Keras' own JAX trainer does), the eager call on PyTorch.
"""

import keras
import numpy as np

BACKEND = keras.backend.backend()


def to_numpy(value):
    """`value` as a NumPy array: a backend tensor or variable through
    `keras.ops.convert_to_numpy` (which detaches a PyTorch tensor that
    requires grad, where `np.asarray` raises), a list or tuple element by
    element, anything else as `np.asarray` reads it (dtype kept)."""
    if isinstance(value, (list, tuple)):
        return np.asarray([to_numpy(v) for v in value])
    if isinstance(value, (np.ndarray, np.generic, int, float, bool)):
        return np.asarray(value)
    return keras.ops.convert_to_numpy(value)


def compiled(layer, training=True):
    """`fn(x) -> NumPy output` of `layer(x, training=training)`, compiled."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        function = tf.function(lambda x: layer(x, training=training), jit_compile=True)
        return lambda x: keras.ops.convert_to_numpy(function(x))
    if BACKEND == "jax":
        import jax

        @jax.jit
        def function(trainable, non_trainable, x):
            return layer.stateless_call(trainable, non_trainable, x, training=training)

        def run(x):
            outputs, non_trainable = function(
                [v.value for v in layer.trainable_variables],
                [v.value for v in layer.non_trainable_variables],
                x,
            )
            for variable, value in zip(layer.non_trainable_variables, non_trainable):
                variable.assign(value)
            return np.asarray(outputs)

        return run
    return lambda x: keras.ops.convert_to_numpy(layer(x, training=training))


def input_gradients(function, *arrays):
    """Gradients of the scalar `function(*tensors)` with respect to each
    input, as NumPy arrays, by the backend's own differentiation
    (`traced_gradients`, evaluated)."""
    _, gradients = traced_gradients(lambda *tensors: (function(*tensors), None), *arrays)
    return [to_numpy(g) for g in gradients]


def weight_gradients(layer, objective, *args, **kwargs):
    """`(outputs, losses, gradients)` of `layer(*args, **kwargs)`: the
    gradients of `objective(outputs, losses)` (a scalar) with respect to
    every trainable weight, in `layer.trainable_variables` order (zeros
    for a weight the objective does not use)."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            outputs = layer(*args, **kwargs)
            losses = list(layer.losses)
            value = objective(outputs, losses)
        gradients = tape.gradient(value, layer.trainable_variables)
    elif BACKEND == "jax":
        import jax

        non_trainable = [v.value for v in layer.non_trainable_variables]

        def value_of(trainable):
            outputs, _, losses = layer.stateless_call(
                trainable, non_trainable, *args, return_losses=True, **kwargs)
            return objective(outputs, losses), (outputs, losses)

        (_, (outputs, losses)), gradients = jax.value_and_grad(value_of, has_aux=True)(
            [v.value for v in layer.trainable_variables])
    else:
        outputs = layer(*args, **kwargs)
        losses = list(layer.losses)
        objective(outputs, losses).backward()
        gradients = [v.value.grad for v in layer.trainable_variables]
    gradients = [np.zeros(v.shape, "float32") if g is None else keras.ops.convert_to_numpy(g)
                 for v, g in zip(layer.trainable_variables, gradients)]
    return outputs, losses, gradients


def variable_gradients(layer, variables, objective, *args, **kwargs):
    """`(outputs, losses, gradients)` of `layer(*args, **kwargs)`: the
    gradients of `objective(outputs, losses)` (a scalar) with respect to
    each of `variables` (floating-point variables of the built `layer`,
    trainable or not: a cell's non-trainable slope too), as NumPy arrays in
    that order.  On TensorFlow a variable the objective does not reach has
    the gradient `None` (JAX gives zeros)."""
    variables = list(variables)
    if BACKEND == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            tape.watch([v.value for v in variables])
            outputs = layer(*args, **kwargs)
            losses = list(layer.losses)
            value = objective(outputs, losses)
        gradients = tape.gradient(value, [v.value for v in variables])
    elif BACKEND == "jax":
        import jax

        def value_of(values):
            chosen = {id(v): value for v, value in zip(variables, values)}
            trainable = [chosen.get(id(v), v.value) for v in layer.trainable_variables]
            non_trainable = [chosen.get(id(v), v.value) for v in layer.non_trainable_variables]
            outputs, _, losses = layer.stateless_call(
                trainable, non_trainable, *args, return_losses=True, **kwargs)
            return objective(outputs, losses), (outputs, losses)

        (_, (outputs, losses)), gradients = jax.value_and_grad(value_of, has_aux=True)(
            [v.value for v in variables])
    else:
        import torch

        values = [v.value for v in variables]
        frozen = [t for t in values if not t.requires_grad]  # a non-trainable slope
        for tensor in frozen:
            tensor.requires_grad_(True)
        try:
            outputs = layer(*args, **kwargs)
            losses = list(layer.losses)
            gradients = torch.autograd.grad(objective(outputs, losses), values,
                                            allow_unused=True)
        finally:
            for tensor in frozen:
                tensor.requires_grad_(False)
    gradients = [None if g is None else keras.ops.convert_to_numpy(g) for g in gradients]
    return outputs, losses, gradients


# The ways a test runs a function: eagerly, and compiled as a user of the
# backend would (`in_mode`).
MODES = {"tensorflow": ("eager", "graph", "xla"), "jax": ("eager", "jit")}.get(BACKEND, ("eager",))


def in_mode(function, mode):
    """`function` as it runs in `mode` (one of `MODES`): itself ("eager"),
    a `tf.function` ("graph"), an XLA-compiled `tf.function` ("xla") or
    `jax.jit` ("jit")."""
    if mode == "eager":
        return function
    if mode in ("graph", "xla"):
        import tensorflow as tf

        return tf.function(function, jit_compile=(mode == "xla"))
    if mode == "jit":
        import jax

        return jax.jit(function)
    raise ValueError(f"unknown mode {mode!r}")


def traced_gradients(function, *tensors):
    """`(aux, gradients)` of `function(*tensors) -> (scalar, aux)`: the
    gradients of the scalar with respect to each tensor, as tensors, by the
    backend's differentiation; traceable, so that it runs inside `in_mode`
    (unlike `input_gradients`, which returns NumPy arrays).  On TensorFlow
    a tensor the scalar does not depend on has the gradient `None`."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        tensors = [tf.convert_to_tensor(t) for t in tensors]
        with tf.GradientTape() as tape:
            for tensor in tensors:
                tape.watch(tensor)
            value, aux = function(*tensors)
        return aux, tape.gradient(value, tensors)
    if BACKEND == "jax":
        import jax

        (_, aux), grads = jax.value_and_grad(
            function, argnums=tuple(range(len(tensors))), has_aux=True)(
                *[keras.ops.convert_to_tensor(t) for t in tensors])
        return aux, list(grads)
    import torch

    tensors = [torch.tensor(np.asarray(t), requires_grad=True) for t in tensors]
    value, aux = function(*tensors)
    return aux, list(torch.autograd.grad(value, tensors, allow_unused=True))


# Whether a "float64" layer computes in float64 throughout: on TensorFlow
# only.  On JAX without x64 float64 arrays and variables are float32; with
# x64 (`JAX_ENABLE_X64=1`) Keras' own type promotion still maps float64 to
# float32 on every backend but TensorFlow (`keras.src.backend.common.dtypes`,
# so `ops.mean` of a float64 array runs in float32).  The tests take float32
# tolerances there.
HAS_FLOAT64 = BACKEND == "tensorflow"


#: `keras.layers.RNN` arguments for a cell that draws at every step
#: (`boundary_mode="sample"`, REINFORCE): on JAX only an eager, unrolled
#: loop gives each step its own draws (a traced one is refused).
DRAWING_LOOP = {"unroll": True} if BACKEND == "jax" else {}


def host_devices_environment(count):
    """`os.environ` for a child process whose JAX sees `count` host CPU
    devices: `--xla_force_host_platform_device_count` appended to the
    `XLA_FLAGS` the tests run with (the environment's own kept).
    It must be set before JAX starts, so only a new process can have it."""
    import os

    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={count}"
    return {**os.environ, "KERAS_BACKEND": "jax", "XLA_FLAGS": flags.strip()}


def jax_run_against_tensorflow(child, tmp_path):
    """`(want, got)`: the `.npz` files that the script `child` wrote when
    run as `python -c child OUT WEIGHTS`, first with KERAS_BACKEND=tensorflow
    (it saves its initial weights to WEIGHTS), then with KERAS_BACKEND=jax
    (it loads them), each in a process of its own. Asserts that both
    runs succeeded and wrote the same keys."""
    import os
    import subprocess
    import sys

    weights = str(tmp_path / "initial.npz")
    outputs = {}
    for backend in ("tensorflow", "jax"):
        outputs[backend] = str(tmp_path / f"{backend}.npz")
        result = subprocess.run(
            [sys.executable, "-c", child, outputs[backend], weights],
            env={**os.environ, "KERAS_BACKEND": backend}, capture_output=True, text=True,
            timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
    want, got = np.load(outputs["tensorflow"]), np.load(outputs["jax"])
    assert set(got.files) == set(want.files)
    return want, got


def assert_runs_agree(want, got, rtol=1e-4, atol=5e-5):
    """Every array of the two `.npz` runs agrees to float32 rounding."""
    for key in sorted(want.files):
        np.testing.assert_allclose(got[key], want[key], rtol=rtol, atol=atol, err_msg=key)
