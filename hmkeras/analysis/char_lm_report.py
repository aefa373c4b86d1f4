"""The report of a trained character language model: figures, summary, picture.

What a finished run of `examples/ptb_char.py` adds to its `results.json`
beyond `evaluate_char_model`, and how it prints them:

* `validation_logs`: the per-epoch validation figures (BPC, z rates).
* `more_boundary_scores`: every boundary layer against the words with one
  step of tolerance; on the synthetic corpus z^2 against the phrase ends.
* `segment_figures`: word-token scores of z^1 and a marked excerpt.
* `word_level_results`: bits/word and word perplexity (Krause et al.
  Eq. 23) of a byte-level WikiText-2 run.
* `summary_lines`: the results as the lines of a printed summary.
* `plot_excerpt`: Chung et al. Fig. 3/4 of a text excerpt.

Examples:

    >>> import numpy as np
    >>> figures = segment_figures(np.array([[0, 0], [1, 0], [0, 0], [1, 1]]), "ab cd",
    ...                           separators=" ", excerpt_chars=4)
    >>> figures["segment_excerpt"]
    'ab| c\u2016'
"""

import numpy as np

from hmkeras.analysis import boundary_metrics
from hmkeras.analysis.evaluation import evaluate_char_model
from hmkeras.analysis.segment_marks import mark_segments
from hmkeras.analysis.segmentation_plot import plot_segmentation
from hmkeras.data import wikitext2_raw

ALIGNMENT_NAMES = {"separator": "separator", "last_char": "last character",
                   "last_separator": "last separator"}


def as_text(text):
    """A split's text as a string (byte corpora read as Latin-1).

    Examples:

        >>> as_text(b"caf\\xe9"), as_text("abc")
        ('caf\u00e9', 'abc')
    """
    if isinstance(text, (bytes, bytearray)):
        return bytes(text).decode("latin-1")
    return text


def validation_logs(lm, ids, seq_len, batch_size, zrate_chars):
    """The per-epoch validation logs of `lm` on `ids`: `val_bpc` and, for a
    hierarchical model, `val_z_rate_<l>` of every boundary layer and
    `val_z_ratio` (measured on the first `zrate_chars` symbols, batch 1).

    Examples:

        >>> from hmkeras.models.char_language_model import CharLanguageModel
        >>> from hmkeras.models.char_language_model import CharLanguageModelConfig
        >>> lm = CharLanguageModel(CharLanguageModelConfig(
        ...     vocab_size=5, cell="hmlstm", units=4, embedding_dim=3, output="none"))
        >>> sorted(validation_logs(lm, np.arange(60) % 5, 10, 2, 30))
        ['val_bpc', 'val_z_rate_1', 'val_z_rate_2', 'val_z_ratio']
    """
    logs = {"val_bpc": evaluate_char_model(lm, ids, seq_len=seq_len,
                                           batch_size=batch_size, verbose=0).bpc}
    if lm.is_hierarchical:
        sliced = evaluate_char_model(lm, ids[:zrate_chars], seq_len=seq_len, verbose=0)
        for layer, rate in enumerate(sliced.z_rates):
            logs[f"val_z_rate_{layer + 1}"] = rate
        if sliced.z_ratio is not None:
            logs["val_z_ratio"] = sliced.z_ratio
    return logs


