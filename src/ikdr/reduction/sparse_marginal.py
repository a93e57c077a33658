r"""The marginal dependence (:func:`ikdr.reduction.marginal.marginal_dependence`) of sparse
X, from its stored values only.

Each column's values are its stored entries and ``n - nnz_j`` zeros; the bins
of the one-dimensional kernel, the median of the sampled pairs' distances
(:func:`ikdr.kernels.bandwidth.feature_median_distances`) and the per-bin sums
of Gamma's factor are computed from the stored entries plus one correction for
the zeros (the factor's column total less the stored rows' sum), so the cost
is O(nnz r + d bins^2), never n x d. The numbers are those of the dense
computation to rounding.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..kernels.bandwidth import feature_median_distances

__all__ = ["sparse_marginal_dependence"]

#: columns whose bins x bins kernel is held at once
_CHUNK = 256


def sparse_marginal_dependence(X, factor, scale, trace, bins, pairs):
    r""":func:`ikdr.reduction.marginal.marginal_dependence` of a sparse X (module
    docstring); ``factor`` and ``scale`` are Gamma's, ``trace`` its trace, ``pairs``
    the pairs of rows whose distances give the bandwidths (the dense
    computation's: :func:`ikdr._utils.sampling.sample_pairs`). Made
    :data:`_CHUNK` columns at a time (memory O(nnz + n r + bins^2 chunk)). Returns
    the dependences, the squared norms :math:`\|HK_jH\|_F^2` of the centered
    one-dimensional kernels (their noise under independence) and the
    statistic's means under independence (subtracted from the dependences)."""
    X = sp.csc_matrix(X, dtype=np.float64)
    X.eliminate_zeros()
    n, d = X.shape
    # the bandwidths: the median distance over the dense computation's pairs of rows
    sigma = feature_median_distances(X, pairs)
    out, norms, null_mean = np.zeros(d), np.zeros(d), np.zeros(d)
    for c in range(0, d, _CHUNK):
        cols = slice(c, min(d, c + _CHUNK))
        out[cols], norms[cols], null_mean[cols] = _columns(X[:, cols], sigma[cols], factor,
                                                           scale, trace, bins)
    return out, norms, null_mean


def _columns(X, sigma, factor, scale, trace, bins):
    """:func:`sparse_marginal_dependence` of a block of columns (CSC)."""
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
    varies &= sigma > 0
    # per-bin sums of Gamma's factor and counts: the stored entries, then the zeros
    r = factor.shape[1]
    sums = np.zeros((bins * d, r))
    np.add.at(sums, index * d + columns, factor[X.indices])
    stored_sums = np.zeros((d, r))
    np.add.at(stored_sums, columns, factor[X.indices])
    sums[zero_bin * d + np.arange(d)] += factor.sum(axis=0)[None, :] - stored_sums
    sums = sums.reshape(bins, d, r) * np.sqrt(np.abs(scale))
    counts = np.zeros((bins, d))
    np.add.at(counts, (index, columns), 1.0)
    counts[zero_bin, np.arange(d)] += n - stored
    gap = np.arange(bins)
    ratio = np.where(varies, width / np.where(sigma > 0, sigma, 1.0), 0.0)
    toeplitz = np.exp(-0.5 * (gap[:, None] * ratio[None, :]) ** 2)        # bins x d
    # sum over the pairs of occupied bins of each column (a sparse column fills few)
    column, bin_ = np.nonzero(counts.T > 0)                              # by column
    size = np.bincount(column, minlength=d)
    first = np.cumsum(size) - size
    left = np.repeat(np.arange(column.size), size[column])
    right = np.repeat(first[column], size[column]) + (
        np.arange(left.size) - np.repeat(np.cumsum(size[column]) - size[column], size[column]))
    j = column[left]
    kernel = toeplitz[np.abs(bin_[left] - bin_[right]), j]
    occupied = sums[bin_, column]                                        # entries x r
    dots = np.einsum("pr,pr,r->p", occupied[left], occupied[right], np.sign(scale))
    total = np.bincount(j, weights=kernel * dots, minlength=d)
    tallies = counts[bin_, column]
    pair_tallies = tallies[left] * tallies[right]
    pairs = np.bincount(j, weights=kernel * pair_tallies, minlength=d)
    mean_offdiagonal = (pairs - n) / (n * (n - 1))
    null_mean = np.where(varies, trace * (1.0 - mean_offdiagonal), 0.0)
    dependence = np.where(varies, total - null_mean, 0.0)
    # ||H K_j H||_F^2 (support.marginal_dependence), over the same pairs of bins
    K_counts = np.bincount(left, weights=kernel * tallies[right], minlength=column.size)
    centered = (np.bincount(j, weights=kernel * kernel * pair_tallies, minlength=d)
               - 2.0 / n * np.bincount(column, weights=tallies * K_counts ** 2, minlength=d)
               + (pairs / n) ** 2)
    return dependence, np.where(varies, centered, 0.0), null_mean
