"""BoundaryPrior and the hierarchical sequence layers' `boundary_prior`:
value against a NumPy reference, gradients against finite differences, the
loss in `model.losses`, serialization, and its pull on the boundary rate."""

import math

import backend_support
import hm_reference
import keras
import numpy as np
import pytest
from keras import ops

import hmkeras
from hm_fixtures import FEATURES, inputs, make_cell
from one_trace import compile_built

pytestmark = pytest.mark.every_backend

# The relative tolerance of a float64 value against its NumPy reference;
# float32 rounding where float64 arrays are float32 (JAX).
REL = 1e-10 if backend_support.HAS_FLOAT64 else 1e-5


def reference_binomial(z, lengths, mask=None):
    """Eq. (1) with Python's `math.lgamma`, row by row."""
    batch, time, layers = z.shape
    mask = np.ones((batch, time)) if mask is None else mask.astype(float)
    total = 0.0
    for b in range(batch):
        n = mask[b].sum()
        for l in range(layers):
            k = (z[b, :, l] * mask[b]).sum()
            p = 1.0 / lengths[l]
            log_choose = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
            total -= log_choose + k * math.log(p) + (n - k) * math.log(1 - p)
    return total / mask.sum()


def reference_rate(z, lengths, weight):
    return weight * sum((z[..., l].mean() - 1.0 / lengths[l]) ** 2 for l in range(z.shape[-1]))


def hierarchical_outputs(z, seed=0):
    """A fake `[h | z]` sequence output around the boundaries `z`."""
    hidden = np.random.default_rng(seed).normal(size=z.shape[:2] + (5,))
    return np.concatenate([hidden, z], axis=-1)


def test_binomial_value_matches_the_reference():
    rng = np.random.default_rng(0)
    z = (rng.random((3, 12, 2)) < [0.6, 0.1]).astype("float64")
    prior = hmkeras.BoundaryPrior((4, 20), form="binomial")
    assert float(prior(hierarchical_outputs(z))) == pytest.approx(
        reference_binomial(z, (4, 20)), rel=REL)
    mask = rng.random((3, 12)) < 0.7
    assert float(prior(hierarchical_outputs(z), mask=mask)) == pytest.approx(
        reference_binomial(z, (4, 20), mask), rel=REL)
    # Fractional counts (soft boundaries) through lgamma, and the weight.
    soft = rng.random((2, 7, 2))
    scaled = hmkeras.BoundaryPrior((4, 20), form="binomial", weight=0.5)
    assert float(scaled(hierarchical_outputs(soft))) == pytest.approx(
        0.5 * reference_binomial(soft, (4, 20)), rel=REL)


def test_binomial_is_smallest_near_the_target_count():
    # One row of 20 steps, target length 5: the count 4 costs least.
    prior = hmkeras.BoundaryPrior((5,), form="binomial")
    values = []
    for count in range(21):
        z = np.zeros((1, 20, 1))
        z[0, :count, 0] = 1.0
        values.append(float(prior(hierarchical_outputs(z))))
    assert int(np.argmin(values)) == 4
    assert values[0] > values[4] and values[20] > values[12] > values[4]


def test_rate_value_matches_the_reference():
    rng = np.random.default_rng(1)
    z = (rng.random((3, 10, 2)) < [0.7, 0.1]).astype("float32")
    prior = hmkeras.BoundaryPrior((5, 15))
    assert prior.form == "rate" and prior.weight == 5.0
    assert float(prior(hierarchical_outputs(z).astype("float32"))) == pytest.approx(
        reference_rate(z, (5, 15), 5.0), rel=1e-5)


