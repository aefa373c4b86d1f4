"""Recurrent-recursive cell (RRNet; Jacob, Lin, Sordoni & Bengio 2018, Sec. 2).

The cell builds a tree while it reads:

* **split** (S): `h_down = F1(h, x)`, `h = F2(h, x)`, push `h_down`;
* **recur** (R): `h = LSTM_R(x, h)`;
* **merge** (M): pop `h_down`, `h_m = MLP(h, h_down)`, `h = F4(x, h_m)`.

F1, F2, F4 and LSTM_R are LSTM units whose weights are shared by every
level of the tree.  The stack of `h_down` vectors is a fixed-size tensor of
the RNN state (`hmkeras.cells.tensor_stack`).  A policy network over
{split, merge, recur} reads `[h; x]` (Sec. 2, "Policy Network").

Two readings of a token (`operations_per_token`):

* `1` (the default): one operation per token, which consumes it, split and
  merge included. For expressions the tokens carry the tree (split at
  "(", merge at ")", recur otherwise: the paper's supervised MEE setting).
* `n > 1` (mode `"reinforce"`): the paper's operations. Split and merge
  consume nothing, so the policy may apply up to `n - 1` of them before
  each token, and the recur that follows reads it ("only recurrent
  operations consume input tokens", Sec. 2). The sequence of operations
  is longer than the input, as in the paper's Fig. 1(d).
"""

import keras
import numpy as np
from keras import ops

from hmkeras import argument_checks
from hmkeras.cells import step_sampler
from hmkeras.cells import tensor_stack
from hmkeras.cells.independent_initializers import independent_draw

#: Operation ids, in the order of the policy's logits.
SPLIT, MERGE, RECUR = 0, 1, 2
OPERATIONS = ("split", "merge", "recur")
MODES = ("supervised", "reinforce", "fixed")
#: What the LSTM memory `c` does at a merge (see `RecurrentRecursiveCell`).
MEMORIES = ("continued", "tree")
#: What the policy network reads (see `RecurrentRecursiveCell`).
POLICY_INPUTS = ("state_and_token", "token")
#: Where a split's sub-tree starts (see `RecurrentRecursiveCell`).
SUBTREE_STARTS = ("parent", "fresh")
# Masked-out logits: exp() of it is exactly 0 in float32, so an impossible
# action has probability 0 and adds 0 to the entropy.
_IMPOSSIBLE_LOGIT = -1e9


def _lstm_unit(x_part, h_part, c, bias, added_memory=None):
    """One LSTM unit from its pre-activation parts (Hochreiter &
    Schmidhuber 1997; gates in Keras' order i, f, g, o).

    `added_memory`, when given, is added to the new memory before the
    output gate reads it (a Tree-LSTM node's second gated memory)."""
    z = x_part + h_part + bias
    i, f, g, o = ops.split(z, 4, axis=-1)
    c = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
    if added_memory is not None:
        c = c + added_memory
    return ops.sigmoid(o) * ops.tanh(c), c


