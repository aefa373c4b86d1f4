"""Complete models built from the cells and heads.

* `CharLanguageModel` / `CharLanguageModelConfig`: embedding -> RNN(cell)
  -> output module -> softmax, with the RNN state as explicit inputs and
  outputs.
"""

from hmkeras.models.char_language_model import CharLanguageModel
from hmkeras.models.char_language_model import CharLanguageModelConfig

__all__ = ["CharLanguageModel", "CharLanguageModelConfig"]
