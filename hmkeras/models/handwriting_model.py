"""Handwriting models: RNN(cell) -> output module -> mixture density.

`HandwritingModel` builds the network of Chung et al. (2017, Section 4.2),
"the same model architecture as used in the character-level language
model, except that the output layer is modified to predict real-valued
outputs" with Graves' (2013) mixture density output:

    (dx, dy, pen_up) -> recurrent layer -> output module -> MixtureDensityOutput

The cells (`"hmlstm"`, `"hmrnn"`, `"lstm"`, `"mlstm"`) and output modules
(`"gated"`, Chung et al. Eq. 11-12; `"simple"`; `"none"`) are those of
`hmkeras.models.char_language_model.CharLanguageModel`, whose machinery this
class reuses (it is a subclass: the recurrent layers, sequence layers
unless `sequence_layer=False`, `zero_state`, `boundaries`, `hiddens`,
`set_slope`, `count_params`). The input is the real-valued step itself (no
embedding). The Keras model `network` is stateless, like the char model's:

    network([strokes (batch, time, 3), state_0, ..., state_k])
        -> [params (batch, time, 6M+1), rnn_outputs, state_0', ..., state_k']

`params` follow the packed layout of
`hmkeras.heads.mixture_density_output`; step t predicts step t+1.
`sequence_log_likelihoods` gives Table 3's measure (the log-likelihood of
each whole sequence, summed over its predicted steps).

Examples:

    >>> import numpy as np
    >>> model = HandwritingModel(cell="hmlstm", units=8, output_units=8,
    ...                          num_components=3)
    >>> state = model.zero_state(2)
    >>> params, rnn_outputs, *state = model.network(
    ...     [np.zeros((2, 5, 3), "float32"), *state])
    >>> tuple(params.shape), tuple(model.boundaries(rnn_outputs).shape)
    ((2, 5, 19), (2, 5, 2))
    >>> model.sequence_log_likelihoods([np.zeros((4, 3), "float32")]).shape
    (1,)
"""

import dataclasses

import keras
import numpy as np

from hmkeras import argument_checks
from hmkeras.cells.boundary_prior import prior_for
from hmkeras.heads.mixture_density_output import MixtureDensityOutput
from hmkeras.heads.mixture_density_output import mixture_negative_log_likelihood
from hmkeras.models.char_language_model import CharLanguageModel
from hmkeras.models.char_language_model import check_recurrent_fields
from hmkeras.models.char_language_model import run_layers
from hmkeras.models.char_language_model import state_sizes
from hmkeras.models.config_signature import JsonConfig
from hmkeras.models.config_signature import keyword_signature
from hmkeras.models.config_signature import resolve_config
from hmkeras.models.initializer_seeds import seeded_initializers
from hmkeras.training.handwriting_step_export import draw_strokes

#: Features per step: dx, dy, pen_up.
STEP_FEATURES = 3


@dataclasses.dataclass
class HandwritingModelConfig(JsonConfig):
    """Everything needed to rebuild a `HandwritingModel` (JSON-able).

    Defaults are Chung et al.'s IAM-OnDB setup: 3 x 400 HM-LSTM, gated
    output embedding of 400, and Graves' 20 mixture components.

    Attributes:
        cell, units, num_layers, output, output_units: As in
            `CharLanguageModelConfig` (400 units and output units here).
        num_components: Number M of bivariate Gaussians of the output.
        cell_options: As there: the cell's own arguments (`layer_norm`,
            `boundary_mode`, `slope`, `dropout`, ...), its defaults for
            those left out.
        boundary_prior: The form of the `hmkeras.BoundaryPrior` that
            `HandwritingTrainer` adds to the training loss of the
            hierarchical cells, `"rate"` or `"binomial"`; None (default)
            for the papers' model (no prior). Off by default here, unlike
            the character model: on the embedded stroke set the rate prior
            costs test log-likelihood and puts z^2 no closer to the stroke
            ends (`docs/results/handwriting.md`, "Handwriting on the
            embedded stroke set").
            Checked as in `CharLanguageModelConfig`; unused by the other
            cells.
        segment_lengths: The prior's expected segment length per boundary
            layer, in pen points (None: the defaults, `(5, 15)` for three
            layers); hierarchical cells only.
        l2, seed: As there.
        sequence_layer: As there: the cell's sequence layer (True) or
            `keras.layers.RNN(cell)`.

    A JSON configuration without `boundary_prior` (`from_json`) reads
    back with the default, None: the papers' model.

    Examples:

        >>> config = HandwritingModelConfig(units=8, cell_options={"layer_norm": False})
        >>> HandwritingModelConfig.from_json(config.to_json()) == config
        True
    """

    cell: str = "hmlstm"
    units: int = 400
    num_layers: int = 3
    output: str = "gated"
    output_units: int = 400
    num_components: int = 20
    cell_options: dict = dataclasses.field(default_factory=dict)
    boundary_prior: str = None
    segment_lengths: list = None
    l2: float = 0.0
    seed: int = None
    sequence_layer: bool = True

    def __post_init__(self):
        # Checked and stored as Python values, as in `CharLanguageModelConfig`
        # (the boundary prior's fields included).
        check_recurrent_fields(self, positive=("units", "num_layers", "num_components"))


