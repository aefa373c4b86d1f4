"""The sizes of a hierarchy and the layout of its state and output.

`HMLSTMCell` and `HMRNNCell` keep one size per layer (`resolve_layer_sizes`)
and lay their state out as one flat list, as `keras.layers.RNN` wants it:

    [h^1, (extra^1...), h^2, (extra^2...), ..., h^L, (extra^L...), z]

where `z` has shape `(batch, L - 1)` and holds the boundaries of the
previous step (`z_{t-1}^1 ... z_{t-1}^{L-1}`); for the HM-LSTM the extra
state of a layer is its cell state `c^l` (`state_sizes`, `layer_state`).
Their output, one tensor per step, is

    [h^1 | h^2 | ... | h^L | z^1 ... z^{L-1}]

which `split_outputs` takes apart, on one step or on whole sequences.

Examples:

    >>> import numpy as np
    >>> sizes = resolve_layer_sizes(units=[3, 2], num_layers=None)
    >>> state_sizes(sizes, states_per_layer=2), output_size(sizes)
    ([3, 3, 2, 2, 1], 6)
    >>> outputs = np.zeros((2, 5, 6), "float32")  # (batch, time, output_size)
    >>> hiddens, boundaries = split_outputs(outputs, sizes)
    >>> [tuple(h.shape) for h in hiddens], tuple(boundaries.shape)
    ([(2, 5, 3), (2, 5, 2)], (2, 5, 1))
"""

import itertools

import keras
import numpy as np

from hmkeras import argument_checks


def resolve_layer_sizes(units, num_layers):
    """Per-layer sizes from `units` (int or list) and `num_layers`.

    NumPy integers are accepted and returned as Python ints.
    """
    num_layers = argument_checks.check_int(
        "num_layers", num_layers, minimum=2, allow_none=True
    )
    if isinstance(units, (list, tuple, np.ndarray)):
        sizes = argument_checks.check_int_list("units", units)
        if num_layers is not None and num_layers != len(sizes):
            raise ValueError(
                "`units` given as a list must have one size per layer: "
                f"len(units)={len(sizes)} but num_layers={num_layers!r}."
            )
    else:
        try:
            size = argument_checks.check_positive_int("units", units)
        except ValueError:
            raise ValueError(
                "`units` must be a positive integer or a non-empty list of "
                f"positive integers (one per layer). Received: units={units!r}"
            ) from None
        sizes = [size] * (3 if num_layers is None else num_layers)
    if len(sizes) < 2:  # only a one-size list gets here
        raise ValueError(
            "`units` given as a list needs one size per layer, and a "
            "hierarchy at least two layers (`num_layers` >= 2: a boundary "
            f"between two layers). Received: units={units!r}"
        )
    return sizes


def state_sizes(sizes, states_per_layer):
    """The flat state's sizes: `states_per_layer` of each layer, then `z`."""
    flat = []
    for size in sizes:
        flat.extend([size] * states_per_layer)
    flat.append(len(sizes) - 1)
    return flat


def layer_state(states, index, states_per_layer):
    """Layer `index`'s slice of the flat state list, `h^l` first."""
    return list(states[index * states_per_layer : (index + 1) * states_per_layer])


def output_size(sizes):
    """The size of one step's output: every `h^l`, then the `L - 1` boundaries."""
    return sum(sizes) + len(sizes) - 1


def split_outputs(outputs, sizes):
    """`(hiddens, boundaries)` of outputs laid out for layers of `sizes`.

    See `HierarchicalCell.split_outputs`, which this computes.
    """
    size = output_size(sizes)
    if isinstance(outputs, (list, tuple)):
        if not outputs:
            raise ValueError(
                "`outputs` must be a tensor of last dimension output_size="
                f"{size}, or the list [outputs, *states] of "
                "an RNN with return_state=True. Received: an empty "
                f"{type(outputs).__name__}."
            )
        outputs = outputs[0]  # RNN(..., return_state=True): [outputs, *states]
    if not hasattr(outputs, "shape"):
        outputs = keras.ops.convert_to_tensor(outputs)
    if len(outputs.shape) < 1 or (
        outputs.shape[-1] is not None and outputs.shape[-1] != size
    ):
        raise ValueError(
            f"`outputs` must have last dimension output_size="
            f"{size}. Received: shape={tuple(outputs.shape)}"
        )
    boundaries = len(sizes) - 1
    pieces = keras.ops.split(
        outputs, list(itertools.accumulate(sizes + [boundaries]))[:-1], axis=-1
    )
    return list(pieces[:-1]), pieces[-1]
