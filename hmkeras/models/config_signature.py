"""The signature of a model built from a configuration dataclass.

`CharLanguageModel`, `WordLanguageModel` and `HandwritingModel` take either a
configuration object or its fields as keyword arguments. Their signature is
made from the dataclass (one source of truth), so that `help()` and
`inspect.signature` list the fields:

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


def keyword_signature(config_class):
    """`(config=None, *, field=default, ...)` for the dataclass `config_class`.

    A field without a default gets `None` (the configuration's own checks
    then say what is missing).
    """
    parameters = [
        inspect.Parameter("config", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None)
    ]
    for field in dataclasses.fields(config_class):
        default = field.default if field.default is not dataclasses.MISSING else None
        parameters.append(
            inspect.Parameter(
                field.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                annotation=field.type,
            )
        )
    return inspect.Signature(parameters)
