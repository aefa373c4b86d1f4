"""Encoder-decoder for math expression evaluation (Jacob et al. 2018, Sec. 3.1).

The encoder reads the characters of an expression; its final state
initialises a decoder LSTM that emits the two digits of the value.  Encoders
(`ENCODERS`):

* `"lstm"`: a plain LSTM (the paper's baseline);
* `"rrnet_supervised"`: `RecurrentRecursiveCell(mode="supervised")` fed
  the ground-truth operations (split at "(", merge at ")", recur
  otherwise); the policy is trained on them by maximum likelihood;
* `"rrnet_reinforce"`: `RecurrentRecursiveCell(mode="reinforce")`, the
  tree sampled from the policy and learned by REINFORCE (Williams 1992)
  with a baseline and an entropy bonus; by default the reward is minus
  the decoder's loss (`reward="likelihood"`) and the baseline the reward
  of the policy's greedy tree (`baseline="greedy"`, self-critical), chosen
  by measurement; the paper's reward is the correctness of the predicted
  value (`reward="accuracy"`), `baseline="learned"` learns the baseline
  and `baseline="leave_one_out"` samples several trees per expression,
  each one's baseline the mean reward of the others (Kool et al. 2019);
* `"rrnet_random"`: `RecurrentRecursiveCell(mode="fixed")` with a random
  but fixed operation per symbol (drawn once from `seed`; the paper's
  "random deterministic policies").

The decoder LSTM runs two steps and a softmax over 0-9 reads each.  By
default (`decoder="autoregressive"`) it "sequentially generates 2 digits"
as in the paper: its first input is a start symbol, its second the first
digit, the true one in training (teacher forcing) and its own greedy
choice in `call` / `predict`.  A right answer needs a right first digit,
so the training accuracy (both digits right under teacher forcing) is the
greedy decoder's.  `decoder="steps"` feeds two learned step embeddings
instead (no feedback; the two decoders are compared in
`docs/results/mee-logic.md`, "MEE (Jacob et al. Table 2) in small").

Inputs are a dict `{"tokens": (batch, T) int, "operations": (batch, T)
int}`: character ids from `hmkeras.data.mee.encode_expression`, 0-padded
at the end, and the ground-truth operations (ignored by the encoders that
do not use them).  Targets are `(batch, 2)` digits.

Examples:

    >>> import numpy as np
    >>> model = ExpressionModel(encoder="rrnet_supervised", units=8, embedding_dim=4)
    >>> tokens = np.array([[15, 2, 11, 3, 16]]); operations = np.array([[0, 2, 2, 2, 1]])
    >>> model({"tokens": tokens, "operations": operations}).shape
    TensorShape([1, 2, 10])
"""

import keras
import numpy as np
from keras import ops

from hmkeras.cells.sequence_rnn import RNN
from hmkeras import argument_checks
from hmkeras import tensorflow_features
from hmkeras.cells.recurrent_recursive_cell import MEMORIES
from hmkeras.cells.recurrent_recursive_cell import POLICY_INPUTS
from hmkeras.cells.recurrent_recursive_cell import RECUR
from hmkeras.cells.recurrent_recursive_cell import RecurrentRecursiveCell
from hmkeras.cells.recurrent_recursive_cell import SUBTREE_STARTS
from hmkeras.training import backend_steps
from hmkeras.training.optimizer_on_compile import BuildsOptimizerOnCompile

ENCODERS = ("lstm", "rrnet_supervised", "rrnet_reinforce", "rrnet_random")
REWARDS = ("accuracy", "likelihood")
BASELINES = ("learned", "greedy", "leave_one_out")
# The REINFORCE encoder's defaults: of the rewards and baselines compared on
# MEE, the most accurate at every length, and the only ones whose trees
# follow some brackets (docs/results/mee-logic.md, "MEE (Jacob et al.
# Table 2) in small").
REINFORCE_REWARD = "likelihood"
REINFORCE_BASELINE = "greedy"
# Trees sampled per expression with `baseline="leave_one_out"` when
# `tree_samples` is not given: Kool et al. (2019)'s four.
LEAVE_ONE_OUT_TREE_SAMPLES = 4
DECODERS = ("autoregressive", "steps")
# The REINFORCE encoder's default: up to two splits / merges before each
# token's recur (the paper's operations), more accurate on MEE at every
# length than one consuming operation per token (docs/results/mee-logic.md,
# "MEE (Jacob et al. Table 2) in small").
REINFORCE_OPERATIONS_PER_TOKEN = 3
# Tree-LSTM merges (`memory="tree"`): the supervised RRNet learns faster
# and generalizes further with them (docs/results/mee-logic.md, "MEE (Jacob
# et al. Table 2) in small"); the random trees, its control, share its
# cell. REINFORCE keeps the continued memory of its defaults' comparison.
TREE_MEMORY_ENCODERS = ("rrnet_supervised", "rrnet_random")
_ENCODER_MODES = {
    "rrnet_supervised": "supervised",
    "rrnet_reinforce": "reinforce",
    "rrnet_random": "fixed",
}


