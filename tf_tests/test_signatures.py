"""Every public class has an explicit, documented, serializable signature.

* Every argument of a class's docstring `Args` section (`Attributes` for
  the dataclasses) is an explicit parameter of its signature, and every
  explicit parameter is documented there.
* `**kwargs` is left only where it carries Keras' base-layer / base-model
  arguments (`name`, `dtype`, ...); an unknown keyword is refused.
* `get_config()` has a key for every explicit parameter, is JSON-able, and
  `cls.from_config(obj.get_config())` gives an equal config.
"""

import dataclasses
import inspect
import json
import re

import keras
import numpy as np
import pytest

import hmkeras
from hmkeras.cells import sequence_layer

PUBLIC_CLASSES = sorted(
    {getattr(hmkeras, name) for name in hmkeras.__all__
     if inspect.isclass(getattr(hmkeras, name))},
    key=lambda cls: cls.__name__,
)
# Models that take a configuration or its fields (documented by the
# configuration's `Attributes`; the signature is made from the dataclass).
CONFIGURED_MODELS = {
    hmkeras.CharLanguageModel: hmkeras.CharLanguageModelConfig,
    hmkeras.WordLanguageModel: hmkeras.WordLanguageModelConfig,
    hmkeras.HandwritingModel: hmkeras.HandwritingModelConfig,
    hmkeras.RecurrentRecursiveLanguageModel: hmkeras.RecurrentRecursiveLanguageModelConfig,
}
# Classes whose arguments are not documented in their own Args section.
WARNINGS = [cls for cls in PUBLIC_CLASSES if issubclass(cls, Warning)]
DOCUMENTED = [cls for cls in PUBLIC_CLASSES
              if cls not in WARNINGS and cls is not hmkeras.HierarchicalCell]

_ENTRY = re.compile(r"(\*{0,2}\w+(?:, \*{0,2}\w+)*):(?:\s|$)")


def documented_arguments(cls):
    """Names of the entries of the `Args:` (dataclasses: `Attributes:`)
    section of `cls`'s docstring; an entry may name several arguments
    (`kernel_regularizer, recurrent_regularizer, bias_regularizer:`)."""
    header = "Attributes:" if dataclasses.is_dataclass(cls) else "Args:"
    lines = inspect.getdoc(cls).splitlines()
    start = lines.index(header) + 1
    indent, names = None, []
    for line in lines[start:]:
        if line.strip() and not line.startswith(" "):
            break  # the next section
        if not line.strip():
            continue
        width = len(line) - len(line.lstrip())
        indent = width if indent is None else indent
        if width == indent:
            match = _ENTRY.match(line.strip())
            assert match, f"{cls.__name__}: not an Args entry: {line!r}"
            names.extend(name.strip() for name in match.group(1).split(","))
    return names


def explicit_parameters(cls):
    return {
        name: p for name, p in inspect.signature(cls).parameters.items()
        if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    }


def test_every_public_class_is_covered():
    names = {cls.__name__ for cls in PUBLIC_CLASSES}
    assert {"HMLSTMCell", "HMRNNCell", "MultiplicativeLSTMCell",
            "GatedOutputEmbedding", "SimpleOutputEmbedding", "SlopeAnnealing",
            "BoundaryMonitor", "BoundaryPrior", "TruncatedBPTTModel",
            "TrainingCheckpoint", "CharLanguageModel",
            "CharLanguageModelConfig"} <= names
    assert WARNINGS == [hmkeras.BoundaryCollapseWarning]


@pytest.mark.parametrize("cls", DOCUMENTED, ids=lambda cls: cls.__name__)
def test_documented_arguments_are_explicit_parameters(cls):
    documented = documented_arguments(cls)
    assert documented, f"{cls.__name__} documents no arguments"
    parameters = explicit_parameters(cls)
    for name in documented:
        if name.startswith("**"):
            continue
        assert name in parameters, (
            f"{cls.__name__}: `{name}` is documented but hidden from the "
            f"signature {inspect.signature(cls)}"
        )


