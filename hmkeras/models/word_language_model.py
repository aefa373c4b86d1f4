"""Word-level language models: the averaging paper's LSTM-LM and its variants.

`WordLanguageModel` builds the network of Salton & Kelleher (persistence
averaging, Sections 5-6):

    tokens -> tied embedding -> dropout -> RNN layer 1 -> dropout
           -> RNN layer 2 [wrapped] -> dropout [-> projection] -> tied softmax

* the cell (`CELLS`): ``"lstm"`` (two `keras.layers.LSTMCell`, the paper's
  model), ``"mlstm"`` (two `hmkeras.MultiplicativeLSTMCell`) or
  ``"hmlstm"`` (one `hmkeras.HMLSTMCell` with two layers: its hierarchy is
  the two layers, so no dropout runs between them and the softmax reads the
  top layer's `h^2`);
* the wrapper (`WRAPPERS`) on the **top** recurrent layer, the one whose
  hidden states the paper puts in memory (Fig. 2): ``"none"``,
  ``"average"`` (`hmkeras.AveragingWrapper`, Eq. 10-11: the mean of the
  zero `h_0` and the past states, then ``tanh(W_c [h_t; c_t] + b)``) or
  ``"attention"`` (`hmkeras.AttentionWrapper`, Salton et al. 2017's
  learned attention over the last `memory_size` states). Around the HM-LSTM
  the wrappers remember its top layer (`hierarchy_layers="top"`);
* the recurrent layers: by default (``sequence_layer=True``) the cells'
  sequence layers (`keras.layers.LSTM`, `hmkeras.MultiplicativeLSTM`,
  `hmkeras.HMLSTM`), faster, except the wrapped top layer, which is
  ``hmkeras.RNN(wrapper)`` (a wrapper is a cell); with
  ``sequence_layer=False`` every layer is ``hmkeras.RNN(cell)``;
* dropout (`dropout`, 0.5 in the paper) on the non-recurrent connections
  only: the embedding output, between the layers and before the softmax;
* tied embeddings (Press & Wolf; Section 6.1): the softmax weight `W_s` of
  Eq. 12 is the embedding matrix transposed (`TiedEmbedding`, one
  variable). When the top layer's size differs from `embedding_dim`, a
  linear projection to `embedding_dim` comes before the softmax;
* initialisation as in Section 6.1: weights uniform in
  [-`init_scale`, `init_scale`] (0.05), biases 0, LSTM forget-gate biases 1;
* for ``"hmlstm"``, a boundary prior (`boundary_prior`, `segment_lengths`:
  a `hmkeras.BoundaryPrior`, an extension beyond the papers, off by
  default: None gives the papers' HM-LSTM): while training, `network` adds its loss
  on the boundaries z^1 .. z^{L-1} of the real tokens, and Keras' `fit`
  adds it to the training loss (`network.losses`). The padding (token id
  0, `hmkeras.data.WordVocabulary`'s ``<pad>``) counts neither as steps nor
  as boundaries: the layers see no Keras mask (the embedding makes none),
  so the model masks the prior itself. With a wrapper the boundaries are
  read from the wrapped cell's output, which the wrapper then returns
  beside its own (`return_cell_output=True`; the weights and the logits are
  unchanged): the prior works with every wrapper, so it is neither refused
  nor silently dropped when a wrapper is chosen, and the default
  configuration means the same with every wrapper. It is off by default:
  with Salton & Kelleher's SGD (learning rate 1.0) the prior's gradient
  overshoots its target and drives z^1 to 0, where a saturated detector
  gets no straight-through gradient again, and the test perplexity more
  than doubles (docs/results/word-lm.md, "The HM-LSTM word LM and the
  boundary prior").

The RNN starts from a zero state in every call (the paper resets the state
at every mini-batch, and every row is one sentence), so `network` maps
``tokens (batch, time)`` to ``logits (batch, time, vocab_size)`` and holds
no state. With ``wrapper="attention"``, `attention_network` maps the same
tokens to the attention weights ``(batch, time, memory_size)`` (slot
``memory_size - 1`` is the most recent past state), for plots.

`sentence_perplexity(lm, batches)` is ``exp(sum of weighted NLL / sum of
weights)`` over a `hmkeras.data.SentenceBatches`: every real target counts
once, padding never.

Examples:

    >>> import numpy as np
    >>> from hmkeras.models.word_language_model import WordLanguageModel
    >>> lm = WordLanguageModel(vocab_size=20, units=8, wrapper="attention",
    ...                        memory_size=4, dropout=0.0, seed=1)
    >>> tuple(lm.network(np.ones((2, 5), "int32")).shape)
    (2, 5, 20)
    >>> tuple(lm.attention_network(np.ones((2, 5), "int32")).shape)
    (2, 5, 4)
"""

