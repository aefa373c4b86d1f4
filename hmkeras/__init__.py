"""hmkeras: Keras 3 recurrent cells that learn structure.

Hierarchical multiscale LSTM (Chung et al. 2017) and its Elman variant
(Kadar et al. 2018), the multiplicative LSTM (Krause et al. 2017) and the
recurrent-recursive RRNet (Jacob et al. 2018), as cells and as sequence
layers, with straight-through boundary detectors, slope annealing,
boundary monitoring and sparse-update inference; attention-averaging and
attention wrappers around any cell (Salton et al.); the output modules of
both HM papers and a mixture-density head for pen strokes; and the data,
models, metrics and plots of character- and word-level language modelling,
handwriting and math-expression evaluation.

Packages, by role (dependencies point down the list):

* `hmkeras.models`: complete models (character and word LMs,
  handwriting, math expressions).
* `hmkeras.wrappers`, `hmkeras.training`, `hmkeras.analysis`: cell
  wrappers (averaging, attention); callbacks, losses, truncated BPTT,
  checkpoints, export; evaluation, metrics, plots.
* `hmkeras.cells`, `hmkeras.heads`, `hmkeras.data`: cells, sequence layers
  and their machinery; output modules; datasets, vocabularies, pipelines.

Under them all, `hmkeras.argument_checks` (no package of its own) holds the
argument and input checks every package shares.

Every public name is importable from `hmkeras` and from its package
(`hmkeras.cells.HMLSTMCell`).
"""

from hmkeras import cells
from hmkeras import heads
from hmkeras import tensorflow_features
from hmkeras import training
from hmkeras import wrappers
from hmkeras.cells import HierarchicalCell
from hmkeras.cells import HMLSTM
from hmkeras.cells import HMLSTMCell
from hmkeras.cells import HMRNN
from hmkeras.cells import BoundaryPlacement
from hmkeras.cells import BoundaryPlacementLoss
from hmkeras.cells import BoundaryPrior
from hmkeras.cells import HMRNNCell
from hmkeras.cells import MLSTMCell
from hmkeras.cells import MultiplicativeLSTM
from hmkeras.cells import MultiplicativeLSTMCell
from hmkeras.cells import RecurrentRecursiveCell
from hmkeras.cells import RNN
from hmkeras.heads import GatedOutputEmbedding
from hmkeras.heads import MixtureDensityOutput
from hmkeras.heads import SimpleOutputEmbedding
from hmkeras.training import BoundaryCollapseWarning
from hmkeras.training import BoundaryMonitor
from hmkeras.training import SlopeAnnealing
from hmkeras.training import TrainingCheckpoint
from hmkeras.wrappers import AttentionWrapper
from hmkeras.wrappers import AveragingWrapper

# The packages and names that need TensorFlow (`tensorflow_features`).
if tensorflow_features.available():
    from hmkeras import analysis
    from hmkeras import data
    from hmkeras import models
    from hmkeras.analysis import evaluate_char_model
    from hmkeras.analysis import EvaluationResult
    from hmkeras.analysis import mark_segments
    from hmkeras.models import CharLanguageModel
    from hmkeras.models import CharLanguageModelConfig
    from hmkeras.models import ExpressionModel
    from hmkeras.models import HandwritingModel
    from hmkeras.models import HandwritingModelConfig
    from hmkeras.models import PairClassifier
    from hmkeras.models import RecurrentRecursiveLanguageModel
    from hmkeras.models import RecurrentRecursiveLanguageModelConfig
    from hmkeras.models import TiedEmbedding
    from hmkeras.models import WordLanguageModel
    from hmkeras.models import WordLanguageModelConfig
    from hmkeras.training import export_handwriting_step_model
    from hmkeras.training import export_step_model
    from hmkeras.training import HandwritingTrainer
    from hmkeras.training import TruncatedBPTTModel
else:
    __getattr__ = tensorflow_features.missing_names(__name__, (
        "analysis", "data", "models", "evaluate_char_model", "EvaluationResult",
        "mark_segments", "CharLanguageModel", "CharLanguageModelConfig",
        "ExpressionModel", "HandwritingModel", "HandwritingModelConfig",
        "PairClassifier", "RecurrentRecursiveLanguageModel",
        "RecurrentRecursiveLanguageModelConfig", "TiedEmbedding",
        "WordLanguageModel", "WordLanguageModelConfig",
        "export_handwriting_step_model", "export_step_model", "HandwritingTrainer",
        "TruncatedBPTTModel"))

__version__ = "0.1.0"

__all__ = [
    "AttentionWrapper",
    "AveragingWrapper",
    "BoundaryCollapseWarning",
    "BoundaryMonitor",
    "BoundaryPlacement",
    "BoundaryPlacementLoss",
    "BoundaryPrior",
    "CharLanguageModel",
    "CharLanguageModelConfig",
    "EvaluationResult",
    "ExpressionModel",
    "PairClassifier",
    "GatedOutputEmbedding",
    "HMLSTM",
    "HMLSTMCell",
    "HMRNN",
    "HMRNNCell",
    "HandwritingModel",
    "HandwritingModelConfig",
    "HandwritingTrainer",
    "HierarchicalCell",
    "MLSTMCell",
    "MixtureDensityOutput",
    "MultiplicativeLSTM",
    "MultiplicativeLSTMCell",
    "RecurrentRecursiveCell",
    "RNN",
    "RecurrentRecursiveLanguageModel",
    "RecurrentRecursiveLanguageModelConfig",
    "SimpleOutputEmbedding",
    "SlopeAnnealing",
    "TiedEmbedding",
    "TrainingCheckpoint",
    "TruncatedBPTTModel",
    "WordLanguageModel",
    "WordLanguageModelConfig",
    "evaluate_char_model",
    "export_handwriting_step_model",
    "export_step_model",
    "mark_segments",
]