def _check_used(name, value, default, encoder, users):
    """Refuses an option set away from its default for an encoder that
    does not use it."""
    if value != default and encoder not in users:
        raise ValueError(
            f"`{name}` is an option of encoder {' / '.join(map(repr, users))} only. "
            f"Received: {name}={value!r}, encoder={encoder!r}")


@keras.saving.register_keras_serializable(package="hmkeras")
class ExpressionModel(BuildsOptimizerOnCompile, keras.Model):
    """Expression encoder + two-digit decoder, with the RRNet policy losses.

    Training (`fit`) minimises the decoder's cross-entropy plus, for
    `"rrnet_supervised"`, `policy_weight` times the negative log-likelihood
    of the true operations, and for `"rrnet_reinforce"` the REINFORCE
    surrogate `-(r - b) * sum_t log p(z_t)` (times `policy_weight`) minus
    `entropy_weight * sum_t H_t`.  With `baseline="learned"` the baseline
    `b` is a linear function of the mean token embedding (no gradient
    reaches the embedding through it), trained by adding its squared error
    `(r - b)^2`.  With `baseline="greedy"` it is the reward of the tree the
    policy's argmax builds on the same expression (self-critical training,
    Rennie et al. 2017): an extra forward pass per step, no baseline
    weights, and a sampled tree is pushed up only if it beats the greedy
    one, the tree used at test time.  With `baseline="leave_one_out"`
    every expression of a training batch is read `tree_samples` (k) times,
    each time with a tree of its own, and the baseline of each tree is the
    mean reward of the other k - 1 trees of its expression (Kool, van Hoof
    & Welling 2019, "Buy 4 REINFORCE samples, get a baseline for free!"):
    no extra pass and no weights, and a tree is pushed up when it beats
    its siblings; the decoder's loss and the entropy are averaged over all
    the trees.

    With `policy_warmup_steps=n` the first `n` training steps leave the
    policy loss and the entropy bonus out: the encoder and the decoder
    learn on the trees of the untrained policy (near uniform) before
    REINFORCE moves it. The steps are counted by the model's
    `trained_steps` variable, saved with its weights.

    An option set for an encoder that does not use it (`reward`,
    `baseline`, `tree_samples`, `recur_bias`, `policy_inputs`,
    `policy_warmup_steps`, `exploration`, `memory`, `subtree_start`) raises
    `ValueError`.

    Args:
        encoder: One of `ENCODERS`.
        vocab_size: Number of token ids (0 is padding).
        units: Size of the encoder and decoder states.
        embedding_dim: Size of the token embedding.
        max_depth: Stack slots of the RRNet cell (deepest nesting).
        policy_weight: Weight of the policy loss (supervised or REINFORCE).
            The policy reads `[h; x]`, so its loss reaches the encoder's
            weights too; at the start it is the log-likelihood of about 20
            operations (about 20 log 3 nats), several times the task loss.
            At weight 1 it holds the MEE encoder on its plateau
            (`docs/results/mee-logic.md`, "MEE (Jacob et al. Table 2) in
            small"); Adam scales every weight's step, so the policy's own
            weights learn as fast at 0.01.
        entropy_weight: Weight of the entropy bonus (REINFORCE); 1e-4 keeps
            the ratio 0.01 to `policy_weight`.
        reward: `"accuracy"` or `"likelihood"` (`"rrnet_reinforce"` only).
            None (default): `REINFORCE_REWARD`, `"likelihood"`, for
            `"rrnet_reinforce"`, chosen by measurement
            (`docs/results/mee-logic.md`, "MEE (Jacob et al. Table 2) in
            small").
        baseline: `"learned"`, `"greedy"` or `"leave_one_out"`
            (`"rrnet_reinforce"` only); see above. None (default):
            `REINFORCE_BASELINE`, `"greedy"`, for `"rrnet_reinforce"`,
            chosen by measurement.
        tree_samples: Trees sampled per expression in training
            (`"rrnet_reinforce"` only): a batch of `B` expressions trains on
            `B * tree_samples` trees. None (default): 1, or
            `LEAVE_ONE_OUT_TREE_SAMPLES` (4) with `baseline="leave_one_out"`,
            which needs at least 2.
        recur_bias: The RRNet policy's initial recur logit
            (`RecurrentRecursiveCell`; `"rrnet_supervised"` and
            `"rrnet_reinforce"` only); 0 starts from a uniform policy.
        policy_inputs: What the RRNet policy reads (`RecurrentRecursiveCell`;
            `"rrnet_supervised"` and `"rrnet_reinforce"` only):
            `"state_and_token"` (default, the paper's) or `"token"` (a
            fixed operation per symbol in the greedy tree).
        policy_warmup_steps: Non-negative int (`"rrnet_reinforce"` only):
            training steps without the policy's losses (see above); 0
            (default) trains the policy from the first step.
        exploration: Float in [0, 1) (`"rrnet_reinforce"` only): the share
            of the policy's probability spread over the possible operations
            (`RecurrentRecursiveCell`); 0 (default): none.
        operations_per_token: 1, one operation per token, which consumes
            it; `n > 1` (`"rrnet_reinforce"` only), the paper's
            operations: up to `n - 1` splits and merges, which consume
            nothing, before each token's recur (`RecurrentRecursiveCell`).
            None (default): `REINFORCE_OPERATIONS_PER_TOKEN` (3) for
            `"rrnet_reinforce"`, chosen by measurement, 1 for the others.
        memory: The RRNet cell's memory at a merge (`RecurrentRecursiveCell`):
            `"continued"` or `"tree"` (Tree-LSTM merges). None (default):
            `"tree"` for the encoders in `TREE_MEMORY_ENCODERS`, chosen by
            measurement, `"continued"` for REINFORCE; the `"lstm"` encoder
            takes none (its `memory` attribute is None).
        subtree_start: Where a split's sub-tree starts in the RRNet cell
            (`RecurrentRecursiveCell`; the RRNet encoders only): `"parent"`
            (default, the paper's: from the parent's state) or `"fresh"`
            (from the zero state, so what precedes a sub-tree reaches the
            states after it only through a merge; the sub-trees still open
            after the last token are then merged before the decoder reads
            the state, `RecurrentRecursiveCell.close_subtrees`).
        decoder: `"autoregressive"` (the first digit fed back) or
            `"steps"` (two learned step inputs); see the module docstring.
        seed: Optional int: weights, sampler and the random policy.
        **kwargs: Base-model arguments (`name`, ...).

    Examples:

        >>> import keras, numpy as np
        >>> from hmkeras.models import ExpressionModel
        >>> model = ExpressionModel(encoder="lstm", units=8, embedding_dim=4, seed=0)
        >>> model.compile(optimizer="adam")
        >>> inputs = {"tokens": np.array([[15, 2, 11, 3, 16]] * 4),
        ...           "operations": np.zeros((4, 5), "int32")}
        >>> history = model.fit(inputs, np.array([[4, 2]] * 4), epochs=1, verbose=0)
        >>> model.predict(inputs, verbose=0).shape  # two digits, a softmax each
        (4, 2, 10)
    """

    def __init__(self, encoder="lstm", vocab_size=17, units=64, embedding_dim=32,
                 max_depth=10, policy_weight=0.01, entropy_weight=1e-4,
                 reward=None, decoder="autoregressive", recur_bias=0.0,
                 operations_per_token=None, memory=None, baseline=None,
                 tree_samples=None, policy_inputs="state_and_token",
                 policy_warmup_steps=0, exploration=0.0, subtree_start="parent",
                 seed=None, **kwargs):
        tensorflow_features.require_training_backend("ExpressionModel")
        super().__init__(**kwargs)
        self.encoder_name = argument_checks.check_choice("encoder", encoder, ENCODERS)
        self.vocab_size = argument_checks.check_int("vocab_size", vocab_size, minimum=2)
        self.units = argument_checks.check_positive_int("units", units)
        self.embedding_dim = argument_checks.check_positive_int(
            "embedding_dim", embedding_dim)
        self.max_depth = argument_checks.check_positive_int("max_depth", max_depth)
        self.policy_weight = argument_checks.check_float(
            "policy_weight", policy_weight, minimum=0)
        self.entropy_weight = argument_checks.check_float(
            "entropy_weight", entropy_weight, minimum=0)
        _check_used("reward", reward, None, encoder, ("rrnet_reinforce",))
        _check_used("baseline", baseline, None, encoder, ("rrnet_reinforce",))
        if encoder == "rrnet_reinforce":
            reward = argument_checks.check_choice(
                "reward", REINFORCE_REWARD if reward is None else reward, REWARDS)
            baseline = argument_checks.check_choice(
                "baseline", REINFORCE_BASELINE if baseline is None else baseline,
                BASELINES)
        self.reward, self.baseline_name = reward, baseline
        self.tree_samples = self._resolve_tree_samples(tree_samples)
        self.decoder_name = argument_checks.check_choice("decoder", decoder, DECODERS)
        self.recur_bias = argument_checks.check_float("recur_bias", recur_bias)
        _check_used("recur_bias", recur_bias, 0.0, encoder,
                    ("rrnet_supervised", "rrnet_reinforce"))
        if operations_per_token is None:
            operations_per_token = REINFORCE_OPERATIONS_PER_TOKEN if (
                encoder == "rrnet_reinforce") else 1
        self.operations_per_token = argument_checks.check_positive_int(
            "operations_per_token", operations_per_token)
        if self.operations_per_token > 1 and encoder != "rrnet_reinforce":
            raise ValueError(
                "`operations_per_token` > 1 needs encoder='rrnet_reinforce' (the "
                "other encoders read one given operation, or none, per token). "
                f"Received: operations_per_token={operations_per_token!r}, "
                f"encoder={encoder!r}")
        _check_used("policy_inputs", policy_inputs, "state_and_token", encoder,
                    ("rrnet_supervised", "rrnet_reinforce"))
        self.policy_inputs = argument_checks.check_choice(
            "policy_inputs", policy_inputs, POLICY_INPUTS)
        _check_used("policy_warmup_steps", policy_warmup_steps, 0, encoder,
                    ("rrnet_reinforce",))
        self.policy_warmup_steps = argument_checks.check_int(
            "policy_warmup_steps", policy_warmup_steps, minimum=0)
        _check_used("exploration", exploration, 0.0, encoder, ("rrnet_reinforce",))
        self.exploration = argument_checks.check_float("exploration", exploration,
                                                       minimum=0)
        _check_used("memory", memory, None, encoder, tuple(_ENCODER_MODES))
        if memory is None and encoder != "lstm":
            memory = "tree" if encoder in TREE_MEMORY_ENCODERS else "continued"
        if memory is not None:
            memory = argument_checks.check_choice("memory", memory, MEMORIES)
        self.memory = memory
        _check_used("subtree_start", subtree_start, "parent", encoder, tuple(_ENCODER_MODES))
        self.subtree_start = argument_checks.check_choice(
            "subtree_start", subtree_start, SUBTREE_STARTS)
        self.seed = argument_checks.check_int("seed", seed, allow_none=True)
        init = keras.initializers.GlorotUniform(seed=self.seed)
        self.embedding = keras.layers.Embedding(
            vocab_size, embedding_dim, embeddings_initializer=init, name="embedding")
        self.cell = None
        if encoder == "lstm":
            self.encoder = keras.layers.LSTM(units, return_state=True, name="encoder",
                                             seed=self.seed)
        else:
            self.cell = RecurrentRecursiveCell(
                units, max_depth, mode=_ENCODER_MODES[encoder], recur_bias=self.recur_bias,
                operations_per_token=self.operations_per_token, memory=self.memory,
                policy_inputs=self.policy_inputs, exploration=self.exploration,
                subtree_start=self.subtree_start, seed=self.seed)
            # Padded steps output zeros (the losses mask them; JAX's loop
            # needs it for this cell, whose output is not its first state).
            self.encoder = RNN(self.cell, return_sequences=True, return_state=True,
                               zero_output_for_mask=True, name="encoder")
        if encoder == "rrnet_random":
            # One fixed operation per symbol; padding (0) recurs.
            table = np.random.default_rng(self.seed).integers(0, 3, size=vocab_size)
            table[0] = RECUR
            self.random_operations = ops.convert_to_tensor(table, "int32")
        if decoder == "autoregressive":
            # Ids 0-9: the previous digit; id 10: the start of the value.
            self.digit_embedding = keras.layers.Embedding(
                11, embedding_dim, embeddings_initializer=init, name="digits")
        else:
            self.step_embedding = keras.layers.Embedding(2, embedding_dim, name="steps")
        self.decoder = keras.layers.LSTM(units, return_sequences=True, return_state=True,
                                         name="decoder", seed=self.seed)
        self.readout = keras.layers.Dense(10, name="readout")
        if baseline == "learned":  # REINFORCE's options are None for the others
            self.baseline = keras.layers.Dense(1, name="baseline")
        if self.policy_warmup_steps:
            self.trained_steps = self.add_weight(
                name="trained_steps", shape=(), dtype="int32", initializer="zeros",
                trainable=False)
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.accuracy_tracker = keras.metrics.Mean(name="accuracy")
        self.policy_tracker = keras.metrics.Mean(name="policy_loss")
        self._build_weights()

    def _build_weights(self):
        """Creates every weight by reading one dummy expression, its random
        draws undone (the seed states are put back): the model is built when
        it is made, so `compile` builds the optimizer too and the train step
        is traced once, and checkpoints and `load_weights` find the weights."""
        seeds = [v for v in self.variables if "seed_generator_state" in v.path]
        states = [keras.ops.convert_to_numpy(v) for v in seeds]
        one = np.ones((1, 1), "int32")
        self.analyze({"tokens": one, "operations": one * RECUR})
        for variable, state in zip(seeds, states):
            variable.assign(state)
        if self.baseline_name == "learned":  # it reads the mean embedding
            self.baseline.build((None, self.embedding_dim))
        self.built = True

    def _resolve_tree_samples(self, tree_samples):
        """`tree_samples` checked, None resolved (see the class docstring)."""
        _check_used("tree_samples", tree_samples, None, self.encoder_name,
                    ("rrnet_reinforce",))
        if self.encoder_name != "rrnet_reinforce":
            return 1
        if tree_samples is None:
            tree_samples = (LEAVE_ONE_OUT_TREE_SAMPLES
                            if self.baseline_name == "leave_one_out" else 1)
        minimum = 2 if self.baseline_name == "leave_one_out" else 1
        tree_samples = argument_checks.check_int("tree_samples", tree_samples,
                                                 minimum=minimum)
        return tree_samples

    @property
    def metrics(self):
        return [self.loss_tracker, self.accuracy_tracker, self.policy_tracker]

    def operations_for(self, inputs):
        """The operations fed to a fixed / supervised encoder."""
        if self.encoder_name == "rrnet_random":
            return ops.take(self.random_operations, ops.cast(inputs["tokens"], "int32"),
                            axis=0)
        return inputs["operations"]

    def analyze(self, inputs, training=False, digits=None):
        """Digit logits `(batch, 2, 10)` and the encoder's per-step
        `(actions, log_probs, entropies, mask)` (None for the LSTM).

        The autoregressive decoder feeds back the true first digit when
        `digits` (`(batch, 2)`) are given (teacher forcing) and its own
        greedy first digit otherwise.
        """
        tokens = ops.cast(inputs["tokens"], "int32")
        mask = ops.greater(tokens, 0)
        embedded = self.embedding(tokens)
        tree = None
        if self.cell is None:
            _, h, c = self.encoder(embedded, mask=mask, training=training)
        else:
            if self.cell.takes_operations:
                cell_inputs = self.cell.pack_inputs(embedded, self.operations_for(inputs))
            else:
                cell_inputs = embedded
            outputs, *states = self.encoder(cell_inputs, mask=mask, training=training)
            if self.subtree_start == "fresh":
                # The decoder reads the root: open sub-trees are merged.
                states = self.cell.close_subtrees(states)
            h, c = states[:2]
            _, actions, log_probs, entropies = self.cell.split_outputs(outputs)
            tree = (actions, log_probs, entropies, ops.cast(mask, log_probs.dtype))
        return self._decode([h, c], digits, training), tree

    def _decode(self, state, digits, training):
        """Logits `(batch, 2, 10)` of the two digits from the encoder's state."""
        batch_steps = ops.zeros_like(state[0][:, :2], dtype="int32") + ops.arange(
            2, dtype="int32")
        if self.decoder_name == "steps":
            decoded = self.decoder(self.step_embedding(batch_steps),
                                   initial_state=state, training=training)[0]
            return self.readout(decoded)
        start = ops.full_like(batch_steps[:, :1], 10)
        if digits is not None:
            # Teacher forcing: inputs [start, true first digit].
            previous = ops.concatenate([start, ops.cast(digits, "int32")[:, :1]], axis=1)
            decoded = self.decoder(self.digit_embedding(previous), initial_state=state,
                                   training=training)[0]
            return self.readout(decoded)
        first, *state = self.decoder(self.digit_embedding(start), initial_state=state,
                                     training=training)
        first = self.readout(first)
        guess = ops.cast(ops.argmax(first, axis=-1), "int32")
        second = self.decoder(self.digit_embedding(guess), initial_state=state,
                              training=training)[0]
        return ops.concatenate([first, self.readout(second)], axis=1)

    def call(self, inputs, training=False):
        return self.analyze(inputs, training=training)[0]

    def _task(self, logits, digits):
        """Per-example decoder loss and correctness (both digits right)."""
        digits = ops.cast(digits, "int32")
        per_digit = keras.losses.sparse_categorical_crossentropy(
            digits, logits, from_logits=True)
        task = ops.sum(per_digit, axis=-1)  # (batch,)
        guesses = ops.cast(ops.argmax(logits, axis=-1), "int32")
        correct = ops.cast(ops.all(ops.equal(guesses, digits), axis=-1), task.dtype)
        return task, correct

    def _reward(self, task, correct):
        return ops.stop_gradient(correct if self.reward == "accuracy" else -task)

    def greedy_reward(self, inputs, digits):
        """The reward of the greedy (argmax) trees: the self-critical baseline."""
        logits, _ = self.analyze(inputs, training=False, digits=digits)
        return self._reward(*self._task(logits, digits))

    def _objective(self, inputs, digits, training, greedy_reward=None, samples=1):
        """`(loss, correct, policy loss)` of a batch; in training with
        `samples` > 1 its rows are `samples` copies of each expression in
        turn (`_repeat`)."""
        # With teacher forcing, "both digits right" is the greedy decoder's
        # correctness: a right first digit is the one fed back either way.
        logits, tree = self.analyze(inputs, training=training, digits=digits)
        task, correct = self._task(logits, digits)
        loss = ops.mean(task)
        policy = ops.zeros(())
        if tree is not None and self.encoder_name != "rrnet_random":
            _, log_probs, entropies, mask = tree
            sequence_log_prob = ops.sum(log_probs * mask, axis=-1)
            if self.encoder_name == "rrnet_supervised":
                policy = -ops.mean(sequence_log_prob)
                loss += self.policy_weight * policy
            else:
                reward = self._reward(task, correct)
                baseline = self._baseline(inputs, mask, reward, greedy_reward, samples)
                advantage = ops.stop_gradient(reward - baseline)
                policy = -ops.mean(advantage * sequence_log_prob)
                entropy = ops.mean(ops.sum(entropies * mask, axis=-1))
                loss += self._policy_switch(training) * (
                    self.policy_weight * policy - self.entropy_weight * entropy)
                if self.baseline_name == "learned":
                    loss += ops.mean(ops.square(reward - baseline))
        return loss, correct, policy

    def _policy_switch(self, training):
        """1 once the policy trains, 0 during its warm-up (training steps
        before `policy_warmup_steps`)."""
        if not (training and self.policy_warmup_steps):
            return 1.0
        return ops.cast(ops.greater_equal(self.trained_steps, self.policy_warmup_steps),
                        "float32")

    def _baseline(self, inputs, mask, reward, greedy_reward, samples):
        """REINFORCE's baseline `b` per tree."""
        if self.baseline_name == "leave_one_out" and samples > 1:
            siblings = ops.reshape(reward, (-1, samples))
            total = ops.sum(siblings, axis=1, keepdims=True)
            return ops.reshape((total - siblings) / (samples - 1), (-1,))
        if self.baseline_name == "learned":
            mean_embedding = ops.sum(
                self.embedding(ops.cast(inputs["tokens"], "int32"))
                * ops.expand_dims(mask, -1), axis=1) / ops.sum(mask, 1, keepdims=True)
            return self.baseline(ops.stop_gradient(mean_embedding))[:, 0]
        # Evaluation builds the greedy tree itself: no advantage.
        return reward if greedy_reward is None else greedy_reward

    def _repeat(self, batch):
        """Each example of a batch structure `tree_samples` times in turn
        (rows `[a, a, ..., b, b, ...]`)."""
        return keras.tree.map_structure(
            lambda t: ops.repeat(t, self.tree_samples, axis=0), batch)

    def _training_batch(self, data):
        """`(inputs, digits, greedy_reward)` of a training batch: the
        self-critical baseline's reward, and the rows repeated for
        `tree_samples` > 1."""
        inputs, digits = data[0], data[1]
        greedy_reward = None
        if self.baseline_name == "greedy":
            greedy_reward = self.greedy_reward(inputs, digits)
        if self.tree_samples > 1:
            inputs, digits = self._repeat((inputs, digits))
            if greedy_reward is not None:
                greedy_reward = self._repeat(greedy_reward)
        return inputs, digits, greedy_reward

    def _training_forward(self, data):
        """`(loss, (correct, policy))` of a training batch."""
        inputs, digits, greedy_reward = self._training_batch(data)
        loss, correct, policy = self._objective(
            inputs, digits, training=True, greedy_reward=greedy_reward,
            samples=self.tree_samples)
        if self.policy_warmup_steps:
            self.trained_steps.assign(self.trained_steps + 1)
        return loss, (correct, policy)

    def train_step(self, *args):
        """One step (`hmkeras.training.backend_steps`): Keras gives `(data)`
        on TensorFlow, `(state, data)` on JAX."""
        return backend_steps.train_step(
            self, args, self._training_forward, lambda loss, aux: self._record(loss, *aux))

    def test_step(self, *args):
        """One evaluation step: `(data)` on TensorFlow, `(state, data)` on JAX."""
        return backend_steps.test_step(self, args, lambda data: self._record(
            *self._objective(data[0], data[1], training=False)))

    def _record(self, loss, correct, policy):
        self.loss_tracker.update_state(loss)
        self.accuracy_tracker.update_state(correct)
        self.policy_tracker.update_state(policy)
        return {m.name: m.result() for m in self.metrics}

    def _tree_samples_config(self):
        """`tree_samples` as given: None for the encoders without it."""
        return self.tree_samples if self.encoder_name == "rrnet_reinforce" else None

    def get_build_config(self):
        """The model is built when it is made (its weights do not depend
        on the input's length)."""
        return {"built": True} if self.weights else None

    def build_from_config(self, config):
        """Nothing to do: the model made its weights when it was made
        (`_build_weights`), and a loaded model gets the saved ones."""

    def get_config(self):
        return {
            **super().get_config(),
            "encoder": self.encoder_name, "vocab_size": self.vocab_size,
            "units": self.units, "embedding_dim": self.embedding_dim,
            "max_depth": self.max_depth, "policy_weight": self.policy_weight,
            "entropy_weight": self.entropy_weight, "reward": self.reward,
            "decoder": self.decoder_name, "recur_bias": self.recur_bias,
            "operations_per_token": self.operations_per_token, "memory": self.memory,
            "baseline": self.baseline_name, "tree_samples": self._tree_samples_config(),
            "policy_inputs": self.policy_inputs,
            "policy_warmup_steps": self.policy_warmup_steps,
            "exploration": self.exploration, "subtree_start": self.subtree_start,
            "seed": self.seed,
        }
