"""Export a handwriting model as a stateless step function for drawing.

The handwriting counterpart of `hmkeras.training.step_export`: a SavedModel
whose signatures carry the RNN state explicitly, in and out,

* `step(strokes[batch, 3], state_0[batch, s_0], ..., state_k[batch, s_k])
  -> {"params": [batch, 6M+1], "state_0": ..., ..., "state_k": ...}`: reads
  one `(dx, dy, pen_up)` step per row (normalized offsets) and returns the
  raw mixture parameters of the next step (packed layout of
  `hmkeras.heads.mixture_density_output`) and the new state; for
  hierarchical cells also `"boundaries"` `[batch, L-1]`;
* `zero_state(batch_size) -> {"state_0": ..., ...}`;
* `info() -> {"config_json", "offset_mean", "offset_std", "num_states"}`:
  the `HandwritingModelConfig` JSON and the normalization of the offsets
  (`hmkeras.data.stroke_offsets.denormalize_offsets`).

Sampling stays outside the graph (`hmkeras.heads.mixture_density_output
.sample_mixture` on `params`), so bias, temperature and seed are chosen
at drawing time; `examples/sample_handwriting.py` does this.
`generate_strokes` draws from a loaded export; its loop, `draw_strokes`,
takes any step function, and `HandwritingModel.draw` runs it on the
model itself (on any backend).
"""

import numpy as np
import tensorflow as tf

from hmkeras.data.stroke_offsets import denormalize_offsets
from hmkeras.heads.mixture_density_output import sample_mixture
from hmkeras.training.step_export import state_name


class _HandwritingStepModule(tf.Module):
    """The traceable object that `export_handwriting_step_model` saves."""

    def __init__(self, model, offset_mean, offset_std):
        super().__init__(name="handwriting_step")
        self.network = model.network
        self.variables_list = list(model.network.variables)
        sizes = list(model.state_sizes)
        config_json = model.config.to_json()
        hierarchical = model.is_hierarchical
        network = self.network
        mean = [float(v) for v in offset_mean]
        std = [float(v) for v in offset_std]

        stroke_spec = tf.TensorSpec([None, 3], tf.float32, name="strokes")
        state_specs = [tf.TensorSpec([None, size], tf.float32, name=state_name(i))
                       for i, size in enumerate(sizes)]

        # No AutoGraph: nothing here branches on tensors, and AutoGraph's
        # re-reading of the sources is not needed.
        @tf.function(input_signature=[stroke_spec, *state_specs], autograph=False)
        def step(strokes, *state):
            params, rnn_outputs, *new_state = network(
                [strokes[:, None, :], *state], training=False)
            out = {"params": tf.cast(params[:, 0], tf.float32)}
            for i, value in enumerate(new_state):
                out[state_name(i)] = value
            if hierarchical:
                out["boundaries"] = model.boundaries(rnn_outputs)[:, 0]
            return out

        batch_spec = tf.TensorSpec([], tf.int32, name="batch_size")

        @tf.function(input_signature=[batch_spec], autograph=False)
        def zero_state(batch_size):
            return {state_name(i): tf.zeros([batch_size, size], tf.float32)
                    for i, size in enumerate(sizes)}

        @tf.function(input_signature=[], autograph=False)
        def info():
            return {
                "config_json": tf.constant(config_json),
                "offset_mean": tf.constant(mean, tf.float32),
                "offset_std": tf.constant(std, tf.float32),
                "num_states": tf.constant(len(sizes)),
            }

        self.step = step
        self.zero_state = zero_state
        self.info = info


