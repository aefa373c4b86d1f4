"""Checks of constructor and call arguments, shared by the public classes.

Every public class of hmkeras (cells, output embeddings, callbacks,
regularizers, model configuration) validates its arguments with these
helpers, so that the same kind of argument is accepted and refused the
same way everywhere, as Keras' own layers do:

* NumPy scalars are accepted wherever a Python number is
  (`np.int64(8)` for `units`, `np.float32(0.5)` for a rate) and returned
  as the Python `int` / `float`, so that `get_config()` stays JSON-able;
* booleans are refused where a number is expected (`True` is an `int` in
  Python, never a meaningful size or rate), strings everywhere a number
  is expected, NaN and infinities wherever a finite number is;
* a refusal is a `ValueError` that names the argument, what is allowed
  and what was received: "`units` must be a positive integer. Received:
  units=0".

The module also checks what a cell receives at build and call time
(`check_step_input_shape`, `check_float_inputs`): a recurrent cell is
given one step `(batch, features)` of a `(batch, time, features)`
sequence, in a floating-point dtype; a sequence layer needs at least one
time step (`check_time_steps`).

It is package-neutral (no import of the library's packages): every
package imports it as `from hmkeras import argument_checks`.

Examples:

    >>> import numpy as np
    >>> check_int("units", np.int64(8), minimum=1)
    8
    >>> check_float("slope", np.float32(0.5), minimum=0, exclusive_minimum=True)
    0.5
    >>> check_int("units", True, minimum=1)
    Traceback (most recent call last):
    ...
    ValueError: `units` must be a positive integer. Received: units=True
"""

import math
import numbers

import keras
import numpy as np


def _is_bool(value):
    return isinstance(value, (bool, np.bool_))


def _refuse(name, allowed, value):
    raise ValueError(f"`{name}` must be {allowed}. Received: {name}={value!r}")


def _bounds(minimum, maximum, exclusive_minimum=False, exclusive_maximum=False):
    """`>= 0`, `> 0`, `in [0, 1)`, ... for the error messages."""
    if minimum is not None and maximum is not None:
        left = "(" if exclusive_minimum else "["
        right = ")" if exclusive_maximum else "]"
        return f"in {left}{minimum}, {maximum}{right}"
    if minimum is not None:
        return f"{'>' if exclusive_minimum else '>='} {minimum}"
    if maximum is not None:
        return f"{'<' if exclusive_maximum else '<='} {maximum}"
    return ""


def _integer_description(minimum, maximum):
    if minimum == 1 and maximum is None:
        return "a positive integer"
    if minimum == 0 and maximum is None:
        return "a non-negative integer"
    bounds = _bounds(minimum, maximum)
    return f"an integer {bounds}" if bounds else "an integer"


def check_int(name, value, minimum=None, maximum=None, allow_none=False):
    """Returns `value` as a Python `int` after checking it.

    Args:
        name: The argument's name, for the error message.
        value: A Python or NumPy integer (not a bool, float or string).
        minimum, maximum: Inclusive bounds, or None.
        allow_none: Whether `None` is accepted (and returned).

    Raises:
        ValueError: naming `name`, what is allowed and `value`.
    """
    if value is None and allow_none:
        return None
    if (
        _is_bool(value)
        or not isinstance(value, numbers.Integral)
        or (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)
    ):
        allowed = _integer_description(minimum, maximum)
        _refuse(name, f"None or {allowed}" if allow_none else allowed, value)
    return int(value)


def check_positive_int(name, value, allow_none=False):
    """`check_int` with `minimum=1`: sizes, counts, intervals."""
    return check_int(name, value, minimum=1, allow_none=allow_none)


def check_float(
    name,
    value,
    minimum=None,
    maximum=None,
    exclusive_minimum=False,
    exclusive_maximum=False,
    allow_none=False,
):
    """Returns `value` as a finite Python `float` after checking it.

    Args:
        name: The argument's name, for the error message.
        value: A Python or NumPy real number (not a bool or string), finite
            (not NaN, not infinite).
        minimum, maximum: Bounds, or None.
        exclusive_minimum, exclusive_maximum: Whether the bounds themselves
            are refused (`> 0` rather than `>= 0`).
        allow_none: Whether `None` is accepted (and returned).

    Raises:
        ValueError: naming `name`, what is allowed and `value`.
    """
    if value is None and allow_none:
        return None
    ok = (
        not _is_bool(value)
        and isinstance(value, numbers.Real)
        and math.isfinite(value)
    )
    if ok and minimum is not None:
        ok = value > minimum if exclusive_minimum else value >= minimum
    if ok and maximum is not None:
        ok = value < maximum if exclusive_maximum else value <= maximum
    if not ok:
        bounds = _bounds(minimum, maximum, exclusive_minimum, exclusive_maximum)
        allowed = f"a finite number {bounds}" if bounds else "a finite number"
        _refuse(name, f"None or {allowed}" if allow_none else allowed, value)
    return float(value)


def check_rate(name, value):
    """A dropout rate: a float in [0, 1), 0 disabling it."""
    if (
        _is_bool(value)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or not 0.0 <= value < 1.0
    ):
        _refuse(name, "a float in [0, 1) (0 disables it)", value)
    return float(value)


