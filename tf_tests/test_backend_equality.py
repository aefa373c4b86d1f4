"""The same layers on TensorFlow and JAX: equal outputs and gradients.

`backend_equality.py` runs every case of the layer battery on each
backend, in a process of its own (a backend is chosen per process), the
JAX run with the TensorFlow run's weights; outputs, added losses and the
gradients of every trainable weight must agree to float32 rounding.  The
straight-through estimator is part of it: every hierarchical cell runs in
training mode, its boundaries' gradients flowing through Chung Eq. (9).
"""

import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "backend_equality.py")


def _run(backend, *paths):
    env = {**os.environ, "KERAS_BACKEND": backend}
    result = subprocess.run([sys.executable, WORKER, *paths], env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]


@pytest.mark.slow
def test_jax_equals_tensorflow(tmp_path):
    pytest.importorskip("jax", reason="the jax extra: pip install -e '.[jax]'")
    reference, other = str(tmp_path / "tensorflow.npz"), str(tmp_path / "jax.npz")
    _run("tensorflow", reference)
    _run("jax", other, reference.replace(".npz", "_weights.npz"))
    want, got = np.load(reference), np.load(other)
    assert set(got.files) == set(want.files)
    cases = {key.split("/")[0] for key in want.files}
    assert len(cases) >= 15
    for key in sorted(want.files):
        tolerance = dict(rtol=1e-4, atol=1e-5) if "/grad/" in key else dict(rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[key], want[key], err_msg=key, **tolerance)
