"""The products of one layer of a hierarchical cell, prepared per sequence.

Every layer `l` of `HMLSTMCell` and `HMRNNCell` mixes three products of
its kernels (Chung et al. 2017, Eq. 5-7; `M` is `W`, `U` or `V`):

    s = a W_l h^{l-1}_t  +  b U_l h^l_{t-1}  +  c V_l h^{l+1}_{t-1}

with per-row gates `a`, `b`, `c` of shape `(batch, 1)` that the cell takes
from the boundaries (`ProductGates`).  A `LayerProducts` holds what those
products need, made once per sequence from the layer's weights (with the
cell's other per-sequence constants, see `variational_dropout`):

* each kernel with its transpose (a `SequenceKernel`, whose transpose
  the backward pass reads),
* without layer normalization, in cells that stack the recurrent and
  top-down products, the stacked `[U_l; V_l]`: `b h^l_{t-1}` and
  `c h^{l+1}_{t-1}` are concatenated and multiplied at once, a product
  that depends on the previous step only,
* with layer normalization (Ba et al. 2016, Eq. 20-21), each kernel
  centred over its columns, so that `h M_c = h M - mean(h M)`:

      LN(h M) = y * gain / sqrt(mean(y ** 2) + eps) + beta,   y = h M_c

  and the products' biases `beta` stacked, so that their gated sum is one
  small matmul; the statistics are in float32 under mixed precision,
* with sparse updates, the boundary column of a COPY
  (`sparse_update.CopyBoundary`).

It computes three forms of the products: `bottom_up` (the bottom layer's
`W_1 x`, which a sequence layer computes for all steps at once),
`mixture` (the gated sum of a step) and `copy_boundary_preactivation`
(the boundary detector's column of the products a COPY keeps).

Examples:

    >>> import numpy as np
    >>> from keras import ops
    >>> weights = {"kernel": np.array([[1.0, 2.0]], "float32"),
    ...            "recurrent_kernel": np.array([[3.0, 4.0]], "float32")}
    >>> products = LayerProducts.build(weights, ProductOptions(
    ...     layer_norm=False, stack_recurrent=False, compute_dtype="float32"))
    >>> inputs = ProductInputs(below=ops.ones((1, 1)), recurrent=ops.ones((1, 1)))
    >>> ops.convert_to_numpy(products.mixture(inputs, ProductGates(recurrent=ops.zeros((1, 1)))))
    array([[1., 2.]], dtype=float32)
"""

import dataclasses
from typing import Any
from typing import Optional

from keras import ops

from hmkeras.cells import sparse_update
from hmkeras.cells.custom_gradients import tensor_value
from hmkeras.cells.layer_normalization import LAYER_NORM_EPSILON
from hmkeras.cells.layer_normalization import normalize_centred
from hmkeras.cells.sequence_kernel import product as kernel_product
from hmkeras.cells.sequence_kernel import sequence_kernel

PRODUCT_NAMES = ("bottom_up", "recurrent", "top_down")  # W, U, V: Chung Eq. 7, 5, 6
# The weights of each product in a layer's weight dict: (kernel, normalization).
_WEIGHT_NAMES = {
    "bottom_up": ("kernel", "norm_bottom_up"),
    "recurrent": ("recurrent_kernel", "norm_recurrent"),
    "top_down": ("top_down_kernel", "norm_top_down"),
}


@dataclasses.dataclass(frozen=True)
class ProductOptions:
    """How a cell's layers compute their products (the same for every layer).

    `layer_norm`: normalize each product (Ba et al. Eq. 20-21).
    `stack_recurrent`: without layer normalization, multiply the gated
    `[h^l_{t-1}, h^{l+1}_{t-1}]` by the stacked `[U; V]` in one matmul
    (pays when a product is much wider than its input, as the LSTM's four
    gates), else multiply separately and gate the outputs.
    `compute_dtype`: the cell's.  `copy_products`: with sparse updates,
    the names of the products a COPY keeps (`PRODUCT_NAMES`), else `None`.
    """

    layer_norm: bool
    stack_recurrent: bool
    compute_dtype: str
    copy_products: Optional[tuple] = None

    @property
    def statistics_dtype(self):
        """float32 under float16 / bfloat16 compute, as Keras' LayerNormalization."""
        if self.compute_dtype in ("float16", "bfloat16"):
            return "float32"
        return self.compute_dtype


