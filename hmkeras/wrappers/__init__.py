"""Cell wrappers: a memory of past hidden states on top of any RNN cell.

* `AveragingWrapper` (`averaging_wrapper`): persistence averaging, the mean
  of the past hidden states as context (Salton & Kelleher 2018).
* `AttentionWrapper` (`attention_wrapper`): learned attention over the last
  `memory_size` hidden states (Salton et al. 2017), weights retrievable.
* `cell_wrapper`: what both share (`CellWrapper`): checks of the wrapped
  cell, state and output layout (`split_outputs`, `WrapperOutputs`), the
  reset column, the output projection, the per-sequence hooks and the
  nested configuration.
"""

from hmkeras.wrappers.attention_wrapper import AttentionWrapper
from hmkeras.wrappers.averaging_wrapper import AveragingWrapper

__all__ = ["AttentionWrapper", "AveragingWrapper"]
