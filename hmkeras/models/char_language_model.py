"""Character-level language models with an explicit, carried RNN state.

`CharLanguageModel` builds the network of Chung et al. (2017, Section 4.1):

    tokens -> Embedding -> recurrent layer -> output module -> Dense(vocab) logits

with the cell chosen by name (`CELLS`):

* `"hmlstm"`: `hmkeras.HMLSTMCell` (Chung et al. Eq. 1-9),
* `"hmrnn"`: `hmkeras.HMRNNCell` (Kadar et al. Eq. 9, Appendix B),
* `"lstm"`: a stack of Keras `LSTMCell`s of the same sizes, one recurrent
  layer (`keras.layers.LSTM`) per layer so that the output module sees
  every layer,
* `"mlstm"`: `hmkeras.MultiplicativeLSTMCell` (Krause et al. Eq. 17-21),

The recurrent layer is the cell's sequence layer (`hmkeras.HMLSTM`,
`hmkeras.HMRNN`, `hmkeras.MultiplicativeLSTM`, `keras.layers.LSTM`), which
computes the bottom layer's input projection of all steps before the time
loop, or, with `sequence_layer=False`, `hmkeras.RNN(cell)`: the same
numbers up to rounding, but Keras' weight files name the layers by class,
so a model saves and loads the weights of its own kind only.

The output module is chosen by name (`OUTPUTS`): `"gated"`
(`GatedOutputEmbedding`, Chung et al. Eq. 11-12), `"simple"`
(`SimpleOutputEmbedding`, Kadar et al.'s SimplerOut) or `"none"` (the
softmax reads the RNN output directly, as in Krause et al.).

The Keras model `model.network` is *stateless*: its inputs are the token
ids and the RNN state, its outputs the logits, the raw per-step RNN output
(for hierarchical cells `[h^1|...|h^L|z^1..z^{L-1}]`) and the new state:

    network([tokens (batch, time), state_0, ..., state_k])
        -> [logits (batch, time, vocab), rnn_outputs, state_0', ..., state_k']

With a hierarchical cell the network also adds, while training, the
boundary prior and the placement to its losses (`model.boundary_prior`,
`model.boundary_placement`; `hmkeras.models.boundary_losses`): a plain
`network.compile(...)` and `fit` trains the model the main job trains.

The same weights therefore serve truncated-BPTT training (the state carried
in variables, `hmkeras.training.stateful_training`), the batch-1 evaluation with the
state carried over a whole test set (`hmkeras.analysis.evaluation`) and the stepwise
generation export (`hmkeras.training.step_export`).

Examples:

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
import json

import keras
import numpy as np

from hmkeras.cells.sequence_rnn import RNN
from hmkeras import argument_checks
from hmkeras.cells.boundary_placement import FORMS as PLACEMENT_FORMS
from hmkeras.cells.boundary_placement import BoundaryPlacement
from hmkeras.cells.boundary_placement import RISE_FRACTION
from hmkeras.cells.boundary_prior import check_prior_fields
from hmkeras.cells.boundary_prior import prior_for
from hmkeras.cells.hm_lstm import HMLSTM
from hmkeras.cells.hm_rnn import HMRNN
from hmkeras.cells.multiplicative_lstm import MultiplicativeLSTM
from hmkeras.heads.gated_output_embedding import GatedOutputEmbedding
from hmkeras.heads.simple_output_embedding import SimpleOutputEmbedding
from hmkeras.models.boundary_losses import BoundaryLosses
from hmkeras.models.cell_options import CELL_CLASSES
from hmkeras.models.cell_options import check_cell_options
from hmkeras.models.config_signature import JsonConfig
from hmkeras.models.config_signature import keyword_signature
from hmkeras.models.config_signature import resolve_config
from hmkeras.models.initializer_seeds import seeded_initializers

CELLS = tuple(CELL_CLASSES)
HIERARCHICAL_CELLS = ("hmlstm", "hmrnn")
OUTPUTS = ("gated", "simple", "none")
# The sequence layer of every cell (`CELL_CLASSES` has the cells).
SEQUENCE_LAYERS = {
    "hmlstm": HMLSTM,
    "hmrnn": HMRNN,
    "lstm": keras.layers.LSTM,
    "mlstm": MultiplicativeLSTM,
}


def check_recurrent_fields(config, positive=("units", "num_layers")):
    """Checks and normalizes, in place, the fields of the recurrent part
    that `CharLanguageModelConfig` and the configurations built like it
    share (`HandwritingModelConfig`): cell, sizes, output module, the
    cell's options (`cell_options`, checked by the cell itself), the
    boundary prior (`boundary_prior`, `segment_lengths`:
    `hmkeras.cells.boundary_prior.check_prior_fields`), regularization,
    seed. `positive` names the fields that must be positive integers."""
    checks = argument_checks
    config.cell = checks.check_choice("cell", config.cell, CELLS)
    config.output = checks.check_choice("output", config.output, OUTPUTS)
    for name in positive:
        setattr(config, name, checks.check_positive_int(name, getattr(config, name)))
    config.output_units = checks.check_int("output_units", config.output_units, minimum=0)
    config.sequence_layer = checks.check_bool("sequence_layer", config.sequence_layer)
    config.l2 = checks.check_float("l2", config.l2, minimum=0)
    config.seed = checks.check_int("seed", config.seed, allow_none=True)
    if config.cell in HIERARCHICAL_CELLS and config.num_layers < 2:
        raise ValueError(
            f"`num_layers` must be >= 2 for cell={config.cell!r}. "
            f"Received: num_layers={config.num_layers}"
        )
    if config.output != "none" and config.output_units < 1:
        raise ValueError(
            "`output_units` must be a positive integer when output is "
            f"{config.output!r}. Received: output_units={config.output_units!r}"
        )
    config.cell_options = check_cell_options(
        config.cell, config.cell_options, config.units, config.num_layers
    )
    check_prior_fields(config, HIERARCHICAL_CELLS)


@dataclasses.dataclass
class CharLanguageModelConfig(JsonConfig):
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
        cell_options: The options of the cell, a dict of its own
            constructor arguments (`hmkeras.models.cell_options`): for
            `"hmlstm"` / `"hmrnn"` those of `HMLSTMCell` / `HMRNNCell`
            (`boundary_mode`, `slope`, `layer_norm`, `top_down`,
            `copy_last`, `boundary_bias`, `dropout`, ...: Kadar et al.
            Table 2's ablations), for `"mlstm"` those of
            `MultiplicativeLSTMCell` (`weight_normalization`,
            `multiplicative_units`, `dropout`, ...), for `"lstm"` those of
            `keras.layers.LSTMCell`. An option left out takes the cell's
            own default (the model adds none: `layer_norm=True` for the
            hierarchical cells, as in Chung et al.); the cell checks the
            values. The model sets `units`, `num_layers`, `seed` and, from
            `l2`, the kernel and recurrent regularizers itself; those and
            names the cell does not take are refused. Stored as the cell's
            `get_config()` writes them.
        boundary_prior: The form of the `BoundaryPrior` added to the
            training loss of the hierarchical cells, `"rate"` (default)
            or `"binomial"`; None for the papers' model (no prior). Ignored by
            the other cells.
        segment_lengths: The prior's expected segment length per boundary
            layer (None: the defaults, `(5, 15)` for three layers);
            hierarchical cells only.
        boundary_placement: Where the prior's boundaries go: `"entropy"`
            (default; `hmkeras.BoundaryPlacement`, where the next
            character is uncertain), `"rise"` or `"surprisal"` (text whose
            words nothing marks: `z^1` where that uncertainty rises, or
            where a signal that also reads the next symbol's surprisal
            rises), `"bidirectional"` (that rise read forwards and
            backwards: the model gets a backward LSTM language model of
            `units` units, `backward_language_model`, trained beside the
            hierarchy on the same windows; it serves the training targets
            only and runs only in training passes) or None
            (the prior alone). Added to
            the training loss beside the prior only: with
            `boundary_prior=None` the model is the papers' whatever this
            says. A JSON configuration without the field (`from_json`)
            reads back as None: the prior alone.
        placement_upper_layers: Place the boundary layers above the
            bottom one too (default); False places `z^1` only and leaves
            `z^2 ..` to the prior and the language model
            (`BoundaryPlacement(upper_layers=False)`). A JSON
            configuration without the field reads back as True.
        rise_fraction: The threshold `d` of the rise placements
            (`"rise"`, `"surprisal"`, `"bidirectional"`) as a fraction of
            the signal's mean absolute change
            (`BoundaryPlacement(rise_fraction=...)`, Eq. 2-4); default
            `hmkeras.cells.boundary_placement.RISE_FRACTION`. A JSON
            configuration without the field reads back as 0.5, the
            threshold before the field.
        l2: L2 weight penalty on every kernel (0 for none).
        seed: Seed of the initial weights and the cells' dropout masks
            (None: random); the program's random state is left alone
            (`hmkeras.models.initializer_seeds`).
        sequence_layer: Build the cell's sequence layer (`HMLSTM`, `HMRNN`,
            `MultiplicativeLSTM`, `keras.layers.LSTM`; faster) rather than
            `hmkeras.RNN(cell)`. Same numbers up to rounding; the
            weight files of the two kinds differ (Keras names layers by
            class).

    Every field is checked when the configuration is made (a `ValueError`
    naming the field, or for `cell_options` the cell's own error naming
    the option); NumPy scalars are accepted and stored as Python numbers,
    so `to_json` always works.

    Examples:

        >>> config = CharLanguageModelConfig(
        ...     vocab_size=50, cell="hmrnn", cell_options={"layer_norm": False})
        >>> CharLanguageModelConfig.from_json(config.to_json()) == config
        True
    """

    vocab_size: int
    cell: str = "hmlstm"
    units: int = 512
    num_layers: int = 3
    embedding_dim: int = 128
    output: str = "gated"
    output_units: int = 512
    cell_options: dict = dataclasses.field(default_factory=dict)
    boundary_prior: str = "rate"
    segment_lengths: list = None
    boundary_placement: str = "entropy"
    placement_upper_layers: bool = True
    rise_fraction: float = RISE_FRACTION
    l2: float = 0.0
    seed: int = None
    sequence_layer: bool = True

    @classmethod
    def from_json(cls, text):
        """The configuration of `text`; a text without `boundary_placement`
        gets None (the prior alone), one without `rise_fraction` 0.5 (the
        threshold of the models made before the field), not the fields'
        defaults."""
        fields = json.loads(text)
        fields.setdefault("boundary_placement", None)
        fields.setdefault("rise_fraction", 0.5)
        return cls(**fields)

    def __post_init__(self):
        # Every field is checked and stored as a Python value (NumPy
        # scalars become int / float / bool), so the configuration stays
        # JSON-able.
        check_recurrent_fields(
            self, positive=("vocab_size", "units", "num_layers", "embedding_dim")
        )
        if self.boundary_placement is not None:
            argument_checks.check_choice(
                "boundary_placement", self.boundary_placement, PLACEMENT_FORMS)
        self.placement_upper_layers = argument_checks.check_bool(
            "placement_upper_layers", self.placement_upper_layers)
        self.rise_fraction = argument_checks.check_float(
            "rise_fraction", self.rise_fraction, minimum=0)