@pytest.mark.parametrize("form", ["binomial", "rate"])
def test_gradient_with_respect_to_the_boundaries(form):
    # The prior as a function of (fractional) boundaries, differentiated by
    # the backend and by central differences in float64: of the prior
    # itself, or where it computes in float32 (JAX) of its NumPy reference.
    rng = np.random.default_rng(2)
    outputs = hierarchical_outputs(rng.uniform(0.1, 0.9, size=(2, 6, 2)))
    prior = hmkeras.BoundaryPrior((3, 9), form=form)
    (gradient,) = backend_support.input_gradients(prior, outputs)
    assert np.all(gradient[..., :-2] == 0)  # only the boundary columns count
    if backend_support.HAS_FLOAT64:
        value, rel = (lambda o: float(prior(o))), 1e-6
    elif form == "binomial":
        value, rel = (lambda o: reference_binomial(o[..., -2:], (3, 9))), 1e-4
    else:
        value, rel = (lambda o: reference_rate(o[..., -2:], (3, 9), 5.0)), 1e-4
    for index in [(0, 0, -2), (1, 3, -1), (0, 5, -1), (1, 2, -2)]:
        numeric = []
        for sign in (1.0, -1.0):
            shifted = outputs.copy()
            shifted[index] += sign * 1e-6
            numeric.append(value(shifted))
        assert gradient[index] == pytest.approx((numeric[0] - numeric[1]) / 2e-6, rel=rel)


@pytest.mark.slow
@pytest.mark.parametrize("form", ["rate", "binomial"])
def test_gradient_through_the_cell_matches_finite_differences(form):
    # In "soft" mode z = z~ = hard_sigm(s_z): the prior is a smooth function
    # of the weights inside the linear region of hard_sigm.  The finite
    # differences are the layer's in float64, or where it computes in
    # float32 (JAX) those of the NumPy references (`hm_reference.hmlstm`,
    # then the prior's) at the cell's weights.
    cell = make_cell(boundary_mode="soft", units=[4, 3, 3])
    rnn = keras.layers.RNN(cell, return_sequences=True, dtype="float64")
    x = inputs()
    rnn.build(x.shape)
    prior = hmkeras.BoundaryPrior((3, 6), form=form)
    weight = next(w for w in cell.weights if w.name == "kernel_1")
    _, _, (gradient,) = backend_support.variable_gradients(
        rnn, [weight], lambda outputs, losses: prior(outputs), x)
    original = ops.convert_to_numpy(weight)
    column = cell._columns_per_unit * cell.units[0]  # the boundary column of W_1
    if backend_support.HAS_FLOAT64:
        tolerance = dict(rel=1e-4, abs=1e-9)

        def value(shifted):
            weight.assign(shifted)
            return float(prior(rnn(x)))
    else:
        # float32 gradients of 24 steps are off by up to 1% (on TensorFlow
        # too, JAX's initial weights given): over 12 steps to 1e-3.
        x = x[:, :12]
        _, _, (gradient,) = backend_support.variable_gradients(
            rnn, [weight], lambda outputs, losses: prior(outputs), x)
        tolerance = dict(rel=1e-3, abs=1e-6)
        values = hm_reference.cell_weights(cell)
        reference_prior = reference_binomial if form == "binomial" else (
            lambda z, lengths: reference_rate(z, lengths, 5.0))

        def value(shifted):
            z = hm_reference.hmlstm(x, dict(values, kernel_1=shifted), cell.units,
                                    mode="soft")["outputs"][..., -2:]
            return reference_prior(z, (3, 6))
    for row in range(FEATURES):
        numeric = []
        for sign in (1.0, -1.0):
            shifted = original.astype("float64")
            shifted[row, column] += sign * 1e-6
            numeric.append(value(shifted))
        weight.assign(original)
        finite_difference = (numeric[0] - numeric[1]) / 2e-6
        assert gradient[row, column] == pytest.approx(finite_difference, **tolerance)
    assert np.abs(gradient[:, column]).max() > 1e-4  # the prior does reach W


@pytest.mark.parametrize("layer_class", [hmkeras.HMLSTM, hmkeras.HMRNN])
def test_sequence_layer_adds_the_prior_while_training(layer_class):
    x = np.random.default_rng(3).normal(size=(2, 9, 4)).astype("float32")
    layer = layer_class(6, return_sequences=True, seed=1)
    assert layer.segment_lengths == (5.0, 15.0) and layer.boundary_prior.form == "rate"
    outputs = layer(x, training=True)
    assert len(layer.losses) == 1
    expected = hmkeras.BoundaryPrior((5, 15), form="rate")(outputs)
    assert float(layer.losses[0]) == pytest.approx(float(expected), rel=1e-6)
    layer(x)  # inference: no prior, the papers' model
    assert layer.losses == []
    # Without return_sequences the loss still covers every step.
    last = layer_class(6, seed=1)
    last.build(x.shape)
    last.set_weights(layer.get_weights())
    last(x, training=True)
    assert float(last.losses[0]) == pytest.approx(float(expected), rel=1e-6)
    papers = layer_class(6, return_sequences=True, boundary_prior=None)
    papers(x, training=True)
    assert papers.losses == [] and papers.boundary_prior is None


