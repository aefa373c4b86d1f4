"""The layer battery: one declarative `LayerCase` per public layer class.

`tf_tests/test_layer_battery.py` runs the same checks on every case, in the
spirit of the checks Keras runs on its own layers: configuration round
trip, weight counts after `build`, symbolic and eager output shapes and
dtypes, one training step under XLA, a mixed-precision pass, masking,
`.keras` save/load and SavedModel export.

A case says how to make a tiny instance, what its inputs look like, and
what the checks should find, computed here from the equations and not read
from the layer: the number of weight tensors and of scalars (from the
matrix sizes of the papers' equations), the output shape, which masking
rule applies.  A check that does not apply to a class is listed in
`skips` with its reason; the test reports it as a skip.

Cells (`is_cell=True`) are tested inside `keras.layers.RNN(cell,
return_sequences=True)`, as users run them.
"""

import dataclasses
from typing import Callable, Optional

import keras
import numpy as np

import hmkeras

BATCH = 2
STEPS = 5
FEATURES = 3

#: The checks, in the order the test file runs them.
CHECKS = (
    "config", "weights", "shapes", "xla_training", "mixed_precision",
    "masking", "keras_file", "export",
)
#: Masking rules: `"rnn"`: a masked step carries the whole state and repeats
#: the previous output (Keras' RNN rule); `"propagate"`: a position-wise
#: layer passes the incoming mask on unchanged.
MASKING_RULES = ("rnn", "propagate")


@dataclasses.dataclass(frozen=True)
class WeightCount:
    """Expected weights once built: tensors and scalars, per trainability."""

    trainable: int
    trainable_scalars: int
    non_trainable: int = 0
    non_trainable_scalars: int = 0

    def __add__(self, other):
        return WeightCount(*(a + b for a, b in zip(
            dataclasses.astuple(self), dataclasses.astuple(other))))


def _tensors(*sizes):
    """Trainable tensors of the given numbers of scalars."""
    return WeightCount(len(sizes), sum(sizes))


# ----------------------------------------------------------------------
# Weight counts from the equations
# ----------------------------------------------------------------------
def hierarchical_weights(features, units, columns_per_unit, layer_norm,
                         cell_norm, top_down=True):
    """Weights of an HM cell (Chung et al. Eq. 4-7; Kadar et al. App. A/B).

    Layer l reads `h^{l-1}` (size `d`) through W, `h^l` through U and,
    below the top, `h^{l+1}` through V; every product has
    `columns_per_unit * n_l` gate columns plus, below the top, one boundary
    column `z~`; one bias of that width.  Layer normalization (Ba et al.
    Eq. 20) adds a gain and a bias per product, and for the LSTM
    (`cell_norm`) one pair over `c^l` (Eq. 22).  The hard-sigmoid slope is
    one non-trainable scalar.
    """
    total = WeightCount(0, 0, non_trainable=1, non_trainable_scalars=1)
    below = features
    for index, n in enumerate(units):
        above = units[index + 1] if index + 1 < len(units) else None
        columns = columns_per_unit * n + (above is not None)
        products = [below * columns, n * columns]  # W_l, U_l
        if above is not None and top_down:
            products.append(above * columns)  # V_l
        total += _tensors(*products, columns)  # ... and b_l
        if layer_norm:
            total += _tensors(*[columns] * (2 * len(products)))
            if cell_norm:
                total += _tensors(n, n)
        below = n
    return total


def hm_lstm_weights(features, units, layer_norm):
    return hierarchical_weights(features, units, 4, layer_norm, cell_norm=True)


def hm_rnn_weights(features, units, layer_norm):
    return hierarchical_weights(features, units, 1, layer_norm, cell_norm=False)


