"""The cell's own options in a model configuration (`cell_options`).

`CharLanguageModelConfig` and `HandwritingModelConfig` hold the options of
their recurrent cell as one dict, `cell_options`: a subset of the cell's
constructor arguments, written as the cell's own `get_config()` writes
them. The cell's declaration is the single source of truth: its defaults
apply to the options left out, and its own argument checks refuse bad
values (a `ValueError` naming the argument). The model sets the arguments
that belong to its layout itself (`MODEL_ARGUMENTS`: sizes, seed, the L2
penalty), so those are refused here, as is any name the cell does not take.

Examples:

    >>> check_cell_options("hmlstm", {"layer_norm": False, "slope": 2}, units=8,
    ...                    num_layers=3)
    {'layer_norm': False, 'slope': 2.0}
    >>> check_cell_options("hmrnn", {"copy_last": True}, units=8, num_layers=3)
    Traceback (most recent call last):
    ...
    ValueError: `cell_options` of cell='hmrnn' has no option 'copy_last' ...
    >>> "weight_normalization" in allowed_options("mlstm")
    True
"""

import inspect
import json

import keras

from hmkeras import argument_checks
from hmkeras.cells.hm_lstm_cell import HMLSTMCell
from hmkeras.cells.hm_rnn_cell import HMRNNCell
from hmkeras.cells.multiplicative_lstm_cell import MultiplicativeLSTMCell
from hmkeras.models.initializer_seeds import seeded_initializers

#: The cell class of every cell name of the models.
CELL_CLASSES = {
    "hmlstm": HMLSTMCell,
    "hmrnn": HMRNNCell,
    "lstm": keras.layers.LSTMCell,
    "mlstm": MultiplicativeLSTMCell,
}
#: Cell arguments the model sets itself, each with the configuration field
#: it comes from.
MODEL_ARGUMENTS = {
    "units": "units",
    "num_layers": "num_layers",
    "seed": "seed",
    "kernel_regularizer": "l2",
    "recurrent_regularizer": "l2",
}
# Keras' `LSTMCell` clips its dropout rates into [0, 1] silently; the
# models refuse rates outside [0, 1), as the library's cells do.
_KERAS_RATES = ("dropout", "recurrent_dropout")
# The seed and name of the cell made to check the options: given, so that
# checking draws no seed from Python's random state and takes no name from
# Keras' automatic names (the model's own cells keep theirs).
_CHECK_SEED = 0
_CHECK_NAME = "cell_options_check"


def allowed_options(cell):
    """The names `cell_options` may hold for the cell named `cell`: the
    cell's named constructor arguments, less `MODEL_ARGUMENTS`, in the
    constructor's order."""
    parameters = inspect.signature(CELL_CLASSES[cell].__init__).parameters
    return tuple(
        name for name, p in parameters.items()
        if name != "self" and name not in MODEL_ARGUMENTS
        and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    )


def _check_names(cell, options):
    if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
        raise ValueError(
            "`cell_options` must be a dict from argument names of the cell to "
            f"values. Received: cell_options={options!r}"
        )
    allowed = allowed_options(cell)
    for name in options:
        if name in MODEL_ARGUMENTS:
            raise ValueError(
                f"`cell_options` cannot hold {name!r}: the model sets it from its "
                f"`{MODEL_ARGUMENTS[name]}` field. Received: cell_options={options!r}"
            )
        if name not in allowed:
            raise ValueError(
                f"`cell_options` of cell={cell!r} has no option {name!r} "
                f"(the arguments of {CELL_CLASSES[cell].__name__}). Allowed: "
                f"{list(allowed)}. Received: cell_options={options!r}"
            )


def _make_cell(cell, options, units, num_layers):
    """The cell of `options` (its constructor checks them)."""
    if cell == "lstm":
        options = dict(options)
        for name in _KERAS_RATES:
            if name in options:
                options[name] = argument_checks.check_rate(name, options[name])
    arguments = (units, num_layers) if cell in ("hmlstm", "hmrnn") else (units,)
    # Checking draws nothing from the program's random state.
    with seeded_initializers(_CHECK_SEED):
        return CELL_CLASSES[cell](
            *arguments, seed=_CHECK_SEED, name=_CHECK_NAME, **options
        )


def check_cell_options(cell, options, units, num_layers):
    """`options` checked by the cell named `cell`, as its `get_config()`
    writes them (Python values: NumPy scalars become numbers).

    Args:
        cell: A key of `CELL_CLASSES`.
        options: None or a dict of the cell's arguments (`allowed_options`).
        units, num_layers: The model's sizes, with which the cell is made
            (`num_layers` for the hierarchical cells only).

    Returns:
        A new dict with the keys of `options`.

    Raises:
        ValueError: `options` is not such a dict, names an argument the
            model sets or the cell does not take, holds a value the cell
            refuses (the cell's own error, naming the argument), or a
            value that cannot be written as JSON.
    """
    options = {} if options is None else options
    _check_names(cell, options)
    written = _make_cell(cell, options, units, num_layers).get_config()
    checked = {name: written[name] for name in options}
    try:
        json.dumps(checked)
    except TypeError:
        raise ValueError(
            "`cell_options` must hold values that JSON can write (numbers, "
            "strings, booleans, lists, dicts, None). Received: "
            f"cell_options={options!r}"
        ) from None
    return checked