def more_boundary_scores(boundaries, references):
    """Boundary figures beyond `evaluate_char_model`'s, for results.json.

    `boundary_scores_tolerance_1`: every layer against the words, one step
    of tolerance. With phrase references (synthetic corpus) and a second
    boundary layer, `phrase_boundary_scores` and
    `phrase_boundary_scores_tolerance_1`: z^2 against the phrase ends. Each
    entry is an `AlignedBoundaryScores.as_dict()`: the scores of every
    alignment, the best one (`alignment`) and its figures.

    Args:
        boundaries: The `(T, L-1)` boundaries of the test text.
        references: `{unit: {alignment: 0/1 array}}`, units `"words"` and
            optionally `"phrases"`.

    Returns:
        A JSON-able dict.
    """

    def cut(unit):
        return {name: values[: boundaries.shape[0]]
                for name, values in references[unit].items()}

    out = {"boundary_scores_tolerance_1": [
        scores.as_dict()
        for scores in boundary_metrics.layer_boundary_scores(boundaries, cut("words"), 1)
    ]}
    if "phrases" in references and boundaries.shape[1] >= 2:
        for tolerance, key in ((0, "phrase_boundary_scores"),
                               (1, "phrase_boundary_scores_tolerance_1")):
            scores = boundary_metrics.aligned_boundary_scores(
                boundaries[:, 1], cut("phrases"), tolerance)
            out[key] = {"layer": 2, **scores.as_dict()}
    return out


def segment_figures(boundaries, text, separators, excerpt_chars):
    """Word-token scores of z^1 and a marked excerpt, for results.json.

    Args:
        boundaries: The `(T, L-1)` boundaries of the test text, step `t`
            after reading `text[t]`.
        text: The test text (at least `T` characters).
        separators: The characters between its words.
        excerpt_chars: Length of the excerpt.

    Returns:
        `{"token_scores": BoundaryScores._asdict() of z^1 against the
        words, "segment_excerpt": the first characters with "|" after
        every z^1 and "\u2016" after every higher boundary}`.
    """
    text = text[: boundaries.shape[0]]
    scores = boundary_metrics.token_scores(boundaries[:, 0], text, separators)
    return {
        "token_scores": {name: value.item() if hasattr(value, "item") else value
                         for name, value in scores._asdict().items()},
        "segment_excerpt": mark_segments(text[:excerpt_chars], boundaries[:excerpt_chars]),
    }


def word_level_results(test, test_text):
    """Bits/char, bits/word and word perplexity of WikiText-2 (Krause Eq. 23).

    The word count is the published 245,569 words when `test_text` is the
    whole test set (1,256,449 bytes, Krause et al. Section 4.4), else
    `hmkeras.data.wikitext2_raw.count_words(test_text)`; `num_words_source`
    says which.

    Args:
        test: The `EvaluationResult` of `test_text`.
        test_text: The evaluated bytes.

    Returns:
        A JSON-able dict.
    """
    if len(test_text) == wikitext2_raw.WIKITEXT2_TEST_BYTES:
        num_words = wikitext2_raw.WIKITEXT2_TEST_WORDS
        source = "published (Krause et al. 2017, Section 4.4): the whole test set"
    else:
        num_words = wikitext2_raw.count_words(bytes(test_text))
        source = f"count_words over the {len(test_text):,} evaluated bytes"
    figures = test.word_level(num_words, num_symbols=len(test_text))
    return {**figures.as_dict(), "num_words_source": source}


def plot_excerpt(lm, vocab, excerpt, path, name):
    """Chung et al. Fig. 3/4 of `excerpt` read by `lm` (from zero state),
    written to `path` (PNG); returns `path`.

    Args:
        lm: A `CharLanguageModel`.
        vocab: Its `CharVocabulary`.
        excerpt: The text (str or bytes).
        path: The PNG file.
        name: The model's name in the title (e.g. the cell).
    """
    ids = vocab.encode(excerpt)[None]
    # Keras' compiled predict function: an eager call runs the recurrence op by op.
    _, rnn_outputs, *_ = lm.network.predict_on_batch([ids, *lm.zero_state(1)])
    hiddens = [np.asarray(h)[0] for h in lm.hiddens(rnn_outputs)]
    excerpt = as_text(excerpt)
    if lm.is_hierarchical:
        boundaries = np.asarray(lm.boundaries(rnn_outputs))[0]
        title = f"{name}: boundaries z^l (white = 1) and ||h^l||"
    else:
        hiddens, boundaries = [hiddens[-1]], None
        title = f"{name}: no boundary detectors; ||h|| of the top layer"
    plot_segmentation(path, excerpt, hiddens, boundaries, title=title)
    return path


