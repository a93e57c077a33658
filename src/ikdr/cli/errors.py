"""Errors of the command line: usage errors, and which exceptions report bad input.

A usage or input error exits with code 2 and one line; any other exception is a
failure of the library (exit code 1).
"""
from __future__ import annotations

import linecache
import os

from .io import InputError


class UsageError(ValueError):
    """A bad option, or options that do not go together (exit code 2)."""


# Where a deliberate ``raise ValueError/TypeError/MemoryError`` is a check of the caller's
# input: ikdr itself (its validation of data, parameters and the memory budget) and
# scikit-learn's parameter and array validation.
_CHECKING_CODE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_SKLEARN_CHECKS = ("validation.py", "_param_validation.py")


def is_input_error(exc):
    """True when ``exc`` reports bad input or usage, False for an unexpected failure.

    Input errors are the command line's own (:class:`UsageError`, unreadable or
    malformed files) and the ``ValueError``, ``TypeError`` or ``MemoryError`` (the
    memory budget) that ikdr or scikit-learn's validation raises on purpose with a
    ``raise`` statement. The same types raised elsewhere, such as by NumPy, SciPy,
    LAPACK or the C++ core below ikdr's own checks, or any other exception type,
    are failures of the library (exit 1).
    """
    if isinstance(exc, (InputError, UsageError, FileNotFoundError, PermissionError,
                        IsADirectoryError)):
        return True
    if not isinstance(exc, (ValueError, TypeError, MemoryError)):
        return False
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    filename = os.path.abspath(tb.tb_frame.f_code.co_filename)
    ours = filename.startswith(_CHECKING_CODE)
    sklearn_check = (os.sep + "sklearn" + os.sep in filename
                     and os.path.basename(filename) in _SKLEARN_CHECKS)
    if not (ours or sklearn_check):
        return False
    # a raise statement, not a call into compiled code that failed on that line
    return linecache.getline(filename, tb.tb_lineno).lstrip().startswith("raise")


def first_line(exc):
    """The first line of an exception's message (its type's name when it has none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
