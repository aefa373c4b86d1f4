"""Character-level language models with an explicit, carried RNN state.

`CharLanguageModel` builds the network of Chung et al. (2017, Section 4.1):

    tokens -> Embedding -> RNN(cell) -> output module -> Dense(vocab) logits

with the cell chosen by name (`CELLS`):

* `"hmlstm"`: `hmkeras.HMLSTMCell` (Chung et al. Eq. 1-9),
* `"hmrnn"`: `hmkeras.HMRNNCell` (Kadar et al. Eq. 9, Appendix B),
* `"lstm"`: a stack of Keras `LSTMCell`s of the same sizes, one
  `keras.layers.RNN` per layer so that the output module sees every layer,
* `"mlstm"`: `hmkeras.MultiplicativeLSTMCell` (Krause et al. Eq. 17-21),

and the output module chosen by name (`OUTPUTS`): `"gated"`
(`GatedOutputEmbedding`, Chung et al. Eq. 11-12), `"simple"`
(`SimpleOutputEmbedding`, Kadar et al.'s SimplerOut) or `"none"` (the
softmax reads the RNN output directly, as in Krause et al.).

The Keras model `model.network` is *stateless*: its inputs are the token
ids and the RNN state, its outputs the logits, the raw per-step RNN output
(for hierarchical cells `[h^1|...|h^L|z^1..z^{L-1}]`) and the new state:

    network([tokens (batch, time), state_0, ..., state_k])
        -> [logits (batch, time, vocab), rnn_outputs, state_0', ..., state_k']

The same weights therefore serve truncated-BPTT training (the state carried
in variables, `hmkeras.training.stateful_training`), the batch-1 evaluation with the
state carried over a whole test set (`hmkeras.analysis.evaluation`) and the stepwise
generation export (`hmkeras.training.step_export`).

Example:

>>> import numpy as np
>>> from hmkeras.models.char_language_model import CharLanguageModel
>>> model = CharLanguageModel(vocab_size=10, cell="hmlstm", units=8,
...                           num_layers=3, embedding_dim=4, output_units=8)
>>> state = model.zero_state(2)
>>> logits, rnn_outputs, *state = model.network(
...     [np.zeros((2, 5), "int32"), *state])
>>> tuple(logits.shape), tuple(model.boundaries(rnn_outputs).shape)
((2, 5, 10), (2, 5, 2))
>>> len(state) == len(model.state_sizes)
True
"""

import dataclasses
import inspect
import json

import keras
import numpy as np

from hmkeras.cells import argument_checks
from hmkeras.cells.hm_lstm_cell import HMLSTMCell
from hmkeras.cells.hm_rnn_cell import HMRNNCell
from hmkeras.cells.multiplicative_lstm_cell import MultiplicativeLSTMCell
from hmkeras.heads.gated_output_embedding import GatedOutputEmbedding
from hmkeras.heads.simple_output_embedding import SimpleOutputEmbedding
from hmkeras.training.boundary_rate_regularizer import BoundaryRateRegularizer

CELLS = ("hmlstm", "hmrnn", "lstm", "mlstm")
HIERARCHICAL_CELLS = ("hmlstm", "hmrnn")
OUTPUTS = ("gated", "simple", "none")
BOUNDARY_MODES = ("step", "sample", "soft")


