"""Recurrent cells and their machinery.

* `HMLSTMCell`, `HMRNNCell`: the hierarchical multiscale cells (Chung et
  al. 2017; Kadar et al. 2018) on the shared `HierarchicalCell` machinery
  (`hierarchical_cell`; a layer's weights `layer_weights`, products
  `layer_products`, masks and step `layer_step`; sizes and state / output
  layout `hierarchy_layout`), with the straight-through boundary
  estimators (`straight_through`) and the HM-LSTM's masked update
  (`masked_lstm_update`).
* `MultiplicativeLSTMCell` (alias `MLSTMCell`; Krause et al. 2017) with its
  weight normalization (`weight_normalization`).
* `HMLSTM`, `HMRNN`, `MultiplicativeLSTM`: sequence layers over those
  cells, as `keras.layers.LSTM` over `LSTMCell` (`sequence_layer`,
  `hierarchical_sequence_layer`): the input projection of all steps is one
  matrix product before the time loop.
* `BoundaryPrior` (`boundary_prior`): an expected segment length per
  boundary layer as a loss, added by the hierarchical sequence layers
  while training (on by default; an extension beyond the papers).
* `BoundaryPlacement` (`boundary_placement`): beside the prior, a loss
  that puts the boundaries where the model's next prediction is uncertain
  (on by default in `CharLanguageModel`; an extension), and
  `BoundaryPlacementLoss`, the layer that adds it to a model of your own.
* `sparse_update`: sparse-update inference, a COPYing layer skips its
  update (`sparse_updates=True`), with counts of the skipped updates.
* `RecurrentRecursiveCell` (Jacob et al. 2018, RRNet): split / merge /
  recur over a fixed-size stack in the state (`tensor_stack`), with a
  policy network (supervised, REINFORCE or fixed operations).
* `RNN` (`sequence_rnn`): `keras.layers.RNN` that opens the sequences of
  the cells it steps (per-sequence dropout masks and constants,
  `variational_dropout`), inside `StackedRNNCells` and wrappers too.
* `variational_dropout`: per-sequence dropout masks and constants of every
  cell; `independent_initializers`: one random draw per weight matrix.
* `layer_search`: the cells of one kind inside a model (`find_layers`).

The argument and input checks every package shares live in the
package-neutral `hmkeras.argument_checks`.
"""

from hmkeras.cells.boundary_placement import BoundaryPlacement
from hmkeras.cells.boundary_placement import BoundaryPlacementLoss
from hmkeras.cells.boundary_prior import BoundaryPrior
from hmkeras.cells.hierarchical_cell import HierarchicalCell
from hmkeras.cells.hm_lstm import HMLSTM
from hmkeras.cells.hm_lstm_cell import HMLSTMCell
from hmkeras.cells.hm_rnn import HMRNN
from hmkeras.cells.hm_rnn_cell import HMRNNCell
from hmkeras.cells.multiplicative_lstm import MultiplicativeLSTM
from hmkeras.cells.multiplicative_lstm_cell import MLSTMCell
from hmkeras.cells.multiplicative_lstm_cell import MultiplicativeLSTMCell
from hmkeras.cells.recurrent_recursive_cell import RecurrentRecursiveCell
from hmkeras.cells.sequence_rnn import RNN

__all__ = [
    "BoundaryPlacement",
    "BoundaryPlacementLoss",
    "BoundaryPrior",
    "HMLSTM",
    "HMRNN",
    "MultiplicativeLSTM",
    "HMLSTMCell",
    "HMRNNCell",
    "HierarchicalCell",
    "MLSTMCell",
    "MultiplicativeLSTMCell",
    "RecurrentRecursiveCell",
    "RNN",
]
