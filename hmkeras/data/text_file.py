"""`read_text_splits`: train / validation / test text from your own files.

Any UTF-8 text file can be a character-level corpus. The validation and test
texts come from their own files when given; otherwise they are cut from the
end of the training file: its first `1 - valid_fraction - test_fraction` of
characters are the training text, then `valid_fraction` the validation text,
then `test_fraction` the test text (contiguous, in file order, so no
validation or test text has been seen in training). Files are decoded as
UTF-8 (a byte-order mark at the start is dropped) and kept exactly as they
are otherwise: line ends included.

Bad input raises at once, naming the argument: `FileNotFoundError` for a
missing file, `ValueError` for a directory, an empty or non-UTF-8 file,
fractions outside (0, 1) or summing to 1 or more, or a part that comes out
empty.

Examples:

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "book.txt")
    >>> with open(path, "w", encoding="utf-8") as f:
    ...     _ = f.write("0123456789" * 10)
    >>> train, valid, test = read_text_splits(path, valid_fraction=0.1,
    ...                                       test_fraction=0.2)
    >>> len(train), len(valid), len(test), valid[:3], test[:3]
    (70, 10, 20, '012', '012')
    >>> train + valid + test == "0123456789" * 10
    True
    >>> read_text_splits(path, test_fraction=1.0)
    Traceback (most recent call last):
    ...
    ValueError: `test_fraction` must be in (0, 1). Received: 1.0
"""

from __future__ import annotations

import os

__all__ = ["read_text_file", "read_text_splits", "split_text"]


def read_text_file(path, name="text_file") -> str:
    """The whole text of a non-empty UTF-8 file.

    Args:
      path: Path of the file (`~` is expanded).
      name: Name of the argument that gave `path`, used in the errors.

    Returns:
      The decoded text (without a leading UTF-8 byte-order mark).

    Raises:
      FileNotFoundError: `path` does not exist.
      ValueError: `path` is a directory, is empty or is not valid UTF-8.
      OSError: the file cannot be read (e.g. permissions).
    """
    if not path:
        raise ValueError(f"`{name}` must be the path of a text file. Received: {path!r}")
    full = os.path.expanduser(os.fspath(path))
    if os.path.isdir(full):
        raise ValueError(f"`{name}` must be a file; {path!r} is a directory.")
    if not os.path.exists(full):
        raise FileNotFoundError(f"`{name}` not found: {path!r} does not exist.")
    try:
        with open(full, "rb") as f:
            raw = f.read()
    except OSError as error:
        raise OSError(f"`{name}` {path!r} cannot be read: {error.strerror}.") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"`{name}` must be UTF-8 text; {path!r} is not: invalid byte(s) "
            f"{raw[error.start:error.end]!r} at byte offset {error.start}."
        ) from None
    if not text:
        raise ValueError(f"`{name}` {path!r} is empty.")
    return text


def _check_fraction(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
        0 < value < 1
    ):
        raise ValueError(f"`{name}` must be in (0, 1). Received: {value!r}")
    return float(value)


def split_text(text, valid_fraction=0.05, test_fraction=0.05, name="text_file"):
    """Cuts `text` into contiguous train, validation and test parts.

    Args:
      text: The whole text.
      valid_fraction: Share of the characters for the validation part, in
        (0, 1); None: no validation part (returned as None).
      test_fraction: Share for the test part, in (0, 1); None: no test part.
      name: Name of the argument the text came from, used in the errors.

    Returns:
      `(train, valid, test)`: the first characters, then `round(len(text) *
      valid_fraction)`, then the last `round(len(text) * test_fraction)`.

    Raises:
      ValueError: a fraction outside (0, 1), fractions summing to 1 or
        more, or a part that comes out empty.

    Examples:

        >>> split_text("abcdefghij", valid_fraction=0.2, test_fraction=None)
        ('abcdefgh', 'ij', None)
    """
    fractions = {"valid_fraction": valid_fraction, "test_fraction": test_fraction}
    fractions = {key: _check_fraction(key, value)
                 for key, value in fractions.items() if value is not None}
    if sum(fractions.values()) >= 1:
        raise ValueError(
            "`valid_fraction` + `test_fraction` must be below 1 (the rest is "
            f"the training text). Received: {valid_fraction!r} + {test_fraction!r}"
        )
    sizes = {key: round(len(text) * value) for key, value in fractions.items()}
    for key, size in sizes.items():
        if size == 0:
            part = "validation" if key == "valid_fraction" else "test"
            raise ValueError(
                f"The {part} part of `{name}` is empty: `{key}`={fractions[key]} "
                f"of {len(text)} characters. Use a longer text or a larger `{key}`."
            )
    valid_size = sizes.get("valid_fraction", 0)
    test_size = sizes.get("test_fraction", 0)
    train_size = len(text) - valid_size - test_size
    if train_size <= 0:
        raise ValueError(
            f"The training part of `{name}` is empty: {len(text)} characters "
            f"leave none after the validation ({valid_size}) and test "
            f"({test_size}) parts. Use a longer text or smaller fractions."
        )
    valid_end = train_size + valid_size
    return (
        text[:train_size],
        text[train_size:valid_end] if "valid_fraction" in sizes else None,
        text[valid_end:] if "test_fraction" in sizes else None,
    )


def read_text_splits(
    text_file,
    valid_file=None,
    test_file=None,
    valid_fraction=0.05,
    test_fraction=0.05,
    max_chars=None,
):
    """Training, validation and test text from UTF-8 files.

    Args:
      text_file: The training text; also the source of the validation and
        test parts that have no file of their own.
      valid_file: Optional file of the validation text. Without it the
        validation part is cut from `text_file` (after the training part).
      test_file: Optional file of the test text. Without it the test part
        is cut from the end of `text_file`.
      valid_fraction: Share of `text_file` for the validation part, in
        (0, 1); checked always, used without `valid_file`.
      test_fraction: Share of `text_file` for the test part, in (0, 1);
        checked always, used without `test_file`.
      max_chars: Optional positive int: only the first `max_chars`
        characters of `text_file` are used (split as above); None: all.

    Returns:
      `(train, valid, test)`: three non-empty strings.

    Raises:
      FileNotFoundError: a file does not exist (the error names the argument).
      ValueError: a directory, an empty or non-UTF-8 file, a fraction outside
        (0, 1), the fractions used summing to 1 or more, or a part that comes
        out empty (the error names the argument).

    Examples:

        >>> import pathlib, tempfile
        >>> from hmkeras.data import read_text_splits
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "prose.txt"
        >>> _ = path.write_text("abcdefghij" * 10)
        >>> train, valid, test = read_text_splits(path, valid_fraction=0.1, test_fraction=0.2)
        >>> len(train), len(valid), len(test)
        (70, 10, 20)
    """
    valid_fraction = _check_fraction("valid_fraction", valid_fraction)
    test_fraction = _check_fraction("test_fraction", test_fraction)
    if max_chars is not None and (
        isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1
    ):
        raise ValueError(f"`max_chars` must be None or an int >= 1, got {max_chars!r}.")
    text = read_text_file(text_file, "text_file")[:max_chars]
    valid = read_text_file(valid_file, "valid_file") if valid_file else None
    test = read_text_file(test_file, "test_file") if test_file else None
    train, cut_valid, cut_test = split_text(
        text,
        valid_fraction=None if valid is not None else valid_fraction,
        test_fraction=None if test is not None else test_fraction,
    )
    return (
        train,
        valid if valid is not None else cut_valid,
        test if test is not None else cut_test,
    )
