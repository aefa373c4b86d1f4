"""hmkeras: Keras 3 recurrent cells that learn structure.

Hierarchical multiscale LSTM (Chung et al. 2017) and its Elman variant
(Kadar et al. 2018) and the multiplicative LSTM (Krause et al. 2017), with straight-through boundary detectors and slope
annealing, the output modules of both papers, and the data, metrics and
plots of character-level language modelling.
"""

from hmkeras import data
from hmkeras.boundary_monitor import BoundaryCollapseWarning
from hmkeras.boundary_monitor import BoundaryMonitor
from hmkeras.boundary_rate_regularizer import BoundaryRateRegularizer
from hmkeras.char_language_model import CharLanguageModel
from hmkeras.char_language_model import CharLanguageModelConfig
from hmkeras.evaluation import EvaluationResult
from hmkeras.evaluation import evaluate_char_model
from hmkeras.gated_output_embedding import GatedOutputEmbedding
from hmkeras.hierarchical_cell import HierarchicalCell
from hmkeras.hm_lstm_cell import HMLSTMCell
from hmkeras.hm_rnn_cell import HMRNNCell
from hmkeras.multiplicative_lstm_cell import MLSTMCell
from hmkeras.multiplicative_lstm_cell import MultiplicativeLSTMCell
from hmkeras.simple_output_embedding import SimpleOutputEmbedding
from hmkeras.slope_annealing import SlopeAnnealing
from hmkeras.stateful_training import TruncatedBPTTModel
from hmkeras.step_export import export_step_model
from hmkeras.training_state import TrainingCheckpoint

__version__ = "0.1.0"
