"""Type aliases of ikdr's public signatures (for annotations only)."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Union

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import DTypeLike as DTypeLike


#: array-like input (an ndarray, a list of lists, a DataFrame, ...). Any, not
#: numpy.typing.ArrayLike: the inputs are validated by scikit-learn's
#: (untyped) check_array, and sparse matrices are accepted in places.
ArrayLike = Any
if not TYPE_CHECKING:  # at run time the aliases need not be precise: nothing evaluates them
    DTypeLike = object

#: ``random_state`` as scikit-learn takes it
RandomStateLike = Union[int, np.random.RandomState, np.random.Generator, None]
#: a file path
PathLike = Union[str, "os.PathLike[str]"]
#: a bandwidth: a positive number or a rule such as ``"median"``
SigmaLike = Union[float, str]

__all__ = ["ArrayLike", "DTypeLike", "PathLike", "RandomStateLike", "SigmaLike"]