def boundary_line(label, scores, loose=None):
    """`z^1 vs words: P .. R .. F1 .. (aligned on: last character; separator
    F1 ..; tolerance 1: F1 ..)` from `AlignedBoundaryScores.as_dict()`s.

    Examples:

        >>> s = {"precision": 0.5, "recall": 1.0, "f1": 0.667, "alignment": "last_char",
        ...      "by_alignment": {"last_char": {"f1": 0.667}, "separator": {"f1": 0.2}}}
        >>> boundary_line("z^1 vs words", s, {"f1": 0.8})
        'z^1 vs words: P 0.500 R 1.000 F1 0.667 (aligned on: last character; separator F1 0.200; tolerance 1: F1 0.800)'
    """
    notes = [f"aligned on: {ALIGNMENT_NAMES.get(scores['alignment'], scores['alignment'])}"]
    notes += [f"{ALIGNMENT_NAMES.get(name, name)} F1 {other['f1']:.3f}"
              for name, other in scores["by_alignment"].items()
              if name != scores["alignment"]]
    if loose is not None:
        notes.append(f"tolerance 1: F1 {loose['f1']:.3f}")
    return (f"{label}: P {scores['precision']:.3f} R {scores['recall']:.3f} "
            f"F1 {scores['f1']:.3f} ({'; '.join(notes)})")


def summary_lines(r):
    """The printed summary of a results dict (`results.json`), as lines.

    Examples:

        >>> print("\\n".join(summary_lines({
        ...     "cell": "lstm", "parameters": 1234, "epochs": 2, "wall_seconds": 3.2,
        ...     "test_bpc": 2.5, "test_symbols": 100, "segmentation_png": "s.png",
        ...     "step_model": "step_model"})))
        <BLANKLINE>
        === results ===
        cell lstm, 1,234 parameters, 2 epochs, 3 s
        test BPC 2.5000
        wrote s.png and step_model
    """
    lines = ["\n=== results ===",
             f"cell {r['cell']}, {r['parameters']:,} parameters, {r['epochs']} epochs, "
             f"{r['wall_seconds']:.0f} s"]
    line = f"test BPC {r['test_bpc']:.4f}"
    test_unknown = (r.get("unknown_symbols") or {}).get("test")
    if test_unknown:
        line += (f" ({test_unknown['count']:,} of the {r['test_symbols']:,} test symbols "
                 "are unknown to the training text, scored as the unknown symbol)")
    if "true_entropy_rate_bits_per_char" in r:
        line += (f"  vs true entropy rate {r['true_entropy_rate_bits_per_char']:.4f}"
                 f" (this test sample: {r['true_test_bits_per_char']:.4f})")
    lines.append(line)
    for split, found in (r.get("unknown_symbols") or {}).items():
        lines.append(f"unknown symbols in {split}: {found['count']:,} mapped to the unknown "
                     f"symbol ({len(found['symbols'])} distinct: {found['symbols'][:20]})")
    if r.get("word_level"):
        w = r["word_level"]
        lines.append(f"Krause Eq. 23: {w['bits_per_char']:.4f} bits/char x "
                     f"{w['num_symbols']:,} bytes / {w['num_words']:,} words "
                     f"({w['num_words_source']}) = {w['bits_per_word']:.4f} bits/word, "
                     f"word perplexity {w['word_perplexity']:.2f}")
    if r.get("z_rates") is not None:
        lines.append("z rates " + ", ".join(f"z^{i + 1} {v:.3f}"
                                            for i, v in enumerate(r["z_rates"]))
                     + (f"; z-ratio {r['z_ratio']:.3f}" if r.get("z_ratio") is not None
                        else ""))
    for layer, scores in enumerate(r.get("boundary_scores") or []):
        loose = r.get("boundary_scores_tolerance_1")
        lines.append(boundary_line(f"z^{layer + 1} vs words", scores,
                                   loose[layer] if loose else None))
    if r.get("phrase_boundary_scores"):
        lines.append(boundary_line(f"z^{r['phrase_boundary_scores']['layer']} vs phrases",
                                   r["phrase_boundary_scores"],
                                   r.get("phrase_boundary_scores_tolerance_1")))
    if r.get("token_scores"):
        t = r["token_scores"]
        lines.append(f"z^1 segments vs words (tokens): P {t['precision']:.3f} "
                     f"R {t['recall']:.3f} F1 {t['f1']:.3f}")
    if r.get("segment_excerpt"):
        lines.append("test text, | after z^1, \u2016 after z^2 and above:")
        lines.append(r["segment_excerpt"])
    if r.get("word_discovery"):
        lines += word_discovery_lines(r["word_discovery"])
    written = [r["segmentation_png"], r.get("step_model")]
    lines.append("wrote " + " and ".join(path for path in written if path))
    return lines


