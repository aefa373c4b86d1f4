"""The boundary-prior flags of the example scripts: `--boundary_prior`,
`--segment_lengths`.

`examples/ptb_char.py` (through `char_lm_flags.py`), `examples/iam_ondb.py`
and `examples/ptb_word.py` share them, with the same spelling, values and
messages. A script defines them with its own `absl.flags` module
(`define_flags(flags, unit)`: the tests give every script flags of its
own), checks their combinations with `check_flags` before TensorFlow
loads, and turns them into the configuration fields `boundary_prior` and
`segment_lengths` of its model with `prior_arguments`.
"""

import math

from command_line import FlagError  # examples/command_line.py

NAMES = ("boundary_prior", "segment_lengths")
FORMS = ("rate", "binomial", "none")  # hmkeras.cells.boundary_prior.FORMS and "none"


def _length(value):
    """A --segment_lengths entry: a number, or None for "none" (a free layer)."""
    return None if value.strip().lower() == "none" else float(value)


def _lengths_ok(values):
    try:
        lengths = None if values is None else [_length(v) for v in values]
    except ValueError:
        return False
    return lengths is None or (
        any(v is not None for v in lengths)
        and all(v is None or (math.isfinite(v) and v > 1) for v in lengths))


def define_flags(flags, unit, default="rate"):
    """Defines --boundary_prior (default `default`) and --segment_lengths
    (`unit`: what one step is, e.g. "characters") in the flags of `flags`,
    an `absl.flags` module."""
    flags.DEFINE_enum("boundary_prior", default, list(FORMS),
                      "Boundary prior of the HM cells (hmkeras.BoundaryPrior, an "
                      "extension): rate, binomial, or none for the papers' model.")
    flags.DEFINE_list("segment_lengths", None, "The prior's expected segment length of "
                      f"z^1 .. z^{{L-1}}, in {unit}, e.g. 5,15 (default: 5, 3x longer "
                      "per layer); none leaves a layer's rate free, e.g. none,15.")
    flags.register_validator(
        "segment_lengths", _lengths_ok,
        message="must be numbers > 1 or none, one per boundary layer (at least one "
                "number), e.g. 5,15 or none,15")


def check_flags(settings, flag_values, hierarchical_cells):
    """The combinations of the prior flags in `settings` (`FlagError`).

    For a cell outside `hierarchical_cells` a prior flag given on the
    command line is refused, and the settings keep the flags' defaults
    (unused); for a hierarchical cell, `--segment_lengths` needs
    `--num_layers - 1` values and a prior.
    """
    if settings["cell"] not in hierarchical_cells:
        for name in NAMES:
            if flag_values[name].present:
                raise FlagError(
                    f"--{name} applies to the hierarchical cells "
                    f"({', '.join(hierarchical_cells)}) only. Received: "
                    f"--cell={settings['cell']} --{name}={settings[name]!r}")
            settings[name] = flag_values[name].default
        return
    lengths = settings["segment_lengths"]
    if lengths is not None and len(lengths) != settings["num_layers"] - 1:
        raise FlagError(
            "--segment_lengths needs one length per boundary layer "
            f"(--num_layers - 1 = {settings['num_layers'] - 1}). Received: "
            f"--segment_lengths={','.join(lengths)}")
    if lengths is not None and settings["boundary_prior"] == "none":
        raise FlagError(
            "--segment_lengths needs a boundary prior (--boundary_prior=binomial "
            f"or rate). Received: --boundary_prior=none --segment_lengths={','.join(lengths)}")


def prior_arguments(s):
    """`boundary_prior` and `segment_lengths` of a model configuration
    (`CharLanguageModelConfig`, `HandwritingModelConfig`,
    `WordLanguageModelConfig`) from the settings `s`.

    Examples:

    >>> prior_arguments({"boundary_prior": "none", "segment_lengths": None})
    {'boundary_prior': None, 'segment_lengths': None}
    >>> prior_arguments({"boundary_prior": "rate", "segment_lengths": ["4", "12"]})
    {'boundary_prior': 'rate', 'segment_lengths': [4.0, 12.0]}
    >>> prior_arguments({"boundary_prior": "rate", "segment_lengths": ["none", "15"]})
    {'boundary_prior': 'rate', 'segment_lengths': [None, 15.0]}
    """
    lengths = s["segment_lengths"]
    return dict(
        boundary_prior=None if s["boundary_prior"] == "none" else s["boundary_prior"],
        segment_lengths=None if lengths is None else [_length(v) for v in lengths],
    )


def old_run_defaults(flag_values):
    """`{name: default}` of the prior flags, for a `settings.json` written
    before they existed: such a run resumes as one with the script's
    defaults."""
    return {name: flag_values[name].default for name in NAMES}


def prior_results(boundary_prior):
    """What results.json records of a model's prior (a `BoundaryPrior` or
    None): its form ("none" without one) and segment lengths."""
    if boundary_prior is None:
        return {"boundary_prior": "none", "segment_lengths": None}
    return {"boundary_prior": boundary_prior.form,
            "segment_lengths": list(boundary_prior.segment_lengths)}