@dataclasses.dataclass(frozen=True)
class ProductInputs:
    """What a layer's products multiply at one step.

    `below`: `h^{l-1}_t` (the step input for the bottom layer; `None` when
    `projected` is given).  `recurrent`: `h^l_{t-1}` as it enters the
    products (with its recurrent dropout mask).  `above`: `h^{l+1}_{t-1}`
    likewise, `None` for the top layer.  `projected`: the bottom layer's
    precomputed `bottom_up(x)` (`HierarchicalCell.project_sequence`), or
    `None`.
    """

    below: Any = None
    recurrent: Any = None
    above: Any = None
    projected: Any = None


@dataclasses.dataclass(frozen=True)
class ProductGates:
    """Per-row factors `(batch, 1)` of a layer's three products.

    `None` leaves a product ungated (a factor of 1); a gate of a product
    the layer does not have is ignored.
    """

    bottom_up: Any = None
    recurrent: Any = None
    top_down: Any = None

    def factors(self, names):
        return [getattr(self, name) for name in names]


class LayerProducts:
    """One layer's kernels and normalization constants for one sequence.

    Build it with `LayerProducts.build(weights, options)`; see the module
    docstring for what it holds and computes.
    """

    def __init__(self, options, names, kernels, gains=None, betas=None,
                 copy_boundary=None):
        self.options = options
        self.names = names  # the products the layer has, in `PRODUCT_NAMES` order
        # Without layer normalization: {name: SequenceKernel}, with the
        # stacked `"recurrent_top_down"` when `options.stack_recurrent`.
        # With it: the centred `SequenceKernel` of each product in `names`.
        self.kernels = kernels
        self.gains = gains
        self.betas = betas  # (products, columns): the stacked `beta`s
        self.copy_boundary = copy_boundary

    @classmethod
    def build(cls, weights, options):
        """The products of the layer whose weights are the dict `weights`.

        `weights` holds `"kernel"`, `"recurrent_kernel"`, optionally
        `"top_down_kernel"`, the `(gain, beta)` pairs `"norm_<product>"`
        with layer normalization, and `"bias"` (read for the COPY's
        boundary column when `options.copy_products` is set).
        """
        names = tuple(n for n in PRODUCT_NAMES if _WEIGHT_NAMES[n][0] in weights)
        if options.layer_norm:
            return cls._build_normalized(weights, options, names)
        return cls._build_plain(weights, options, names)

    @classmethod
    def _build_plain(cls, weights, options, names):
        matrices = {name: _read(weights, name, options.compute_dtype) for name in names}
        if options.stack_recurrent:
            blocks = [matrices.pop("recurrent")]
            if "top_down" in matrices:
                blocks.append(matrices.pop("top_down"))
            matrices["recurrent_top_down"] = (
                ops.concatenate(blocks, axis=0) if len(blocks) > 1 else blocks[0]
            )
        kernels = {name: sequence_kernel(m) for name, m in matrices.items()}
        copy_boundary = None
        if options.copy_products is not None:
            copy_boundary = _copy_boundary(weights, options, names, centred=None)
        return cls(options, names, kernels, copy_boundary=copy_boundary)

    @classmethod
    def _build_normalized(cls, weights, options, names):
        compute = options.compute_dtype
        kernels, gains, betas, centred_kernels = [], [], [], {}
        for name in names:
            gain, beta = (tensor_value(v) for v in weights[_WEIGHT_NAMES[name][1]])
            kernel = _read(weights, name, options.statistics_dtype)
            centred = kernel - ops.mean(kernel, axis=1, keepdims=True)
            centred_kernels[name] = centred
            kernels.append(sequence_kernel(ops.cast(centred, compute)))
            gains.append(ops.cast(gain, compute))
            betas.append(ops.cast(beta, compute))
        copy_boundary = None
        if options.copy_products is not None:
            copy_boundary = _copy_boundary(weights, options, names, centred_kernels)
        return cls(options, names, kernels, gains, ops.stack(betas), copy_boundary)

    # -- The three forms of the products -----------------------------------

    def bottom_up(self, inputs):
        """The bottom-up term `W x` (Chung Eq. 7) of ungated `inputs`.

        With layer normalization it is `LN(W x)` without its bias `beta`
        (Ba et al. Eq. 20-21; `mixture` adds the biases).
        """
        if not self.options.layer_norm:
            return kernel_product(inputs, self.kernels["bottom_up"])
        return self._normalized(inputs, None, 0)

    def mixture(self, inputs, gates):
        """`a W h^{l-1}_t + b U h^l_{t-1} + c V h^{l+1}_{t-1}` (Chung Eq. 5-7).

        Args:
            inputs: A `ProductInputs`.
            gates: A `ProductGates`, the factors `a`, `b`, `c`.

        Returns:
            The sum, `(batch, columns)`, without the layer's bias; with
            layer normalization each product normalized on its own (Ba et
            al. Eq. 20) before it is gated.
        """
        if self.options.layer_norm:
            return self._normalized_mixture(inputs, gates)
        if self.options.stack_recurrent:
            return self._stacked_mixture(inputs, gates)
        return self._separate_mixture(inputs, gates)

    def copy_boundary_preactivation(self, inputs):
        """The boundary column of the products a COPY keeps, plus its bias.

        `(batch, 1)`, from the per-sequence `copy_boundary`
        (`sparse_update.boundary_preactivation`); only for a layer built
        with `options.copy_products`.
        """
        return sparse_update.boundary_preactivation(
            self.copy_boundary, (inputs.below, inputs.recurrent, inputs.above)
        )

    # -- The mixtures ------------------------------------------------------

    def _stacked_mixture(self, inputs, gates):
        """The gates scale the inputs; `[U; V]` is one matmul."""
        recurrent = inputs.recurrent
        if gates.recurrent is not None:
            recurrent = gates.recurrent * recurrent
        past = recurrent
        if "top_down" in self.names:
            above = inputs.above
            if gates.top_down is not None:
                above = gates.top_down * above
            past = ops.concatenate([recurrent, above], axis=-1)
        projected = inputs.projected
        if projected is None:
            below = inputs.below
            if gates.bottom_up is not None:
                below = gates.bottom_up * below
            projected = kernel_product(below, self.kernels["bottom_up"])  # Chung Eq. (7)
        return projected + kernel_product(past, self.kernels["recurrent_top_down"])  # Eq. (5)-(6)

    def _separate_mixture(self, inputs, gates):
        """Three matmuls; the gates scale their outputs."""
        total = inputs.projected
        for name in self.names:
            if name == "bottom_up" and total is not None:
                continue  # the bottom layer's W x, precomputed
            term = kernel_product(_input_of(inputs, name), self.kernels[name])  # Eq. (5)-(7)
            factor = getattr(gates, name)
            if factor is not None:
                term = factor * term
            total = term if total is None else total + term
        return total

    def _normalized_mixture(self, inputs, gates):
        """Ba et al. Eq. (20)-(21) for each product, then the gated biases."""
        total = None
        for k, name in enumerate(self.names):
            if k == 0 and inputs.projected is not None:
                total = inputs.projected  # the bottom layer's W x, precomputed
                continue
            term = self._normalized(_input_of(inputs, name), getattr(gates, name), k)
            total = term if total is None else total + term
        # The gated sum of the products' biases: one (batch, P) x (P, C) matmul.
        factors = gates.factors(self.names)
        if all(f is None for f in factors):
            return total + ops.sum(self.betas, axis=0)
        ones = ops.ones_like(next(f for f in factors if f is not None))
        weights = ops.concatenate([ones if f is None else f for f in factors], axis=-1)
        return total + ops.matmul(ops.cast(weights, self.options.compute_dtype), self.betas)

    def _normalized(self, x, factor, k):
        """`factor * (LN(x M) - beta)` of product `k`, from `M_c` and `gain`."""
        y = kernel_product(x, self.kernels[k])  # centred: its mean over the columns is 0
        return normalize_centred(y, self.gains[k], factor, self.options.statistics_dtype,
                                 LAYER_NORM_EPSILON)


