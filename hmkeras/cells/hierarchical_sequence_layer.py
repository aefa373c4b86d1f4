"""What the hierarchical sequence layers (`HMLSTM`, `HMRNN`) share.

`HierarchicalSequenceLayer` is a `SequenceLayer` whose cell is a
`HierarchicalCell`: it adds the boundary prior (`boundary_prior`,
`segment_lengths`: a `BoundaryPrior` whose loss the layer adds while
training) and the cell's `split_outputs`.
"""

from hmkeras.cells.boundary_prior import prior_for
from hmkeras.cells.sequence_layer import SequenceLayer

class HierarchicalSequenceLayer(SequenceLayer):
    """Base of `HMLSTM` and `HMRNN`; see `SequenceLayer`."""

    def __init__(self, cell, *, boundary_prior="rate", segment_lengths=None, **kwargs):
        super().__init__(cell, **kwargs)
        self._boundary_prior = prior_for(boundary_prior, segment_lengths, cell.num_layers)

    @property
    def boundary_prior(self):
        """The `BoundaryPrior` the layer adds while training, or None."""
        return self._boundary_prior

    @property
    def segment_lengths(self):
        """The prior's expected segment lengths, or None."""
        prior = self._boundary_prior
        return None if prior is None else prior.segment_lengths

    def get_config(self):
        prior = self._boundary_prior
        return {
            **super().get_config(),
            "boundary_prior": None if prior is None else prior.form,
            "segment_lengths": None if prior is None else list(prior.segment_lengths),
        }

    def needs_all_outputs(self, training):
        return self._boundary_prior is not None and bool(training)

    def inner_loop(self, sequences, initial_state, mask, training=False):
        results = super().inner_loop(sequences, initial_state, mask, training=training)
        if self.needs_all_outputs(training):
            if isinstance(mask, (list, tuple)):
                mask = mask[0]
            self.add_loss(self._boundary_prior(results[1], mask=mask))
        return results

    def split_outputs(self, outputs):
        """`(hiddens, boundaries)` of the layer's output (the cell's method)."""
        return self.cell.split_outputs(outputs)