@keras.saving.register_keras_serializable(package="hmkeras")
class RecurrentRecursiveCell(keras.layers.Layer):
    """Cell class of the recurrent-recursive network (RRNet).

    Jacob et al. (2018), Sec. 2: at every step the cell splits (opens a
    sub-tree, pushing `h_down = F1(h, x)` and continuing with
    `h = F2(h, x)`), recurs (`h = LSTM_R(x, h)`) or merges (pops `h_down`,
    `h_m = MLP(h, h_down)`, `h = F4(x, h_m)`), so the hidden state follows
    a tree: a merge returns to the state saved when its sub-tree opened.
    With `operations_per_token=1` every operation consumes one input token;
    with `n > 1` only recur does, after up to `n - 1` splits and merges
    chosen by the policy (the paper's operations; see the module
    docstring).

    Decisions beyond the paper (documented choices):

    * every unit is an LSTM with cell state `c`; F1, F2 and LSTM_R start
      from the current `(h, c)`, F4 from `(h_m, c)`; the stack holds `h_down`
      only (not its cell state), unless `memory="tree"`;
    * the MLP is one layer: `h_m = tanh(W_m [h; h_down] + b_m)`;
    * what the memory `c` does at a merge is an option (`memory`, below);
      the paper names only the hidden states;
    * impossible actions (merge on an empty stack, split on a full one) get
      probability 0 in the policy; an impossible *given* action (modes
      `"supervised"` and `"fixed"`), or an id other than 0, 1, 2, is
      executed as a recur, and the output's action column says so (an
      error cannot be raised from inside a compiled loop).

    State (a flat list): `[h, c, stack, depth]` with `h`, `c` of shape
    `(batch, units)`, `stack` `(batch, max_depth * slot_size)` (`slot_size`
    is `units`, or `2 * units` with `memory="tree"`) and `depth`
    `(batch, 1)`, a float holding the number of filled slots; in mode
    `"reinforce"` a fifth, `(batch, 2)`, counts the sequence's draws
    (`hmkeras.cells.step_sampler`): the policy samples inside any loop,
    a traced JAX `lax.scan` too, each draw with a seed of its own. The
    sequence's first seed is fixed before the loop, by `hmkeras.RNN`
    (`begin_sampling`) or by `get_initial_state`: a loop given an
    `initial_state` of its own must be `hmkeras.RNN`.

    Inputs: one step `(batch, features)`.  In modes `"supervised"` and
    `"fixed"` the **last feature column** holds the given operation id
    (`SPLIT = 0`, `MERGE = 1`, `RECUR = 2`, as a float) and the other
    columns are the token embedding `e_t`: use `pack_inputs(embeddings,
    operations)`.  In mode `"reinforce"` all columns are the embedding.

    Output per step, one tensor `(batch, units + n + 2)`, `n =
    operations_per_token`: `[h | actions | log_prob | entropy]`: the new
    hidden state, the executed operation ids (floats; with `n > 1` the
    operations before the token in order, -1 after its recur), the
    log-probability of those operations under the policy and the policy's
    entropy summed over its choices (both 0 in mode `"fixed"`; the forced
    recur of the last choice adds 0). `split_outputs` cuts it apart.

    Args:
        units: Positive int, size of `h` (and of every stack slot).
        max_depth: Positive int, number of stack slots (deepest nesting).
        mode: `"supervised"`: operations are given, the policy's
            log-likelihood of them is output (train it with
            `-sum(log_prob)`); `"reinforce"`: operations are sampled from
            the policy when `training=True` and chosen greedily (argmax)
            otherwise, for REINFORCE (Williams 1992); `"fixed"`: operations
            are given and there is no policy network.
        kernel_initializer: Initializer of the input kernels.
        recurrent_initializer: Initializer of the kernels on `h`.
        bias_initializer: Initializer of the biases (forget gates get +1).
        recur_bias: Float, the initial bias of the policy's recur logit
            (split and merge start at 0). 0 starts from a uniform policy;
            `b > 0` from one that recurs with probability
            `e^b / (e^b + 2)` where all three operations are possible, i.e.
            close to an LSTM (a decision beyond the paper, for REINFORCE).
        operations_per_token: Positive int, the most operations per input
            token. 1 (default): every operation consumes a token. `n > 1`
            (mode `"reinforce"` only): split and merge consume nothing and
            at most `n - 1` of them precede the recur that reads the
            token (Sec. 2; the bound keeps the compiled step finite).
        policy_inputs: `"state_and_token"` (default): the policy reads
            `[h; e_t]`, the paper's p_pi(z_t | e_t, h_t) (Sec. 2, "Policy
            Network"). `"token"`: it reads `e_t` only, so its greedy tree
            is a fixed operation per symbol (a decision beyond the paper:
            on MEE the brackets are such a tree; compared in
            `docs/results/mee-logic.md`, "Where the encoder and its
            policy start").
        exploration: Float in [0, 1) (mode `"reinforce"` only): the share
            of the policy's probability spread evenly over the possible
            operations, `p = (1 - exploration) * softmax + exploration /
            (number possible)`, in training and at test alike, so every
            possible operation keeps a probability of at least
            `exploration / 3` and the operations the policy has given up
            are still drawn, and trained, now and then (a decision beyond
            the paper, for REINFORCE). 0 (default): the softmax alone.
        memory: `"continued"` (default) or `"tree"`: the LSTM memory `c`
            at a merge. `"continued"`: F4 continues the sub-tree's memory
            (one memory runs through every operation; the stack holds
            `h_down` only). `"tree"`: the stack also saves F1's memory
            `c_down` at a split, and F4 is a binary Tree-LSTM node (Tai et
            al. 2015) over both memories, `c = f * c + f_down * c_down +
            i * g`, so the sub-tree's result and the parent's saved memory
            each have a gated linear path (see `_merge_unit`). The two
            memories are compared on MEE in `docs/results/mee-logic.md`,
            "MEE (Jacob et al. Table 2) in small".
        subtree_start: `"parent"` (default) or `"fresh"`: the state a
            split's sub-tree starts from. `"parent"`: `h = F2(h, x)` from the
            parent's `(h, c)` (Sec. 2), so the sub-tree carries everything
            read before it and a merge is never needed to keep it.
            `"fresh"`: `h = F2(0, x)` from the zero state `(0, 0)`, so what
            was read before the split reaches the states after it only
            through `h_down` and the merge that pops it (a decision beyond
            the paper: the sub-tree is a constituent of its own, as in a
            shift-reduce Tree-LSTM; `close_subtrees` merges the
            sub-trees left open at the end of a sequence; compared on MEE in
            `docs/results/mee-logic.md`, "Sub-trees that start fresh").
        seed: Optional int, seed of the initial weights and of the sampler.
        **kwargs: Base-layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: A `(batch, features)` step (see above).
        states: The state list.
        training: Whether to sample (mode `"reinforce"`).

    Examples:

        >>> import keras, numpy as np
        >>> cell = RecurrentRecursiveCell(4, max_depth=3, mode="supervised", seed=0)
        >>> embeddings = np.zeros((2, 5, 3), "float32")
        >>> operations = np.array([[0, 2, 1, 2, 2], [2, 0, 0, 1, 1]])
        >>> outputs = keras.layers.RNN(cell, return_sequences=True)(
        ...     cell.pack_inputs(embeddings, operations))
        >>> h, actions, log_probs, entropies = cell.split_outputs(outputs)
        >>> tuple(h.shape), keras.ops.convert_to_numpy(actions).astype(int).tolist()
        ((2, 5, 4), [[0, 2, 1, 2, 2], [2, 0, 0, 1, 1]])

        The paper's operations: up to two splits or merges before each
        token's recur, chosen by the policy.

        >>> cell = RecurrentRecursiveCell(4, max_depth=3, mode="reinforce",
        ...                               operations_per_token=3, seed=0)
        >>> outputs = keras.layers.RNN(cell, return_sequences=True)(embeddings)
        >>> actions = keras.ops.convert_to_numpy(cell.split_outputs(outputs)[1])
        >>> actions.shape, bool(np.all((actions == 2).sum(-1) == 1))  # one recur each
        ((2, 5, 3), True)
    """

    def __init__(
        self,
        units,
        max_depth,
        mode="supervised",
        *,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        recur_bias=0.0,
        operations_per_token=1,
        memory="continued",
        policy_inputs="state_and_token",
        exploration=0.0,
        subtree_start="parent",
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = argument_checks.check_positive_int("units", units)
        self.max_depth = argument_checks.check_positive_int("max_depth", max_depth)
        self.mode = argument_checks.check_choice("mode", mode, MODES)
        self.seed = argument_checks.check_int("seed", seed, allow_none=True)
        self.recur_bias = argument_checks.check_float("recur_bias", recur_bias)
        self.operations_per_token = argument_checks.check_positive_int(
            "operations_per_token", operations_per_token)
        if self.operations_per_token > 1 and self.mode != "reinforce":
            raise ValueError(
                "`operations_per_token` > 1 (split and merge between tokens) needs "
                "mode='reinforce': in modes 'supervised' and 'fixed' one given "
                "operation per token consumes it. Received: "
                f"operations_per_token={operations_per_token!r}, mode={mode!r}")
        self.memory = argument_checks.check_choice("memory", memory, MEMORIES)
        self.policy_inputs = argument_checks.check_choice(
            "policy_inputs", policy_inputs, POLICY_INPUTS)
        if self.policy_inputs != "state_and_token" and mode == "fixed":
            raise ValueError(
                "`policy_inputs` is an option of the modes with a policy "
                "('supervised', 'reinforce'). Received: "
                f"policy_inputs={policy_inputs!r}, mode={mode!r}")
        self.exploration = argument_checks.check_float(
            "exploration", exploration, minimum=0)
        if self.exploration >= 1 or (self.exploration and mode != "reinforce"):
            raise ValueError(
                "`exploration` must be in [0, 1), and above 0 only in mode "
                f"'reinforce'. Received: exploration={exploration!r}, mode={mode!r}")
        self.subtree_start = argument_checks.check_choice(
            "subtree_start", subtree_start, SUBTREE_STARTS)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.recurrent_initializer = keras.initializers.get(recurrent_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.seed_generator = keras.random.SeedGenerator(self.seed)
        self.state_size = [
            self.units, self.units, self.max_depth * self.slot_size, 1,
        ]
        if self.mode == "reinforce":
            # The sequence's draw counter (`step_sampler`).
            self.state_size.append(step_sampler.COUNTER_SIZE)
        self.output_size = self.units + self.operations_per_token + 2
        self._sequence_seed = None  # the first seed of a sequence's draws
        self._seed_reserved = False

    @property
    def slot_size(self):
        """Width of one stack slot: `h_down`, followed by its cell state
        `c_down` with `memory="tree"`."""
        return self.units * (2 if self.memory == "tree" else 1)

    @property
    def has_policy(self):
        """Whether the cell has a policy network (all modes but "fixed")."""
        return self.mode != "fixed"

    @property
    def takes_operations(self):
        """Whether the last input column is the given operation id."""
        return self.mode != "reinforce"

    @property
    def draws_per_step(self):
        """Policy draws per step in training (mode `"reinforce"`): one, or
        `operations_per_token - 1` (the last choice is a forced recur)."""
        if self.mode != "reinforce":
            return 0
        return max(self.operations_per_token - 1, 1)

    def begin_sampling(self, steps, training):
        """Fixes the first seed of the next sequence's draws (`hmkeras.RNN`
        calls it before its loop): in training the seeds of its `steps`
        steps are reserved from `seed_generator` (`step_sampler.reserve`)."""
        if self.mode != "reinforce":
            return
        if training:
            self._sequence_seed = step_sampler.reserve(
                self.seed_generator, steps, self.draws_per_step)
        else:  # nothing is drawn
            self._sequence_seed = self.seed_generator.state.value
        self._seed_reserved = True

    def end_sampling(self):
        """Closes what `begin_sampling` opened."""
        self._seed_reserved = False

    def get_initial_state(self, batch_size=None):
        """Zero `h`, `c`, stack and depth, and in mode `"reinforce"` a zero
        draw counter. Outside `begin_sampling` (a loop that reserves no
        seeds) the sequence's first seed is drawn from `seed_generator`
        here (`step_sampler.fresh_start`)."""
        if self.mode == "reinforce" and not self._seed_reserved:
            self._sequence_seed = step_sampler.fresh_start(self.seed_generator)
        return [ops.zeros((batch_size, size), dtype=self.compute_dtype)
                for size in self.state_size]

    def _first_seed(self):
        """The first seed of the sequence being stepped."""
        if self._sequence_seed is None:
            raise ValueError(
                'RecurrentRecursiveCell(mode="reinforce") samples from seeds fixed '
                "before the loop: step it in an RNN that makes its initial state "
                "(`initial_state=None`), or in `hmkeras.RNN`. Received: a step "
                "with no sequence begun")
        return self._sequence_seed

    def _matrix(self, name, shape, initializer, draw, blocks=1):
        """A weight matrix; with `blocks` > 1 its column blocks (one LSTM
        unit each) are drawn one by one, each of the shape Keras' `LSTM`
        draws, so their scale does not shrink with the number of units
        that share the matrix (a Glorot or orthogonal draw of the whole
        `(rows, 12 u)` matrix is about 1.7 times smaller)."""
        if blocks == 1:
            return self.add_weight(
                name=name, shape=shape,
                initializer=independent_draw(initializer, draw, self.seed))
        parts = [independent_draw(initializer, 100 + 10 * draw + block, self.seed)
                 for block in range(blocks)]

        def initializer_by_block(shape, dtype=None):
            rows, columns = shape
            return ops.concatenate([part((rows, columns // blocks), dtype=dtype)
                                    for part in parts], axis=1)

        return self.add_weight(name=name, shape=shape,
                               initializer=initializer_by_block)

    def _bias(self, name, num_units):
        """Bias of `num_units` LSTM units, forget gates set to +1."""
        units = self.units

        def initializer(shape, dtype=None):
            bias = self.bias_initializer(shape, dtype=dtype)
            one_unit = ops.concatenate(
                [ops.zeros((units,), "float32"), ops.ones((units,), "float32"),
                 ops.zeros((2 * units,), "float32")], axis=0,
            )
            return bias + ops.cast(ops.tile(one_unit, [num_units]), bias.dtype)

        return self.add_weight(name=name, shape=(4 * units * num_units,),
                               initializer=initializer)

    def build(self, input_shape):
        features = argument_checks.check_step_input_shape(
            type(self).__name__, input_shape
        )
        if self.takes_operations:
            features -= 1
            if features < 1:
                raise ValueError(
                    f"RecurrentRecursiveCell(mode={self.mode!r}) expects the "
                    "token embedding plus one last column holding the "
                    "operation id (see `pack_inputs`); received only "
                    f"{features + 1} feature column(s)."
                )
        self.embedding_size = features
        u = self.units
        # F1, F2 and LSTM_R in one product each: columns [F1 | F2 | R].
        self.kernel = self._matrix("kernel", (features, 12 * u),
                                   self.kernel_initializer, 0, blocks=3)
        self.recurrent_kernel = self._matrix("recurrent_kernel", (u, 12 * u),
                                             self.recurrent_initializer, 1, blocks=3)
        self.bias = self._bias("bias", 3)
        # The merge cell: MLP and F4.
        self.merge_kernel = self._matrix("merge_kernel", (2 * u, u),
                                         self.kernel_initializer, 2)
        self.merge_bias = self.add_weight(name="merge_bias", shape=(u,),
                                          initializer="zeros")
        self.merge_input_kernel = self._matrix("merge_input_kernel", (features, 4 * u),
                                               self.kernel_initializer, 3)
        self.merge_recurrent_kernel = self._matrix(
            "merge_recurrent_kernel", (u, 4 * u), self.recurrent_initializer, 4)
        self.merge_lstm_bias = self._bias("merge_lstm_bias", 1)
        if self.memory == "tree":
            # The merge's gate on the saved memory c_down (Eq. M2 below).
            self.down_gate_input_kernel = self._matrix(
                "down_gate_input_kernel", (features, u), self.kernel_initializer, 7)
            self.down_gate_recurrent_kernel = self._matrix(
                "down_gate_recurrent_kernel", (u, u), self.recurrent_initializer, 8)
            self.down_gate_bias = self.add_weight(
                name="down_gate_bias", shape=(u,), initializer="ones")
        if self.has_policy:
            policy_features = features + (u if self.policy_inputs == "state_and_token"
                                          else 0)
            self.policy_kernel = self._matrix("policy_kernel", (policy_features, 3),
                                              self.kernel_initializer, 5)
            self.policy_bias = self.add_weight(
                name="policy_bias", shape=(3,),
                initializer=keras.initializers.Constant([0.0, 0.0, self.recur_bias]))

    # ------------------------------------------------------------------
    def pack_inputs(self, embeddings, operations):
        """`[embeddings | operations]`: the input of modes "supervised" and
        "fixed" (operation ids as the last feature column).

        For tensors and arrays; inside a functional model, concatenate the
        embedding and `operations[..., None]` (as floats) with
        `keras.layers.Concatenate()` instead.
        """
        embeddings = ops.convert_to_tensor(embeddings)
        operations = ops.expand_dims(ops.cast(operations, embeddings.dtype), -1)
        return ops.concatenate([embeddings, operations], axis=-1)

    def allowed_actions(self, depth):
        """`(batch, 3)` 0/1 mask of the possible operations at `depth`."""
        return ops.concatenate(
            [tensor_stack.can_push(depth, self.max_depth),
             tensor_stack.can_pop(depth), ops.ones_like(depth)], axis=-1,
        )

    def policy_log_probs(self, h, embedding, allowed):
        """Log-probabilities `(batch, 3)` of the masked policy p_pi(z | e, h)
        (with `exploration`, mixed with the uniform distribution over the
        possible operations).

        In float32 under a float16 / bfloat16 compute dtype: the masked
        logit is out of float16's range (it would be `-inf`, and the
        entropy's `0 * -inf` NaN).
        """
        read = (embedding if self.policy_inputs == "token"
                else ops.concatenate([h, embedding], axis=-1))
        logits = ops.matmul(read, self.policy_kernel)
        logits = logits + self.policy_bias
        if keras.backend.standardize_dtype(logits.dtype) in ("float16", "bfloat16"):
            logits = ops.cast(logits, "float32")
        possible = ops.greater(allowed, 0.5)
        logits = ops.where(possible, logits, _IMPOSSIBLE_LOGIT)
        log_probs = ops.log_softmax(logits, axis=-1)
        if not self.exploration:
            return log_probs
        share = ops.cast(possible, log_probs.dtype)
        uniform = share / ops.sum(share, axis=-1, keepdims=True)
        probs = (1.0 - self.exploration) * ops.exp(log_probs) + self.exploration * uniform
        # log(1) = 0 where impossible, then masked: no log(0) in the graph.
        return ops.where(possible, ops.log(probs + (1.0 - share)), _IMPOSSIBLE_LOGIT)

    def call(self, inputs, states, training=False):
        argument_checks.check_float_inputs(type(self).__name__, inputs)
        states, seed = list(states[:4]), (states[4:] or [None])[0]
        if self.takes_operations:
            x = inputs[:, :-1]
            given = ops.cast(ops.round(inputs[:, -1]), "int32")
        else:
            x, given = inputs, None
        if self.operations_per_token > 1:
            output, states, seed = self._call_between_tokens(x, states, seed, training)
        else:
            allowed = self.allowed_actions(states[3])
            action, log_prob, entropy, seed = self._choose(
                states[0], x, allowed, training, given, seed)
            states = self._apply(action, x, states)
            h = states[0]
            output = ops.concatenate(
                [h, ops.expand_dims(ops.cast(action, h.dtype), -1), log_prob, entropy],
                axis=-1)
        return output, states + ([] if seed is None else [seed])

    def _call_between_tokens(self, x, states, seed, training):
        """The paper's reading of one token: up to `operations_per_token - 1`
        splits and merges, which consume nothing, then the recur that
        consumes `x` (Sec. 2: "only recurrent operations consume input
        tokens"). A row stops choosing once it has recurred; the last
        choice allows recur only."""
        done = ops.zeros_like(states[3], dtype="bool")
        log_prob = entropy = ops.zeros_like(states[3])
        actions = []
        for index in range(self.operations_per_token):
            last = index == self.operations_per_token - 1
            if last:  # The token must be read: recur, with probability 1.
                action = ops.full_like(done[:, 0], RECUR, dtype="int32")
                step_log_prob = step_entropy = ops.zeros_like(log_prob)
            else:
                action, step_log_prob, step_entropy, seed = self._choose(
                    states[0], x, self.allowed_actions(states[3]), training, seed=seed)
            active = ops.logical_not(done)
            new_states = self._apply(action, x, states, recur_only=last)
            states = [ops.where(active, new, old) for new, old in zip(new_states, states)]
            zero = ops.zeros_like(step_log_prob)
            log_prob = log_prob + ops.where(active, step_log_prob, zero)
            entropy = entropy + ops.where(active, step_entropy, zero)
            actions.append(ops.where(active[:, 0], action, -1))
            done = ops.logical_or(done, ops.expand_dims(ops.equal(action, RECUR), -1))
        actions = ops.cast(ops.stack(actions, axis=-1), states[0].dtype)
        output = ops.concatenate([states[0], actions, log_prob, entropy], axis=-1)
        return output, states, seed

    def _choose(self, h, x, allowed, training, given=None, seed=None):
        """`(action (batch,) int32, log_prob (batch, 1), entropy (batch, 1),
        seed)`.

        Mode "reinforce" samples the action from the policy when training,
        from the carried `seed` (`step_sampler`; returned moved past the
        draw), and takes its argmax otherwise; modes "supervised" and
        "fixed" execute `given`, where it names no possible operation a
        recur (an error cannot be raised from inside a compiled loop). The
        log-probability and entropy are the policy's (0 without one).
        """
        dtype = h.dtype
        if self.has_policy:
            log_probs = self.policy_log_probs(h, x, allowed)
            entropy = -ops.sum(ops.exp(log_probs) * log_probs, axis=-1, keepdims=True)
        if self.mode == "reinforce":
            if training:
                action, seed = step_sampler.categorical(
                    log_probs, self.seed_generator, self._first_seed(), seed)
            else:
                action = ops.cast(ops.argmax(log_probs, axis=-1), "int32")
        else:
            known = ops.logical_and(ops.greater_equal(given, 0), ops.less(given, 3))
            given = ops.where(known, given, RECUR)
            # allowed[row, given[row]] of every row.
            possible = ops.greater(
                ops.take_along_axis(allowed, ops.expand_dims(given, -1), axis=1)[:, 0], 0.5)
            action = ops.where(possible, given, RECUR)
        if not self.has_policy:
            zero = ops.zeros_like(h[:, :1])
            return action, zero, zero, seed
        log_prob = ops.sum(
            ops.one_hot(action, 3, dtype=log_probs.dtype) * log_probs, axis=-1, keepdims=True)
        return action, ops.cast(log_prob, dtype), ops.cast(entropy, dtype), seed

    def _apply(self, action, x, states, recur_only=False):
        """The state after `action` (Sec. 2's three cells) in every row.
        With `recur_only` only LSTM_R is computed."""
        h, c, stack, depth = states
        u = self.units
        if recur_only:  # recur: h = LSTM_R(x, h).
            h_recur, c_recur = _lstm_unit(
                ops.matmul(x, self.kernel[:, 8 * u:]),
                ops.matmul(h, self.recurrent_kernel[:, 8 * u:]), c, self.bias[8 * u:])
            return [h_recur, c_recur, stack, depth]
        one_hot = ops.one_hot(action, 3, dtype=h.dtype)
        is_split, is_merge, is_recur = ops.split(one_hot, 3, axis=-1)
        x_part = ops.split(ops.matmul(x, self.kernel), 3, axis=-1)
        h_part = ops.split(ops.matmul(h, self.recurrent_kernel), 3, axis=-1)
        b_part = ops.split(self.bias, 3)
        # split: h_down = F1(h, x), h = F2(h, x), push h_down (and c_down);
        # with subtree_start="fresh" F2 starts from the zero state (and
        # `h_part[1]` is not read: the step multiplies `h` by the whole
        # kernel as stored rather than slice it at every step).
        h_down, c_down = _lstm_unit(x_part[0], h_part[0], c, b_part[0])
        if self.subtree_start == "fresh":
            h_split, c_split = _lstm_unit(x_part[1], 0.0, ops.zeros_like(c), b_part[1])
        else:
            h_split, c_split = _lstm_unit(x_part[1], h_part[1], c, b_part[1])
        # recur: h = LSTM_R(x, h).
        h_recur, c_recur = _lstm_unit(x_part[2], h_part[2], c, b_part[2])
        h_merge, c_merge, stack_after_pop, depth_after_pop = self._merge(
            x, states, is_merge)
        pushed = h_down
        if self.memory == "tree":
            pushed = ops.concatenate([h_down, c_down], axis=-1)
        new_stack, new_depth = tensor_stack.push(
            stack_after_pop, depth_after_pop, pushed, is_split)
        new_h = is_split * h_split + is_merge * h_merge + is_recur * h_recur
        new_c = is_split * c_split + is_merge * c_merge + is_recur * c_recur
        return [new_h, new_c, new_stack, new_depth]

    def _merge(self, x, states, is_merge):
        """`(h, c, stack, depth)` of a merge in the rows where `is_merge`
        `(batch, 1)` is 1: pop `h_down`, `h_m = MLP(h, h_down)`,
        `h = F4(x, h_m)` (Sec. 2); the stack and depth of the other rows
        are unchanged, their `h` and `c` are to be discarded."""
        h, c, stack, depth = states
        popped, stack_after_pop, depth_after_pop = tensor_stack.pop(
            stack, depth, is_merge, self.slot_size)
        c_down_popped = None
        if self.memory == "tree":
            popped, c_down_popped = ops.split(popped, 2, axis=-1)
        h_m = ops.tanh(ops.matmul(ops.concatenate([h, popped], axis=-1), self.merge_kernel)
                       + self.merge_bias)
        h_merge, c_merge = self._merge_unit(x, h_m, c, c_down_popped)
        return h_merge, c_merge, stack_after_pop, depth_after_pop

    def close_subtrees(self, states):
        """The state after merging every sub-tree still open at the end of
        a sequence: the root of the tree read so far.

        Up to `max_depth` merges with no token (F4 reads a zero input), in
        the rows whose stack is not empty; a row with an empty stack keeps
        its state exactly. With `subtree_start="fresh"` what was read
        before an open sub-tree is otherwise left on the stack, out of the
        final `h`.

        Args:
            states: The cell's state list after the last step (an RNN's
                final states).

        Returns:
            The state list, with the stack empty in every row.
        """
        states = list(states)
        h, c, stack, depth = states[:4]
        no_token = ops.zeros((ops.shape(h)[0], self.embedding_size), h.dtype)
        for _ in range(self.max_depth):
            is_open = tensor_stack.can_pop(depth)
            # `_merge` pops only where `is_open`: the other rows' stack and
            # depth come back unchanged, their `h` and `c` are kept here.
            h_merged, c_merged, stack, depth = self._merge(
                no_token, [h, c, stack, depth], is_open)
            merged = ops.greater(is_open, 0.5)
            h = ops.where(merged, h_merged, h)
            c = ops.where(merged, c_merged, c)
        return [h, c, stack, depth] + states[4:]

    def _merge_unit(self, x, h_m, c, c_down=None):
        """F4: `(h, c)` after a merge, from `h_m = MLP(h, h_down)`.

        With `memory="continued"` (`c_down` None) F4 is an LSTM unit on
        `(h_m, c)`. With `memory="tree"` it is a binary Tree-LSTM node: the
        sub-tree's memory `c` and the memory `c_down` saved at the split
        each pass through a forget gate of their own,
        `c' = f * c + f_down * c_down + i * g` (M1), `h' = o * tanh(c')`,
        with `f_down = sigmoid(W_d x + U_d h_m + b_d)` (M2).
        """
        added_memory = None
        if c_down is not None:
            down_gate = ops.sigmoid(ops.matmul(x, self.down_gate_input_kernel)  # M2
                                    + ops.matmul(h_m, self.down_gate_recurrent_kernel)
                                    + self.down_gate_bias)
            added_memory = down_gate * c_down                                   # M1
        return _lstm_unit(ops.matmul(x, self.merge_input_kernel),
                          ops.matmul(h_m, self.merge_recurrent_kernel), c,
                          self.merge_lstm_bias, added_memory)

    def split_outputs(self, outputs):
        """Cuts the cell's output into `(h, actions, log_probs, entropies)`.

        Works on one step `(batch, output_size)` and on sequences
        `(batch, time, output_size)`; an RNN's `[outputs, *states]` list is
        accepted too (its first element is split).  `h` keeps its last
        axis `(..., units)`; `log_probs` and `entropies` are `(...)`, and so
        are `actions` with one operation per token; with
        `operations_per_token=n > 1` they are `(..., n)`, the operations
        applied before each token in order, -1 after its recur.
        """
        if isinstance(outputs, (list, tuple)):
            outputs = outputs[0]
        outputs = ops.convert_to_tensor(outputs)
        if outputs.shape[-1] != self.output_size:
            raise ValueError(
                f"`outputs` must have last dimension output_size="
                f"{self.output_size}. Received: shape={tuple(outputs.shape)}"
            )
        u, n = self.units, self.operations_per_token
        actions = outputs[..., u] if n == 1 else outputs[..., u : u + n]
        return (outputs[..., :u], actions, outputs[..., u + n], outputs[..., u + n + 1])

    def get_config(self):
        config = {
            "units": self.units,
            "max_depth": self.max_depth,
            "mode": self.mode,
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "recurrent_initializer": keras.initializers.serialize(
                self.recurrent_initializer),
            "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            "recur_bias": self.recur_bias,
            "operations_per_token": self.operations_per_token,
            "memory": self.memory,
            "policy_inputs": self.policy_inputs,
            "exploration": self.exploration,
            "subtree_start": self.subtree_start,
            "seed": self.seed,
        }
        return {**super().get_config(), **config}


def _per_token(actions):
    """Whether a tree is given as one row of operations per token
    (`operations_per_token > 1`) rather than one operation id per token."""
    return len(actions) > 0 and np.ndim(actions[0]) > 0


def _token_operations(row):
    """The operations of one token's row up to and including its recur."""
    operations = []
    for action in row:
        action = int(action)
        if action in (SPLIT, MERGE):
            operations.append(action)
        elif action == RECUR:
            operations.append(action)
            break
    return operations


def bracketed_tree(tokens, actions):
    """A tree as text: "[" opens at a split, "]" closes after a merge.

    `actions` holds one operation id per token (every operation consumes
    its token: "[" before a split's token, "]" after a merge's; a merge
    with nothing to close shows its token alone) or one row
    of operations per token (`operations_per_token > 1`: the splits and
    merges before the token, then its recur; "]" closes after the last
    token read, a merge right after its split shows an empty sub-tree
    "[]", and sub-trees still open after the last token close at the end,
    where the reading ends).

    Examples:

        >>> bracketed_tree("(1+2)", [0, 2, 2, 2, 1])
        '[( 1 + 2 )]'
        >>> bracketed_tree("1+2*3", [[2], [2], [0, 2], [2], [2]])  # split before "2"
        '1 + [2 * 3]'
        >>> bracketed_tree("1+2", [[0, 1, 2], [2], [2]])  # split, merge, read "1"
        '[]1 + 2'
    """
    if not _per_token(actions):
        pieces, depth = [], 0
        for token, action in zip(tokens, actions):
            action = int(action)
            if action == SPLIT:
                pieces.append(f"[{token}")
                depth += 1
            elif action == MERGE and depth:
                pieces.append(f"{token}]")
                depth -= 1
            else:  # a recur, or a merge with nothing to close
                pieces.append(str(token))
        return " ".join(pieces)
    pieces, opening, depth = [], "", 0
    unread = 0  # sub-trees opened since the last token read
    for token, row in zip(tokens, actions):
        for action in _token_operations(row):
            if action == SPLIT:
                opening, depth, unread = opening + "[", depth + 1, unread + 1
            elif action == MERGE and unread:  # an empty sub-tree
                opening, depth, unread = opening + "]", depth - 1, unread - 1
            elif action == MERGE and depth:
                pieces[-1], depth = pieces[-1] + "]", depth - 1
            elif action == RECUR:
                pieces.append(opening + str(token))
                opening, unread = "", 0
    if pieces:
        pieces[-1] += "]" * depth
    return " ".join(pieces)


def tree_spans(actions):
    """The constituents of a tree: `(first, last)` token positions.

    With one operation id per token (each consumes its token) a span runs
    from a split's token to the matching merge's token, both included; a
    split left open at the end and a merge with nothing to close give no
    span. With one row of operations per token (`operations_per_token >
    1`) a span runs from the token read after a split to the last token
    read before the matching merge; sub-trees still open after the last
    token end there, and a merge right after its split (no token read)
    gives no span.

    Examples:

        >>> sorted(tree_spans([0, 2, 0, 2, 2, 2, 1, 1]))  # "(1+(2+3))"
        [(0, 7), (2, 6)]
        >>> sorted(tree_spans([[0, 2], [2], [1, 0, 2], [2]]))
        [(0, 1), (2, 3)]
    """
    opened, spans = [], set()
    if not _per_token(actions):
        for position, action in enumerate(actions):
            action = int(action)
            if action == SPLIT:
                opened.append(position)
            elif action == MERGE and opened:
                spans.add((opened.pop(), position))
        return spans
    for position, row in enumerate(actions):
        for action in _token_operations(row):
            if action == SPLIT:
                opened.append(position)
            elif action == MERGE and opened:
                first = opened.pop()
                if first < position:
                    spans.add((first, position - 1))
    spans.update((first, len(actions) - 1) for first in opened)
    return spans


def tree_agreement(predicted, gold):
    """Bracketing F1 and exact-tree match of predicted against gold trees.

    Every tree is a sequence of operation ids, or of rows of them (one per
    token, `operations_per_token > 1`); `tree_spans` reads its
    constituents. The F1 of one tree is `2 |P & G| / (|P| + |G|)` over its
    predicted and gold span sets (1 when both are empty); the scores are
    the means over the trees.

    Args:
        predicted: Iterable of trees.
        gold: Iterable of trees, as many as `predicted`.

    Returns:
        `{"f1": mean F1, "exact": share of trees with the gold span set}`,
        both in [0, 1].

    Examples:

        >>> tree_agreement([[0, 2, 2, 2, 1], [2, 2, 2, 2, 2]], [[0, 2, 2, 2, 1]] * 2)
        {'f1': 0.5, 'exact': 0.5}
    """
    predicted, gold = list(predicted), list(gold)
    if len(predicted) != len(gold) or not gold:
        raise ValueError(
            "`predicted` and `gold` must hold the same number of trees (at least "
            f"one). Received: {len(predicted)} and {len(gold)} trees.")
    f1s, exact = [], []
    for guess, truth in zip(predicted, gold):
        guess, truth = tree_spans(guess), tree_spans(truth)
        total = len(guess) + len(truth)
        f1s.append(1.0 if total == 0 else 2 * len(guess & truth) / total)
        exact.append(guess == truth)
    return {"f1": sum(f1s) / len(f1s), "exact": sum(exact) / len(exact)}