import dataclasses
import math

import keras
import numpy as np

from hmkeras.cells.sequence_rnn import RNN
from hmkeras import argument_checks
from hmkeras.cells.boundary_prior import check_prior_fields
from hmkeras.cells.boundary_prior import prior_for
from hmkeras.cells.hm_lstm import HMLSTM
from hmkeras.cells.hm_lstm_cell import HMLSTMCell
from hmkeras.cells.multiplicative_lstm import MultiplicativeLSTM
from hmkeras.cells.multiplicative_lstm_cell import MultiplicativeLSTMCell
from hmkeras.models.boundary_losses import BoundaryLosses
from hmkeras.models.config_signature import JsonConfig
from hmkeras.models.config_signature import keyword_signature
from hmkeras.models.config_signature import resolve_config
from hmkeras.models.initializer_seeds import seeded_initializers
from hmkeras.models.tied_embedding import TiedEmbedding
from hmkeras.wrappers.attention_wrapper import AttentionWrapper
from hmkeras.wrappers.averaging_wrapper import AveragingWrapper

__all__ = [
    "WordLanguageModel", "WordLanguageModelConfig", "sentence_perplexity",
    "sentence_boundary_rates", "CELLS", "WRAPPERS", "ATTENTION_SCORES",
]

CELLS = ("lstm", "hmlstm", "mlstm")
WRAPPERS = ("none", "average", "attention")
ATTENTION_SCORES = ("single", "combined")
HIERARCHICAL_CELLS = ("hmlstm",)
# The token id of the padding (`hmkeras.data.WordVocabulary.pad_id`).
PAD_ID = 0