# On JAX a masked sequence fails in the layer's time loop with
# `zero_output_for_mask=False` (the default): Keras' JAX loop keeps a masked
# step's output from `states[0]` (keras/src/backend/jax/rnn.py, "Assume the
# first state is the previous output"), the hierarchical cells' `h^1`, not
# their `[h | z]` output: refused on JAX with a clear error, which this mark
# checks.
@pytest.mark.xfail(backend_support.BACKEND == "jax", strict=True, raises=ValueError,
                   reason="refused on JAX: a masked HMLSTM needs zero_output_for_mask=True "
                          "(Keras' JAX loop takes states[0] for the previous output)")
def test_sequence_layer_prior_skips_masked_steps():
    tokens = np.array([[3, 4, 5, 6, 0, 0], [1, 2, 3, 4, 5, 6]])
    embedding = keras.layers.Embedding(8, 4, mask_zero=True)
    layer = hmkeras.HMLSTM(5, return_sequences=True, segment_lengths=(3, 9), seed=0)
    x = embedding(tokens)
    outputs = layer(x, mask=embedding.compute_mask(tokens), training=True)
    expected = hmkeras.BoundaryPrior((3, 9))(outputs, mask=tokens != 0)
    assert float(layer.losses[0]) == pytest.approx(float(expected), rel=1e-6)
    assert float(expected) != pytest.approx(float(hmkeras.BoundaryPrior((3, 9))(outputs)))


def test_prior_options_round_trip_and_bad_values():
    layer = hmkeras.HMRNN(4, num_layers=4, boundary_prior="rate", segment_lengths=(3, 6, 12))
    config = layer.get_config()
    assert config["boundary_prior"] == "rate" and config["segment_lengths"] == [3.0, 6.0, 12.0]
    again = hmkeras.HMRNN.from_config(config)
    assert again.boundary_prior.get_config() == layer.boundary_prior.get_config()
    assert hmkeras.HMLSTM(4, boundary_prior=None).get_config()["segment_lengths"] is None
    prior = hmkeras.BoundaryPrior((4, 16), form="rate", weight=2.0)
    assert keras.regularizers.deserialize(
        keras.regularizers.serialize(prior)).get_config() == prior.get_config()
    for kwargs, match in (
        (dict(boundary_prior="poisson"), "`boundary_prior` must be one of"),
        (dict(segment_lengths=(5,)), r"num_layers - 1 = 2 values"),
        (dict(segment_lengths=(5, 1)), "`segment_lengths` must be"),
        (dict(boundary_prior=None, segment_lengths=(5, 15)), "needs a boundary prior"),
    ):
        with pytest.raises(ValueError, match=match):
            hmkeras.HMLSTM(4, **kwargs)
    with pytest.raises(ValueError, match="return_sequences=True"):
        prior(np.zeros((2, 5), "float32"))


@pytest.mark.slow
# The default form (the binomial form's gradient: the finite-difference
# test above).
@pytest.mark.parametrize("form", ["rate"])
def test_pulls_the_rate_toward_its_target_in_fit(form):
    # One-step sequences: z^1_1 depends on x_1 alone (z_0 = 0, h_0 = 0), so
    # the prior is the only force on the detector and must move its rate
    # toward the target from either side; with weight 0 the rate stays.
    # (Without layer normalization: the prior acts on z alike, and a step
    # compiles in half the time.)
    x = np.random.default_rng(1).normal(size=(64, 1, 3)).astype("float32")

    def rate_after_fit(length, bias, weight=None):
        keras.utils.set_random_seed(0)
        prior = hmkeras.BoundaryPrior((length, 10.0), form=form, weight=weight)
        model = keras.Sequential([
            keras.Input((1, 3)),
            keras.layers.RNN(hmkeras.HMLSTMCell(8, boundary_bias=bias, layer_norm=False),
                             return_sequences=True, activity_regularizer=prior),
        ])
        compile_built(model, keras.optimizers.Adam(0.02), loss=lambda y, p: 0.0 * ops.sum(p))
        before = float(np.mean(model(x)[..., -2]))
        model.fit(x, x, epochs=20, batch_size=64, verbose=0)
        return before, float(np.mean(model(x)[..., -2]))

    before, after = rate_after_fit(1.1, bias=-0.5)  # target rate 0.91
    assert before < 0.5 and after > before + 0.1
    before, after = rate_after_fit(10.0, bias=1.0)  # target rate 0.1
    assert before > 0.5 and after < before - 0.1
    before, after = rate_after_fit(1.1, bias=-0.5, weight=0.0)
    assert after == before


