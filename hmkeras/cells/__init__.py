"""Recurrent cells and their machinery.

* `HMLSTMCell`, `HMRNNCell`: the hierarchical multiscale cells (Chung et
  al. 2017; Kadar et al. 2018) on the shared `HierarchicalCell` machinery
  (`hierarchical_cell`), with the straight-through boundary estimators
  (`straight_through`) and the HM-LSTM's masked update
  (`masked_lstm_update`).
* `MultiplicativeLSTMCell` (alias `MLSTMCell`; Krause et al. 2017) with its
  weight normalization (`weight_normalization`).
* `variational_dropout`: per-sequence dropout masks and constants of every
  cell; `independent_initializers`: one random draw per weight matrix.
* `argument_checks`: the argument and input checks shared by every public
  class (NumPy scalars accepted, bad values refused naming the argument).
"""

from hmkeras.cells.hierarchical_cell import HierarchicalCell
from hmkeras.cells.hm_lstm_cell import HMLSTMCell
from hmkeras.cells.hm_rnn_cell import HMRNNCell
from hmkeras.cells.multiplicative_lstm_cell import MLSTMCell
from hmkeras.cells.multiplicative_lstm_cell import MultiplicativeLSTMCell

__all__ = [
    "HMLSTMCell",
    "HMRNNCell",
    "HierarchicalCell",
    "MLSTMCell",
    "MultiplicativeLSTMCell",
]
