"""hmkeras: Keras 3 recurrent cells that learn structure.

Hierarchical multiscale LSTM (Chung et al. 2017) and its Elman variant
(Kadar et al. 2018) and the multiplicative LSTM (Krause et al. 2017), with
straight-through boundary detectors, slope annealing and boundary
monitoring, the output modules of both HM papers, and the data, metrics and
plots of character-level language modelling.

Packages, by role (dependencies point down the list):

* `hmkeras.models`: complete models (the character LM).
* `hmkeras.training`, `hmkeras.analysis`: callbacks, losses, truncated BPTT,
  checkpoints, export; evaluation, metrics, plots.
* `hmkeras.cells`, `hmkeras.heads`, `hmkeras.data`: cells and their
  machinery; output modules; datasets, vocabularies, pipelines.

Every public name is importable from `hmkeras` and from its package
(`hmkeras.cells.HMLSTMCell`).
"""

from hmkeras import analysis
from hmkeras import cells
from hmkeras import data
from hmkeras import heads
from hmkeras import models
from hmkeras import training
from hmkeras.analysis import EvaluationResult
from hmkeras.analysis import evaluate_char_model
from hmkeras.cells import HierarchicalCell
from hmkeras.cells import HMLSTMCell
from hmkeras.cells import HMRNNCell
from hmkeras.cells import MLSTMCell
from hmkeras.cells import MultiplicativeLSTMCell
from hmkeras.heads import GatedOutputEmbedding
from hmkeras.heads import SimpleOutputEmbedding
from hmkeras.models import CharLanguageModel
from hmkeras.models import CharLanguageModelConfig
from hmkeras.training import BoundaryCollapseWarning
from hmkeras.training import BoundaryMonitor
from hmkeras.training import BoundaryRateRegularizer
from hmkeras.training import SlopeAnnealing
from hmkeras.training import TrainingCheckpoint
from hmkeras.training import TruncatedBPTTModel
from hmkeras.training import export_step_model

__version__ = "0.1.0"

__all__ = [
    "BoundaryCollapseWarning",
    "BoundaryMonitor",
    "BoundaryRateRegularizer",
    "CharLanguageModel",
    "CharLanguageModelConfig",
    "EvaluationResult",
    "GatedOutputEmbedding",
    "HMLSTMCell",
    "HMRNNCell",
    "HierarchicalCell",
    "MLSTMCell",
    "MultiplicativeLSTMCell",
    "SimpleOutputEmbedding",
    "SlopeAnnealing",
    "TrainingCheckpoint",
    "TruncatedBPTTModel",
    "evaluate_char_model",
    "export_step_model",
]
