"""Output modules read by the softmax of a language model.

* `GatedOutputEmbedding`: Chung et al. Eq. (11)-(12) over `[h^1 .. h^L]`.
* `SimpleOutputEmbedding`: Kadar et al.'s SimplerOut, `ReLU(W [h^1 .. h^L])`.
"""

from hmkeras.heads.gated_output_embedding import GatedOutputEmbedding
from hmkeras.heads.simple_output_embedding import SimpleOutputEmbedding

__all__ = ["GatedOutputEmbedding", "SimpleOutputEmbedding"]
