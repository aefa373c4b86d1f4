"""HMRNNCell against an independent NumPy reference of Kadar et al. Eq. (9)."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import backend_support
from backend_support import to_numpy
import numpy as np
import pytest
from keras import ops

import hm_reference
import hmkeras
from hmkeras.cells.hierarchical_cell import HierarchicalCell
from hm_fixtures import (FLOAT64, UNITS, check_gradients_against_reference, inputs, make_cell,
                         run_rnn)

pytestmark = pytest.mark.every_backend


CONFIGS = [dict(), dict(layer_norm=False), dict(top_down=False), dict(slope=3.0),
           dict(boundary_input="updated"),
           dict(boundary_input="updated", layer_norm=False, top_down=False),
           dict(nested_boundaries=True), dict(nested_boundaries=True, boundary_input="updated")]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: ",".join(c) or "default")
@pytest.mark.parametrize("mode", ["step", "soft"])
def test_matches_numpy_reference(config, mode):
    cell = make_cell(hmkeras.HMRNNCell, boundary_mode=mode, **config)
    x = inputs()
    if not backend_support.HAS_FLOAT64:
        # A float32 cell (JAX) follows the float64 reference over the first
        # 12 steps only: with JAX's initial weights the soft default is
        # chaotic after that (a 1e-7 relative change of the reference's
        # weights moves its last steps by 2e-2), whatever the cell.
        x = x[:, :12]
    outputs, states = run_rnn(cell, x)
    ref = hm_reference.hmrnn(
        x,
        hm_reference.cell_weights(cell),
        UNITS,
        mode=mode,
        slope=config.get("slope", 1.0),
        layer_norm_on=config.get("layer_norm", True),
        top_down=config.get("top_down", True),
        boundary_input=config.get("boundary_input", "previous"),
        nested=config.get("nested_boundaries", False),
    )
    np.testing.assert_allclose(outputs, ref["outputs"], **FLOAT64)
    for index in range(len(UNITS)):
        np.testing.assert_allclose(states[index], ref["h"][index], **FLOAT64)
    # Step mode's decisions are exact; soft mode's are values like the others.
    exact = mode == "step" or backend_support.HAS_FLOAT64
    np.testing.assert_allclose(states[-1], ref["z"], **(dict(atol=0) if exact else FLOAT64))
    if mode == "step":
        ops = ref["ops"]
        assert {"flush", "update", "copy"} <= set(ops[:, :, 1].ravel())
        assert {"update", "copy"} <= set(ops[:, :, 2].ravel())


def test_sample_mode_matches_reference_given_its_boundaries():
    cell = make_cell(hmkeras.HMRNNCell, boundary_mode="sample", seed=4)
    x = inputs(1)
    outputs, _ = run_rnn(cell, x, training=True)
    boundaries = to_numpy(cell.split_outputs(outputs)[1])
    assert set(np.unique(boundaries)) == {0.0, 1.0}
    ref = hm_reference.hmrnn(x, hm_reference.cell_weights(cell), UNITS, boundaries=boundaries)
    np.testing.assert_allclose(outputs, ref["outputs"], **FLOAT64)


# The detectors that read `h^l_t` (`boundary_input="updated"`): seed 5
# with bias 1 is a draw where no layer holds an all-zero row (seeds 2-5
# with bias 0.5 or 1 otherwise leave one to four, see below); PyTorch's
# generator draws other weights, and seed 8 is such a draw there (seed 6,
# the first, is too, but one of its 20 checked entries, a gradient of 0.03
# where the largest are about 20, is 2e-3 off in float32: the tolerance
# of the float32 backends is 1e-4).
UPDATED_SEED = 8 if backend_support.BACKEND == "torch" else 5


@pytest.mark.parametrize("mode, z_bias, gradient, boundary_input, seed", [
    ("step", 0.5, "hard_sigmoid", "previous", 2), ("step", 0.5, "sigmoid", "previous", 2),
    ("soft", 0.0, "hard_sigmoid", "previous", 2),
    ("step", 1.0, "hard_sigmoid", "updated", UPDATED_SEED)])
def test_gradients_match_finite_differences(mode, z_bias, gradient, boundary_input, seed):
    # Soft mode: the true derivative; step mode: the straight-through one
    # (see `check_gradients_against_reference`), boundary columns included.
    # Step mode's detector bias is shifted so that the upper layers update
    # from the first steps: a layer that COPYs its zero initial state holds
    # an all-zero row whose straight-through derivative (through the copy
    # mask) is not zero, and the cell passes no gradient through the layer
    # normalization of a constant row (`layer_normalization.inverse_deviation`)
    # where the reference's derivative has its 1 / sqrt(eps) Jacobian.
    cell = make_cell(hmkeras.HMRNNCell, boundary_mode=mode, seed=seed, z_bias=z_bias,
                     boundary_gradient=gradient, boundary_input=boundary_input)
    y = check_gradients_against_reference(
        cell, hm_reference.hmrnn, inputs(3)[:, :12], training=True)
    if mode == "step":  # the decisions took both values
        assert set(np.unique(y[..., -2:])) == {0.0, 1.0}


def test_copy_is_exact():
    # Seeded, with the boundary columns scaled up (make_cell) so that every
    # operation occurs; the test counts the COPYs it checked.
    cell = make_cell(hmkeras.HMRNNCell, units=[4, 4, 4], seed=5)
    rng = np.random.default_rng(0)
    states = cell.get_initial_state(batch_size=8)
    copies = {"middle": 0, "top": 0}
    changes = {"middle": 0, "top": 0}
    for _ in range(20):
        x = ops.convert_to_tensor(rng.normal(size=(8, 4)), "float64")
        _, new = cell(x, states)
        new = [ops.convert_to_numpy(s) for s in new]
        states = [ops.convert_to_numpy(s) for s in states]
        z_now, z_prev = new[-1], states[-1]
        copy_mid = (z_prev[:, 1] == 0) & (z_now[:, 0] == 0)
        copy_top = z_now[:, 1] == 0
        assert np.array_equal(new[1][copy_mid], states[1][copy_mid])
        assert np.array_equal(new[2][copy_top], states[2][copy_top])
        copies["middle"] += int(copy_mid.sum())
        copies["top"] += int(copy_top.sum())
        # The other rows were recomputed: they differ from the old state.
        changes["middle"] += int(np.any(new[1][~copy_mid] != states[1][~copy_mid], axis=-1).sum())
        changes["top"] += int(np.any(new[2][~copy_top] != states[2][~copy_top], axis=-1).sum())
        states = new
    assert copies["middle"] >= 10 and copies["top"] >= 10, copies
    assert changes["middle"] >= 10 and changes["top"] >= 10, changes
    assert copies["middle"] + changes["middle"] == 20 * 8


def test_shares_the_hierarchy_machinery():
    assert issubclass(hmkeras.HMRNNCell, HierarchicalCell)
    assert issubclass(hmkeras.HMLSTMCell, HierarchicalCell)
    # The shared base owns the step and the layouts; the cells only define
    # their per-layer update.
    for name in ("call", "split_outputs", "get_initial_state", "build", "_detect_boundary"):
        assert name not in vars(hmkeras.HMRNNCell), name
        assert name not in vars(hmkeras.HMLSTMCell), name


@pytest.mark.parametrize(
    "kwargs, argument",
    [
        (dict(units=0), "units"),
        (dict(units=4, num_layers=1), "num_layers"),
        (dict(units=[4, 4], num_layers=3), "num_layers"),
        (dict(units=4, boundary_mode="hard"), "boundary_mode"),
        (dict(units=4, slope=0), "slope"),
    ],
)
def test_bad_arguments_raise(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        hmkeras.HMRNNCell(**kwargs)
