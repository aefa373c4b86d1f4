r"""Draws handwriting from a step model exported by `examples/iam_ondb.py`.

The SavedModel (`hmkeras.training.handwriting_step_export`) has no hidden
state: `generate_strokes` asks it for the zero state, feeds one
`(dx, dy, pen_up)` step at a time, samples the next step from the returned
mixture parameters (Graves' bias sharpens them) and carries the state
itself. The lines go to a PNG (and, with --output_npz, to a NumPy file).

    python examples/sample_handwriting.py \
        --model_dir=runs/handwriting_embedded_hmlstm --bias=1.0 --steps=500 \
        --num_samples=4

The PNG goes next to the run (`<run>/sampled_handwriting.png`, the run
being the directory that holds step_model/), or to --output.
"""

import math
import os

from absl import flags
import numpy as np

from command_line import FlagError  # examples/command_line.py
from command_line import absl_main
from command_line import run_script
from run_directory import find_step_model

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "The exported step SavedModel, or the run "
                    "directory of examples/iam_ondb.py that holds it (step_model/).")
flags.DEFINE_integer("steps", 400, "Steps per line.", lower_bound=1)
flags.DEFINE_integer("num_samples", 4, "Lines to draw.", lower_bound=1)
flags.DEFINE_float("bias", 1.0, "Graves' sampling bias (>= 0; 0: no sharpening).")
flags.DEFINE_float("temperature", 1.0, "Sampling temperature (> 0).")
flags.DEFINE_integer("seed", 0, "Seed of the sampler.", lower_bound=0)
flags.DEFINE_string("output", None, "PNG to write (default: "
                    "sampled_handwriting.png in the run directory).")
flags.DEFINE_string("output_npz", None, "Also save the lines (raw offsets) here.")
flags.register_validator("bias", lambda v: math.isfinite(v) and v >= 0,
                         message="must be a finite number >= 0")
flags.register_validator("temperature", lambda v: math.isfinite(v) and v > 0,
                         message="must be a finite number > 0")
flags.mark_flag_as_required("model_dir")


def draw(model_dir, steps, num_samples, bias, temperature, seed, output=None,
         output_npz=None):
    """Samples `num_samples` lines and writes them to `output` (None:
    `default_output`); returns the lines and the PNG's path."""
    step_model = find_step_model(model_dir, "handwriting")  # before TensorFlow loads
    import tensorflow as tf

    from hmkeras.analysis.handwriting_plot import plot_handwriting
    from hmkeras.training.handwriting_step_export import generate_strokes

    loaded = tf.saved_model.load(step_model)
    if "offset_mean" not in loaded.signatures["info"]():  # older than run_kind.json
        raise FlagError(
            f"--model_dir={model_dir!r} holds a step model without stroke offsets, "
            "not one of examples/iam_ondb.py; for text use examples/sample.py.")
    output = output or default_output(step_model)
    lines = generate_strokes(loaded, steps, num_samples, bias=bias,
                             temperature=temperature, seed=seed)
    plot_handwriting(output, lines, [f"sample {i + 1}, bias {bias}, temperature "
                                     f"{temperature}" for i in range(len(lines))])
    if output_npz:
        np.savez(output_npz, *lines)
    return lines, output


def default_output(step_model):
    """`sampled_handwriting.png` in the run directory that holds `step_model`
    (in `step_model` itself when it is not a run's step_model/)."""
    step_model = os.path.normpath(step_model)
    run_dir = (os.path.dirname(step_model)
               if os.path.basename(step_model) == "step_model" else step_model)
    return os.path.join(run_dir, "sampled_handwriting.png")


def draw_from_flags():
    """The command: draw the lines, write the PNG, say what it holds."""
    lines, output = draw(FLAGS.model_dir, FLAGS.steps, FLAGS.num_samples, FLAGS.bias,
                         FLAGS.temperature, FLAGS.seed, FLAGS.output, FLAGS.output_npz)
    pen_ups = sum(int(line[:, 2].sum()) for line in lines)
    print(f"wrote {output}: {len(lines)} lines of {FLAGS.steps} steps, "
          f"{pen_ups} pen-ups")


main = absl_main(draw_from_flags)

if __name__ == "__main__":
    run_script(main)