class HandwritingModel(CharLanguageModel):
    """A pen-stroke model whose Keras `network` takes and returns the state.

    Args:
        config: A `HandwritingModelConfig`, or None to build one from the
            keyword arguments, which are its fields (keyword-only, used
            only when `config` is None):
        cell, units, num_layers, output, output_units, num_components: See
            `HandwritingModelConfig`.
        cell_options, l2, seed, sequence_layer: Ditto.
        boundary_prior, segment_lengths: Ditto.

    Attributes:
        config, network, state_sizes, layer_sizes, hierarchical_cell: As in
            `CharLanguageModel`.
        mixture: The `MixtureDensityOutput` layer.
        boundary_prior: The `hmkeras.BoundaryPrior` that
            `HandwritingTrainer` adds to the training loss (an extension,
            off by default), or None (the papers' model; always None for
            the other cells).

    Examples:

        >>> import numpy as np
        >>> from hmkeras.models import HandwritingModel
        >>> model = HandwritingModel(units=8, output_units=8, num_components=2, seed=0)
        >>> model.layer_sizes, type(model.hierarchical_cell).__name__
        ([8, 8, 8], 'HMLSTMCell')
        >>> strokes = [np.zeros((6, 3), "float32"), np.zeros((4, 3), "float32")]
        >>> model.sequence_log_likelihoods(strokes).shape  # nats per sequence
        (2,)
    """

    def __init__(self, config=None, **kwargs):
        config = resolve_config(HandwritingModelConfig, config, kwargs)
        self.config = config
        self.hierarchical_cell = None
        with seeded_initializers(config.seed):
            self.network = self._build()
        self.boundary_prior = None
        if self.is_hierarchical:
            self.boundary_prior = prior_for(
                config.boundary_prior, config.segment_lengths, config.num_layers
            )

    def _build(self):
        c = self.config
        # The layers of the char model (`CharLanguageModel._recurrent_layers`).
        rnn_layers, self.layer_sizes = self._recurrent_layers()
        self.state_sizes = state_sizes(rnn_layers)
        strokes = keras.Input((None, STEP_FEATURES), name="strokes")
        states = [keras.Input((size,), name=f"state_{i}")
                  for i, size in enumerate(self.state_sizes)]
        outputs, new_states = run_layers(rnn_layers, strokes, states)
        rnn_outputs = (outputs[0] if len(outputs) == 1
                       else keras.layers.Concatenate(name="all_layers")(outputs))
        hidden = self._output_module(rnn_outputs)  # as in the char model
        reg = self._regularizer()
        self.mixture = MixtureDensityOutput(
            c.num_components, kernel_regularizer=reg, name="mixture")
        params = self.mixture(hidden)  # Graves Eq. (17)
        return keras.Model([strokes, *states], [params, rnn_outputs, *new_states],
                           name=f"handwriting_{c.cell}")

    # ------------------------------------------------------------------
    def read(self, sequence):
        """Runs one `(T, 3)` sequence from the zero state.

        Returns:
            `(params (T, 6M+1), rnn_outputs (T, output_size))` as NumPy.
        """
        sequence = np.asarray(sequence, np.float32)
        params, rnn_outputs = self._forward(_padded_in_time(sequence[None]))[:2]
        return params[0, :len(sequence)], rnn_outputs[0, :len(sequence)]

    def _forward(self, inputs):
        """The network's outputs (NumPy) for `(batch, T, 3)` `inputs` from
        the zero state, through Keras' compiled predict function
        (`tf.function` on TensorFlow, `jax.jit` on JAX); an eager call
        would run the recurrence op by op."""
        return self.network.predict_on_batch([inputs, *self.zero_state(len(inputs))])

    def draw(self, num_steps, num_samples=1, offsets=((0.0, 0.0), (1.0, 1.0)),
             sampler=None):
        """Draws handwriting from the model itself, on any backend.

        The loop of `hmkeras.training.handwriting_step_export.
        generate_strokes` (`draw_strokes`: every row from the zero state
        and a pen-up step, then its own samples), each step through Keras'
        compiled predict function instead of an exported step model; the
        same weights and seed draw the same lines as the export.

        Args:
            num_steps: Steps to draw per row.
            num_samples: Rows drawn together.
            offsets: `(mean, std)`, the normalization of the offsets the
                model was trained on.
            sampler: Optional dict of `sample_mixture`'s `bias` and
                `temperature` and the `seed` (defaults 0, 1 and 0).

        Returns:
            List of `num_samples` `(num_steps, 3)` float32 arrays of raw
            (denormalized) `(dx, dy, pen_up)`.
        """
        sampler = {"bias": 0.0, "temperature": 1.0, "seed": 0, **(sampler or {})}

        def read(strokes, state):
            params, _, *state = self.network.predict_on_batch([strokes[:, None], *state])
            return params[:, 0], state

        return draw_strokes(read, self.zero_state(num_samples), offsets, num_steps, sampler)

    def sequence_log_likelihoods(self, sequences, batch_size=16):
        """Log-likelihood (nats) of every sequence (Chung et al. Table 3).

        Step t's output predicts step t+1 (Graves Eq. 26), so a sequence
        of T steps contributes the T - 1 predictions of steps 2..T; the
        model starts from the zero state for every sequence.

        Args:
            sequences: List of `(T_i, 3)` arrays (normalized offsets).
            batch_size: Sequences per forward pass (padded to the longest).

        Returns:
            `(len(sequences),)` float64 array of `sum_t log Pr(x_{t+1} | y_t)`.
        """
        batch_size = argument_checks.check_positive_int("batch_size", batch_size)
        out = []
        for start in range(0, len(sequences), batch_size):
            chunk = sequences[start : start + batch_size]
            inputs, targets, weights = pad_sequences(
                chunk, padded_length(max(len(s) for s in chunk) - 1))
            params = self._forward(inputs)[0]
            nll = keras.ops.convert_to_numpy(
                mixture_negative_log_likelihood(params, targets))
            out.extend(-(nll.astype(np.float64) * weights).sum(axis=1))
        return np.asarray(out, np.float64)