def recurrent_layer(cell_class, layer_class, *args, sequence_layer=True,
                    cell_name=None, name=None, **kwargs):
    """One recurrent layer returning its sequence and states.

    `layer_class(*args, **kwargs)` (a sequence layer that owns its cell),
    or with `sequence_layer=False`
    `hmkeras.RNN(cell_class(*args, name=cell_name, **kwargs))`.
    """
    options = dict(return_sequences=True, return_state=True, name=name)
    if sequence_layer:
        return layer_class(*args, **kwargs, **options)
    return RNN(cell_class(*args, name=cell_name, **kwargs), **options)


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
        hierarchical_cell: The `HMLSTMCell` / `HMRNNCell` (the `cell` of the
            `HMLSTM` / `HMRNN` layer, or of `hmkeras.RNN(cell)`), or None.

    Examples:

        >>> import numpy as np
        >>> from hmkeras.models import CharLanguageModel
        >>> model = CharLanguageModel(vocab_size=10, cell="lstm", units=8, num_layers=2,
        ...                           embedding_dim=4, output_units=8, seed=0)
        >>> model.layer_sizes, model.state_sizes  # h and c of each LSTM layer
        ([8, 8], [8, 8, 8, 8])
        >>> state = model.zero_state(2)
        >>> logits, rnn_outputs, *state = model.network([np.zeros((2, 5), "int32"), *state])
        >>> tuple(logits.shape), model.hierarchical_cell is None
        ((2, 5, 10), True)
    """

    def __init__(self, config=None, **kwargs):
        config = resolve_config(CharLanguageModelConfig, config, kwargs)
        self.config = config
        self.hierarchical_cell = None
        self.backward_language_model = None
        # The network's losses while training (an extension, on by default
        # for the hierarchical cells; None: the papers' model).
        self.boundary_prior = None
        self.boundary_placement = None
        if config.cell in HIERARCHICAL_CELLS:
            self.boundary_prior = prior_for(
                config.boundary_prior, config.segment_lengths, config.num_layers
            )
        # Beside the prior (never without it): where the boundaries go.
        if self.boundary_prior is not None and config.boundary_placement is not None:
            self.boundary_placement = BoundaryPlacement(
                form=config.boundary_placement, upper_layers=config.placement_upper_layers,
                rise_fraction=config.rise_fraction)
        with seeded_initializers(config.seed):
            self.network = self._build()

    # ------------------------------------------------------------------
    def _regularizer(self):
        return keras.regularizers.L2(self.config.l2) if self.config.l2 else None

    def _output_module(self, rnn_outputs):
        """What the output layer reads: the configured output module over
        `[h^1 .. h^L]`, or with `output="none"` the hidden states (the
        boundaries left out) or the RNN's output."""
        c, reg = self.config, self._regularizer()
        if c.output == "gated":  # Chung et al. Eq. (11)-(12)
            return GatedOutputEmbedding(
                c.output_units, layer_sizes=self.layer_sizes,
                kernel_regularizer=reg, name="output_embedding",
            )(rnn_outputs)
        if c.output == "simple":  # Kadar et al. SimplerOut
            return SimpleOutputEmbedding(
                c.output_units, layer_sizes=self.layer_sizes,
                kernel_regularizer=reg, name="output_embedding",
            )(rnn_outputs)
        if self.hierarchical_cell is not None:
            # No output module: the softmax reads the hidden states only.
            return keras.layers.Lambda(
                lambda y: y[..., : sum(self.layer_sizes)], name="hiddens"
            )(rnn_outputs)
        return rnn_outputs

    def _recurrent_layers(self):
        """`(rnn_layers, layer_sizes)`: the recurrent layers, bottom first.

        Every layer returns its sequence and states; it is the cell's
        sequence layer or, with `sequence_layer=False`, `hmkeras.RNN(cell)`
        (`recurrent_layer`). Their cells are `layer.cell`, made from
        `cell_options` and the model's own arguments (`MODEL_ARGUMENTS`).
        """
        c = self.config
        reg = self._regularizer()
        arguments = dict(
            c.cell_options, kernel_regularizer=reg, recurrent_regularizer=reg,
            seed=c.seed,
        )

        def layer(index, *args, **kwargs):
            return recurrent_layer(
                CELL_CLASSES[c.cell], SEQUENCE_LAYERS[c.cell], *args,
                sequence_layer=c.sequence_layer, name=f"rnn_{index + 1}",
                **arguments, **kwargs,
            )

        if c.cell in HIERARCHICAL_CELLS:
            # The network adds the prior itself (`BoundaryLosses`), with
            # either kind of layer.
            prior = dict(boundary_prior=None) if c.sequence_layer else {}
            rnn = layer(0, c.units, c.num_layers, **prior)
            self.hierarchical_cell = rnn.cell
            return [rnn], list(rnn.cell.units)
        if c.cell == "lstm":
            layers = [layer(i, c.units, cell_name=f"lstm_cell_{i + 1}")
                      for i in range(c.num_layers)]
            return layers, [c.units] * c.num_layers
        return [layer(0, c.units)], [c.units]

    def _build(self):
        c = self.config
        rnn_layers, self.layer_sizes = self._recurrent_layers()
        self.state_sizes = state_sizes(rnn_layers)
        tokens = keras.Input((None,), dtype="int32", name="tokens")
        states = [
            keras.Input((size,), name=f"state_{i}")
            for i, size in enumerate(self.state_sizes)
        ]
        x = keras.layers.Embedding(c.vocab_size, c.embedding_dim, name="embedding")(tokens)
        outputs, new_states = run_layers(rnn_layers, x, states)
        rnn_outputs = (
            outputs[0] if len(outputs) == 1
            else keras.layers.Concatenate(name="all_layers")(outputs)
        )
        hidden = self._output_module(rnn_outputs)
        logits = keras.layers.Dense(
            c.vocab_size, kernel_regularizer=self._regularizer(), name="logits"
        )(hidden)
        if self.boundary_prior is not None:
            width = sum(self.layer_sizes)
            if c.boundary_placement == "bidirectional":
                self.backward_language_model = self._backward_language_model()
            logits = BoundaryLosses(
                (width, width + c.num_layers - 1), self.boundary_prior,
                self.boundary_placement, backward_model=self.backward_language_model,
                name="boundary_losses",
            )(rnn_outputs, logits=logits, tokens=tokens)
        return keras.Model(
            [tokens, *states], [logits, rnn_outputs, *new_states],
            name=f"char_lm_{c.cell}",
        )

    def _backward_language_model(self):
        """A language model reading each window reversed
        (`BoundaryPlacement(form="bidirectional")`, Eq. 4): tokens in,
        logits in its reading order out, from an embedding, one LSTM layer
        of `units` units and a softmax layer of its own. `BoundaryLosses`
        runs it in training passes only; nothing else reads it, and its
        loss trains only its own weights (the placement's targets are
        constants)."""
        c = self.config
        return keras.Sequential([
            keras.Input((None,), dtype="int32", name="tokens"),
            keras.layers.Embedding(c.vocab_size, c.embedding_dim, name="backward_embedding"),
            keras.layers.LSTM(c.units, return_sequences=True, go_backwards=True,
                              name="backward_lstm"),
            keras.layers.Dense(c.vocab_size, name="backward_logits"),
        ], name="backward_language_model")

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


def state_sizes(rnn_layers):
    """The sizes of the layers' states, in order (flat)."""
    sizes = []
    for rnn in rnn_layers:
        size = rnn.cell.state_size
        sizes.extend(size if isinstance(size, (list, tuple)) else [size])
    return sizes


def run_layers(rnn_layers, x, states):
    """Runs `x` up the layers, each from its slice of the flat `states`.

    Returns:
        `(outputs, new_states)`: every layer's sequence, and the flat list
        of their final states.
    """
    outputs, new_states, offset = [], [], 0
    for rnn in rnn_layers:
        size = rnn.cell.state_size
        count = len(size) if isinstance(size, (list, tuple)) else 1
        x, *layer_states = rnn(x, initial_state=states[offset : offset + count])
        offset += count
        outputs.append(x)
        new_states.extend(layer_states)
    return outputs, new_states


# The configuration's fields as keyword-only parameters (`help()` lists them).
CharLanguageModel.__signature__ = keyword_signature(CharLanguageModelConfig)