# The rows of the word-discovery table: results key and label.
_WORD_DISCOVERY_ROWS = (
    ("z1", "z^1 (this model)"),
    ("z2", "z^2 (this model)"),
    ("entropy", "entropy rises (this model)"),
    ("surprisal", "surprisal rises (this model)"),
    ("bidirectional", "both directions' rises"),
    ("lstm", "LSTM entropy rises"),
    ("lstm_surprisal", "LSTM surprisal rises"),
    ("transition_probability", "transition probability"),
    ("random", "random at the gold rate"),
)


def word_discovery_lines(w):
    """The summary of `results["word_discovery"]`: one row per segmenter
    (boundary P / R / F1 without the utterance edges, token and lexicon
    F1, boundary rate), then test lines as found beside their gold words.

    Examples:

        >>> scores = {"boundary": {"precision": 0.5, "recall": 0.25, "f1": 0.333},
        ...           "token": {"f1": 0.2}, "lexicon": {"f1": 0.1}, "rate": 0.1}
        >>> print("\\n".join(word_discovery_lines({
        ...     "num_utterances": 2, "gold_rate": 0.3, "scored": True, "primary": "entropy",
        ...     "entropy": scores, "segmented_file": "t.txt",
        ...     "examples": [{"gold": "a b", "found": "ab"}]})))
        word discovery, 2 test utterances (gold boundary rate 0.300):
          segmenter                       boundary P      R     F1  token F1  lexicon F1   rate
          entropy rises (this model)           0.500  0.250  0.333     0.200       0.100  0.100
        found (gold) in t.txt:
          ab  (a b)
    """
    if not w["scored"]:
        lines = [f"word discovery, {w['num_utterances']:,} test utterances: no spaces in "
                 "the test text, so no gold words to score against"]
    else:
        lines = [f"word discovery, {w['num_utterances']:,} test utterances (gold boundary "
                 f"rate {w['gold_rate']:.3f}):",
                 f"  {'segmenter':<32}{'boundary P':>10}{'R':>7}{'F1':>7}"
                 f"{'token F1':>10}{'lexicon F1':>12}{'rate':>7}"]
        lines += [_word_discovery_row(key, label, w[key])
                  for key, label in _WORD_DISCOVERY_ROWS if key in w]
    lines.append(f"found (gold) in {w['segmented_file']}:")
    lines += [f"  {e['found']}  ({e['gold']})" for e in w["examples"]]
    return lines


def _word_discovery_row(key, label, row):
    """One segmenter's line of `word_discovery_lines`."""
    if key == "lstm":  # the same-size LSTM's run (lstm_baseline/)
        label += f" (BPC {row['test_bpc']:.3f})"
    b = row["boundary"]
    return (f"  {label:<32}{b['precision']:>10.3f}{b['recall']:>7.3f}{b['f1']:>7.3f}"
            f"{row['token']['f1']:>10.3f}{row['lexicon']['f1']:>12.3f}{row['rate']:>7.3f}")
