"""The public layers under test by `test_input_hardening.py` and
`test_dtype_policies.py`: one registry, so that every check runs over
every class.

`RECURRENT[name]` is a `Case(make, inputs)`: `make(dtype=None,
**rnn_kwargs)` returns a layer over `(batch, time, FEATURES)` sequences
(a cell inside `keras.layers.RNN`, or a sequence layer), and
`inputs(rng, batch, steps, dtype)` draws valid inputs for it.
`HEADS[name]` is `(make(dtype), smallest accepted input rank)` for the
per-position layers, whose inputs have `HEAD_FEATURES` features.
"""

import collections

import keras

import hmkeras

FEATURES = 3
Case = collections.namedtuple("Case", ["make", "inputs"])


def _floats(rng, batch, steps, dtype="float32"):
    return rng.normal(size=(batch, steps, FEATURES)).astype(dtype)


def _operations(rng, batch, steps, dtype="float32"):
    """RRNet inputs: two embedding columns, then an operation id column."""
    x = rng.normal(size=(batch, steps, FEATURES)).astype(dtype)
    x[..., -1] = rng.integers(0, 3, size=(batch, steps))
    return x


def _rnn(make_cell):
    def make(dtype=None, **rnn_kwargs):
        return keras.layers.RNN(make_cell(dtype), dtype=dtype, **rnn_kwargs)
    return make


def _layer(layer_class, *args, **kwargs):
    def make(dtype=None, **rnn_kwargs):
        return layer_class(*args, dtype=dtype, **kwargs, **rnn_kwargs)
    return make


RECURRENT = {
    "HMLSTMCell": Case(_rnn(lambda d: hmkeras.HMLSTMCell([4, 3], seed=0, dtype=d)),
                       _floats),
    "HMRNNCell": Case(_rnn(lambda d: hmkeras.HMRNNCell([4, 3], seed=0, dtype=d)),
                      _floats),
    "MultiplicativeLSTMCell": Case(
        _rnn(lambda d: hmkeras.MultiplicativeLSTMCell(4, seed=0, dtype=d)), _floats),
    "RecurrentRecursiveCell": Case(
        _rnn(lambda d: hmkeras.RecurrentRecursiveCell(4, 2, seed=0, dtype=d)),
        _operations),
    "AveragingWrapper": Case(
        _rnn(lambda d: hmkeras.AveragingWrapper(
            hmkeras.HMLSTMCell([4, 3], seed=1, dtype=d), return_cell_output=True,
            dtype=d)),
        _floats),
    "AttentionWrapper": Case(
        _rnn(lambda d: hmkeras.AttentionWrapper(
            hmkeras.HMRNNCell([4, 3], seed=2, dtype=d), 3, "combined",
            return_attention=True, dtype=d)),
        _floats),
    "HMLSTM": Case(_layer(hmkeras.HMLSTM, [4, 3], seed=0), _floats),
    "HMRNN": Case(_layer(hmkeras.HMRNN, [4, 3], seed=0), _floats),
    "MultiplicativeLSTM": Case(_layer(hmkeras.MultiplicativeLSTM, 4, seed=0), _floats),
}
SEQUENCE_LAYERS = ("HMLSTM", "HMRNN", "MultiplicativeLSTM")


class _Reverse(keras.layers.Layer):
    """`TiedEmbedding(...)(h, reverse=True)` as a one-argument layer."""

    def __init__(self, dtype=None):
        super().__init__(dtype=dtype)
        self.supports_masking = True
        self.tied = hmkeras.TiedEmbedding(7, 5, dtype=dtype)

    def call(self, inputs):
        return self.tied(inputs, reverse=True)


HEAD_FEATURES = 5
HEADS = {
    # (make(dtype), smallest accepted rank)
    "GatedOutputEmbedding": (
        lambda d: hmkeras.GatedOutputEmbedding(4, layer_sizes=[2, 2], use_bias=True,
                                               dtype=d), 2),
    "SimpleOutputEmbedding": (
        lambda d: hmkeras.SimpleOutputEmbedding(4, layer_sizes=[2, 2], dtype=d), 2),
    "MixtureDensityOutput": (lambda d: hmkeras.MixtureDensityOutput(2, dtype=d), 1),
    "TiedEmbedding_reverse": (_Reverse, 1),
}