@pytest.mark.slow
def test_default_fit_on_the_embedded_corpus_holds_the_rates_near_the_targets():
    # A plain `fit` of the default layer, as a user writes it: after 120
    # steps the boundary rates sit near 1/5 and 1/15; the papers' model
    # (boundary_prior=None) on the same batches fires on most characters.
    corpus = hmkeras.data.SyntheticHierarchicalCorpus(
        seed=0, train_chars=20_000, valid_chars=1_000, test_chars=1_000)
    text = corpus.text("train")
    symbols = sorted(set(text))
    ids = np.array([symbols.index(c) for c in text])
    x = ids[:19_200].reshape(-1, 40)
    y = ids[1:19_201].reshape(-1, 40)

    def rates_after_fit(**prior):
        keras.utils.set_random_seed(0)
        layer = hmkeras.HMLSTM(16, return_sequences=True, **prior)
        tokens = keras.Input((None,), dtype="int32")
        outputs = layer(keras.layers.Embedding(len(symbols), 8)(tokens))
        model = keras.Model(tokens, keras.layers.Dense(len(symbols))(outputs))
        compile_built(model, keras.optimizers.Adam(0.01, clipnorm=1.0),
                      keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(x, y, batch_size=16, epochs=4, shuffle=False, verbose=0)
        _, z = layer.split_outputs(keras.Model(tokens, outputs)(x[:100]))
        return np.asarray(z).mean(axis=(0, 1))

    rates = rates_after_fit()
    assert 0.2 * 0.7 < rates[0] < 0.2 * 1.3 and 0.067 * 0.5 < rates[1] < 0.067 * 1.5
    assert rates_after_fit(boundary_prior=None)[0] > 0.5


@pytest.mark.parametrize("form", ["binomial", "rate"])
def test_a_free_layer_has_no_term_and_no_gradient(form):
    # segment_lengths=(None, 15): only z^2 is held; z^1's rate is left to
    # another loss (the rise placement on unsegmented text).
    rng = np.random.default_rng(2)
    z = rng.uniform(0.05, 0.95, size=(3, 10, 2))
    free = hmkeras.BoundaryPrior((None, 15), form=form)
    held = hmkeras.BoundaryPrior((15,), form=form)  # reads the last column only
    assert free.target_rates == (None, 1.0 / 15)
    outputs = hierarchical_outputs(z)
    value = free(outputs)
    assert float(value) == pytest.approx(float(held(outputs)),
                                         rel=1e-12 if backend_support.HAS_FLOAT64 else 1e-6)
    if form == "rate":
        assert float(value) == pytest.approx(reference_rate(z[..., 1:], (15,), 5.0), rel=REL)
    (gradient,) = backend_support.input_gradients(free, outputs)
    assert np.all(gradient[..., -2] == 0.0) and np.any(gradient[..., -1] != 0.0)
    assert hmkeras.BoundaryPrior.from_config(free.get_config()).segment_lengths == (None, 15.0)


def test_free_layers_in_the_layer_and_bad_values():
    layer = hmkeras.HMLSTM(4, return_sequences=True, segment_lengths=[None, 15])
    assert layer.segment_lengths == (None, 15.0)
    assert hmkeras.HMLSTM.from_config(layer.get_config()).segment_lengths == (None, 15.0)
    for bad in [(None, None), [None], (None, 1.0), (None, "x")]:
        with pytest.raises(ValueError, match="segment_lengths.*None for a layer left free"):
            hmkeras.BoundaryPrior(bad)