def mlstm_weights(features, units, multiplicative_units, normalized=()):
    """Krause et al. Eq. 17-21: `[W_mx | W_ix W_fx W_ox W_hx]`, `W_mh`,
    `[W_im W_fm W_om W_hm]`, the 4 biases; weight normalization adds one
    gain per output column of each matrix in `normalized` (`"input"`,
    `"recurrent"` for W_mh, `"multiplicative"` for the W_*m)."""
    n, m = units, multiplicative_units
    total = _tensors(features * (m + 4 * n), n * m, m * 4 * n, 4 * n)
    gains = {"input": m + 4 * n, "recurrent": m, "multiplicative": 4 * n}
    for name in normalized:
        total += _tensors(gains[name])
    return total


def recurrent_recursive_weights(embedding, units, tree_memory=False):
    """Jacob et al. Sec. 2: F1, F2, LSTM_R (one input, one recurrent matrix
    and one bias over their 3 x 4 gates), the merge MLP over `[h; h_down]`,
    F4 (an LSTM unit), with `memory="tree"` the down gate of F4 over
    `[e; h_m]`, and the policy over `[h; e]` with 3 logits."""
    u = units
    down_gate = (embedding * u, u * u, u) if tree_memory else ()
    return _tensors(
        embedding * 12 * u, u * 12 * u, 12 * u,          # F1 | F2 | LSTM_R
        2 * u * u, u,                                    # merge MLP
        embedding * 4 * u, u * 4 * u, 4 * u,             # F4
        *down_gate,
        (u + embedding) * 3, 3,                          # policy
    )


def keras_lstm_weights(features, units):
    return _tensors(features * 4 * units, units * 4 * units, 4 * units)


def wrapper_output_weights(remembered, output_units):
    """Salton & Kelleher Eq. 11: `W_c` over `[h_t; c_t]` and its bias."""
    return _tensors(2 * remembered * output_units, output_units)


def combined_attention_weights(remembered, attention_units):
    """`v^T tanh(W_1 h_i + W_2 h_t)`: W_1, W_2 and v."""
    return _tensors(remembered * attention_units, remembered * attention_units,
                    attention_units)


# ----------------------------------------------------------------------
# Inputs
# ----------------------------------------------------------------------
def float_inputs(features=FEATURES, steps=STEPS):
    def make(rng):
        return rng.normal(size=(BATCH, steps, features)).astype("float32")
    make.shape = (steps, features)
    make.dtype = "float32"
    return make


def operation_inputs(embedding, steps=STEPS):
    """RRNet inputs `[e_t | op_t]` with valid operations (the stack never
    overflows or underflows) and every operation present."""
    operations = np.array([[0, 2, 1, 0, 1], [2, 0, 0, 1, 1]])[:, :steps]

    def make(rng):
        e = rng.normal(size=(BATCH, steps, embedding)).astype("float32")
        return np.concatenate([e, operations[..., None].astype("float32")], -1)
    make.shape = (steps, embedding + 1)
    make.dtype = "float32"
    return make


def id_inputs(vocab_size, steps=STEPS):
    def make(rng):
        return rng.integers(0, vocab_size, size=(BATCH, steps)).astype("int32")
    make.shape = (steps,)
    make.dtype = "int32"
    return make


