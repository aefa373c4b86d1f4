"""Training: callbacks, losses, truncated BPTT, checkpoints, export.

* `SlopeAnnealing`: anneals the hard-sigmoid slope of every HM cell.
* `BoundaryMonitor` (`BoundaryCollapseWarning`): per-layer boundary rates
  in the logs, collapse warnings.
* `TruncatedBPTTModel`: trains a `CharLanguageModel` with its state carried
  across batches.
* `TrainingCheckpoint`: resumable checkpoints.
* `export_step_model`: a stateless step SavedModel for generation.
* `HandwritingTrainer`, `export_handwriting_step_model`: whole-sequence
  training of a `HandwritingModel` (boundary rates in the logs) and its
  step SavedModel for drawing (`handwriting_training`,
  `handwriting_step_export`).
* `truncated_bptt_run`: a resumable truncated-BPTT training run of a
  character LM (`TrainingSchedule`, `train_truncated_bptt`), with the
  callbacks `epoch_summaries.EpochSummaries` (TensorBoard scalars) and
  `epoch_progbar.EpochProgbar`.
* `epoch_run`: a resumable run of whole epochs, one `fit` each
  (`EpochSchedule`, `train_epochs`): the learning rate of every epoch,
  validation logs, the best weights, early stopping; used for the word
  LM and the handwriting model.
* `run_directory`: a run's directory: the files that rebuild it, and what
  a rerun does (resume, refuse or overwrite; finished results kept;
  strict-JSON results; `RunClock`).
"""

from hmkeras import tensorflow_features
from hmkeras.training.boundary_monitor import BoundaryCollapseWarning
from hmkeras.training.boundary_monitor import BoundaryMonitor
from hmkeras.training.slope_annealing import SlopeAnnealing
from hmkeras.training.training_state import TrainingCheckpoint

if tensorflow_features.available():
    from hmkeras.training.handwriting_step_export import export_handwriting_step_model
    from hmkeras.training.handwriting_training import HandwritingTrainer
    from hmkeras.training.stateful_training import TruncatedBPTTModel
    from hmkeras.training.step_export import export_step_model
else:
    __getattr__ = tensorflow_features.missing_names(__name__, (
        "export_handwriting_step_model", "HandwritingTrainer", "TruncatedBPTTModel",
        "export_step_model"))

__all__ = [
    "BoundaryCollapseWarning",
    "BoundaryMonitor",
    "HandwritingTrainer",
    "SlopeAnnealing",
    "TrainingCheckpoint",
    "TruncatedBPTTModel",
    "export_handwriting_step_model",
    "export_step_model",
]
