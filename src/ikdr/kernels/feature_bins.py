r"""Each feature's values in equal bins, for kernels on one feature at a time.

A Gaussian kernel on feature j alone, taken at bin centers, depends on the bin
gap only; its sums against a Gamma of rank r (:math:`\mathrm{Tr}(\Gamma K_j)`,
:math:`1^T K_j 1`) need, per bin, the number of rows in it and the sum of
their rows of Gamma's factor: :math:`O(n d r)` in one pass of the compiled core,
instead of an n x n kernel per feature (:mod:`ikdr.reduction.marginal`).
"""
from __future__ import annotations

import numpy as np

from .. import _native

__all__ = ["feature_bin_sums"]


def feature_bin_sums(X: np.ndarray, lo: np.ndarray, width: np.ndarray, bins: int,
                     weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(counts, sums): per feature j and bin b (row i's bin is ``floor((X[i, j] -
    lo[j]) / width[j])``, at most ``bins - 1``), how many rows fall in it (``counts``,
    d x bins) and the sum of their rows of ``weights`` (n x r; ``sums``, d x bins
    x r, added in row order: the same bits for any thread count). ``width``
    must be positive."""
    return _native.feature_bin_sums(X, lo, width, bins, weights)