def _input_of(inputs, name):
    return {"bottom_up": inputs.below, "recurrent": inputs.recurrent,
            "top_down": inputs.above}[name]


def _read(weights, name, dtype):
    return ops.cast(ops.convert_to_tensor(weights[_WEIGHT_NAMES[name][0]]), dtype)


def _copy_boundary(weights, options, names, centred):
    """The layer's `sparse_update.CopyBoundary`.

    One `BoundaryTerm` per product that a COPY keeps
    (`options.copy_products`), and the offset: the detector's bias plus,
    with layer normalization (`centred`: the kernels centred over their
    columns, in the statistics dtype), the kept products' `beta`.
    """
    terms, offset = [], ops.convert_to_tensor(weights["bias"])[-1:]
    for product, name in enumerate(PRODUCT_NAMES):
        if name not in options.copy_products or name not in names:
            continue
        if centred is None:
            kernel = _read(weights, name, options.compute_dtype)
            terms.append(sparse_update.boundary_term(product, kernel))
            continue
        gain, beta = (ops.convert_to_tensor(v)[-1] for v in weights[_WEIGHT_NAMES[name][1]])
        kernel = centred[name]
        terms.append(sparse_update.boundary_term(product, kernel, ops.cast(gain, kernel.dtype)))
        offset = offset + beta
    return sparse_update.CopyBoundary(
        tuple(terms), ops.cast(offset, options.compute_dtype), LAYER_NORM_EPSILON
    )