@dataclasses.dataclass
class WordLanguageModelConfig(JsonConfig):
    """Everything needed to rebuild a `WordLanguageModel` (JSON-able).

    Attributes:
        vocab_size: Number of token ids (`<pad>` and `<eos>` included).
        cell: One of `CELLS`.
        units: Size of each recurrent layer (650 for PTB, 1000 for
            WikiText-2 in Salton & Kelleher).
        num_layers: Recurrent layers (2 in the paper; "hmlstm" needs >= 2).
        embedding_dim: Size of the tied embedding; 0 means `units` (the
            paper: no projection).
        wrapper: One of `WRAPPERS`, on the top layer.
        memory_size: Past states the attention wrapper attends to (35, a
            sentence row).
        attention_score: "single" or "combined" (`AttentionWrapper.score`).
        dropout: Dropout rate on the non-recurrent connections.
        init_scale: Weights are uniform in [-init_scale, init_scale].
        boundary_prior: For ``"hmlstm"``: the form of the
            `hmkeras.BoundaryPrior` added to the training loss, ``"rate"``
            or ``"binomial"``; None (default) for the papers' model (no
            prior; see the module docstring for why it is the default). Checked as in `CharLanguageModelConfig`; unused by the
            other cells.
        segment_lengths: The prior's expected segment length per boundary
            layer, in words (None: the defaults, ``(5,)`` for two layers);
            ``"hmlstm"`` only.
        seed: Seed of the initial weights and the cells' dropout masks
            (None: random); the program's random state is left alone
            (`hmkeras.models.initializer_seeds`).
        sequence_layer: The unwrapped layers are the cells' sequence
            layers (True; faster) rather than `hmkeras.RNN(cell)`;
            the wrapped top layer is always `hmkeras.RNN(wrapper)`. Same numbers
            up to rounding; the weight files of the two kinds differ.

    Examples:

        >>> from hmkeras.models import WordLanguageModelConfig
        >>> config = WordLanguageModelConfig(vocab_size=10_000, wrapper="attention")
        >>> config.units, config.memory_size, config.embedding_dim
        (650, 35, 0)
        >>> WordLanguageModelConfig.from_json(config.to_json()) == config
        True
    """

    vocab_size: int
    cell: str = "lstm"
    units: int = 650
    num_layers: int = 2
    embedding_dim: int = 0
    wrapper: str = "none"
    memory_size: int = 35
    attention_score: str = "single"
    dropout: float = 0.5
    init_scale: float = 0.05
    boundary_prior: str = None
    segment_lengths: list = None
    seed: int = None
    sequence_layer: bool = True

    def __post_init__(self):
        checks = argument_checks
        self.cell = checks.check_choice("cell", self.cell, CELLS)
        self.wrapper = checks.check_choice("wrapper", self.wrapper, WRAPPERS)
        self.attention_score = checks.check_choice(
            "attention_score", self.attention_score, ATTENTION_SCORES)
        for name in ("vocab_size", "units", "num_layers", "memory_size"):
            setattr(self, name, checks.check_positive_int(name, getattr(self, name)))
        self.embedding_dim = checks.check_int("embedding_dim", self.embedding_dim, minimum=0)
        self.dropout = checks.check_rate("dropout", self.dropout)
        self.init_scale = checks.check_float(
            "init_scale", self.init_scale, minimum=0, exclusive_minimum=True)
        self.seed = checks.check_int("seed", self.seed, allow_none=True)
        self.sequence_layer = checks.check_bool("sequence_layer", self.sequence_layer)
        if self.cell == "hmlstm" and self.num_layers < 2:
            raise ValueError(
                "`num_layers` must be >= 2 for cell='hmlstm'. "
                f"Received: num_layers={self.num_layers}")
        check_prior_fields(self, HIERARCHICAL_CELLS)


