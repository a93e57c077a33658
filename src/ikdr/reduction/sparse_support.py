r"""The marginal part of the held-out support (:func:`ikdr.reduction.support.marginal_dependence`)
for sparse X, from its stored values only.

Each column's values are its stored entries and ``n - nnz_j`` zeros; the bins
of the one-dimensional kernel, the median of the sampled pairs' distances and
the per-bin sums of Gamma's factor are computed from the stored entries plus
one correction for the zeros (the factor's column total less the stored
rows' sum), so the cost is O(nnz r + d bins^2), never n x d. The numbers are
those of the dense computation to rounding.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["sparse_marginal_dependence", "PAIR_SAMPLES"]

#: pairs of rows whose distances give each feature's median bandwidth (at most)
PAIR_SAMPLES = 4000
#: columns whose bins x bins kernel is held at once
_CHUNK = 512


def _column_medians(D, m):
    """Per column of the non-negative sparse D (m rows; CSC, explicit zeros dropped):
    the median of all m values, and of its positive ones (0 without any)."""
    d = D.shape[1]
    counts = np.diff(D.indptr)
    columns = np.repeat(np.arange(d), counts)
    data = D.data[np.lexsort((D.data, columns))]
    start = D.indptr[:-1]

    def at(position):
        """The value at ``position`` of each column's sorted m values (zeros first)."""
        inside = position - (m - counts)
        index = np.clip(start + inside, 0, max(data.size - 1, 0))
        return np.where(inside >= 0, data[index] if data.size else 0.0, 0.0)

    full = at(np.full(d, m // 2)) if m % 2 else 0.5 * (at(np.full(d, m // 2 - 1)) +
                                                       at(np.full(d, m // 2)))
    odd = counts % 2 == 1
    half = counts // 2
    low = np.clip(start + np.where(odd, half, half - 1), 0, max(data.size - 1, 0))
    high = np.clip(start + half, 0, max(data.size - 1, 0))
    positive = np.where(counts > 0, 0.5 * (data[low] + data[high]) if data.size else 0.0, 0.0)
    return full, positive


def sparse_marginal_dependence(X, factor, scale, trace, bins):
    """:func:`ikdr.reduction.support.marginal_dependence` of a sparse X (module
    docstring); ``factor`` and ``scale`` are Gamma's, ``trace`` its trace."""
    X = sp.csc_matrix(X, dtype=np.float64)
    X.eliminate_zeros()
    n, d = X.shape
    stored = np.diff(X.indptr)
    has_zero = stored < n
    columns = np.repeat(np.arange(d), stored)
    lo = np.full(d, np.inf)
    hi = np.full(d, -np.inf)
    if X.nnz:
        np.minimum.at(lo, columns, X.data)
        np.maximum.at(hi, columns, X.data)
    lo = np.where(has_zero, np.minimum(lo, 0.0), lo)
    hi = np.where(has_zero, np.maximum(hi, 0.0), hi)
    varies = hi > lo
    width = np.where(varies, (hi - lo) / bins, 1.0)
    index = np.minimum(((X.data - lo[columns]) / width[columns]).astype(np.intp), bins - 1)
    zero_bin = np.minimum(((0.0 - lo) / width).astype(np.intp), bins - 1)
    # the bandwidths: the median distance over the dense computation's pairs of rows
    pairs = np.random.default_rng(0).integers(0, n, size=(2, min(4 * n, PAIR_SAMPLES)))
    pairs = pairs[:, pairs[0] != pairs[1]]
    gaps = abs(X.tocsr()[pairs[0]] - X.tocsr()[pairs[1]]).tocsc()
    gaps.eliminate_zeros()
    sigma, distinct = _column_medians(gaps, pairs.shape[1])
    sigma = np.where(varies & ~(sigma > 0), distinct, sigma)
    varies &= sigma > 0
    # per-bin sums of Gamma's factor and counts: the stored entries, then the zeros
    r = factor.shape[1]
    rows = X.indices
    sums = np.zeros((bins * d, r))
    np.add.at(sums, index * d + columns, factor[rows])
    stored_sums = np.zeros((d, r))
    np.add.at(stored_sums, columns, factor[rows])
    sums[zero_bin * d + np.arange(d)] += factor.sum(axis=0)[None, :] - stored_sums
    sums = sums.reshape(bins, d, r) * np.sqrt(np.abs(scale))
    counts = np.zeros((bins, d))
    np.add.at(counts, (index, columns), 1.0)
    counts[zero_bin, np.arange(d)] += n - stored
    signs = np.sign(scale)
    gap = np.arange(bins)
    ratio = np.where(varies, width / np.where(sigma > 0, sigma, 1.0), 0.0)
    total = np.zeros(d)
    mean_offdiagonal = np.zeros(d)
    for c in range(0, d, _CHUNK):
        cols = slice(c, min(d, c + _CHUNK))
        toeplitz = np.exp(-0.5 * (gap[:, None] * ratio[None, cols]) ** 2)
        K = toeplitz[np.abs(gap[:, None] - gap[None, :])]
        total[cols] = np.einsum("bjr,bcj,cjr,r->j", sums[:, cols], K, sums[:, cols], signs)
        mean_offdiagonal[cols] = (np.einsum("bj,bcj,cj->j", counts[:, cols], K, counts[:, cols])
                                  - n) / (n * (n - 1))
    return np.where(varies, total - trace * (1.0 - mean_offdiagonal), 0.0)
