"""Output modules read by the softmax of a language model.

* `GatedOutputEmbedding`: Chung et al. Eq. (11)-(12) over `[h^1 .. h^L]`.
* `SimpleOutputEmbedding`: Kadar et al.'s SimplerOut, `ReLU(W [h^1 .. h^L])`.
* `MixtureDensityOutput`: Graves (2013) mixture-density output for pen
  offsets (bivariate Gaussians + end-of-stroke), its stable loss and sampler.
"""

from hmkeras.heads.gated_output_embedding import GatedOutputEmbedding
from hmkeras.heads.mixture_density_output import MixtureDensityOutput
from hmkeras.heads.simple_output_embedding import SimpleOutputEmbedding

__all__ = ["GatedOutputEmbedding", "MixtureDensityOutput", "SimpleOutputEmbedding"]
