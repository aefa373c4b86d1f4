"""A fixed-size stack of vectors held in a recurrent state.

The recurrent-recursive cell (Jacob et al. 2018, Sec. 2) pushes `h_down`
when it splits and pops it when it merges.  Inside `keras.layers.RNN` a
state must be a tensor of fixed shape, so the stack of every sequence in
the batch is a `(batch, max_depth * units)` tensor of `max_depth` slots
plus a depth pointer `(batch, 1)` (a float holding an integer: the number
of filled slots).  Slot `k` (0-based) holds the `k`-th pushed vector that
is still on the stack; slots at and above the pointer are zero.

Pushes and pops are arithmetic and selected per row by a 0/1 `where`
column, so one batch can push in some rows, pop in others and leave the
rest untouched.  A push on a full stack and a pop from an empty one are
no-ops (the caller masks them out beforehand; see `can_push`, `can_pop`).

Examples:

    >>> import numpy as np
    >>> from keras import ops
    >>> stack, depth = np.zeros((1, 3 * 2), "float32"), np.zeros((1, 1), "float32")
    >>> stack, depth = push(stack, depth, np.array([[1.0, 2.0]]), np.ones((1, 1)))
    >>> stack, depth = push(stack, depth, np.array([[3.0, 4.0]]), np.ones((1, 1)))
    >>> top, stack, depth = pop(stack, depth, np.ones((1, 1)), units=2)
    >>> tuple(ops.convert_to_numpy(t).tolist() for t in (top, depth, stack))
    ([[3.0, 4.0]], [[1.0]], [[1.0, 2.0, 0.0, 0.0, 0.0, 0.0]])
"""

from keras import ops


def _slots(stack, units):
    """`(batch, max_depth, units)` view of a flat stack."""
    stack = ops.convert_to_tensor(stack)
    return ops.reshape(stack, (-1, stack.shape[-1] // units, units))


def _slot_mask(depth, max_depth, dtype, offset=0):
    """`(batch, max_depth, 1)` one-hot of slot `depth + offset` (zeros when
    that slot does not exist)."""
    index = ops.cast(ops.round(ops.reshape(depth, (-1, 1))), "int32") + offset
    # A comparison, not `one_hot`: PyTorch's refuses an index out of range.
    return ops.cast(ops.equal(index, ops.arange(max_depth, dtype="int32")[None]),
                    dtype)[:, :, None]


def can_push(depth, max_depth):
    """1.0 where the stack has a free slot (`depth < max_depth`), else 0.0."""
    depth = ops.convert_to_tensor(depth)
    return ops.cast(depth < max_depth - 0.5, depth.dtype)


def can_pop(depth):
    """1.0 where the stack holds a vector (`depth > 0`), else 0.0."""
    depth = ops.convert_to_tensor(depth)
    return ops.cast(depth > 0.5, depth.dtype)


def push(stack, depth, value, where):
    """Pushes `value` `(batch, units)` in the rows where `where` is 1.

    Returns:
        `(stack, depth)` after the push.
    """
    value = ops.convert_to_tensor(value)
    stack = ops.cast(stack, value.dtype)
    depth = ops.cast(depth, value.dtype)
    where = ops.cast(where, value.dtype)
    units = value.shape[-1]
    slots = _slots(stack, units)
    max_depth = slots.shape[1]
    where = where * can_push(depth, max_depth)
    write = _slot_mask(depth, max_depth, value.dtype) * where[:, :, None]
    slots = slots * (1.0 - write) + write * value[:, None, :]
    return ops.reshape(slots, (-1, stack.shape[-1])), depth + where


def top(stack, depth, units):
    """The vector on top of the stack `(batch, units)` (zeros when empty)."""
    slots = _slots(stack, units)
    read = _slot_mask(depth, slots.shape[1], slots.dtype, offset=-1)
    return ops.sum(read * slots, axis=1)


def pop(stack, depth, where, units):
    """Pops the top vector `(batch, units)` in the rows where `where` is 1.

    The popped slot is cleared.  Rows where nothing is popped return the
    top they would have popped (zeros on an empty stack).

    Returns:
        `(top, stack, depth)`: the top vector before the pop, and the stack
        and depth after it.
    """
    stack = ops.convert_to_tensor(stack)
    depth = ops.cast(depth, stack.dtype)
    where = ops.cast(where, stack.dtype) * can_pop(depth)
    slots = _slots(stack, units)
    read = _slot_mask(depth, slots.shape[1], slots.dtype, offset=-1)
    value = ops.sum(read * slots, axis=1)
    slots = slots * (1.0 - read * where[:, :, None])
    return value, ops.reshape(slots, (-1, stack.shape[-1])), depth - where

