"""What the hierarchical sequence layers (`HMLSTM`, `HMRNN`) share.

`HierarchicalSequenceLayer` is a `SequenceLayer` whose cell is a
`HierarchicalCell`: it adds the cell's `split_outputs` and the counts of
sparse-update inference (`hmkeras.cells.sparse_update`).
"""

from hmkeras.cells import sparse_update
from hmkeras.cells.sequence_layer import SequenceLayer


class HierarchicalSequenceLayer(SequenceLayer):
    """Base of `HMLSTM` and `HMRNN`; see `SequenceLayer`."""

    def split_outputs(self, outputs):
        """`(hiddens, boundaries)` of the layer's output (the cell's method)."""
        return self.cell.split_outputs(outputs)

    def update_statistics(self):
        """Executed and skipped layer updates under `sparse_updates`.

        See `hmkeras.cells.sparse_update.update_statistics`.
        """
        return sparse_update.update_statistics(self.cell)