# ----------------------------------------------------------------------
# The cases
# ----------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class LayerCase:
    """What the battery needs to know about one public layer class.

    Attributes:
        name: Test id.
        cls: The public class under test.
        make: `make(**kwargs)` -> a new tiny instance (kwargs: `dtype`).
        inputs: `inputs(rng)` -> the NumPy batch; `.shape` (without the
            batch axis) and `.dtype` describe it.
        weights: Expected `WeightCount`, from the equations.
        output_shape: Expected output shape without the batch axis.
        is_cell: Whether `make()` is an RNN cell (run in `keras.layers.RNN`).
        call_kwargs: Extra call arguments (e.g. `reverse=True`).
        masking: One of `MASKING_RULES`, or None (then `skips` says why).
        float32_output: Whether the output stays float32 under a mixed
            policy (by design, e.g. mixture parameters).
        frozen_in_training: Trainable weight names that one training step
            legitimately leaves unchanged, with the reason.
        skips: `{check: reason}` for the checks that do not apply.
    """

    name: str
    cls: type
    make: Callable[..., keras.layers.Layer]
    inputs: Callable[[np.random.Generator], np.ndarray]
    weights: WeightCount
    output_shape: tuple
    is_cell: bool = False
    call_kwargs: dict = dataclasses.field(default_factory=dict)
    masking: Optional[str] = None
    float32_output: bool = False
    frozen_in_training: dict = dataclasses.field(default_factory=dict)
    skips: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        unknown = set(self.skips) - set(CHECKS)
        if unknown:
            raise ValueError(f"{self.name}: unknown checks in skips: {unknown}")
        if self.masking is None and "masking" not in self.skips:
            raise ValueError(f"{self.name}: give a masking rule or a skip reason")
        if self.masking is not None and self.masking not in MASKING_RULES:
            raise ValueError(f"{self.name}: masking={self.masking!r}")

    def __str__(self):
        return self.name


def _hm(cls, units, layer_norm):
    def make(**kwargs):
        return cls(units, layer_norm=layer_norm, seed=3, **kwargs)
    return make


HM_UNITS = [4, 4, 3]
HM_OUTPUT = sum(HM_UNITS) + len(HM_UNITS) - 1
SMALL_HM = [4, 3]
VOCAB = 7


