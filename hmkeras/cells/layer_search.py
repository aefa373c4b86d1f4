"""`find_layers`: the layers of one kind inside a model, layer or cell.

Sub-layers are found through attributes (`RNN.cell`, a wrapper's `cell`,
`StackedRNNCells.cells`, a model's layers, a custom layer's parts), so
the search reaches cells held by any layer, not only by Keras' own.

Examples:

    >>> import keras, numpy as np, hmkeras
    >>> model = keras.Sequential([keras.Input((None, 3)),
    ...                           keras.layers.RNN(hmkeras.HMLSTMCell(4, num_layers=2))])
    >>> [type(cell).__name__
    ...  for cell in find_layers(model, lambda layer: isinstance(layer, hmkeras.HMLSTMCell))]
    ['HMLSTMCell']
"""

import keras


def find_layers(root, matches):
    """The objects inside `root` for which `matches(obj)` is true.

    Args:
        root: A model, layer, cell or a list of them.
        matches: A predicate; a matching object is returned and not
            searched further.

    Returns:
        The matching objects, each once, in the order found.
    """
    found, seen = [], set()

    def visit(obj):
        if obj is None or id(obj) in seen:
            return
        seen.add(id(obj))
        if matches(obj):
            found.append(obj)
            return
        if isinstance(obj, (list, tuple)):
            for child in obj:
                visit(child)
            return
        if not isinstance(obj, keras.layers.Layer):
            return
        for name, value in vars(obj).items():
            if name.startswith("_") and name != "_layers":
                continue
            visit(value)

    visit(root)
    return found