class WordLanguageModel:
    """A word LM: `network` maps token ids to logits (see the module docstring).

    Args:
        config: A `WordLanguageModelConfig`, or None to build one from the
            keyword arguments.
        **kwargs: The fields of `WordLanguageModelConfig` (`vocab_size`,
            `cell`, `units`, `wrapper`, ...), when `config` is None; they
            are keyword-only and listed in the signature.

    Attributes:
        config: the model's configuration.
        network: the Keras model from tokens to logits.
        attention_network: None unless ``wrapper="attention"``.
        embedding: the `TiedEmbedding`.
        wrapper: the wrapper cell or None.
        features: tokens -> the vectors the tied softmax reads, after
            dropout and projection.
        boundary_prior: The `hmkeras.BoundaryPrior` whose loss `network`
            adds while training (``"hmlstm"``; off by default), or None
            (the papers' model; always None for the other cells).
        boundary_network: For ``"hmlstm"``, tokens -> the boundaries
            ``(batch, time, num_layers - 1)`` of the HM-LSTM; else None.

    Examples:

        >>> import numpy as np
        >>> from hmkeras.models import WordLanguageModel
        >>> lm = WordLanguageModel(vocab_size=12, units=8, wrapper="average",
        ...                        dropout=0.0, seed=0)
        >>> tuple(lm.network(np.ones((2, 5), "int32")).shape)
        (2, 5, 12)
        >>> type(lm.wrapper).__name__, lm.attention_network is None
        ('AveragingWrapper', True)
    """

    def __init__(self, config=None, **kwargs):
        config = resolve_config(WordLanguageModelConfig, config, kwargs)
        self.config = config
        self.wrapper = None
        self.attention_network = None
        self.boundary_network = None
        self.boundary_prior = None
        if config.cell in HIERARCHICAL_CELLS:
            self.boundary_prior = prior_for(
                config.boundary_prior, config.segment_lengths, config.num_layers)
        with seeded_initializers(config.seed):
            self.network = self._build()

    def _uniform(self, index):
        c = self.config
        seed = None if c.seed is None else c.seed * 1009 + index
        return keras.initializers.RandomUniform(-c.init_scale, c.init_scale, seed=seed)

    def _cells(self):
        """`(cell_class, layer_class, args, kwargs, cell_name)` of every
        recurrent layer, bottom first: its cell and its sequence layer."""
        c = self.config
        if c.cell == "hmlstm":
            # The layer adds no prior of its own: the model adds it, masked
            # (`BoundaryLosses`), with either kind of layer and wrapper.
            prior = dict(boundary_prior=None) if c.sequence_layer and c.wrapper == "none" else {}
            return [(HMLSTMCell, HMLSTM, (c.units,),
                     dict(num_layers=c.num_layers, seed=c.seed, **prior), None)]
        specs = []
        for i in range(c.num_layers):
            if c.cell == "lstm":
                specs.append((
                    keras.layers.LSTMCell, keras.layers.LSTM, (c.units,),
                    dict(kernel_initializer=self._uniform(2 * i + 1),
                         recurrent_initializer=self._uniform(2 * i + 2),
                         unit_forget_bias=True),
                    f"lstm_cell_{i + 1}"))
            else:
                specs.append((
                    MultiplicativeLSTMCell, MultiplicativeLSTM, (c.units,),
                    dict(seed=None if c.seed is None else c.seed + i),
                    f"mlstm_cell_{i + 1}"))
        return specs

    def _layers(self):
        """The recurrent layers, bottom first; the top one wrapped (if any)."""
        c = self.config
        specs = self._cells()
        layers = []
        for i, (cell_class, layer_class, args, kwargs, cell_name) in enumerate(specs):
            name = f"rnn_{i + 1}"
            top = i == len(specs) - 1
            if c.sequence_layer and not (top and c.wrapper != "none"):
                layers.append(layer_class(*args, return_sequences=True, name=name, **kwargs))
                continue
            cell = cell_class(*args, name=cell_name, **kwargs)
            if top:
                cell = self._wrap(cell)
            layers.append(RNN(cell, return_sequences=True, name=name))
        return layers

    def _wrap(self, cell):
        c = self.config
        if c.wrapper == "none":
            return cell
        options = dict(kernel_initializer=self._uniform(100))
        if c.cell == "hmlstm":
            # The boundaries stay readable (the cell's output after the
            # wrapper's own); the weights are the same either way.
            options.update(hierarchy_layers="top", return_cell_output=True)
        if c.wrapper == "average":  # Salton & Kelleher Eq. (10)-(11)
            wrapper = AveragingWrapper(cell, **options)
        else:  # Salton et al. (2017) learned attention
            wrapper = AttentionWrapper(
                cell, c.memory_size, score=c.attention_score,
                return_attention=True, **options)
        self.wrapper = wrapper
        return wrapper

    def _build(self):
        c = self.config
        dim = c.embedding_dim or c.units
        tokens = keras.Input((None,), dtype="int32", name="tokens")
        self.embedding = TiedEmbedding(
            c.vocab_size, dim, embeddings_initializer=self._uniform(0), name="embedding")
        x = self.embedding(tokens)
        layers = self._layers()
        for i, rnn in enumerate(layers):
            # Dropout on the non-recurrent connections (Section 6.1).
            x = keras.layers.Dropout(c.dropout, name=f"dropout_{i + 1}")(x)
            x = rnn(x)
        if c.cell in HIERARCHICAL_CELLS:
            if self.wrapper is not None:  # [output | cell output | attention]
                stop = self.wrapper.output_units + self.wrapper.cell.output_size
            else:
                stop = layers[0].cell.output_size
            columns = (stop - (c.num_layers - 1), stop)
            if self.boundary_prior is not None:
                x = BoundaryLosses(columns, self.boundary_prior, pad_id=PAD_ID,
                                   name="boundary_prior")(x, tokens=tokens)
            self.boundary_network = keras.Model(
                tokens, x[..., columns[0]:columns[1]], name="boundaries")
        rnn_output = x
        if self.wrapper is not None:
            top = x[..., : self.wrapper.output_units]
        elif c.cell == "hmlstm":
            units = layers[0].cell.units
            top = x[..., sum(units[:-1]) : sum(units)]  # h^L
        else:
            top = x
        top = keras.layers.Dropout(c.dropout, name=f"dropout_{len(layers) + 1}")(top)
        if top.shape[-1] != dim:
            top = keras.layers.Dense(
                dim, use_bias=False, kernel_initializer=self._uniform(200),
                name="projection")(top)
        self.features = keras.Model(tokens, top, name="softmax_inputs")
        logits = self.embedding(top, reverse=True)  # Eq. (12), W_s = E
        if c.wrapper == "attention":
            size = self.wrapper.memory_size
            self.attention_network = keras.Model(
                tokens, rnn_output[..., -size:], name="attention")
        return keras.Model(tokens, logits, name=f"word_lm_{c.cell}_{c.wrapper}")

    def count_params(self):
        """Number of trainable parameters."""
        return int(sum(np.prod(w.shape) for w in self.network.trainable_weights))


