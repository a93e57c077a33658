"""Sparse rows (``scipy.sparse``): the one check, column statistics and a start basis.

Nothing here forms X densely: every function costs O(nnz) (times the columns
of a dense right-hand side) and returns arrays of n, d or d x r entries.
Sparse X is held as a CSR matrix with sorted indices and no duplicate
entries, in float64 or float32 (:func:`canonical_csr`): CSC, COO and the
other formats are converted once, never the caller's matrix modified.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state
from sklearn.utils.extmath import randomized_svd

from .validation import FLOAT_DTYPES, check_magnitude

__all__ = ["canonical_csr", "check_sparse", "column_counts", "column_moments", "start_basis",
           "stored_columns", "START_COMPONENTS", "CLUSTERING_MAX_FEATURES"]

#: columns W may use in a clustering of sparse X (:func:`stored_columns`): the
#: W-steps form the d x d Phi up to this width and precondition their trust
#: region, whose cost grows as d^3; on the cell counts of ``benchmarks/bench_sparse.py``
#: 512 columns find the same markers and clusters as all of them, at a fraction
#: of the time
CLUSTERING_MAX_FEATURES = 512
#: columns of the start basis (:func:`start_basis`): the first U-step of the clustering
#: estimators clusters X projected on this many leading right singular vectors
START_COMPONENTS = 20


def canonical_csr(X):
    """X as a ``csr_matrix`` with sorted indices and no duplicates, float32 or float64
    (other dtypes become float64): one O(nnz) copy where X is in another format,
    dtype or order; the caller's matrix is never modified."""
    copied = not (sp.isspmatrix_csr(X) or getattr(X, "format", None) == "csr")
    X = sp.csr_matrix(X)            # a CSR array becomes a matrix without a copy
    if X.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        if X.dtype.kind not in "biuf":
            raise ValueError(f"X must be numeric, got a sparse matrix of dtype {X.dtype}")
        X, copied = X.astype(np.float64), True
    if not X.has_canonical_format:
        if not copied:
            X = X.copy()
        X.sum_duplicates()          # sorts the indices too
    return X


def check_sparse(X, name="X", *, min_samples=2):
    """The checks of :func:`ikdr._utils.validation.check_matrix` for a sparse X, on its
    stored values only: 2-D, at least ``min_samples`` rows and one column, finite
    (NaN or infinity: a ValueError naming it), squares that do not overflow.
    Returns :func:`canonical_csr` of X."""
    if not sp.issparse(X):
        raise TypeError(f"{name} must be a scipy.sparse matrix, got {type(X).__name__}")
    X = canonical_csr(X)
    n, d = X.shape
    if n < min_samples:
        raise ValueError(f"{name} has {n} sample(s); at least {min_samples} are required")
    if d < 1:
        raise ValueError(f"{name} has 0 features")
    if not np.all(np.isfinite(X.data)):
        bad = "NaN" if np.isnan(X.data).any() else "infinity"
        raise ValueError(f"Input {name} contains {bad}.")
    check_magnitude(float(np.abs(X.data).max()) if X.nnz else 0.0, X.dtype, name)
    return X


def column_counts(X):
    """Stored (non-zero) entries per column of a CSR X, O(nnz)."""
    return np.bincount(X.indices, minlength=X.shape[1])


def stored_columns(X, limit=None):
    """The columns of a sparse X that W may use: those with a stored value, and of
    them at most ``limit``, the most dispersed (ties by index); None when that is
    every column (dense X: None). An all-zero column carries nothing; the
    estimators leave it out of W's support from the start.

    Dispersion is the variance over the mean (``column_moments``) where no value is
    negative (counts, TF-IDF, one-hot), else the variance. For counts the variance
    grows with the mean, so frequent features would fill the limit: on the
    benchmark's cells (10,000 x 20,000 negative-binomial counts, log1p), the 512
    largest variances hold 10% of the 60 marker genes, the 512 largest
    variance-over-mean ratios 98% and the interaction pair."""
    if not sp.issparse(X):
        return None
    counts = column_counts(X)
    columns = np.flatnonzero(counts)
    if limit is not None and columns.size > limit:
        mean, variance = column_moments(X)
        score = variance if X.nnz and X.data.min() < 0 else \
            variance / np.maximum(mean, np.finfo(np.float64).tiny)
        columns = np.sort(columns[np.argsort(-score[columns], kind="stable")[:limit]])
    return columns if columns.size < X.shape[1] else None


def column_moments(X):
    """(means, variances) of the columns of a sparse X over its n rows, zeros
    included, O(nnz): what ``StandardScaler(with_mean=False)`` computes."""
    n = X.shape[0]
    mean = np.asarray(X.sum(axis=0), dtype=np.float64).ravel() / n
    second = np.asarray(X.multiply(X).sum(axis=0), dtype=np.float64).ravel() / n
    return mean, np.maximum(second - mean * mean, 0.0)


def start_basis(X, components=START_COMPONENTS, random_state=None):
    """An orthonormal d x r basis whose projection ``X @ V`` stands for X's rows at W = I.

    d <= ``components``: the identity (``X @ V`` is X, every distance and inner
    product exact). Otherwise X's leading r right singular vectors (no
    centring, as a truncated SVD of term counts does), by randomised subspace
    iteration: O(nnz r) per iteration, never X densely.
    """
    d = X.shape[1]
    if d <= components:
        return np.eye(d)
    _, _, Vt = randomized_svd(X, components, n_iter=2, random_state=check_random_state(
        0 if random_state is None else random_state))
    return np.ascontiguousarray(Vt.T)

