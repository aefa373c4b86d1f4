"""`agree_on_finiteness`: one replica's overflow is seen by every replica.

Runs in a subprocess with two logical CPU devices (MirroredStrategy needs
them configured before TensorFlow initializes)."""

import pytest
import json
import os
import subprocess
import sys

from example_modules import ROOT

_SCRIPT = r"""
import json
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from hmkeras.training.replica_finiteness import agree_on_finiteness

strategy = tf.distribute.MirroredStrategy(
    [d.name for d in tf.config.list_logical_devices("CPU")])


def replica_gradients(overflow_on):
    def fn():
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        bad = tf.cast(tf.equal(replica, overflow_on), tf.float32)
        dense = tf.constant([1.0, 2.0]) + tf.where(bad > 0, float("inf"), 0.0)
        sparse = tf.IndexedSlices(tf.constant([[3.0]]), tf.constant([0]), tf.constant([2, 1]))
        dense, sparse, none = agree_on_finiteness([dense, sparse, None])
        return dense, sparse.values, tf.constant(none is None)
    results = strategy.run(fn)
    return [[strategy.experimental_local_results(r)[i].numpy().tolist() for r in results]
            for i in range(2)]


print("REPORT " + json.dumps({str(k): replica_gradients(k) for k in (-1, 0, 1)}))
"""


def _report():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    result = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True,
                            text=True, cwd=ROOT, env=env, timeout=600)
    lines = [line for line in result.stdout.splitlines() if line.startswith("REPORT ")]
    assert result.returncode == 0 and lines, result.stderr[-3000:]
    return json.loads(lines[-1][len("REPORT "):])


@pytest.mark.slow
def test_one_replicas_overflow_makes_every_replicas_gradients_non_finite():
    report = _report()
    # No overflow: both replicas' gradients unchanged, None kept.
    for dense, sparse, none in report["-1"]:
        assert dense == [1.0, 2.0] and sparse == [[3.0]] and none is True
    # An overflow on replica 0 or on replica 1 alone: every gradient of both
    # replicas is non-finite (the first replica's too, which Keras' loss
    # scale optimizer consults), the None stays None.
    for overflow_on in ("0", "1"):
        for dense, sparse, none in report[overflow_on]:
            assert all(v != v or abs(v) == float("inf") for v in dense)
            assert all(v != v for v in sparse[0])
            assert none is True
