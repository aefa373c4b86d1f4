"""Evaluation, metrics, units and pictures.

* `evaluate_char_model` / `EvaluationResult`: Kadar et al.'s batch-1
  evaluation with BPC, z rates, z-ratio and boundary scores.
* `boundary_metrics`: z rates, z-ratio, boundary precision / recall / F1
  in several alignments.
* `bits`: unit conversions; `surprisal_analysis`: Krause et al. Fig. 3;
  `segmentation_plot`: Chung et al. Fig. 3/4; `attention_plot`: the
  attention (or averaging) weights of one sentence of a word LM.
* `mark_segments` (`segment_marks`): a text excerpt with each layer's
  segment ends marked in it, for logs and summaries.
* `char_lm_report`: what a character-LM run reports (validation logs,
  boundary and segment figures, word-level WikiText-2 figures, the printed
  summary, the segmentation picture); `handwriting_report`: what a
  handwriting run reports (boundary agreement with pen-ups and glyph
  ends, the printed summary); `corpus_references`: the reference
  boundaries of a corpus' text.
* `word_discovery`: unsupervised word segmentation scored in the field's
  conventions (boundary, token and lexicon precision / recall / F1) and
  its baselines (random, transitional probability, entropy and surprisal rises);
  `description_length`: the two-part code length of a segmentation, which
  compares segmentations without gold words;
  `word_discovery_report`: the words a character LM finds in unsegmented
  utterances, scored beside those baselines.
"""

from hmkeras import tensorflow_features

tensorflow_features.require_tensorflow("hmkeras.analysis")

from hmkeras.analysis.evaluation import EvaluationResult
from hmkeras.analysis.evaluation import evaluate_char_model
from hmkeras.analysis.segment_marks import mark_segments

__all__ = ["EvaluationResult", "evaluate_char_model", "mark_segments"]