def _cases():
    cases = []
    for layer_norm in (True, False):
        suffix = "ln" if layer_norm else "no_ln"
        # Three layers (a middle layer reads both neighbours) with layer
        # normalization; two without, to keep the XLA compilations short.
        units = HM_UNITS if layer_norm else SMALL_HM
        output = (STEPS, sum(units) + len(units) - 1)
        cases.append(LayerCase(
            f"HMLSTMCell-{suffix}", hmkeras.HMLSTMCell,
            _hm(hmkeras.HMLSTMCell, units, layer_norm), float_inputs(),
            hm_lstm_weights(FEATURES, units, layer_norm), output,
            is_cell=True, masking="rnn",
        ))
        cases.append(LayerCase(
            f"HMRNNCell-{suffix}", hmkeras.HMRNNCell,
            _hm(hmkeras.HMRNNCell, units, layer_norm), float_inputs(),
            hm_rnn_weights(FEATURES, units, layer_norm), output,
            is_cell=True, masking="rnn",
        ))
    cases += [
        LayerCase(
            "MultiplicativeLSTMCell", hmkeras.MultiplicativeLSTMCell,
            lambda **kw: hmkeras.MultiplicativeLSTMCell(
                4, multiplicative_units=5, weight_normalization=True, seed=1, **kw),
            # Default weight_normalization_scope: the matrices on h_{t-1} and m_t.
            float_inputs(),
            mlstm_weights(FEATURES, 4, 5, normalized=("recurrent", "multiplicative")),
            (STEPS, 4),
            is_cell=True, masking="rnn",
        ),
        LayerCase(
            "RecurrentRecursiveCell", hmkeras.RecurrentRecursiveCell,
            lambda **kw: hmkeras.RecurrentRecursiveCell(
                4, max_depth=2, mode="supervised", seed=1, **kw),
            operation_inputs(FEATURES), recurrent_recursive_weights(FEATURES, 4),
            (STEPS, 4 + 3), is_cell=True, masking="rnn",
        ),
        LayerCase(
            # Tree-LSTM merges: the stack saves c_down beside h_down.
            "RecurrentRecursiveCell_tree_memory", hmkeras.RecurrentRecursiveCell,
            lambda **kw: hmkeras.RecurrentRecursiveCell(
                4, max_depth=2, mode="supervised", memory="tree", seed=1, **kw),
            operation_inputs(FEATURES), recurrent_recursive_weights(FEATURES, 4, True),
            (STEPS, 4 + 3), is_cell=True, masking="rnn",
        ),
        LayerCase(
            # The paper's reading: up to two splits / merges before each
            # token's recur, sampled from the policy in training.
            "RecurrentRecursiveCell_between_tokens", hmkeras.RecurrentRecursiveCell,
            lambda **kw: hmkeras.RecurrentRecursiveCell(
                4, max_depth=2, mode="reinforce", operations_per_token=3, seed=1, **kw),
            float_inputs(), recurrent_recursive_weights(FEATURES, 4),
            (STEPS, 4 + 3 + 2), is_cell=True, masking="rnn",
        ),
        LayerCase(
            # The loop that opens its cell's sequence (dropout masks).
            "RNN", hmkeras.RNN,
            lambda **kw: hmkeras.RNN(
                hmkeras.HMLSTMCell(SMALL_HM, dropout=0.2, recurrent_dropout=0.2, seed=3),
                return_sequences=True, **kw),
            float_inputs(), hm_lstm_weights(FEATURES, SMALL_HM, True),
            (STEPS, sum(SMALL_HM) + len(SMALL_HM) - 1), masking="rnn",
        ),
        LayerCase(
            "HMLSTM", hmkeras.HMLSTM,
            lambda **kw: hmkeras.HMLSTM(SMALL_HM, seed=3, return_sequences=True, **kw),
            float_inputs(), hm_lstm_weights(FEATURES, SMALL_HM, True),
            (STEPS, sum(SMALL_HM) + 1), masking="rnn",
        ),
        LayerCase(
            "HMRNN", hmkeras.HMRNN,
            # Without layer normalization: the sequence layers' other path
            # (HMLSTM above runs the normalized one).
            lambda **kw: hmkeras.HMRNN(SMALL_HM, layer_norm=False, seed=3,
                                       return_sequences=True, **kw),
            float_inputs(), hm_rnn_weights(FEATURES, SMALL_HM, False),
            (STEPS, sum(SMALL_HM) + 1), masking="rnn",
        ),
        LayerCase(
            "MultiplicativeLSTM", hmkeras.MultiplicativeLSTM,
            lambda **kw: hmkeras.MultiplicativeLSTM(
                4, seed=1, return_sequences=True, **kw),
            float_inputs(), mlstm_weights(FEATURES, 4, 4), (STEPS, 4),
            masking="rnn",
        ),
        LayerCase(
            "AveragingWrapper", hmkeras.AveragingWrapper,
            lambda **kw: hmkeras.AveragingWrapper(
                keras.layers.LSTMCell(4, seed=1, dtype=kw.get("dtype")), units=5, **kw),
            float_inputs(),
            keras_lstm_weights(FEATURES, 4) + wrapper_output_weights(4, 5),
            (STEPS, 5), is_cell=True, masking="rnn",
        ),
        LayerCase(
            "AttentionWrapper", hmkeras.AttentionWrapper,
            lambda **kw: hmkeras.AttentionWrapper(
                hmkeras.HMRNNCell(SMALL_HM, layer_norm=False, seed=1,
                                  dtype=kw.get("dtype")),
                3, "combined", attention_units=2, return_attention=True, **kw),
            float_inputs(),
            hm_rnn_weights(FEATURES, SMALL_HM, False)
            + combined_attention_weights(sum(SMALL_HM), 2)
            + wrapper_output_weights(sum(SMALL_HM), sum(SMALL_HM)),
            (STEPS, sum(SMALL_HM) + 3), is_cell=True, masking="rnn",
        ),
        LayerCase(
            "GatedOutputEmbedding", hmkeras.GatedOutputEmbedding,
            lambda **kw: hmkeras.GatedOutputEmbedding(
                6, layer_sizes=HM_UNITS, use_bias=True, **kw),
            float_inputs(HM_OUTPUT),
            # Chung Eq. 11: w^l over [h^1..h^L] (one column per layer, and
            # its bias); Eq. 12: W^e over the gated states, and its bias.
            _tensors(sum(HM_UNITS) * 3, sum(HM_UNITS) * 6, 3, 6),
            (STEPS, 6), masking="propagate",
        ),
        LayerCase(
            "SimpleOutputEmbedding", hmkeras.SimpleOutputEmbedding,
            lambda **kw: hmkeras.SimpleOutputEmbedding(6, layer_sizes=HM_UNITS, **kw),
            float_inputs(HM_OUTPUT),
            _tensors(sum(HM_UNITS) * 6),  # Kadar SimplerOut: W^e, no bias
            (STEPS, 6), masking="propagate",
        ),
        LayerCase(
            "MixtureDensityOutput", hmkeras.MixtureDensityOutput,
            lambda **kw: hmkeras.MixtureDensityOutput(2, **kw),
            float_inputs(4),
            _tensors(4 * (6 * 2 + 1), 6 * 2 + 1),  # Graves Eq. 17: 6M + 1 outputs
            (STEPS, 13), masking="propagate", float32_output=True,
        ),
        LayerCase(
            "TiedEmbedding-embed", hmkeras.TiedEmbedding,
            lambda **kw: hmkeras.TiedEmbedding(VOCAB, 4, **kw),
            id_inputs(VOCAB), _tensors(VOCAB * 4, VOCAB), (STEPS, 4),
            frozen_in_training={"bias": "the bias only enters reverse=True (logits)"},
            skips={"masking": "token ids carry no mask: there is no mask_zero "
                              "option, id 0 is an ordinary token"},
        ),
        LayerCase(
            "TiedEmbedding-reverse", hmkeras.TiedEmbedding,
            lambda **kw: hmkeras.TiedEmbedding(VOCAB, 4, **kw),
            float_inputs(4), _tensors(VOCAB * 4, VOCAB), (STEPS, VOCAB),
            call_kwargs={"reverse": True}, masking="propagate",
        ),
    ]
    return cases