@pytest.mark.parametrize("cls", DOCUMENTED, ids=lambda cls: cls.__name__)
def test_explicit_parameters_are_documented(cls):
    documented = set(documented_arguments(cls))
    parameters = explicit_parameters(cls)
    if cls in CONFIGURED_MODELS:
        # The configuration's fields, documented by the configuration.
        fields = [f.name for f in dataclasses.fields(CONFIGURED_MODELS[cls])]
        assert list(parameters) == ["config"] + fields
        assert all(parameters[f].kind is inspect.Parameter.KEYWORD_ONLY for f in fields)
        parameters = {"config": parameters["config"]}
    undocumented = set(parameters) - documented
    assert not undocumented, f"{cls.__name__}: undocumented {sorted(undocumented)}"


@pytest.mark.parametrize("cls", DOCUMENTED, ids=lambda cls: cls.__name__)
def test_var_keyword_only_for_keras_base_arguments(cls):
    kinds = [p.kind for p in inspect.signature(cls).parameters.values()]
    assert inspect.Parameter.VAR_POSITIONAL not in kinds
    if cls in CONFIGURED_MODELS:
        return  # its keyword-only arguments are the configuration's fields
    if inspect.Parameter.VAR_KEYWORD in kinds:
        assert issubclass(cls, keras.layers.Layer), cls  # keras.Model too
        assert "**kwargs" in documented_arguments(cls)


def args_entries(cls):
    """`{entry's names: its text, dedented}` of `cls`'s Args section, in
    order; the names are a tuple (`kernel_regularizer, bias_regularizer:`
    documents two arguments)."""
    lines = inspect.getdoc(cls).splitlines()
    entries, names = {}, None
    for line in lines[lines.index("Args:") + 1:]:
        if line.strip() and not line.startswith(" "):
            break  # the next section
        match = _ENTRY.match(line[4:]) if line.startswith("    ") and line[4] != " " else None
        if match:
            names = tuple(name.strip() for name in match.group(1).split(","))
            entries[names] = [line[4:]]
        elif names is not None:
            entries[names].append(line[4:] if line.strip() else "")
    return {names: "\n".join(text).strip() for names, text in entries.items()}


SEQUENCE_LAYERS = [hmkeras.HMLSTM, hmkeras.HMRNN, hmkeras.MultiplicativeLSTM]


@pytest.mark.parametrize("cls", SEQUENCE_LAYERS, ids=lambda cls: cls.__name__)
def test_sequence_layer_documents_its_signature_in_order(cls):
    """The written Args of a sequence layer: its signature's arguments in
    order, the cell's word for word as the cell documents them."""
    entries = args_entries(cls)
    assert [name for names in entries for name in names] == [
        ("**" if p.kind is p.VAR_KEYWORD else "") + name
        for name, p in inspect.signature(cls).parameters.items()
    ]
    cell_entries = args_entries(cls.cell_class)
    cell_arguments = set(explicit_parameters(cls.cell_class))
    for names, text in entries.items():
        if set(names) <= cell_arguments:
            assert cell_entries.get(names) == text, (cls.__name__, names)


@pytest.mark.parametrize("cls", SEQUENCE_LAYERS, ids=lambda cls: cls.__name__)
def test_sequence_layer_init_is_explicit_and_takes_its_cells_arguments(cls):
    """The layer's own `__init__` (what IDEs and `help()` read) has the
    cell's parameters (names, kinds, defaults, in order), the layer's own,
    the keyword-only RNN arguments and `**kwargs`; each reaches the cell."""
    assert "__init__" in vars(cls) and "__signature__" not in vars(cls)
    parameters = list(inspect.signature(cls).parameters.values())
    cell = [p for p in inspect.signature(cls.cell_class).parameters.values()
            if p.kind is not p.VAR_KEYWORD]
    assert parameters[:len(cell)] == cell
    rest = parameters[len(cell):]
    own = ["boundary_prior", "segment_lengths"] if cls is not hmkeras.MultiplicativeLSTM else []
    assert [p.name for p in rest] == [*own, *sequence_layer.RNN_ARGUMENTS, "kwargs"]
    assert all(p.kind is p.KEYWORD_ONLY for p in rest[:-1])
    assert all(p.default is False for p in rest[len(own):-1])
    # Every cell argument given to the layer reaches its cell.
    instance = SERIALIZABLE[cls.cell_class.__name__]()
    cell_config = instance.get_config()
    given = {p.name: cell_config[p.name] for p in cell}
    layer = cls(**given)
    assert {k: layer.cell.get_config()[k] for k in given} == given


