"""The one row sampler: every seeded subsample of rows in ikdr is drawn here.

The median rule, the separation rule, the landmark path's kernel fit, the
labels that go with those rows and KDAC's dependence test must draw the same
rows for the same ``random_state``, in memory, from a memmap or from a Dask
array alike; one function makes that true by construction. The pairs of rows
whose distances give each feature's median bandwidth
(:func:`ikdr.kernels.bandwidth.feature_median_distances`) are drawn here too,
by :func:`sample_pairs`.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

__all__ = ["sample_index", "sample_rows", "rows_at", "sample_pairs"]


def sample_index(n, max_samples, random_state=None):
    """Indices of at most ``max_samples`` of n rows, in draw order (None: all rows).

    ``random_state`` may be a ``RandomState`` that successive draws share
    (the two point sets of a two-set median).
    """
    if n <= max_samples:
        return None
    return check_random_state(random_state).choice(n, max_samples, replace=False)


def sample_rows(X, max_samples, random_state=None, *, dtype=np.float64):
    """The rows :func:`sample_index` draws, in draw order, as a float64 array
    (a CSR matrix for sparse X).

    The rows are read in increasing order (a memmap or a Dask array is read
    once, block by block, never whole) and put back into draw order.
    """
    return rows_at(X, sample_index(X.shape[0], max_samples, random_state), dtype=dtype)


def rows_at(X, idx, *, dtype=np.float64):
    """The rows ``idx`` of X (None: all of them), in the order of ``idx``, as a
    float64 array (a CSR matrix for sparse X); a memmap or a Dask array is read
    once, in increasing row order."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        rows = X if idx is None else X[idx]
        return rows.astype(dtype)
    if idx is None:
        return np.asarray(X, dtype=dtype)
    order = np.argsort(idx)
    rows = np.asarray(X[idx[order]])
    # back into draw order, cast on the way (no second copy in dtype)
    out = np.empty((idx.shape[0],) + rows.shape[1:], dtype=dtype)
    out[order] = rows
    return out


def sample_pairs(n, max_pairs, random_state=None):
    """Pairs of distinct rows of n (2 x m, m at most ``min(4 n, max_pairs)``): that
    many pairs drawn uniformly with replacement by ``random_state``, those of a row
    with itself left out. Dense and sparse X draw the same pairs for the same seed."""
    pairs = check_random_state(random_state).randint(0, n, size=(2, min(4 * n, max_pairs)))
    return pairs[:, pairs[0] != pairs[1]]