def export_handwriting_step_model(model, path, offset_mean=(0.0, 0.0),
                                  offset_std=(1.0, 1.0)):
    """Writes the step SavedModel of `model` to `path`.

    Args:
        model: A `hmkeras.models.handwriting_model.HandwritingModel`.
        path: Output directory.
        offset_mean, offset_std: The `(2,)` normalization of the offsets the
            model was trained on (stored for drawing).

    Returns:
        `path`.

    Examples:

        >>> import tempfile, numpy as np, tensorflow as tf
        >>> from hmkeras.models.handwriting_model import HandwritingModel
        >>> from hmkeras.training import export_handwriting_step_model
        >>> from hmkeras.training.handwriting_step_export import generate_strokes
        >>> model = HandwritingModel(units=4, output_units=4, num_components=2)
        >>> path = export_handwriting_step_model(model, tempfile.mkdtemp())
        >>> loaded = tf.saved_model.load(path)
        >>> state = loaded.signatures["zero_state"](batch_size=tf.constant(1))
        >>> out = loaded.signatures["step"](strokes=tf.zeros([1, 3]), **state)
        >>> tuple(out["params"].shape), tuple(out["boundaries"].shape)
        ((1, 13), (1, 2))
        >>> lines = generate_strokes(loaded, num_steps=5, num_samples=2, bias=1.0)
        >>> [line.shape for line in lines]
        [(5, 3), (5, 3)]
    """
    for name, value in (("offset_mean", offset_mean), ("offset_std", offset_std)):
        if np.shape(value) != (2,) or not np.all(np.isfinite(value)):
            raise ValueError(f"`{name}` must be two finite numbers. Received: {value!r}")
    module = _HandwritingStepModule(model, offset_mean, offset_std)
    step = module.step.get_concrete_function()
    tf.saved_model.save(module, path, signatures={
        "step": step,
        "serving_default": step,
        "zero_state": module.zero_state.get_concrete_function(),
        "info": module.info.get_concrete_function(),
    })
    return path


def generate_strokes(loaded, num_steps, num_samples=1, bias=0.0, temperature=1.0,
                     seed=0):
    """Draws handwriting from a loaded step model (`tf.saved_model.load`).

    Every row starts from the zero state and the step "(0, 0) raw offset,
    pen up" (a stroke is about to begin), then feeds back its own samples
    (`hmkeras.heads.mixture_density_output.sample_mixture` with Graves'
    `bias` and `temperature`).

    Args:
        loaded: The loaded SavedModel of `export_handwriting_step_model`.
        num_steps: Steps to draw per row.
        num_samples: Rows drawn together.
        bias, temperature, seed: Of the sampler.

    Returns:
        List of `num_samples` `(num_steps, 3)` float32 arrays of raw
        (denormalized) `(dx, dy, pen_up)`.
    """
    info = loaded.signatures["info"]()
    step = loaded.signatures["step"]

    def read(strokes, state):
        out = step(strokes=tf.convert_to_tensor(strokes), **state)
        return out["params"], {k: v for k, v in out.items() if k.startswith("state_")}

    state = loaded.signatures["zero_state"](batch_size=tf.constant(num_samples))
    offsets = (info["offset_mean"].numpy(), info["offset_std"].numpy())
    return draw_strokes(read, state, offsets, num_steps,
                        dict(bias=bias, temperature=temperature, seed=seed))


def draw_strokes(read, state, offsets, num_steps, sampler):
    """The drawing loop of `generate_strokes` (and of `HandwritingModel.
    draw`, on any backend) over a step function of its own.

    Args:
        read: `(strokes, state) -> (params, state)`: the mixture parameters
            `(rows, 6M+1)` of the next step after the `(rows, 3)`
            normalized `strokes`, and the new state.
        state: The rows' zero state, as `read` takes it.
        offsets: `(mean, std)`, the normalization of the offsets.
        num_steps: Steps to draw per row.
        sampler: `sample_mixture`'s `bias` and `temperature`, and the
            `seed` of a `keras.random.SeedGenerator`.

    Returns:
        List of one `(num_steps, 3)` float32 array per row of raw
        (denormalized) `(dx, dy, pen_up)`.
    """
    import keras

    mean, std = (np.asarray(v, np.float32) for v in offsets)
    rows = int(np.shape(keras.tree.flatten(state)[0])[0])
    start = np.concatenate([-mean / std, [1.0]]).astype(np.float32)
    x = np.tile(start, (rows, 1))
    generator = keras.random.SeedGenerator(sampler["seed"])
    drawn = []
    for _ in range(num_steps):
        params, state = read(x, state)
        x = keras.ops.convert_to_numpy(sample_mixture(
            params, bias=sampler["bias"], temperature=sampler["temperature"],
            seed=generator)).astype(np.float32)
        drawn.append(x)
    lines = np.stack(drawn, axis=1) if drawn else np.zeros((rows, 0, 3), np.float32)
    return [denormalize_offsets(line, mean, std) for line in lines]
