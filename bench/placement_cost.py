r"""The train-step cost of each boundary placement of the char LM.

The model of `examples/ptb_char.py` on its word-discovery preset
(`--preset=brent`: 3 x 256 units, batch 32 x 100, unsegmented; any flag
of the example applies, `--units=128 --output_units=128` for the model of
the figures, `--tiny` for a smoke run), built from the
example's own flags for every `--boundary_placement` form
(`none`, `entropy`, `surprisal`, `bidirectional`; each with the rest of
the unsegmented defaults the example gives that form: with a placement,
detectors that read the updated state and the sigmoid's straight-through
gradient; with `none`, Chung et al.'s), each trained the way the example
trains it (`TruncatedBPTTModel`, Adam with gradient clipping, the state
carried from step to step) on random symbols of the corpus' vocabulary
size. `bidirectional` is the only form with a model of its own, the
backward LSTM language model, which runs in its training passes.

All forms live in one process: all are built, then each is warmed up
(`--warmup` steps: tracing, first allocations; each build sets the
random seed, and a new seed makes TensorFlow trace the train functions
of the models built before it again), then `--rounds` rounds time
`--steps` train steps of every form in turn, the order rotating from
round to round. The figure is the median step time over the rounds, and
each form's ratio to `--baseline` (the median of the per-round ratios).
Measure on a quiet machine.

    python bench/placement_cost.py
    python bench/placement_cost.py --tiny --rounds=1 --steps=1 --warmup=1
"""

import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app  # noqa: E402
from absl import flags  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "examples"))
import char_lm_flags  # noqa: E402  (the example's presets, flags and model config)

FLAGS = flags.FLAGS
FORMS = ("none", "entropy", "surprisal", "bidirectional")
flags.DEFINE_integer("vocab", 50, "Symbols (Brent's phonemes: 50 with the line end).",
                     lower_bound=2)
flags.DEFINE_integer("rounds", 5, "Interleaved timing rounds.", lower_bound=1)
flags.DEFINE_integer("steps", 4, "Timed train steps per form and round.", lower_bound=1)
flags.DEFINE_integer("warmup", 3, "Untimed steps per form before the rounds.",
                     lower_bound=1)
flags.DEFINE_enum("baseline", "surprisal", list(FORMS), "The form the ratios divide by.")


def trainer_for(form):
    """The example's model for `--boundary_placement=form`, compiled as
    `hmkeras.training.truncated_bptt_run` compiles it."""
    import keras

    from hmkeras.models.char_language_model import CharLanguageModel
    from hmkeras.training.stateful_training import TruncatedBPTTModel

    FLAGS["boundary_placement"].parse(form)
    s = char_lm_flags.resolve_settings(FLAGS)
    keras.utils.set_random_seed(s["seed"])
    lm = CharLanguageModel(char_lm_flags.model_config(s, FLAGS.vocab))
    trainer = TruncatedBPTTModel(lm, batch_size=s["batch_size"])
    trainer.compile(keras.optimizers.Adam(s["learning_rate"], global_clipnorm=s["clip_norm"]),
                    loss=trainer.loss_function())
    return trainer, (s["batch_size"], s["seq_len"])


def timed_steps(trainer, batches):
    start = time.perf_counter()
    for x, y in batches:
        trainer.train_on_batch(x, y)
    return (time.perf_counter() - start) / len(batches)


def main(argv):
    del argv
    if not FLAGS["preset"].present:
        FLAGS["preset"].parse("brent")
    if not FLAGS["dataset"].present and FLAGS.preset != "brent":
        raise app.UsageError("--preset must be brent (unsegmented text) unless "
                             "--dataset names an unsegmented corpus.")
    rng = np.random.default_rng(0)
    trainers, batches = {}, {}
    for form in FORMS:
        trainers[form], shape = trainer_for(form)
        stream = rng.integers(0, FLAGS.vocab, (FLAGS.warmup + FLAGS.steps, *shape))
        batches[form] = [(x.astype("int32"), np.roll(x, -1, axis=1).astype("int32"))
                         for x in stream]
    for form in FORMS:  # once every model is built
        timed_steps(trainers[form], batches[form][: FLAGS.warmup])
    times = {form: [] for form in FORMS}
    for round_index in range(FLAGS.rounds):
        order = FORMS[round_index % len(FORMS):] + FORMS[: round_index % len(FORMS)]
        for form in order:
            times[form].append(timed_steps(trainers[form], batches[form][FLAGS.warmup:]))
    print(f"preset {FLAGS.preset}, batch x seq_len {shape[0]} x {shape[1]}, "
          f"{FLAGS.rounds} rounds of {FLAGS.steps} steps")
    print(f"| placement | median step (s) | ratio to {FLAGS.baseline} (paired) |")
    print("| --- | --- | --- |")
    for form in FORMS:
        median = statistics.median(times[form])
        ratio = median / statistics.median(times[FLAGS.baseline])
        paired = statistics.median(
            a / b for a, b in zip(times[form], times[FLAGS.baseline]))
        print(f"| {form} | {median:.3f} | {ratio:.2f} ({paired:.2f}) |")


if __name__ == "__main__":
    app.run(main)
