"""Mixed precision: loss scaling in truncated BPTT, float32 boundary noise."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import hmkeras
from hmkeras.cells import straight_through
from hmkeras.models.char_language_model import CharLanguageModel


@pytest.fixture
def restore_policy():
    yield
    keras.config.set_dtype_policy("float32")


def _one_sgd_update(policy):
    keras.config.set_dtype_policy(policy)
    lm = CharLanguageModel(vocab_size=11, cell="hmlstm", units=8, embedding_dim=4,
                           output_units=8, seed=0)
    trainer = hmkeras.TruncatedBPTTModel(lm, batch_size=4)
    optimizer = keras.optimizers.SGD(0.5)
    if policy == "mixed_float16":
        # A fixed scale that does not overflow float16 here, so that no step
        # is skipped (the default 2**15 skips the first steps).
        optimizer = keras.optimizers.LossScaleOptimizer(
            optimizer, initial_scale=2.0**8, dynamic_growth_steps=10**6)
    trainer.compile(optimizer, loss=trainer.loss_function())
    before = [w.numpy().astype("float64") for w in lm.network.trainable_weights]
    x = np.random.default_rng(1).integers(0, 11, (4, 12))
    trainer.fit(x, np.roll(x, -1, 1), batch_size=4, epochs=1, verbose=0, shuffle=False)
    after = [w.numpy().astype("float64") for w in lm.network.trainable_weights]
    return trainer, [a - b for a, b in zip(after, before)]


@pytest.mark.slow
def test_mixed_float16_update_equals_the_float32_update(restore_policy):
    _, reference = _one_sgd_update("float32")
    trainer, mixed = _one_sgd_update("mixed_float16")
    assert isinstance(trainer.optimizer, keras.optimizers.LossScaleOptimizer)
    total = sum(np.abs(r).sum() for r in reference)
    difference = sum(np.abs(r - m).sum() for r, m in zip(reference, mixed))
    # float16 compute: a few percent; an unscaled loss would leave the
    # mixed update 2**8 times too small (difference ~ total).
    assert difference < 0.05 * total
    for r, m in zip(reference, mixed):
        assert np.all(np.isfinite(m))


def test_bernoulli_boundaries_compare_in_float32():
    # hard_sigm(2**-7) = 0.50390625; u = 0.502 in float32 is below it, but
    # rounds to 0.50390625 in bfloat16 (8-bit mantissa) and would not be.
    x = tf.constant([2.0 ** -7] * 3, tf.bfloat16)
    noise = tf.constant([0.502, 0.5035, 0.504], tf.float32)
    z = straight_through.bernoulli_straight_through(x, tf.constant(1.0), noise)
    assert z.dtype == tf.bfloat16
    np.testing.assert_array_equal(z.numpy().astype("float32"), [1.0, 1.0, 0.0])


def test_sampled_boundaries_under_mixed_bfloat16_follow_hard_sigm(restore_policy):
    # One detector with a fixed pre-activation: its Bernoulli rate over many
    # draws must match hard_sigm at a resolution bfloat16 noise lacks.
    keras.config.set_dtype_policy("mixed_bfloat16")
    cell = hmkeras.HMLSTMCell(4, num_layers=2, boundary_mode="sample", seed=3)
    cell.build((None, 3))
    preactivation = tf.fill((200_000, 1), tf.constant(2.0 ** -7 + 2.0 ** -9, tf.bfloat16))
    z = cell._detect_boundary(preactivation, tf.constant(1.0), training=True)
    expected = (1.0 + (2.0 ** -7 + 2.0 ** -9)) / 2.0  # 0.5048828125
    rate = float(tf.reduce_mean(tf.cast(z, tf.float32)))
    assert rate == pytest.approx(expected, abs=0.004)
