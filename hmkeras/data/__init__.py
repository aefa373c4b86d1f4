"""Data for character-level language modelling.

* `SyntheticHierarchicalCorpus`: embedded text with words / phrases /
  sentences, ground-truth boundaries and an exact entropy rate (offline).
* TFDS builders, one per corpus: `PtbChar` ("ptb_char"), `Text8`
  ("text8"), `Enwik8` ("enwik8"), `Wikitext2Raw` ("wikitext2_raw"), and
  for word discovery `Brent` ("brent", configs "phonemes" and "text" of
  `BrentConfig`: child-directed speech, the gold words separated by
  spaces); they read local files first and never hang offline.
  `read_split` returns a prepared split as one stream.
* `load_char_corpus(name, split, ...)`: one split as str / bytes.
* `read_text_splits(text_file, valid_file=None, test_file=None, ...)`: your
  own UTF-8 text as train / validation / test strings (a part without a file
  of its own is cut from the end of `text_file`).
* `Utterances`: text whose words a model must find, one utterance per
  line (what the model reads: the lines without their spaces; the gold
  words: the runs between them); `split_utterances` cuts between lines.
* `CharVocabulary`: sorted symbol <-> id map that refuses unknown symbols;
  `char_splits.encode_splits`: a corpus' three splits as ids, with the
  training text's vocabulary (unknown symbols refused or mapped, counted).
* `TruncatedBPTTBatches` (stateful TBPTT training batches) and
  `EvaluationChunks` (batch-1 evaluation over the whole text).
* Word level: `SyntheticWordCorpus` (the embedded corpus as tokens, exact
  entropy rate per token), TFDS builders `PtbWord` ("ptb_word") and
  `Wikitext2Word` ("wikitext2_word") with `read_sentences`,
  `load_word_corpus(name, split, ...)`, `WordVocabulary` (``<pad>``,
  ``<eos>``, ``<unk>``) and `SentenceBatches` (sentences padded / cut to a
  fixed length, Salton & Kelleher).
* Math expressions (Jacob et al. 2018): the TFDS builder `Mee` ("mee",
  generated locally; `MeeConfig` sizes) and the plain-Python stream
  `generate_mee_expressions` (`mee.generate_expressions`).
* Logical inference (Bowman et al. 2015; Jacob et al. 2018, Sec. 3.2): the
  TFDS builder `LogicInference` ("logic_inference", over tab-separated
  files it generates; `LogicInferenceConfig` sizes) and the plain-Python
  stream `generate_logic_pairs` (`logic.generate_pairs`), labels computed
  exactly over the 64 truth assignments.
* Handwriting: the TFDS builder `IamOnDb` ("iam_ondb", manual download;
  `IamOnDbConfig`, `read_stroke_split`) and the embedded offline stroke set
  `SyntheticStrokes` (glyph lines with known stroke and glyph boundaries);
  `stroke_offsets` converts strokes to `(dx, dy, pen_up)` and normalizes.

Examples:

    >>> from hmkeras import data
    >>> corpus = data.SyntheticHierarchicalCorpus(seed=0, train_chars=20_000)
    >>> vocab = data.CharVocabulary.from_text(corpus.text("train"))
    >>> batches = data.TruncatedBPTTBatches(
    ...     vocab.encode(corpus.text("train")), batch_size=8, seq_len=100)
    >>> batches.num_batches > 20
    True
"""

from hmkeras import tensorflow_features

tensorflow_features.require_tensorflow("hmkeras.data")

from hmkeras.data.brent import Brent
from hmkeras.data.brent import BrentConfig
from hmkeras.data.char_stream_builder import CharStreamBuilder
from hmkeras.data.char_stream_builder import FixedSplitConfig
from hmkeras.data.char_stream_builder import read_split
from hmkeras.data.corpora import CORPUS_NAMES
from hmkeras.data.corpora import char_corpus_builder
from hmkeras.data.corpora import load_char_corpus
from hmkeras.data.enwik8 import Enwik8
from hmkeras.data.pipeline import EvaluationChunks
from hmkeras.data.pipeline import TruncatedBPTTBatches
from hmkeras.data.ptb_char import PtbChar
from hmkeras.data.sources import DatasetFilesNotFoundError
from hmkeras.data.sources import DatasetVerificationError
from hmkeras.data.synthetic_corpus import SyntheticHierarchicalCorpus
from hmkeras.data.text8 import Text8
from hmkeras.data.text_file import read_text_splits
from hmkeras.data.utterances import Utterances
from hmkeras.data.utterances import split_utterances
from hmkeras.data.vocabulary import CharVocabulary
from hmkeras.data.wikitext2_raw import WIKITEXT2_TEST_BYTES
from hmkeras.data.wikitext2_raw import WIKITEXT2_TEST_WORDS
from hmkeras.data.wikitext2_raw import Wikitext2Raw
from hmkeras.data.wikitext2_raw import Wikitext2RawConfig
from hmkeras.data.wikitext2_raw import count_words
from hmkeras.data.ptb_word import PtbWord
from hmkeras.data.sentence_pipeline import SentenceBatches
from hmkeras.data.synthetic_word_corpus import SyntheticWordCorpus
from hmkeras.data.wikitext2_word import Wikitext2Word
from hmkeras.data.word_corpora import WORD_CORPUS_NAMES
from hmkeras.data.word_corpora import load_word_corpus
from hmkeras.data.word_corpora import word_corpus_builder
from hmkeras.data.word_stream_builder import read_sentences
from hmkeras.data.word_vocabulary import WordVocabulary
from hmkeras.data.mee import Mee
from hmkeras.data.mee import MeeConfig
from hmkeras.data.mee import generate_expressions as generate_mee_expressions
from hmkeras.data.logic import LogicInference
from hmkeras.data.logic import LogicInferenceConfig
from hmkeras.data.logic import generate_pairs as generate_logic_pairs
from hmkeras.data.iam_ondb import IamOnDb
from hmkeras.data.iam_ondb import IamOnDbConfig
from hmkeras.data.iam_ondb import read_stroke_split
from hmkeras.data.synthetic_strokes import SyntheticStrokes

__all__ = [
    "Brent",
    "BrentConfig",
    "CORPUS_NAMES",
    "CharStreamBuilder",
    "CharVocabulary",
    "DatasetFilesNotFoundError",
    "DatasetVerificationError",
    "Enwik8",
    "EvaluationChunks",
    "FixedSplitConfig",
    "PtbChar",
    "SyntheticHierarchicalCorpus",
    "Text8",
    "TruncatedBPTTBatches",
    "WIKITEXT2_TEST_BYTES",
    "WIKITEXT2_TEST_WORDS",
    "Wikitext2Raw",
    "Wikitext2RawConfig",
    "char_corpus_builder",
    "count_words",
    "load_char_corpus",
    "read_split",
    "read_text_splits",
    "Utterances",
    "split_utterances",
    "PtbWord",
    "SentenceBatches",
    "SyntheticWordCorpus",
    "WORD_CORPUS_NAMES",
    "Wikitext2Word",
    "WordVocabulary",
    "load_word_corpus",
    "read_sentences",
    "word_corpus_builder",
    "Mee",
    "MeeConfig",
    "generate_mee_expressions",
    "LogicInference",
    "LogicInferenceConfig",
    "generate_logic_pairs",
    "IamOnDb",
    "IamOnDbConfig",
    "SyntheticStrokes",
    "read_stroke_split",
]
