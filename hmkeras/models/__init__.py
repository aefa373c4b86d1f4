"""Complete models built from the cells and heads.

* `CharLanguageModel` / `CharLanguageModelConfig`: embedding -> RNN(cell)
  -> output module -> softmax, with the RNN state as explicit inputs and
  outputs.
* `WordLanguageModel` / `WordLanguageModelConfig`: the averaging paper's
  word LM (tied embedding -> 2-layer RNN, optionally wrapped by
  `AveragingWrapper` / `AttentionWrapper` -> tied softmax);
  `TiedEmbedding` (one matrix for input and output); `word_language_model.sentence_perplexity`.
* `HandwritingModel` / `HandwritingModelConfig`: pen offsets -> RNN(cell)
  -> output module -> `MixtureDensityOutput` (Chung et al. Section 4.2).
* `ExpressionModel`: encoder (LSTM or RRNet, supervised / REINFORCE /
  random trees) -> two-digit decoder LSTM for the MEE task (Jacob et al.
  2018), with the policy losses in its training step.
* `PairClassifier`: a shared sentence encoder (LSTM or RRNet with the
  ground-truth or random trees) -> `[u; v; u - v; u * v]` -> tanh ->
  softmax over the seven relations of the logical-inference task (Jacob
  et al. 2018, Sec. 3.2).
* `RecurrentRecursiveLanguageModel` / `RecurrentRecursiveLanguageModelConfig`:
  the RRNet word LM of Jacob et al. (2018) Sec. 3.3 (tied embedding ->
  RRNet -> tied softmax), its tree policy trained by REINFORCE with
  log p(next word) as the reward.
"""

from hmkeras import tensorflow_features

tensorflow_features.require_tensorflow("hmkeras.models")

from hmkeras.models.char_language_model import CharLanguageModel
from hmkeras.models.char_language_model import CharLanguageModelConfig
from hmkeras.models.expression_model import ExpressionModel
from hmkeras.models.handwriting_model import HandwritingModel
from hmkeras.models.handwriting_model import HandwritingModelConfig
from hmkeras.models.pair_classifier import PairClassifier
from hmkeras.models.rrnet_language_model import RecurrentRecursiveLanguageModel
from hmkeras.models.rrnet_language_model import RecurrentRecursiveLanguageModelConfig
from hmkeras.models.tied_embedding import TiedEmbedding
from hmkeras.models.word_language_model import WordLanguageModel
from hmkeras.models.word_language_model import WordLanguageModelConfig

__all__ = [
    "CharLanguageModel",
    "CharLanguageModelConfig",
    "ExpressionModel",
    "HandwritingModel",
    "HandwritingModelConfig",
    "PairClassifier",
    "RecurrentRecursiveLanguageModel",
    "RecurrentRecursiveLanguageModelConfig",
    "TiedEmbedding",
    "WordLanguageModel",
    "WordLanguageModelConfig",
]
