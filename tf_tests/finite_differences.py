"""Central finite differences: value checks for the gradient tests.

A gradient test states what the gradient *is*, not only that it is there.
`assert_gradients_match` compares an autodiff gradient with

    (loss(w + eps e_k) - loss(w - eps e_k)) / (2 eps)

(extrapolated from two steps) at a few seeded entries `k` of every
array, in float64.  The loss is a plain Python function of a dict
`name -> float64 array`, so it can be an independent NumPy reference
(`hm_reference`) or the layer under test with the perturbed values
assigned to its variables (`variables_loss`).
"""

from backend_support import to_numpy
import numpy as np

__all__ = ["assert_gradients_match", "pick_entries", "central_difference", "variables_loss"]


def pick_entries(shape, count, rng, required=()):
    """`required` flat indices followed by `count` distinct random ones."""
    size = int(np.prod(shape, dtype=np.int64))
    chosen = [int(k) for k in required]
    free = np.setdiff1d(np.arange(size), chosen)
    if count and free.size:
        chosen += [int(k) for k in rng.choice(free, min(count, free.size), replace=False)]
    return chosen


def central_difference(loss, values, name, flat_index, eps):
    """d loss / d values[name].flat[flat_index] by central differences.

    Richardson's extrapolation of the steps `eps` and `eps / 2` cancels
    the `eps ** 2` error term: layer normalization of a vector of small
    spread (a fresh cell state) bends the loss sharply, enough for the
    plain central difference to be off by 1e-5 at `eps = 1e-6`.
    """

    def central(step):
        shifted = dict(values)
        results = []
        for sign in (1.0, -1.0):
            # C order: `reshape(-1)` of a column-major copy (PyTorch's
            # transposed kernels read as NumPy) would be a copy of its own.
            array = np.array(values[name], dtype=np.float64, order="C", copy=True)
            array.reshape(-1)[flat_index] += sign * step
            shifted[name] = array
            results.append(float(loss(shifted)))
        return (results[0] - results[1]) / (2.0 * step)

    return (4.0 * central(eps / 2.0) - central(eps)) / 3.0


def assert_gradients_match(loss, values, gradients, entries=3, eps=1e-6, rtol=1e-5,
                           atol=1e-8, seed=0, required=None):
    """Asserts `gradients[name]` equals the finite differences of `loss`.

    Args:
        loss: function of a dict like `values`, returning a float.
        values: dict `name -> array`, the point (float64 after casting).
        gradients: dict `name -> array` shaped like `values[name]`, the
            gradient under test; its keys are the arrays checked.
        entries: random entries checked per array (seeded by `seed`).
        eps: the step of the central difference.
        rtol, atol: tolerances of `|grad - fd| <= atol + rtol * |fd|`.
        required: optional dict `name -> flat indices` always checked.

    Returns:
        The largest `|fd|` seen, so that a caller can assert the check was
        not made on zeros only.
    """
    values = {k: np.asarray(v, dtype=np.float64) for k, v in values.items()}
    rng = np.random.default_rng(seed)
    failures, largest = [], 0.0
    for name in sorted(gradients):
        grad = np.asarray(gradients[name], dtype=np.float64).reshape(-1)
        assert grad.size == values[name].size, (name, grad.shape, values[name].shape)
        for k in pick_entries(values[name].shape, entries, rng, (required or {}).get(name, ())):
            numeric = central_difference(loss, values, name, k, eps)
            largest = max(largest, abs(numeric))
            if not abs(grad[k] - numeric) <= atol + rtol * abs(numeric):
                failures.append(f"{name}[{k}]: autodiff {grad[k]!r}, finite differences "
                                f"{numeric!r}")
    assert not failures, "gradient != finite differences:\n" + "\n".join(failures)
    return largest


def variables_loss(variables, compute):
    """A `loss` for `assert_gradients_match` over Keras variables.

    Assigns the values of the dict (keyed by `variable.path`) to
    `variables`, calls `compute()` and returns it as a float.  The values
    in place when it was made are restored by `restore()`, an attribute of
    the returned function.
    """
    by_path = {v.path: v for v in variables}
    saved = {path: np.array(to_numpy(v)) for path, v in by_path.items()}

    def loss(values):
        for path, value in values.items():
            by_path[path].assign(value)
        return float(to_numpy(compute()))

    loss.restore = lambda: [by_path[p].assign(v) for p, v in saved.items()]
    return loss