def test_hierarchical_base_has_the_shared_signature():
    base = inspect.signature(hmkeras.HierarchicalCell).parameters
    assert base == inspect.signature(hmkeras.HMRNNCell).parameters
    lstm = dict(inspect.signature(hmkeras.HMLSTMCell).parameters)
    assert lstm.pop("copy_last").default is False
    assert lstm.pop("forget_bias").default == 1.0
    assert lstm == dict(base)


@pytest.mark.parametrize("cls", [hmkeras.HMLSTMCell, hmkeras.HMRNNCell])
def test_hm_cells_positional_units_and_num_layers(cls):
    cell = cls(6, 2)
    assert cell.units == [6, 6]
    parameters = list(inspect.signature(cls).parameters.values())
    assert [p.name for p in parameters[:2]] == ["units", "num_layers"]
    assert all(p.kind is p.KEYWORD_ONLY for p in parameters[2:-1])
    with pytest.raises(TypeError):
        cls(6, 2, "step")  # no silent re-binding of old positional arguments
    with pytest.raises(ValueError, match="Unrecognized keyword arguments"):
        cls(6, foo=1)


# One instance per serializable class, with non-default values (NumPy
# scalars among them, stored as Python numbers).
SERIALIZABLE = {
    "HMLSTMCell": lambda: hmkeras.HMLSTMCell(
        np.int64(5), np.int32(2), boundary_mode="sample", slope=np.float32(2.0),
        layer_norm=False, layer_norm_gain=np.float64(0.5), top_down=False,
        copy_last=True, boundary_bias=np.float32(-1.0), forget_bias=np.int64(2),
        kernel_initializer="he_normal", recurrent_initializer="glorot_normal",
        boundary_initializer="zeros", bias_initializer="ones",
        kernel_regularizer="l2", recurrent_regularizer="l1",
        bias_regularizer=keras.regularizers.L1L2(0.1, 0.2), kernel_constraint="non_neg",
        recurrent_constraint="unit_norm", bias_constraint="max_norm",
        dropout=np.float32(0.25), recurrent_dropout=0.5, seed=np.int64(7),
        name="hm"),
    "HMRNNCell": lambda: hmkeras.HMRNNCell(
        [np.int64(4), 3], boundary_mode="soft", slope=3, layer_norm=False,
        layer_norm_gain=1, top_down=False, boundary_bias=1,
        kernel_initializer="he_normal", recurrent_initializer="glorot_normal",
        boundary_initializer="zeros", bias_initializer="ones",
        kernel_regularizer="l2", recurrent_regularizer="l1",
        bias_regularizer=keras.regularizers.L1L2(0.1, 0.2), kernel_constraint="non_neg",
        recurrent_constraint="unit_norm", bias_constraint="max_norm",
        dropout=0.5, recurrent_dropout=np.float64(0.25), seed=3),
    "HierarchicalCell": lambda: hmkeras.HierarchicalCell(
        4, 2, slope=2.0, dropout=0.5, seed=1),
    "MultiplicativeLSTMCell": lambda: hmkeras.MultiplicativeLSTMCell(
        np.int64(4), multiplicative_units=np.int32(6), activation="relu",
        recurrent_activation="hard_sigmoid", use_bias=False,
        kernel_initializer="he_normal", recurrent_initializer="glorot_normal",
        bias_initializer="ones", forget_bias=np.float32(1.0),
        recurrent_init_scale=np.float64(0.5), weight_normalization=True,
        kernel_regularizer="l2", recurrent_regularizer="l1",
        bias_regularizer=keras.regularizers.L1L2(0.1, 0.2), kernel_constraint="non_neg",
        recurrent_constraint="unit_norm", bias_constraint="max_norm",
        dropout=0.5, recurrent_dropout=0.25, seed=np.int64(2)),
    "GatedOutputEmbedding": lambda: hmkeras.GatedOutputEmbedding(
        np.int64(6), layer_sizes=np.array([4, 4]), use_bias=True,
        kernel_initializer="he_normal", gate_initializer="ones",
        bias_initializer="ones", gate_bias_initializer="ones",
        kernel_regularizer="l2", gate_regularizer="l1",
        bias_regularizer=keras.regularizers.L1L2(0.1, 0.2), activity_regularizer="l2",
        kernel_constraint="non_neg", gate_constraint="unit_norm",
        bias_constraint="max_norm"),
    "SimpleOutputEmbedding": lambda: hmkeras.SimpleOutputEmbedding(
        6, layer_sizes=[np.int32(4), 4], use_bias=np.True_,
        kernel_initializer="he_normal", bias_initializer="ones",
        kernel_regularizer="l2", bias_regularizer="l1",
        activity_regularizer="l2", kernel_constraint="non_neg",
        bias_constraint="max_norm"),
    "BoundaryPlacement": lambda: hmkeras.BoundaryPlacement(weight=np.float32(0.5)),
    "BoundaryPlacementLoss": lambda: hmkeras.BoundaryPlacementLoss(
        boundary_layers=np.int64(3), weight=np.float64(2.0), name="placement"),
    "BoundaryPrior": lambda: hmkeras.BoundaryPrior(
        [np.float32(4.0), 12], form="rate", weight=np.float64(2.0)),
    "RNN": lambda: hmkeras.RNN(
        hmkeras.HMLSTMCell(4, num_layers=2, dropout=0.25, seed=1), return_sequences=True,
        return_state=True, go_backwards=True, stateful=False, unroll=False,
        zero_output_for_mask=True, name="loop"),
    "HMLSTM": lambda: hmkeras.HMLSTM(
        np.int64(5), np.int32(2), boundary_mode="sample", slope=np.float32(2.0),
        layer_norm=False, copy_last=True, boundary_bias=-1.0, dropout=0.25,
        seed=np.int64(7), sparse_updates=False, return_sequences=True,
        return_state=True, go_backwards=True, stateful=False, unroll=False,
        zero_output_for_mask=True, name="hm"),
    "HMRNN": lambda: hmkeras.HMRNN(
        [np.int64(4), 3], boundary_mode="step", top_down=False,
        recurrent_dropout=np.float64(0.25), seed=3, sparse_updates=True,
        return_sequences=True),
    "MultiplicativeLSTM": lambda: hmkeras.MultiplicativeLSTM(
        np.int64(4), multiplicative_units=np.int32(6), weight_normalization=True,
        forget_bias=np.float32(1.0), dropout=0.5, seed=np.int64(2),
        return_state=True, go_backwards=True),
    "RecurrentRecursiveCell": lambda: hmkeras.RecurrentRecursiveCell(
        np.int64(6), np.int32(3), "reinforce", kernel_initializer="he_normal",
        recurrent_initializer="glorot_normal", bias_initializer="ones",
        operations_per_token=np.int32(2), memory="tree", seed=np.int64(4)),
    "MixtureDensityOutput": lambda: hmkeras.MixtureDensityOutput(
        np.int64(3), kernel_initializer="he_normal", bias_initializer="ones",
        kernel_regularizer="l2"),
    "TiedEmbedding": lambda: hmkeras.TiedEmbedding(
        np.int64(11), np.int32(4), embeddings_initializer="he_normal",
        use_bias=np.False_),
    "AveragingWrapper": lambda: hmkeras.AveragingWrapper(
        hmkeras.HMLSTMCell(4, 2, slope=2.0), units=np.int64(5), include_current=np.True_,
        activation="relu", hierarchy_layers="top", reset_token_id=np.int32(3),
        reset_flag=False, return_cell_output=True, kernel_initializer="he_normal",
        bias_initializer="ones", kernel_regularizer="l2", bias_regularizer="l1",
        name="averaging"),
    "AttentionWrapper": lambda: hmkeras.AttentionWrapper(
        keras.layers.LSTMCell(4), np.int64(6), "combined", attention_units=np.int32(3),
        units=2, activation="tanh", return_attention=True, hierarchy_layers="top",
        reset_token_id=None, reset_flag=True, return_cell_output=True,
        kernel_initializer="he_normal", bias_initializer="ones",
        kernel_regularizer="l2", bias_regularizer="l1"),
}


def test_every_class_with_a_config_is_tested():
    with_config = {cls.__name__ for cls in PUBLIC_CLASSES
                   if hasattr(cls, "from_config") and not issubclass(cls, keras.Model)}
    assert with_config == set(SERIALIZABLE)


@pytest.mark.parametrize("name", sorted(SERIALIZABLE))
def test_config_covers_the_signature_and_round_trips(name):
    obj = SERIALIZABLE[name]()
    cls = type(obj)
    config = obj.get_config()
    missing = set(explicit_parameters(cls)) - set(config)
    assert not missing, f"{name}.get_config() lacks {sorted(missing)}"
    json.dumps(config)  # Python numbers only: NumPy scalars were converted
    again = cls.from_config(config)
    assert again.get_config() == config