def sentence_boundary_rates(lm, batches):
    """The HM-LSTM's boundary rate per layer over the real tokens of
    `batches` (a `SentenceBatches`): a list of `num_layers - 1` floats.

    Each batch runs through `lm.boundary_network.predict_on_batch` (Keras'
    compiled predict step, on any backend); the counts are summed in
    float64.

    Raises:
        ValueError: `lm` has no boundaries (not ``cell="hmlstm"``).
    """
    if getattr(lm, "boundary_network", None) is None:
        raise ValueError("`lm` must be a WordLanguageModel with cell='hmlstm'. "
                         f"Received: lm={lm!r}")
    total = 0.0
    for x, _, w in _numpy_batches(batches):
        z = np.asarray(lm.boundary_network.predict_on_batch(x), np.float64)
        total = total + np.sum(z * np.asarray(w, np.float64)[..., None], axis=(0, 1))
    return [float(v) for v in np.atleast_1d(total) / batches.num_targets]


def sentence_perplexity(lm, batches):
    """Perplexity of `lm` over the rows of `batches` (a `SentenceBatches`).

    ``exp(sum_rows sum_t w NLL / sum w)``: the mean negative log-likelihood
    (nats) of the real targets, padding (weight 0) left out. The logits
    come from `network.predict_on_batch` (Keras' compiled predict step, on
    any backend); the log-softmax and the sums are float64 NumPy.

    Returns:
        ``{"perplexity", "nll_per_token", "bits_per_token", "num_targets"}``.
    """
    network = lm.network if hasattr(lm, "network") else lm
    total = 0.0
    for x, y, w in _numpy_batches(batches):
        logits = np.asarray(network.predict_on_batch(x), np.float64)
        total += float(np.sum(_negative_log_likelihood(logits, y) * w))
    nll = total / batches.num_targets
    return {
        "perplexity": math.exp(nll),
        "nll_per_token": nll,
        "bits_per_token": nll / math.log(2.0),
        "num_targets": batches.num_targets,
    }


def _numpy_batches(batches):
    """The `(tokens, targets, weights)` of `batches.dataset()` as NumPy arrays."""
    for batch in batches.dataset():
        yield tuple(np.asarray(part) for part in batch)


def _negative_log_likelihood(logits, targets):
    """`-log softmax(logits)[targets]` per position, in the dtype of `logits`."""
    shifted = logits - np.max(logits, axis=-1, keepdims=True)
    log_norm = np.log(np.sum(np.exp(shifted), axis=-1))
    return log_norm - np.take_along_axis(shifted, targets[..., None].astype(np.int64),
                                         axis=-1)[..., 0]


# The configuration's fields as keyword-only parameters (`help()` lists them).
WordLanguageModel.__signature__ = keyword_signature(WordLanguageModelConfig)