def check_fraction(name, value, allow_none=False):
    """A rate or probability: a finite number in [0, 1]."""
    return check_float(name, value, minimum=0, maximum=1, allow_none=allow_none)


def check_bool(name, value):
    """`True` or `False` (a NumPy bool too); returns a Python `bool`."""
    if not _is_bool(value):
        _refuse(name, "True or False", value)
    return bool(value)


def check_choice(name, value, allowed):
    """One of the `allowed` values (strings, compared by equality)."""
    if _is_bool(value) or not isinstance(value, str) or value not in allowed:
        _refuse(name, f"one of {list(allowed)}", value)
    return value


def check_int_list(name, values, minimum=1, allow_none=False):
    """A non-empty list, tuple or 1-D array of integers `>= minimum`.

    Returns a list of Python ints (or None when `allow_none`).
    """
    if values is None and allow_none:
        return None
    items = None
    if isinstance(values, (list, tuple)):
        items = list(values)
    elif isinstance(values, np.ndarray) and values.ndim == 1:
        items = values.tolist()
    if (
        not items
        or any(
            _is_bool(v) or not isinstance(v, numbers.Integral) or v < minimum
            for v in items
        )
    ):
        element = "positive integers" if minimum == 1 else f"integers >= {minimum}"
        allowed = f"a non-empty list of {element}"
        _refuse(name, f"None or {allowed}" if allow_none else allowed, values)
    return [int(v) for v in items]


def check_step_input_shape(layer_name, input_shape):
    """Checks the per-step input shape a cell's `build` receives.

    `keras.layers.RNN` builds its cell with the shape of one step,
    `(batch, features)`; a `(batch, time)` sequence (token ids without an
    `Embedding`, or a sequence without a feature axis) reaches the cell as
    the shape `(batch,)`.
    """
    input_shape = tuple(input_shape)
    if len(input_shape) == 2 and input_shape[-1] is not None:
        return int(input_shape[-1])
    hint = ""
    if len(input_shape) < 2:
        hint = (
            " A rank-2 sequence `(batch, time)` reaches the cell as the step "
            "shape `(batch,)`: token ids need a `keras.layers.Embedding` "
            "before the RNN, and a sequence of scalars a feature axis "
            "(`x[..., None]`)."
        )
    elif input_shape[-1] is None:
        hint = " The feature size (the last axis) must be known."
    raise ValueError(
        f"{layer_name} expects one step of shape (batch, features): "
        "keras.layers.RNN passes its (batch, time, features) sequence to "
        "the cell one (batch, features) step at a time, so the sequence "
        f"must have rank 3.{hint} Received: step inputs.shape={input_shape}"
    )


def check_time_steps(layer_name, input_shape):
    """Refuses a sequence `(batch, time, features)` with no time step.

    A recurrent layer's output is the output of its last step, so an empty
    sequence has none to give (Keras' own `LSTM` fails on it inside its
    time loop); the time axis may be unknown (`None`), but not 0.
    """
    input_shape = tuple(input_shape)
    if len(input_shape) >= 2 and input_shape[1] == 0:
        raise ValueError(
            f"{layer_name} needs sequences of at least one time step: a "
            "recurrent layer returns the output of the last step, and an "
            "empty sequence has none (to pad short sequences, mask the "
            "padded steps). Received: inputs.shape="
            f"{tuple(None if d is None else int(d) for d in input_shape)}"
        )


def check_float_inputs(layer_name, inputs):
    """Refuses integer or boolean cell inputs (token ids need an Embedding)."""
    dtype = getattr(inputs, "dtype", None)
    if dtype is None:
        return
    dtype = keras.backend.standardize_dtype(dtype)
    if "float" not in dtype:  # float16, bfloat16, float32, float64, ...
        raise ValueError(
            f"{layer_name} needs floating-point inputs (features), but "
            f"received inputs of dtype {dtype}. Integer token ids "
            "need a `keras.layers.Embedding(vocab_size, dim)` before the "
            "RNN; integer or boolean features a cast "
            "(`keras.ops.cast(x, 'float32')`)."
        )


def check_draws_per_step(layer_name, argument, step_tensor):
    """Refuses a random draw at every step of a traced JAX time loop.

    Keras' JAX loop steps a cell inside `lax.scan`, where a seed
    generator's new state does not reach the next step: every step would
    draw the same numbers. A tensor of such a step (`step_tensor`) is a
    traced value; stepped eagerly (by hand, or `unroll=True` outside
    `jax.jit`) it is concrete and the draws are right. `argument` names
    what draws (e.g. `boundary_mode="sample"`).
    """
    if keras.backend.backend() != "jax":
        return
    import jax  # the JAX backend is running

    if isinstance(step_tensor, jax.core.Tracer):
        raise ValueError(
            f"{layer_name} `{argument}` draws random numbers at every step, "
            "which a traced JAX time loop (lax.scan, jax.jit) cannot give a "
            "cell: every step would get the same draws. On JAX train with the "
            "deterministic mode, step the cell eagerly (unroll=True outside "
            "jax.jit), or use the TensorFlow or PyTorch backend."
        )
