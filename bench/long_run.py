r"""Does long training at a high learning rate stay finite?

Trains the char-LM of `examples/ptb_char.py --preset=quick` (an `HMLSTM`
stack with layer normalization and the gated output module, carried-state
truncated BPTT through `hmkeras.TruncatedBPTTModel`, Adam with global
gradient-norm clipping, the slope annealed per epoch as the example does)
on the embedded synthetic corpus for `--steps` steps, at `--lr_factor`
times the preset's learning rate, and records the cross entropy of every
batch (bits per character). It counts the non-finite losses and checks
that every weight is finite whenever it writes its results.

Writes `--output` (JSON) every `--save_every` steps and at the end:
settings, steps done, first / last / min / max loss, the number of
non-finite losses and the step of the first one, whether the weights are
finite, the mean loss of every `--curve_every` steps, time per step.
`"complete": false` marks partial results of a run still going (or
killed); progress goes to stdout every `--log_every` steps.

    python bench/long_run.py                            # the quick preset, 20,000 steps
    python bench/long_run.py --units=32 --batch_size=16 --seq_len=50   # smaller, faster
    python bench/long_run.py --steps=200 --output=/tmp/long_run_smoke.json

The exit status is 1 when a loss or a weight was not finite.
"""

import ast
import json
import math
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from absl import app  # noqa: E402
from absl import flags  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def quick_preset():
    """`PRESETS["quick"]` of examples/ptb_char.py, read from its source (the
    example is not imported: its flags would clash with these)."""
    with open(os.path.join(ROOT, "examples", "ptb_char.py")) as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                getattr(t, "id", None) == "PRESETS" for t in node.targets):
            presets = node.value
            for key, value in zip(presets.keys, presets.values):
                if ast.literal_eval(key) == "quick":  # dict(name=value, ...)
                    return {k.arg: ast.literal_eval(k.value) for k in value.keywords}
    raise RuntimeError("examples/ptb_char.py has no PRESETS['quick']")


QUICK = quick_preset()
FLAGS = flags.FLAGS
flags.DEFINE_integer("steps", 20_000, "Training steps.", lower_bound=1)
flags.DEFINE_float("lr_factor", 10.0, "Learning rate = this x the quick preset's "
                   f"({QUICK['learning_rate']}).", lower_bound=0)
flags.DEFINE_float("clip_norm", 1.0, "Adam's global_clipnorm (the example's default).",
                   lower_bound=0)
for _name in ("units", "num_layers", "embedding_dim", "output_units", "batch_size",
              "seq_len", "synthetic_train_chars"):
    flags.DEFINE_integer(_name, QUICK[_name], "Default: the quick preset's.",
                         lower_bound=2 if _name == "num_layers" else 1)
flags.DEFINE_float("slope_rate", QUICK["slope_rate"], "Slope increase per epoch.",
                   lower_bound=0)
flags.DEFINE_float("slope_max", 5.0, "Largest annealed slope.", lower_bound=0)
flags.DEFINE_integer("seed", 0, "Seed of the corpus and the initialization.", lower_bound=0)
flags.DEFINE_integer("log_every", 100, "Print progress every N steps.", lower_bound=1)
flags.DEFINE_integer("save_every", 500, "Write the (partial) JSON every N steps.",
                     lower_bound=1)
flags.DEFINE_integer("curve_every", 100, "Steps per point of the loss curve.", lower_bound=1)
flags.DEFINE_string("output", os.path.join(ROOT, "bench", "results", "long_run.json"),
                    "The JSON results.")
for _name in ("lr_factor", "clip_norm"):
    flags.register_validator(_name, lambda v: math.isfinite(v) and v > 0,
                             message="must be a finite number > 0")


def settings_from_flags():
    args = {name: FLAGS[name].value for name in (
        "steps", "lr_factor", "clip_norm", "units", "num_layers", "embedding_dim",
        "output_units", "batch_size", "seq_len", "synthetic_train_chars", "slope_rate",
        "slope_max", "seed", "log_every", "save_every", "curve_every", "output")}
    args["learning_rate"] = QUICK["learning_rate"] * args["lr_factor"]
    args["preset"] = {k: QUICK[k] for k in ("units", "num_layers", "embedding_dim",
                                            "output_units", "batch_size", "seq_len",
                                            "learning_rate", "layer_norm")}
    return type("Settings", (), args)