CASES = _cases()

@dataclasses.dataclass(frozen=True)
class ModelCase:
    """A public `keras.Model` subclass: only the saving checks apply
    (configuration, `.keras`, export); the layer checks run on its layers.

    Attributes:
        name: Test id.
        cls: The public class.
        make: `make()` -> a new tiny model.
        inputs: `inputs()` -> a batch (an array or a dict of arrays).
        input_signature: What `model.export` needs for a subclassed model.
    """

    name: str
    cls: type
    make: Callable[[], keras.Model]
    inputs: Callable[[], object]
    input_signature: list

    def __str__(self):
        return self.name


def _ids(seed=0):
    return np.random.default_rng(seed).integers(1, VOCAB, size=(BATCH, STEPS)).astype("int32")


def _expression_inputs():
    # split, recur, merge, recur, recur / recur, split, merge, recur, recur
    operations = np.array([[0, 2, 1, 2, 2], [2, 0, 1, 2, 2]], "int32")
    return {"tokens": _ids(1), "operations": operations}


def _pair_inputs():
    # two four-token sentences, each one bracketed pair: split, recur, recur, merge
    operations = np.array([[0, 2, 2, 1], [0, 2, 2, 1]], "int32")
    tokens = _ids(1)[:, :4]
    return {"left_tokens": tokens, "left_operations": operations,
            "right_tokens": tokens[::-1], "right_operations": operations}


def _id_spec():
    import tensorflow as tf  # export is TensorFlow's

    return tf.TensorSpec((None, None), tf.int32)