@dataclasses.dataclass
class CharLanguageModelConfig:
    """Everything needed to rebuild a `CharLanguageModel` (JSON-able).

    Attributes:
        vocab_size: Number of symbols.
        cell: One of `CELLS`.
        units: Size of every recurrent layer.
        num_layers: Number of layers (hierarchical cells and `"lstm"`;
            `"mlstm"` is a single layer).
        embedding_dim: Input embedding size (128 in Chung et al.).
        output: One of `OUTPUTS`.
        output_units: Output embedding size (512 in Chung et al.).
        boundary_mode, slope, layer_norm, top_down, copy_last: Options of
            the hierarchical cells (Kadar et al. Table 2 ablations).
        boundary_bias: Initial bias of the boundary detectors (an
            extension; 0 in the papers).
        boundary_rate_targets, boundary_rate_weight: A
            `BoundaryRateRegularizer` added to the training loss: one target
            rate per boundary layer (None: no penalty) and its weight.
        weight_normalization: Weight normalization of the mLSTM (Krause
            et al.).
        dropout, recurrent_dropout: Variational dropout rates in [0, 1)
            of the cells' inputs and recurrent states.
        multiplicative_units: Size of the mLSTM's `m_t` (0: `units`).
        l2: L2 weight penalty on every kernel (0 for none).
        seed: Seed of the initializers (None: random).

    Every field is checked when the configuration is made (a `ValueError`
    naming the field); NumPy scalars are accepted and stored as Python
    numbers, so `to_json` always works.
    """

    vocab_size: int
    cell: str = "hmlstm"
    units: int = 512
    num_layers: int = 3
    embedding_dim: int = 128
    output: str = "gated"
    output_units: int = 512
    boundary_mode: str = "step"
    slope: float = 1.0
    layer_norm: bool = True
    top_down: bool = True
    copy_last: bool = False
    boundary_bias: float = 0.0
    boundary_rate_targets: list = None
    boundary_rate_weight: float = 0.0
    weight_normalization: bool = False
    dropout: float = 0.0
    recurrent_dropout: float = 0.0
    multiplicative_units: int = 0
    l2: float = 0.0
    seed: int = None

    def __post_init__(self):
        # Every field is checked and stored as a Python value (NumPy
        # scalars become int / float / bool), so the configuration stays
        # JSON-able.
        checks = argument_checks
        self.cell = checks.check_choice("cell", self.cell, CELLS)
        self.output = checks.check_choice("output", self.output, OUTPUTS)
        self.boundary_mode = checks.check_choice(
            "boundary_mode", self.boundary_mode, BOUNDARY_MODES
        )
        for name in ("vocab_size", "units", "num_layers", "embedding_dim"):
            setattr(self, name, checks.check_positive_int(name, getattr(self, name)))
        for name in ("output_units", "multiplicative_units"):
            setattr(self, name, checks.check_int(name, getattr(self, name), minimum=0))
        for name in ("layer_norm", "top_down", "copy_last", "weight_normalization"):
            setattr(self, name, checks.check_bool(name, getattr(self, name)))
        self.slope = checks.check_float(
            "slope", self.slope, minimum=0, exclusive_minimum=True
        )
        self.boundary_bias = checks.check_float("boundary_bias", self.boundary_bias)
        self.boundary_rate_weight = checks.check_float(
            "boundary_rate_weight", self.boundary_rate_weight, minimum=0
        )
        self.l2 = checks.check_float("l2", self.l2, minimum=0)
        for name in ("dropout", "recurrent_dropout"):
            setattr(self, name, checks.check_rate(name, getattr(self, name)))
        self.seed = checks.check_int("seed", self.seed, allow_none=True)
        if self.cell in HIERARCHICAL_CELLS and self.num_layers < 2:
            raise ValueError(
                f"`num_layers` must be >= 2 for cell={self.cell!r}. "
                f"Received: num_layers={self.num_layers}"
            )
        if self.output != "none" and self.output_units < 1:
            raise ValueError(
                "`output_units` must be a positive integer when output is "
                f"{self.output!r}. Received: output_units={self.output_units!r}"
            )
        if self.boundary_rate_targets is not None:
            if self.cell not in HIERARCHICAL_CELLS:
                raise ValueError(
                    "`boundary_rate_targets` applies to the hierarchical cells "
                    f"{list(HIERARCHICAL_CELLS)}. Received: cell={self.cell!r}"
                )
            targets = self.boundary_rate_targets
            if isinstance(targets, np.ndarray) and targets.ndim == 1:
                targets = targets.tolist()
            if (
                not isinstance(targets, (list, tuple))
                or len(targets) != self.num_layers - 1
            ):
                raise ValueError(
                    "`boundary_rate_targets` needs one rate per boundary layer "
                    f"(num_layers - 1 = {self.num_layers - 1}). Received: "
                    f"boundary_rate_targets={self.boundary_rate_targets!r}"
                )
            self.boundary_rate_targets = [
                checks.check_fraction("boundary_rate_targets", rate, allow_none=True)
                for rate in targets
            ]

    def to_json(self):
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text):
        return cls(**json.loads(text))