class LossRecord:
    """Every batch's loss and its summary figures."""

    def __init__(self):
        self.losses = []

    def add(self, value):
        self.losses.append(float(value))

    def summary(self, curve_every):
        finite = [v for v in self.losses if math.isfinite(v)]
        bad = [i + 1 for i, v in enumerate(self.losses) if not math.isfinite(v)]
        curve = []
        for start in range(0, len(self.losses), curve_every):
            window = [v for v in self.losses[start:start + curve_every] if math.isfinite(v)]
            curve.append(sum(window) / len(window) if window else None)
        return {
            "steps_done": len(self.losses),
            "first_loss": self.losses[0] if self.losses else None,
            "last_loss": self.losses[-1] if self.losses else None,
            "min_loss": min(finite) if finite else None,
            "max_loss": max(finite) if finite else None,
            "non_finite_losses": len(bad),
            "first_non_finite_step": bad[0] if bad else None,
            "curve_every": curve_every,
            "loss_curve": curve,
        }


def main(argv):
    del argv  # absl has parsed the flags
    args = settings_from_flags()
    import keras
    import numpy as np

    import hmkeras
    from hmkeras import data
    from hmkeras.models.char_language_model import CharLanguageModel
    from hmkeras.models.char_language_model import CharLanguageModelConfig

    keras.utils.set_random_seed(args.seed)
    corpus = data.SyntheticHierarchicalCorpus(
        seed=args.seed, train_chars=args.synthetic_train_chars,
        valid_chars=1_000, test_chars=1_000)
    text = corpus.text("train")
    vocab = data.CharVocabulary.from_text(text)
    batches = data.TruncatedBPTTBatches(vocab.encode(text), args.batch_size, args.seq_len)
    config = CharLanguageModelConfig(
        vocab_size=len(vocab), cell="hmlstm", units=args.units,
        num_layers=args.num_layers, embedding_dim=args.embedding_dim,
        output="gated", output_units=args.output_units,
        cell_options=dict(layer_norm=True), seed=args.seed)
    lm = CharLanguageModel(config)
    trainer = hmkeras.TruncatedBPTTModel(lm, args.batch_size)
    trainer.compile(keras.optimizers.Adam(args.learning_rate, global_clipnorm=args.clip_norm),
                    loss=trainer.loss_function())
    record = LossRecord()
    started = time.time()
    settings = {k: v for k, v in vars(args).items()
                if not k.startswith("_") and k != "output"}
    settings.update(vocab_size=len(vocab), batches_per_epoch=batches.num_batches,
                    parameters=lm.count_params(), cell="hmlstm")

    def weights_finite():
        return all(bool(np.isfinite(w.numpy()).all()) for w in trainer.weights)

    def write(complete):
        elapsed = time.time() - started
        result = {"complete": complete, "settings": settings, **record.summary(args.curve_every),
                  "weights_finite": weights_finite(), "wall_seconds": elapsed,
                  "seconds_per_step": elapsed / max(1, len(record.losses))}
        os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
        temporary = args.output + ".tmp"
        with open(temporary, "w") as f:
            json.dump(result, f, indent=2)
        os.replace(temporary, args.output)  # a reader never sees half a file
        return result

    class Recorder(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            record.add(logs["batch_bpc"])
            step = len(record.losses)
            if step % args.log_every == 0:
                recent = record.losses[-args.log_every:]
                print(f"step {step}/{args.steps}: loss {record.losses[-1]:.4f} bits/char, "
                      f"mean of the last {len(recent)} {sum(recent) / len(recent):.4f}, "
                      f"non-finite so far {record.summary(args.curve_every)['non_finite_losses']}, "
                      f"{(time.time() - started) / step:.3f} s/step", flush=True)
            if step % args.save_every == 0:
                write(complete=False)

    slope = hmkeras.SlopeAnnealing(
        lambda epoch: min(args.slope_max, lm.hierarchical_cell.initial_slope + args.slope_rate * epoch))
    print(f"{lm.count_params():,} parameters; {batches.num_batches} batches per epoch; "
          f"learning rate {args.learning_rate:g}, clip norm {args.clip_norm:g}.", flush=True)
    epoch = 0
    while len(record.losses) < args.steps:
        trainer.reset_carried_state()  # every epoch starts from the zero state
        steps = min(batches.num_batches, args.steps - len(record.losses))
        trainer.fit(batches.dataset(), epochs=epoch + 1, initial_epoch=epoch,
                    steps_per_epoch=steps, callbacks=[Recorder(), slope],
                    verbose=0, shuffle=False)
        epoch += 1
    result = write(complete=True)
    print(json.dumps({k: v for k, v in result.items() if k not in ("loss_curve", "settings")},
                     indent=2))
    return 0 if result["non_finite_losses"] == 0 and result["weights_finite"] else 1


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    from command_line import parse_flags  # noqa: E402

    app.run(main, flags_parser=parse_flags)
