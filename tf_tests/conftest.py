"""pytest set-up shared by every test folder.

The test folders mirror the packages of `hmkeras`; the shared test
helpers (`hm_fixtures`, `hm_reference`, `example_modules`) live here, at
the top of `tf_tests/`, and are importable from every folder.
"""

import atexit
import gc
import os
import shutil
import sys
import tempfile

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# The README's command runs two test processes on two cores: one TensorFlow
# thread each (and in the processes tests start, which inherit it), so that
# no process' thread pools compete for the other's core.  Set before
# TensorFlow is imported; the tests' models are tiny either way.
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")
os.environ.setdefault("TF_NUM_INTEROP_THREADS", "1")
# JAX's persistent compilation cache, a folder of this test process's own
# that the processes it starts share: the JAX runs of the examples compile
# the same steps again in each process (a run and its resumption), and a
# compiled program is keyed by the program, its options and JAX's version,
# so a cached one is the one that would be compiled (it takes
# test_char_lm_on_jax.py from 100 s to 73 s).  One folder per test process,
# removed when it ends: no two processes that run at once write to one
# folder, and nothing is kept from a run to the next.
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    _JAX_CACHE = tempfile.mkdtemp(prefix="hmkeras-tests-jax-cache-")
    atexit.register(shutil.rmtree, _JAX_CACHE, ignore_errors=True)
    os.environ["JAX_COMPILATION_CACHE_DIR"] = _JAX_CACHE
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


def pytest_collection_modifyitems(config, items):
    """On a backend other than TensorFlow (`KERAS_BACKEND=jax`), only the
    tests marked `every_backend` run: the layers, losses, heads, wrappers
    and callbacks; the rest (data builders, tf.data, SavedModel, the
    training drivers) is TensorFlow's."""
    import keras

    if keras.backend.backend() == "tensorflow":
        return
    kept = [item for item in items if item.get_closest_marker("every_backend")]
    config.hook.pytest_deselected(items=[i for i in items if i not in kept])
    items[:] = kept


@pytest.fixture(autouse=True, scope="module")
def _fresh_keras_state_per_module():
    """After each test file, Keras' global state is cleared (as Keras' own
    `TestCase` does before every test)."""
    yield
    keras = sys.modules.get("keras")
    if keras is not None:
        keras.backend.clear_session(free_memory=False)


@pytest.fixture(autouse=True)
def _garbage_collected_and_survivors_frozen():
    """After each test, the garbage is collected and what survives frozen
    (`gc.freeze`), so that the collector's full passes walk only the objects
    of the test that runs, not all that earlier tests left alive (without
    it, about a third of a test process' time went to those passes)."""
    yield
    gc.collect()
    gc.freeze()


@pytest.fixture
def no_network(monkeypatch):
    """Any download attempt fails the test, and HMKERAS_OFFLINE is set: the
    data builders' tests read files they write, never the network."""
    import tensorflow_datasets as tfds

    from hmkeras.data import sources

    def _forbidden(*args, **kwargs):
        raise AssertionError("a test tried to download")

    monkeypatch.setattr(tfds.download.DownloadManager, "download", _forbidden)
    monkeypatch.setattr(sources, "network_reachable", _forbidden)
    monkeypatch.setenv(sources.OFFLINE_ENV_VAR, "1")