# Compiled passes pad their sequences to a multiple of this many steps,
# so that sequences of many lengths share a few compiled shapes (the
# recurrence is causal: the padding after a step changes nothing before it).
_LENGTH_QUANTUM = 64


def padded_length(length):
    """`length` rounded up to a multiple of 64 steps: the padded length of
    a compiled pass, so that sequences of many lengths share a few
    compiled shapes (`examples/iam_ondb.py` pads its training batches so
    on JAX, which compiles a step per shape).

    Examples:

        >>> padded_length(1), padded_length(64), padded_length(65)
        (64, 64, 128)
    """
    return -(-length // _LENGTH_QUANTUM) * _LENGTH_QUANTUM


def _padded_in_time(inputs):
    """`(batch, T, 3)` inputs zero-padded to `padded_length(T)` steps."""
    extra = padded_length(inputs.shape[1]) - inputs.shape[1]
    return np.pad(inputs, [(0, 0), (0, extra), (0, 0)])


def pad_sequences(sequences, length=None):
    """Inputs, targets and step weights of a batch of `(T_i, 3)` sequences.

    Inputs are steps `0..T_i-2`, targets steps `1..T_i-1` (next-step
    prediction), zero-padded at the end to `length` (default: the longest
    `T_i - 1`); `weights` is 1 on real steps and 0 on padding.

    Returns:
        `(inputs (B, L, 3), targets (B, L, 3), weights (B, L))` float32.
    """
    sizes = [len(s) - 1 for s in sequences]
    if min(sizes) < 1:
        raise ValueError("Every sequence needs at least 2 steps.")
    length = max(sizes) if length is None else length
    inputs = np.zeros((len(sequences), length, STEP_FEATURES), np.float32)
    targets = np.zeros_like(inputs)
    weights = np.zeros((len(sequences), length), np.float32)
    for row, sequence in enumerate(sequences):
        n = min(len(sequence) - 1, length)
        inputs[row, :n] = sequence[:n]
        targets[row, :n] = sequence[1 : n + 1]
        weights[row, :n] = 1.0
    return inputs, targets, weights


# The configuration's fields as keyword-only parameters (`help()` lists them).
HandwritingModel.__signature__ = keyword_signature(HandwritingModelConfig)