MODEL_CASES = [
    ModelCase(
        "RecurrentRecursiveLanguageModel", hmkeras.RecurrentRecursiveLanguageModel,
        lambda: hmkeras.RecurrentRecursiveLanguageModel(
            vocab_size=VOCAB, units=4, max_depth=2, dropout=0.0, seed=3),
        _ids, [None],
    ),
    ModelCase(
        "ExpressionModel", hmkeras.ExpressionModel,
        lambda: hmkeras.ExpressionModel(
            "rrnet_supervised", vocab_size=VOCAB, units=4, embedding_dim=3,
            max_depth=2, seed=1),
        _expression_inputs, [{"tokens": None, "operations": None}],
    ),
    ModelCase(
        "PairClassifier", hmkeras.PairClassifier,
        lambda: hmkeras.PairClassifier(
            encoder="rrnet_supervised", vocab_size=VOCAB, units=4, embedding_dim=3,
            hidden_units=4, max_depth=2, seed=1),
        _pair_inputs,
        [{key: None for key in ("left_tokens", "left_operations",
                                "right_tokens", "right_operations")}],
    ),
]


def export_signature(case):
    """`case.input_signature` with every `None` made an int32 id spec."""
    def spec(value):
        if isinstance(value, dict):
            return {key: spec(v) for key, v in value.items()}
        return _id_spec() if value is None else value
    return [spec(value) for value in case.input_signature]


#: Public names of `hmkeras` that are not layers, with the reason they are
#: outside the battery.
NOT_LAYERS = {
    "BoundaryCollapseWarning": "a warning class",
    "BoundaryMonitor": "a Keras callback",
    "BoundaryPlacement": "a loss object, not a layer",
    "BoundaryPlacementLoss": "the identity on logits that adds a loss, of two inputs: its "
                             "own tests (tf_tests/cells/test_boundary_placement.py: loss, "
                             "identity, .keras round trip)",
    "BoundaryPrior": "a regularizer object, not a layer",
    "CharLanguageModel": "a model builder owning a keras.Model, not a layer",
    "CharLanguageModelConfig": "a dataclass",
    "EvaluationResult": "a dataclass",
    "ExpressionModel": "a keras.Model subclass: saving checks only (MODEL_CASES)",
    "PairClassifier": "a keras.Model subclass: saving checks only (MODEL_CASES)",
    "HandwritingModel": "a model builder owning a keras.Model, not a layer",
    "HandwritingModelConfig": "a dataclass",
    "HandwritingTrainer": "a training driver",
    "HierarchicalCell": "the abstract base of HMLSTMCell and HMRNNCell",
    "MLSTMCell": "an alias of MultiplicativeLSTMCell (tested once)",
    "RecurrentRecursiveLanguageModel": "a keras.Model subclass: saving checks "
                                       "only (MODEL_CASES)",
    "RecurrentRecursiveLanguageModelConfig": "a dataclass",
    "SlopeAnnealing": "a Keras callback",
    "TrainingCheckpoint": "a checkpoint helper",
    "TruncatedBPTTModel": "a training driver",
    "WordLanguageModel": "a model builder owning a keras.Model, not a layer",
    "WordLanguageModelConfig": "a dataclass",
}


def case_inputs(case, seed=0):
    return case.inputs(np.random.default_rng(seed))


def as_layer(case, **kwargs):
    """`(tested, runnable)`: the instance under test and the layer that runs
    it on sequences (the same object, or `RNN(cell)` for a cell)."""
    tested = case.make(**kwargs)
    if not case.is_cell:
        return tested, tested
    rnn_kwargs = {"dtype": kwargs["dtype"]} if "dtype" in kwargs else {}
    return tested, keras.layers.RNN(tested, return_sequences=True, **rnn_kwargs)


def model_of(case, **kwargs):
    """`keras.Model(Input -> layer)`, and the instance under test."""
    tested, runnable = as_layer(case, **kwargs)
    inputs = keras.Input(case.inputs.shape, dtype=case.inputs.dtype)
    outputs = runnable(inputs, **case.call_kwargs)
    return keras.Model(inputs, outputs), tested


def scalars(weights):
    return sum(int(np.prod(w.shape)) for w in weights)
