"""Word-level language model on the recurrent-recursive cell (RRNet).

Jacob, Lin, Sordoni & Bengio (2018), Sec. 3.3: an RRNet language model on
the Penn Treebank, one recurrent layer of 350 units (test perplexity 107.28
there, against 113.4 for an LSTM baseline).  The network:

    tokens -> tied embedding -> dropout
           -> hmkeras.RNN(RecurrentRecursiveCell(mode="reinforce")) -> dropout
           [-> projection] -> tied softmax

The cell picks one operation (split, merge, recur) per word from its policy
network, or with `operations_per_token=n > 1` up to `n - 1` splits and
merges before the recur that reads the word (the paper's operations,
`RecurrentRecursiveCell`): sampled while training, greedy (argmax) at
evaluation.  The
operations are discrete, so the language-model loss sends no gradient to
the policy; the policy is trained by REINFORCE (Williams 1992) with the
language model's own likelihood as the reward.  The paper names the setup
only; the estimator below is this project's choice:

* reward of step `t`: ``r_t = log p(w_{t+1} | w_<=t)``, minus the
  negative log-likelihood of the next word (0 on padding);
* return of the actions taken at step `t` (their log-probabilities summed;
  they shape `h_t` and every later state, hence every later prediction): the discounted sum of the rewards
  from step `t` on, ``G_t = sum_{s >= t} gamma^(s - t) r_s`` with
  ``gamma = reward_discount`` (1: the whole rest of the sentence; 0: the
  immediate reward only);
* learned baseline: ``b_t = v^T [h_{t-1}; e_t] + c``, a linear value head
  on the state and input the action is chosen from (so it does not depend
  on the action), trained by the squared error ``(G_t - b_t)^2``; its input
  is cut from the gradient;
* loss, averaged over the real (weight 1) targets::

      NLL + policy_weight * (-(G_t - b_t) log pi(a_t))
          - entropy_weight * H_t + baseline_weight * (G_t - b_t)^2

  with ``G_t - b_t`` a constant in the policy term.

Perplexity (`hmkeras.models.word_language_model.sentence_perplexity`, or
`evaluate_perplexity`) uses greedy actions: the model called with
``training=False``.  `tree_of` prints the tree the greedy policy builds for
one sentence (`bracketed_tree`).

Examples:

    >>> import numpy as np
    >>> lm = RecurrentRecursiveLanguageModel(vocab_size=12, units=8, max_depth=3, seed=0)
    >>> tuple(lm(np.ones((2, 5), "int32")).shape)
    (2, 5, 12)
    >>> lm.tree_of(np.array([1, 4, 5, 6]), ["<eos>", "a", "b", "c"]).count(" ")
    3
"""

import dataclasses

import keras
import numpy as np
from keras import ops

from hmkeras.cells.sequence_rnn import RNN
from hmkeras import argument_checks
from hmkeras import tensorflow_features
from hmkeras.cells.recurrent_recursive_cell import RecurrentRecursiveCell
from hmkeras.cells.recurrent_recursive_cell import bracketed_tree
from hmkeras.models.config_signature import JsonConfig
from hmkeras.models.config_signature import keyword_signature
from hmkeras.models.config_signature import resolve_config
from hmkeras.models.tied_embedding import TiedEmbedding
from hmkeras.models.word_language_model import sentence_perplexity
from hmkeras.training import backend_steps
from hmkeras.training.optimizer_on_compile import BuildsOptimizerOnCompile

__all__ = [
    "RecurrentRecursiveLanguageModel", "RecurrentRecursiveLanguageModelConfig",
    "discounted_returns",
]


