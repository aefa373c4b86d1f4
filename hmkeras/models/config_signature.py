"""Models built from a configuration dataclass: their signature and arguments.

`CharLanguageModel`, `WordLanguageModel`, `HandwritingModel` and
`RecurrentRecursiveLanguageModel` take either a configuration object or its
fields as keyword arguments (`resolve_config`). Their signature is made from
the dataclass (one source of truth), so that `help()` and
`inspect.signature` list the fields; the configurations are written to and
read from JSON by `JsonConfig`:

Examples:

    >>> import dataclasses
    >>> @dataclasses.dataclass
    ... class Config:
    ...     units: int = 8
    ...     cell: str = "lstm"
    >>> str(keyword_signature(Config))
    "(config=None, *, units: int = 8, cell: str = 'lstm')"
"""

import dataclasses
import inspect
import json


def keyword_signature(config_class):
    """`(config=None, *, field=default, ...)` for the dataclass `config_class`.

    A field with a default factory shows the value it makes (`{}`); a
    field without a default gets `None` (the configuration's own checks
    then say what is missing).
    """
    parameters = [
        inspect.Parameter("config", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)
    ]
    for field in dataclasses.fields(config_class):
        default = field.default
        if field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        elif default is dataclasses.MISSING:
            default = None
        parameters.append(
            inspect.Parameter(
                field.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                annotation=field.type,
            )
        )
    return inspect.Signature(parameters)


class JsonConfig:
    """`to_json` and `from_json` of a configuration dataclass (its base class).

    `to_json` writes the fields as JSON (keys sorted, indented);
    `from_json` makes the configuration of such a text (a field it lacks
    takes its default).

    Examples:

        >>> @dataclasses.dataclass
        ... class Config(JsonConfig):
        ...     units: int = 8
        ...     cell: str = "hmlstm"
        >>> print(Config(units=4).to_json())
        {
          "cell": "hmlstm",
          "units": 4
        }
        >>> Config.from_json('{"units": 4}')
        Config(units=4, cell='hmlstm')
    """

    def to_json(self):
        """The fields as JSON text, keys sorted (`from_json` reads it)."""
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text):
        """The configuration of `text` (`to_json`'s JSON)."""
        return cls(**json.loads(text))


def resolve_config(config_class, config, fields, accept_dict=False):
    """The configuration a model was given: `config`, or one built from
    the keyword arguments `fields` (a dict) when `config` is None.

    Raises:
        ValueError: both were given, or `config` is not a `config_class`
            (nor, with `accept_dict`, a dict of its fields).
    """
    if config is None:
        return config_class(**fields)
    if fields:
        raise ValueError("Give either `config` or keyword arguments, not both.")
    if accept_dict and isinstance(config, dict):
        return config_class(**config)
    if not isinstance(config, config_class):
        raise ValueError(
            f"`config` must be a {config_class.__name__} or None. "
            f"Received: config={config!r}"
        )
    return config