class CharLanguageModel:
    """A character LM whose Keras `network` takes and returns the RNN state.

    Args:
        config: A `CharLanguageModelConfig`, or None to build one from
            the keyword arguments.
        **kwargs: The fields of `CharLanguageModelConfig` (`vocab_size`,
            `cell`, `units`, ...), when `config` is None. They are
            keyword-only and listed in the signature
            (`inspect.signature(CharLanguageModel)`), which is made from
            the configuration's fields.

    Attributes:
        config: The configuration.
        network: The stateless Keras model (see the module docstring).
        state_sizes: The size of every state tensor, in input order.
        layer_sizes: Per-layer hidden sizes, bottom first.
        hierarchical_cell: The `HMLSTMCell` / `HMRNNCell`, or None.
    """

    def __init__(self, config=None, **kwargs):
        if config is None:
            config = CharLanguageModelConfig(**kwargs)
        elif kwargs:
            raise ValueError("Give either `config` or keyword arguments, not both.")
        elif not isinstance(config, CharLanguageModelConfig):
            raise ValueError(
                "`config` must be a CharLanguageModelConfig or None. "
                f"Received: config={config!r}"
            )
        self.config = config
        self.hierarchical_cell = None
        self.network = self._build()
        # Added to the training loss by `TruncatedBPTTModel` (an extension,
        # off unless targets and a weight are given).
        self.boundary_rate_regularizer = None
        if config.boundary_rate_targets is not None and config.boundary_rate_weight:
            self.boundary_rate_regularizer = BoundaryRateRegularizer(
                list(config.boundary_rate_targets), config.boundary_rate_weight
            )

    # ------------------------------------------------------------------
    def _regularizer(self):
        return keras.regularizers.L2(self.config.l2) if self.config.l2 else None

    def _recurrent_layers(self):
        """`(rnn_layers, layer_sizes)`: the RNN layers, bottom first."""
        c = self.config
        reg = self._regularizer()
        if c.cell in HIERARCHICAL_CELLS:
            options = dict(
                num_layers=c.num_layers, boundary_mode=c.boundary_mode,
                slope=float(c.slope), layer_norm=c.layer_norm,
                top_down=c.top_down, boundary_bias=float(c.boundary_bias), kernel_regularizer=reg,
                recurrent_regularizer=reg, dropout=c.dropout,
                recurrent_dropout=c.recurrent_dropout, seed=c.seed,
            )
            if c.cell == "hmlstm":
                cell = HMLSTMCell(c.units, copy_last=c.copy_last, **options)
            else:
                if c.copy_last:
                    raise ValueError(
                        "`copy_last` applies to the HM-LSTM only "
                        "(Kadar et al.'s CopyLast); cell='hmrnn' has no cell state."
                    )
                cell = HMRNNCell(c.units, **options)
            self.hierarchical_cell = cell
            return [cell], list(cell.units)
        if c.cell == "lstm":
            cells = [
                keras.layers.LSTMCell(
                    c.units, kernel_regularizer=reg, recurrent_regularizer=reg,
                    dropout=c.dropout, recurrent_dropout=c.recurrent_dropout,
                    seed=c.seed, name=f"lstm_cell_{i + 1}",
                )
                for i in range(c.num_layers)
            ]
            return cells, [c.units] * c.num_layers
        cell = MultiplicativeLSTMCell(
            c.units,
            multiplicative_units=c.multiplicative_units or None,
            weight_normalization=c.weight_normalization,
            dropout=c.dropout, recurrent_dropout=c.recurrent_dropout,
            kernel_regularizer=reg, recurrent_regularizer=reg, seed=c.seed,
        )
        return [cell], [c.units]

    def _build(self):
        c = self.config
        if c.seed is not None:
            keras.utils.set_random_seed(c.seed)
        cells, self.layer_sizes = self._recurrent_layers()
        self.state_sizes = []
        for cell in cells:
            sizes = cell.state_size
            self.state_sizes.extend(sizes if isinstance(sizes, (list, tuple)) else [sizes])
        tokens = keras.Input((None,), dtype="int32", name="tokens")
        states = [
            keras.Input((size,), name=f"state_{i}")
            for i, size in enumerate(self.state_sizes)
        ]
        x = keras.layers.Embedding(c.vocab_size, c.embedding_dim, name="embedding")(tokens)
        outputs, new_states, offset = [], [], 0
        for index, cell in enumerate(cells):
            count = len(cell.state_size) if isinstance(cell.state_size, (list, tuple)) else 1
            rnn = keras.layers.RNN(
                cell, return_sequences=True, return_state=True, name=f"rnn_{index + 1}"
            )
            result = rnn(x, initial_state=states[offset : offset + count])
            offset += count
            x, layer_states = result[0], list(result[1:])
            outputs.append(x)
            new_states.extend(layer_states)
        rnn_outputs = (
            outputs[0] if len(outputs) == 1
            else keras.layers.Concatenate(name="all_layers")(outputs)
        )
        hidden = rnn_outputs
        reg = self._regularizer()
        if c.output == "gated":  # Chung et al. Eq. (11)-(12)
            hidden = GatedOutputEmbedding(
                c.output_units, layer_sizes=self.layer_sizes,
                kernel_regularizer=reg, name="output_embedding",
            )(rnn_outputs)
        elif c.output == "simple":  # Kadar et al. SimplerOut
            hidden = SimpleOutputEmbedding(
                c.output_units, layer_sizes=self.layer_sizes,
                kernel_regularizer=reg, name="output_embedding",
            )(rnn_outputs)
        elif self.hierarchical_cell is not None:
            # No output module: the softmax reads the hidden states only.
            hidden = keras.layers.Lambda(
                lambda y: y[..., : sum(self.layer_sizes)], name="hiddens"
            )(rnn_outputs)
        logits = keras.layers.Dense(
            c.vocab_size, kernel_regularizer=reg, name="logits"
        )(hidden)
        return keras.Model(
            [tokens, *states], [logits, rnn_outputs, *new_states],
            name=f"char_lm_{c.cell}",
        )

    # ------------------------------------------------------------------
    @property
    def is_hierarchical(self):
        return self.hierarchical_cell is not None

    def zero_state(self, batch_size):
        """The initial state: zeros (for HM cells z_0 = 0, no FLUSH at t=1)."""
        return [np.zeros((batch_size, size), "float32") for size in self.state_sizes]

    def boundaries(self, rnn_outputs):
        """The `(..., L-1)` boundaries of the RNN output, or None."""
        if not self.is_hierarchical:
            return None
        return self.hierarchical_cell.split_outputs(rnn_outputs)[1]

    def hiddens(self, rnn_outputs):
        """The per-layer hidden states of the RNN output, bottom first."""
        if self.is_hierarchical:
            return self.hierarchical_cell.split_outputs(rnn_outputs)[0]
        if len(self.layer_sizes) == 1:
            return [rnn_outputs]
        offsets = [int(x) for x in np.cumsum(self.layer_sizes)[:-1]]
        return keras.ops.split(rnn_outputs, offsets, axis=-1)

    def set_slope(self, value):
        """Sets the hard-sigmoid slope of the hierarchical cell (if any)."""
        if self.is_hierarchical:
            self.hierarchical_cell.slope.assign(float(value))

    def count_params(self):
        """Number of trainable parameters."""
        return int(sum(np.prod(w.shape) for w in self.network.trainable_weights))


def _signature_from_config():
    """`(config=None, *, vocab_size=None, cell='hmlstm', ...)`.

    `CharLanguageModel` takes the configuration's fields as keyword
    arguments; its signature lists them (one source of truth: the
    dataclass), so that `help()` and `inspect.signature` show them.
    """
    parameters = [
        inspect.Parameter("config", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)
    ]
    for field in dataclasses.fields(CharLanguageModelConfig):
        default = field.default if field.default is not dataclasses.MISSING else None
        parameters.append(
            inspect.Parameter(
                field.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                annotation=field.type,
            )
        )
    return inspect.Signature(parameters)


CharLanguageModel.__signature__ = _signature_from_config()