def discounted_returns(rewards, discount):
    """``G_t = sum_{s >= t} discount^(s - t) r_s`` along axis 1 of `rewards`
    `(batch, time)` (the time axis may be of unknown length).

    Examples:

        >>> import keras
        >>> returns = discounted_returns(keras.ops.convert_to_tensor([[1.0, 2.0, 4.0]]), 0.5)
        >>> keras.ops.convert_to_numpy(returns).tolist()
        [[3.0, 4.0, 4.0]]
    """
    rewards = ops.convert_to_tensor(rewards)
    steps = ops.arange(ops.shape(rewards)[1])
    lag = ops.cast(steps[:, None] - steps[None, :], rewards.dtype)  # s - t
    # weights[s, t] = discount^(s - t) for s >= t (0^0 = 1), else 0.
    weights = ops.where(lag >= 0, ops.power(ops.cast(discount, rewards.dtype),
                                            ops.maximum(lag, 0.0)), 0.0)
    return ops.matmul(rewards, weights)


@dataclasses.dataclass
class RecurrentRecursiveLanguageModelConfig(JsonConfig):
    """Everything needed to rebuild a `RecurrentRecursiveLanguageModel`.

    Attributes:
        vocab_size: Number of token ids (`<pad>` and `<eos>` included).
        units: Size of the RRNet state (350 in Jacob et al. Sec. 3.3).
        max_depth: Stack slots of the cell (deepest nesting; ours, the
            paper gives none for language modelling).
        embedding_dim: Size of the tied embedding; 0 means `units`.
        dropout: Dropout rate on the embedding output and before the softmax.
        init_scale: The embedding is uniform in [-init_scale, init_scale].
        policy_weight: Weight of the REINFORCE term.
        entropy_weight: Weight of the entropy bonus.
        baseline_weight: Weight of the baseline's squared error.
        reward_discount: `gamma` of the returns, in [0, 1].
        operations_per_token: The most operations per word: 1, each
            consumes its word; `n > 1`, up to `n - 1` splits and merges
            that consume nothing before the word's recur (Sec. 2).
        seed: Seed of the initializers and of the action sampler.

    Examples:

        >>> from hmkeras.models import RecurrentRecursiveLanguageModelConfig
        >>> config = RecurrentRecursiveLanguageModelConfig(vocab_size=100, units=16)
        >>> config.embedding_dim, config.max_depth
        (0, 10)
        >>> RecurrentRecursiveLanguageModelConfig.from_json(config.to_json()) == config
        True
    """

    vocab_size: int
    units: int = 350
    max_depth: int = 10
    embedding_dim: int = 0
    dropout: float = 0.5
    init_scale: float = 0.05
    policy_weight: float = 1.0
    entropy_weight: float = 0.01
    baseline_weight: float = 1.0
    reward_discount: float = 0.9
    operations_per_token: int = 1
    seed: int = None

    def __post_init__(self):
        checks = argument_checks
        for name in ("vocab_size", "units", "max_depth", "operations_per_token"):
            setattr(self, name, checks.check_positive_int(name, getattr(self, name)))
        self.embedding_dim = checks.check_int("embedding_dim", self.embedding_dim, minimum=0)
        self.dropout = checks.check_rate("dropout", self.dropout)
        self.init_scale = checks.check_float(
            "init_scale", self.init_scale, minimum=0, exclusive_minimum=True)
        for name in ("policy_weight", "entropy_weight", "baseline_weight"):
            setattr(self, name, checks.check_float(name, getattr(self, name), minimum=0))
        self.reward_discount = checks.check_float(
            "reward_discount", self.reward_discount, minimum=0, maximum=1)
        self.seed = checks.check_int("seed", self.seed, allow_none=True)


@keras.saving.register_keras_serializable(package="hmkeras")
class RecurrentRecursiveLanguageModel(BuildsOptimizerOnCompile, keras.Model):
    """RRNet word LM trained by likelihood + REINFORCE (module docstring).

    Calling the model maps tokens `(batch, time)` to logits
    `(batch, time, vocab_size)`; `fit` on `(tokens, targets, weights)`
    batches (a `hmkeras.data.SentenceBatches` dataset) minimises the loss
    of the module docstring.  `compile` needs only the optimizer.

    Args:
        config: A `RecurrentRecursiveLanguageModelConfig`, or None to build
            one from the keyword arguments (its fields).
        **kwargs: The configuration's fields, when `config` is None, plus
            base-model arguments (`name`).

    Examples:

        >>> import keras, numpy as np
        >>> from hmkeras.models import RecurrentRecursiveLanguageModel
        >>> lm = RecurrentRecursiveLanguageModel(vocab_size=10, units=8, max_depth=3,
        ...                                      dropout=0.0, seed=0)
        >>> lm.compile(optimizer=keras.optimizers.Adam(1e-3))
        >>> tokens = np.array([[2, 3, 4, 5], [6, 7, 1, 0]])
        >>> targets = np.array([[3, 4, 5, 1], [7, 1, 0, 0]])
        >>> weights = (tokens > 0).astype("float32")
        >>> history = lm.fit(tokens, targets, sample_weight=weights, epochs=1, verbose=0)
        >>> tuple(lm(tokens).shape)
        (2, 4, 10)
    """

    def __init__(self, config=None, name=None, **kwargs):
        tensorflow_features.require_training_backend("RecurrentRecursiveLanguageModel")
        super().__init__(name=name or "rrnet_word_lm")
        config = resolve_config(
            RecurrentRecursiveLanguageModelConfig, config, kwargs, accept_dict=True
        )
        self.config = config
        c = config
        dim = c.embedding_dim or c.units
        seed = c.seed
        self.embedding = TiedEmbedding(
            c.vocab_size, dim, name="embedding",
            embeddings_initializer=keras.initializers.RandomUniform(
                -c.init_scale, c.init_scale, seed=seed))
        self.cell = RecurrentRecursiveCell(
            c.units, c.max_depth, mode="reinforce",
            operations_per_token=c.operations_per_token, seed=seed, name="rrnet_cell")
        self.rnn = RNN(self.cell, return_sequences=True, name="rnn")
        self.input_dropout = keras.layers.Dropout(c.dropout, seed=seed)
        self.output_dropout = keras.layers.Dropout(
            c.dropout, seed=None if seed is None else seed + 1)
        self.projection = None
        if dim != c.units:
            self.projection = keras.layers.Dense(dim, use_bias=False, name="projection")
        self.baseline = keras.layers.Dense(
            1, name="baseline", kernel_initializer="zeros")
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.policy_tracker = keras.metrics.Mean(name="policy_loss")
        self.entropy_tracker = keras.metrics.Mean(name="entropy")
        # Build every weight now (checkpoints and `load_weights` need them).
        self.analyze(np.ones((1, 2), "int32"), np.ones((1, 2), "int32"))
        self.built = True

    @property
    def metrics(self):
        return [self.loss_tracker, self.policy_tracker, self.entropy_tracker]

    def count_params(self):
        """Number of trainable parameters (policy and baseline included)."""
        return int(sum(np.prod(w.shape) for w in self.trainable_weights))

    # ------------------------------------------------------------------
    def analyze(self, tokens, targets=None, training=False):
        """Every per-step quantity, as a dict of tensors.

        `logits` `(batch, time, vocab)`; `h` `(batch, time, units)`; the
        cell's `actions`, `log_probs` (of the taken actions) and
        `entropies` `(batch, time)`; with `targets`, also `baseline`
        `(batch, time)`, the value head's `b_t`.
        """
        tokens = ops.cast(tokens, "int32")
        embedded = self.embedding(tokens)
        x = self.input_dropout(embedded, training=training)
        outputs = self.rnn(x, training=training)
        h, actions, log_probs, entropies = self.cell.split_outputs(outputs)
        top = self.output_dropout(h, training=training)
        if self.projection is not None:
            top = self.projection(top)
        logits = self.embedding(top, reverse=True)
        result = {"logits": logits, "h": h, "actions": actions,
                  "log_probs": log_probs, "entropies": entropies}
        if targets is not None:
            # b_t reads the state before step t's action, h_{t-1} (h_0 = 0),
            # and the input e_t it is chosen from.
            previous = ops.concatenate([ops.zeros_like(h[:, :1]), h[:, :-1]], axis=1)
            value_inputs = ops.stop_gradient(ops.concatenate([previous, embedded], -1))
            result["baseline"] = self.baseline(value_inputs)[..., 0]
        return result

    def call(self, inputs, training=False):
        return self.analyze(inputs, training=training)["logits"]

    def objective(self, analysis, targets, weights=None):
        """The loss terms of an `analyze(tokens, targets)` result.

        Returns a dict of scalars (`loss`, `nll`, `policy`, `entropy`,
        `baseline`: each a mean over the weighted targets) and of per-step
        `rewards` and `returns` `(batch, time)`.
        """
        c = self.config
        targets = ops.cast(targets, "int32")
        logits = analysis["logits"]
        nll = ops.sparse_categorical_crossentropy(targets, logits, from_logits=True)
        if weights is None:
            weights = ops.ones_like(nll)
        weights = ops.cast(weights, nll.dtype)
        count = ops.maximum(ops.sum(weights), 1.0)

        def mean(values):
            return ops.sum(values * weights) / count

        rewards = ops.stop_gradient(-nll) * weights  # r_t = log p(w_{t+1})
        returns = discounted_returns(rewards, c.reward_discount)
        baseline = analysis["baseline"]
        advantage = ops.stop_gradient(returns - baseline)
        policy = mean(-advantage * analysis["log_probs"])  # REINFORCE
        entropy = mean(analysis["entropies"])
        baseline_loss = mean(ops.square(returns - baseline))
        lm = mean(nll)
        loss = (lm + c.policy_weight * policy - c.entropy_weight * entropy
                + c.baseline_weight * baseline_loss)
        return {"loss": loss, "nll": lm, "policy": policy, "entropy": entropy,
                "baseline": baseline_loss, "rewards": rewards, "returns": returns}

    def _terms(self, data, training):
        """`objective`'s terms of a batch `(tokens, targets[, weights])`."""
        tokens, targets, weights = keras.utils.unpack_x_y_sample_weight(data)
        return self.objective(self.analyze(tokens, targets, training=training),
                              targets, weights)

    def _record(self, terms):
        # `loss` reports the language model's NLL (nats per target).
        self.loss_tracker.update_state(terms["nll"])
        self.policy_tracker.update_state(terms["policy"])
        self.entropy_tracker.update_state(terms["entropy"])
        return {m.name: m.result() for m in self.metrics}

    def _training_forward(self, data):
        terms = self._terms(data, training=True)
        return terms["loss"], terms

    def train_step(self, *args):
        """One step (`hmkeras.training.backend_steps`): Keras gives `(data)`
        on TensorFlow, `(state, data)` on JAX."""
        return backend_steps.train_step(
            self, args, self._training_forward, lambda loss, terms: self._record(terms))

    def test_step(self, *args):
        """One evaluation step: `(data)` on TensorFlow, `(state, data)` on JAX."""
        return backend_steps.test_step(
            self, args, lambda data: self._record(self._terms(data, training=False)))

    # ------------------------------------------------------------------
    def greedy_actions(self, tokens):
        """The operations the greedy policy takes, ints: `(batch, time)`, or
        `(batch, time, operations_per_token)` with -1 after each recur."""
        actions = self.analyze(tokens, training=False)["actions"]
        return ops.convert_to_numpy(actions).astype(int)

    def tree_of(self, token_ids, words=None):
        """The greedy tree of one sentence as brackets (`bracketed_tree`).

        Args:
            token_ids: The sentence's ids `(time,)`.
            words: Its words (default: the ids as text).
        """
        token_ids = np.asarray(token_ids)
        actions = self.greedy_actions(token_ids[None])[0]
        words = [str(i) for i in token_ids] if words is None else list(words)
        return bracketed_tree(words, actions)

    def evaluate_perplexity(self, batches):
        """`sentence_perplexity` of this model (greedy actions)."""
        return sentence_perplexity(self, batches)

    def get_config(self):
        return {"name": self.name, "config": dataclasses.asdict(self.config)}

    @classmethod
    def from_config(cls, config):
        return cls(config=RecurrentRecursiveLanguageModelConfig(**config["config"]),
                   name=config.get("name"))


# The configuration's fields as keyword-only parameters (`help()` lists them).
RecurrentRecursiveLanguageModel.__signature__ = keyword_signature(
    RecurrentRecursiveLanguageModelConfig)
